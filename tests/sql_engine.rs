//! Every SQL statement chaudit prints as a remedy or a next step is one ClickHouse accepts,
//! checked on the real ClickHouse 26.9: each rule with an `sql:` remediation is audited on
//! its must-fire fixtures, and each statement of the SQL it prints is
//! - run as it is when it only reads (SELECT, SHOW, WITH, DESCRIBE): the system tables and
//!   columns it names exist on 26.9; a table, database or cluster of the fixture that does
//!   not exist on the test server (UNKNOWN_TABLE, UNKNOWN_DATABASE, CLUSTER_DOESNT_EXIST) is
//!   the only error allowed;
//! - parsed by the server (`formatQuery`) when it changes something (ALTER, SYSTEM, KILL,
//!   OPTIMIZE, ...): the server's own parser accepts it. What the changes do is proven by the
//!   tests of each rule's claims, where they are applied and re-audited (live_security.rs:
//!   ALTER USER ... HOST LOCAL / MODIFY SETTING, CREATE QUOTA; health_live.rs: KILL MUTATION,
//!   SYSTEM START MERGES).

mod support;

use std::path::Path;
use std::process::Command;

use chaudit::rules::RulePack;
use chaudit::rules::schema::Expectation;

/// The statements of a remediation's SQL: `--` comment lines dropped, split on `;`.
fn statements(sql: &str) -> Vec<String> {
    let code: String = sql.lines().filter(|l| !l.trim_start().starts_with("--")).collect::<Vec<_>>().join("\n");
    code.split(';').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

/// The SQL the rule prints for each of its findings on the fixture.
fn printed_sql(rule: &str, fixture: &Path) -> Vec<String> {
    let snapshot = fixture.join("snapshot.json");
    let args: Vec<String> = if snapshot.is_file() {
        ["check", "--snapshot", snapshot.to_str().unwrap()].map(String::from).to_vec()
    } else {
        let Some(main) = ["config.xml", "config.yaml"].iter().map(|m| fixture.join(m)).find(|p| p.is_file()) else {
            return Vec::new();
        };
        vec!["--config".into(), main.to_str().unwrap().into()]
    };
    let mut command = Command::new(env!("CARGO_BIN_EXE_chaudit"));
    command.args(&args).args(["--select", rule, "--format", "json", "--fail-on", "never"]);
    let out = command.output().expect("run chaudit");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{rule} on {}: {e}: {}", fixture.display(), String::from_utf8_lossy(&out.stderr)));
    report["findings"]
        .as_array()
        .map(|findings| findings.iter().filter_map(|f| f["remediation"]["sql"].as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

fn reads(statement: &str) -> bool {
    let first = statement.split_whitespace().next().unwrap_or_default().to_ascii_uppercase();
    matches!(first.as_str(), "SELECT" | "SHOW" | "WITH" | "DESCRIBE" | "DESC" | "EXISTS")
}

#[test]
fn every_printed_sql_statement_is_accepted_by_clickhouse() {
    let server = support::LiveServer::start(|_| {});
    let pack = RulePack::load(false, &[support::repo_root().join("rules")]).expect("the rule pack loads");
    let (mut ran, mut parsed, mut failures) = (0, 0, Vec::new());
    for rule in pack.rules.iter().filter(|r| r.remediation.sql.is_some()) {
        for test in rule.tests.iter().filter(|t| t.expect == Expectation::Fires) {
            for sql in printed_sql(&rule.id, &test.fixture) {
                for statement in statements(&sql) {
                    let answer = if reads(&statement) {
                        ran += 1;
                        server.try_query(&statement)
                    } else {
                        parsed += 1;
                        let quoted = statement.replace('\\', "\\\\").replace('\'', "\\'");
                        server.try_query(&format!("SELECT formatQuery('{quoted}')"))
                    };
                    if let Err(error) = answer {
                        let missing_object = ["UNKNOWN_TABLE", "UNKNOWN_DATABASE", "CLUSTER_DOESNT_EXIST"]
                            .iter()
                            .any(|c| error.contains(c));
                        if !(reads(&statement) && missing_object) {
                            failures.push(format!("{}: {statement}\n  -> {}", rule.id, error.trim()));
                        }
                    }
                }
            }
        }
    }
    eprintln!("{ran} reading statement(s) run, {parsed} changing statement(s) parsed by ClickHouse 26.9");
    assert!(ran + parsed > 20, "too few statements checked: {ran} + {parsed}");
    assert!(failures.is_empty(), "{} statement(s) ClickHouse refuses:\n{}", failures.len(), failures.join("\n"));
}
