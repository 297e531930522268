//! Live security on a real clickhouse-server 25.8: users created by SQL are read from
//! system.users and system.grants (one combined facts query), a passwordless user open to any
//! host with ALL ... WITH GRANT OPTION is critical, a password-protected one that administers
//! through a role is high (and its SQL fix clears it), a clean server gives no such finding, and
//! an auditor without the privilege to read the access tables gets inconclusive, not passed.
//! readonly = 2 without a bound lets a user lift its limits (medium) and a reachable user
//! under no quota is low; each SQL fix, applied, clears its finding.
//! On the same server: an empty system log section (`<part_log/>`) is a log the server keeps,
//! as the config facts read it; interserver credentials with `<allow_empty>` and an empty
//! password let in a replica that sends none, or only the user's name, as the interserver rule
//! says.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

/// The server with its MySQL, PostgreSQL and interserver ports, in that order.
fn start() -> (support::LiveServer, u16, u16, u16) {
    let (mysql_port, postgresql_port, interserver_port) =
        (support::free_port(), support::free_port(), support::free_port());
    let server = support::LiveServer::start_version(support::CLICKHOUSE_25_8, false, |dir| {
        // `default` may grant everything (GRANT ALL needs named collection control too); `bi`
        // has no password (from this host only: the clean server has no open user)
        let users = support::users_xml("s3cr3t-pw", "")
            .replacen(
                "<access_management>1</access_management>",
                "<access_management>1</access_management><named_collection_control>1</named_collection_control>\
             <show_named_collections>1</show_named_collections><show_named_collections_secrets>1</show_named_collections_secrets>",
                1,
            )
            .replacen(
                "</users>",
                "<bi><no_password/><networks><ip>127.0.0.1</ip></networks><profile>default</profile></bi></users>",
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
        std::fs::write(
            dir.join("config.d/protocols.xml"),
            format!(
                "<clickhouse><mysql_port>{mysql_port}</mysql_port><postgresql_port>{postgresql_port}</postgresql_port></clickhouse>\n"
            ),
        )
        .unwrap();
        std::fs::write(
            dir.join("config.d/interserver.xml"),
            format!(
                "<clickhouse><interserver_http_port>{interserver_port}</interserver_http_port>\
                 <interserver_http_host>127.0.0.1</interserver_http_host>\
                 <interserver_http_credentials><user>replica</user><password></password>\
                 <allow_empty>true</allow_empty></interserver_http_credentials></clickhouse>\n"
            ),
        )
        .unwrap();
    });
    (server, mysql_port, postgresql_port, interserver_port)
}

const RULES: &str = "live-passwordless-user-open,live-admin-open-to-any-network,live-readonly-user-can-change-settings,\
                     live-user-without-quota,live-row-policy-leaves-others-unfiltered";

fn audit(dir: &Path, dsn: &str) -> Value {
    let (_, out, stderr) =
        support::chaudit(dir, &["--dsn", dsn, "--select", RULES, "--format", "json", "--fail-on", "never"]);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {stderr}"))
}

fn outcome<'a>(report: &'a Value, rule: &str) -> &'a str {
    support::report_entry(report, "outcomes", rule).expect("an outcome")["outcome"].as_str().unwrap()
}

