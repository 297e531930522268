//! `chaudit diff A B`: two config trees, two snapshots of a real ClickHouse 25.8 server
//! before and after a change, and a config tree against the server started from it.

mod support;

use std::path::Path;

use serde_json::Value;

fn diff(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["diff"];
    all.extend_from_slice(args);
    support::chaudit(dir, &all)
}

fn diff_json(dir: &Path, args: &[&str]) -> (i32, Value) {
    let mut all = args.to_vec();
    all.extend_from_slice(&["--format", "json"]);
    let (code, stdout, stderr) = diff(dir, &all);
    let json =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("exit {code}, not JSON ({e}): {stdout}\n{stderr}"));
    (code, json)
}

/// The differences of one section of a JSON diff, by key.
fn section<'a>(diff: &'a Value, name: &str) -> Vec<&'a Value> {
    diff["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["section"] == name)
        .unwrap_or_else(|| panic!("no section {name}: {diff:#}"))["differences"]
        .as_array()
        .unwrap()
        .iter()
        .collect()
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A small tree: a setting in config.d, users with a profile.
fn tree(dir: &Path, keep_alive: u32) {
    write(
        &dir.join("config.xml"),
        "<clickhouse>\n    <max_concurrent_queries>100</max_concurrent_queries>\n    <display_name>node</display_name>\n</clickhouse>\n",
    );
    write(
        &dir.join("config.d/10-net.xml"),
        &format!("<clickhouse>\n    <keep_alive_timeout>{keep_alive}</keep_alive_timeout>\n</clickhouse>\n"),
    );
    write(&dir.join("users.xml"), &support::users_xml("s3cr3t-pw", ""));
}

#[test]
fn two_config_trees_name_the_setting_with_both_values_and_where_each_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, same) = (dir.path().join("a"), dir.path().join("b"), dir.path().join("same"));
    tree(&a, 30);
    tree(&b, 10);
    tree(&same, 30);
    // by nature: another replica's name is not drift
    write(&same.join("config.d/20-name.xml"), "<clickhouse>\n    <display_name>other</display_name>\n</clickhouse>\n");

    let (code, stdout, stderr) = diff(dir.path(), &["a", "b"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stdout.contains("keep_alive_timeout: 30 (config.d/10-net.xml:2:5) -> 10 (config.d/10-net.xml:2:5)"),
        "{stdout}"
    );
    assert!(!stdout.contains("s3cr3t-pw"), "a password was printed: {stdout}");

    let (code, json) = diff_json(dir.path(), &["a", "b"]);
    assert_eq!(code, 1);
    let server = section(&json, "server settings");
    assert_eq!(server.len(), 1, "{json:#}");
    assert_eq!(server[0]["key"], "keep_alive_timeout");
    assert_eq!(server[0]["a"]["value"], "30");
    assert_eq!(server[0]["b"]["value"], "10");
    assert_eq!(server[0]["b"]["at"], "config.d/10-net.xml:2:5");
    assert_eq!(json["status"], "failing");

    // equal trees (a display_name apart): nothing printed, exit 0
    let (code, stdout, stderr) = diff(dir.path(), &["a", "same/config.xml"]);
    assert_eq!((code, stdout.as_str()), (0, ""), "{stderr}");
    let (code, stdout, _) = diff(dir.path(), &["a", "same", "--all"]);
    assert_eq!(code, 1);
    assert!(stdout.contains("display_name: node (config.xml:3:5) -> other (config.d/20-name.xml:2:5)"), "{stdout}");

    // never written over a file a side was read from
    let fragment = a.join("config.d/10-net.xml");
    let before = std::fs::read_to_string(&fragment).unwrap();
    let (code, _, stderr) = diff(dir.path(), &["a", "b", "-o", "a/config.d/10-net.xml"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("a file of side A"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&fragment).unwrap(), before);
    let (code, _, stderr) = diff(dir.path(), &["a", "b", "--format", "markdown", "-o", "drift.md"]);
    assert_eq!(code, 1, "{stderr}");
    let written = std::fs::read_to_string(dir.path().join("drift.md")).unwrap();
    assert!(
        written.contains("| `keep_alive_timeout` | 30 (config.d/10-net.xml:2:5) | 10 (config.d/10-net.xml:2:5) |"),
        "{written}"
    );
}

#[test]
fn a_config_that_clickhouse_refuses_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    tree(&dir.path().join("a"), 30);
    write(&dir.path().join("broken/config.xml"), "<clickhouse><max_threads>1</clickhouse>\n");
    let (code, stdout, stderr) = diff(dir.path(), &["a", "broken"]);
    assert_eq!((code, stdout.as_str()), (2, ""), "{stderr}");
    assert!(stderr.contains("side B"), "{stderr}");
}

