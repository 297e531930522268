#!/usr/bin/env python3
"""Regenerates chaudit's version data from REAL ClickHouse servers (one per version, started
with tests/clickhouse/start-server.sh on a free loopback port, stopped by pid afterwards):

  data/catalogs/<major.minor>.json   every session setting (system.settings, with aliases),
                                     server setting (system.server_settings) and MergeTree
                                     setting (system.merge_tree_settings): default, type,
                                     obsolete flag, tier, and for server settings whether
                                     a change applies without a restart.  One per version below.
  data/settings-changes.json         system.settings_changes of the newest version: every
                                     default change since 18.12 (session) / 24.8 (MergeTree),
                                     with reason and compatibility mode.

Usage: scripts/gen-version-data.py [PKG ...]   default: the three wheels that serve as real
servers: chdb==2.1.1 (24.8 LTS), chdb==3.7.2 (25.8 LTS), chdb-core==26.9.0 (26.9).
The last package given is "the newest" and supplies settings_changes."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PACKAGES = sys.argv[1:] or ["chdb==2.1.1", "chdb==3.7.2", "chdb-core==26.9.0"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rows(port, sql):
    url = f"http://127.0.0.1:{port}/?" + urllib.parse.urlencode({"default_format": "JSONEachRow"})
    with urllib.request.urlopen(urllib.request.Request(url, data=sql.encode()), timeout=60) as r:
        return [json.loads(line) for line in r.read().decode().splitlines() if line.strip()]


def columns(port, table):
    return {r["name"] for r in rows(port, f"SELECT name FROM system.columns WHERE database = 'system' AND table = '{table}'")}


def described(port, table, keep):
    """name -> {field: value} for the fields this version's table has (empty ones left out).
    24.8's merge_tree_settings has no `default`: a fresh server's `value` is the default."""
    have = columns(port, table)
    fields = [f for f in keep if f in have]
    select = ", ".join(["name"] + [f"toString({f}) AS {f}" for f in fields])
    if "default" in keep and "default" not in have:
        select += ", value AS default"
        fields.append("default")
    return {
        r["name"]: {f: (int(r[f]) if f == "is_obsolete" else r[f]) for f in fields if r[f] not in ("", None)}
        for r in rows(port, f"SELECT {select} FROM system.{table} ORDER BY name")
    }


def catalog(port):
    version = rows(port, "SELECT version() AS v")[0]["v"]
    return {
        "version": version,
        "source": f"system.settings, system.server_settings and system.merge_tree_settings of a real ClickHouse {version} server",
        "session": described(port, "settings", ["default", "type", "is_obsolete", "tier", "alias_for"]),
        "server": described(port, "server_settings", ["default", "type", "is_obsolete", "changeable_without_restart"]),
        "merge_tree": described(port, "merge_tree_settings", ["default", "type", "is_obsolete"]),
    }


def settings_changes(port):
    have = columns(port, "settings_changes")
    kind = "toString(type)" if "type" in have else "'Session'"
    version = rows(port, "SELECT version() AS v")[0]["v"]
    out = []
    for r in rows(port, f"SELECT {kind} AS type, version, changes FROM system.settings_changes"):
        changes = []
        for c in r["changes"]:
            # named tuples come as objects (26.x) or arrays: name, previous_value, new_value, reason[, compatibility_mode]
            fields = ["name", "previous_value", "new_value", "reason", "compatibility_mode"]
            changes.append(c if isinstance(c, dict) else dict(zip(fields, c)))
        out.append({"type": r["type"], "version": r["version"], "changes": changes})
    out.sort(key=lambda e: (e["type"], [int(p) for p in e["version"].split(".")]))
    return {"version": version, "source": f"system.settings_changes of a real ClickHouse {version} server", "history": out}


def write(path, doc):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")


def serve(pkg, work):
    port = free_port()
    env = dict(os.environ, CH_PKG=pkg, CH_DIR=work, CH_HTTP_PORT=str(port), CH_TCP_PORT="0",
               CH_START_TIMEOUT="120", CH_OWNER_PID=str(os.getpid()))
    out = subprocess.run(["bash", os.path.join(ROOT, "tests/clickhouse/start-server.sh")], env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"{pkg}: the server did not start:\n{out.stderr}")
    return port, int(out.stdout.strip())


for i, pkg in enumerate(PACKAGES):
    with tempfile.TemporaryDirectory(prefix="chaudit-versions-") as work:
        port, pid = serve(pkg, work)
        try:
            cat = catalog(port)
            major_minor = ".".join(cat["version"].split(".")[:2])
            write(os.path.join(ROOT, "data", "catalogs", f"{major_minor}.json"), cat)
            print(f"data/catalogs/{major_minor}.json: ClickHouse {cat['version']}: {len(cat['session'])} session, "
                  f"{len(cat['server'])} server, {len(cat['merge_tree'])} MergeTree settings")
            if i == len(PACKAGES) - 1:
                changes = settings_changes(port)
                write(os.path.join(ROOT, "data", "settings-changes.json"), changes)
                print(f"data/settings-changes.json: {sum(len(e['changes']) for e in changes['history'])} changes "
                      f"from ClickHouse {changes['version']}")
        finally:
            os.kill(pid, 15)
            # the server still writes its store while it stops: the directory goes after it
            for _ in range(300):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