#[test]
fn a_passwordless_sql_user_open_to_any_host_is_critical_and_a_clean_server_passes() {
    let (server, mysql_port, postgresql_port, interserver_port) = start();
    passwordless_logins_over_mysql_and_postgresql_and_a_removed_port_closes(&server, mysql_port, postgresql_port);
    interserver_credentials_that_keep_no_one_out(interserver_port);
    let dir = tempfile::tempdir().unwrap();
    let admin = format!("http://default@127.0.0.1:{}", server.http_port);
    let auditor = format!("http://narrow:n4rrow-pw@127.0.0.1:{}", server.http_port);

    an_empty_log_section_is_a_log_the_server_keeps(&server);
    let clean = audit(dir.path(), &admin);
    assert_eq!(outcome(&clean, "live-passwordless-user-open"), "passed", "{clean:#}");
    for rule in RULES.split(',') {
        assert_eq!(outcome(&clean, rule), "passed", "{rule}: {clean:#}");
    }

    // an auditor that may read the system tables but not system.users: inconclusive, with
    // the reason (SELECT on system.* alone is enough to read every user on 25.8)
    server.query("CREATE USER narrow IDENTIFIED WITH sha256_password BY 'n4rrow-pw' HOST LOCAL SETTINGS readonly = 1");
    server.query("GRANT SELECT ON system.* TO narrow");
    an_auditor_without_show_tables_judges_no_table(&server, dir.path(), &auditor);
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
    // its SQL fix, applied as the admin, clears it (the password is left to the user)
    assert_eq!(finding["remediation"]["sql"], "ALTER USER `app` HOST LOCAL");
    server.query(finding["remediation"]["sql"].as_str().unwrap());
    let closed = audit(dir.path(), &admin);
    assert!(support::report_entry(&closed, "findings", "live-passwordless-user-open").is_none(), "{closed:#}");

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

    readonly_two_without_constraints_lifts_limits_and_its_fix_holds(&server, dir.path(), &admin);
    a_reachable_user_without_a_quota_and_its_fix(&server, dir.path(), &admin);
    a_row_policy_filters_only_whom_it_names(&server, dir.path(), &admin);
    a_busy_sql_user_gets_limits_that_keep_its_profile(&server, dir.path(), &admin);
}

/// SELECT on system.* alone shows the auditor no other database, nor its tables (system.tables
/// and system.parts list only what it may SHOW): the table rules are inconclusive, naming the
/// grant, never passed on nothing; with `SHOW DATABASES, SHOW TABLES` (docs/live.md) they judge.
fn an_auditor_without_show_tables_judges_no_table(server: &support::LiveServer, dir: &Path, auditor: &str) {
    server.query("CREATE TABLE default.audited (x UInt8) ENGINE = MergeTree ORDER BY x");
    server.query("INSERT INTO default.audited VALUES (1)");
    let select = ["--dsn", auditor, "--select", "detached-parts,live-passwordless-user-open", "--format", "json"];
    let (code, out, _) = support::chaudit(dir, &select);
    let blind: Value = serde_json::from_str(&out).unwrap();
    let entry = support::report_entry(&blind, "outcomes", "detached-parts").unwrap();
    assert_eq!(entry["outcome"], "inconclusive", "{entry:#}");
    let reason = entry["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("SHOW TABLES") && reason.contains("`narrow`"), "{entry:#}");
    assert_eq!(code, 3, "a run that could not judge exits 3");
    assert_eq!(outcome(&blind, "live-passwordless-user-open"), "passed", "{blind:#}");
    server.query("GRANT SHOW DATABASES, SHOW TABLES ON *.* TO narrow");
    let (_, out, _) = support::chaudit(dir, &select);
    let seeing: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(outcome(&seeing, "detached-parts"), "passed", "{seeing:#}");
    server.query("REVOKE SHOW DATABASES, SHOW TABLES ON *.* FROM narrow");
    server.query("DROP TABLE default.audited SYNC");
}

/// `busy-user-without-limits` on a user created with SQL: its printed fix, run as the admin,
/// gives the limits and keeps the user's profile; once the shape runs again the re-audit is quiet.
fn a_busy_sql_user_gets_limits_that_keep_its_profile(server: &support::LiveServer, dir: &Path, admin: &str) {
    let rule = "busy-user-without-limits";
    server.query("CREATE SETTINGS PROFILE dash_profile SETTINGS max_threads = 3");
    server.query("CREATE USER dash IDENTIFIED WITH sha256_password BY 'd-pw' HOST LOCAL SETTINGS PROFILE dash_profile");
    server.query("GRANT SELECT ON default.rows TO dash");
    let run_shape = || {
        for _ in 0..5 {
            server.try_query_as("dash", "d-pw", "SELECT max(x) FROM default.rows").unwrap();
        }
        server.query("SYSTEM FLUSH LOGS");
    };
    let busy = |dir: &Path| -> Value {
        let args = [
            "--dsn",
            admin,
            "--select",
            rule,
            "--param",
            "busy-user-without-limits.min_runs=5",
            "--since",
            "1h",
            "--format",
            "json",
        ];
        let (_, out, stderr) = support::chaudit(dir, &[&args[..], &["--fail-on", "never"]].concat());
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {stderr}"))
    };
    run_shape();
    let report = busy(dir);
    let found = about(&report, rule, "dash");
    assert_eq!(found.len(), 1, "{report:#}");
    server.query(found[0]["remediation"]["sql"].as_str().expect("a SQL fix on 25.8"));
    let settings = "SELECT getSetting('max_execution_time'), getSetting('max_threads')";
    assert_eq!(server.try_query_as("dash", "d-pw", settings).unwrap().trim(), "30\t3", "limits given, profile kept");
    run_shape();
    let fixed = busy(dir);
    assert!(about(&fixed, rule, "dash").is_empty(), "{fixed:#}");
}

/// The findings of `rule` about user `name`.
fn about<'a>(report: &'a Value, rule: &str, name: &str) -> Vec<&'a Value> {
    support::findings_of(report, rule).into_iter().filter(|f| f["evidence"]["user"] == name).collect()
}

