//! The health rules (parts, mutations, errors, inserts, object counts, deprecated engines,
//! ClickHouse's own warnings) fire on states a real ClickHouse 26.9 server is put into, and
//! stay quiet at or above medium on a healthy one.

mod support;

use std::path::Path;

use serde_json::Value;

/// The rules of the health checklist that read the live server and its logs.
const HEALTH_RULES: &[&str] = &[
    "clickhouse-warnings",
    "too-many-parts-in-partition",
    "detached-parts",
    "mutation-failing",
    "mutation-stuck",
    "too-many-pending-mutations",
    "replica-readonly",
    "replication-delay",
    "replication-queue-large",
    "replication-queue-errors",
    "disk-space-low",
    "ordinary-database",
    "object-count-near-limit",
    "distributed-send-backlog",
    "live-zero-copy-replication",
    "live-system-log-without-ttl",
    "small-inserts",
    "query-error-spike",
    "background-operation-failures",
    "merges-stalled",
    "inserts-throttled-too-many-parts",
    "replicated-part-errors",
    "file-descriptor-io-errors",
    "distributed-send-errors",
    "buffer-flush-errors",
    "keeper-hardware-exceptions",
    "dns-errors",
    "slow-reads",
    "too-many-running-queries",
    "too-many-connections",
    "keeper-multiple-sessions",
    "large-part",
    "background-pool-saturated",
];

fn audit(server: &support::LiveServer, extra: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let dsn = format!("http://default@127.0.0.1:{}", server.http_port);
    let mut args = vec!["--dsn", &dsn, "--since", "1h", "--fail-on", "never", "--format", "json", "--stats"];
    args.extend_from_slice(extra);
    let (code, stdout, stderr) = support::chaudit(dir.path(), &args);
    assert_eq!(code, 0, "{stderr}");
    // the new facts ride in the one union: connect probe + one query
    assert!(stderr.contains("2 round trips"), "{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}\n{stderr}"))
}

fn messages(report: &Value, rule: &str) -> Vec<String> {
    support::findings_of(report, rule).iter().map(|f| f["message"].as_str().unwrap().to_string()).collect()
}