fn start_25_8(prepare: impl Fn(&Path)) -> support::LiveServer {
    support::LiveServer::start_version(support::CLICKHOUSE_25_8, false, prepare)
}

/// The server's own files, with the users config, a setting and a cluster in config.d.
fn prepare(dir: &Path) {
    std::fs::write(dir.join("users.xml"), support::users_xml("s3cr3t-pw", "")).unwrap();
    write(
        &dir.join("config.d/cluster.xml"),
        "<clickhouse><remote_servers><pair><shard><replica><host>127.0.0.1</host><port>9000</port></replica>\
         <replica><host>localhost</host><port>9001</port></replica></shard></pair></remote_servers></clickhouse>\n",
    );
    write(
        &dir.join("config.d/audit.xml"),
        &format!(
            "<clickhouse>\n    <users_config>{}</users_config>\n    <max_concurrent_queries>100</max_concurrent_queries>\n</clickhouse>\n",
            dir.join("users.xml").display()
        ),
    );
}

#[test]
fn snapshots_before_and_after_a_change_name_it() {
    let server = start_25_8(prepare);
    let dir = tempfile::tempdir().unwrap();
    let dsn = format!("http://auditor:s3cr3t-pw@127.0.0.1:{}", server.http_port);
    // the system log tables exist before the first snapshot (a fresh server creates them at
    // its first flush)
    server.query("SYSTEM FLUSH LOGS");
    let collect = |name: &str| {
        let (code, _, stderr) = support::chaudit(dir.path(), &["collect", "--dsn", &dsn, "--since", "0", "-o", name]);
        assert_eq!(code, 0, "{stderr}");
    };
    collect("before.json");

    // the same snapshot twice: equal, nothing printed
    let (code, stdout, stderr) = diff(dir.path(), &["before.json", "before.json"]);
    assert_eq!((code, stdout.as_str()), (0, ""), "{stderr}");

    // a server setting changed by a config.d fragment and SYSTEM RELOAD CONFIG, and a
    // settings profile created in SQL
    let config_dir = server.dir.path().join("server");
    write(
        &config_dir.join("config.d/zz-change.xml"),
        "<clickhouse>\n    <max_concurrent_queries>150</max_concurrent_queries>\n</clickhouse>\n",
    );
    server.query("SYSTEM RELOAD CONFIG");
    server.query("CREATE SETTINGS PROFILE drift_profile SETTINGS max_threads = 3");
    // a user created in SQL, with a grant
    server.query("CREATE USER drift_user IDENTIFIED WITH sha256_password BY 'drift-pw-123' HOST IP '10.0.0.0/8'");
    server.query("GRANT SELECT ON *.* TO drift_user");
    // a role granted to it, and a quota on another role (the user stays under none)
    server.query("CREATE ROLE drift_role");
    server.query("GRANT drift_role TO drift_user");
    server.query("CREATE ROLE quota_role");
    server.query("CREATE QUOTA drift_quota FOR INTERVAL 1 hour MAX queries = 100 TO quota_role");
    // the change is seen by the server itself
    let seen = server.query("SELECT value FROM system.server_settings WHERE name = 'max_concurrent_queries'");
    assert_eq!(seen.trim(), "150");
    collect("after.json");

    let (code, stdout, stderr) = diff(dir.path(), &["before.json", "after.json"]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("max_concurrent_queries: 100 -> 150"), "{stdout}");
    assert!(stdout.contains("drift_profile/max_threads: (absent) -> 3"), "{stdout}");
    assert!(stdout.contains("drift_user.auth: (absent) -> sha256_password"), "{stdout}");
    assert!(stdout.contains("drift_user.networks: (absent) -> `ip 10.0.0.0/8`"), "{stdout}");
    assert!(stdout.contains("drift_user: SELECT: (absent) -> granted"), "{stdout}");
    assert!(stdout.contains("drift_user: role drift_role: (absent) -> granted"), "{stdout}");
    assert!(stdout.contains("drift_quota: (absent) -> quota_role"), "{stdout}");
    assert!(stdout.contains("drift_quota.limited: (absent) -> yes"), "{stdout}");
    assert!(!stdout.contains("s3cr3t-pw") && !stdout.contains("drift-pw-123"), "{stdout}");

    let (code, json) = diff_json(dir.path(), &["before.json", "after.json"]);
    assert_eq!(code, 1);
    let server_settings = section(&json, "server settings");
    assert_eq!(server_settings.len(), 1, "{json:#}");
    assert_eq!(server_settings[0]["key"], "max_concurrent_queries");
    assert_eq!(section(&json, "version").len(), 0);
    let grants = section(&json, "grants");
    assert_eq!(grants.len(), 1, "{json:#}");
    assert_eq!(grants[0]["key"], "drift_user: SELECT");
    // the new user is reachable from other hosts under no quota: a finding new in B
    let new = json["findings"]["new"].as_array().unwrap();
    assert!(new.iter().any(|f| f["rule_id"] == "live-user-without-quota" && f["object"] == "drift_user"), "{json:#}");
    assert_eq!(json["findings"]["gone"].as_array().unwrap().len(), 0, "{json:#}");

    // the server against its own snapshot, live
    let (code, stdout, stderr) = diff(dir.path(), &["after.json", &dsn]);
    assert_eq!((code, stdout.as_str()), (0, ""), "{stderr}");
}