/// readonly = 2 from a profile, without a bound: the user lifts its profile's limit (what the
/// rule says); a MAX in an inherited profile refuses it; the printed fix, applied, forbids it
/// and the re-audit clears the finding.
fn readonly_two_without_constraints_lifts_limits_and_its_fix_holds(
    server: &support::LiveServer,
    dir: &Path,
    admin: &str,
) {
    let rule = "live-readonly-user-can-change-settings";
    server.query("CREATE SETTINGS PROFILE bi SETTINGS readonly = 2, max_memory_usage = 1000000");
    server.query("CREATE SETTINGS PROFILE bounded SETTINGS readonly = 2, max_memory_usage = 1000000 MAX 2000000");
    server.query("CREATE SETTINGS PROFILE inherits SETTINGS INHERIT bounded");
    server.query("CREATE USER bi_user IDENTIFIED WITH sha256_password BY 'b1-pw' HOST LOCAL SETTINGS PROFILE bi");
    server.query("CREATE USER kept IDENTIFIED WITH sha256_password BY 'k1-pw' HOST LOCAL SETTINGS PROFILE inherits");
    let lift = "SELECT getSetting('max_memory_usage') SETTINGS max_memory_usage = 5000000";
    assert_eq!(server.try_query_as("bi_user", "b1-pw", lift).unwrap().trim(), "5000000");
    let refused = server.try_query_as("kept", "k1-pw", lift).unwrap_err();
    assert!(refused.contains("SETTING_CONSTRAINT_VIOLATION"), "{refused}");

    let report = audit(dir, admin);
    let found = about(&report, rule, "bi_user");
    assert_eq!(found.len(), 1, "{report:#}");
    assert_eq!(found[0]["severity"], "medium");
    assert!(found[0]["message"].as_str().unwrap().contains("profile `bi`"), "{:#}", found[0]);
    assert!(about(&report, rule, "kept").is_empty(), "a bound in an inherited profile: {report:#}");

    let fix = found[0]["remediation"]["sql"].as_str().expect("a SQL fix on 25.8");
    server.query(fix);
    let refused = server.try_query_as("bi_user", "b1-pw", lift).unwrap_err();
    assert!(refused.contains("readonly"), "{refused}");
    let fixed = audit(dir, admin);
    assert!(about(&fixed, rule, "bi_user").is_empty(), "{fixed:#}");
    assert_eq!(
        server.query("SELECT getSetting('max_memory_usage')").trim(),
        "0",
        "the admin's own limits are untouched"
    );
}

