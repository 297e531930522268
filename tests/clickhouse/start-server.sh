#!/usr/bin/env bash
# Start a real ClickHouse server (HTTP + native TCP on 127.0.0.1) from a PyPI wheel, for
# the live tests. Prints the server's pid when it is ready.
#   CH_PKG (chdb-core==26.9.0 | chdb==3.7.2 for 25.8 | chdb==2.1.1 for 24.8)
#   CH_DIR (its own data dir per version)  CH_HTTP_PORT  CH_TCP_PORT (0 = off)
#   CH_EXTRA_CONFIG (XML merged into its config.xml; files in $CH_DIR/server/config.d are read too)
#   CH_OWNER_PID (the server exits when this process is gone)
#   CH_LISTEN_HOST (default 127.0.0.1: the address it answers and is probed on)
# Stop: kill "$(cat "$CH_DIR/server.pid")"
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
CH_PKG=${CH_PKG:-chdb-core==26.9.0}
: "${CH_DIR:?}" "${CH_HTTP_PORT:?}"
CH_TCP_PORT=${CH_TCP_PORT:-0}
CH_START_TIMEOUT=${CH_START_TIMEOUT:-60}
python=$("$here/ensure-engine.sh" "$CH_PKG")
mkdir -p "$CH_DIR"
extra=()
[ -n "${CH_EXTRA_CONFIG:-}" ] && extra=(--extra-config "$CH_EXTRA_CONFIG")
[ -n "${CH_OWNER_PID:-}" ] && extra+=(--owner-pid "$CH_OWNER_PID")
[ -n "${CH_LISTEN_HOST:-}" ] && extra+=(--listen-host "$CH_LISTEN_HOST")
nohup "$python" "$here/chdb_server.py" --dir "$CH_DIR/server" \
  --http-port "$CH_HTTP_PORT" --tcp-port "$CH_TCP_PORT" --pid-file "$CH_DIR/server.pid" \
  --start-timeout "$CH_START_TIMEOUT" "${extra[@]}" \
  > "$CH_DIR/server.out" 2> "$CH_DIR/server.err" < /dev/null &
pid=$!
for _ in $(seq 1 $((CH_START_TIMEOUT * 10 + 100))); do
  if grep -q '^chdb_server ready' "$CH_DIR/server.err" 2>/dev/null; then
    echo "$pid"
    exit 0
  fi
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "clickhouse ($CH_PKG) failed to start:" >&2; cat "$CH_DIR/server.err" >&2; exit 1
  fi
  sleep 0.1
done
echo "clickhouse ($CH_PKG) did not become ready within ${CH_START_TIMEOUT} s; its last words:" >&2
tail -n 20 "$CH_DIR/server.err" >&2 2>/dev/null || true
tail -n 20 "$CH_DIR/server/clickhouse-server.err.log" >&2 2>/dev/null || true
kill "$pid" 2>/dev/null || true; exit 1
