//! The queries of the fan-out path: each fact for every replica at once through
//! `clusterAllReplicas`, rows told apart by the replica's number; the cluster's members,
//! each replica's version, the seed's own connection failures.

use super::*;
use crate::facts::keys;

/// The session settings read through clusterAllReplicas: without the one a replica shows
/// with a value of the fan-out's own making, another on each replica and in each query
/// (measured on 26.9: `interactive_delay`, the remote query's progress interval). No rule
/// reads it, and it would make every replica's settings a copy of its own.
static FAN_OUT_SETTINGS: FactQuery = FactQuery {
    name: keys::live::SETTINGS.name(),
    purpose: SETTINGS_PURPOSE,
    sql: "SELECT name, value, default, changed FROM system.settings WHERE name != 'interactive_delay'",
    since: None,
};

/// The fact queries as sent through clusterAllReplicas.
pub fn for_fan_out(facts: Vec<&'static FactQuery>) -> Vec<&'static FactQuery> {
    facts.into_iter().map(|f| if f.name == FAN_OUT_SETTINGS.name { &FAN_OUT_SETTINGS } else { f }).collect()
}

/// Every part from every replica of `cluster` in one round trip: each replica runs the
/// union of the queries, each row serialized as a JSON line, tagged with its part;
/// `_shard_num` tells the replicas apart. Read as [`COMBINED_FORMAT`].
pub fn fan_out_combined(cluster: &str, parts: &[Part]) -> String {
    format!(
        "SELECT _shard_num AS {NODE_COLUMN}, fact, row FROM clusterAllReplicas('{}', view({}))",
        quoted(cluster),
        union(parts)
    )
}

/// [`fan_out_combined`] of the replicas `only` (numbered as `_shard_num` numbers them), or of
/// every replica: the seed neither asks nor sends the others.
pub fn fan_out_combined_of(cluster: &str, parts: &[Part], only: Option<&[u64]>) -> String {
    let sql = fan_out_combined(cluster, parts);
    match only {
        Some(nodes) => {
            let nodes: Vec<String> = nodes.iter().map(u64::to_string).collect();
            format!("{sql} WHERE _shard_num IN ({})", nodes.join(", "))
        }
        None => sql,
    }
}

/// The replicas of `cluster` in the order clusterAllReplicas numbers them.
pub fn members_sql(cluster: &str) -> String {
    format!(
        "SELECT host_name, port, is_local FROM system.clusters WHERE cluster = '{}' ORDER BY shard_num, replica_num",
        quoted(cluster)
    )
}

/// The `--dsn` node's connection-failure counters that its fan-out raises: clusterAllReplicas
/// counts its own connections to an unreachable replica in them (a stopped replica raised
/// DistributedConnectionFailAtAll on a 26.9 seed), and a host name that does not resolve in
/// DNSError.
pub const FAN_OUT_FAILURE_EVENTS: [&str; 2] = ["DistributedConnectionFailAtAll", "DNSError"];

/// The query of [`FAN_OUT_FAILURE_EVENTS`], read alone before the fan-out so that the facts
/// keep the server's own failures only: (purpose, SQL).
pub fn fan_out_failures() -> (&'static str, String) {
    let events: Vec<String> = FAN_OUT_FAILURE_EVENTS.iter().map(|e| format!("'{e}'")).collect();
    (
        "the --dsn node's connection failures before the fan-out (its own connections to a down replica count in them)",
        format!("SELECT event, value FROM system.events WHERE event IN ({})", events.join(", ")),
    )
}

/// The connections a round of fan-out queries may open at once. Each clusterAllReplicas of a
/// query connects to every replica at the same time, and each connection holds several of the
/// seed's file descriptors (its socket, epolls, timers, pipes), so a query of many branches, or
/// many queries in flight, over a big fleet would run the seed out of them. It is ClickHouse's
/// own default bound of one distributed query's connections (`max_distributed_connections`).
pub const FAN_OUT_CONNECTIONS: usize = 1024;

/// How many fan-out queries of `branches` clusterAllReplicas each, over `replicas` replicas,
/// may be in flight at once: up to `in_flight`, within [`FAN_OUT_CONNECTIONS`], at least one.
pub fn fan_out_in_flight(replicas: usize, branches: usize, in_flight: usize) -> usize {
    (FAN_OUT_CONNECTIONS / (replicas.max(1) * branches.max(1))).clamp(1, in_flight.max(1))
}

/// Each replica's version, through the fan-out (which replicas answer, too).
pub const VERSION_PROBE: &str = "SELECT version() AS version FROM system.one";

/// The column that says which replica a fanned-out row came from: `_shard_num` of
/// clusterAllReplicas, where every replica is a shard, numbered in system.clusters order.
pub const NODE_COLUMN: &str = "chaudit_node";

/// One fact query for every replica of `cluster` at once (ClickHouse's own fan-out):
/// `FROM system.x` read through clusterAllReplicas, the node number as the first column,
/// and grouping and `LIMIT n` per node.
pub fn fan_out(sql: &str, cluster: &str) -> String {
    let quoted = quoted(cluster);
    let mut out = sql.replacen("SELECT ", &format!("SELECT _shard_num AS {NODE_COLUMN}, "), 1);
    if let Some(at) = out.find("FROM system.") {
        let table_end = out[at + 5..].find(|c: char| c.is_whitespace()).map_or(out.len(), |i| at + 5 + i);
        let table = out[at + 5..table_end].to_string();
        out.replace_range(at..table_end, &format!("FROM clusterAllReplicas('{quoted}', {table})"));
    }
    out = out.replacen("GROUP BY ", &format!("GROUP BY {NODE_COLUMN}, "), 1);
    if let Some(at) = out.rfind(" LIMIT ") {
        let rest = &out[at + 7..];
        if rest.chars().all(|c| c.is_ascii_digit()) {
            out.push_str(&format!(" BY {NODE_COLUMN}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fan_out_reads_every_replica_per_node() {
        assert_eq!(
            fan_out("SELECT name, value FROM system.settings", "c3"),
            "SELECT _shard_num AS chaudit_node, name, value FROM clusterAllReplicas('c3', system.settings)"
        );
        let parts = fan_out(FACTS.iter().find(|f| f.name == "parts").unwrap().sql, "it's");
        assert!(
            parts.contains(
                "FROM clusterAllReplicas('it\\'s', system.parts) WHERE active GROUP BY chaudit_node, database"
            )
        );
        let (_, _, shapes) = log_queries(3600).remove(0);
        let shapes = fan_out(&shapes, "c");
        assert!(shapes.contains("GROUP BY chaudit_node, normalized_query_hash"), "{shapes}");
        assert!(shapes.ends_with("LIMIT 50 BY chaudit_node"), "{shapes}");
        let (_, _, totals) = log_queries(3600).into_iter().find(|(name, _, _)| *name == "lock_totals").unwrap();
        assert!(fan_out(&totals, "c").ends_with("GROUP BY chaudit_node, host"), "{totals}");
        // the union read again of some replicas only
        let parts = [Part { name: "settings", tag: "settings".into(), sql: "SELECT name FROM system.settings" }];
        assert_eq!(fan_out_combined_of("c", &parts, None), fan_out_combined("c", &parts));
        assert!(fan_out_combined_of("c", &parts, Some(&[2, 7])).ends_with(") WHERE _shard_num IN (2, 7)"));
    }

    #[test]
    fn fan_out_queries_in_flight_keep_their_connections_within_the_bound() {
        // three replicas: a 21-branch query with --in-flight 16
        assert_eq!(fan_out_in_flight(3, 21, 16), 16);
        assert_eq!(fan_out_in_flight(500, 1, 16), 2);
        // a big fleet: one query at a time, however many it would take
        assert_eq!(fan_out_in_flight(2000, 1, 16), 1);
        assert_eq!(fan_out_in_flight(2000, 21, 16), 1);
        assert_eq!(fan_out_in_flight(0, 0, 0), 1);
    }
}