/// A password-protected user any host may reach, under no quota: low; the printed quota,
/// applied, bounds its queries and the re-audit clears the finding. A loopback-only user is
/// not reported.
fn a_reachable_user_without_a_quota_and_its_fix(server: &support::LiveServer, dir: &Path, admin: &str) {
    let rule = "live-user-without-quota";
    server.query("CREATE USER reach IDENTIFIED WITH sha256_password BY 'r-pw' HOST ANY");
    let report = audit(dir, admin);
    let found = about(&report, rule, "reach");
    assert_eq!(found.len(), 1, "{report:#}");
    assert_eq!(found[0]["severity"], "low");
    assert!(about(&report, rule, "bi_user").is_empty(), "HOST LOCAL: {report:#}");

    let fix = found[0]["remediation"]["sql"].as_str().expect("a SQL fix");
    server.query(fix);
    let limits = server.query("SELECT max_queries FROM system.quota_limits WHERE quota_name = 'reach_limits'");
    assert_eq!(limits.trim(), "100000");
    let fixed = audit(dir, admin);
    assert!(about(&fixed, rule, "reach").is_empty(), "{fixed:#}");

    // a second quota without limits: the server may consume that one
    server.query("CREATE QUOTA open_too FOR INTERVAL 1 hour NO LIMITS TO reach");
    let again = audit(dir, admin);
    let found = about(&again, rule, "reach");
    assert_eq!(found.len(), 1, "{again:#}");
    assert!(found[0]["message"].as_str().unwrap().contains("`open_too`, which limits nothing"), "{:#}", found[0]);
    assert!(found[0]["remediation"].get("sql").is_none(), "another new quota would not help: {:#}", found[0]);
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

/// A row policy for `pa` alone: `pb`, with the same grant, reads every row (what the rule
/// says); a policy for everyone else, excepting `pa` and the administrator, leaves `pb` none
/// and the re-audit clears the finding.
fn a_row_policy_filters_only_whom_it_names(server: &support::LiveServer, dir: &Path, admin: &str) {
    let rule = "live-row-policy-leaves-others-unfiltered";
    server.query("CREATE TABLE default.rows (x UInt8) ENGINE = MergeTree ORDER BY x");
    server.query("INSERT INTO default.rows VALUES (1), (2), (3)");
    server.query("CREATE USER pa IDENTIFIED WITH sha256_password BY 'pa-pw' HOST LOCAL");
    server.query("CREATE USER pb IDENTIFIED WITH sha256_password BY 'pb-pw' HOST LOCAL");
    server.query("GRANT SELECT ON default.rows TO pa, pb");
    server.query("CREATE ROW POLICY p1 ON default.rows FOR SELECT USING x = 1 TO pa");
    let count = "SELECT count() FROM default.rows";
    assert_eq!(server.try_query_as("pa", "pa-pw", count).unwrap().trim(), "1");
    assert_eq!(server.try_query_as("pb", "pb-pw", count).unwrap().trim(), "3");

    let report = audit(dir, admin);
    let found = support::findings_of(&report, rule);
    assert_eq!(found.len(), 1, "{report:#}");
    assert_eq!(
        found[0]["message"].as_str().unwrap().split(':').next(),
        Some("table `default.rows` has row policies only for pa")
    );

    server.query("CREATE ROW POLICY others ON default.rows FOR SELECT USING 0 TO ALL EXCEPT pa, default");
    assert_eq!(server.try_query_as("pb", "pb-pw", count).unwrap().trim(), "0");
    assert_eq!(server.query(count).trim(), "3", "the administrator, excepted, reads every row");
    let fixed = audit(dir, admin);
    assert!(support::findings_of(&fixed, rule).is_empty(), "{fixed:#}");
}

/// What `compatibility-port-open-to-passwordless-user` says: a `<no_password/>` user logs in
/// over the MySQL and the PostgreSQL protocol with an empty password; and what its fix says:
/// a config.d fragment removing the port closes it on reload, without a restart.
fn passwordless_logins_over_mysql_and_postgresql_and_a_removed_port_closes(
    server: &support::LiveServer,
    mysql_port: u16,
    postgresql_port: u16,
) {
    assert_eq!(mysql_login(mysql_port, "bi"), Ok(()));
    assert_eq!(postgresql_current_user(postgresql_port, "bi").as_deref(), Ok("bi"));
    // a user with a password is refused the same empty login
    assert!(mysql_login(mysql_port, "auditor").is_err());
    assert!(postgresql_current_user(postgresql_port, "auditor").is_err());

    let fix = server.config_path().with_file_name("config.d").join("zz-chaudit-fix.xml");
    std::fs::write(&fix, "<clickhouse><mysql_port remove=\"1\"/></clickhouse>\n").unwrap();
    let closed = (0..60).any(|_| {
        std::thread::sleep(Duration::from_millis(500));
        TcpStream::connect(("127.0.0.1", mysql_port)).is_err()
    });
    assert!(closed, "the MySQL port still listens 30 s after the fragment removed it");
    assert_eq!(postgresql_current_user(postgresql_port, "bi").as_deref(), Ok("bi"), "the other port stays");
    std::fs::remove_file(fix).unwrap();
}

/// What `interserver-open-without-credentials` says of `<interserver_http_credentials>` with
/// `<allow_empty>` and an empty `<password>`: a request that sends no credentials, and one that
/// sends the user with an empty password, get past authentication (the server then answers
/// about the unknown endpoint); a wrong password does not.
fn interserver_credentials_that_keep_no_one_out(port: u16) {
    let status = |authorization: Option<&str>| {
        let mut stream = connect(port);
        let header = authorization.map_or(String::new(), |a| format!("Authorization: Basic {a}\r\n"));
        write!(stream, "GET /?endpoint=DataPartsExchange:none HTTP/1.0\r\n{header}\r\n").unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer.split(' ').nth(1).unwrap_or_default().to_string()
    };
    assert_eq!(status(Some("cmVwbGljYTp3cm9uZw==")), "401", "replica:wrong is refused");
    assert_ne!(status(None), "401", "no credentials get in with <allow_empty>");
    assert_ne!(status(Some("cmVwbGljYTo=")), "401", "replica: (empty password) gets in");
}

fn connect(port: u16) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    stream
}

