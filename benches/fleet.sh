#!/usr/bin/env bash
# Fleet benchmark: real ClickHouse 26.9 servers (started here, stopped by pid) answering on
# FLEET_REPLICAS loopback addresses (127.0.1.1, 127.0.1.2, ...: one <listen_host> each, up to
# FLEET_PER_SERVER addresses a server; the seed, the --dsn node, is a server of its own), named
# as the replicas of one remote_servers cluster, `fleet` (2 replicas per shard). A second
# server without query_log answers for the last FLEET_PARTIAL replicas of a second cluster,
# `fleet_partial` (the same replicas otherwise, on 127.0.100.1, ...): they refuse the first
# union of facts and log queries, so its answer is partial and the audit reads those replicas
# again. chaudit audits one node, then `fleet` through clusterAllReplicas, `fleet_partial`
# through clusterAllReplicas, and `fleet` over direct connections; for each run /usr/bin/time
# gives chaudit's own CPU and peak memory, --stats the round trips, the report the replicas
# called unreachable, the seed's peak open descriptors by kind (benches/seed_fds.py), and the
# per-replica cost is (cluster - one node) / (replicas - 1).
#   FLEET_REPLICAS   replicas (default 500)
#   FLEET_PER_SERVER replicas one server answers for (default 500): with more replicas, more
#                    servers, each within the machine's open-file limit; the seed answers for
#                    none, as a real seed answers for itself alone (one answering for hundreds
#                    would hold both ends of its connections to itself)
#   FLEET_PARTIAL    replicas of fleet_partial on the server without query_log (default a tenth)
#   FLEET_IN_FLIGHT  direct connections at once (default 16)
#   FLEET_LOAD=1     a CPU burner on core 0 (a shell loop pinned with taskset) runs from before
#                    the first run to the end, started and stopped here by its pid
#   FLEET_RUNS       which runs (default "node cluster partial direct")
#   FLEET_LIMITS     --timeout/--deadline for the cluster runs (default: chaudit's own)
set -euo pipefail
cd "$(dirname "$0")/.."
replicas=${FLEET_REPLICAS:-500}
per_server=${FLEET_PER_SERVER:-500}
servers=$((1 + (replicas + per_server - 1) / per_server))
partial=${FLEET_PARTIAL:-$((replicas / 10))}
in_flight=${FLEET_IN_FLIGHT:-16}
load=${FLEET_LOAD:-0}
runs=${FLEET_RUNS:-node cluster partial direct}
cargo build --release --quiet
files=$(ulimit -n)
# the seed's descriptors while a clusterAllReplicas query waits on every replica: 6 to 7.3 a
# replica (its connection, eventfd, pipe, epoll and timer; chaudit sends use_hedged_requests=0,
# with hedging 10 to 13)
if [ "$files" != unlimited ] && ((files < replicas * 8)) && [[ "$runs" == *cluster* || "$runs" == *partial* ]]; then
  echo "warning: open-file limit $files: the seed of a clusterAllReplicas query to $replicas replicas needs about $((replicas * 8)), however many servers answer them" >&2
fi
work=$(mktemp -d /tmp/chaudit-bench-fleet.XXXXXX)
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do while kill -0 "$p" 2>/dev/null; do sleep 0.2; done; done
  rm -rf "$work"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
