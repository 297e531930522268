//! `chaudit rules test`: every rule's fixtures, each a config tree that must make the rule
//! fire (at the expected file:line) or must leave it quiet. What a firing case shows its
//! users (each finding's message, location and evidence) is kept beside the fixture in
//! `expected-findings.json` and compared on every run, so a wrong formula or a mangled
//! message fails a test; `CHAUDIT_FIXTURES=overwrite` writes it anew (check the diff).

use std::path::Path;

use crate::config::{self, LoadOptions};
use crate::eval::{OutcomeKind, Variables, evaluate_rule};
use crate::facts;
use crate::rules::schema::Expectation;
use crate::rules::{Rule, RulePack};

#[derive(Debug)]
pub struct CaseResult {
    pub rule_id: String,
    pub fixture: String,
    pub expect: &'static str,
    /// None = passed; otherwise what went wrong.
    pub failure: Option<String>,
}

/// Runs the fixtures of every rule in the pack.
/// The verdict of a fixture run: failing when a fixture failed.
pub fn status(results: &[CaseResult]) -> crate::verdict::Status {
    crate::verdict::of_counts(results.iter().filter(|r| r.failure.is_some()).count(), 0)
}

pub fn run(pack: &RulePack) -> Vec<CaseResult> {
    pack.rules.iter().flat_map(run_rule).collect()
}

fn run_rule(rule: &Rule) -> Vec<CaseResult> {
    if rule.tests.is_empty() {
        return vec![CaseResult {
            rule_id: rule.id.clone(),
            fixture: "-".into(),
            expect: "tests",
            failure: Some("the rule has no test fixtures".into()),
        }];
    }
    rule.tests
        .iter()
        .map(|test| {
            let expect = match test.expect {
                Expectation::Fires => "fires",
                Expectation::Quiet => "quiet",
                Expectation::Outcome(kind) => crate::report::outcome_name(kind),
            };
            CaseResult {
                rule_id: rule.id.clone(),
                fixture: test.fixture.display().to_string(),
                expect,
                failure: check(rule, &test.fixture, test.expect, test.at.as_deref(), test.version).err(),
            }
        })
        .collect()
}

fn check(
    rule: &Rule,
    fixture: &Path,
    expect: Expectation,
    at: Option<&str>,
    version: Option<crate::version::Version>,
) -> Result<(), String> {
    let facts = fixture_facts(rule, fixture, version)?;
    let (outcome, findings) = evaluate_rule(rule, &facts, &Variables::of(&facts));
    if expect == Expectation::Fires
        && let Some(shared) = shared_object(&findings)
    {
        return Err(shared);
    }
    match (expect, outcome.outcome) {
        (_, OutcomeKind::Errored) => Err(format!("the rule errored: {}", outcome.reason.unwrap_or_default())),
        (Expectation::Fires, OutcomeKind::Fired) => match at {
            None => expected_findings(rule, fixture, &findings),
            Some(at) => {
                let got: Vec<String> = findings
                    .iter()
                    .filter_map(|f| f.location.as_ref())
                    .map(|l| format!("{}:{}", l.file, l.line))
                    .collect();
                if !got.iter().any(|g| g == at) {
                    return Err(format!("fired at {got:?}, expected {at}"));
                }
                expected_findings(rule, fixture, &findings)
            }
        },
        (Expectation::Fires, other) => {
            Err(format!("expected to fire, got {other:?} {}", outcome.reason.unwrap_or_default()))
        }
        (Expectation::Quiet, OutcomeKind::Fired) => {
            let messages: Vec<&str> = findings.iter().map(|f| f.message.as_str()).collect();
            Err(format!("expected quiet, fired: {messages:?}"))
        }
        (Expectation::Quiet, OutcomeKind::Passed) => Ok(()),
        // a quiet case that did not judge proves nothing: it says which outcome it expects
        (Expectation::Quiet, other) => Err(format!(
            "expected passed, got {} ({}); a case meant to stay unjudged says `outcome: {}`",
            crate::report::outcome_name(other),
            outcome.reason.unwrap_or_default(),
            crate::report::outcome_name(other)
        )),
        (Expectation::Outcome(want), got) if want == got => Ok(()),
        (Expectation::Outcome(want), got) => Err(format!(
            "expected {}, got {} {}",
            crate::report::outcome_name(want),
            crate::report::outcome_name(got),
            outcome.reason.unwrap_or_default()
        )),
    }
}