/// A MySQL protocol login (HandshakeResponse41, mysql_native_password, empty password): Ok
/// when the server answers OK.
fn mysql_login(port: u16, user: &str) -> Result<(), String> {
    let mut stream = connect(port);
    let read_packet = |stream: &mut TcpStream| -> Vec<u8> {
        let mut header = [0u8; 4];
        stream.read_exact(&mut header).expect("a packet header");
        let mut payload =
            vec![0u8; usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16];
        stream.read_exact(&mut payload).expect("a packet");
        payload
    };
    let greeting = read_packet(&mut stream);
    assert_eq!(greeting[0], 10, "protocol version 10");
    // CLIENT_PROTOCOL_41 | CLIENT_SECURE_CONNECTION | CLIENT_PLUGIN_AUTH
    let capabilities: u32 = 0x0200 | 0x8000 | 0x0008_0000;
    let mut payload = capabilities.to_le_bytes().to_vec();
    payload.extend(16_777_216u32.to_le_bytes());
    payload.push(33); // utf8_general_ci
    payload.extend([0u8; 23]);
    payload.extend(user.as_bytes());
    payload.push(0);
    payload.push(0); // an empty auth response
    payload.extend(b"mysql_native_password\0");
    let length = payload.len() as u32;
    let mut packet = length.to_le_bytes()[..3].to_vec();
    packet.push(1);
    packet.extend(payload);
    stream.write_all(&packet).unwrap();
    let reply = read_packet(&mut stream);
    if reply[0] == 0 { Ok(()) } else { Err(String::from_utf8_lossy(&reply).into_owned()) }
}

/// `SELECT currentUser()` over the PostgreSQL protocol (startup without a password, simple
/// query): the user the server says the session is.
fn postgresql_current_user(port: u16, user: &str) -> Result<String, String> {
    let mut stream = connect(port);
    let mut body = 196_608u32.to_be_bytes().to_vec(); // protocol 3.0
    body.extend(format!("user\0{user}\0database\0default\0\0").as_bytes());
    let mut startup = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    startup.extend(body);
    stream.write_all(&startup).unwrap();
    let query = b"SELECT currentUser()\0";
    let mut message = vec![b'Q'];
    message.extend(((query.len() + 4) as u32).to_be_bytes());
    message.extend(query);
    let mut sent = false;
    loop {
        let mut header = [0u8; 5];
        stream.read_exact(&mut header).map_err(|e| e.to_string())?;
        let length = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
        let mut payload = vec![0u8; length - 4];
        stream.read_exact(&mut payload).map_err(|e| e.to_string())?;
        match header[0] {
            b'R' if payload[..4] != [0, 0, 0, 0] => return Err(format!("a password is asked: {payload:?}")),
            b'E' => return Err(String::from_utf8_lossy(&payload).into_owned()),
            b'Z' if !sent => {
                stream.write_all(&message).unwrap();
                sent = true;
            }
            b'D' => {
                let size = u32::from_be_bytes([payload[2], payload[3], payload[4], payload[5]]) as usize;
                return Ok(String::from_utf8_lossy(&payload[6..6 + size]).into_owned());
            }
            _ => {}
        }
    }
}
