//! The replication rules against real replicated tables: Apache ZooKeeper on loopback (from
//! Debian's `zookeeper` package, installed by the test setup) and clickhouse-server 25.8
//! replicas (the 26.9 engine of the other tests runs as clickhouse-local, without
//! system.zookeeper). One ZooKeeper for the binary; one two-replica cluster `replicated`
//! (one shard) carrying a ReplicatedMergeTree table, audited with `--cluster` clean, then in
//! planted states (a replica that stopped fetching, a replica whose Keeper metadata is gone, a
//! merge entry failing on a lagging replica, a Distributed table whose sends are stopped, a
//! shard that cannot be reached, tables the replicas disagree on, an ON CLUSTER statement
//! queued for a stopped replica, quorum inserts with a replica not fetching, then stopped),
//! each fixed the way an admin would where it can be and
//! audited again; one server configured with `<zookeeper>` but no
//! interserver port, whose replicated table never leaves read-only; one whose default replica
//! name uses a macro `<macros>` lacks; one server whose own ZooKeeper is stopped and
//! started again; a pair whose table has a part broken on one replica, then a part missing
//! from one replica with its queue empty, then a part lost on both; and a pair whose users'
//! profiles turn parallel replicas on over the cluster (read across, kept on one replica by
//! a minimum of rows, kept on one replica by the analyzer off); a pair where one replica's
//! config sets a `<merge_tree>` setting; and single servers whose coordination config cannot
//! work (Keeper timeouts that fail every request, ON CLUSTER without or with a malformed
//! `<distributed_ddl>`, replicas without Keeper).

mod support;

use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{CLICKHOUSE_25_8, LiveServer, ZooKeeper, findings_of, free_port};

/// The rules a healthy replicated cluster must not trigger.
const REPLICATION_RULES: &[&str] = &[
    "replica-readonly",
    "replication-delay",
    "replication-queue-errors",
    "replication-queue-large",
    "replicated-part-errors",
    "keeper-hardware-exceptions",
    "keeper-multiple-sessions",
    "distributed-send-backlog",
    "distributed-send-errors",
    "replicated-without-interserver-port",
    "distributed-ddl-queue-stuck",
    "insert-quorum-failures",
    "cluster-replica-data-divergence",
];

const TABLE: &str = "CREATE TABLE default.t (k UInt64, v String) \
    ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/default/t', '{replica}') ORDER BY k \
    SETTINGS max_replicated_merges_in_queue = 0";

/// One ZooKeeper for the whole binary (it follows this process when the binary ends).
/// The tests run one at a time: each starts servers of its own, and on two cores four clusters
/// at once made a replica miss its deadlines.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn zookeeper() -> &'static ZooKeeper {
    static ZK: OnceLock<ZooKeeper> = OnceLock::new();
    ZK.get_or_init(ZooKeeper::start)
}

/// config.d/replication.xml of a replica: Keeper, macros, the interserver port (None: left
/// out, the misconfiguration) and the cluster.
fn replication_xml(replica: &str, interserver: Option<u16>, remote_servers: &str) -> String {
    replication_xml_for(zookeeper(), replica, interserver, remote_servers)
}

fn replication_xml_for(zk: &ZooKeeper, replica: &str, interserver: Option<u16>, remote_servers: &str) -> String {
    let interserver = interserver
        .map(|port| {
            format!("<interserver_http_port>{port}</interserver_http_port><interserver_http_host>127.0.0.1</interserver_http_host>")
        })
        .unwrap_or_default();
    format!(
        "<clickhouse>\n{}\n{interserver}\n<macros><shard>1</shard><replica>{replica}</replica></macros>\n{remote_servers}\n</clickhouse>\n",
        zk.clickhouse_section()
    )
}

fn prepare(dir: &Path, xml: &str) {
    std::fs::create_dir_all(dir.join("config.d")).unwrap();
    std::fs::write(dir.join("config.d/replication.xml"), xml).unwrap();
}

/// Two 25.8 replicas (`r1`, `r2`) of cluster `replicated`, each with its interserver port.
fn start_pair() -> (LiveServer, LiveServer) {
    start_pair_named(["r1", "r2"])
}

/// Two 25.8 replicas of cluster `replicated` with these `replica` macros.
fn start_pair_named(names: [&str; 2]) -> (LiveServer, LiveServer) {
    let ports: Vec<(u16, u16)> = (0..2).map(|_| (free_port(), free_port())).collect();
    let replicas: String =
        ports.iter().map(|(_, tcp)| format!("<replica><host>127.0.0.1</host><port>{tcp}</port></replica>")).collect();
    // the cluster, and the distributed DDL queue its ON CLUSTER statements go through
    let remote_servers = format!(
        "<remote_servers><replicated><shard><internal_replication>true</internal_replication>{replicas}</shard></replicated></remote_servers>\
         <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>"
    );
    let zk = zookeeper(); // started before the replicas, which connect as they start
    assert_eq!(zk.four_letter("ruok"), "imok");
    let mut nodes = std::thread::scope(|scope| {
        let handles: Vec<_> = ports
            .iter()
            .enumerate()
            .map(|(i, (http, tcp))| {
                let xml = replication_xml(names[i], Some(free_port()), &remote_servers);
                scope.spawn(move || LiveServer::start_on(CLICKHOUSE_25_8, *http, *tcp, |dir| prepare(dir, &xml)))
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("server start")).collect::<Vec<_>>()
    });
    let b = nodes.pop().unwrap();
    (nodes.pop().unwrap(), b)
}

/// The cluster audit through replica `a`, with extra arguments (--param).
fn audit_cluster(a: &LiveServer, extra: &[&str]) -> Value {
    support::cluster_audit(&[&["--dsn", &a.dsn(), "--cluster", "replicated"][..], extra].concat())
}

/// The cluster audit of `a` and `b` over direct connections (each replica's HTTP port given).
fn audit_direct(a: &LiveServer, b: &LiveServer) -> Value {
    let (seed, each) = (a.dsn(), [a, b].map(|n| format!("{}=http://127.0.0.1:{}", n.node(), n.http_port)));
    let mut args = vec!["--dsn", &seed, "--cluster", "replicated", "--fan-out", "direct"];
    for e in &each {
        args.extend(["--replica-dsn", e]);
    }
    support::cluster_audit(&args)
}

/// The replicas a finding names (a cluster finding's `hosts`).
fn hosts(finding: &Value) -> Vec<String> {
    finding["hosts"].as_array().into_iter().flatten().map(|h| h["host"].as_str().unwrap().to_string()).collect()
}

/// The one finding of `rule` on `table`, or a failure showing the report's findings.
fn the_finding<'a>(report: &'a Value, rule: &str, table: &str) -> &'a Value {
    let found = findings_of(report, rule);
    assert_eq!(found.len(), 1, "{rule}: {found:#?}\nall findings: {}", summary(report));
    assert_eq!(found[0]["object"], table, "{}", found[0]);
    found[0]
}

/// rule: message, one line per finding (for failure messages).
fn summary(report: &Value) -> String {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| format!("{} [{}]: {}", f["rule_id"], hosts(f).join(", "), f["message"]))
        .collect::<Vec<_>>()
        .join("\n")
}

fn replication_findings(report: &Value) -> Vec<String> {
    REPLICATION_RULES
        .iter()
        .flat_map(|rule| findings_of(report, rule))
        .map(|f| format!("{} [{}]: {}", f["rule_id"], hosts(f).join(", "), f["message"]))
        .collect()
}

