//! The restart advice of the fixes, proven on a running clickhouse-server 25.8: a fix file
//! written beside its config while it runs is applied without a restart when it changes a
//! profile (users.d/), a server setting the catalog marks `changeable_without_restart = Yes`,
//! or adds a disk (config.d/), and chaudit's removal of an element no server code reads is
//! reloaded and says no restart; a new storage policy is not (its fixes say restart). After a
//! restart every config fix still holds, the policy is there, and a system log's TTL given in
//! the config (the only TTL fix that lasts) is on the table the server recreates, and not
//! before: a reload leaves the system logs as they are.

mod support;

use std::time::{Duration, Instant};

const USERS: &str = "<clickhouse><profiles><default/></profiles><users><default><password/>\
    <networks><ip>::/0</ip></networks><profile>default</profile><access_management>1</access_management>\
    </default></users><quotas><default/></quotas></clickhouse>";

/// Whether `holds` comes true within 30 s (asked every half second).
fn comes_true(holds: impl Fn() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        if holds() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    false
}

fn eventually(server: &support::LiveServer, sql: &str, expected: &str) -> bool {
    comes_true(|| server.query(sql).trim() == expected)
}

/// The config the server holds now, as it writes it to `<path>/preprocessed_configs/` on start
/// and on every reload.
fn preprocessed(server: &support::LiveServer) -> String {
    let file = server.dir.path().join("server/data/preprocessed_configs/config.xml");
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// chaudit's findings about `<app_metric_threshold>` in the running server's config tree.
fn unread_element_findings(server: &support::LiveServer) -> Vec<serde_json::Value> {
    let config = server.config_path();
    let args = ["--config", config.to_str().unwrap(), "--select", "unknown-server-setting"];
    let (_, out, err) =
        support::chaudit(server.dir.path(), &[&args[..], &["--format", "json", "--fail-on", "never"]].concat());
    let report: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    support::findings_of(&report, "unknown-server-setting")
        .into_iter()
        .filter(|f| f["object"] == "app_metric_threshold")
        .cloned()
        .collect()
}

fn unread_element_finding(server: &support::LiveServer) -> serde_json::Value {
    let found = unread_element_findings(server);
    assert_eq!(found.len(), 1, "{found:?}");
    found[0].clone()
}

#[test]
fn profile_server_setting_and_disk_fixes_reload_but_a_new_policy_waits_for_a_restart() {
    let mut server = support::LiveServer::start_version(support::CLICKHOUSE_25_8, false, |dir| {
        std::fs::create_dir_all(dir.join("config.d")).unwrap();
        std::fs::write(
            dir.join("config.d/users.xml"),
            "<clickhouse><users_config>users.xml</users_config></clickhouse>",
        )
        .unwrap();
        std::fs::write(dir.join("users.xml"), USERS).unwrap();
        std::fs::write(
            dir.join("config.d/app.xml"),
            "<clickhouse><app_metric_threshold>5</app_metric_threshold></clickhouse>",
        )
        .unwrap();
    });
    let dir = server.dir.path().join("server");
    let catalog = chaudit::facts::catalog::for_version("25.8".parse().unwrap()).unwrap();
    assert_eq!(catalog.needs_restart("max_concurrent_queries"), Some(false));

    let unread = unread_element_finding(&server);
    assert_eq!(unread["remediation"]["restart"], false, "{unread}");
    assert!(preprocessed(&server).contains("<app_metric_threshold>"), "the server holds the element at start");
    let fragment = unread["remediation"]["fragments"][0]["xml"].as_str().unwrap();
    std::fs::write(dir.join("config.d/zz-unread-fix.xml"), fragment).unwrap();

    std::fs::create_dir_all(dir.join("users.d")).unwrap();
    std::fs::write(
        dir.join("users.d/zz-chaudit-fix.xml"),
        "<clickhouse><profiles><default><max_threads>3</max_threads></default></profiles></clickhouse>",
    )
    .unwrap();
    let disk = dir.join("fixdisk");
    std::fs::create_dir_all(&disk).unwrap();
    std::fs::write(
        dir.join("config.d/zz-chaudit-fix.xml"),
        format!(
            "<clickhouse><max_concurrent_queries>77</max_concurrent_queries>\
             <storage_configuration><disks><fixdisk><path>{}/</path></fixdisk></disks>\
             <policies><fix_policy><volumes><main><disk>fixdisk</disk></main></volumes></fix_policy></policies>\
             </storage_configuration></clickhouse>",
            disk.display()
        ),
    )
    .unwrap();
    assert!(eventually(&server, "SELECT getSetting('max_threads')", "3"), "the profile change was not reloaded");
    assert!(
        eventually(&server, "SELECT value FROM system.server_settings WHERE name = 'max_concurrent_queries'", "77"),
        "max_concurrent_queries was not reloaded"
    );
    assert!(
        eventually(&server, "SELECT count() FROM system.disks WHERE name = 'fixdisk'", "1"),
        "the new disk was not reloaded"
    );
    // the removal is reloaded like the rest (the server rewrites its preprocessed config) and
    // the re-audit no longer finds the element
    assert!(comes_true(|| !preprocessed(&server).contains("<app_metric_threshold>")), "the removal was not reloaded");
    assert!(unread_element_findings(&server).is_empty(), "the re-audit still finds the element");
    // the same reload that added the disk leaves the new policy out: a policy fix needs a restart
    assert_eq!(
        server.query("SELECT count() FROM system.storage_policies WHERE policy_name = 'fix_policy'").trim(),
        "0"
    );

    // the TTL of system.part_log as chaudit's fix gives it: in the config (an ALTER ... MODIFY
    // TTL is dropped when the server recreates the table from the config at its next start)
    server.query("SYSTEM FLUSH LOGS");
    let before = server.query("SHOW CREATE TABLE system.part_log");
    assert!(!before.contains("toIntervalDay(30)"), "{before}");
    std::fs::write(
        dir.join("config.d/zz-ttl-fix.xml"),
        "<clickhouse><part_log><ttl>event_date + INTERVAL 30 DAY DELETE</ttl></part_log>\
         <max_table_size_to_drop>12345</max_table_size_to_drop></clickhouse>",
    )
    .unwrap();
    // the reload that applies the fragment's server setting leaves the log as it was: a system
    // log's section needs a restart (what the system log rules say)
    assert!(
        eventually(&server, "SELECT value FROM system.server_settings WHERE name = 'max_table_size_to_drop'", "12345"),
        "the fragment was not reloaded"
    );
    server.query("SYSTEM FLUSH LOGS");
    let reloaded = server.query("SHOW CREATE TABLE system.part_log");
    assert!(!reloaded.contains("toIntervalDay(30)"), "{reloaded}");
    server.restart();
    assert_eq!(
        server.query("SELECT getSetting('max_threads')").trim(),
        "3",
        "the profile fix did not survive the restart"
    );
    assert_eq!(
        server.query("SELECT value FROM system.server_settings WHERE name = 'max_concurrent_queries'").trim(),
        "77",
        "the server setting fix did not survive the restart"
    );
    assert_eq!(
        server.query("SELECT count() FROM system.storage_policies WHERE policy_name = 'fix_policy'").trim(),
        "1"
    );
    server.query("CREATE TABLE default.ttl_probe (x UInt8) ENGINE = MergeTree ORDER BY x");
    server.query("INSERT INTO default.ttl_probe VALUES (1)");
    server.query("SYSTEM FLUSH LOGS");
    let part_log = server.query("SHOW CREATE TABLE system.part_log");
    assert!(part_log.contains("TTL event_date + toIntervalDay(30)"), "{part_log}");
}
