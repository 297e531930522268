#!/usr/bin/env python3
"""Writes the structure-aware seeds of every fuzz target into fuzz/corpus/<target>/:
real files from the repository, and the shapes that broke chaudit before (alias bombs,
deep nesting, nested quantifiers in CEL, DSNs with hostile credentials, bad dates)."""
import glob, json, os, pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "fuzz" / "corpus"

def seed(target, name, data):
    d = OUT / target
    d.mkdir(parents=True, exist_ok=True)
    (d / f"seed-{name}").write_bytes(data if isinstance(data, bytes) else data.encode())

def bomb(levels=5, width=4):
    lines = ["a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i-1}"] * width) + "]")
    return "\n".join(lines) + "\n"

read = lambda p: (ROOT / p).read_bytes()
example = "examples/production"

# one config file: selector byte (even XML / odd YAML; %4 >= 2 as a fragment)
seed("config_file", "example-main", b"\x00" + read(f"{example}/config.xml"))
seed("config_file", "example-users", b"\x00" + read(f"{example}/users.xml"))
seed("config_file", "example-yaml-fragment", b"\x07" + read(f"{example}/config.d/30-replicas.yaml"))
seed("config_file", "yaml-alias-bomb", b"\x01" + bomb().encode())
seed("config_file", "yaml-anchors", b"\x01" + b"base: &b {x: 1, y: [2, 3]}\none: *b\ntwo: {<<: *b, z: 4}\n")
seed("config_file", "xml-nesting", b"\x00<clickhouse>" + b"<a>" * 500 + b"1" + b"</a>" * 500 + b"</clickhouse>")
seed("config_file", "xml-substitutions",
     b'\x02<clickhouse><a incl="x" optional="1"/><b from_env="CH_PORT"/><c replace="1" remove="1"/><include incl="y"/></clickhouse>')
for path in sorted(glob.glob(str(ROOT / "tests/corpus/real-configs/**/*.xml"), recursive=True))[:6]:
    seed("config_file", "real-" + pathlib.Path(path).name, b"\x00" + pathlib.Path(path).read_bytes())

# a whole tree: NUL-separated files, each after its role byte (see harness::config_tree)
tree = [b"\x00" + read(f"{example}/config.xml")]
for f in sorted((ROOT / example / "config.d").iterdir()):
    tree.append((b"\x01" if f.suffix == ".yaml" else b"\x00") + f.read_bytes())
tree.append(b"\x03" + read(f"{example}/users.xml"))
tree.append(b"\x04" + read(f"{example}/users.d/analysts.xml"))
seed("config_tree", "example", b"\x00".join(tree))
seed("config_tree", "include-from", b"\x00".join([
    b'\x00<clickhouse><include_from>metrika.xml</include_from><remote_servers incl="clusters"/><macros incl="macros" optional="1"/></clickhouse>',
    b'\x06<clickhouse><clusters><c><shard><replica><host>h</host><port>9000</port></replica></shard></c></clusters></clickhouse>',
    b'\x03<clickhouse><profiles><default><max_threads>4</max_threads></default><p2><profile>default</profile></p2></profiles><users><default><profile>p2</profile></default></users></clickhouse>',
]))
seed("config_tree", "yaml-tree-aliases", b"\x00".join([
    b"\x01" + b"logger: &l {level: trace}\nquery_log: {database: system, table: query_log}\n",
    b"\x01" + bomb(4, 3).encode(),
    b"\x05" + b"profiles:\n  default: &p {max_threads: 2}\n  other: *p\n",
]))

# rule files: the built-in ones, and costly or hostile shapes
for path in sorted(glob.glob(str(ROOT / "rules/*/*.yaml")))[:8]:
    seed("rule_file", pathlib.Path(path).stem, pathlib.Path(path).read_bytes())
quantifiers = """id: nested-quantifiers
title: Nested quantifiers
severity: low
category: test
tags: [test]
confidence: high
description: four nested loops
applies: {sources: [config]}
when: config.users.exists(a, config.users.exists(b, config.users.exists(c, config.users.all(d, a.name + b.name == c.name + d.name))))
message: "{{ config.users.map(u, u.name).filter(n, n.size() > 1) }}"
remediation: {restart: false, config: ""}
references: []
"""
seed("rule_file", "nested-quantifiers", quantifiers)
seed("rule_file", "alias-bomb", quantifiers.replace("references: []", "references: []\n" + bomb().replace("a0:", "x0:")))

# snapshots: real recorded ones (single node and a cluster's)
for path in sorted(glob.glob(str(ROOT / "rules/*/*/*/snapshot.json")), key=os.path.getsize)[:6]:
    p = pathlib.Path(path)
    seed("snapshot", f"{p.parent.parent.name}-{p.parent.name}", p.read_bytes())
seed("snapshot", "settings-not-a-map", json.dumps({"chaudit_snapshot": 1, "target": "t", "sources": ["live"], "document": {"live": {"settings": "oops", "unavailable": {}}}}))
seed("snapshot", "cluster", json.dumps({"chaudit_snapshot": 1, "target": "t", "sources": ["live", "cluster"], "document": {"nodes": {"path": "direct connections", "nodes": [{"host": "a:9000", "live": {"version": "26.9.1.1", "settings": {}, "unavailable": {}}, "log": None, "error": None}, {"host": "b:9000", "live": None, "log": None, "error": "down"}]}}}))

# suppressions
seed("suppressions", "valid", "ignore:\n  - rule: plaintext-password\n    file: users.d/legacy.xml\n    reason: firewalled\n    expires: 2027-03-31\n  - rules: [a, b]\n    element: users/legacy/password\n    reason: why\n")
seed("suppressions", "bad-date", "ignore:\n  - rule: x\n    reason: why\n    expires: 2027-13-45\n")
seed("suppressions", "alias", "r: &r why\nignore:\n  - {rule: x, reason: *r}\n  - {rule: y, reason: *r}\n")

# baselines
seed("baseline", "valid", json.dumps({"chaudit_baseline": 1, "findings": [{"fingerprint": "5d1c0e", "rule_id": "default-user-open", "file": "users.xml", "message": "m"}]}))
seed("baseline", "wrong-shape", '{"chaudit_baseline": "1", "findings": {}}')

# DSNs
for i, dsn in enumerate([
    "http://bob:%a\u00e9@h", "http://bob:hunter/2@h:8123", "https://alice:p%40ss@ch.example.com/analytics",
    "clickhouse://[::1]:18123", "http://u:p@[2001:db8::1]:9443/db?x=1#f", "http://bob:%ff%fe@h",
    "bob:secret@h:8123", "http://@h", "http://h:99999", "clickhouses://u@h:9440", "http://u:p:q@h@i:1/",
]):
    seed("dsn", str(i), dsn)
