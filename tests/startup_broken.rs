//! Configs the server starts on but that break it: proven on the real clickhouse-server 25.8
//! with SQL, the consequence the rules of rules/startup/ name.

mod support;

use std::process::Command;

/// A query's response body and whether it succeeded (the server's error text when not).
fn try_query(server: &support::LiveServer, sql: &str) -> (bool, String) {
    let out = Command::new("curl")
        .args(["-sS", "--fail-with-body", "--data-binary", sql])
        .arg(format!("http://127.0.0.1:{}/", server.http_port))
        .output()
        .expect("run curl");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn a_policy_or_backup_disk_that_does_not_exist_starts_but_breaks() {
    let server = support::LiveServer::start_version(support::CLICKHOUSE_25_8, false, |dir| {
        std::fs::create_dir_all(dir.join("config.d")).unwrap();
        std::fs::write(
            dir.join("config.d/broken.xml"),
            "<clickhouse><storage_configuration><policies><tiered><volumes><hot><disk>fast</disk></hot></volumes>\
             </tiered></policies></storage_configuration>\
             <backups><allowed_disk>backups</allowed_disk><allowed_path>/backups/</allowed_path></backups></clickhouse>",
        )
        .unwrap();
    });
    let (created, error) = try_query(&server, "CREATE TABLE default.t (x UInt8) ENGINE = MergeTree ORDER BY x");
    assert!(!created && error.contains("UNKNOWN_DISK") && error.contains("fast"), "{error}");
    let (logs, count) =
        try_query(&server, "SELECT count() FROM system.tables WHERE database = 'system' AND name = 'query_log'");
    assert!(logs && count.trim() == "0", "the system logs are never created: {count}");
    server.query("CREATE TABLE default.m (x UInt8) ENGINE = Memory");
    let (backed_up, error) = try_query(&server, "BACKUP TABLE default.m TO Disk('backups', 'b1')");
    assert!(!backed_up && error.contains("UNKNOWN_DISK") && error.contains("backups"), "{error}");

    // the live audit names the cause of the missing system logs
    let dir = tempfile::tempdir().unwrap();
    let dsn = format!("http://default@127.0.0.1:{}", server.http_port);
    let (_, report, stderr) = support::chaudit(
        dir.path(),
        &["--dsn", &dsn, "--select", "unknown-disk-errors", "--format", "json", "--fail-on", "never"],
    );
    let report: serde_json::Value = serde_json::from_str(&report).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    let finding =
        support::report_entry(&report, "findings", "unknown-disk-errors").expect("a finding naming the cause");
    let message = finding["message"].as_str().unwrap();
    assert!(message.contains("system log tables are missing"), "{message}");
}
