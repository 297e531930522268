//! A running ClickHouse server reads its config.d exactly as chaudit merges it.

mod support;

use chaudit::config::{self, LoadOptions};

#[test]
fn a_running_server_reports_the_settings_chaudit_merges() {
    let case = support::repo_root().join("tests/merge-cases/confd-vs-configd");
    let server = support::LiveServer::start(|dir| {
        for sub in ["conf.d", "config.d"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
            std::fs::copy(case.join(sub).join("limits.xml"), dir.join(sub).join("limits.xml")).unwrap();
        }
    });
    let loaded = config::load(&server.config_path(), &LoadOptions::default()).unwrap();
    let names = ["max_table_size_to_drop", "max_partition_size_to_drop", "max_table_num_to_warn"];
    let reported = server.query(&format!(
        "SELECT name, value FROM system.server_settings WHERE name IN ({}) ORDER BY name",
        names.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(",")
    ));
    let mut expected: Vec<String> =
        names.iter().map(|n| format!("{n}\t{}", loaded.server.root.child(n).expect(n).value())).collect();
    expected.sort();
    assert_eq!(reported.lines().collect::<Vec<_>>(), expected);
    // the port chaudit reads from the launcher's config.xml is the one that answered
    assert_eq!(loaded.server.root.child("http_port").unwrap().value(), server.http_port.to_string());
    // config.d applies after conf.d
    assert!(reported.contains("max_table_size_to_drop\t500"));
}
