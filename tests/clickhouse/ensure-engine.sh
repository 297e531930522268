#!/usr/bin/env bash
# Installs a real ClickHouse engine (a PyPI chdb/chdb-core wheel) into a virtualenv the
# project owns, under target/clickhouse/, and prints that venv's python.  Idempotent and
# safe to run from several test binaries at once (flock).
#   ensure-engine.sh [PIP_REQUIREMENT]   default chdb-core==26.9.0 (ClickHouse 26.9)
# Other wheels that serve as real servers: chdb==3.7.2 (25.8 LTS), chdb==2.1.1 (24.8 LTS).
set -euo pipefail
pkg=${1:-chdb-core==26.9.0}
here=$(cd "$(dirname "$0")" && pwd)
dir=${CHAUDIT_CLICKHOUSE_DIR:-$here/../../target/clickhouse}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
venv="$dir/venv-${pkg//[=<>]/-}"
exec 9>"$dir/install.lock"
flock 9
name=${pkg%%==*}
version=${pkg#*==}
installed() {
  "$venv/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version(sys.argv[1]) != sys.argv[2])' "$name" "$version" 2>/dev/null
}
if ! installed; then
  rm -rf "$venv"
  python3 -m venv "$venv" >&2
  # --no-deps: the server needs only the engine, not pandas/pyarrow
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps "$pkg" >&2
  installed || { echo "ensure-engine: $pkg did not install" >&2; exit 1; }
fi
echo "$venv/bin/python"