/// Polls `check` every 200 ms until it holds; fails after `seconds` saying `what`.
fn wait_until(seconds: u64, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while !check() {
        assert!(Instant::now() < deadline, "not within {seconds} s: {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// One number of default.t's row in system.replicas.
fn replica_number(server: &LiveServer, column: &str) -> u64 {
    let answer =
        server.query(&format!("SELECT {column} FROM system.replicas WHERE database = 'default' AND table = 't'"));
    answer.trim().parse().unwrap_or_else(|_| panic!("{column}: {answer:?}"))
}

fn count(server: &LiveServer) -> u64 {
    server.query("SELECT count() FROM default.t").trim().parse().unwrap()
}

#[test]
fn zookeeper_starts_and_answers() {
    let zk = zookeeper();
    assert_eq!(zk.four_letter("ruok"), "imok");
    let stats = zk.four_letter("mntr");
    assert!(stats.contains("zk_version\t3.") && stats.contains("zk_server_state\tstandalone"), "{stats}");
}

#[test]
fn a_replicated_table_lags_then_loses_its_keeper_metadata() {
    let _serial = one_at_a_time();
    let (a, b) = start_pair();
    // Keeper answers on both, and the table replicates
    for n in [&a, &b] {
        assert!(n.query("SELECT name FROM system.zookeeper WHERE path = '/'").contains("clickhouse"));
        n.query(TABLE);
    }
    a.query("INSERT INTO default.t SELECT number, 'a' FROM numbers(100)");
    b.query("SYSTEM SYNC REPLICA default.t");
    assert_eq!(count(&b), 100);

    // clean: no replication finding on either replica, the config of each passes too
    let report = audit_cluster(&a, &[]);
    assert!(report["target"].as_str().unwrap().contains("clusterAllReplicas"), "{}", report["target"]);
    assert_eq!(replication_findings(&report), Vec::<String>::new());
    assert!(findings_of(&report, "cluster-table-divergence").is_empty(), "{}", summary(&report));
    for n in [&a, &b] {
        let report = support::cluster_audit(&["--config", n.config_path().to_str().unwrap(), "--dsn", &n.dsn()]);
        assert_eq!(replication_findings(&report), Vec::<String>::new(), "{}", n.config_path().display());
    }

    // planted lag: r2 stops fetching while r1 takes five inserts (no merges are assigned,
    // max_replicated_merges_in_queue = 0: the queue holds the fetches alone; with merges, r2's
    // merge of parts it has not fetched fails with NO_REPLICA_HAS_PART meanwhile)
    b.query("SYSTEM STOP FETCHES default.t");
    for i in 1..=5 {
        a.query(&format!("INSERT INTO default.t SELECT 1000 * {i} + number, 'lag' FROM numbers(10)"));
    }
    wait_until(90, "r2's queue holds the 5 fetches", || replica_number(&b, "queue_size") == 5);
    wait_until(90, "r2 is 2 s behind", || replica_number(&b, "absolute_delay") >= 2);
    assert_eq!(replica_number(&b, "inserts_in_queue"), 5);
    let on_a = a.query("SELECT type, new_part_name, last_exception FROM system.replication_queue");
    assert_eq!(replica_number(&a, "queue_size"), 0, "{on_a}");

    // at the default thresholds (300 s, 200 entries) a few seconds and five entries pass
    let report = audit_cluster(&a, &[]);
    assert!(findings_of(&report, "replication-delay").is_empty(), "{}", summary(&report));
    assert!(findings_of(&report, "replication-queue-large").is_empty(), "{}", summary(&report));

    // with the thresholds lowered both fire, at r2 alone, with the numbers r2 shows
    let lowered = [
        "--param",
        "replication-delay.max_replica_delay_seconds=1",
        "--param",
        "replication-queue-large.max_replication_queue=3",
    ];
    let before = replica_number(&b, "absolute_delay");
    let report = audit_cluster(&a, &lowered);
    let after = replica_number(&b, "absolute_delay");
    let delay = the_finding(&report, "replication-delay", "default.t");
    assert_eq!(hosts(delay), vec![b.node()], "{delay}");
    let message = delay["message"].as_str().unwrap();
    let seconds: u64 = message
        .strip_prefix("default.t is ")
        .and_then(|m| m.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{message}"));
    assert!((before..=after).contains(&seconds), "{before} <= {seconds} <= {after}: {message}");
    assert!(message.ends_with("(queue: 5 entries)"), "{message}");
    let queue = the_finding(&report, "replication-queue-large", "default.t");
    assert_eq!(hosts(queue), vec![b.node()], "{queue}");
    assert_eq!(queue["message"], "default.t has 5 replication queue entries (5 fetches of inserts, 0 merges)");
    assert!(findings_of(&report, "replica-readonly").is_empty(), "{}", summary(&report));

    // the fix: fetches started again, the replica synced; the same lowered thresholds pass
    b.query("SYSTEM START FETCHES default.t");
    b.query("SYSTEM SYNC REPLICA default.t");
    assert_eq!(count(&b), 150);
    assert_eq!(replica_number(&b, "queue_size"), 0);
    let report = audit_cluster(&a, &lowered);
    assert!(findings_of(&report, "replication-delay").is_empty(), "{}", summary(&report));
    assert!(findings_of(&report, "replication-queue-large").is_empty(), "{}", summary(&report));
    // nothing else of the lag is left either
    assert_eq!(replication_findings(&report), Vec::<String>::new());

    // planted read-only: r2's metadata removed from Keeper, the table restarted on r2
    let zk = zookeeper();
    zk.cli(&["deleteall", "/clickhouse/tables/1/default/t/replicas/r2"]);
    b.query("SYSTEM RESTART REPLICA default.t");
    wait_until(90, "r2 is read-only", || replica_number(&b, "is_readonly") == 1);
    let refused = b.try_query("INSERT INTO default.t VALUES (1, 'refused')").unwrap_err();
    assert!(refused.contains("Code: 242") && refused.contains("TABLE_IS_READ_ONLY"), "{refused}");
    let report = audit_cluster(&a, &[]);
    let readonly = the_finding(&report, "replica-readonly", "default.t");
    assert_eq!(hosts(readonly), vec![b.node()], "{readonly}");
    assert_eq!(
        readonly["message"],
        "default.t is read-only (its replica metadata is missing in Keeper: SYSTEM RESTART REPLICA leaves it \
         read-only): inserts into it fail"
    );
    assert_eq!(readonly["evidence"]["metadata_missing"], true, "{readonly}");
    // its absolute_delay counts from a queue update that never came: left to replica-readonly
    assert!(replica_number(&b, "absolute_delay") > 1_000_000);
    assert!(findings_of(&report, "replication-delay").is_empty(), "{}", summary(&report));

    // what the message says: a restart of the replica leaves it read-only
    b.query("SYSTEM RESTART REPLICA default.t");
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(replica_number(&b, "is_readonly"), 1, "RESTART REPLICA does not bring back lost metadata");
    assert_eq!(findings_of(&audit_cluster(&a, &[]), "replica-readonly").len(), 1);

    // the finding's remedy, SYSTEM RESTORE REPLICA, writes the metadata back from the local
    // parts: writable again
    let remedy = readonly["remediation"]["sql"].as_str().unwrap();
    assert_eq!(remedy, "SYSTEM RESTORE REPLICA default.t");
    b.query(remedy);
    wait_until(90, "r2 is writable", || replica_number(&b, "is_readonly") == 0);
    b.query("INSERT INTO default.t VALUES (1, 'after restore')");
    a.query("SYSTEM SYNC REPLICA default.t");
    assert_eq!(count(&a), 151);
    let report = audit_cluster(&a, &[]);
    assert!(findings_of(&report, "replica-readonly").is_empty(), "{}", summary(&report));
    assert_eq!(replication_findings(&report), Vec::<String>::new());

    // planted backlog: a Distributed table over the cluster on r1, its sends stopped, three
    // inserts (not to the local replica) wait as files
    a.query("CREATE TABLE default.dist AS default.t ENGINE = Distributed(replicated, default, t)");
    a.query("SYSTEM STOP DISTRIBUTED SENDS default.dist");
    for i in 1..=3 {
        a.query(&format!(
            "INSERT INTO default.dist SETTINGS prefer_localhost_replica = 0 SELECT 9000 * {i} + number, 'dist' FROM numbers(10)"
        ));
    }
    let queued =
        a.query("SELECT data_files, data_compressed_bytes FROM system.distribution_queue WHERE table = 'dist'");
    let (files, bytes) = queued.trim().split_once('\t').unwrap_or_else(|| panic!("{queued:?}"));
    assert_eq!(files, "3");
    let report = audit_cluster(&a, &[]);
    assert!(findings_of(&report, "distributed-send-backlog").is_empty(), "50 files by default: {}", summary(&report));
    let lowered = ["--param", "distributed-send-backlog.max_distributed_files=2"];
    let report = audit_cluster(&a, &lowered);
    let backlog = the_finding(&report, "distributed-send-backlog", "default.dist");
    assert_eq!(hosts(backlog), vec![a.node()], "{backlog}");
    assert_eq!(backlog["message"], format!("default.dist has 3 files ({bytes} bytes) waiting to be sent"));
    // the fix: sends started, the finding's remedy flushes the queue; the rows reach both
    a.query("SYSTEM START DISTRIBUTED SENDS default.dist");
    let remedy = backlog["remediation"]["sql"].as_str().unwrap();
    assert_eq!(remedy, "SYSTEM FLUSH DISTRIBUTED default.dist");
    a.query(remedy);
    assert_eq!(a.query("SELECT count() FROM system.distribution_queue WHERE data_files > 0").trim(), "0");
    for n in [&a, &b] {
        n.query("SYSTEM SYNC REPLICA default.t");
        assert_eq!(count(n), 181);
    }
    let report = audit_cluster(&a, &lowered);
    assert_eq!(replication_findings(&report), Vec::<String>::new());

    // planted queue errors: a table that merges; r2 stops fetching and r1 stops running its
    // queue while it takes six inserts and picks a merge of five (six parts allow one; the
    // selection looks again within a second): r2's merge entry, whose parts it lacks and whose
    // merged part no replica has, fails (NO_REPLICA_HAS_PART). (Were r1's merge done first, r2
    // would wait to fetch it, failing nothing: a race, not a plant. OPTIMIZE would not return
    // while r1's queue is stopped.)
    for n in [&a, &b] {
        n.query(
            "CREATE TABLE default.m (k UInt64) \
             ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/default/m', '{replica}') ORDER BY k \
             SETTINGS merge_selecting_sleep_ms = 100, max_merge_selecting_sleep_ms = 1000",
        );
    }
    b.query("SYSTEM STOP FETCHES default.m");
    a.query("SYSTEM STOP REPLICATION QUEUES default.m");
    for i in 1..=6 {
        a.query(&format!("INSERT INTO default.m SELECT 100 * {i} + number FROM numbers(10)"));
    }
    let failing = || {
        b.query(
            "SELECT type, countIf(last_exception != ''), anyIf(last_exception, last_exception != '') \
             FROM system.replication_queue WHERE table = 'm' AND last_exception != '' GROUP BY type",
        )
    };
    wait_until(90, "r2's merge entry fails", || {
        b.query("SELECT count() FROM system.replication_queue WHERE table = 'm' AND type = 'MERGE_PARTS' AND last_exception != ''")
            .trim()
            == "1"
    });
    let seen = failing();
    let report = audit_cluster(&a, &[]);
    let queue = findings_of(&report, "replication-queue-errors");
    assert_eq!(queue.len(), 1, "{seen}\n{}", summary(&report));
    let (kind, rest) = seen.split_once('\t').unwrap();
    let count = rest.split('\t').next().unwrap();
    assert_eq!(queue[0]["object"], format!("default.m {kind}"), "{seen}");
    assert_eq!(hosts(queue[0]), vec![b.node()], "{}", queue[0]);
    let message = queue[0]["message"].as_str().unwrap();
    assert!(message.starts_with(&format!("{count} {kind} entries of default.m fail (up to ")), "{message}\n{seen}");
    // the fix: r1 merges, r2 fetches; the queues are empty, the finding gone
    a.query("SYSTEM START REPLICATION QUEUES default.m");
    a.query("SYSTEM SYNC REPLICA default.m");
    b.query("SYSTEM START FETCHES default.m");
    b.query("SYSTEM SYNC REPLICA default.m");
    assert_eq!(b.query("SELECT count() FROM default.m").trim(), "60");
    let report = audit_cluster(&a, &[]);
    assert!(findings_of(&report, "replication-queue-errors").is_empty(), "{}", summary(&report));
    // the lagging replica's merges failed while it caught up (merges of parts it lacked,
    // merges given up for the merged part): its catch-up, not a failing background
    // operation, even at a threshold of one failure an hour
    b.query("SYSTEM FLUSH LOGS");
    let failed = b.query(
        "SELECT groupUniqArray(errorCodeToName(error)) FROM system.part_log WHERE table = 'm' AND event_type = 'MergeParts' AND error != 0",
    );
    assert!(failed.contains("NO_REPLICA_HAS_PART") || failed.contains("ABORTED"), "{failed}");
    let strict = audit_cluster(&a, &["--param", "max_failures_per_hour=0"]);
    assert!(findings_of(&strict, "background-operation-failures").is_empty(), "{}", summary(&strict));
    // (r2's ReplicatedPartChecksFailed count, raised while it looked for the merged part, stays:
    // replicated-part-errors reports it until the server restarts; not asserted either way)

    // a shard that cannot be reached: r1's remote() to a port nobody listens on fails on every
    // try, and the count since start is r1's alone
    let failed =
        || a.query("SELECT value FROM system.events WHERE event = 'DistributedConnectionFailAtAll'").trim().to_string();
    assert_eq!(failed(), "", "no failure counted yet");
    let dead = free_port();
    let refused = a.try_query(&format!("SELECT * FROM remote('127.0.0.1:{dead}', system.one)")).unwrap_err();
    assert!(refused.contains("ALL_CONNECTION_TRIES_FAILED"), "{refused}");
    let counted = failed();
    let report = audit_cluster(&a, &[]);
    let errors = the_finding(&report, "distributed-send-errors", "DistributedConnectionFailAtAll");
    assert_eq!(hosts(errors), vec![a.node()], "{errors}");
    let on_a = errors["hosts"][0]["evidence"]["count"].to_string();
    assert_eq!(on_a.trim_matches('"'), counted, "{errors}");

    // tables the replicas disagree on. default.dist, created above on r1 only, is one; a
    // setting changed on one replica of a replicated table is another: ALTER TABLE ... MODIFY
    // SETTING is not replicated (r2 keeps its definition after a sync, and the table's
    // metadata in Keeper does not hold the setting)
    a.query("ALTER TABLE default.m MODIFY SETTING min_bytes_for_wide_part = 1");
    b.query("SYSTEM SYNC REPLICA default.m");
    let engine_full = |n: &LiveServer| {
        n.query("SELECT engine_full FROM system.tables WHERE database = 'default' AND name = 'm'").trim().to_string()
    };
    assert!(engine_full(&a).ends_with(", min_bytes_for_wide_part = 1"), "{}", engine_full(&a));
    assert!(!engine_full(&b).contains("min_bytes_for_wide_part"), "{}", engine_full(&b));
    let metadata = b.query(
        "SELECT value FROM system.zookeeper WHERE path = '/clickhouse/tables/1/default/m' AND name = 'metadata'",
    );
    assert!(metadata.contains("index granularity: 8192") && !metadata.contains("wide"), "{metadata}");
    // over direct connections too (each replica's HTTP port given)
    let direct = || audit_direct(&a, &b);
    let (r1, r2) = (a.node(), b.node());
    for (report, fan_out) in [(audit_cluster(&a, &[]), true), (direct(), false)] {
        assert_eq!(report["target"].as_str().unwrap().contains("clusterAllReplicas"), fan_out, "{}", report["target"]);
        let found = findings_of(&report, "cluster-table-divergence");
        let mut seen: Vec<(String, String)> = found
            .iter()
            .map(|f| (f["object"].as_str().unwrap().to_string(), f["message"].as_str().unwrap().to_string()))
            .collect();
        seen.sort();
        assert_eq!(
            seen,
            [
                ("default.dist missing".to_string(), format!("default.dist: exists on {r1} but not on {r2}")),
                (
                    "default.m setting min_bytes_for_wide_part".to_string(),
                    format!("default.m: its setting min_bytes_for_wide_part differs: {r1} = 1, {r2} = (not set)")
                ),
            ],
            "{} over {}",
            summary(&report),
            report["target"]
        );
    }
    // the fix: the same ALTER on r2, the Distributed table on r2 too: nothing left
    b.query("ALTER TABLE default.m MODIFY SETTING min_bytes_for_wide_part = 1");
    b.query("CREATE TABLE default.dist AS default.t ENGINE = Distributed(replicated, default, t)");
    for report in [audit_cluster(&a, &[]), direct()] {
        assert!(findings_of(&report, "cluster-table-divergence").is_empty(), "{}", summary(&report));
    }
}

/// An ON CLUSTER CREATE TABLE of `name` (replicated, in default).
fn on_cluster(name: &str, settings: &str) -> String {
    format!(
        "CREATE TABLE default.{name} ON CLUSTER replicated (k UInt64) \
         ENGINE = ReplicatedMergeTree('/clickhouse/tables/{{shard}}/default/{name}', '{{replica}}') ORDER BY k{settings}"
    )
}

/// The entries of the distributed DDL queue not finished on some host: entry, host:port, status.
fn unfinished(server: &LiveServer) -> String {
    server.query(
        "SELECT entry, concat(host, ':', toString(port)), status FROM system.distributed_ddl_queue \
         WHERE status != 'Finished' ORDER BY entry, host, port",
    )
}

#[test]
fn an_on_cluster_statement_waits_for_a_stopped_replica() {
    const RULE: &str = "distributed-ddl-queue-stuck";
    let _serial = one_at_a_time();
    let (a, mut b) = start_pair();
    let lowered = ["--param", "distributed-ddl-queue-stuck.max_entry_age_seconds=1"];
    // both running: the statement runs on both, nothing is left unfinished
    a.query(&on_cluster("ddl1", ""));
    wait_until(60, "ddl1 on r2", || b.query("EXISTS default.ddl1").trim() == "1");
    wait_until(60, "ddl1 finished everywhere", || unfinished(&a).is_empty());
    std::thread::sleep(Duration::from_secs(2));
    let report = audit_cluster(&a, &lowered);
    assert!(findings_of(&report, RULE).is_empty(), "{}", summary(&report));
    assert_eq!(replication_findings(&report), Vec::<String>::new());

    // r2 stopped (by its pid): the client gives up after distributed_ddl_task_timeout and the
    // entry stays queued for r2, Inactive
    b.stop();
    let refused = a.try_query(&on_cluster("ddl2", " SETTINGS distributed_ddl_task_timeout = 3")).unwrap_err();
    assert!(refused.contains("TIMEOUT_EXCEEDED") && refused.contains("is not finished on 1 of 2 hosts"), "{refused}");
    let pending = unfinished(&a);
    let entry = pending.split('\t').next().unwrap().to_string();
    assert_eq!(pending, format!("{entry}\t{}\tInactive\n", b.node()));
    std::thread::sleep(Duration::from_secs(2));
    // at the default threshold (300 s) a few seconds pass
    let report = audit_cluster(&a, &[]);
    assert!(findings_of(&report, RULE).is_empty(), "{}", summary(&report));
    // lowered, it fires on the replica that answered, naming the stopped one
    let report = audit_cluster(&a, &lowered);
    let stuck = the_finding(&report, RULE, &entry);
    assert_eq!(hosts(stuck), vec![a.node()], "{stuck}");
    let message = stuck["message"].as_str().unwrap();
    assert!(
        message.starts_with("`CREATE TABLE default.ddl2 ")
            && message.contains(&format!("({entry}, ON CLUSTER replicated) is not finished on {} after ", b.node()))
            && message.ends_with(" s (Inactive)"),
        "{message}"
    );
    let evidence = &stuck["hosts"][0]["evidence"];
    assert_eq!(evidence["pending"], serde_json::json!([b.node()]), "{stuck}");
    assert_eq!(evidence["hosts"], 2, "{stuck}");
    let manual = stuck["remediation"]["manual"].as_str().unwrap();
    assert!(manual.starts_with(&format!("Bring the server of {} back", b.node())), "{manual}");

    // what the remediation says of a host removed from <remote_servers>: the entry already
    // queued still waits for it (r1's cluster without r2, read by r1 without a restart)
    let config = a.dir.path().join("server/config.d/replication.xml");
    let with_both = std::fs::read_to_string(&config).unwrap();
    let without_b =
        with_both.replace(&format!("<replica><host>127.0.0.1</host><port>{}</port></replica>", b.tcp_port), "");
    assert_ne!(without_b, with_both);
    std::fs::write(&config, &without_b).unwrap();
    wait_until(60, "r1 reads its cluster without r2", || {
        a.query("SELECT count() FROM system.clusters WHERE cluster = 'replicated'").trim() == "1"
    });
    assert_eq!(unfinished(&a), pending, "the entry names its hosts");
    std::fs::write(&config, &with_both).unwrap();
    wait_until(60, "r1 reads its cluster with r2", || {
        a.query("SELECT count() FROM system.clusters WHERE cluster = 'replicated'").trim() == "2"
    });

    // r2 started again: its DDL worker runs the entry, the table is there, the finding gone
    b.restart();
    wait_until(90, "r2 created ddl2", || b.query("EXISTS default.ddl2").trim() == "1");
    wait_until(60, "the entry finished everywhere", || unfinished(&a).is_empty());
    // the audits' own fan-out to the stopped r2 counted connection failures on r1 (in r1's
    // counts since start, and in query_log under the audits' query ids): they are not r1's
    // Distributed tables failing, and no later audit reports them
    a.query("SYSTEM FLUSH LOGS");
    let own = a.query(
        "SELECT sum(ProfileEvents['DistributedConnectionFailAtAll']) FROM system.query_log WHERE query_id LIKE 'chaudit-%'",
    );
    let counted = a.query("SELECT sum(value) FROM system.events WHERE event = 'DistributedConnectionFailAtAll'");
    assert!(own.trim().parse::<u64>().unwrap() > 0 && own == counted, "own {own}, counted {counted}");
    let report = audit_cluster(&a, &lowered);
    assert!(findings_of(&report, RULE).is_empty(), "{}", summary(&report));
    assert!(findings_of(&report, "distributed-send-errors").is_empty(), "{}", summary(&report));
    let single = support::cluster_audit(&["--dsn", &a.dsn()]);
    assert!(findings_of(&single, "distributed-send-errors").is_empty(), "{}", summary(&single));

    // a host that will not come back: its entry deleted from Keeper leaves the queue
    b.stop();
    a.try_query(&on_cluster("ddl3", " SETTINGS distributed_ddl_task_timeout = 1")).unwrap_err();
    let pending = unfinished(&a);
    let entry = pending.split('\t').next().unwrap().to_string();
    std::thread::sleep(Duration::from_secs(2));
    the_finding(&audit_cluster(&a, &lowered), RULE, &entry);
    zookeeper().cli(&["deleteall", &format!("/clickhouse/task_queue/ddl/{entry}")]);
    assert_eq!(unfinished(&a), "");
    let report = audit_cluster(&a, &lowered);
    assert!(findings_of(&report, RULE).is_empty(), "{}", summary(&report));
}

#[test]
fn quorum_inserts_fail_without_enough_replicas() {
    const RULE: &str = "insert-quorum-failures";
    let _serial = one_at_a_time();
    let (a, b) = start_pair();
    // a table of its own (ZooKeeper is shared by the binary's tests)
    for n in [&a, &b] {
        n.query(
            "CREATE TABLE default.q (k UInt64) \
             ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/default/q', '{replica}') ORDER BY k",
        );
    }
    let count = |n: &LiveServer| n.query("SELECT count() FROM default.q").trim().parse::<u64>().unwrap();
    // insert_quorum_parallel = 0: each quorum insert waits for the one before it
    let insert = |n: &LiveServer, k: u64| {
        n.try_query(&format!(
            "INSERT INTO default.q SETTINGS insert_quorum = 2, insert_quorum_parallel = 0, \
             insert_quorum_timeout = 3000 VALUES ({k})"
        ))
    };
    let errors = |n: &LiveServer, name: &str| -> u64 {
        n.query(&format!("SELECT sum(value) FROM system.errors WHERE name = '{name}'")).trim().parse().unwrap()
    };
    // both replicas up: the quorum is reached, nothing fires
    insert(&a, 1).unwrap();
    assert_eq!(count(&b), 1, "the quorum insert is on r2 when it returns");
    let report = audit_cluster(&a, &[]);
    assert!(findings_of(&report, RULE).is_empty(), "{}", summary(&report));
    assert_eq!(replication_findings(&report), Vec::<String>::new());

    // r2 stops fetching: the insert is written on r1 and its quorum not confirmed in time;
    // the next one is refused while that one is unsatisfied
    b.query("SYSTEM STOP FETCHES default.q");
    let unconfirmed = insert(&a, 2).unwrap_err();
    assert!(
        unconfirmed.contains("UNKNOWN_STATUS_OF_INSERT") && unconfirmed.contains("Timeout while waiting for quorum"),
        "{unconfirmed}"
    );
    let refused = insert(&a, 3).unwrap_err();
    assert!(refused.contains("UNSATISFIED_QUORUM_FOR_PREVIOUS_WRITE"), "{refused}");
    let report = audit_cluster(&a, &[]);
    let failed = the_finding(&report, RULE, "insert quorum");
    assert_eq!(hosts(failed), vec![a.node()], "{failed}");
    assert_eq!(
        failed["message"],
        "2 quorum inserts failed since the server started: 1 written here without a confirmed quorum; \
         1 refused: an earlier one not yet satisfied"
    );
    let evidence = &failed["hosts"][0]["evidence"];
    for name in ["UNKNOWN_STATUS_OF_INSERT", "UNSATISFIED_QUORUM_FOR_PREVIOUS_WRITE", "TOO_FEW_LIVE_REPLICAS"] {
        assert_eq!(evidence[name], errors(&a, name), "{name}: {failed}");
        assert_eq!(errors(&b, name), 0, "{name} on r2");
    }

    // fetches started: r2 gets the part, the quorum is reached after all and quorum inserts
    // succeed again (the counts since start stay)
    b.query("SYSTEM START FETCHES default.q");
    b.query("SYSTEM SYNC REPLICA default.q");
    assert_eq!(count(&b), 2);
    wait_until(60, "a quorum insert succeeds", || insert(&a, 4).is_ok());

    // r2 stopped (by its pid): too few active replicas, nothing written
    b.stop();
    wait_until(60, "r1 sees one active replica", || {
        a.query("SELECT active_replicas FROM system.replicas WHERE table = 'q'").trim() == "1"
    });
    let few = insert(&a, 5).unwrap_err();
    assert!(
        few.contains("TOO_FEW_LIVE_REPLICAS")
            && few.contains("Number of alive replicas (1) is less than requested quorum (2/2)"),
        "{few}"
    );
    let report = audit_cluster(&a, &[]);
    let failed = the_finding(&report, RULE, "insert quorum");
    assert_eq!(hosts(failed), vec![a.node()], "{failed}");
    assert_eq!(
        failed["message"],
        "3 quorum inserts failed since the server started: 1 with too few active replicas; 1 written here without a \
         confirmed quorum; 1 refused: an earlier one not yet satisfied"
    );
    assert_eq!(failed["hosts"][0]["evidence"]["TOO_FEW_LIVE_REPLICAS"], 1, "{failed}");
    assert_eq!(a.query("SELECT count() FROM default.q WHERE k = 5").trim(), "0");
}

#[test]
fn without_an_interserver_port_a_replicated_table_stays_read_only() {
    let _serial = one_at_a_time();
    let ddl = "CREATE TABLE default.u (k UInt64) \
               ENGINE = ReplicatedMergeTree('/clickhouse/tables/noport/u', '{replica}') ORDER BY k";
    let port = std::cell::Cell::new(None::<u16>);
    let mut server = LiveServer::start_version(CLICKHOUSE_25_8, false, |dir| {
        prepare(dir, &replication_xml("lonely", port.get(), ""));
    });
    // the server starts and reaches Keeper...
    assert!(server.query("SELECT name FROM system.zookeeper WHERE path = '/'").contains("clickhouse"));
    server.query(ddl);
    // ...and the table is read-only: the insert is refused, the cause only in the server log
    // (at the default insert_keeper_max_retries, 20, the refusal comes after the retries'
    // backoff, 143 s measured: the test asks for none)
    assert_eq!(server.query("SELECT value FROM system.settings WHERE name = 'insert_keeper_max_retries'").trim(), "20");
    let refused =
        server.try_query("INSERT INTO default.u SETTINGS insert_keeper_max_retries = 0 VALUES (1)").unwrap_err();
    assert!(refused.contains("Code: 242") && refused.contains("TABLE_IS_READ_ONLY"), "{refused}");
    assert_eq!(server.query("SELECT is_readonly FROM system.replicas WHERE table = 'u'").trim(), "1");
    let log = server.dir.path().join("server/clickhouse-server.err.log");
    wait_until(90, "the cause in the server log", || {
        std::fs::read_to_string(&log).unwrap_or_default().contains(
            "Parameter 'interserver_http(s)_port' required for replication is not specified in configuration file",
        )
    });

    // the config alone says so, offline; with the live server, the table is read-only too
    let config = server.config_path();
    let report = support::cluster_audit(&["--config", config.to_str().unwrap()]);
    let finding = the_finding(&report, "replicated-without-interserver-port", "zookeeper");
    assert_eq!(finding["location"]["file"], "config.d/replication.xml", "{finding}");
    let report = support::cluster_audit(&["--config", config.to_str().unwrap(), "--dsn", &server.dsn()]);
    the_finding(&report, "replicated-without-interserver-port", "zookeeper");
    // its metadata is in Keeper: no claim that it is missing, the remedy a restart (which does
    // not help here either: the config does)
    let readonly = the_finding(&report, "replica-readonly", "default.u");
    assert_eq!(readonly["message"], "default.u is read-only: inserts into it fail");
    assert_eq!(readonly["evidence"]["metadata_missing"], false, "{readonly}");
    let fix = finding["remediation"]["fragments"][0]["xml"].as_str().unwrap();
    assert!(fix.contains("<interserver_http_port>9009</interserver_http_port>"), "{fix}");

    // the fix (the port the remediation names is taken on a shared host: a free one), a
    // restart, and the table takes inserts; neither finding remains
    port.set(Some(free_port()));
    prepare(&server.dir.path().join("server"), &replication_xml("lonely", port.get(), ""));
    server.restart();
    wait_until(60, "u is writable after the restart", || {
        server.query("SELECT is_readonly FROM system.replicas WHERE table = 'u'").trim() == "0"
    });
    server.query("INSERT INTO default.u VALUES (1)");
    let report = support::cluster_audit(&["--config", config.to_str().unwrap(), "--dsn", &server.dsn()]);
    assert_eq!(replication_findings(&report), Vec::<String>::new());
}

#[test]
fn keeper_lost_and_back() {
    let _serial = one_at_a_time();
    // its own ZooKeeper: this one is stopped mid-test
    let mut zk = ZooKeeper::start();
    // an auxiliary Keeper (the same ZooKeeper under another name) with a table on it: a second
    // session, as normal as the first
    let auxiliary = format!(
        "<auxiliary_zookeepers><aux><node><host>127.0.0.1</host><port>{}</port></node></aux></auxiliary_zookeepers>",
        zk.port
    );
    let xml = replication_xml_for(&zk, "alone", Some(free_port()), &auxiliary);
    let server = LiveServer::start_version(CLICKHOUSE_25_8, false, |dir| prepare(dir, &xml));
    server.query(
        "CREATE TABLE default.k (k UInt64) \
         ENGINE = ReplicatedMergeTree('/clickhouse/tables/keeper/k', '{replica}') ORDER BY k",
    );
    server.query(
        "CREATE TABLE default.ka (k UInt64) \
         ENGINE = ReplicatedMergeTree('aux:/clickhouse/tables/keeper/ka', '{replica}') ORDER BY k",
    );
    server.query("INSERT INTO default.k VALUES (1)");
    server.query("INSERT INTO default.ka VALUES (1)");
    let audit_it = || support::cluster_audit(&["--dsn", &server.dsn()]);
    let report = audit_it();
    assert_eq!(replication_findings(&report), Vec::<String>::new());
    assert_eq!(event(&server, "ZooKeeperHardwareExceptions"), 0);
    let sessions = || server.query("SELECT value FROM system.metrics WHERE metric = 'ZooKeeperSession'");
    let connections = || server.query("SELECT name FROM system.zookeeper_connection ORDER BY name");
    assert_eq!((sessions().trim(), event(&server, "ZooKeeperInit")), ("2", 2));
    assert_eq!(connections(), "aux\ndefault\n");

    // Keeper gone: the session expires, the table turns read-only
    zk.stop();
    let readonly = || server.query("SELECT is_readonly, is_session_expired FROM system.replicas WHERE table = 'k'");
    wait_until(90, "k is read-only with its session expired", || readonly().trim() == "1\t1");
    let refused = server.try_query("INSERT INTO default.k SETTINGS insert_keeper_max_retries = 0 VALUES (2)");
    assert!(refused.is_err(), "{refused:?}");
    let before = event(&server, "ZooKeeperHardwareExceptions");
    let report = audit_it();
    let after = event(&server, "ZooKeeperHardwareExceptions");
    let readonly_tables = findings_of(&report, "replica-readonly");
    let objects: Vec<&str> = readonly_tables.iter().map(|f| f["object"].as_str().unwrap()).collect();
    assert_eq!(objects, ["default.k", "default.ka"], "{}", summary(&report));
    let finding = readonly_tables[0];
    assert_eq!(finding["message"], "default.k is read-only (its Keeper session expired): inserts into it fail");
    assert_eq!(finding["remediation"]["sql"], "SYSTEM RESTART REPLICA default.k");
    let lost = the_finding(&report, "keeper-hardware-exceptions", "ZooKeeperHardwareExceptions");
    let count: u64 = lost["evidence"]["count"].to_string().trim_matches('"').parse().unwrap();
    assert!(before > 0 && (before..=after).contains(&count), "{before} <= {count} <= {after}");

    // Keeper back: the replica reconnects by itself and takes inserts; the read-only finding is
    // gone, the failures since start stay counted, and the one session open is no
    // multiple-sessions finding
    zk.start_again();
    wait_until(90, "k is writable again", || readonly().trim() == "0\t0");
    let aux_readonly = || server.query("SELECT is_readonly FROM system.replicas WHERE table = 'ka'");
    wait_until(90, "ka is writable again", || aux_readonly().trim() == "0");
    server.query("INSERT INTO default.k VALUES (2)");
    server.query("INSERT INTO default.ka VALUES (2)");
    let report = audit_it();
    assert!(findings_of(&report, "replica-readonly").is_empty(), "{}", summary(&report));
    the_finding(&report, "keeper-hardware-exceptions", "ZooKeeperHardwareExceptions");
    // both sessions were established again and the old ones closed: two open, one per
    // connection in use, though more were established since start than are open
    assert_eq!(sessions().trim(), "2");
    assert_eq!(connections(), "aux\ndefault\n");
    assert!(event(&server, "ZooKeeperInit") >= 4, "new sessions were established");
    assert!(findings_of(&report, "keeper-multiple-sessions").is_empty(), "{}", summary(&report));
}

/// config.d/replication.xml with `<macros>` as given and the replicated tables' default path
/// and name (a ReplicatedMergeTree without arguments).
fn default_replica_xml(interserver: u16, macros: &str) -> String {
    format!(
        "<clickhouse>\n{}\n<interserver_http_port>{interserver}</interserver_http_port>\n\
         <interserver_http_host>127.0.0.1</interserver_http_host>\n<macros>{macros}</macros>\n\
         <default_replica_path>/clickhouse/tables/{{shard}}/{{database}}/{{table}}</default_replica_path>\n\
         <default_replica_name>{{replica}}</default_replica_name>\n</clickhouse>\n",
        zookeeper().clickhouse_section()
    )
}

#[test]
fn a_default_replica_name_whose_macro_is_not_defined() {
    let _serial = one_at_a_time();
    let interserver = free_port();
    let xml = default_replica_xml(interserver, "<shard>1</shard>");
    let server = LiveServer::start_version(CLICKHOUSE_25_8, false, |dir| prepare(dir, &xml));
    // offline: the name's {replica} is not in <macros>; the path's {shard} is, and {database}
    // and {table} are the server's own
    let config = server.config_path();
    let report = support::cluster_audit(&["--config", config.to_str().unwrap()]);
    let found = the_finding(&report, "replica-path-undefined-macro", "default_replica_name {replica}");
    assert_eq!(found["location"]["file"], "config.d/replication.xml", "{found}");
    let line = xml.lines().position(|l| l.starts_with("<default_replica_name>")).unwrap() + 1;
    assert_eq!(found["location"]["line"], line, "{found}");
    // the server starts with it, says nothing, and lists the macros it has
    assert_eq!(server.query("SELECT macro, substitution FROM system.macros"), "shard\t1\n");
    assert_eq!(
        server.query("SELECT value FROM system.server_settings WHERE name = 'default_replica_name'").trim(),
        "{replica}"
    );
    // a table without engine arguments fails, as does one naming the macro itself
    let create = "CREATE TABLE default.x (k UInt64) ENGINE = ReplicatedMergeTree ORDER BY k";
    let refused = server.try_query(create).unwrap_err();
    assert!(
        refused.contains("Code: 139")
            && refused.contains("No macro 'replica' in config while processing substitutions in '{replica}'")
            && refused.contains("NO_ELEMENTS_IN_CONFIG"),
        "{refused}"
    );
    let refused = server
        .try_query(
            "CREATE TABLE default.y (k UInt64) \
             ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/default/y', '{replica}') ORDER BY k",
        )
        .unwrap_err();
    assert!(refused.contains("No macro 'replica' in config"), "{refused}");
    let refused = server
        .try_query("CREATE DATABASE rdb0 ENGINE = Replicated('/clickhouse/db/macro_test0', '{shard}', '{replica}')")
        .unwrap_err();
    assert!(refused.contains("No macro 'replica' in config"), "{refused}");
    // inside a Replicated database, its own shard and replica names fill the macros
    server.query("CREATE DATABASE rdb ENGINE = Replicated('/clickhouse/db/macro_test', 's1', 'r1')");
    server.query("CREATE TABLE rdb.x (k UInt64) ENGINE = ReplicatedMergeTree ORDER BY k");

    // the fix: the macro defined in config.d; the server reads it without a restart (the
    // remediation says so) and the same CREATE succeeds; the audit is quiet
    prepare(
        &server.dir.path().join("server"),
        &default_replica_xml(interserver, "<shard>1</shard><replica>r1</replica>"),
    );
    wait_until(60, "the server reads the new macro", || {
        server.query("SELECT count() FROM system.macros").trim() == "2"
    });
    server.query(create);
    assert_eq!(
        server.query(
            "SELECT replica_name, zookeeper_path FROM system.replicas WHERE database = 'default' AND table = 'x'"
        ),
        "r1\t/clickhouse/tables/1/default/x\n"
    );
    let report = support::cluster_audit(&["--config", config.to_str().unwrap()]);
    assert!(findings_of(&report, "replica-path-undefined-macro").is_empty(), "{}", summary(&report));
    assert_eq!(found["remediation"]["restart"], false, "{found}");
}

/// A replicated table of its own (ZooKeeper is shared by the binary's tests), merges off: the
/// parts stay as inserted.
const DATA_TABLE: &str = "CREATE TABLE default.p (k UInt64, v String) \
    ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/default/p', '{replica}') ORDER BY k \
    SETTINGS max_replicated_merges_in_queue = 0";

fn rows_of_p(server: &LiveServer) -> u64 {
    server.query("SELECT count() FROM default.p").trim().parse().unwrap()
}

/// The name and directory of one active part of default.p (`which`: "first", "last"...).
fn part_of_p(server: &LiveServer, order: &str) -> (String, String) {
    let row = server.query(&format!(
        "SELECT name, path FROM system.parts WHERE database = 'default' AND table = 'p' AND active ORDER BY {order} LIMIT 1"
    ));
    let (name, path) = row.trim().split_once('\t').unwrap_or_else(|| panic!("{row:?}"));
    (name.to_string(), path.to_string())
}

fn event(server: &LiveServer, name: &str) -> u64 {
    server.query(&format!("SELECT sum(value) FROM system.events WHERE event = '{name}'")).trim().parse().unwrap()
}

#[test]
fn parts_broken_diverging_and_lost() {
    const DIVERGED: &str = "cluster-replica-data-divergence";
    let _serial = one_at_a_time();
    let (a, b) = start_pair();
    for n in [&a, &b] {
        n.query(DATA_TABLE);
    }
    for i in 0..3 {
        a.query(&format!("INSERT INTO default.p SELECT number + {i} * 100, 'a' FROM numbers(100)"));
    }
    b.query("SYSTEM SYNC REPLICA default.p");
    let report = audit_cluster(&a, &[]);
    for rule in [DIVERGED, "detached-parts", "replicated-part-errors"] {
        assert!(findings_of(&report, rule).is_empty(), "{}", summary(&report));
    }

    // a broken part on r2: CHECK TABLE finds it, detaches it as broken and fetches it again
    let (broken, dir) = part_of_p(&b, "name DESC");
    std::fs::write(Path::new(&dir).join("data.bin"), b"not a part").unwrap();
    let checked = b.query("CHECK TABLE default.p SETTINGS check_query_single_value_result = 0");
    assert!(checked.contains(&format!("Part {broken} looks broken. Removing it and will try to fetch.")), "{checked}");
    wait_until(60, "r2 fetched the part again", || rows_of_p(&b) == 300);
    assert!(event(&b, "ReplicatedPartChecksFailed") >= 1);
    let report = audit_cluster(&a, &[]);
    let detached = the_finding(&report, "detached-parts", "default.p broken");
    assert_eq!(hosts(detached), vec![b.node()], "{detached}");
    // the failed check alone is no part error (a catching-up replica counts them too)
    assert!(findings_of(&report, "replicated-part-errors").is_empty(), "{}", summary(&report));
    assert!(findings_of(&report, DIVERGED).is_empty(), "{}", summary(&report));
    // the fix the rule gives: the broken copy dropped
    b.query(&format!("ALTER TABLE default.p DROP DETACHED PART 'broken_{broken}' SETTINGS allow_drop_detached = 1"));
    assert!(findings_of(&audit_cluster(&a, &[]), "detached-parts").is_empty());

    // diverged: a part gone from r2's disk and from r2's list in Keeper; r2's queue is empty
    let (gone, dir) = part_of_p(&b, "name");
    b.query("DETACH TABLE default.p");
    std::fs::remove_dir_all(&dir).unwrap();
    zookeeper().cli(&["deleteall", &format!("/clickhouse/tables/1/default/p/replicas/r2/parts/{gone}")]);
    b.query("ATTACH TABLE default.p");
    wait_until(60, "r2's table is writable", || {
        b.query("SELECT is_readonly FROM system.replicas WHERE table = 'p'").trim() == "0"
    });
    b.query("SYSTEM SYNC REPLICA default.p");
    assert_eq!((rows_of_p(&a), rows_of_p(&b)), (300, 200));
    assert_eq!(b.query("SELECT queue_size FROM system.replicas WHERE table = 'p'").trim(), "0");
    let direct = || audit_direct(&a, &b);
    let (r1, r2) = (a.node(), b.node());
    for report in [audit_cluster(&a, &[]), direct()] {
        let found = the_finding(&report, DIVERGED, "default.p");
        assert_eq!(
            found["message"],
            format!(
                "default.p: its replicas hold different rows with nothing left in their replication queues \
                 ({r1} = 300 rows in 3 parts, {r2} = 200 rows in 2 parts)"
            ),
            "{}",
            report["target"]
        );
        assert_eq!(found["evidence"]["fewest_rows_on"], r2.as_str(), "{found}");
        // nothing else says so
        let others: Vec<String> = replication_findings(&report).into_iter().filter(|f| !f.contains(DIVERGED)).collect();
        assert_eq!(others, Vec::<String>::new());
        // the remediation's query names the part r2 lacks
        let listed = a.query(found["remediation"]["sql"].as_str().unwrap());
        assert!(listed.starts_with(&format!("{gone}\t")) && listed.trim_end().ends_with("\t1"), "{listed}");
    }
    // the fix the remediation gives: r2's replica dropped and created again fetches every part
    b.query("DROP TABLE default.p SYNC");
    b.query(DATA_TABLE);
    b.query("SYSTEM SYNC REPLICA default.p");
    assert_eq!((rows_of_p(&a), rows_of_p(&b)), (300, 300));
    for report in [audit_cluster(&a, &[]), direct()] {
        assert!(findings_of(&report, DIVERGED).is_empty(), "{}", summary(&report));
    }

    // lost: a part inserted on r1 while r2 is not fetching, then gone from r1's disk: no
    // replica has it any more
    b.query("SYSTEM STOP FETCHES default.p");
    a.query("INSERT INTO default.p SELECT number + 1000, 'lost' FROM numbers(7)");
    let (lost, dir) = part_of_p(&a, "modification_time DESC, name DESC");
    a.query("DETACH TABLE default.p");
    std::fs::remove_dir_all(&dir).unwrap();
    a.query("ATTACH TABLE default.p");
    wait_until(60, "r1 counts the part lost", || event(&a, "ReplicatedDataLoss") == 1);
    b.query("SYSTEM START FETCHES default.p");
    b.query("SYSTEM SYNC REPLICA default.p");
    assert_eq!((rows_of_p(&a), rows_of_p(&b)), (300, 300), "the 7 rows of {lost} are gone from both");
    let report = audit_cluster(&a, &[]);
    let lost_finding = the_finding(&report, "replicated-part-errors", "ReplicatedDataLoss");
    assert_eq!(hosts(lost_finding), vec![r1.clone()], "{lost_finding}");
    assert_eq!(lost_finding["evidence"]["count"], 1, "{lost_finding}");
    // the remediation's query names the part, from the server's own messages
    a.query("SYSTEM FLUSH LOGS");
    let messages = a.query(lost_finding["remediation"]["sql"].as_str().unwrap());
    assert!(messages.contains(&format!("Part {lost} is lost forever.")), "{messages}");
    assert!(findings_of(&report, DIVERGED).is_empty(), "{}", summary(&report));
    // a count since start: the finding stays until r1 restarts (the rule says so)
}

/// Three users whose profile turns parallel replicas on over the replicated cluster: one whose
/// queries read across replicas, one whose reads stay under the profile's minimum of rows per
/// replica, one whose profile turns the analyzer off.
#[test]
fn parallel_replicas_judged_on_the_queries_that_ran() {
    const GLOBAL: &str = "live-parallel-replicas-global";
    const UNUSED: &str = "parallel-replicas-unused-analyzer-off";
    let _serial = one_at_a_time();
    let (a, b) = start_pair();
    let table = "CREATE TABLE default.pr (k UInt64, v String) \
        ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/default/pr', '{replica}') ORDER BY k";
    for n in [&a, &b] {
        n.query(table);
    }
    a.query("INSERT INTO default.pr SELECT number, toString(number) FROM numbers(2000000)");
    b.query("SYSTEM SYNC REPLICA default.pr");
    let on = "enable_parallel_replicas = 1, cluster_for_parallel_replicas = 'replicated', max_parallel_replicas = 2";
    for (user, extra) in [
        ("analyst", ""),
        ("guarded", ", parallel_replicas_min_number_of_rows_per_replica = 1000000000"),
        ("old", ", enable_analyzer = 0"),
    ] {
        a.query(&format!("CREATE SETTINGS PROFILE p_{user} SETTINGS {on}{extra}"));
        a.query(&format!(
            "CREATE USER {user} IDENTIFIED WITH plaintext_password BY 'pw-{user}' SETTINGS PROFILE p_{user}"
        ));
        a.query(&format!("GRANT SELECT ON default.* TO {user}"));
        for sql in ["SELECT count() FROM default.pr WHERE v LIKE '%7%'", "SELECT v FROM default.pr WHERE k = 5"] {
            a.try_query_as(user, &format!("pw-{user}"), sql).unwrap_or_else(|e| panic!("{user}: {e}"));
        }
    }
    a.query("SYSTEM FLUSH LOGS");
    if let Ok(path) = std::env::var("CHAUDIT_RECORD") {
        let dir = tempfile::tempdir().unwrap();
        let (code, _, err) =
            support::chaudit(dir.path(), &["collect", "--dsn", &a.dsn(), "--since", "1h", "--output", &path]);
        assert_eq!(code, 0, "{err}");
    }
    // what each user's queries did, in the server's own words
    let across = |user: &str| {
        a.query(&format!(
            "SELECT groupArray(ProfileEvents['ParallelReplicasQueryCount'] > 0) FROM (SELECT * FROM system.query_log \
             WHERE type = 'QueryFinish' AND user = '{user}' ORDER BY event_time_microseconds)"
        ))
        .trim()
        .to_string()
    };
    assert_eq!([across("analyst"), across("guarded"), across("old")], ["[1,1]", "[0,0]", "[0,0]"]);

    let report = support::cluster_audit(&["--dsn", &a.dsn()]);
    // the users whose queries read across replicas, once (not again for their queries'
    // settings), with what the queries did; not the users whose queries did not
    let global = findings_of(&report, GLOBAL);
    let objects: Vec<&str> = global.iter().map(|f| f["object"].as_str().unwrap()).collect();
    assert_eq!(objects, ["profile p_analyst/enable_parallel_replicas"], "{}", summary(&report));
    assert_eq!(
        global[0]["message"],
        "settings profile `p_analyst` (user(s) analyst): enable_parallel_replicas = 1 over cluster replicated: \
         2 of 2 SELECTs of analyst read across replicas (1 under 100,000 rows)"
    );
    // why the old one's did not: the analyzer
    let unused = the_finding(&report, UNUSED, "user old");
    assert_eq!(
        unused["message"],
        "2 of 2 SELECTs of user `old` ran with parallel replicas on and the analyzer off: each read on one replica"
    );

    // the fix, as an admin: old's next scan reads across replicas; over a window after the fix,
    // nothing of the analyzer is left
    a.query(unused["remediation"]["sql"].as_str().unwrap());
    std::thread::sleep(Duration::from_secs(4));
    a.try_query_as("old", "pw-old", "SELECT count() FROM default.pr WHERE v LIKE '%7%'").unwrap();
    a.query("SYSTEM FLUSH LOGS");
    assert_eq!(across("old"), "[0,0,1]");
    let dir = tempfile::tempdir().unwrap();
    let (_, out, err) = support::chaudit(
        dir.path(),
        &["--dsn", &a.dsn(), "--since", "3s", "--format", "json", "--fail-on", "never", "--allow-inconclusive"],
    );
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {err}"));
    assert!(findings_of(&report, UNUSED).is_empty(), "{}", summary(&report));
}

/// A `<merge_tree>` setting in one replica's config.d: read when the server starts (measured: a
/// SYSTEM RELOAD CONFIG leaves system.merge_tree_settings as it was), then the replicas differ.
#[test]
fn a_merge_tree_setting_on_one_replica() {
    const RULE: &str = "cluster-merge-tree-setting-divergence";
    let _serial = one_at_a_time();
    let (a, mut b) = start_pair();
    let report = audit_cluster(&a, &[]);
    assert!(findings_of(&report, RULE).is_empty(), "{}", summary(&report));
    let file = b.dir.path().join("server/config.d/merge_tree.xml");
    std::fs::write(
        &file,
        "<clickhouse><merge_tree><parts_to_throw_insert>500</parts_to_throw_insert></merge_tree></clickhouse>",
    )
    .unwrap();
    let setting = |n: &LiveServer| {
        n.query("SELECT value, changed FROM system.merge_tree_settings WHERE name = 'parts_to_throw_insert'")
    };
    b.query("SYSTEM RELOAD CONFIG");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(setting(&b), "3000\t0\n", "not read without a restart");
    b.restart();
    assert_eq!(setting(&b), "500\t1\n");
    let (r1, r2) = (a.node(), b.node());
    let report = audit_cluster(&a, &[]);
    let found = the_finding(&report, RULE, "parts_to_throw_insert");
    assert_eq!(
        found["message"],
        format!("MergeTree setting parts_to_throw_insert differs: {r1} = (not set), {r2} = 500"),
        "{found}"
    );
    // the fix: the same config on every replica, each restarted
    std::fs::remove_file(&file).unwrap();
    b.restart();
    let report = audit_cluster(&a, &[]);
    assert!(findings_of(&report, RULE).is_empty(), "{}", summary(&report));
}

/// config.d/replication.xml of one replica `r1` with the interserver port, `<zookeeper>` as
/// given (its `<node>` and these `timeouts`, none when None) and `extra` (clusters, sections).
fn keeper_config_xml(zk: Option<&ZooKeeper>, timeouts: &str, interserver: u16, extra: &str) -> String {
    let zookeeper = zk
        .map(|zk| {
            format!("<zookeeper><node><host>127.0.0.1</host><port>{}</port></node>{timeouts}</zookeeper>", zk.port)
        })
        .unwrap_or_default();
    format!(
        "<clickhouse>\n{zookeeper}\n<interserver_http_port>{interserver}</interserver_http_port>\n\
         <interserver_http_host>127.0.0.1</interserver_http_host>\n\
         <macros><shard>1</shard><replica>r1</replica></macros>\n{extra}\n</clickhouse>\n"
    )
}

/// The offline audit of a server's config files: the findings of `rule`.
fn offline_findings(server: &LiveServer, rule: &str) -> Vec<Value> {
    let report = support::cluster_audit(&["--config", server.config_path().to_str().unwrap(), "--select", rule]);
    findings_of(&report, rule).into_iter().cloned().collect()
}

#[test]
fn keeper_timeouts_that_fail_every_request() {
    const RULE: &str = "keeper-timeouts-out-of-range";
    let _serial = one_at_a_time();
    let zk = zookeeper();
    let interserver = free_port();
    let write = |dir: &Path, timeouts: &str| prepare(dir, &keeper_config_xml(Some(zk), timeouts, interserver, ""));
    let create = |name: &str| {
        format!(
            "CREATE TABLE default.{name} (k UInt64) \
             ENGINE = ReplicatedMergeTree('/clickhouse/tables/timeouts/{name}', '{{replica}}') ORDER BY k"
        )
    };
    // a negative session timeout: the server starts; every use of Keeper fails
    let server = LiveServer::start_version(CLICKHOUSE_25_8, false, |dir| {
        write(dir, "<session_timeout_ms>-1</session_timeout_ms>")
    });
    let refused = server.try_query("SELECT name FROM system.zookeeper WHERE path = '/'").unwrap_err();
    assert!(refused.contains("Timeout cannot be negative") && refused.contains("KEEPER_EXCEPTION"), "{refused}");
    let refused = server.try_query(&create("a")).unwrap_err();
    assert!(refused.contains("Timeout cannot be negative"), "{refused}");
    assert_eq!(server.query("EXISTS TABLE default.a").trim(), "0");
    let found = offline_findings(&server, RULE);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["object"], "session_timeout_ms", "{}", found[0]);
    assert_eq!(found[0]["location"]["file"], "config.d/replication.xml", "{}", found[0]);

    // what the rule leaves alone works, each written while the server runs (read without a
    // restart, as the remediation says): a session timeout of 0 (the service raises it to its
    // minimum), no connection timeout, an operation timeout above the session's
    let config_dir = server.dir.path().join("server");
    for (name, timeouts, expected) in [
        ("c", "<session_timeout_ms>0</session_timeout_ms>", "0"),
        (
            "d",
            "<session_timeout_ms>3000</session_timeout_ms><operation_timeout_ms>30000</operation_timeout_ms>\
             <connection_timeout_ms>0</connection_timeout_ms>",
            "3000",
        ),
    ] {
        write(&config_dir, timeouts);
        wait_until(60, "the server reads the new <zookeeper>", || {
            server
                .try_query("SELECT session_timeout_ms FROM system.zookeeper_connection")
                .is_ok_and(|t| t.trim() == expected)
        });
        server.query(&create(name));
        server.query(&format!("INSERT INTO default.{name} VALUES (1)"));
        assert_eq!(server.query(&format!("SELECT count() FROM default.{name}")).trim(), "1");
        assert_eq!(offline_findings(&server, RULE), Vec::<Value>::new(), "{timeouts}");
    }
    drop(server);

    // the operation timeout 0: the server starts; every request times out, the table is not
    // created
    let server = LiveServer::start_version(CLICKHOUSE_25_8, false, |dir| {
        write(dir, "<operation_timeout_ms>0</operation_timeout_ms>")
    });
    // (a query of system.zookeeper fails the same way, after 143 s measured: not asked here)
    let refused = server.try_query(&create("b")).unwrap_err();
    assert!(refused.contains("Failed to get feature flags: timeout"), "{refused}");
    assert_eq!(server.query("EXISTS TABLE default.b").trim(), "0");
    let found = offline_findings(&server, RULE);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["object"], "operation_timeout_ms", "{}", found[0]);
}

#[test]
fn on_cluster_without_or_with_a_malformed_distributed_ddl() {
    let _serial = one_at_a_time();
    let zk = zookeeper();
    // each state a server of its own (fresh ports: a stopped server's may not be free yet),
    // in cluster `solo` of itself
    let start = |ddl: &str| {
        let (http, tcp, interserver) = (free_port(), free_port(), free_port());
        let cluster = format!(
            "<remote_servers><solo><shard><replica><host>127.0.0.1</host><port>{tcp}</port></replica></shard></solo>\
             </remote_servers>"
        );
        let xml = keeper_config_xml(Some(zk), "", interserver, &format!("{cluster}\n{ddl}"));
        LiveServer::start_on(CLICKHOUSE_25_8, http, tcp, |dir| prepare(dir, &xml))
    };
    let on_cluster = |server: &LiveServer, name: &str| {
        server
            .try_query(&format!("CREATE TABLE default.{name} ON CLUSTER solo (k UInt64) ENGINE = MergeTree ORDER BY k"))
    };
    let sessions = |server: &LiveServer| -> u64 {
        server.query("SELECT value FROM system.events WHERE event = 'ZooKeeperInit'").trim().parse().unwrap_or(0)
    };
    // no <distributed_ddl>: ON CLUSTER is refused, replicated tables work
    let server = start("");
    let refused = on_cluster(&server, "a").unwrap_err();
    assert!(
        refused.contains("Code: 139")
            && refused.contains("There is no DistributedDDL configuration in server config")
            && refused.contains("NO_ELEMENTS_IN_CONFIG"),
        "{refused}"
    );
    server.query(
        "CREATE TABLE default.r (k UInt64) \
         ENGINE = ReplicatedMergeTree('/clickhouse/tables/ddl/r', '{replica}') ORDER BY k",
    );
    server.query("INSERT INTO default.r VALUES (1)");
    let found = offline_findings(&server, "distributed-ddl-missing");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["location"]["file"], "config.d/replication.xml", "{}", found[0]);
    drop(server);

    // an empty path: ON CLUSTER fails, the server's Keeper session is dropped again and again
    let server = start("<distributed_ddl><path></path></distributed_ddl>");
    let refused = on_cluster(&server, "b").unwrap_err();
    assert!(refused.contains("Coordination error: Session expired, path query-"), "{refused}");
    wait_until(60, "the session is opened a fifth time", || sessions(&server) >= 5);
    let found = offline_findings(&server, "distributed-ddl-path-invalid");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0]["message"].as_str().unwrap().contains("dropped again and again"), "{}", found[0]);
    assert!(offline_findings(&server, "distributed-ddl-missing").is_empty());
    drop(server);

    // a relative path: ON CLUSTER fails the same way
    let server = start("<distributed_ddl><path>clickhouse/task_queue/ddl</path></distributed_ddl>");
    let refused = on_cluster(&server, "c").unwrap_err();
    assert!(refused.contains("Session expired, path clickhouse/task_queue/ddl/query-"), "{refused}");
    assert_eq!(offline_findings(&server, "distributed-ddl-path-invalid").len(), 1);
    drop(server);

    // the fix: an absolute path; ON CLUSTER runs, neither rule fires
    let server = start("<distributed_ddl><path>/clickhouse/task_queue/ddl_fixed</path></distributed_ddl>");
    on_cluster(&server, "d").unwrap();
    assert_eq!(server.query("EXISTS TABLE default.d").trim(), "1");
    assert!(offline_findings(&server, "distributed-ddl-path-invalid").is_empty());
    assert!(offline_findings(&server, "distributed-ddl-missing").is_empty());
}

