#!/usr/bin/env bash
# Installs Chromium (Debian's `chromium` package) when no Chromium or Chrome is on the PATH,
# and prints the command that runs it headless. Idempotent and safe to run from several test
# binaries at once (flock). Needs root (or password-less sudo) for the first install only.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${CHAUDIT_CLICKHOUSE_DIR:-$here/../../target/clickhouse}
mkdir -p "$dir"
find_browser() {
  for name in chromium chromium-browser google-chrome-stable google-chrome; do
    if command -v "$name" >/dev/null; then command -v "$name"; return 0; fi
  done
  return 1
}
exec 9>"$dir/chromium-install.lock"
flock 9
if ! find_browser >/dev/null; then
  sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo -n)
  export DEBIAN_FRONTEND=noninteractive
  if ! "${sudo[@]}" apt-get install -y -q --no-install-recommends chromium >&2; then
    "${sudo[@]}" apt-get update -q >&2
    "${sudo[@]}" apt-get install -y -q --no-install-recommends chromium >&2
  fi
fi
find_browser || { echo "ensure-chromium: the chromium package did not install a chromium command" >&2; exit 1; }