http=$(port) tcp=$(port)
address() { echo "127.0.$((1 + $1 / 250)).$((1 + $1 % 250))"; }
# the replicas of the server without query_log
other() { echo "127.0.$((100 + $1 / 250)).$((1 + $1 % 250))"; }
# cluster NAME FIRST_OTHER: replica i at address(i), or at other(...) from FIRST_OTHER on
cluster() {
  local name=$1 first_other=$2 i j
  echo "<$name>"
  for ((i = 0; i < replicas; i += 2)); do
    echo "<shard>"
    for ((j = i; j < i + 2 && j < replicas; j++)); do
      if ((j < first_other)); then host=$(address "$j"); else host=$(other $((j - first_other))); fi
      echo "<replica><host>$host</host><port>$tcp</port></replica>"
    done
    echo "</shard>"
  done
  echo "</$name>"
}
# every replica's queries at once through one server: its connection and query limits, and a
# connection per replica for one fan-out query (max_distributed_connections, 1,024 by default:
# with more replicas the first union stalls)
limits_xml="<max_connections>8192</max_connections><max_concurrent_queries>8192</max_concurrent_queries>"
profile_xml="<profiles><default><max_distributed_connections>$((replicas + 16))</max_distributed_connections></default></profiles>"
# the addresses of server k's replicas, k from 1 (the first is its probe address): the seed,
# server 0, answers for none, as a real seed answers for itself alone; one server answering
# for hundreds of replicas holds both ends of its connections to itself
listen_hosts() {
  local k=$1 i
  for ((i = (k - 1) * per_server + 1; i < k * per_server && i < replicas; i++)); do
    echo "<listen_host>$(address "$i")</listen_host>"
  done
}
{
  echo "<clickhouse><remote_servers>"
  cluster fleet "$replicas"
  cluster fleet_partial $((replicas - partial))
  echo "</remote_servers>$limits_xml$profile_xml</clickhouse>"
} > "$work/fleet.xml"
pids+=("$(CH_DIR="$work/node" CH_HTTP_PORT=$http CH_TCP_PORT=$tcp CH_EXTRA_CONFIG="$work/fleet.xml" CH_OWNER_PID=$$ \
  CH_START_TIMEOUT=180 tests/clickhouse/start-server.sh)")
for ((k = 1; k < servers; k++)); do
  { echo "<clickhouse>"; listen_hosts "$k"; echo "$limits_xml</clickhouse>"; } > "$work/fleet-$k.xml"
  pids+=("$(CH_DIR="$work/node-$k" CH_HTTP_PORT=$http CH_TCP_PORT=$tcp CH_EXTRA_CONFIG="$work/fleet-$k.xml" \
    CH_OWNER_PID=$$ CH_LISTEN_HOST="$(address $(((k - 1) * per_server)))" CH_START_TIMEOUT=180 tests/clickhouse/start-server.sh)")
done
if ((partial > 0)); then
  {
    echo "<clickhouse><query_log remove=\"1\"/>"
    for ((i = 1; i < partial; i++)); do echo "<listen_host>$(other "$i")</listen_host>"; done
    echo "$limits_xml</clickhouse>"
  } > "$work/other.xml"
  pids+=("$(CH_DIR="$work/other" CH_HTTP_PORT=$http CH_TCP_PORT=$tcp CH_EXTRA_CONFIG="$work/other.xml" CH_OWNER_PID=$$ \
    CH_LISTEN_HOST="$(other 0)" CH_START_TIMEOUT=180 tests/clickhouse/start-server.sh)")
fi
# every server's logs written once: a server's query_log and part_log exist from its first flush
curl -sS "http://127.0.0.1:$http/" --data-binary "SYSTEM FLUSH LOGS" >/dev/null
for ((k = 1; k < servers; k++)); do
  curl -sS "http://$(address $(((k - 1) * per_server))):$http/" --data-binary "SYSTEM FLUSH LOGS" >/dev/null
done
listed=$(curl -sS "http://127.0.0.1:$http/" --data-binary "SELECT count() FROM system.clusters WHERE cluster = 'fleet'")
echo "fleet: $servers ClickHouse $(curl -sS "http://127.0.0.1:$http/" --data-binary "SELECT version()") server(s) on $replicas loopback addresses, $listed replicas in cluster 'fleet'; in 'fleet_partial' $partial of them answered by a server without query_log"
if [ "$load" = 1 ]; then
  taskset -c 0 sh -c 'while :; do :; done' &
  pids+=("$!")
  echo "load: a CPU burner on core 0 (pid $!) for every run"
