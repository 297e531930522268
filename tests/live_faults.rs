//! Faults a live audit meets, against a real ClickHouse 26.9 server on loopback: a server
//! that stops answering after the first query (bounded by the deadline), a user denied a
//! log table (told so, not "does not exist"), the password in no output of any format or
//! error path, answers a user's `max_result_rows` with `result_overflow_mode = 'break'` would
//! cut short, and a system table a row policy filters for the auditing user.

mod support;

use std::net::TcpListener;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

const PASSWORD: &str = "pw-7Kq2-never-shown";

/// `auditor` (readonly=1, the password above) may read every system table but query_log.
/// Three more users may read them all, with the same password: `bi` (readonly=1) and `bi2`
/// (readonly=2) under a BI guard, at most 50 rows an answer with overflow mode `break`
/// (the rest silently dropped), and `filtered`, for whom a row policy hides every row of
/// system.warnings.
fn users() -> String {
    let user = |name: &str, profile: &str, extra: &str| {
        format!(
            "<{name}><password>{PASSWORD}</password><networks><ip>127.0.0.1</ip></networks>\
             <profile>{profile}</profile><grants><query>GRANT SELECT ON system.*</query><query>GRANT SHOW DATABASES, SHOW TABLES ON *.*</query></grants>{extra}</{name}>"
        )
    };
    let guard = "<max_result_rows>50</max_result_rows><result_overflow_mode>break</result_overflow_mode>";
    let profiles = format!("<bi><readonly>1</readonly>{guard}</bi><bi2><readonly>2</readonly>{guard}</bi2>");
    let policy = "<databases><system><warnings><filter>0</filter></warnings></system></databases>";
    let more = [user("bi", "bi", ""), user("bi2", "bi2", ""), user("filtered", "readonly", policy)].concat();
    support::users_xml(
        PASSWORD,
        "\n            <grants>\n                <query>GRANT SELECT ON system.*</query>\n                \
         <query>GRANT SHOW DATABASES, SHOW TABLES ON *.*</query>\n                \
         <query>REVOKE SELECT ON system.query_log</query>\n            </grants>",
    )
    .replacen("    </profiles>", &format!("    {profiles}\n    </profiles>"), 1)
    .replacen("    </users>", &format!("    {more}\n    </users>"), 1)
}

fn server() -> &'static support::LiveServer {
    static SERVER: OnceLock<support::LiveServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        let users = users();
        let server = support::LiveServer::start(|dir| {
            std::fs::write(dir.join("users.xml"), &users).unwrap();
            std::fs::create_dir_all(dir.join("config.d")).unwrap();
            let users_config =
                format!("<clickhouse><users_config>{}</users_config></clickhouse>", dir.join("users.xml").display());
            std::fs::write(dir.join("config.d/users.xml"), users_config).unwrap();
        });
        server.query("SYSTEM FLUSH LOGS");
        server
    })
}

/// A proxy to `upstream` that passes the first request and then holds every later one
/// unanswered: a server that stops answering after the connect probe.
fn stalling_proxy(upstream: u16) -> u16 {
    support::proxy(upstream, |request| request == 1)
}

fn reasons(document: &Value) -> Vec<String> {
    document["unavailable"].as_object().map_or_else(Vec::new, |m| {
        m.iter().map(|(name, why)| format!("{name}: {}", why.as_str().unwrap_or_default())).collect()
    })
}

#[test]
fn a_server_that_stops_answering_costs_at_most_the_deadline() {
    let port = stalling_proxy(server().http_port);
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    // 17 facts and the log queries, each would wait its 2 s: the deadline stops at 4 s
    let dsn = format!("http://127.0.0.1:{port}");
    let (code, _, stderr) = support::chaudit(
        dir.path(),
        &["collect", "--dsn", &dsn, "--timeout", "2", "--deadline", "4", "-o", "snapshot.json"],
    );
    let took = started.elapsed();
    assert!(took < Duration::from_secs(8), "took {took:?}: {stderr}");
    assert_eq!(code, 3, "collect of facts it could not read must fail: {stderr}");
    assert!(stderr.contains("incomplete"), "{stderr}");
    let snapshot: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("snapshot.json")).unwrap()).unwrap();
    let unread = reasons(&snapshot["document"]["live"]);
    assert!(unread.iter().any(|r| r.starts_with("settings: timeout:")), "{unread:?}");
    assert!(unread.iter().any(|r| r.contains("--deadline")), "{unread:?}");
}

