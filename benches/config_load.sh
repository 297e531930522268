#!/usr/bin/env bash
# Load benchmark: for each tree shape of benches/gen_config_tree.py (2,000 fragments with
# clusters, disks and policies; 100,000 unknown root elements, so 100,000 findings; 16,000
# disks; 150 clusters; 2,000 profiles and users), `chaudit config show` (parse + merge +
# render) against the full offline audit with every built-in rule (JSON report), in one
# hyperfine run per tree, and the ratio of their medians from that run (a virtual machine's
# outliers move a mean by a third; the mean and standard deviation are printed beside it).
# Needs hyperfine (Debian: apt-get install hyperfine).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || { echo "config_load.sh: hyperfine is missing (apt-get install hyperfine)" >&2; exit 1; }
shapes=${BENCH_SHAPES:-fragments unknown disks clusters users}
cargo build --release --quiet
out=target/bench/results
mkdir -p "$out"
for shape in $shapes; do
  tree=target/bench/$shape
  [ -f "$tree/config.xml" ] || python3 benches/gen_config_tree.py "$tree" "$shape"
  echo "== $shape: $(du -sh "$tree" | cut -f1), $(find "$tree" -name '*.xml' | wc -l) files"
  hyperfine --warmup 1 --runs "${BENCH_RUNS:-5}" -N --export-json "$out/$shape.json" \
    -n "config show" "target/release/chaudit config show --config $tree/config.xml" \
    -n "audit" "target/release/chaudit --config $tree/config.xml --format json --fail-on never -o $out/$shape-report.json"
  python3 - "$out/$shape.json" "$out/$shape-report.json" "$shape" <<'PY'
import json, sys
runs = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
findings = len(json.load(open(sys.argv[2]))["findings"])
show, audit = runs["config show"], runs["audit"]
spread = lambda r: f"{r['median']:.3f} s (mean {r['mean']:.3f} ± {r['stddev']:.3f})"
print(f"RATIO {sys.argv[3]}: config show {spread(show)}, audit {spread(audit)} ({findings} findings): "
      f"{audit['median'] / show['median']:.2f}x")
PY
done
