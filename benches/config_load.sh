#!/usr/bin/env bash
# Load benchmark: a 2,000-file config.d tree (about 24 MB) merged by `chaudit config show`,
# against `xmllint --noout` merely parsing the same files, and the full offline audit with
# every built-in rule on the same tree, in one hyperfine run.
# Needs hyperfine and xmllint (Debian: apt-get install hyperfine libxml2-utils).
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in hyperfine xmllint; do
  command -v "$tool" >/dev/null || { echo "config_load.sh: $tool is missing (apt-get install hyperfine libxml2-utils)" >&2; exit 1; }
done
tree=${BENCH_TREE:-target/bench/config-tree}
[ -f "$tree/config.xml" ] || python3 benches/gen_config_tree.py "$tree" 2000
cargo build --release --quiet
du -sh "$tree"
# xmllint gets every file on one command line, as chaudit reads them all in one process
hyperfine --warmup 2 --runs 10 -N \
  -n "chaudit config show (parse + merge + render)" "target/release/chaudit config show --config $tree/config.xml" \
  -n "chaudit --config (full audit, all rules)" "target/release/chaudit --config $tree/config.xml --format json --fail-on never" \
  -n "xmllint --noout (parse only)" "xmllint --noout $tree/config.xml $(ls "$tree"/config.d/*.xml | tr '\n' ' ')"
