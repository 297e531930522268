//! A cache disk routed by a storage policy, on the real 25.8 and 26.9 engines: 25.8's
//! system.storage_policies names the disk the cache wraps, 26.9 the cache disk itself; in both
//! the cache is in a policy and no finding says otherwise. And the fix of a cache disk in no
//! policy, on 26.9 (which refuses to switch a table to a policy without its old disks): the
//! policy the table is on gets the cache disk in place of the disk it wraps, and after the
//! restart the table's parts are there and a repeated read comes from the cache.

mod support;

use std::path::Path;

use serde_json::Value;

const STORAGE: &str = r#"<clickhouse>
    <storage_configuration>
        <disks>
            <local_store><type>local_blob_storage</type><path>local_store/</path></local_store>
            <store_cache>
                <type>cache</type>
                <disk>local_store</disk>
                <path>store_cache/</path>
                <max_size>100Mi</max_size>
            </store_cache>
        </disks>
        <policies>
            <cached>
                <volumes><main><disk>store_cache</disk></main></volumes>
            </cached>
        </policies>
    </storage_configuration>
</clickhouse>
"#;

fn prepare(dir: &Path) {
    std::fs::create_dir_all(dir.join("config.d")).unwrap();
    std::fs::write(dir.join("config.d/storage.xml"), STORAGE).unwrap();
}

fn audit(server: &support::LiveServer) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let dsn = format!("http://default@127.0.0.1:{}", server.http_port);
    let (code, stdout, stderr) = support::chaudit(
        dir.path(),
        &["--dsn", &dsn, "--fail-on", "never", "--format", "json", "--select", "live-cache-disk-not-in-policy"],
    );
    assert_eq!(code, 0, "{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}\n{stderr}"))
}

#[test]
fn a_routed_cache_disk_is_in_a_policy_on_25_8_and_26_9() {
    for (package, listed) in [(support::CLICKHOUSE_25_8, "local_store"), (support::CLICKHOUSE_26_9, "store_cache")] {
        let server = support::LiveServer::start_version(package, false, prepare);
        let disks = server.query("SELECT arrayJoin(disks) FROM system.storage_policies WHERE policy_name = 'cached'");
        assert_eq!(disks.trim(), listed, "{package}: system.storage_policies");
        let report = audit(&server);
        let findings = support::findings_of(&report, "live-cache-disk-not-in-policy");
        assert!(findings.is_empty(), "{package}: {findings:?}");
        let outcome = support::report_entry(&report, "outcomes", "live-cache-disk-not-in-policy").unwrap();
        assert_eq!(outcome["outcome"], "passed", "{package}");
        server.stop();
    }
}

#[test]
fn the_fix_routes_an_existing_tables_policy_through_the_cache_on_26_9() {
    let unrouted = STORAGE.replace(
        "<cached>\n                <volumes><main><disk>store_cache</disk></main></volumes>\n            </cached>",
        "<data>\n                <volumes><main><disk>local_store</disk></main></volumes>\n            </data>",
    );
    assert!(unrouted.contains("<data>"));
    let mut server = support::LiveServer::start(|dir: &Path| {
        std::fs::create_dir_all(dir.join("config.d")).unwrap();
        std::fs::write(dir.join("config.d/storage.xml"), &unrouted).unwrap();
    });
    server.query(
        "CREATE TABLE default.t (k UInt64, v String) ENGINE = MergeTree ORDER BY k SETTINGS storage_policy = 'data'",
    );
    server.query("INSERT INTO default.t SELECT number, toString(number) FROM numbers(100000)");
    // another policy is no way for this table: 26.9 refuses to switch it to one without its
    // volumes and disks (a policy of the cache disk alone: "shall contain disks")
    let refused = server
        .try_query("ALTER TABLE default.t MODIFY SETTING storage_policy = 'default'")
        .expect_err("a policy without the table's disk");
    assert!(refused.contains("shall contain volumes of the old storage policy"), "{refused}");

    let config = server.config_path();
    let (code, stdout, stderr) = support::chaudit(
        config.parent().unwrap(),
        &["fix", "--config", config.to_str().unwrap(), "--select", "cache-disk-not-in-policy"],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    server.restart();
    assert_eq!(
        server.query("SELECT arrayJoin(disks) FROM system.storage_policies WHERE policy_name = 'data'").trim(),
        "store_cache"
    );
    assert_eq!(server.query("SELECT count() FROM default.t").trim(), "100000", "the parts are found through the cache");
    for _ in 0..2 {
        server.query("SELECT sum(length(v)) FROM default.t FORMAT Null");
    }
    server.query("SYSTEM FLUSH LOGS");
    let reads = server.query(
        "SELECT ProfileEvents['CachedReadBufferReadFromCacheBytes'], ProfileEvents['CachedReadBufferReadFromSourceBytes'] \
         FROM system.query_log WHERE query LIKE 'SELECT sum(length(v))%' AND type = 'QueryFinish' \
         ORDER BY event_time_microseconds DESC LIMIT 1",
    );
    let (cache, source) = reads.trim().split_once('\t').unwrap();
    assert!(cache.parse::<u64>().unwrap() > 0 && source == "0", "the repeated read: {reads}");
    server.stop();
}
