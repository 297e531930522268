#!/bin/sh
# Time and peak memory of chaudit on pathological config trees (release build):
# profile inheritance cycles (60 profiles each naming the next twice, `default` naming itself
# twice), 200,000 nested elements, 400 nested elements, a self-including config, 1,000
# fragments of 20 KB each taking its own variable from the environment (each value is looked
# for in every file read: one pass over them for all values).
set -eu
cd "$(dirname "$0")/.."
cargo build --release -q
bin=$PWD/target/release/chaudit
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$work" <<'PY'
import os, sys
w = sys.argv[1]
def tree(name, files):
    os.makedirs(f"{w}/{name}", exist_ok=True)
    for f, text in files.items():
        open(f"{w}/{name}/{f}", "w").write(text)
config = "<clickhouse><query_log><database>system</database><table>query_log</table></query_log></clickhouse>\n"
profiles = "<default><profile>default</profile><profile>default</profile><profile>p0</profile><max_threads>8</max_threads></default>"
for i in range(60):
    nxt = f"p{i+1}" if i + 1 < 60 else "default"
    profiles += f"<p{i}><profile>{nxt}</profile><profile>{nxt}</profile><max_threads>{i}</max_threads></p{i}>"
users = f"<clickhouse><profiles>{profiles}</profiles><users><default><password/><profile>default</profile></default></users></clickhouse>"
tree("cycles", {"config.xml": config, "users.xml": users})
n = 200000
tree("deep", {"config.xml": "<clickhouse>\n<a>" + "<b>" * n + "</b>" * n + "</a></clickhouse>\n"})
tree("deep400", {"config.xml": "<clickhouse>" + "<b>" * 400 + "1" + "</b>" * 400 + "</clickhouse>\n"})
tree("loop", {"metrika.xml": '<clickhouse><loop><x incl="loop"/></loop></clickhouse>',
              "config.xml": '<clickhouse><include_from>metrika.xml</include_from><y incl="loop"/></clickhouse>'})
pad = "\n".join(f"    <!-- padding line {j} of a fragment that is not a toy -->" for j in range(400))
tree("fromenv", {"config.xml": "<clickhouse><listen_host>127.0.0.1</listen_host></clickhouse>\n"})
os.makedirs(f"{w}/fromenv/config.d", exist_ok=True)
for i in range(1000):
    tree("fromenv/config.d", {f"f{i}.xml": f"<clickhouse>\n{pad}\n  <x{i} from_env=\"CHAUDIT_BENCH_V{i}\"/>\n</clickhouse>\n"})
PY
i=0
while [ $i -lt 1000 ]; do export "CHAUDIT_BENCH_V$i=value-$i"; i=$((i + 1)); done
for case in "cycles --config" "deep config show --config" "deep400 config show --config" "loop config show --config" \
    "fromenv config show --config"; do
    set -- $case
    dir=$1; shift
    /usr/bin/time -f "$dir: %e s, %M KB peak RSS, exit %x" "$bin" "$@" "$work/$dir/config.xml" >/dev/null 2>"$work/err" || true
    tail -1 "$work/err"
done
