#!/usr/bin/env python3
"""Makes a rule fixture from a snapshot recorded with `chaudit collect`: keeps every fact
but only the named settings (a full settings table is ~200 KB).

Usage: scripts/trim-snapshot.py SNAPSHOT.json OUT.json [SETTING ...]
  --version V   rewrite the recorded version (for version-gated rules: say so in the fixture)
  --only F,G    keep only these live facts (with the version and what was not read)"""
import json
import sys

args = sys.argv[1:]
version = None
if "--version" in args:
    i = args.index("--version")
    version = args[i + 1]
    del args[i:i + 2]
only = None
if "--only" in args:
    i = args.index("--only")
    only = set(args[i + 1].split(","))
    del args[i:i + 2]
source, out, keep = args[0], args[1], set(args[2:])
snap = json.load(open(source))
live = snap["document"]["live"]
for table in ("settings", "server_settings"):
    live[table] = {k: v for k, v in live.get(table, {}).items() if k in keep}
if only is not None:
    kept = only | {"version", "endpoint", "unavailable", "absent"}
    live = snap["document"]["live"] = {k: v for k, v in live.items() if k in kept}
    snap["document"] = {"live": live}
    snap["sources"] = ["live"]
if version:
    snap["version"] = version
    live["version"] = version
live["endpoint"] = "default@http://127.0.0.1:8123"
snap["target"] = live["endpoint"]
with open(out, "w") as f:
    json.dump(snap, f, indent=1, sort_keys=True)
    f.write("\n")