#[test]
fn replicas_without_keeper_cannot_create_replicated_tables() {
    let _serial = one_at_a_time();
    // r1 of cluster `pair`: a shard of two replicas (the second is never started); each state a
    // server of its own (fresh ports: a stopped server's may not be free yet)
    let start = |zk: Option<&ZooKeeper>| {
        let (http, tcp, interserver) = (free_port(), free_port(), free_port());
        let cluster = format!(
            "<remote_servers><pair><shard><internal_replication>true</internal_replication>\
             <replica><host>127.0.0.1</host><port>{tcp}</port></replica>\
             <replica><host>127.0.0.1</host><port>{}</port></replica></shard></pair></remote_servers>\
             <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>",
            free_port()
        );
        let xml = keeper_config_xml(zk, "", interserver, &cluster);
        LiveServer::start_on(CLICKHOUSE_25_8, http, tcp, |dir| prepare(dir, &xml))
    };
    let server = start(None);
    let create = "CREATE TABLE default.t (k UInt64) \
                  ENGINE = ReplicatedMergeTree('/clickhouse/tables/nokeeper/t', '{replica}') ORDER BY k";
    let refused = server.try_query(create).unwrap_err();
    assert!(
        refused.contains("Code: 225") && refused.contains("Can't create replicated table without ZooKeeper"),
        "{refused}"
    );
    let refused = server
        .try_query("CREATE TABLE default.x ON CLUSTER pair (k UInt64) ENGINE = MergeTree ORDER BY k")
        .unwrap_err();
    assert!(refused.contains("There is no Zookeeper configuration in server config"), "{refused}");
    let refused = server.try_query("SELECT name FROM system.zookeeper WHERE path = '/'").unwrap_err();
    assert!(refused.contains("UNKNOWN_TABLE"), "{refused}");
    let found = offline_findings(&server, "keeper-missing-for-replicas");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["location"]["file"], "config.d/replication.xml", "{}", found[0]);
    drop(server);

    // the fix, <zookeeper>, in a server started with it: the table is created; the one node it
    // lists is what keeper-single-node reports (its consequence is keeper_lost_and_back's)
    let server = start(Some(zookeeper()));
    server.query(create);
    server.query("INSERT INTO default.t VALUES (1)");
    assert!(offline_findings(&server, "keeper-missing-for-replicas").is_empty());
    assert_eq!(offline_findings(&server, "keeper-single-node").len(), 1);
}

