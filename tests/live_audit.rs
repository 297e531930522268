//! The live audit against a real ClickHouse 26.9 server on loopback: read-only (a
//! readonly=1 user works), tagged queries, one query per fact, rules proven by real
//! workloads, and the faults users meet.

mod support;

use std::path::Path;
use std::sync::OnceLock;

use serde_json::Value;

/// The test servers' users: `default` and `auditor` (readonly=1, this password).
fn users() -> String {
    support::users_xml("s3cr3t-pw", "")
}

fn start(max_concurrent_queries: u32) -> support::LiveServer {
    start_with_users(&users(), max_concurrent_queries)
}

fn start_with_users(users: &str, max_concurrent_queries: u32) -> support::LiveServer {
    support::LiveServer::start(|dir| {
        std::fs::write(dir.join("users.xml"), users).unwrap();
        std::fs::create_dir_all(dir.join("config.d")).unwrap();
        std::fs::write(
            dir.join("config.d/audit.xml"),
            format!(
                "<clickhouse>\n    <users_config>{}</users_config>\n    <max_concurrent_queries>{max_concurrent_queries}</max_concurrent_queries>\n</clickhouse>\n",
                dir.join("users.xml").display()
            ),
        )
        .unwrap();
    })
}

/// One clean server shared by the tests of this binary.
fn server() -> &'static support::LiveServer {
    static SERVER: OnceLock<support::LiveServer> = OnceLock::new();
    SERVER.get_or_init(|| start(100))
}

fn dsn(server: &support::LiveServer, user: &str) -> String {
    format!("http://{user}@127.0.0.1:{}", server.http_port)
}

fn json_audit(dir: &Path, args: &[&str]) -> (i32, Value, String) {
    let mut all = args.to_vec();
    // the servers' data lives on this machine's disk, whose fullness is not what these
    // tests check (tests/health_live.rs checks that rule against the disk's own figures)
    all.extend_from_slice(&["--format", "json", "--ignore", "disk-space-low"]);
    let (code, stdout, stderr) = support::chaudit(dir, &all);
    let json =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("exit {code}, not JSON ({e}): {stdout}\n{stderr}"));
    (code, json, stderr)
}

fn outcome<'a>(report: &'a Value, rule: &str) -> &'a str {
    support::report_entry(report, "outcomes", rule).and_then(|o| o["outcome"].as_str()).unwrap_or("missing")
}