/// Sends `sql` with query-level settings in the URL (CREATE DATABASE takes no SETTINGS).
fn query_with(server: &support::LiveServer, settings: &str, sql: &str) -> String {
    let out = std::process::Command::new("curl")
        .args(["-sS", "--fail-with-body", "--data-binary", sql])
        .arg(format!("http://127.0.0.1:{}/?{settings}", server.http_port))
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn troubled_server() -> support::LiveServer {
    support::LiveServer::start(|dir: &Path| {
        std::fs::create_dir_all(dir.join("config.d")).unwrap();
        // a low limit, so that a handful of tables is near it
        std::fs::write(
            dir.join("config.d/limits.xml"),
            "<clickhouse>\n    <max_table_num_to_warn>10</max_table_num_to_warn>\n</clickhouse>\n",
        )
        .unwrap();
    })
}

#[test]
fn a_troubled_server_makes_the_health_rules_fire() {
    let server = troubled_server();
    // merges stopped, one part per row (310 parts in one partition), then 120 one-row INSERTs
    server.query("CREATE TABLE default.piled (k UInt64) ENGINE = MergeTree ORDER BY k");
    server.query("SYSTEM STOP MERGES default.piled");
    server.query(
        "INSERT INTO default.piled SELECT number FROM numbers(310) \
         SETTINGS max_block_size = 1, max_insert_block_size = 1, min_insert_block_size_rows = 1, \
         min_insert_block_size_bytes = 1, max_threads = 1",
    );
    for i in 0..120 {
        server.query(&format!("INSERT INTO default.piled VALUES ({i})"));
    }
    // one INSERT spread over 250 partitions: 250 new parts, none of them due for a merge
    server.query("CREATE TABLE default.spread (k UInt64) ENGINE = MergeTree ORDER BY k PARTITION BY k % 250");
    query_with(
        &server,
        "max_partitions_per_insert_block=300",
        "INSERT INTO default.spread SELECT number FROM numbers(1000)",
    );
    // a part detached by hand
    server.query("CREATE TABLE default.halved (k UInt64) ENGINE = MergeTree ORDER BY k PARTITION BY k % 2");
    server.query("INSERT INTO default.halved SELECT number FROM numbers(10)");
    let part = server.query("SELECT name FROM system.parts WHERE table = 'halved' AND active ORDER BY name LIMIT 1");
    server.query(&format!("ALTER TABLE default.halved DETACH PART '{}'", part.trim()));
    // a mutation that throws on every attempt
    server.query("CREATE TABLE default.mutated (k UInt64, v String) ENGINE = MergeTree ORDER BY k");
    server.query("INSERT INTO default.mutated VALUES (1, 'a')");
    server.query("ALTER TABLE default.mutated UPDATE v = toString(throwIf(k > 0)) WHERE 1 SETTINGS mutations_sync = 0");
    // inserts delayed, then refused, by a table's own low part limits
    server.query(
        "CREATE TABLE default.throttled (k UInt64) ENGINE = MergeTree ORDER BY k \
         SETTINGS parts_to_delay_insert = 3, parts_to_throw_insert = 5, max_delay_to_insert = 1",
    );
    server.query("SYSTEM STOP MERGES default.throttled");
    for i in 0..7 {
        query_with(&server, "", &format!("INSERT INTO default.throttled VALUES ({i})"));
    }
    // an error burst: 60 failing queries
    for _ in 0..60 {
        query_with(&server, "", "SELECT throwIf(1, 'burst')");
    }
    // a deprecated Ordinary database, and tables up to the warning limit
    query_with(&server, "allow_deprecated_database_ordinary=1", "CREATE DATABASE legacy ENGINE = Ordinary");
    for i in 0..8 {
        server.query(&format!("CREATE TABLE default.filler_{i} (k UInt8) ENGINE = Memory"));
    }
    // the mutation has failed at least a few times by now; logs flushed
    for _ in 0..100 {
        let tries =
            server.query("SELECT count() FROM system.mutations WHERE table = 'mutated' AND latest_fail_reason != ''");
        if tries.trim() != "0" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    std::thread::sleep(std::time::Duration::from_secs(2));
    server.query("SYSTEM FLUSH LOGS");
    // the failing mutation retries with a growing back-off: far fewer than 50 failures an
    // hour can be waited for here, so the threshold is lowered
    let report = audit(&server, &["--param", "max_failures_per_hour=1"]);

    let parts = server.query("SELECT count() FROM system.parts WHERE table = 'piled' AND active");
    let parts: u64 = parts.trim().parse().unwrap();
    assert!(parts > 300, "{parts} parts");
    let piled = messages(&report, "too-many-parts-in-partition");
    assert!(
        piled.iter().any(|m| m.contains("default.piled") && m.contains(&format!("has {parts} active parts"))),
        "{piled:?}"
    );

    let detached = messages(&report, "detached-parts");
    assert_eq!(detached, ["default.halved has 1 detached part(s) (detached by a user)"]);

    let failing = messages(&report, "mutation-failing");
    assert!(
        failing.len() == 1 && failing[0].contains("default.mutated") && failing[0].contains("throwIf"),
        "{failing:?}"
    );
    let looping = messages(&report, "background-operation-failures");
    assert!(looping.iter().any(|m| m.starts_with("MutatePart of default.mutated failed")), "{looping:?}");

    let stalled = messages(&report, "merges-stalled");
    let new_parts = server.query(
        "SELECT count() FROM system.part_log WHERE table = 'piled' AND event_type = 'NewPart' AND event_time > now() - INTERVAL 1 HOUR",
    );
    assert!(
        stalled.contains(&format!(
            "default.piled got {} new parts in the window and no merge of it completed",
            new_parts.trim()
        )),
        "{stalled:?}"
    );

    let spread = server.query(
        "SELECT count(), uniqExact(partition_id) FROM system.part_log WHERE table = 'spread' AND event_type = 'NewPart'",
    );
    assert_eq!(spread.trim(), "250\t250");
    assert!(!stalled.iter().any(|m| m.contains("default.spread")), "nothing to merge: {stalled:?}");

    // the 120 one-row INSERTs (the 310-row one is one INSERT of 310 rows)
    let small = messages(&report, "small-inserts");
    assert!(small.iter().any(|m| m.starts_with("default.piled received 121 synchronous INSERTs")), "{small:?}");

    let burst = messages(&report, "query-error-spike");
    assert!(
        burst.iter().any(|m| m.starts_with("60 queries failed with FUNCTION_THROW_IF_VALUE_IS_NON_ZERO (395)")),
        "{burst:?}"
    );

    let rejected = server.query("SELECT value FROM system.events WHERE event = 'RejectedInserts'");
    // counters grow: the count is evidence, the message stays the same from one audit to the next
    let throttled = support::findings_of(&report, "inserts-throttled-too-many-parts");
    let refused =
        throttled.iter().find(|f| f["message"].as_str().unwrap().starts_with("RejectedInserts: INSERTs refused"));
    assert_eq!(refused.map(|f| f["evidence"]["count"].to_string()), Some(rejected.trim().to_string()), "{throttled:?}");

    assert_eq!(messages(&report, "ordinary-database"), ["database `legacy` uses the deprecated Ordinary engine"]);

    let attached = server.query("SELECT value FROM system.metrics WHERE metric = 'AttachedTable'");
    let objects = messages(&report, "object-count-near-limit");
    assert_eq!(
        objects,
        [format!("{} tables are attached; ClickHouse warns above max_table_num_to_warn = 10", attached.trim())]
    );

    // the server's own warnings about the Ordinary database and the table count are the
    // dedicated rules' findings, not repeated by clickhouse-warnings
    let warnings = server.query("SELECT message FROM system.warnings");
    assert!(warnings.contains("Ordinary"), "{warnings}");
    for m in messages(&report, "clickhouse-warnings") {
        assert!(!m.contains("Ordinary") && !m.contains("number of attached"), "{m}");
    }

    the_printed_fixes_clear_their_findings(&server, &report);
}

/// The changing SQL fixes, run as printed (KILL MUTATION, SYSTEM START MERGES): the server
/// accepts them and the re-audit no longer fires their rules for those tables.
fn the_printed_fixes_clear_their_findings(server: &support::LiveServer, report: &Value) {
    let about = |report: &Value, rule: &str, table: &str| -> Option<Value> {
        support::findings_of(report, rule).into_iter().find(|f| f["message"].as_str().unwrap().contains(table)).cloned()
    };
    for (rule, table) in [("mutation-failing", "default.mutated"), ("merges-stalled", "default.piled")] {
        let finding = about(report, rule, table).unwrap_or_else(|| panic!("{rule} on {table}"));
        server.query(finding["remediation"]["sql"].as_str().expect("a SQL fix"));
    }
    let merged = (0..120).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(500));
        server.query("SYSTEM FLUSH LOGS");
        server.query("SELECT count() FROM system.part_log WHERE table = 'piled' AND event_type = 'MergeParts'").trim()
            != "0"
    });
    assert!(merged, "no merge of default.piled within 60 s of SYSTEM START MERGES");
    let after = audit(server, &["--param", "max_failures_per_hour=1"]);
    assert_eq!(about(&after, "mutation-failing", "default.mutated"), None);
    assert_eq!(about(&after, "merges-stalled", "default.piled"), None);
}

