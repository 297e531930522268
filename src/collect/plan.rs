//! The facts collected from each node: one query per system table, whatever the number of
//! rules (round trips do not grow with the rule pack). `SELECT *` where the columns differ
//! between versions, so a 24.8 and a 26.9 server answer the same plan.

pub struct FactQuery {
    /// The key under `live` in the facts document.
    pub name: &'static str,
    pub purpose: &'static str,
    pub sql: &'static str,
}

pub const FACTS: &[FactQuery] = &[
    FactQuery {
        name: "settings",
        purpose: "session settings in effect for this user (value, default, changed)",
        sql: "SELECT name, value, default, changed FROM system.settings",
    },
    FactQuery {
        name: "server_settings",
        purpose: "server settings in effect (value, default, changed)",
        sql: "SELECT name, value, default, changed FROM system.server_settings",
    },
    FactQuery { name: "disks", purpose: "disks (type, paths, cache path)", sql: "SELECT * FROM system.disks" },
    FactQuery {
        name: "storage_policies",
        purpose: "storage policies and their volumes",
        sql: "SELECT * FROM system.storage_policies",
    },
    FactQuery {
        name: "errors",
        purpose: "error counters since start (e.g. TOO_MANY_SIMULTANEOUS_QUERIES)",
        sql: "SELECT name, code, value FROM system.errors WHERE value > 0",
    },
    FactQuery {
        name: "warnings",
        purpose: "the server's own start-up warnings",
        sql: "SELECT message FROM system.warnings",
    },
    FactQuery {
        name: "clusters",
        purpose: "clusters and their replicas",
        sql: "SELECT cluster, shard_num, replica_num, host_name, port FROM system.clusters",
    },
    FactQuery {
        name: "tables",
        purpose: "user tables (engine, storage policy)",
        sql: "SELECT database, name, engine, storage_policy FROM system.tables \
              WHERE database NOT IN ('system', 'information_schema', 'INFORMATION_SCHEMA')",
    },
];

/// What `--dry-run` prints: every query with its purpose; nothing is sent.
pub fn describe() -> String {
    let mut out = String::from(
        "-- connect: version and readonly level\nSELECT version() AS version, toUInt8(getSetting('readonly')) AS readonly;\n",
    );
    for q in FACTS {
        out.push_str(&format!("-- {}: {}\n{};\n", q.name, q.purpose, q.sql));
    }
    out
}