/// Two replicas of one shard with one `replica` macro: the second cannot create a replicated
/// table the first has.
#[test]
fn two_replicas_with_one_name() {
    const RULE: &str = "cluster-shared-replica-name";
    let _serial = one_at_a_time();
    let (a, b) = start_pair_named(["same", "same"]);
    let table = "CREATE TABLE default.named (k UInt64) \
        ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/default/named', '{replica}') ORDER BY k";
    a.query(table);
    let refused = b.try_query(table).unwrap_err();
    assert!(refused.contains("REPLICA_ALREADY_EXISTS"), "{refused}");
    let report = audit_cluster(&a, &[]);
    let found = the_finding(&report, RULE, "same");
    assert_eq!(
        found["message"],
        format!(
            "{} and {} use one replica name, `same` (shard 1): a replicated table created on one cannot be created on the other (REPLICA_ALREADY_EXISTS)",
            a.node(),
            b.node()
        )
    );
    // the fix: a name of its own in r2's <macros>, read with the config (no restart), and the
    // table created there
    let config = b.dir.path().join("server/config.d/replication.xml");
    let xml = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, xml.replace("<replica>same</replica>", "<replica>other</replica>")).unwrap();
    b.query("SYSTEM RELOAD CONFIG");
    wait_until(30, "r2 reads its new name", || {
        b.query("SELECT substitution FROM system.macros WHERE macro = 'replica'").trim() == "other"
    });
    b.query(table);
    let report = audit_cluster(&a, &[]);
    assert!(findings_of(&report, RULE).is_empty(), "{}", summary(&report));
}