#[test]
fn a_healthy_server_gives_no_health_finding_at_or_above_medium() {
    let server = support::LiveServer::start(|_| {});
    server.query("CREATE TABLE default.events (k UInt64) ENGINE = MergeTree ORDER BY k");
    server.query("INSERT INTO default.events SELECT number FROM numbers(100000)");
    server.query("SYSTEM FLUSH LOGS");
    let report = audit(&server, &[]);
    // the servers' data lives on this machine's disk: it is only healthy if that has room
    let free =
        server.query("SELECT min((free_space - keep_free_space) / total_space) FROM system.disks WHERE NOT is_remote");
    let disk_full = free.trim().parse::<f64>().unwrap() < 0.15;
    assert_eq!(!support::findings_of(&report, "disk-space-low").is_empty(), disk_full, "free share {free}");
    for rule in HEALTH_RULES.iter().filter(|r| **r != "disk-space-low") {
        let outcome = support::report_entry(&report, "outcomes", rule).map(|o| o["outcome"].clone());
        assert!(outcome.is_some(), "{rule} did not run");
        for f in support::findings_of(&report, rule) {
            assert!(["low", "info"].contains(&f["severity"].as_str().unwrap()), "{rule}: {f}");
        }
    }
    assert!(
        !support::findings_of(&report, "live-system-log-without-ttl").is_empty(),
        "the stock system logs have no TTL"
    );
    // the pools background-pool-saturated compares exist under the names it reads
    let pools = server.query(
        "SELECT count() FROM system.metrics WHERE metric IN ('BackgroundMergesAndMutationsPoolTask', \
         'BackgroundMergesAndMutationsPoolSize', 'BackgroundFetchesPoolTask', 'BackgroundFetchesPoolSize', \
         'BackgroundSchedulePoolTask', 'BackgroundSchedulePoolSize')",
    );
    assert_eq!(pools.trim(), "6");
    // the audit's own queries are no load of the server's: idle, it counts none running
    let idle = audit(&server, &["--select", "too-many-running-queries", "--param", "max_running_queries=0"]);
    let outcome = support::report_entry(&idle, "outcomes", "too-many-running-queries").unwrap();
    assert_eq!(outcome["outcome"], "passed", "{idle}");
}

