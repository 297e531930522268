#!/usr/bin/env bash
# Start Apache ZooKeeper (standalone, 127.0.0.1 only) for the replication tests; installs it
# first if needed (ensure-zookeeper.sh). Prints its pid once it answers `ruok` with `imok`.
#   ZK_DIR (its own dir: zoo.cfg, data, logs)  ZK_PORT (client port)
#   ZK_OWNER_PID (ZooKeeper is stopped when this process is gone)
# Stop: kill "$(cat "$ZK_DIR/zookeeper.pid")"
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${ZK_DIR:?}" "${ZK_PORT:?}"
ZK_START_TIMEOUT=${ZK_START_TIMEOUT:-60}
classpath=$("$here/ensure-zookeeper.sh")
mkdir -p "$ZK_DIR/data" "$ZK_DIR/logs"
cat > "$ZK_DIR/zoo.cfg" <<CFG
tickTime=500
initLimit=10
syncLimit=5
dataDir=$ZK_DIR/data
clientPort=$ZK_PORT
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=*
maxSessionTimeout=60000
CFG
ruok() {
  { exec 3<>"/dev/tcp/127.0.0.1/$ZK_PORT"; } 2>/dev/null || return 1
  printf ruok >&3
  local answer
  answer=$(timeout 2 cat <&3 2>/dev/null || true)
  exec 3<&- 3>&-
  [ "$answer" = imok ]
}
if ruok; then
  echo "zookeeper: 127.0.0.1:$ZK_PORT already answers (someone else's)" >&2; exit 1
fi
ZOO_LOG_DIR="$ZK_DIR/logs" nohup java -Xmx256m -Dzookeeper.log.dir="$ZK_DIR/logs" \
  -Dzookeeper.root.logger=INFO,CONSOLE -cp "$classpath" \
  org.apache.zookeeper.server.quorum.QuorumPeerMain "$ZK_DIR/zoo.cfg" \
  > "$ZK_DIR/zookeeper.out" 2>&1 < /dev/null &
pid=$!
echo "$pid" > "$ZK_DIR/zookeeper.pid"
if [ -n "${ZK_OWNER_PID:-}" ]; then
  # a ZooKeeper kept in a static is never dropped: it follows the test process instead
  nohup bash -c "while kill -0 $ZK_OWNER_PID 2>/dev/null && kill -0 $pid 2>/dev/null; do sleep 1; done; kill $pid 2>/dev/null" \
    > /dev/null 2>&1 < /dev/null &
fi
for _ in $(seq 1 $((ZK_START_TIMEOUT * 5))); do
  if ruok; then
    echo "$pid"
    exit 0
  fi
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "zookeeper failed to start:" >&2; tail -n 30 "$ZK_DIR/zookeeper.out" >&2; exit 1
  fi
  sleep 0.2
done
echo "zookeeper did not answer ruok within ${ZK_START_TIMEOUT} s; its last words:" >&2
tail -n 30 "$ZK_DIR/zookeeper.out" >&2 || true
kill "$pid" 2>/dev/null || true; exit 1
