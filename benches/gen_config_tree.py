#!/usr/bin/env python3
"""Writes a large config tree for the load benchmark: DIR/config.xml plus fragments in
DIR/config.d/ (and users.xml plus users.d/), in one of the shapes users have.

    gen_config_tree.py DIR [SHAPE]

SHAPE:
  fragments  2,000 fragments (about 24 MB): settings, clusters with repeated shards and
             replicas, disks and policies, comments (the default)
  unknown    2,000 fragments holding 100,000 root elements no server reads (custom metrics
             names) and 5 misspelled settings: 100,005 findings
  disks      16,000 disks and 2,000 storage policies
  clusters   150 clusters of 10 shards x 3 replicas
  users      2,000 settings profiles and 2,000 users
"""
import os
import sys

SHAPES = ("fragments", "unknown", "disks", "clusters", "users")
if len(sys.argv) not in (2, 3) or sys.argv[1].startswith("-") or sys.argv[2:3] and sys.argv[2] not in SHAPES:
    sys.exit(__doc__)
out = sys.argv[1]
shape = sys.argv[2] if len(sys.argv) > 2 else "fragments"
os.makedirs(os.path.join(out, "config.d"), exist_ok=True)
os.makedirs(os.path.join(out, "users.d"), exist_ok=True)


def write(path, text):
    with open(os.path.join(out, path), "w") as f:
        f.write(text)


write("config.xml", "<clickhouse>\n  <max_concurrent_queries>100</max_concurrent_queries>\n"
      "  <users_config>users.xml</users_config>\n"
      "  <remote_servers/>\n  <storage_configuration><disks/><policies/></storage_configuration>\n</clickhouse>\n")
write("users.xml", "<clickhouse>\n  <profiles><default><max_threads>8</max_threads></default></profiles>\n"
      "  <users><default><password_sha256_hex>" + "0" * 64 + "</password_sha256_hex><profile>default</profile>"
      "<networks><ip>127.0.0.1</ip></networks></default></users>\n  <quotas><default/></quotas>\n</clickhouse>\n")


def fragments():
    for i in range(2000):
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
        write(f"config.d/{i:05d}.xml", "".join(parts))


TYPOS = ["max_thred_pool_size", "max_conection", "keep_alive_timout", "mark_cache_sise", "uncompresed_cache_size"]


def unknown():
    for i in range(2000):
        parts = ["<clickhouse>\n"]
        for k in range(50):
            n = i * 50 + k
            parts.append(f"  <app_metric_{n}_threshold>{n}</app_metric_{n}_threshold>\n")
        if i < len(TYPOS):
            parts.append(f"  <{TYPOS[i]}>{i}</{TYPOS[i]}>\n")
        parts.append("</clickhouse>\n")
        write(f"config.d/{i:05d}.xml", "".join(parts))


def disks():
    for i in range(2000):
        parts = ["<clickhouse>\n  <storage_configuration>\n    <disks>\n"]
        for d in range(8):
            parts.append(f"      <disk_{i}_{d}><type>local</type><path>/var/lib/clickhouse/disks/{i}/{d}/</path>"
                         f"<keep_free_space_bytes>{d * 1024}</keep_free_space_bytes></disk_{i}_{d}>\n")
        parts.append("    </disks>\n    <policies>\n")
        parts.append(f"      <policy_{i}><volumes><hot><disk>disk_{i}_0</disk><disk>disk_{i}_1</disk></hot>"
                     f"<cold><disk>disk_{i}_2</disk></cold></volumes><move_factor>0.1</move_factor></policy_{i}>\n")
        parts.append("    </policies>\n  </storage_configuration>\n</clickhouse>\n")
        write(f"config.d/{i:05d}.xml", "".join(parts))


def clusters():
    for c in range(150):
        parts = ["<clickhouse>\n  <remote_servers>\n", f"    <cluster_{c}>\n"]
        for s in range(10):
            parts.append("      <shard>\n        <internal_replication>true</internal_replication>\n")
            for r in range(3):
                parts.append(f"        <replica><host>ch-{c}-{s}-{r}.example.internal</host><port>9000</port>"
                             f"<user>replicator</user><password>secret{r}</password></replica>\n")
            parts.append("      </shard>\n")
        parts.append(f"    </cluster_{c}>\n  </remote_servers>\n</clickhouse>\n")
        write(f"config.d/cluster_{c:03d}.xml", "".join(parts))


def users():
    # each profile inherits `default` (a <profile> element inside a profile names its parent)
    for i in range(2000):
        write(f"users.d/user_{i:05d}.xml",
              f"<clickhouse>\n  <profiles>\n    <profile_{i}><profile>default</profile>"
              f"<max_memory_usage>{10_000_000_000 + i}</max_memory_usage><max_execution_time>{60 + i % 60}</max_execution_time>"
              f"<readonly>{i % 2}</readonly></profile_{i}>\n  </profiles>\n"
              f"  <users>\n    <user_{i}><password_sha256_hex>{i:064x}</password_sha256_hex>"
              f"<profile>profile_{i}</profile><quota>default</quota>"
              f"<networks><ip>10.{i // 256}.{i % 256}.0/24</ip></networks></user_{i}>\n  </users>\n</clickhouse>\n")


{"fragments": fragments, "unknown": unknown, "disks": disks, "clusters": clusters, "users": users}[shape]()
