//! What the replicas of one shard must not share or must share: their replica names, and the
//! data of their replicated tables.
//!
//! Replicated tables whose replicas hold different data although each has run the whole
//! replication log: the replicas of one shard share the table's Keeper path, and once every
//! one has copied the log's last entry to its queue and emptied the queue, their active parts
//! are the same. Rows or parts that differ then are data a replica lost or never fetched
//! without a queue entry left to say so (measured on 25.8: a part removed from one replica's
//! disk and from its list in Keeper leaves it 100 rows short with an empty queue).

use std::collections::BTreeMap;

use crate::collect::interned::Document;
use crate::facts::cluster::{DataDivergence, HostValue, SharedReplicaName};
use crate::facts::keys;
use crate::facts::rows::Replica;

/// The replicated tables whose caught-up replicas disagree on rows or parts. A table with a
/// replica that is read-only, has queue entries or has not copied the whole log is left to the
/// replication rules; so is a table whose log grew between the replicas' answers (an insert
/// while the audit read them).
pub fn divergent(reachable: &[(&str, &Document)]) -> Vec<DataDivergence> {
    let mut shards: BTreeMap<(&str, String), Vec<(&str, Replica)>> = BTreeMap::new();
    let read: Vec<(&str, Vec<Replica>)> =
        reachable.iter().map(|(host, live)| (*host, super::document::fact(live, keys::live::REPLICAS))).collect();
    for (host, replicas) in &read {
        for replica in replicas {
            let table = format!("{}.{}", replica.database, replica.table);
            shards.entry((replica.zookeeper_path.as_str(), table)).or_default().push((host, replica.clone()));
        }
    }
    let mut out = Vec::new();
    for ((path, table), members) in shards {
        if members.len() < 2 || !members.iter().all(|(_, r)| caught_up(r)) {
            continue;
        }
        let log_end = members[0].1.log_max_index.0;
        if members.iter().any(|(_, r)| r.log_max_index.0 != log_end) {
            continue;
        }
        let same_rows = members.iter().all(|(_, r)| r.total_rows == members[0].1.total_rows);
        let same_parts = members.iter().all(|(_, r)| r.active_parts == members[0].1.active_parts);
        if same_rows && same_parts {
            continue;
        }
        let values: Vec<HostValue> = members
            .iter()
            .map(|(host, r)| HostValue {
                host: host.to_string(),
                value: format!("{} rows in {} parts", r.total_rows.0, r.active_parts.0),
            })
            .collect();
        let shown = values.iter().map(|v| format!("{} = {}", v.host, v.value)).collect::<Vec<_>>().join(", ");
        out.push(DataDivergence {
            table,
            path: path.to_string(),
            rows_differ: !same_rows,
            fewest_rows_on: fewest(&members),
            shown,
            values,
        });
    }
    out
}

/// The replica names that several replicas of one shard use: each replicated table's
/// replica registers in Keeper under its path and that name, so the second replica's CREATE
/// fails with REPLICA_ALREADY_EXISTS (measured on 25.8) and it never holds the table. A
/// replica without a `replica` macro is not compared.
pub fn shared_replica_names(reachable: &[(&str, &Document)]) -> Vec<SharedReplicaName> {
    let mut named: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for (host, live) in reachable {
        let macros = super::document::fact(live, keys::live::MACROS);
        let value = |name: &str| macros.iter().find(|m| m.name == name).map(|m| m.substitution.clone());
        let Some(replica) = value("replica") else { continue };
        named.entry((value("shard").unwrap_or_default(), replica)).or_default().push(host.to_string());
    }
    named
        .into_iter()
        .filter(|(_, hosts)| hosts.len() > 1)
        .map(|((shard, replica), hosts)| SharedReplicaName { replica, shard, hosts })
        .collect()
}

/// Read-write, its queue empty, and every entry of the log copied (the pointer is the next
/// entry to copy).
fn caught_up(replica: &Replica) -> bool {
    !replica.is_readonly.0 && replica.queue_size.0 == 0 && replica.log_pointer.0 > replica.log_max_index.0
}

/// The replicas holding the fewest rows.
fn fewest(members: &[(&str, Replica)]) -> Vec<String> {
    let least = members.iter().map(|(_, r)| r.total_rows.0).min().unwrap_or_default();
    members.iter().filter(|(_, r)| r.total_rows.0 == least).map(|(host, _)| host.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::interned::Interner;

    /// A replica's row of default.t: rows, parts, queue size, (log pointer, last log entry).
    fn replica(rows: u64, parts: u64, queue: u64, log: (u64, u64)) -> serde_json::Value {
        serde_json::json!({
            "database": "default", "table": "t", "zookeeper_path": "/clickhouse/tables/1/default/t",
            "total_rows": rows, "active_parts": parts, "queue_size": queue,
            "log_pointer": log.0, "log_max_index": log.1, "is_readonly": 0,
        })
    }

    fn compared(members: Vec<(&str, serde_json::Value)>) -> Vec<DataDivergence> {
        let mut interner = Interner::default();
        let documents: Vec<(&str, Document)> = members
            .into_iter()
            .map(|(host, row)| (host, interner.document(serde_json::json!({ "replicas": [row] }))))
            .collect();
        let reachable: Vec<(&str, &Document)> = documents.iter().map(|(h, d)| (*h, d)).collect();
        divergent(&reachable)
    }

    #[test]
    fn caught_up_replicas_with_different_rows_are_reported_with_the_short_one() {
        let found = compared(vec![("r1", replica(300, 3, 0, (3, 2))), ("r2", replica(200, 2, 0, (3, 2)))]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].table, "default.t");
        assert_eq!(found[0].shown, "r1 = 300 rows in 3 parts, r2 = 200 rows in 2 parts");
        assert_eq!(found[0].fewest_rows_on, ["r2"]);
        assert!(found[0].rows_differ);
    }

    #[test]
    fn replicas_of_one_shard_sharing_a_name_are_named_and_other_shards_may_reuse_it() {
        let mut interner = Interner::default();
        let mut node = |shard: &str, replica: &str| {
            let mut macros = vec![serde_json::json!({"macro": "replica", "substitution": replica})];
            if !shard.is_empty() {
                macros.push(serde_json::json!({"macro": "shard", "substitution": shard}));
            }
            interner.document(serde_json::json!({ "macros": macros }))
        };
        let documents =
            [("a", node("1", "same")), ("b", node("1", "same")), ("c", node("2", "same")), ("d", node("", "x"))];
        let reachable: Vec<(&str, &Document)> = documents.iter().map(|(h, d)| (*h, d)).collect();
        let shared = shared_replica_names(&reachable);
        assert_eq!(shared.len(), 1);
        assert_eq!((shared[0].shard.as_str(), shared[0].replica.as_str()), ("1", "same"));
        assert_eq!(shared[0].hosts, ["a", "b"]);
    }

    #[test]
    fn a_replica_with_work_left_or_a_log_that_grew_is_not_compared() {
        for r2 in [replica(200, 2, 1, (3, 2)), replica(200, 2, 0, (2, 2)), replica(200, 2, 0, (4, 3))] {
            assert!(compared(vec![("r1", replica(300, 3, 0, (3, 2))), ("r2", r2)]).is_empty());
        }
        assert!(compared(vec![("r1", replica(300, 3, 0, (3, 2))), ("r2", replica(300, 3, 0, (3, 2)))]).is_empty());
    }
}
