#!/usr/bin/env bash
# Fleet benchmark: one real ClickHouse 26.9 server (started here, stopped by pid) answering on
# FLEET_REPLICAS loopback addresses (127.0.1.1, 127.0.1.2, ...: one <listen_host> each), named
# as the replicas of one remote_servers cluster (2 replicas per shard). chaudit audits it as one
# node, then as the cluster through clusterAllReplicas and over direct connections; for each
# run /usr/bin/time gives chaudit's own CPU and peak memory, --stats the round trips, and the
# per-replica cost is (cluster - one node) / (replicas - 1).
# FLEET_REPLICAS (default 500), FLEET_IN_FLIGHT (direct connections at once, default 16).
set -euo pipefail
cd "$(dirname "$0")/.."
replicas=${FLEET_REPLICAS:-500}
in_flight=${FLEET_IN_FLIGHT:-16}
cargo build --release --quiet
work=$(mktemp -d /tmp/chaudit-bench-fleet.XXXXXX)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
http=$(port) tcp=$(port)
address() { echo "127.0.$((1 + $1 / 250)).$((1 + $1 % 250))"; }
{
  echo "<clickhouse>"
  for ((i = 0; i < replicas; i++)); do echo "<listen_host>$(address "$i")</listen_host>"; done
  echo "<remote_servers><fleet>"
  for ((i = 0; i < replicas; i += 2)); do
    echo "<shard>"
    for ((j = i; j < i + 2 && j < replicas; j++)); do
      echo "<replica><host>$(address "$j")</host><port>$tcp</port></replica>"
    done
    echo "</shard>"
  done
  echo "</fleet></remote_servers>"
  # every replica's queries at once through one server: its connection and query limits
  echo "<max_connections>8192</max_connections><max_concurrent_queries>4096</max_concurrent_queries>"
  echo "</clickhouse>"
} > "$work/fleet.xml"
pid=$(CH_DIR="$work/node" CH_HTTP_PORT=$http CH_TCP_PORT=$tcp CH_EXTRA_CONFIG="$work/fleet.xml" CH_OWNER_PID=$$ \
  CH_START_TIMEOUT=180 tests/clickhouse/start-server.sh)
curl -sS "http://127.0.0.1:$http/" --data-binary "SYSTEM FLUSH LOGS" >/dev/null
listed=$(curl -sS "http://127.0.0.1:$http/" --data-binary "SELECT count() FROM system.clusters WHERE cluster = 'fleet'")
echo "fleet: one ClickHouse $(curl -sS "http://127.0.0.1:$http/" --data-binary "SELECT version()") on $replicas loopback addresses, $listed replicas in cluster 'fleet'"

# one run: wall seconds, chaudit's CPU seconds (user + system), peak RSS (MB), round trips,
# JSON report size, findings, replicas reported
run() {
  local name=$1; shift
  local out="$work/report.json" timing="$work/time" stats="$work/stats"
  /usr/bin/time -f "%e %U %S %M" -o "$timing" target/release/chaudit "$@" --format json --fail-on never --stats \
    >"$out" 2>"$stats" || true
  read -r wall user sys rss < <(tail -n 1 "$timing")  # after a "Command exited with ..." line
  local trips
  trips=$(grep -o '[0-9]* round trips' "$stats" | head -1 | cut -d' ' -f1 || true)
  if ! python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$out" 2>/dev/null; then
    echo "RUN $name: no report (wall $wall s); chaudit said:"; tail -n 5 "$stats"; return
  fi
  python3 - "$name" "$wall" "$user" "$sys" "$rss" "${trips:-?}" "$out" <<'EOF'
import json, os, sys
name, wall, user, sys_cpu, rss, trips, out = sys.argv[1:]
report = json.load(open(out))
hosts = set()
for f in report.get("findings", []):
    hosts.update(h.get("host", "") for h in f.get("hosts", []))
unjudged = sum(1 for o in report.get("outcomes", []) if o.get("outcome") in ("inconclusive", "errored"))
print(f"RUN {name}: wall {float(wall):.1f} s, chaudit CPU {float(user) + float(sys_cpu):.2f} s, peak {int(rss) / 1024:.0f} MB, "
      f"{trips} round trips, report {os.path.getsize(out) / 1e6:.1f} MB, {len(report.get('findings', []))} findings, "
      f"{unjudged} rules unjudged, status {report['summary'].get('status')}, exit {report['summary'].get('exit_code', '?')}")
print(f"DATA {name} {float(user) + float(sys_cpu)} {int(rss) / 1024}")
EOF
}
dsn="http://127.0.0.1:$http"
# one server answers for every replica: the defaults (30 s per query, 90 s in all) end the
# cluster runs before it has; the limits here let them finish
limits=(--timeout 600 --deadline 1800)
{
  run "1 node" --dsn "$dsn"
  run "$replicas replicas, clusterAllReplicas" --dsn "$dsn" --cluster fleet "${limits[@]}"
  run "$replicas replicas, direct connections (--in-flight $in_flight)" --dsn "$dsn" --cluster fleet --fan-out direct \
    --replica-port "$http" --in-flight "$in_flight" "${limits[@]}"
} | tee "$work/runs"
grep '^RUN' "$work/runs" >/dev/null
python3 - "$replicas" "$work/runs" <<'EOF'
import sys
replicas, runs = int(sys.argv[1]), open(sys.argv[2]).read().splitlines()
data = [l.split()[1:] for l in runs if l.startswith("DATA ")]
names = [l[len("RUN "):].split(":")[0] for l in runs if l.startswith("RUN ")]
one_cpu, one_rss = float(data[0][-2]), float(data[0][-1])
for name, row in zip(names[1:], data[1:]):
    cpu, rss = float(row[-2]), float(row[-1])
    print(f"PER-REPLICA {name}: {(cpu - one_cpu) / (replicas - 1) * 1000:.1f} ms of chaudit CPU, "
          f"{(rss - one_rss) / (replicas - 1) * 1024:.0f} KB of peak memory per extra replica")
EOF
