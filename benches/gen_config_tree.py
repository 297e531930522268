#!/usr/bin/env python3
"""Writes a large config tree for the load benchmark: DIR/config.xml plus N fragments in
DIR/config.d/ (default 2,000 files, about 20 MB), shaped like real fragments: settings,
clusters with repeated shards/replicas, disks and policies, comments."""
import os
import sys

out = sys.argv[1]
count = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
os.makedirs(os.path.join(out, "config.d"), exist_ok=True)
with open(os.path.join(out, "config.xml"), "w") as f:
    f.write("<clickhouse>\n  <max_concurrent_queries>100</max_concurrent_queries>\n"
            "  <remote_servers/>\n  <storage_configuration><disks/><policies/></storage_configuration>\n</clickhouse>\n")
for i in range(count):
    parts = [f"<?xml version=\"1.0\"?>\n<!-- fragment {i}: generated for the load benchmark -->\n<clickhouse>\n"]
    parts.append(f"  <max_table_size_to_drop>{i}</max_table_size_to_drop>\n")
    parts.append("  <remote_servers>\n")
    for c in range(3):
        parts.append(f"    <cluster_{i % 50}_{c}>\n")
        for s in range(6):
            parts.append("      <shard>\n        <internal_replication>true</internal_replication>\n")
            for r in range(3):
                parts.append(f"        <replica><host>ch-{i}-{c}-{s}-{r}.example.internal</host><port>9000</port>"
                             f"<user>replicator</user><password>secret&amp;{r}</password></replica>\n")
            parts.append("      </shard>\n")
        parts.append(f"    </cluster_{i % 50}_{c}>\n")
    parts.append("  </remote_servers>\n  <storage_configuration>\n    <disks>\n")
    for d in range(8):
        parts.append(f"      <disk_{i}_{d}><type>local</type><path>/var/lib/clickhouse/disks/{i}/{d}/</path>"
                     f"<keep_free_space_bytes>{d * 1024}</keep_free_space_bytes></disk_{i}_{d}>\n")
    parts.append("    </disks>\n    <policies>\n")
    parts.append(f"      <policy_{i}><volumes><hot><disk>disk_{i}_0</disk><disk>disk_{i}_1</disk></hot>"
                 f"<cold><disk>disk_{i}_2</disk></cold></volumes><move_factor>0.1</move_factor></policy_{i}>\n")
    parts.append("    </policies>\n  </storage_configuration>\n</clickhouse>\n")
    with open(os.path.join(out, "config.d", f"{i:05d}.xml"), "w") as f:
        f.write("".join(parts))
