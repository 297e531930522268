//! docs/coverage.md, the table of chaudit's rules against ClickHouse's own checks and the
//! standard health checks, stays true: every rule id it names exists, and every rule of the
//! pack appears in it.

mod support;

use std::collections::BTreeSet;

use chaudit::rules::RulePack;

/// The rule ids of the table's "chaudit rule(s)" column (the fifth), in backticks.
fn named_rule_ids(table: &str) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for line in table.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| area ")) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").collect();
        assert_eq!(cells.len(), 6, "a row of docs/coverage.md has {} cells: {line}", cells.len());
        ids.extend(cells[4].split('`').skip(1).step_by(2).map(str::to_string));
    }
    ids
}

#[test]
fn the_coverage_table_names_every_rule_and_only_rules() {
    let table = std::fs::read_to_string(support::repo_root().join("docs/coverage.md")).unwrap();
    let named = named_rule_ids(&table);
    let pack = RulePack::load(true, &[]).unwrap_or_else(|e| panic!("{e:?}"));
    let rules: BTreeSet<String> = pack.rules.iter().map(|r| r.id.clone()).collect();
    let unknown: Vec<&String> = named.difference(&rules).collect();
    assert!(unknown.is_empty(), "docs/coverage.md names rules that do not exist: {unknown:?}");
    let missing: Vec<&String> = rules.difference(&named).collect();
    assert!(missing.is_empty(), "rules missing from docs/coverage.md: {missing:?}");
}
