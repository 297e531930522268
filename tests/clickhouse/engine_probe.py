#!/usr/bin/env python3
"""Ask the real ClickHouse engine (clickhouse-local from the PyPI wheel chdb-core, the same
engine the live test server runs) how it loaded a config tree.

Usage: engine_probe.py CONFIG_FILE [SETTING_NAME ...]
The engine loads CONFIG_FILE with its config.d/, conf.d/, include_from and users config,
exactly as clickhouse-server's ConfigProcessor does; the working directory is the config's
directory.  Prints one JSON object: what system.server_settings (for the named settings),
system.clusters, system.disks, system.storage_policies, system.macros, the changed
system.merge_tree_settings, system.quotas and system.settings_profile_elements report.  A config the engine rejects prints
{"error": "..."} and exits 0, so the caller can compare rejections too.
"""
import ctypes
import importlib.util
import json
import os
import sys
import tempfile

config = os.path.abspath(sys.argv[1])
settings = sys.argv[2:]
spec = importlib.util.find_spec("chdb")
if spec is None or spec.origin is None:
    sys.exit("engine_probe: chdb-core is not installed in this Python")
so = os.path.join(os.path.dirname(spec.origin), "_chdb.abi3.so")
ctypes.CDLL(so, mode=os.RTLD_NOW | 0x8)  # RTLD_DEEPBIND, as chdb/__init__.py does
mspec = importlib.util.spec_from_file_location("_chdb", so)
_chdb = importlib.util.module_from_spec(mspec)
mspec.loader.exec_module(_chdb)

os.chdir(os.path.dirname(config))
data = tempfile.mkdtemp(prefix="chaudit-engine-")
try:
    conn = _chdb.connect(f"{data}?config-file={config}")
except Exception as e:  # noqa: BLE001 - any start-up failure is the answer
    print(json.dumps({"error": str(e)}))
    sys.exit(0)

quoted = ",".join("'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'" for s in settings) or "''"
QUERIES = {
    "server_settings": f"SELECT name, value, changed FROM system.server_settings WHERE name IN ({quoted}) ORDER BY name",
    "clusters": "SELECT cluster, shard_num, replica_num, host_name, port FROM system.clusters ORDER BY cluster, shard_num, replica_num",
    "disks": "SELECT name, type, path FROM system.disks ORDER BY name",
    "storage_policies": "SELECT policy_name, volume_name, volume_priority, disks FROM system.storage_policies ORDER BY policy_name, volume_priority",
    "macros": "SELECT macro, substitution FROM system.macros ORDER BY macro",
    "merge_tree_settings": "SELECT name, value FROM system.merge_tree_settings WHERE changed ORDER BY name",
    "quotas": "SELECT name, apply_to_list FROM system.quotas ORDER BY name",
    "profile_settings": "SELECT profile_name, setting_name, value FROM system.settings_profile_elements WHERE profile_name != '' AND setting_name != '' ORDER BY profile_name, setting_name",
    "profile_inherits": "SELECT profile_name, inherit_profile FROM system.settings_profile_elements WHERE profile_name != '' AND inherit_profile != '' ORDER BY profile_name, index",
}
out = {}
for key, sql in QUERIES.items():
    try:
        r = conn.query(sql, "JSONEachRow")
    except RuntimeError as e:  # e.g. no SHOW SETTINGS PROFILES grant for the users config's default user
        out[key] = {"error": str(e)}
        continue
    text = r.bytes().decode() if hasattr(r, "bytes") else str(r)
    out[key] = [json.loads(line) for line in text.splitlines() if line.strip()]
print(json.dumps(out))
sys.stdout.flush()
os._exit(0)  # the engine's background threads need no orderly shutdown here
