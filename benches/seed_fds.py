"""The peak of a server's open file descriptors, by kind, while it runs: every second the
descriptors of /proc/PID/fd, sockets told apart by /proc/net/tcp (listening, incoming on the
server's native PORT, outgoing to it), written to OUT whenever a new peak is reached.
Usage: seed_fds.py PID PORT OUT (stops when the process is gone or when killed)."""
import collections
import os
import sys
import time

pid, port, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]


def tcp_sockets():
    """(state, local port, remote port) by socket inode."""
    sockets = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, remote = int(fields[1].split(":")[1], 16), int(fields[2].split(":")[1], 16)
            sockets[fields[9]] = (fields[3], local, remote)
    return sockets


def kind(target, sockets):
    if target.startswith("socket:["):
        socket = sockets.get(target[8:-1])
        if socket is None:
            return "other socket"
        state, local, remote = socket
        if state == "0A":
            return "listening"
        return "incoming" if local == port else "outgoing" if remote == port else "other tcp"
    if target.startswith("pipe:"):
        return "pipe"
    if target.startswith("anon_inode:"):
        return target[len("anon_inode:"):].strip("[]")
    return "file"


peak = 0
while True:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        break
    targets = []
    for fd in fds:
        try:
            targets.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            pass  # closed meanwhile
    if len(targets) > peak:
        peak = len(targets)
        sockets = tcp_sockets()
        kinds = collections.Counter(kind(t, sockets) for t in targets)
        with open(out, "w") as f:
            f.write(f"{peak} ({', '.join(f'{k} {v}' for k, v in kinds.most_common())})\n")
    time.sleep(1)
