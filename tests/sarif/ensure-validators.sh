#!/usr/bin/env bash
# Installs the SARIF validators the tests use, under target/sarif/ (idempotent, flock):
# Python jsonschema (the SARIF 2.1.0 schema in this folder) and Microsoft's official
# SARIF multitool (npm @microsoft/sarif-multitool 5.7.0, with GitHub's ingestion rules).
# Prints two lines: the python with jsonschema, and the Sarif.Multitool binary.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${CHAUDIT_SARIF_DIR:-$here/../../target/sarif}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
exec 9>"$dir/install.lock"
flock 9
if ! "$dir/venv/bin/python" -c 'import jsonschema' 2>/dev/null; then
  rm -rf "$dir/venv"
  python3 -m venv "$dir/venv" >&2
  "$dir/venv/bin/pip" install -q --disable-pip-version-check 'jsonschema>=4.18' >&2
fi
multitool="$dir/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool"
if [ ! -x "$multitool" ]; then
  (cd "$dir" && npm install --silent --no-audit --no-fund --prefix "$dir" @microsoft/sarif-multitool@5.7.0 >&2)
fi
[ -x "$multitool" ] || { echo "ensure-validators: Sarif.Multitool did not install" >&2; exit 1; }
echo "$dir/venv/bin/python"
echo "$multitool"
