#!/usr/bin/env bash
# Installs Apache ZooKeeper (Debian's `zookeeper` package, which brings a JRE) when
# /usr/share/java/zookeeper.jar is missing, and prints the java command's classpath that
# runs it. Idempotent and safe to run from several test binaries at once (flock).
# Needs root (or password-less sudo) for the first install only.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${CHAUDIT_CLICKHOUSE_DIR:-$here/../../target/clickhouse}
mkdir -p "$dir"
jar=/usr/share/java/zookeeper.jar
exec 9>"$dir/zookeeper-install.lock"
flock 9
if [ ! -f "$jar" ] || ! command -v java >/dev/null; then
  sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo -n)
  export DEBIAN_FRONTEND=noninteractive
  if ! "${sudo[@]}" apt-get install -y -q zookeeper >&2; then
    "${sudo[@]}" apt-get update -q >&2
    "${sudo[@]}" apt-get install -y -q zookeeper >&2
  fi
  [ -f "$jar" ] || { echo "ensure-zookeeper: the zookeeper package did not install $jar" >&2; exit 1; }
fi
echo "$jar:/usr/share/java/*:/etc/zookeeper/conf"