/// Two findings of the fixture about one object in one file: the rule's object does not
/// tell them apart, and their fingerprints would fall back on lines and messages.
fn shared_object(findings: &[crate::eval::Finding]) -> Option<String> {
    let mut seen = std::collections::BTreeSet::new();
    findings.iter().find_map(|f| {
        let file = f.location.as_ref().map_or("", |l| l.file.as_str());
        (!seen.insert((f.object.as_deref(), file))).then(|| {
            format!(
                "two findings about {} in `{file}`: `object:` must tell them apart (the rule, object and file are the fingerprint)",
                f.object.as_deref().map_or_else(|| "no object".to_string(), |o| format!("`{o}`"))
            )
        })
    })
}

/// The file beside a fixture that holds what its firing cases show, per rule.
const EXPECTED: &str = "expected-findings.json";

/// The findings as users see them (message masked and bounded, location, evidence),
/// compared with the fixture's [`EXPECTED`] file, or written there with
/// `CHAUDIT_FIXTURES=overwrite`.
fn expected_findings(rule: &Rule, fixture: &Path, findings: &[crate::eval::Finding]) -> Result<(), String> {
    let shown: Vec<serde_json::Value> = findings
        .iter()
        .map(|f| {
            serde_json::json!({
                "message": crate::mask::shown(&f.message),
                "object": f.object,
                "location": f.location.as_ref().map(ToString::to_string),
                "evidence": f.evidence,
            })
        })
        .collect();
    let path = fixture.join(EXPECTED);
    let mut expected: serde_json::Map<String, serde_json::Value> = match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text)
            .map_err(|e| crate::regular_file::json_error(&path, "an expected-findings file", &e))?,
        Err(_) => serde_json::Map::new(),
    };
    let got = serde_json::Value::Array(shown);
    if std::env::var("CHAUDIT_FIXTURES").is_ok_and(|v| v == "overwrite") {
        expected.insert(rule.id.clone(), got);
        let text = serde_json::to_string_pretty(&expected).map_err(|e| e.to_string())? + "\n";
        return std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()));
    }
    match expected.get(&rule.id) {
        Some(want) if *want == got => Ok(()),
        Some(want) => Err(format!(
            "the findings differ from {} (CHAUDIT_FIXTURES=overwrite rewrites it):\n  expected {}\n  got      {}",
            path.display(),
            want,
            got
        )),
        None => Err(format!(
            "no expected findings of this rule in {} (CHAUDIT_FIXTURES=overwrite writes them)",
            path.display()
        )),
    }
}

/// A fixture's facts: its config tree (config.xml or config.yaml) and/or a recorded
/// snapshot of live facts (snapshot.json, as written by `chaudit collect`), built as an
/// audit builds them: only the config facts the rule reads.
fn fixture_facts(
    rule: &Rule,
    fixture: &Path,
    version: Option<crate::version::Version>,
) -> Result<facts::Facts, String> {
    let main = ["config.xml", "config.yaml", "config.yml"].iter().map(|m| fixture.join(m)).find(|p| p.is_file());
    let snapshot = fixture.join("snapshot.json");
    let mut facts = match &main {
        Some(main) => {
            // fixtures are hermetic: no /etc/metrika.xml, only the variables they name
            let loaded = config::load(main, &LoadOptions::for_fixture(fixture))
                .map_err(|e| format!("fixture does not load: {e}"))?;
            let reads = rule.reads_of(facts::Source::Config).map(str::to_string).collect();
            facts::config::facts_read(&loaded, &reads, fixture.display().to_string(), version)
        }
        None if snapshot.is_file() => facts::Facts::empty(fixture.display().to_string()),
        None => return Err(format!("{}: no config.xml or snapshot.json", fixture.display())),
    };
    if snapshot.is_file() {
        facts.merge(facts::Facts::read_snapshot(&snapshot)?);
    }
    if version.is_some() {
        facts.version = version;
    }
    Ok(facts)
}
