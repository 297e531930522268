#!/usr/bin/env bash
# Cluster benchmark: the live audit of one node against the audit of a 3-node cluster (real
# ClickHouse 26.9 servers on loopback, started here and stopped by pid), through
# clusterAllReplicas and over direct connections (queries one after the other per server, the
# default, and 4 in flight), in one hyperfine run.
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
http=() tcp=()
for i in 0 1 2; do http+=("$(port)"); tcp+=("$(port)"); done
replicas=""
for i in 0 1 2; do replicas+="<replica><host>127.0.0.1</host><port>${tcp[$i]}</port></replica>"; done
for i in 0 1 2; do
  mkdir -p "$work/n$i/server/config.d"
  echo "<clickhouse><remote_servers><c3><shard>$replicas</shard></c3></remote_servers></clickhouse>" \
    > "$work/n$i/server/config.d/cluster.xml"
  pids+=("$(CH_DIR="$work/n$i" CH_HTTP_PORT=${http[$i]} CH_TCP_PORT=${tcp[$i]} CH_OWNER_PID=$$ tests/clickhouse/start-server.sh)")
done
for i in 0 1 2; do curl -sS "http://127.0.0.1:${http[$i]}/" --data-binary "SYSTEM FLUSH LOGS" >/dev/null; done
dsn() { echo "http://127.0.0.1:${http[$1]}"; }
hyperfine --warmup 2 --runs 20 -N \
  -n "1 node (--dsn)" "target/release/chaudit --dsn $(dsn 0) --format json --fail-on never" \
  -n "3 nodes (--cluster, clusterAllReplicas)" "target/release/chaudit --dsn $(dsn 0) --cluster c3 --format json --fail-on never" \
  -n "3 nodes (--dsn x3, direct connections)" "target/release/chaudit --dsn $(dsn 0) --dsn $(dsn 1) --dsn $(dsn 2) --format json --fail-on never" \
  -n "1 node, --in-flight 4" "target/release/chaudit --dsn $(dsn 0) --in-flight 4 --format json --fail-on never" \
  -n "3 nodes, --dsn x3, --in-flight 4" "target/release/chaudit --dsn $(dsn 0) --dsn $(dsn 1) --dsn $(dsn 2) --in-flight 4 --format json --fail-on never"