#[test]
fn a_config_tree_against_the_server_started_from_it() {
    let server = start_25_8(prepare);
    let dir = tempfile::tempdir().unwrap();
    let dsn = format!("http://auditor:s3cr3t-pw@127.0.0.1:{}", server.http_port);
    let config = server.config_path();
    let config = config.to_str().unwrap();

    let (code, stdout, stderr) = diff(dir.path(), &[config, &dsn]);
    assert_eq!((code, stdout.as_str()), (0, ""), "{stderr}");
    // what a config cannot give is said
    assert!(stderr.contains("not compared: grants"), "{stderr}");
    let (code, json) = diff_json(dir.path(), &[config, &dsn]);
    assert_eq!(code, 0, "{json:#}");
    let compared = |name: &str| {
        json["sections"].as_array().unwrap().iter().find(|s| s["section"] == name).unwrap()["compared"]
            .as_u64()
            .unwrap()
    };
    assert!(compared("server settings") >= 1, "{json:#}");
    assert!(compared("users") >= 6, "both users, their auth, networks and profile: {json:#}");
    assert_eq!(compared("clusters"), 1, "the cluster's shard, its replicas as system.clusters has them: {json:#}");

    // the tree changed, the server not restarted: the setting differs
    write(
        &server.dir.path().join("server/config.d/zz-change.xml"),
        "<clickhouse>\n    <max_concurrent_queries>150</max_concurrent_queries>\n</clickhouse>\n",
    );
    let (code, stdout, stderr) = diff(dir.path(), &[config, &dsn]);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(stdout.contains("max_concurrent_queries: 150 (config.d/zz-change.xml:2:5) -> 100"), "{stdout}");
}

