#!/usr/bin/env bash
# Installs Prometheus's promtool (Debian's `prometheus` package) when it is missing, and
# prints its path. Idempotent and safe to run from several test binaries at once (flock).
# Needs root (or password-less sudo) for the first install only.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${CHAUDIT_CLICKHOUSE_DIR:-$here/../../target/clickhouse}
mkdir -p "$dir"
exec 9>"$dir/promtool-install.lock"
flock 9
if ! command -v promtool >/dev/null; then
  sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo -n)
  export DEBIAN_FRONTEND=noninteractive
  if ! "${sudo[@]}" apt-get install -y -q --no-install-recommends prometheus >&2; then
    "${sudo[@]}" apt-get update -q >&2
    "${sudo[@]}" apt-get install -y -q --no-install-recommends prometheus >&2
  fi
  command -v promtool >/dev/null || { echo "ensure-promtool: the prometheus package did not install promtool" >&2; exit 1; }
fi
command -v promtool
