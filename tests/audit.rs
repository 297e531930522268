//! Offline audits of real configurations: the findings an operator would agree with, and
//! no others.

mod support;

use std::path::Path;

use chaudit::config::{self, LoadOptions};
use chaudit::eval::{OutcomeKind, Selection, evaluate};
use chaudit::facts;
use chaudit::rules::RulePack;
use chaudit::rules::schema::Severity;

fn options() -> LoadOptions {
    LoadOptions { default_include_from: chaudit::config::DefaultInclude::None, env: Default::default() }
}

fn audit(main: &Path) -> chaudit::eval::Evaluation {
    let loaded = config::load(main, &options()).unwrap_or_else(|e| panic!("{}: {e}", main.display()));
    let facts = facts::config::facts(&loaded, main.display().to_string(), None);
    // every fact the config gives is in the catalog rules are checked against
    if let Err(problems) = facts::schema::check_document(&facts.document) {
        panic!("{}: facts not in src/facts/schema.txt: {problems:?}", main.display());
    }
    evaluate(&RulePack::load(true, &[]).unwrap_or_else(|e| panic!("{e:?}")), &facts, &Selection::default())
}

/// The findings at or above medium (the stock configs' system logs have no TTL: low
/// findings, checked by [`only_log_retention_is_low`]).
fn serious(evaluation: &chaudit::eval::Evaluation) -> Vec<&chaudit::eval::Finding> {
    evaluation.findings.iter().filter(|f| f.severity >= Severity::Medium).collect()
}

fn only_log_retention_is_low(evaluation: &chaudit::eval::Evaluation) {
    for f in evaluation.findings.iter().filter(|f| f.severity < Severity::Medium) {
        assert!(["query-log-without-ttl", "system-log-without-ttl"].contains(&f.rule_id.as_str()), "{}", f.rule_id);
    }
}

fn stock() -> std::path::PathBuf {
    support::repo_root().join("tests/corpus/real-configs/clickhouse-repo/programs/server")
}

#[test]
fn stock_config_and_users_xml_yield_only_the_open_default_user() {
    let dir = tempfile::tempdir().unwrap();
    for f in ["config.xml", "users.xml"] {
        std::fs::copy(stock().join(f), dir.path().join(f)).unwrap();
    }
    let evaluation = audit(&dir.path().join("config.xml"));
    only_log_retention_is_low(&evaluation);
    let found: Vec<(String, String)> = serious(&evaluation)
        .into_iter()
        .map(|f| (f.rule_id.clone(), f.location.as_ref().map_or(String::new(), |l| format!("{}:{}", l.file, l.line))))
        .collect();
    assert_eq!(found, [("default-user-open".to_string(), "users.xml:55".to_string())]);
    assert!(evaluation.outcomes.iter().all(|o| o.outcome != OutcomeKind::Errored));
}

#[test]
fn stock_tree_with_its_users_d_keeps_default_local_but_managing_access() {
    // users.d/allow_only_from_localhost.xml closes the networks; access_management stays.
    // The development tree's config.d/users.xml holds <profiles> and <users>, which a
    // server reading users.xml ignores
    let evaluation = audit(&stock().join("config.xml"));
    only_log_retention_is_low(&evaluation);
    let ids: Vec<&str> = serious(&evaluation).iter().map(|f| f.rule_id.as_str()).collect();
    assert_eq!(
        ids,
        ["users-section-in-server-config", "users-section-in-server-config", "default-user-access-management"]
    );
}

#[test]
fn debian_stock_yields_only_the_open_default_user() {
    let main = support::repo_root().join("tests/corpus/real-configs/debian-18.16/etc/clickhouse-server/config.xml");
    let evaluation = audit(&main);
    only_log_retention_is_low(&evaluation);
    let ids: Vec<&str> = serious(&evaluation).iter().map(|f| f.rule_id.as_str()).collect();
    assert_eq!(ids, ["default-user-open"]);
}

#[test]
fn every_corpus_file_audits_without_a_broken_rule() {
    let files: Vec<_> =
        support::corpus_files().into_iter().filter(|p| p.file_name().is_some_and(|n| n != "config_incl.xml")).collect();
    assert!(files.len() > 50);
    for file in files {
        let evaluation = audit(&file);
        let errored: Vec<_> = evaluation.outcomes.iter().filter(|o| o.outcome == OutcomeKind::Errored).collect();
        assert!(errored.is_empty(), "{}: {errored:?}", file.display());
    }
}

#[test]
fn the_bundled_example_reports_ranked_findings() {
    let evaluation = audit(&support::repo_root().join("examples/production/config.xml"));
    let ids: Vec<&str> = evaluation.findings.iter().map(|f| f.rule_id.as_str()).collect();
    assert_eq!(ids.first(), Some(&"default-user-open"), "{ids:?}");
    for expected in ["analyzer-disabled", "plaintext-password", "query-condition-cache-disabled"] {
        assert!(ids.contains(&expected), "{expected} missing from {ids:?}");
    }
    let ranks: Vec<usize> = evaluation.findings.iter().map(|f| f.rank).collect();
    assert_eq!(ranks, (1..=ranks.len()).collect::<Vec<_>>());
}
