//! Security of every user of the users config, offline: a passwordless user open to the world
//! is critical whatever its name, and a healthy config (one admin with a password hash,
//! loopback only) gives no security finding and starts on the real 25.8 server.

mod support;

use std::path::{Path, PathBuf};

use chaudit::config::{self, DefaultInclude, LoadOptions};
use chaudit::eval::{Selection, evaluate};
use chaudit::facts;
use chaudit::rules::RulePack;
use chaudit::rules::schema::Severity;

fn case(name: &str) -> PathBuf {
    support::repo_root().join("tests/security-cases").join(name)
}

fn audit(main: &Path) -> chaudit::eval::Evaluation {
    let options = LoadOptions {
        default_include_from: DefaultInclude::None,
        env: Default::default(),
        env_origin: None,
        roots: Default::default(),
        base: None,
    };
    let loaded = config::load(main, &options).unwrap();
    let facts = facts::config::facts(&loaded, main.display().to_string(), None);
    evaluate(&RulePack::load(true, &[]).unwrap(), &facts, &Selection::default())
}

/// The rules of the security and startup areas, by id.
fn rules_of(area: &str) -> Vec<String> {
    std::fs::read_dir(support::repo_root().join("rules").join(area))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.strip_suffix(".yaml").map(str::to_string))
        .collect()
}

#[test]
fn a_healthy_config_gives_no_security_or_startup_finding_and_starts() {
    let tree = case("healthy");
    let evaluation = audit(&tree.join("config.xml"));
    let watched: Vec<String> = rules_of("security").into_iter().chain(rules_of("startup")).collect();
    let found: Vec<&str> =
        evaluation.findings.iter().map(|f| f.rule_id.as_str()).filter(|id| watched.iter().any(|w| w == id)).collect();
    assert!(found.is_empty(), "{found:?}");
    let started = support::engine_start(&tree);
    assert!(started.started, "{started:?}");
}

#[test]
fn every_passwordless_user_open_to_the_world_is_critical() {
    let tree = case("open");
    let evaluation = audit(&tree.join("config.xml"));
    let open: Vec<&chaudit::eval::Finding> =
        evaluation.findings.iter().filter(|f| f.rule_id == "passwordless-user-open").collect();
    assert_eq!(open.len(), 2, "{:?}", evaluation.findings.iter().map(|f| &f.rule_id).collect::<Vec<_>>());
    assert!(open.iter().all(|f| f.severity == Severity::Critical));
    assert!(open.iter().any(|f| f.message.contains("`app`") && f.message.contains("access_management=1")));
    assert!(open.iter().any(|f| f.message.contains("`bi`")));
    // the tree is one the server runs: the finding is about a server that starts
    let started = support::engine_start(&tree);
    assert!(started.started, "{started:?}");
}
