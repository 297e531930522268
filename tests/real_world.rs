//! chaudit on config trees written by others (tests/engine-cases whose every file comes from
//! a public repository or package, see tests/engine-cases/SOURCES), judged against the real
//! clickhouse-server 25.8: tests/engine-cases/REAL-WORLD.json records, for each tree, whether
//! the server starts on it (scripts/engine-preprocess.py --start) and why not, and every
//! finding chaudit makes, each rule with the reason its findings are true there.
//!
//! Asserted: chaudit makes exactly the recorded findings (a new finding must be judged and
//! recorded, so no false finding slips in), every rule that fires has its reason, and every
//! refusal caused by the config (not by the test machine: no Keeper in the engine build, no
//! DNS, no TLS key files) is found by a recorded rule or a load error, or listed as a miss.
//! `config show` against the engine's preprocessed configs of the same trees is
//! tests/differential_engine.rs.

mod support;

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

fn record() -> Value {
    let path = support::repo_root().join("tests/engine-cases/REAL-WORLD.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The case's `env` file (KEY=VALUE lines): the only environment its from_env sees.
fn case_env(case: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(case.join("env"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
        .collect()
}

/// `rule file:line` of every finding chaudit makes on the tree, and its exit code.
fn findings(case: &Path) -> (BTreeSet<String>, i32) {
    let config = case.join("tree/config.xml");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_chaudit"))
        .args(["--config", config.to_str().unwrap(), "--format", "json", "--fail-on", "never"])
        .env_clear()
        .envs(case_env(case))
        .output()
        .expect("run chaudit");
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{}: not JSON ({e}): {}", case.display(), String::from_utf8_lossy(&out.stderr)));
    let found = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let at = &f["location"];
            let at =
                if at.is_null() { String::new() } else { format!(" {}:{}", at["file"].as_str().unwrap(), at["line"]) };
            format!("{}{at}", f["rule_id"].as_str().unwrap())
        })
        .collect();
    (found, out.status.code().unwrap_or(-1))
}

#[test]
fn no_false_finding_and_every_refusal_found_on_configs_written_by_others() {
    let record = record();
    let reasons = record["reasons"].as_object().unwrap();
    let cases = record["cases"].as_object().unwrap();
    assert!(cases.len() >= 30, "{} trees", cases.len());
    let mut failures = Vec::new();
    let mut missed = Vec::new();
    for (name, case) in cases {
        let dir = support::repo_root().join("tests/engine-cases").join(name);
        let (found, code) = findings(&dir);
        let recorded: BTreeSet<String> =
            case["findings"].as_array().unwrap().iter().map(|f| f.as_str().unwrap().to_string()).collect();
        for new in found.difference(&recorded) {
            failures.push(format!("{name}: unjudged finding {new}"));
        }
        for gone in recorded.difference(&found) {
            failures.push(format!("{name}: recorded finding not made: {gone}"));
        }
        for rule in found.iter().map(|f| f.split(' ').next().unwrap()) {
            if !reasons.contains_key(rule) {
                failures.push(format!("{name}: no reason recorded why {rule} is true"));
            }
        }
        if case["engine"]["started"] == false && case["refusal"] == "config" {
            match case["found_by"].as_str().unwrap_or_default() {
                "load error" if code != 0 => {}
                by if by.starts_with("missed") => missed.push(format!("{name}: {by}")),
                rule if found.iter().any(|f| f.split(' ').next() == Some(rule)) => {}
                by => failures.push(format!("{name}: refused by the engine, not found (found_by {by:?}, exit {code})")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // the refusals chaudit does not find yet, named so that a fix must update the record
    let known_misses = record["known_misses"].as_u64().unwrap() as usize;
    assert_eq!(missed.len(), known_misses, "{}", missed.join("\n"));
}
