//! What `--dry-run` prints: every query with its purpose, one node's plan or the
//! fan-out's; nothing is sent.

use super::*;

fn describe_connect() -> String {
    let (purpose, sql) = CONNECT_PROBE;
    format!("-- {purpose}\n{sql};\n")
}

/// What `--dry-run` prints: every query with its purpose; nothing is sent.
pub fn describe(log_window: Option<u64>, review: bool) -> String {
    let mut out = describe_connect();
    let mut logs = log_window.map(log_queries).unwrap_or_default();
    if let (Some(since), true) = (log_window, review) {
        logs.extend(usage_queries(since));
    }
    let all: Vec<&FactQuery> = FACTS.iter().collect();
    describe_parts(&mut out, &all, &logs);
    out.push_str(&format!("-- {COMBINED_PURPOSE}\n{};\n", combined(&parts(&all, &logs))));
    for query in &crate::collect::keeper::QUERIES {
        out.push_str(&format!("-- {}\n{};\n", query.purpose, query.sql));
    }
    out.push_str(&format!("-- {}\n{};\n", crate::collect::own_failures::PURPOSE, crate::collect::own_failures::sql()));
    out.push_str(&format!(
        "-- {}\n{};\n",
        crate::collect::empty_password::PURPOSE,
        crate::collect::empty_password::SQL
    ));
    if log_window.is_some() {
        let example = crate::collect::explain::Candidate {
            shape: String::new(),
            check: "",
            sql: "EXPLAIN ...".into(),
            about: None,
        };
        out.push_str(&format!(
            "-- {}\n--   {};\n",
            crate::collect::explain::PURPOSE,
            crate::collect::explain::union_sql(&[example])
        ));
    }
    if review {
        let (purpose, sql) = SETTINGS_CHANGES;
        out.push_str(&format!("-- {purpose} (only when the server is newer than chaudit's data)\n{sql};\n"));
    }
    out
}

/// Each fact and log query with its purpose, as sent alone when the combined query fails.
fn describe_parts(out: &mut String, facts: &[&FactQuery], logs: &[(&str, &str, String)]) {
    let facts = facts.iter().map(|q| (q.name.to_string(), q.purpose, q.sql));
    let logs = logs.iter().map(|(name, purpose, sql)| (format!("log.{name}"), *purpose, sql.as_str()));
    for (name, purpose, sql) in facts.chain(logs) {
        out.push_str(&format!(
            "-- {name}: {purpose} (sent alone only if the combined query below fails)\n--   {sql};\n"
        ));
    }
}

/// What `--dry-run --cluster NAME` prints: the fan-out path's queries (all sent through the
/// --dsn node with skip_unavailable_shards = 1 and use_hedged_requests = 0); over direct connections each replica gets
/// the plan of [`describe`].
pub fn describe_fan_out(cluster: &str, log_window: Option<u64>) -> String {
    let mut out = describe_connect();
    out.push_str(&format!("-- cluster members (system.clusters)\n{};\n", members_sql(cluster)));
    let (purpose, sql) = fan_out_failures();
    out.push_str(&format!("-- {purpose}\n{sql};\n"));
    out.push_str(&format!("-- {}\n{};\n", crate::collect::own_failures::PURPOSE, crate::collect::own_failures::sql()));
    let logs = log_window.map(log_queries).unwrap_or_default();
    let all = for_fan_out(FACTS.iter().collect());
    describe_parts(&mut out, &all, &logs);
    let mut parts = parts(&all, &logs);
    parts.push(Part { name: keys::live::VERSION.name(), tag: keys::live::VERSION.name().into(), sql: VERSION_PROBE });
    out.push_str(&format!(
        "-- every fact and log query of every replica, and its version, in one round trip (the facts of the --dsn node's version)\n{};\n",
        fan_out_combined(cluster, &parts)
    ));
    out.push_str(&format!(
        "-- only when a replica is missing from it: the replicas' versions, then, of the missing replicas only \
         (WHERE _shard_num IN ...), the union again with the facts the oldest has (if a replica refuses it: the facts' \
         union, then each query alone, through clusterAllReplicas)\n{};\n",
        fan_out(VERSION_PROBE, cluster)
    ));
    for query in &crate::collect::keeper::QUERIES {
        out.push_str(&format!("-- {}\n{};\n", query.purpose, query.fan_out_sql(cluster)));
    }
    if log_window.is_some() {
        let example = crate::collect::explain::fan_out_union_sql(cluster, &["EXPLAIN ..."]);
        out.push_str(&format!(
            "-- {}
--   {example};
",
            crate::collect::explain::FAN_OUT_PURPOSE
        ));
    }
    out
}
