//! The cluster audit against a real 3-node ClickHouse cluster on loopback: one
//! `remote_servers` cluster naming all three, one replica configured differently (a server
//! setting, a profile setting, an extra disk and policy, no query_log), one stopped during
//! the test. Read through clusterAllReplicas (`--cluster`) and over direct connections
//! (`--dsn` repeated).

mod support;

use std::path::Path;

use serde_json::Value;
use support::{CLICKHOUSE_26_9, LiveServer, chaudit, free_port};

/// users.xml of every node: the profile differs on the divergent one.
fn users(divergent: bool) -> String {
    let extra = if divergent { "<max_threads>1</max_threads>" } else { "" };
    format!(
        "<clickhouse><profiles><default>{extra}<query_plan_optimize_lazy_materialization>0</query_plan_optimize_lazy_materialization></default></profiles>\
         <users><default><password></password><networks><ip>::/0</ip></networks><profile>default</profile>\
         <quota>default</quota></default></users><quotas><default></default></quotas></clickhouse>"
    )
}

const DIVERGENT: &str = r#"<clickhouse>
  <max_table_size_to_drop>1000</max_table_size_to_drop>
  <storage_configuration>
    <disks><archive><type>local</type><path>archive/</path></archive></disks>
    <policies><archive><volumes><main><disk>archive</disk></main></volumes></archive></policies>
  </storage_configuration>
  <query_log remove="1"/>
</clickhouse>"#;

fn prepare(dir: &Path, remote_servers: &str, divergent: bool) {
    std::fs::create_dir_all(dir.join("config.d")).unwrap();
    std::fs::write(dir.join("users.xml"), users(divergent)).unwrap();
    let users_config =
        format!("<clickhouse><users_config>{}</users_config></clickhouse>", dir.join("users.xml").display());
    std::fs::write(dir.join("config.d/users.xml"), users_config).unwrap();
    std::fs::write(dir.join("config.d/cluster.xml"), remote_servers).unwrap();
    if divergent {
        std::fs::write(dir.join("config.d/divergent.xml"), DIVERGENT).unwrap();
    }
}

