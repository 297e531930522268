#!/usr/bin/env bash
# Load benchmark: for each tree shape of benches/gen_config_tree.py (2,000 fragments with
# clusters, disks and policies; 100,000 unknown root elements, so 100,000 findings; 16,000
# disks; 150 clusters; 2,000 profiles and users), `chaudit config show` (parse + merge +
# render) against the full offline audit with every built-in rule (JSON report), in one
# hyperfine run per tree, and the ratio of their medians from that run (a virtual machine's
# outliers move a mean by a third; the mean and standard deviation are printed beside it).
#
# Then the targets, each printed as `TARGET name: figure (target ...): met|not met`, from
# alternating runs (each command once per round, BENCH_ROUNDS rounds, default 7; medians of
# wall time, CPU = user + system, and peak RSS, as the kernel counts them for the process):
# - fragments (24 MB, 2,002 files): `config show` CPU at most `xmllint --noout` of the same
#   files, wall time at most 2x `cat` of the same files, peak RSS at most 2x the files' bytes;
# - users: the audit within 1.5x of `config show` (wall time);
# - unknown (100,000 findings): CPU per finding beyond `config show` (audit CPU - config show
#   CPU, over the findings) at most 3 µs, and the audit's peak RSS not growing with the report:
#   at most `config show`'s peak plus 64 MB (the rules, facts and report of a tree whatever
#   its findings; 100,000 findings held whole take hundreds of MB).
#
# Needs hyperfine and xmllint (Debian: apt-get install hyperfine libxml2-utils).
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in hyperfine xmllint; do
  command -v "$tool" >/dev/null || {
    echo "config_load.sh: $tool is missing (apt-get install hyperfine libxml2-utils)" >&2
    exit 1
  }
done
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

echo "== targets (${BENCH_ROUNDS:-7} alternating rounds, medians)"
python3 - "$shapes" "${BENCH_ROUNDS:-7}" "$out" <<'PY'
import glob, json, os, statistics, subprocess, sys, time

shapes, rounds, out = sys.argv[1].split(), int(sys.argv[2]), sys.argv[3]
chaudit = "target/release/chaudit"


def run(argv):
    """Wall seconds, CPU seconds (user + system) and peak RSS in bytes of one run."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"config_load.sh: {argv[0]} failed ({status})")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def medians(commands):
    """Each command once per round, in turn; the medians of wall, CPU and peak RSS."""
    samples = {name: [] for name in commands}
    for _ in range(rounds):
        for name, argv in commands.items():
            samples[name].append(run(argv))
    return {name: [statistics.median(column) for column in zip(*runs)] for name, runs in samples.items()}


def target(name, figure, goal, met):
    print(f"TARGET {name}: {figure} (target {goal}): {'met' if met else 'not met'}")


def show(tree):
    return [chaudit, "config", "show", "--config", f"{tree}/config.xml"]


def audit(tree, report):
    return [chaudit, "--config", f"{tree}/config.xml", "--format", "json", "--fail-on", "never", "-o", report]


ms = lambda seconds: f"{seconds * 1000:.0f} ms"
mb = lambda size: f"{size / 1e6:.1f} MB"

if "fragments" in shapes:
    tree = "target/bench/fragments"
    files = [f"{tree}/config.xml", f"{tree}/users.xml"] + sorted(glob.glob(f"{tree}/config.d/*.xml"))
    files += sorted(glob.glob(f"{tree}/users.d/*.xml"))
    size = sum(os.path.getsize(f) for f in files)
    m = medians({"show": show(tree), "xmllint": ["xmllint", "--noout", *files], "cat": ["cat", *files]})
    (show_wall, show_cpu, show_rss), (_, lint_cpu, _), (cat_wall, _, _) = m["show"], m["xmllint"], m["cat"]
    print(f"fragments: {len(files)} files, {mb(size)}; config show {ms(show_wall)} wall, {ms(show_cpu)} CPU, "
          f"{mb(show_rss)} peak; xmllint {ms(lint_cpu)} CPU; cat {ms(cat_wall)} wall")
    target("fragments config show CPU vs xmllint --noout", f"{ms(show_cpu)} vs {ms(lint_cpu)}, "
           f"{show_cpu / lint_cpu:.2f}x", "1.0x", show_cpu <= lint_cpu)
    target("fragments config show wall vs cat", f"{ms(show_wall)} vs {ms(cat_wall)}, {show_wall / cat_wall:.1f}x",
           "2x", show_wall <= 2 * cat_wall)
    target("fragments config show peak RSS vs input", f"{mb(show_rss)} vs {mb(size)}, {show_rss / size:.1f}x",
           "2x", show_rss <= 2 * size)

if "users" in shapes:
    tree = "target/bench/users"
    m = medians({"show": show(tree), "audit": audit(tree, f"{out}/users-target.json")})
    ratio = m["audit"][0] / m["show"][0]
    target("users audit vs config show (wall)", f"{ms(m['audit'][0])} vs {ms(m['show'][0])}, {ratio:.2f}x",
           "1.5x", ratio <= 1.5)

if "unknown" in shapes:
    tree, report = "target/bench/unknown", f"{out}/unknown-target.json"
    m = medians({"show": show(tree), "audit": audit(tree, report)})
    findings = len(json.load(open(report))["findings"])
    (_, show_cpu, show_rss), (_, audit_cpu, audit_rss) = m["show"], m["audit"]
    per_finding = (audit_cpu - show_cpu) / findings * 1e6
    target("unknown CPU per finding beyond config show", f"{per_finding:.1f} µs ({ms(audit_cpu)} - {ms(show_cpu)}, "
           f"{findings} findings)", "3 µs", per_finding <= 3)
    target("unknown audit peak RSS", f"{mb(audit_rss)} (config show {mb(show_rss)})",
           "config show's + 64 MB", audit_rss <= show_rss + 64e6)
PY
