//! Every real-world config in tests/corpus/real-configs loads: no crash, and errors only
//! where the file really cannot work as written.

mod support;

use std::path::Path;

use chaudit::config::{self, ConfigError, LoadOptions};

fn options() -> LoadOptions {
    LoadOptions {
        default_include_from: config::DefaultInclude::None,
        env: Default::default(),
        env_origin: None,
        roots: Default::default(),
        base: None,
    }
}

/// Files that need something from outside them, and what chaudit must say about it.
fn expected_error(path: &Path) -> Option<&'static str> {
    match path.file_name()?.to_str()? {
        // include_from names /etc/clickhouse-server/include_from_source.xml: 26.9 refuses to start
        "config_incl.xml" => Some("include_from file"),
        // from_env variables the integration test sets; unset, the values are empty (a
        // warning: ClickHouse starts)
        "config_include_from_env.xml" => Some("INCLUDE_FROM_ENV"),
        "000-users_with_env_subst.xml" => Some("MAX_QUERY_SIZE"),
        _ => None,
    }
}

#[test]
fn every_corpus_file_loads_as_a_main_config() {
    let files = support::corpus_files();
    assert!(files.len() >= 50, "corpus not found ({} files)", files.len());
    let mut failures = Vec::new();
    for file in &files {
        let expected = expected_error(file);
        let errors: Vec<String> = match config::load(file, &options()) {
            Ok(loaded) => loaded
                .problems
                .iter()
                .filter(|p| expected.is_some() || !p.is_warning())
                .map(ToString::to_string)
                .collect(),
            Err(fatal) => vec![fatal.to_string()],
        };
        match (expected, errors.as_slice()) {
            (None, []) => {}
            (Some(want), got) if got.iter().any(|e| e.contains(want)) => {}
            (want, got) => failures.push(format!("{}: expected {want:?}, got {got:?}", file.display())),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn stock_config_merges_its_fragments_and_users() {
    let main = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus/real-configs/clickhouse-repo/programs/server/config.xml");
    let loaded = config::load(&main, &options()).unwrap();
    // config.d/path.xml replaces <path> with a relative one
    assert_eq!(loaded.server.root.child("path").unwrap().value(), "./");
    assert_eq!(loaded.server.files.len(), 5);
    // users.d/allow_only_from_localhost.xml replaces the default user's networks
    let users = loaded.users_root().unwrap();
    let networks = users.find("users/default/networks").unwrap();
    let ips: Vec<String> = networks.children_named("ip").map(|e| e.value()).collect();
    assert_eq!(ips, ["::1", "127.0.0.1"]);
    let location = loaded.locate(networks.origin);
    assert_eq!(location.file, "users.d/allow_only_from_localhost.xml");
    assert!(!loaded.problems.iter().any(|p| !p.is_warning()));
}

#[test]
fn env_and_include_files_resolve_when_present() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/corpus/real-configs/clickhouse-repo/tests/integration/test_config_substitutions/configs");
    let mut options = options();
    options.env.insert("MAX_QUERY_SIZE".into(), "424242".into());
    options.env.insert("MAX_THREADS".into(), "2".into());
    let loaded = config::load(&dir.join("000-users_with_env_subst.xml"), &options).unwrap();
    let value = loaded.server.root.find("profiles/default/max_query_size").unwrap();
    assert_eq!(value.value(), "424242");
    assert!(!loaded.problems.iter().any(|p| matches!(p, ConfigError::SubstitutionLeftEmpty { .. })));
}