#[test]
fn a_user_denied_query_log_is_told_permission_denied() {
    let server = server();
    let dir = tempfile::tempdir().unwrap();
    let dsn = format!("http://auditor:{PASSWORD}@127.0.0.1:{}", server.http_port);
    let (code, _, stderr) = support::chaudit(dir.path(), &["collect", "--dsn", &dsn, "-o", "snapshot.json"]);
    assert_eq!(code, 3, "{stderr}");
    let snapshot: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("snapshot.json")).unwrap()).unwrap();
    let unread = reasons(&snapshot["document"]["log"]);
    let shapes = unread.iter().find(|r| r.starts_with("shapes:")).unwrap_or_else(|| panic!("{unread:?}"));
    assert!(shapes.contains("permission denied") && !shapes.contains("does not exist"), "{shapes}");
    // every other fact was read
    assert_eq!(reasons(&snapshot["document"]["live"]), Vec::<String>::new());
    // the audit's inconclusive rule gives the same reason
    let (_, report, _) = support::chaudit(dir.path(), &["--dsn", &dsn, "--format", "json"]);
    let report: Value = serde_json::from_str(&report).unwrap();
    let outcome = support::report_entry(&report, "outcomes", "repeat-queries-miss-the-cache").unwrap();
    assert_eq!(outcome["outcome"], "inconclusive", "{outcome}");
    assert!(outcome["reason"].as_str().unwrap().contains("permission denied"), "{outcome}");
}

/// Every output of chaudit given the password each way it can be given: no format, no
/// error, no snapshot shows it.
#[test]
fn the_password_is_in_no_output_of_any_format_or_error() {
    let server = server();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("pw"), format!("{PASSWORD}\n")).unwrap();
    let port = server.http_port;
    let good = format!("http://auditor:{PASSWORD}@127.0.0.1:{port}");
    let mut runs: Vec<Vec<String>> = Vec::new();
    let strings = |args: &[&str]| args.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    for format in ["text", "json", "markdown", "sarif", "junit"] {
        runs.push(strings(&["--dsn", &good, "--format", format, "--stats"]));
    }
    runs.push(strings(&["--dsn", &good, "--dry-run"]));
    runs.push(strings(&["collect", "--dsn", &good, "-o", "snapshot.json"]));
    runs.push(strings(&[
        "--host",
        "127.0.0.1",
        "--port",
        &port.to_string(),
        "--user",
        "auditor",
        "--password-file",
        "pw",
    ]));
    runs.push(strings(&[
        "--host",
        "127.0.0.1",
        "--port",
        &port.to_string(),
        "--user",
        "auditor",
        "--password",
        PASSWORD,
    ]));
    runs.push(strings(&["upgrade", "--dsn", &good, "--to", "26.9", "--format", "json"]));
    // error paths: a wrong port, a native port, a server that never answers, malformed DSNs,
    // a cluster that does not exist, a bad CA file
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    let unused = support::free_port();
    for dsn in [
        format!("http://auditor:{PASSWORD}@127.0.0.1:{unused}"),
        format!("clickhouse://auditor:{PASSWORD}@127.0.0.1:9001"),
        format!("http://auditor:{PASSWORD}@127.0.0.1:{silent_port}"),
        format!("http://auditor:{PASSWORD}/x@127.0.0.1:{port}"),
        format!("http://auditor:{PASSWORD}%ff@127.0.0.1:{port}"),
        format!("http://auditor:{PASSWORD}@[::1:{port}"),
        format!("ftp://auditor:{PASSWORD}@127.0.0.1:{port}"),
        format!("auditor:{PASSWORD}@127.0.0.1:{port}"),
    ] {
        runs.push(strings(&["--dsn", &dsn, "--timeout", "1"]));
    }
    runs.push(strings(&["--dsn", &format!("http://auditor:wrong-{PASSWORD}@127.0.0.1:{port}")]));
    runs.push(strings(&["--dsn", &good, "--cluster", "nope", "--fan-out", "direct"]));
    runs.push(strings(&["--dsn", &good.replace("http:", "https:"), "--ca-cert", "pw"]));
    for args in runs {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, stdout, stderr) = support::chaudit(d, &args);
        assert!(code != 101, "{args:?} panicked: {stderr}");
        for (what, text) in [("stdout", &stdout), ("stderr", &stderr)] {
            assert!(!text.contains(PASSWORD), "{args:?}: the password is in {what}:\n{text}");
        }
    }
    let snapshot = std::fs::read_to_string(d.join("snapshot.json")).unwrap();
    assert!(!snapshot.contains(PASSWORD));
    drop(silent);
}

/// The live document of `chaudit collect` as `user`, and its exit code and stderr.
fn collect_as(user: &str) -> (i32, Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let dsn = format!("http://{user}:{PASSWORD}@127.0.0.1:{}", server().http_port);
    let (code, _, stderr) = support::chaudit(dir.path(), &["collect", "--dsn", &dsn, "-o", "snapshot.json"]);
    let snapshot: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("snapshot.json")).unwrap()).unwrap();
    (code, snapshot["document"]["live"].clone(), stderr)
}