#[test]
fn an_old_release_is_reported_with_its_age_and_every_new_fact_answers_on_24_8() {
    let server = support::LiveServer::start_version(support::CLICKHOUSE_24_8, false, |_| {});
    server.query("SYSTEM FLUSH LOGS");
    // 24.8 has no system.projections: the projection rules do not apply there (not
    // inconclusive: the run judges everything it can)
    let report = audit(&server, &[]);
    assert_eq!(
        support::report_entry(&report, "outcomes", "parallel-replicas-with-projections").unwrap()["outcome"],
        "not-applicable"
    );
    let age = server.query("SELECT dateDiff('day', toDate('2024-08-01'), today())");
    assert_eq!(
        messages(&report, "version-old"),
        [format!("ClickHouse 24.8.4.1 was released about {} days ago (more than 365)", age.trim())]
    );
    // the health facts all exist in 24.8: none of their rules is inconclusive
    for rule in HEALTH_RULES {
        let outcome = support::report_entry(&report, "outcomes", rule).map(|o| o["outcome"].as_str().unwrap_or(""));
        assert!(outcome.is_some_and(|o| o != "inconclusive" && o != "errored"), "{rule}: {outcome:?}");
    }
}

#[test]
fn a_replicated_table_without_keeper_is_a_read_only_replica_on_25_8() {
    // The test engines are built without NuRaft (an embedded <keeper_server> is refused with
    // SUPPORT_IS_DISABLED), so the replica is made read-only the way a server without a
    // reachable Keeper has it: a ReplicatedMergeTree table attached at start-up with no
    // <zookeeper> configured (in an Ordinary database, whose metadata is plain files).
    let server = support::LiveServer::start_version(support::CLICKHOUSE_25_8, false, |dir: &Path| {
        let metadata = dir.join("data/metadata");
        std::fs::create_dir_all(metadata.join("legacy")).unwrap();
        std::fs::write(metadata.join("legacy.sql"), "ATTACH DATABASE legacy\nENGINE = Ordinary\n").unwrap();
        std::fs::write(
            metadata.join("legacy/events.sql"),
            "ATTACH TABLE events\n(\n    k UInt64\n)\nENGINE = ReplicatedMergeTree('/tables/events', 'r1')\nORDER BY k\n",
        )
        .unwrap();
    });
    assert_eq!(server.query("SELECT is_readonly FROM system.replicas WHERE table = 'events'").trim(), "1");
    server.query("SYSTEM FLUSH LOGS");
    let report = audit(&server, &[]);
    assert_eq!(
        messages(&report, "replica-readonly"),
        ["legacy.events is read-only (its Keeper session expired): inserts into it fail"]
    );
    // its delay counts from a queue update that never came: not a second finding
    assert!(messages(&report, "replication-delay").is_empty());
    assert_eq!(messages(&report, "ordinary-database"), ["database `legacy` uses the deprecated Ordinary engine"]);
}
