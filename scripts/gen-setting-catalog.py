#!/usr/bin/env python3
"""Regenerates data/settings-catalog.json from the real ClickHouse engine: every session
setting (system.settings, with aliases), server setting (system.server_settings) and MergeTree
setting (system.merge_tree_settings), with its default, type, obsolete flag and tier.

Usage: scripts/gen-setting-catalog.py [OUT]   (run with the engine venv's python, e.g.
  "$(tests/clickhouse/ensure-engine.sh)" scripts/gen-setting-catalog.py)"""
import ctypes
import importlib.util
import json
import os
import sys
import tempfile

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "data", "settings-catalog.json")
spec = importlib.util.find_spec("chdb")
so = os.path.join(os.path.dirname(spec.origin), "_chdb.abi3.so")
ctypes.CDLL(so, mode=os.RTLD_NOW | 0x8)
mspec = importlib.util.spec_from_file_location("_chdb", so)
_chdb = importlib.util.module_from_spec(mspec)
mspec.loader.exec_module(_chdb)
conn = _chdb.connect(tempfile.mkdtemp(prefix="chaudit-catalog-"))


def rows(sql):
    text = conn.query(sql, "JSONEachRow").bytes().decode()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


catalog = {
    "version": rows("SELECT version() AS v")[0]["v"],
    "source": "system.settings, system.server_settings, system.merge_tree_settings of the engine above",
    "session": {
        r["name"]: {k: r[k] for k in ("default", "type", "is_obsolete", "tier", "alias_for") if r[k] not in ("", None)}
        for r in rows("SELECT name, default, type, is_obsolete, toString(tier) AS tier, alias_for FROM system.settings ORDER BY name")
    },
    "server": {
        r["name"]: {k: r[k] for k in ("default", "type", "is_obsolete") if r[k] not in ("", None)}
        for r in rows("SELECT name, default, type, is_obsolete FROM system.server_settings ORDER BY name")
    },
    "merge_tree": {
        r["name"]: {k: r[k] for k in ("default", "type", "is_obsolete") if r[k] not in ("", None)}
        for r in rows("SELECT name, default, type, is_obsolete FROM system.merge_tree_settings ORDER BY name")
    },
}
with open(out, "w") as f:
    json.dump(catalog, f, indent=1, sort_keys=True)
    f.write("\n")
print(f"{out}: ClickHouse {catalog['version']}: {len(catalog['session'])} session, "
      f"{len(catalog['server'])} server, {len(catalog['merge_tree'])} MergeTree settings")
sys.stdout.flush()
os._exit(0)
