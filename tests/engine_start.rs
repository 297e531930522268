//! The start-up harness itself, on the real clickhouse-server 25.8: a tree it refuses is
//! reported refused with the server's own reason, a sound tree is reported started, and a
//! tree that would write outside the namespace's private directories is not run at all.

mod support;

#[test]
fn a_sound_tree_starts_and_a_query_setting_at_its_root_stops_it() {
    let sound = support::repo_root().join("tests/engine-cases/all-programs-server-d/tree");
    let started = support::engine_start(&sound);
    assert!(started.started, "{started:?}");

    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    support::copy_tree(&sound, &tree);
    std::fs::write(tree.join("config.d/zz-root.xml"), "<clickhouse><max_threads>4</max_threads></clickhouse>").unwrap();
    let refused = support::engine_start(&tree);
    assert!(!refused.started, "{refused:?}");
    assert_eq!(refused.exit_status, Some(137), "UNKNOWN_ELEMENT_IN_CONFIG: {refused:?}");
    assert!(refused.errors.iter().any(|e| e.contains("appeared at top level")), "{refused:?}");
}

/// A disk path outside /var/lib, /var/log and /tmp: the server would create it on the machine
/// running the tests, so the harness does not start it.
#[test]
fn a_tree_writing_outside_the_private_directories_is_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    support::copy_tree(&support::repo_root().join("rules/startup/disks-same-path/starts"), &tree);
    let outside = "/chaudit-harness-outside-disk/";
    std::fs::write(
        tree.join("config.d/zz-outside.xml"),
        format!("<clickhouse><storage_configuration><disks><far><path>{outside}</path></far></disks></storage_configuration></clickhouse>"),
    )
    .unwrap();
    let verdict = support::engine_start(&tree);
    assert!(!verdict.started && verdict.errors.iter().any(|e| e.contains("harness: not run")), "{verdict:?}");
    assert!(!std::path::Path::new(outside).exists());
}