/// Three nodes of cluster `c3`, the second one divergent.
fn start_cluster() -> Vec<LiveServer> {
    let ports: Vec<(u16, u16)> = (0..3).map(|_| (free_port(), free_port())).collect();
    let replicas: String =
        ports.iter().map(|(_, tcp)| format!("<replica><host>127.0.0.1</host><port>{tcp}</port></replica>")).collect();
    let remote_servers =
        format!("<clickhouse><remote_servers><c3><shard>{replicas}</shard></c3></remote_servers></clickhouse>");
    let remote_servers = &remote_servers;
    std::thread::scope(|scope| {
        let handles: Vec<_> = ports
            .iter()
            .enumerate()
            .map(|(i, (http, tcp))| {
                scope.spawn(move || {
                    LiveServer::start_on(CLICKHOUSE_26_9, *http, *tcp, |dir| prepare(dir, remote_servers, i == 1))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("server start")).collect()
    })
}

fn message(report: &Value, rule: &str) -> String {
    support::findings_of(report, rule)
        .iter()
        .map(|f| f["message"].as_str().unwrap().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_cluster_with_a_divergent_and_a_dead_replica() {
    let nodes = start_cluster();
    let (a, b, c) = (&nodes[0], &nodes[1], &nodes[2]);
    for n in [a, c] {
        // a few failed queries: with the threshold lowered, the HTML report charts them per replica
        for _ in 0..5 {
            assert!(n.try_query("SELECT throwIf(number = 3, 'planted failure') FROM numbers(10)").is_err());
        }
        n.query("SYSTEM FLUSH LOGS"); // query_log exists once flushed
    }
    // b has logs of its own written (metric_log, part_log), and no query_log: a log turned
    // off, not one a server that has just started has yet to create
    b.query("SYSTEM FLUSH LOGS");

    // through clusterAllReplicas a remote replica's interactive_delay is the fan-out's own
    // making, another on each replica and in each query: the audit leaves it out
    let delays = "SELECT groupArray(value) FROM (SELECT value FROM clusterAllReplicas('c3', system.settings) \
                  WHERE name = 'interactive_delay' AND _shard_num > 1 ORDER BY _shard_num)";
    let (first, second) = (a.query(delays), a.query(delays));
    assert!(first != second && !first.contains("'100000'"), "{first} {second}");

    // the fact unions a replica answered with rows (one left out of a union is asked with a
    // filter false on it: it reads nothing)
    let unions_answered = |n: &LiveServer| {
        n.query("SYSTEM FLUSH LOGS");
        n.query(
            "SELECT count() FROM system.query_log WHERE type = 'QueryFinish' AND NOT is_initial_query \
             AND query LIKE '%formatRowNoNewline%' AND query LIKE '%system%settings%' AND read_rows > 0",
        )
    };
    let unions_before = unions_answered(c);

    // all up: one report, divergences named with values and hosts
    let report = support::cluster_audit(&["--dsn", &a.dsn(), "--cluster", "c3"]);
    // the replica without query_log refuses the first union and is read again alone: the
    // replica that answered it is not read twice
    let unions = unions_answered(c).trim().parse::<u64>().unwrap() - unions_before.trim().parse::<u64>().unwrap();
    assert_eq!(unions, 1, "fact unions answered by a replica that answered the first one");
    assert!(report["target"].as_str().unwrap().contains("clusterAllReplicas"), "{}", report["target"]);
    let setting = message(&report, "cluster-server-setting-divergence");
    assert!(setting.contains("max_table_size_to_drop differs"), "{setting}");
    assert!(
        setting.contains(&format!("{} = 1000", b.node())) && setting.contains(&format!("{} = 50000000000", a.node())),
        "{setting}"
    );
    assert!(message(&report, "cluster-profile-setting-divergence").contains(&format!(
        "default.max_threads differs: {} = (not set), {} = 1",
        a.node(),
        b.node()
    )));
    let storage = message(&report, "cluster-storage-divergence");
    assert!(
        storage.contains(&format!(
            "storage policy archive exists on {} but not on {}, {}",
            b.node(),
            a.node(),
            c.node()
        )),
        "{storage}"
    );
    assert!(message(&report, "cluster-query-log-divergence").contains(&format!("but not on {}", b.node())));
    assert!(support::findings_of(&report, "cluster-replica-unreachable").is_empty());
    assert!(support::findings_of(&report, "cluster-version-divergence").is_empty(), "all run 26.9");
    // the same finding on every replica is one finding listing them
    let cache = support::findings_of(&report, "live-lazy-materialization-off");
    assert_eq!(cache.len(), 1, "{cache:?}");
    assert_eq!(cache[0]["hosts"].as_array().unwrap().len(), 3, "{}", cache[0]);
    // the replica without query_log: its log rules are inconclusive for it, not passed
    let shapes = support::report_entry(&report, "outcomes", "repeat-queries-miss-the-cache").unwrap();
    let on_b = shapes["hosts"].as_array().unwrap().iter().find(|h| h["host"] == b.node().as_str()).unwrap();
    assert_eq!(on_b["outcome"], "inconclusive", "{shapes}");

    // the same cluster's HTML report in Chromium: every finding, the three replicas in the
    // matrix, the failed queries per hour of each replica that has them charted, no console
    // error, no request, a screenshot not blank
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--dsn",
        &a.dsn(),
        "--cluster",
        "c3",
        "--since",
        "1h",
        "--allow-inconclusive",
        "--fail-on",
        "never",
        "--param",
        "query-error-spike.max_errors_per_hour=1",
    ];
    let (html, json, code) = support::browser::reports(dir.path(), "cluster-live", &args);
    assert_eq!(code, 0);
    let page = support::browser::browse(&html, &support::browser::shot("cluster-live"));
    support::browser::check_page("cluster-live", &page, &json, code);
    for n in [a, b, c] {
        assert!(page.dom.contains(&format!("<th><code>{}</code></th>", n.node())), "{} in the matrix", n.node());
    }
    let errors = support::findings_of(&json, "query-error-spike");
    assert_eq!(errors.len(), 1, "one finding for the replicas it holds on: {errors:?}");
    let hosts: Vec<&str> = errors[0]["hosts"].as_array().unwrap().iter().map(|h| h["host"].as_str().unwrap()).collect();
    assert_eq!(hosts.len(), 2, "{hosts:?}");
    assert!(hosts.contains(&a.node().as_str()) && hosts.contains(&c.node().as_str()), "{hosts:?}");
    assert!(page.dom.contains("<figure class=\"chart\" data-series=\"errors_per_hour\">"), "the failures charted");

    // --cluster over direct connections (the path of a readonly user): without the replicas'
    // HTTP ports it is an error (it read the seed three times); with them every replica is read
    let dir = tempfile::tempdir().unwrap();
    let direct = ["--dsn", &a.dsn(), "--cluster", "c3", "--fan-out", "direct"];
    let (code, _, err) = chaudit(dir.path(), &direct);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--replica-port") && err.contains(&b.node()), "{err}");
    let seed_port = a.http_port.to_string();
    let (code, _, err) = chaudit(dir.path(), &[&direct[..], &["--replica-port", &seed_port]].concat());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("both resolve to"), "{err}");
    let each: Vec<String> =
        [a, b, c].iter().map(|n| format!("{}=http://127.0.0.1:{}", n.node(), n.http_port)).collect();
    let mut args = direct.to_vec();
    for e in &each {
        args.extend(["--replica-dsn", e]);
    }
    let (code, out, err) = chaudit(
        dir.path(),
        &[&args[..], &["--format", "json", "--fail-on", "never", "--since", "1h", "--allow-inconclusive"]].concat(),
    );
    assert_eq!(code, 0, "{err}");
    let ports: Vec<String> = [a, b, c].iter().map(|n| format!("http://127.0.0.1:{}", n.http_port)).collect();
    assert!(err.contains(&format!("user `default` sent to {}", ports.join(", "))), "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert!(report["target"].as_str().unwrap().contains("direct connections"), "{}", report["target"]);
    let setting = message(&report, "cluster-server-setting-divergence");
    assert!(
        setting.contains(&format!("{} = 1000", b.node())) && setting.contains(&format!("{} = 50000000000", a.node())),
        "{setting}"
    );
    let storage = message(&report, "cluster-storage-divergence");
    assert!(storage.contains(&format!("storage policy archive exists on {} but not on", b.node())), "{storage}");
    assert_eq!(support::findings_of(&report, "live-lazy-materialization-off")[0]["hosts"].as_array().unwrap().len(), 3);

    // one replica stopped: it is reported, its rules are inconclusive for it, the rest is audited
    c.stop();
    let failed = || a.query("SELECT sum(value) FROM system.events WHERE event = 'DistributedConnectionFailAtAll'");
    let failed_before = failed();
    let report = support::cluster_audit(&["--dsn", &a.dsn(), "--cluster", "c3"]);
    // the fan-out's own connections to the stopped replica count in the seed's failures...
    assert_ne!(failed(), failed_before, "clusterAllReplicas counts a connection that failed on every try");
    // ...and are not reported as the server's Distributed tables failing
    assert!(support::findings_of(&report, "distributed-send-errors").is_empty(), "{report}");
    assert!(
        message(&report, "cluster-replica-unreachable").contains(&format!("replica {} could not be read", c.node()))
    );
    assert!(message(&report, "cluster-server-setting-divergence").contains(&format!("{} = 1000", b.node())));
    let cache = support::findings_of(&report, "live-lazy-materialization-off");
    assert_eq!(cache[0]["hosts"].as_array().unwrap().len(), 2, "the live replicas still audited");
    let outcome = support::report_entry(&report, "outcomes", "live-lazy-materialization-off").unwrap();
    let on_c = outcome["hosts"].as_array().unwrap().iter().find(|h| h["host"] == c.node().as_str()).unwrap();
    assert_eq!(on_c["outcome"], "inconclusive", "{outcome}");

    // a cluster snapshot re-audits offline to the same findings. The earlier audits' own
    // connections to the stopped replica are taken out of the seed's failure count as query_log
    // lists them: the logs flushed (as the server does every few seconds), each run sees them
    a.query("SYSTEM FLUSH LOGS");
    let dir = tempfile::tempdir().unwrap();
    let snapshot = dir.path().join("cluster.json");
    let (code, _, err) = chaudit(
        dir.path(),
        &["collect", "--dsn", &a.dsn(), "--cluster", "c3", "--since", "1h", "-o", snapshot.to_str().unwrap()],
    );
    // written, and exit 3: the stopped replica could not be read
    assert_eq!(code, 3, "{err}");
    assert!(err.contains(&format!("not collected: {}", c.node())), "{err}");
    let recorded: Value = serde_json::from_str(&std::fs::read_to_string(&snapshot).unwrap()).unwrap();
    for replica in recorded["document"]["nodes"]["nodes"].as_array().unwrap().iter().take(2) {
        let settings = replica["live"]["settings"].as_object().unwrap();
        assert!(settings.contains_key("max_threads") && !settings.contains_key("interactive_delay"));
    }
    let offline = support::cluster_audit(&["check", "--snapshot", snapshot.to_str().unwrap()]);
    // audited again, the collect's own connections in the log too: no connection failure is
    // the server's, as in the snapshot
    a.query("SYSTEM FLUSH LOGS");
    let report = support::cluster_audit(&["--dsn", &a.dsn(), "--cluster", "c3"]);
    let rules = |r: &Value| {
        r["findings"].as_array().unwrap().iter().map(|f| f["message"].as_str().unwrap().to_string()).collect::<Vec<_>>()
    };
    assert_eq!(rules(&offline), rules(&report));

    // two replicas of the snapshot compared: the server setting and the profile's setting that
    // differ, nothing else; the unread replica cannot be compared; the snapshot alone names them
    let side = |n: &LiveServer| format!("{}#{}", snapshot.display(), n.node());
    let (code, drift, err) = chaudit(dir.path(), &["diff", &side(a), &side(b), "--format", "json"]);
    assert_eq!(code, 1, "{drift}{err}");
    let drift: Value = serde_json::from_str(&drift).unwrap();
    let differing: Vec<String> = drift["sections"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| {
            s["differences"].as_array().unwrap().iter().map(move |d| format!("{}: {}", s["section"], d["key"]))
        })
        .collect();
    // what the second replica's files change, and the data paths of two servers on one machine
    let expected = ["max_table_size_to_drop", "max_threads", "archive", "\"path\"", "logger.log", "default.path"];
    for changed in ["max_table_size_to_drop", "default/max_threads", "\"archive\"", "archive/main"] {
        assert!(differing.iter().any(|d| d.contains(changed)), "{changed}: {differing:?}");
    }
    assert!(differing.iter().all(|d| expected.iter().any(|e| d.contains(e))), "{differing:?}");
    let (code, same, err) = chaudit(dir.path(), &["diff", &side(a), &side(a)]);
    assert_eq!((code, same.as_str()), (0, ""), "{err}");
    let (code, _, err) = chaudit(dir.path(), &["diff", &side(a), &side(c)]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("was not read when collected"), "{err}");
    let (code, _, err) = chaudit(dir.path(), &["diff", snapshot.to_str().unwrap(), &side(a)]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&a.node()) && err.contains(&b.node()), "{err}");

    // the same over direct connections, one --dsn per node
    let report = support::cluster_audit(&["--dsn", &a.dsn(), "--dsn", &b.dsn(), "--dsn", &c.dsn()]);
    assert!(report["target"].as_str().unwrap().contains("direct connections"));
    assert!(message(&report, "cluster-replica-unreachable").contains(&format!("127.0.0.1:{}", c.http_port)));
    assert!(message(&report, "cluster-server-setting-divergence").contains("max_table_size_to_drop differs"));
    // over direct connections each replica applies its own profile: the session value differs too
    let settings = message(&report, "cluster-profile-setting-divergence");
    assert!(settings.contains("setting max_threads differs") && settings.contains("= 1"), "{settings}");

    // text shows the hosts of a merged finding, the version once when they all run it, and
    // the evidence once when it is equal on every replica
    let dir = tempfile::tempdir().unwrap();
    let (_, text, err) = chaudit(dir.path(), &["--dsn", &a.dsn(), "--cluster", "c3", "--fail-on", "never"]);
    let version = a.query("SELECT version()");
    let version = version.trim();
    assert!(text.contains(&format!("on 2 replica(s), all {version}: {}, {}", a.node(), b.node())), "{text}");
    assert!(text.contains("evidence on both replicas: "), "{text}");
    // the stopped replica is said once, in the text and on stderr, not once per rule
    let unread = format!("replica {} could not be read: ", c.node());
    for (what, output) in [("text", &text), ("stderr", &err)] {
        assert_eq!(
            output.lines().filter(|l| l.contains(&unread) && l.contains("rule(s) not judged")).count(),
            1,
            "{what}: {output}"
        );
        assert!(!output.contains("replica not read"), "{what}: {output}");
    }
}

/// Two healthy 25.8 replicas of cluster `c2`, each with a table whose projection serves the
/// workload's filter (the queries ran before the projection existed: full scans in query_log,
/// so the shape is a candidate whose plan the audit must read on each replica).
fn start_healthy_pair() -> Vec<LiveServer> {
    let ports: Vec<(u16, u16)> = (0..2).map(|_| (free_port(), free_port())).collect();
    let replicas: String =
        ports.iter().map(|(_, tcp)| format!("<replica><host>127.0.0.1</host><port>{tcp}</port></replica>")).collect();
    let remote_servers =
        format!("<clickhouse><remote_servers><c2><shard>{replicas}</shard></c2></remote_servers></clickhouse>");
    let remote_servers = &remote_servers;
    let nodes: Vec<LiveServer> = std::thread::scope(|scope| {
        let handles: Vec<_> = ports
            .iter()
            .map(|(http, tcp)| {
                scope.spawn(move || {
                    LiveServer::start_on(support::CLICKHOUSE_25_8, *http, *tcp, |dir| {
                        std::fs::create_dir_all(dir.join("config.d")).unwrap();
                        std::fs::write(dir.join("config.d/cluster.xml"), remote_servers).unwrap();
                    })
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("server start")).collect()
    });
    for n in &nodes {
        n.query("CREATE TABLE default.events (k UInt64, u UInt64, s String) ENGINE = MergeTree ORDER BY k");
        n.query("INSERT INTO default.events SELECT number, number % 1000, 'x' FROM numbers(200000)");
        for u in 1..=3 {
            n.query(&format!("SELECT count() FROM default.events WHERE u = {u}"));
        }
        n.query("ALTER TABLE default.events ADD PROJECTION by_u (SELECT * ORDER BY u)");
        n.query("ALTER TABLE default.events MATERIALIZE PROJECTION by_u SETTINGS mutations_sync = 2");
        n.query("SYSTEM FLUSH LOGS");
    }
    nodes
}

#[test]
fn the_default_cluster_audit_of_a_healthy_cluster_judges_every_rule() {
    let nodes = start_healthy_pair();
    let (a, b) = (&nodes[0], &nodes[1]);
    let dir = tempfile::tempdir().unwrap();
    let audit = ["--dsn", &a.dsn(), "--cluster", "c2"];

    // the default path (clusterAllReplicas, no --allow-inconclusive): every rule judged on
    // every replica; 1 only for a finding at or above `high` (e.g. this machine's free disk)
    let (code, out, err) = chaudit(dir.path(), &audit);
    assert!(code == 0 || code == 1, "{code}\n{out}\n{err}");
    assert!(!err.contains("inconclusive") && !out.contains("inconclusive"), "{out}\n{err}");
    // the cluster's `default` user may write: said once for the whole cluster
    assert_eq!(err.matches("the auditing user `default` may write (readonly = 0): ").count(), 1, "{err}");
    if code == 1 {
        assert!(out.contains("at or above high"), "{out}");
    }
    let (code, out, err) = chaudit(dir.path(), &[&audit[..], &["--format", "json", "--fail-on", "never"]].concat());
    assert_eq!(code, 0, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert!(report["target"].as_str().unwrap().contains("clusterAllReplicas"), "{}", report["target"]);
    let inconclusive: Vec<&Value> =
        report["outcomes"].as_array().unwrap().iter().filter(|o| o["outcome"] == "inconclusive").collect();
    assert!(inconclusive.is_empty(), "{inconclusive:#?}");
    // the plan rules were judged from each replica's own plan
    for rule in ["projection-not-used-full-scan", "top-n-over-lazy-materialization-limit"] {
        let outcome = support::report_entry(&report, "outcomes", rule).unwrap();
        let hosts = outcome["hosts"].as_array().unwrap();
        assert_eq!(hosts.len(), 2, "{outcome}");
        assert!(hosts.iter().all(|h| h["outcome"] == "passed"), "{outcome}");
    }
    let snapshot = dir.path().join("c2.json");
    let (code, _, err) =
        chaudit(dir.path(), &["collect", "--dsn", &a.dsn(), "--cluster", "c2", "-o", snapshot.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let recorded: Value = serde_json::from_str(&std::fs::read_to_string(&snapshot).unwrap()).unwrap();
    for replica in recorded["document"]["nodes"]["nodes"].as_array().unwrap() {
        let plans = &replica["log"]["plans"];
        let plan = plans
            .as_array()
            .and_then(|p| p.iter().find(|p| p["check"] == "projections"))
            .unwrap_or_else(|| panic!("{replica:#}"));
        assert_eq!(plan["about"]["projection"], "by_u", "{plan}");
        assert!(plan["plan"].as_array().unwrap().iter().any(|l| l.as_str().unwrap().contains("(by_u)")), "{plan}");
        assert!(replica["log"]["unavailable"].get("plans").is_none(), "{replica:#}");
    }

    // a replica that stops is never passed: its rules are inconclusive for it, the run exits 3
    b.stop();
    let (code, out, err) = chaudit(dir.path(), &[&audit[..], &["--format", "json", "--fail-on", "never"]].concat());
    assert_eq!(code, 3, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    for rule in ["projection-not-used-full-scan", "live-lazy-materialization-off", "disk-space-low"] {
        let outcome = support::report_entry(&report, "outcomes", rule).unwrap();
        let on = |node: &LiveServer| {
            outcome["hosts"].as_array().unwrap().iter().find(|h| h["host"] == node.node().as_str()).unwrap()["outcome"]
                .clone()
        };
        assert_eq!(on(b), "inconclusive", "{outcome}");
        assert_ne!(on(a), "inconclusive", "{outcome}");
    }
    assert!(message(&report, "cluster-replica-unreachable").contains(&b.node()), "{report}");
}
