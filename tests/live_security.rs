//! Live security on a real clickhouse-server 25.8: users created by SQL are read from
//! system.users and system.grants (one combined facts query), a passwordless user open to any
//! host with ALL ... WITH GRANT OPTION is critical, a password-protected one that administers
//! through a role is high (and its SQL fix clears it), a clean server gives no such finding, and
//! an auditor without the privilege to read the access tables gets inconclusive, not passed.
//! On the same server: an empty system log section (`<part_log/>`) is a log the server keeps,
//! as the config facts read it.

mod support;

use std::path::Path;

use serde_json::Value;

fn start() -> support::LiveServer {
    support::LiveServer::start_version(support::CLICKHOUSE_25_8, false, |dir| {
        // `default` may grant everything (GRANT ALL needs named collection control too)
        let users = support::users_xml("s3cr3t-pw", "").replacen(
            "<access_management>1</access_management>",
            "<access_management>1</access_management><named_collection_control>1</named_collection_control>\
             <show_named_collections>1</show_named_collections><show_named_collections_secrets>1</show_named_collections_secrets>",
            1,
        );
        std::fs::write(dir.join("users.xml"), users).unwrap();
        std::fs::create_dir_all(dir.join("config.d")).unwrap();
        // an empty section, as ClickHouse's own Kubernetes operator writes its logs
        std::fs::write(dir.join("config.d/empty-log.xml"), "<clickhouse><part_log replace=\"1\"/></clickhouse>\n")
            .unwrap();
        // access_control_path: a writable access storage, for CREATE USER
        std::fs::write(
            dir.join("config.d/access.xml"),
            format!(
                "<clickhouse>\n    <users_config>{}</users_config>\n    <access_control_path>{}</access_control_path>\n</clickhouse>\n",
                dir.join("users.xml").display(),
                dir.join("access/").display()
            ),
        )
        .unwrap();
    })
}

fn audit(dir: &Path, dsn: &str) -> Value {
    let (_, out, stderr) = support::chaudit(
        dir,
        &[
            "--dsn",
            dsn,
            "--select",
            "live-passwordless-user-open,live-admin-open-to-any-network",
            "--format",
            "json",
            "--fail-on",
            "never",
        ],
    );
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {stderr}"))
}

fn outcome<'a>(report: &'a Value, rule: &str) -> &'a str {
    support::report_entry(report, "outcomes", rule).expect("an outcome")["outcome"].as_str().unwrap()
}

#[test]
fn a_passwordless_sql_user_open_to_any_host_is_critical_and_a_clean_server_passes() {
    let server = start();
    let dir = tempfile::tempdir().unwrap();
    let admin = format!("http://default@127.0.0.1:{}", server.http_port);
    let auditor = format!("http://narrow:n4rrow-pw@127.0.0.1:{}", server.http_port);

    an_empty_log_section_is_a_log_the_server_keeps(&server);
    let clean = audit(dir.path(), &admin);
    assert_eq!(outcome(&clean, "live-passwordless-user-open"), "passed", "{clean:#}");
    assert_eq!(outcome(&clean, "live-admin-open-to-any-network"), "passed", "{clean:#}");

    // an auditor that may read the system tables but not system.users: inconclusive, with
    // the reason (SELECT on system.* alone is enough to read every user on 25.8)
    server.query("CREATE USER narrow IDENTIFIED WITH sha256_password BY 'n4rrow-pw' HOST LOCAL SETTINGS readonly = 1");
    server.query("GRANT SELECT ON system.* TO narrow");
    server.query("REVOKE SELECT ON system.users FROM narrow");
    let unread = audit(dir.path(), &auditor);
    let entry = support::report_entry(&unread, "outcomes", "live-passwordless-user-open").unwrap();
    assert_eq!(entry["outcome"], "inconclusive", "{entry:#}");
    assert!(entry["reason"].as_str().is_some_and(|r| r.contains("users")), "{entry:#}");

    server.query("CREATE USER app IDENTIFIED WITH no_password HOST ANY");
    server.query("GRANT ALL ON *.* TO app WITH GRANT OPTION");
    let open = audit(dir.path(), &admin);
    let finding = support::report_entry(&open, "findings", "live-passwordless-user-open").expect("a finding");
    assert_eq!(finding["severity"], "critical");
    let message = finding["message"].as_str().unwrap();
    for part in ["`app`", "local_directory", "ALL", "WITH GRANT OPTION"] {
        assert!(message.contains(part), "{part}: {message}");
    }

    // a password, but open to any host and an administrator through a role: high
    server.query("CREATE ROLE admins");
    server.query("GRANT ALL ON *.* TO admins WITH GRANT OPTION");
    server.query("CREATE USER ops IDENTIFIED WITH sha256_password BY '0ps-pw' HOST ANY");
    server.query("GRANT admins TO ops");
    let admin_open = audit(dir.path(), &admin);
    let finding = support::report_entry(&admin_open, "findings", "live-admin-open-to-any-network").expect("a finding");
    assert_eq!(finding["severity"], "high");
    assert!(finding["message"].as_str().unwrap().contains("`ops`"), "{finding:#}");
    assert!(finding["message"].as_str().unwrap().contains("through a role"), "{finding:#}");
    // its fix, applied as the admin, clears it
    server.query("ALTER USER ops HOST LOCAL");
    let fixed = audit(dir.path(), &admin);
    assert!(support::report_entry(&fixed, "findings", "live-admin-open-to-any-network").is_none(), "{fixed:#}");
}

/// `<part_log/>` with nothing in it: the server creates system.part_log with its defaults
/// (the config facts count such a section as present; ClickHouse's operator writes them so).
fn an_empty_log_section_is_a_log_the_server_keeps(server: &support::LiveServer) {
    server.query("CREATE TABLE default.parts (x UInt8) ENGINE = MergeTree ORDER BY x");
    server.query("INSERT INTO default.parts VALUES (1)");
    server.query("SYSTEM FLUSH LOGS");
    assert_eq!(server.query("EXISTS TABLE system.part_log").trim(), "1");
    assert_ne!(server.query("SELECT count() FROM system.part_log WHERE table = 'parts'").trim(), "0");
}
