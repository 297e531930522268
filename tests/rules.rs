//! The built-in rule pack: it loads, and every rule's fixtures behave (`chaudit rules test`).

mod support;

use chaudit::rules::RulePack;
use chaudit::ruletest;

#[test]
fn every_builtin_rule_passes_its_fixtures() {
    let pack = RulePack::load(false, &[support::repo_root().join("rules")])
        .unwrap_or_else(|errors| panic!("{}", errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")));
    let results = ruletest::run(&pack);
    let failures: Vec<String> = results
        .iter()
        .filter_map(|r| r.failure.as_ref().map(|f| format!("{} {} {}: {f}", r.rule_id, r.expect, r.fixture)))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // every rule proves itself both ways
    for rule in &pack.rules {
        let fires = rule.tests.iter().filter(|t| t.expect == chaudit::rules::schema::Expectation::Fires).count();
        let quiet = rule.tests.len() - fires;
        assert!(fires >= 1 && quiet >= 1, "{} needs a must-fire and a must-not-fire fixture", rule.id);
    }
}

#[test]
fn the_embedded_pack_is_the_rules_directory() {
    let embedded = RulePack::load(true, &[]).unwrap_or_else(|e| panic!("{e:?}"));
    let on_disk = RulePack::load(false, &[support::repo_root().join("rules")]).unwrap_or_else(|e| panic!("{e:?}"));
    let ids = |p: &RulePack| {
        let mut ids: Vec<String> = p.rules.iter().map(|r| r.id.clone()).collect();
        ids.sort();
        ids
    };
    assert_eq!(ids(&embedded), ids(&on_disk));
    // one rule per YAML file under rules/<area>/
    let files = support::files_under(&support::repo_root().join("rules"), &|_| true)
        .into_iter()
        .filter(|f| {
            f.extension().is_some_and(|e| e == "yaml")
                && f.parent().and_then(|d| d.parent()).is_some_and(|d| d.ends_with("rules"))
        })
        .count();
    assert_eq!(embedded.rules.len(), files);
}

/// Every config rule about a server that starts says which live rule judges the same objects
/// on the running server, or why none can: the parity harness (tests/parity_engine.rs) holds
/// each pair to it.
#[test]
fn every_config_rule_of_a_starting_server_names_its_live_twin() {
    use chaudit::facts::Source;
    use chaudit::rules::schema::Effect;
    let pack = RulePack::load(true, &[]).unwrap_or_else(|e| panic!("{e:?}"));
    let undeclared: Vec<&str> = pack
        .rules
        .iter()
        .filter(|r| r.sources == [Source::Config] && r.effect != Some(Effect::RefusesToStart))
        .filter(|r| r.live_twin.is_none())
        .map(|r| r.id.as_str())
        .collect();
    assert!(undeclared.is_empty(), "config rules without `live_twin`: {undeclared:?}");
    let named = pack.rules.iter().filter(|r| matches!(r.live_twin, Some(chaudit::rules::twin::LiveTwin::Rule(_))));
    assert_eq!(pack.live_twins.len(), named.count(), "{:?}", pack.live_twins);
}

/// A finding's message fits the report unabridged (mask::EXCERPT_CHARS, 240 characters) on
/// every fixture: a rule whose own words run longer is cut mid-sentence with "(N more bytes)".
/// Left out: a rule whose message quotes the server's own error text, bounded on purpose.
#[test]
fn no_fixture_finding_message_is_cut() {
    const QUOTES_SERVER_TEXT: &[&str] = &["mutation-failing"];
    let mut cut = Vec::new();
    for path in support::files_under(&support::repo_root().join("rules"), &|_| true) {
        if path.file_name().is_none_or(|n| n != "expected-findings.json") {
            continue;
        }
        let expected: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        for (rule, findings) in expected.as_object().unwrap() {
            for finding in findings.as_array().unwrap() {
                let message = finding["message"].as_str().unwrap_or_default();
                if message.ends_with(" more bytes)") && !QUOTES_SERVER_TEXT.contains(&rule.as_str()) {
                    cut.push(format!("{rule} ({}): {message}", path.display()));
                }
            }
        }
    }
    assert!(cut.is_empty(), "messages cut:\n{}", cut.join("\n"));
}

#[test]
fn every_start_up_check_is_read_by_a_rule_and_every_check_read_is_registered() {
    use chaudit::facts::startup::StartCheck;
    use std::collections::BTreeSet;
    let pack = RulePack::load(true, &[]).unwrap_or_else(|e| panic!("{e:?}"));
    let read: BTreeSet<StartCheck> = pack.rules.iter().flat_map(|r| r.reads().start_checks.iter().copied()).collect();
    let unread: Vec<&str> = StartCheck::all().filter(|c| !read.contains(c)).map(StartCheck::id).collect();
    assert!(unread.is_empty(), "start-up checks no rule reads: {unread:?}");
    // what the rule files compare a problem's check with, as written (the loader refuses a
    // text that is no check: this holds the walk that records them to the files)
    let mut written = BTreeSet::new();
    for r in pack.rules.iter().filter(|r| r.reads().fields.iter().any(|(_, f)| f == "start_problems")) {
        let text = std::fs::read_to_string(support::repo_root().join(&r.file)).unwrap();
        for (_, rest) in text.match_indices(".check == \"").map(|(i, _)| text.split_at(i + ".check == \"".len())) {
            let id = &rest[..rest.find('"').unwrap()];
            let check = StartCheck::parse(id).unwrap_or_else(|| panic!("{}: `{id}` is no start-up check", r.file));
            assert!(r.reads().start_checks.contains(&check), "{}: `{id}` not recorded", r.file);
            written.insert(check);
        }
    }
    assert_eq!(written, read);
}