/// A BI guard on the auditing user (50 rows, then `break`: the rest dropped without an
/// error) cut every answer of more rows short, and the audit passed on what was left.
#[test]
fn answers_a_result_limit_with_break_would_cut_are_unavailable() {
    // the same server, read by a user without the guard: more than 50 settings
    let (code, live, stderr) = collect_as("auditor");
    assert_eq!(reasons(&live), Vec::<String>::new(), "{stderr}");
    assert!(live["settings"].as_object().unwrap().len() > 50 && code == 3, "{stderr}");
    // readonly=1 may send no setting: an answer past 50 rows may be cut, so it is not taken
    let (code, live, stderr) = collect_as("bi");
    assert_eq!(code, 3, "{stderr}");
    let unread = reasons(&live);
    let settings =
        unread.iter().find(|r| r.starts_with("settings: over a limit:")).unwrap_or_else(|| panic!("{unread:?}"));
    assert!(settings.contains("max_result_rows = 50 with result_overflow_mode = 'break'"), "{settings}");
    assert!(live.get("settings").is_none(), "no cut answer is kept: {live}");
    // readonly=2 may: chaudit sends result_overflow_mode = 'throw', and the server refuses
    let (code, live, stderr) = collect_as("bi2");
    assert_eq!(code, 3, "{stderr}");
    let unread = reasons(&live);
    let settings =
        unread.iter().find(|r| r.starts_with("settings: over a limit:")).unwrap_or_else(|| panic!("{unread:?}"));
    assert!(settings.contains("TOO_MANY_ROWS_OR_BYTES") && settings.contains("max_result_rows = 50"), "{settings}");
    // the audit: a rule reading the settings is inconclusive (exit 3), not passed
    let dir = tempfile::tempdir().unwrap();
    for user in ["bi", "bi2"] {
        let dsn = format!("http://{user}:{PASSWORD}@127.0.0.1:{}", server().http_port);
        let (code, report, stderr) = support::chaudit(dir.path(), &["--dsn", &dsn, "--format", "json"]);
        assert_eq!(code, 3, "{user}: {stderr}");
        let report: Value = serde_json::from_str(&report).unwrap();
        let inconclusive: Vec<&Value> =
            report["outcomes"].as_array().unwrap().iter().filter(|o| o["outcome"] == "inconclusive").collect();
        assert!(
            inconclusive.iter().any(|o| o["reason"].as_str().unwrap().contains("live.settings")),
            "{user}: {inconclusive:?}"
        );
    }
}

/// A row policy on system.warnings for the auditing user hides the server's warnings: the
/// rule reading them is inconclusive, not passed.
#[test]
fn a_system_table_a_row_policy_filters_is_unavailable() {
    let (_, live, stderr) = collect_as("filtered");
    let unread = reasons(&live);
    let warnings = unread.iter().find(|r| r.starts_with("warnings:")).unwrap_or_else(|| panic!("{unread:?} {stderr}"));
    assert!(
        warnings.contains(
            "filtered by a row policy: system.warnings has row policy `filtered` for chaudit's user `filtered`"
        ),
        "{warnings}"
    );
    assert_eq!(unread.len(), 1, "only the filtered table: {unread:?}");
    let dir = tempfile::tempdir().unwrap();
    let dsn = format!("http://filtered:{PASSWORD}@127.0.0.1:{}", server().http_port);
    let (code, report, stderr) = support::chaudit(dir.path(), &["--dsn", &dsn, "--format", "json"]);
    assert_eq!(code, 3, "{stderr}");
    let report: Value = serde_json::from_str(&report).unwrap();
    let outcome = support::report_entry(&report, "outcomes", "clickhouse-warnings").unwrap();
    assert_eq!(outcome["outcome"], "inconclusive", "{outcome}");
    assert!(outcome["reason"].as_str().unwrap().contains("row policy"), "{outcome}");
}

/// Two nodes audited together, one of them not answering even the connect probe within the
/// audit's deadline, which is shorter than a query's timeout (a replica queued behind others
/// in a big fleet meets the same): the audit's own deadline ran out, not the node. It is not
/// called unreachable (no cluster-replica-unreachable finding); its rules are inconclusive with
/// that reason, and the run exits 3.
#[test]
fn a_node_the_audits_deadline_cut_off_is_not_called_unreachable() {
    let port = support::proxy(server().http_port, |_| false);
    let dir = tempfile::tempdir().unwrap();
    let (fast, slow) = (format!("http://127.0.0.1:{}", server().http_port), format!("http://127.0.0.1:{port}"));
    let (code, out, stderr) = support::chaudit(
        dir.path(),
        &[
            "--dsn",
            &fast,
            "--dsn",
            &slow,
            "--timeout",
            "30",
            "--deadline",
            "4",
            "--format",
            "json",
            "--fail-on",
            "never",
        ],
    );
    assert_eq!(code, 3, "{stderr}");
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert!(support::findings_of(&report, "cluster-replica-unreachable").is_empty(), "{report:#}");
    let outcomes = report["outcomes"].to_string();
    assert!(
        outcomes.contains("the audit's deadline (4 s, --deadline) passed before this replica answered"),
        "{outcomes}"
    );
}