fi
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GB", $2 / 1048576}' /proc/meminfo); load average before the runs: $(cut -d' ' -f1-3 /proc/loadavg)"

# one run: wall seconds, chaudit's CPU seconds (user + system), peak RSS (MB), round trips,
# JSON report size, findings, replicas called unreachable
run() {
  local name=$1; shift
  local out="$work/report.json" timing="$work/time" stats="$work/stats"
  local fds="$work/fds"
  rm -f "$fds"
  python3 benches/seed_fds.py "${pids[0]}" "$tcp" "$fds" &
  local sampler=$!
  /usr/bin/time -f "%e %U %S %M" -o "$timing" target/release/chaudit "$@" --format json --fail-on never --stats \
    >"$out" 2>"$stats" || true
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
  echo "SEED $name: peak open descriptors $(cat "$fds" 2>/dev/null || echo '?')"
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
unreachable = set()
for f in report.get("findings", []):
    if f.get("rule_id", f.get("rule")) == "cluster-replica-unreachable":
        unreachable.update(h.get("host", "") for h in f.get("hosts", []))
unjudged = sum(1 for o in report.get("outcomes", []) if o.get("outcome") in ("inconclusive", "errored"))
print(f"RUN {name}: wall {float(wall):.1f} s, chaudit CPU {float(user) + float(sys_cpu):.2f} s, peak {int(rss) / 1024:.0f} MB, "
      f"{trips} round trips, {len(unreachable)} replicas unreachable, report {os.path.getsize(out) / 1e6:.1f} MB, "
      f"{len(report.get('findings', []))} findings, {unjudged} rules unjudged, status {report['summary'].get('status')}")
for o in report.get("outcomes", []):
    if o.get("outcome") in ("inconclusive", "errored"):
        print(f"  unjudged {o.get('rule_id', o.get('rule'))}: {str(o.get('reason', ''))[:300]}")
print(f"DATA {name} {float(user) + float(sys_cpu)} {int(rss) / 1024}")
EOF
}
dsn="http://127.0.0.1:$http"
# the defaults a user gets: one server's budget (30 s per query, 90 s in all) for each round
# of replicas (FLEET_LIMITS="--timeout S --deadline S" sets limits of its own)
read -r -a limits <<< "${FLEET_LIMITS:-}"
{
  for what in $runs; do
    case $what in
      node) run "1 node" --dsn "$dsn" ;;
      cluster) run "$replicas replicas, clusterAllReplicas" --dsn "$dsn" --cluster fleet "${limits[@]}" ;;
      partial)
        if ((partial > 0)); then
          run "$replicas replicas, clusterAllReplicas, $partial missing from the first union" \
            --dsn "$dsn" --cluster fleet_partial "${limits[@]}"
        fi ;;
      direct) run "$replicas replicas, direct connections (--in-flight $in_flight)" --dsn "$dsn" --cluster fleet \
        --fan-out direct --replica-port "$http" --in-flight "$in_flight" "${limits[@]}" ;;
    esac
  done
} | tee "$work/runs"
echo "load average after the runs: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$replicas" "$work/runs" <<'EOF'
import sys
replicas, runs = int(sys.argv[1]), open(sys.argv[2]).read().splitlines()
data = {l.split(" ", 1)[1].rsplit(" ", 2)[0]: l.split()[-2:] for l in runs if l.startswith("DATA ")}
if "1 node" not in data:
    sys.exit(0)
one_cpu, one_rss = map(float, data.pop("1 node"))
for name, (cpu, rss) in data.items():
    cpu, rss = float(cpu), float(rss)
    print(f"PER-REPLICA {name}: {(cpu - one_cpu) / (replicas - 1) * 1000:.1f} ms of chaudit CPU, "
          f"{(rss - one_rss) / (replicas - 1) * 1024:.0f} KB of peak memory per extra replica")
EOF