#[test]
fn two_servers_read_at_once() {
    let first = start_25_8(prepare);
    let second = start_25_8(|dir| {
        prepare(dir);
        write(
            &dir.join("config.d/zz-more.xml"),
            "<clickhouse>\n    <max_concurrent_queries>300</max_concurrent_queries>\n</clickhouse>\n",
        );
    });
    let dir = tempfile::tempdir().unwrap();
    let dsn = |s: &support::LiveServer| format!("http://auditor@127.0.0.1:{}", s.http_port);
    write(&dir.path().join("pw"), "s3cr3t-pw\n");
    let (code, json) = diff_json(dir.path(), &[&dsn(&first), &dsn(&second), "--password-file", "pw"]);
    assert_eq!(code, 1, "{json:#}");
    let settings = section(&json, "server settings");
    assert_eq!(settings.len(), 1, "{json:#}");
    assert_eq!((settings[0]["a"]["value"].as_str(), settings[0]["b"]["value"].as_str()), (Some("100"), Some("300")));
    assert_eq!(section(&json, "users").len(), 0, "{json:#}");
    assert_eq!(section(&json, "grants").len(), 0, "{json:#}");
    assert_eq!(json["findings"]["new"].as_array().unwrap().len(), 0, "{json:#}");
    assert!(json["not_compared"].as_array().unwrap().is_empty(), "{json:#}");
    // one server, twice: equal
    let (code, stdout, stderr) = diff(dir.path(), &[&dsn(&first), &dsn(&first), "--password-file", "pw"]);
    assert_eq!((code, stdout.as_str()), (0, ""), "{stderr}");
    // one of them stopped: it could not be read
    second.stop();
    let (code, stdout, stderr) = diff(dir.path(), &[&dsn(&first), &dsn(&second), "--password-file", "pw"]);
    assert_eq!((code, stdout.as_str()), (3, ""), "{stderr}");
    assert!(stderr.contains("side B"), "{stderr}");
}

/// A 25.8 and a 26.9 server started from the same files: the versions differ; the server
/// settings and privileges only the newer release has are said once, not listed as drift.
#[test]
fn servers_of_two_releases_from_the_same_files() {
    let older = start_25_8(prepare);
    let newer = support::LiveServer::start_version(support::CLICKHOUSE_26_9, false, prepare);
    let dir = tempfile::tempdir().unwrap();
    let dsn = |s: &support::LiveServer| format!("http://auditor@127.0.0.1:{}", s.http_port);
    write(&dir.path().join("pw"), "s3cr3t-pw\n");
    let (code, json) = diff_json(dir.path(), &[&dsn(&older), &dsn(&newer), "--password-file", "pw"]);
    assert_eq!(code, 1, "{json:#}");
    let version = section(&json, "version");
    assert_eq!(
        (version[0]["a"]["value"].as_str(), version[0]["b"]["value"].as_str()),
        (Some("25.8.2.1"), Some("26.9.2.1"))
    );
    // ALL on *.* is granted alike: the privileges 26.9 added are the release's
    assert_eq!(section(&json, "grants").len(), 0, "{json:#}");
    let notes: Vec<(&str, &str)> = json["not_compared"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["section"].as_str().unwrap(), n["reason"].as_str().unwrap()))
        .collect();
    assert!(
        notes
            .iter()
            .any(|(section, why)| *section == "grants" && why.contains("that ClickHouse 25.8.2.1 does not have")),
        "{notes:?}"
    );
    // `logger.level` is a server setting of 26.9, not of 25.8
    let settings = section(&json, "server settings");
    assert!(settings.iter().all(|d| d["key"] != "logger.level"), "{json:#}");
    assert!(
        notes.iter().any(|(section, why)| *section == "server settings" && why.contains("logger.level")),
        "{notes:?}"
    );
    assert!(!json.to_string().contains("s3cr3t-pw"));
}