#[test]
fn a_readonly_user_audits_without_any_setting_refused() {
    let server = server();
    let readonly_errors =
        || server.query("SELECT sum(value) FROM system.errors WHERE name = 'READONLY'").trim().to_string();
    let before = readonly_errors();
    // query_log and metric_log exist (a fresh server creates them at its first flush)
    server.query("SYSTEM FLUSH LOGS");
    let dir = tempfile::tempdir().unwrap();
    let dsn = format!("http://auditor:s3cr3t-pw@127.0.0.1:{}", server.http_port);
    let (code, report, stderr) = json_audit(dir.path(), &["--dsn", &dsn, "--stats"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(outcome(&report, "too-many-simultaneous-queries"), "passed");
    assert_eq!(outcome(&report, "unbatched-end-of-query-packets"), "not-applicable");
    assert_eq!(readonly_errors(), before, "a setting was sent to the readonly user");
    assert!(!format!("{report}{stderr}").contains("s3cr3t-pw"), "the password leaked");
    // the connect probe, then every fact and log query in one union
    assert!(stderr.contains("2 round trips"), "{stderr}");
    assert!(!stderr.contains("may write"), "a readonly=1 auditor is not warned about: {stderr}");
    // every query is tagged, and the audit's footprint is findable in query_log
    server.query("SYSTEM FLUSH LOGS");
    let tagged = server
        .query("SELECT uniqExact(query_id) FROM system.query_log WHERE user = 'auditor' AND query_id LIKE 'chaudit-%'");
    assert_eq!(tagged.trim(), "2");
    let untagged =
        server.query("SELECT count() FROM system.query_log WHERE user = 'auditor' AND query_id NOT LIKE 'chaudit-%'");
    assert_eq!(untagged.trim(), "0");
}

#[test]
fn round_trips_do_not_grow_with_the_rule_count() {
    let server = server();
    let dir = tempfile::tempdir().unwrap();
    // a second copy of every rule under other ids doubles the pack
    let extra = dir.path().join("extra-rules");
    std::fs::create_dir_all(&extra).unwrap();
    let not_a_fixture = |d: &Path| !d.join("config.xml").exists() && !d.join("snapshot.json").exists();
    let rule_files = support::files_under(&support::repo_root().join("rules"), &not_a_fixture);
    for entry in rule_files.iter().filter(|p| p.extension().is_some_and(|e| e == "yaml")) {
        let text = std::fs::read_to_string(entry).unwrap();
        let copy = text.replacen("id: ", "id: copy-", 1).replace("tests:", "old_tests_removed:");
        let copy = copy.split("old_tests_removed:").next().unwrap().to_string();
        std::fs::write(extra.join(entry.file_name().unwrap()), copy).unwrap();
    }
    let (_, _, one) = support::chaudit(dir.path(), &["--dsn", &dsn(server, "default"), "--stats"]);
    let (_, _, two) =
        support::chaudit(dir.path(), &["--dsn", &dsn(server, "default"), "--stats", "--rules", "extra-rules"]);
    let trips = |s: &str| s.split(" round trips").next().and_then(|p| p.rsplit(' ').next()).map(str::to_string);
    assert_eq!(trips(&one), trips(&two), "{one} / {two}");
    // the default user may set wait_end_of_query, so the server's own read count comes back
    assert!(one.contains(" rows read") && !one.contains("unknown"), "{one}");
    // the rules that run: all but the opt-in ones
    let builtin =
        chaudit::rules::RulePack::load(true, &[]).map(|p| p.rules.iter().filter(|r| !r.opt_in).count()).unwrap_or(0);
    assert!(two.contains(&format!("({} rules)", 2 * builtin)), "{two}");
}

#[test]
fn refused_queries_make_the_concurrency_rule_fire() {
    // its own server: two slots, twelve concurrent two-second queries
    let server = start(2);
    let handles: Vec<_> = (0..12)
        .map(|_| {
            let port = server.http_port;
            std::thread::spawn(move || {
                let _ = std::process::Command::new("curl")
                    .args(["-s", "-o", "/dev/null", "--data-binary", "SELECT sleep(2)"])
                    .arg(format!("http://127.0.0.1:{port}/"))
                    .status();
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    server.query("SYSTEM FLUSH LOGS"); // query_log exists: the log rules can judge
    let dir = tempfile::tempdir().unwrap();
    let (code, report, stderr) = json_audit(dir.path(), &["--dsn", &dsn(&server, "default")]);
    assert_eq!(code, 1, "{stderr}");
    let writable = "chaudit: warning: the auditing user `default` may write (readonly = 0): ";
    assert_eq!(stderr.matches(writable).count(), 1, "{stderr}");
    let finding = support::report_entry(&report, "findings", "too-many-simultaneous-queries").unwrap();
    assert!(finding["message"].as_str().unwrap().contains("max_concurrent_queries = 2"), "{finding}");
    assert!(finding["evidence"]["refused"].as_u64().unwrap() >= 5);
}

#[test]
fn files_that_differ_from_the_running_server_are_a_finding() {
    let server = server();
    // edited after the server started: it never read this value
    let fragment = server.dir.path().join("server/config.d/zz-after-start.xml");
    std::fs::write(
        &fragment,
        "<clickhouse>\n    <max_table_size_to_drop>1000</max_table_size_to_drop>\n</clickhouse>\n",
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = server.config_path();
    let (code, report, stderr) = json_audit(
        dir.path(),
        &["--config", config.to_str().unwrap(), "--dsn", &dsn(server, "default"), "--select", "setting-not-applied"],
    );
    std::fs::remove_file(&fragment).unwrap();
    assert_eq!(code, 0, "{stderr}");
    let findings = report["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{findings:?}");
    assert_eq!(findings[0]["location"]["file"], "config.d/zz-after-start.xml");
    assert_eq!(findings[0]["location"]["line"], 2);
    assert_eq!(findings[0]["evidence"]["server_value"], "50000000000");
}

#[test]
fn a_snapshot_rechecked_offline_gives_the_live_findings() {
    let server = server();
    let dir = tempfile::tempdir().unwrap();
    // --since 0: other tests share this server, and its query_log changes between two audits
    // without -o the snapshot goes to stdout
    let collect = ["collect", "--dsn", &dsn(server, "default"), "--since", "0"];
    let findings = |r: &Value| -> Vec<(Value, Value)> {
        r["findings"].as_array().unwrap().iter().map(|f| (f["rule_id"].clone(), f["message"].clone())).collect()
    };
    // the server creates a system log table when it first flushes one: a table that appears
    // between the collection and the live audit is the server changing, not the two
    // disagreeing; a difference that stays after three tries is theirs
    let mut last = String::new();
    for _ in 0..3 {
        server.query("SYSTEM FLUSH LOGS");
        let (code, snapshot, stderr) = support::chaudit(dir.path(), &collect);
        assert_eq!(code, 0, "{stderr}");
        std::fs::write(dir.path().join("snap.json"), snapshot).unwrap();
        let (_, live, _) = json_audit(dir.path(), &["--dsn", &dsn(server, "default"), "--since", "0"]);
        let (_, offline, _) = json_audit(dir.path(), &["check", "--snapshot", "snap.json"]);
        let differ: Vec<_> = live["outcomes"]
            .as_array()
            .unwrap()
            .iter()
            .zip(offline["outcomes"].as_array().unwrap())
            .filter(|(a, b)| a != b)
            .collect();
        if differ.is_empty() && findings(&live) == findings(&offline) {
            return;
        }
        last = format!("{differ:?}\n{:?}\n{:?}", findings(&live), findings(&offline));
    }
    panic!("the snapshot's audit differs from the live one: {last}");
}

#[test]
fn dry_run_prints_every_query_and_sends_nothing() {
    let port = support::free_port(); // nothing listens there
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, _) = support::chaudit(dir.path(), &["--dsn", &format!("http://127.0.0.1:{port}"), "--dry-run"]);
    assert_eq!(code, 0);
    // the connect probe, the union (each query alone is shown commented out), the distributed
    // DDL queue and the Keeper connections (sent only to a server with a Keeper session), the
    // audits' own connection failures (sent only when the server counted some) and the login with
    // an empty password (sent only for users with a plaintext password open to any host)
    assert_eq!(stdout.matches("\nSELECT").count() + usize::from(stdout.starts_with("SELECT")), 6, "{stdout}");
    assert!(stdout.contains("-- errors:"));
}

#[test]
fn connection_faults_are_clear_errors_with_exit_3() {
    let server = server();
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) =
        support::chaudit(dir.path(), &["--dsn", &format!("http://auditor:wrong-pw@127.0.0.1:{}", server.http_port)]);
    assert_eq!(code, 3);
    assert!(stdout.is_empty());
    assert!(stderr.contains("refused the login") && !stderr.contains("wrong-pw"), "{stderr}");

    let (code, _, stderr) =
        support::chaudit(dir.path(), &["--dsn", &format!("http://127.0.0.1:{}", support::free_port())]);
    assert_eq!(code, 3);
    assert!(stderr.contains("cannot reach"), "{stderr}");

    // clickhouse-client's connection string: a native port with no known HTTP counterpart
    let (code, _, stderr) = support::chaudit(dir.path(), &["--dsn", "clickhouse://127.0.0.1:9001"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("native protocol") && stderr.contains("http://HOST:HTTP_PORT"), "{stderr}");
}

/// clickhouse-client's habits: `-h`, `-u`, `--password` asked on the terminal without echo,
/// CLICKHOUSE_* completing what the command line leaves out, the command line winning.
#[test]
fn clickhouse_client_conventions_reach_the_server() {
    let server = server();
    let dir = tempfile::tempdir().unwrap();
    let port = server.http_port.to_string();
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_chaudit"));
        command.args(args).current_dir(dir.path()).env("NO_COLOR", "1");
        for (k, v) in env {
            command.env(k, v);
        }
        let out = command.output().unwrap();
        (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let audited = |code: i32| code == 0 || code == 1;
    let base = ["-h", "127.0.0.1", "--port", &port, "--format", "json", "--fail-on", "never", "--since", "0"];
    // -u and the environment's password
    let (code, stderr) = run(&[&base[..], &["-u", "auditor"]].concat(), &[("CLICKHOUSE_PASSWORD", "s3cr3t-pw")]);
    assert!(audited(code), "exit {code}: {stderr}");
    // the environment's user and password complete --host
    let env = [("CLICKHOUSE_USER", "auditor"), ("CLICKHOUSE_PASSWORD", "s3cr3t-pw")];
    let (code, stderr) = run(&base, &env);
    assert!(audited(code), "exit {code}: {stderr}");
    // --password on the command line wins over CLICKHOUSE_PASSWORD
    let (code, stderr) = run(&[&base[..], &["--password", "wrong-pw"]].concat(), &env);
    assert!(code == 3 && stderr.contains("refused the login") && !stderr.contains("wrong-pw"), "{stderr}");
    // CLICKHOUSE_HOST and CLICKHOUSE_PORT complete --port and --host
    let (code, stderr) = run(
        &["--port", &port, "-u", "auditor", "--since", "0", "--format", "json", "--fail-on", "never"],
        &[("CLICKHOUSE_HOST", "127.0.0.1"), ("CLICKHOUSE_PASSWORD", "s3cr3t-pw")],
    );
    assert!(audited(code), "exit {code}: {stderr}");
    // --password without a value: asked on the terminal (a pseudo-terminal from script(1)),
    // not echoed
    let command = format!(
        "{} -h 127.0.0.1 --port {port} -u auditor --password --since 0 --fail-on never --format json -o report.json",
        env!("CARGO_BIN_EXE_chaudit")
    );
    let mut script = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("script(1) from util-linux");
    // the prompt must be up before the answer is typed (a loaded machine takes a while)
    std::thread::sleep(std::time::Duration::from_millis(3000));
    std::io::Write::write_all(script.stdin.as_mut().unwrap(), b"s3cr3t-pw\n").unwrap();
    let out = script.wait_with_output().unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains("Password:") && !shown.contains("s3cr3t-pw"), "{shown}");
    assert!(audited(out.status.code().unwrap_or(-1)), "{shown}");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap()).unwrap();
    assert!(report["target"].as_str().is_some_and(|t| t.starts_with("auditor@")), "{}", report["target"]);
}

#[test]
fn host_facts_read_this_machine() {
    let dir = tempfile::tempdir().unwrap();
    let (_, report, _) = json_audit(dir.path(), &["--host-facts", "--fail-on", "never"]);
    let proc_value = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_slow_start_after_idle").unwrap();
    let expected = if proc_value.trim() == "1" { "fired" } else { "passed" };
    assert_eq!(outcome(&report, "tcp-slow-start-after-idle"), expected);
    assert_eq!(outcome(&report, "too-many-simultaneous-queries"), "not-applicable");
    // the kernel facts ClickHouse's start-up warnings check, as this machine has them
    let proc = |path: &str| std::fs::read_to_string(path).unwrap().trim().to_string();
    let fired_if = |cond: bool| if cond { "fired" } else { "passed" };
    assert_eq!(outcome(&report, "delay-accounting-disabled"), fired_if(proc("/proc/sys/kernel/task_delayacct") == "0"));
    let pid_max: u64 = proc("/proc/sys/kernel/pid_max").parse().unwrap();
    assert_eq!(outcome(&report, "pid-max-low"), fired_if(pid_max < 30000));
    let thp = proc("/sys/kernel/mm/transparent_hugepage/enabled");
    assert_eq!(outcome(&report, "transparent-hugepages-always"), fired_if(thp.starts_with("[always]")));
    let swap = proc("/proc/meminfo").lines().any(|l| l.starts_with("SwapTotal:") && !l.contains(" 0 kB"));
    assert_eq!(outcome(&report, "swap-enabled"), fired_if(swap));
}

#[test]
fn log_evidence_aggregates_the_workload_and_leaves_out_the_audit() {
    let server = server();
    for _ in 0..3 {
        server.query("SELECT count() FROM numbers(100000) WHERE number % 13 = 1");
    }
    server.query("SYSTEM FLUSH LOGS");
    let dir = tempfile::tempdir().unwrap();
    support::chaudit(dir.path(), &["--dsn", &dsn(server, "default"), "--since", "1h"]); // its own queries must not count
    server.query("SYSTEM FLUSH LOGS");
    let (code, _, stderr) = support::chaudit(
        dir.path(),
        &["collect", "--dsn", &dsn(server, "default"), "--since", "1h", "-o", "snap.json"],
    );
    assert_eq!(code, 0, "{stderr}");
    let snapshot: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("snap.json")).unwrap()).unwrap();
    let shapes = snapshot["document"]["log"]["shapes"].as_array().unwrap();
    let workload =
        shapes.iter().find(|s| s["example"].as_str().unwrap().contains("number % 13 = 1")).expect("the workload shape");
    assert_eq!(workload["runs"], 3.0, "a count is a number in the snapshot");
    assert!(
        shapes.iter().all(|s| !s["example"].as_str().unwrap().contains("getSetting('readonly')")),
        "the audit counted itself"
    );
    assert_eq!(snapshot["sources"], serde_json::json!(["live", "log"]));
    // metric_log: the node's Context lock rate over the window
    let rate = &snapshot["document"]["log"]["lock_rate"][0];
    let peak: f64 = rate["peak_locks_per_second"].to_string().trim_matches('"').parse().unwrap();
    assert!(peak > 0.0, "{rate}");
}

#[test]
fn without_query_log_the_log_rules_are_inconclusive_not_passed() {
    let server = support::LiveServer::start(|dir| {
        std::fs::create_dir_all(dir.join("config.d")).unwrap();
        std::fs::write(
            dir.join("config.d/no-query-log.xml"),
            "<clickhouse>\n    <query_log remove=\"1\"/>\n</clickhouse>\n",
        )
        .unwrap();
    });
    server.query("SYSTEM FLUSH LOGS");
    let dir = tempfile::tempdir().unwrap();
    let (code, report, stderr) = json_audit(dir.path(), &["--dsn", &dsn(&server, "default")]);
    assert_eq!(code, 3, "log rules that could not read query_log fail the run: {stderr}");
    assert!(stderr.contains("context-lock-heavy-shapes: inconclusive"), "{stderr}");
    for rule in ["context-lock-heavy-shapes", "repeat-queries-miss-the-cache", "top-n-over-lazy-materialization-limit"]
    {
        assert_eq!(outcome(&report, rule), "inconclusive", "{rule}");
    }
    let reason = support::report_entry(&report, "outcomes", "context-lock-heavy-shapes").unwrap()["reason"].clone();
    assert!(reason.as_str().unwrap().contains("query_log"), "{reason}");
}

#[test]
fn a_server_that_never_answers_times_out_with_exit_3() {
    // accepts connections, never replies
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let (code, stdout, stderr) =
        support::chaudit(dir.path(), &["--dsn", &format!("http://127.0.0.1:{port}"), "--timeout", "1"]);
    assert_eq!(code, 3, "{stderr}");
    assert!(stdout.is_empty());
    assert!(stderr.contains("no answer within 1 s"), "{stderr}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert!(!stderr.contains("waiting for"), "{stderr}");
    // a longer wait says what it waits for, once, after 5 s (not on a terminal: no count);
    // --quiet says nothing but the error
    let url = format!("http://127.0.0.1:{port}");
    let waits = [false, true].map(|quiet| {
        let url = url.clone();
        std::thread::spawn(move || {
            let dir = tempfile::tempdir().unwrap();
            let quiet: &[&str] = if quiet { &["--quiet"] } else { &[] };
            support::chaudit(dir.path(), &[quiet, &["--dsn", &url, "--timeout", "7"]].concat())
        })
    });
    let [(code, _, stderr), (quiet_code, _, quiet_stderr)] = waits.map(|w| w.join().unwrap());
    assert_eq!((code, quiet_code), (3, 3), "{stderr}\n{quiet_stderr}");
    let waiting = format!("chaudit: waiting for {url}: no answer after 5 s (timeout 7 s)\n");
    assert_eq!(stderr.matches(&waiting).count(), 1, "{stderr}");
    assert!(stderr.ends_with("no answer within 7 s\n"), "{stderr}");
    assert!(!quiet_stderr.contains("waiting for") && quiet_stderr.contains("no answer within 7 s"), "{quiet_stderr}");
}

#[test]
fn a_fact_the_user_may_not_read_makes_its_rules_inconclusive() {
    // `restricted` may read system.one and system.settings but not system.errors
    let users = users().replace(
        "    </users>",
        "        <restricted>\n            <password>pw</password>\n            <networks><ip>127.0.0.1</ip></networks>\n            <profile>readonly</profile>\n            <grants>\n                <query>GRANT SELECT ON system.settings</query>\n                <query>GRANT SELECT ON system.server_settings</query>\n            </grants>\n        </restricted>\n    </users>",
    );
    let server = start_with_users(&users, 100);
    let dir = tempfile::tempdir().unwrap();
    let dsn = format!("http://restricted:pw@127.0.0.1:{}", server.http_port);
    let (code, report, stderr) = json_audit(dir.path(), &["--dsn", &dsn]);
    // a rule that could not read its evidence fails the run, naming the rule and why
    assert_eq!(code, 3, "{stderr}");
    assert_eq!(report["summary"]["status"], "incomplete");
    assert!(stderr.contains("too-many-simultaneous-queries: inconclusive: fact `live.errors`"), "{stderr}");
    let (code, _, stderr) = json_audit(dir.path(), &["--dsn", &dsn, "--allow-inconclusive"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(outcome(&report, "too-many-simultaneous-queries"), "inconclusive");
    let reason = support::report_entry(&report, "outcomes", "too-many-simultaneous-queries").unwrap()["reason"].clone();
    assert!(reason.as_str().unwrap().contains("errors"), "{reason}");
    // what it may read still counts
    assert_ne!(outcome(&report, "setting-not-applied"), "inconclusive");
    // a derived fact is as unread as its inputs: the setting scopes need the profiles it may not read
    assert_eq!(outcome(&report, "live-query-condition-cache-off"), "inconclusive");
    let reason =
        support::report_entry(&report, "outcomes", "live-query-condition-cache-off").unwrap()["reason"].clone();
    assert!(reason.as_str().unwrap().contains("derived from live."), "{reason}");
}

#[test]
fn a_server_stopping_mid_audit_gives_a_partial_report_never_a_pass() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let server = Arc::new(start(100));
    // a proxy that stops the server as the audit sends its second query (the union of
    // every fact): the version probe passes, the facts do not
    let requests = Arc::new(AtomicUsize::new(0));
    let port = {
        let (server, requests) = (Arc::clone(&server), Arc::clone(&requests));
        support::proxy(server.http_port, move |request| {
            requests.store(request, Ordering::SeqCst);
            if request == 2 {
                server.stop();
            }
            true
        })
    };
    let dir = tempfile::tempdir().unwrap();
    let (code, report, stderr) =
        json_audit(dir.path(), &["--dsn", &format!("http://127.0.0.1:{port}"), "--timeout", "5", "--since", "1h"]);
    assert!(requests.load(Ordering::SeqCst) >= 2, "the proxy saw too few queries");
    assert_eq!(code, 3, "an audit that could not read its facts must not pass: {stderr}");
    assert_eq!(report["summary"]["status"], "incomplete");
    // the server stopped as the union of every fact arrived: every rule that needs a fact
    // is inconclusive, never passed, and the report still comes out
    assert_eq!(outcome(&report, "live-query-condition-cache-off"), "inconclusive");
    assert_eq!(outcome(&report, "repeat-queries-miss-the-cache"), "inconclusive");
    assert_eq!(outcome(&report, "context-lock-heavy-shapes"), "inconclusive");
    assert!(stderr.contains("inconclusive"), "{stderr}");
}
