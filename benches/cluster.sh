#!/usr/bin/env bash
# Cluster benchmark: the live audit of one node against the audit of a 3-node cluster (real
# ClickHouse 26.9 servers on loopback, started here and stopped by pid), through
# clusterAllReplicas and over direct connections (queries one after the other per server, the
# default, and 4 in flight), in one hyperfine run; then the same with 5 ms of simulated
# network latency each way (benches/delay_proxy.py in front of every HTTP and native port,
# the cluster's replicas named by their proxies), as between machines.
# Needs hyperfine (Debian: apt-get install hyperfine).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || { echo "cluster.sh: hyperfine is missing (apt-get install hyperfine)" >&2; exit 1; }
cargo build --release --quiet
work=$(mktemp -d /tmp/chaudit-bench-cluster.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
http=() tcp=() http_slow=() tcp_slow=()
for i in 0 1 2; do http+=("$(port)"); tcp+=("$(port)"); http_slow+=("$(port)"); tcp_slow+=("$(port)"); done
replicas="" replicas_slow=""
for i in 0 1 2; do
  replicas+="<replica><host>127.0.0.1</host><port>${tcp[$i]}</port></replica>"
  replicas_slow+="<replica><host>127.0.0.1</host><port>${tcp_slow[$i]}</port></replica>"
done
for i in 0 1 2; do
  mkdir -p "$work/n$i/server/config.d"
  echo "<clickhouse><remote_servers><c3><shard>$replicas</shard></c3><c3slow><shard>$replicas_slow</shard></c3slow></remote_servers></clickhouse>" \
    > "$work/n$i/server/config.d/cluster.xml"
  pids+=("$(CH_DIR="$work/n$i" CH_HTTP_PORT=${http[$i]} CH_TCP_PORT=${tcp[$i]} CH_OWNER_PID=$$ tests/clickhouse/start-server.sh)")
done
for i in 0 1 2; do curl -sS "http://127.0.0.1:${http[$i]}/" --data-binary "SYSTEM FLUSH LOGS" >/dev/null; done
for i in 0 1 2; do
  python3 benches/delay_proxy.py "${http_slow[$i]}" "${http[$i]}" 5 & pids+=($!)
  python3 benches/delay_proxy.py "${tcp_slow[$i]}" "${tcp[$i]}" 5 & pids+=($!)
done
sleep 1
dsn() { echo "http://127.0.0.1:${http[$1]}"; }
slow() { echo "http://127.0.0.1:${http_slow[$1]}"; }
hyperfine --warmup 2 --runs 20 -N \
  -n "1 node (--dsn)" "target/release/chaudit --dsn $(dsn 0) --format json --fail-on never" \
  -n "3 nodes (--cluster, clusterAllReplicas)" "target/release/chaudit --dsn $(dsn 0) --cluster c3 --format json --fail-on never" \
  -n "3 nodes (--dsn x3, direct connections)" "target/release/chaudit --dsn $(dsn 0) --dsn $(dsn 1) --dsn $(dsn 2) --format json --fail-on never" \
  -n "1 node, --in-flight 4" "target/release/chaudit --dsn $(dsn 0) --in-flight 4 --format json --fail-on never" \
  -n "3 nodes, --dsn x3, --in-flight 4" "target/release/chaudit --dsn $(dsn 0) --dsn $(dsn 1) --dsn $(dsn 2) --in-flight 4 --format json --fail-on never"
echo "== with 5 ms of network latency each way (delay proxies)"
hyperfine --warmup 2 --runs 10 -N \
  -n "1 node (--dsn)" "target/release/chaudit --dsn $(slow 0) --format json --fail-on never" \
  -n "3 nodes (--cluster, clusterAllReplicas)" "target/release/chaudit --dsn $(slow 0) --cluster c3slow --format json --fail-on never" \
  -n "3 nodes (--dsn x3, direct connections)" "target/release/chaudit --dsn $(slow 0) --dsn $(slow 1) --dsn $(slow 2) --format json --fail-on never" \
  -n "3 nodes (--cluster, --in-flight 4)" "target/release/chaudit --dsn $(slow 0) --cluster c3slow --in-flight 4 --format json --fail-on never"
echo "== server CPU of one node's audit (query_log of node 0: chaudit's union of every fact and log query, direct connections)"
curl -sS "http://127.0.0.1:${http[0]}/" --data-binary "SYSTEM FLUSH LOGS" >/dev/null
curl -sS "http://127.0.0.1:${http[0]}/" --data-binary "SELECT count() AS unions, round(avg(ProfileEvents['OSCPUVirtualTimeMicroseconds']) / 1000, 1) AS cpu_ms_each, round(avg(query_duration_ms)) AS wall_ms_each FROM system.query_log WHERE type = 'QueryFinish' AND is_initial_query AND query_id LIKE 'chaudit-%' AND query LIKE '%formatRow%' AND query NOT LIKE '%clusterAllReplicas%' FORMAT PrettyCompactMonoBlock"
