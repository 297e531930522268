//! A cache disk routed by a storage policy, on the real 25.8 and 26.9 engines: 25.8's
//! system.storage_policies names the disk the cache wraps, 26.9 the cache disk itself; in both
//! the cache is in a policy and no finding says otherwise.

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
        let findings: Vec<&Value> = report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["rule_id"] == "live-cache-disk-not-in-policy")
            .collect();
        assert!(findings.is_empty(), "{package}: {findings:?}");
        let outcome = support::report_entry(&report, "outcomes", "live-cache-disk-not-in-policy").unwrap();
        assert_eq!(outcome["outcome"], "passed", "{package}");
        server.stop();
    }
}
