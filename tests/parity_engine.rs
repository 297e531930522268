//! Offline and live judge one engine state the same way.
//!
//! For each tree the real clickhouse-server 25.8 starts (the rule fixtures of every config
//! rule with a live twin, and the third-party trees of tests/engine-cases): the tree's files
//! are audited offline, the server is started on them and audited live as a read-only user,
//! and every config rule's findings are compared, object by object, with its live twin's
//! (`live_twin:` in the rule): each offline judgement has its live twin making the same one,
//! severity within one step, and each live judgement of a twin has its offline one. A config
//! rule no live rule can match says why in its `live_twin: {none: ...}` (on its rule page).
//!
//! `cargo test` runs a sample (every twin rule's fixtures, every fourth engine case); the whole
//! set runs with `CHAUDIT_PARITY=all cargo test --test parity_engine` (docs/development.md).

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use chaudit::config::LoadOptions;
use chaudit::rules::RulePack;
use chaudit::rules::twin::LiveTwin;

const AUDITOR: &str = "parity_auditor";
const AUDITOR_PASSWORD: &str = "parity-auditor-password";
/// Flushes the system logs before the audit, so that every log table with rows exists (a
/// server creates one at its first flush).
const ADMIN: &str = "parity_admin";

/// Rules about system log tables: the running server judges only the tables it has created
/// (at a log's first flush; crash_log, backup_log, ... may never be), so an offline judgement
/// of a table the server has not created has no live twin.
const LOG_TABLE_RULES: [&str; 2] = ["system-log-without-ttl", "query-log-without-ttl"];

/// A tree to start: where it comes from (for messages) and its directory.
struct Case {
    name: String,
    tree: PathBuf,
}

fn cases(pack: &RulePack, all: bool) -> Vec<Case> {
    let mut out = Vec::new();
    for rule in pack.rules.iter().filter(|r| matches!(r.live_twin, Some(LiveTwin::Rule(_)))) {
        for test in &rule.tests {
            if test.fixture.join("config.xml").is_file() && test.version.is_none() {
                out.push(Case { name: format!("{} {}", rule.id, test.fixture.display()), tree: test.fixture.clone() });
            }
        }
    }
    let root = support::repo_root().join("tests/engine-cases");
    let mut engine_cases: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.unwrap().path().join("tree"))
        .filter(|tree| tree.join("config.xml").is_file())
        .collect();
    engine_cases.sort();
    for (i, tree) in engine_cases.into_iter().enumerate() {
        if all || i % 4 == 0 {
            let name = tree.parent().unwrap().file_name().unwrap().to_string_lossy().to_string();
            out.push(Case { name, tree });
        }
    }
    out
}

/// Copies the case to `dir/tree` (the engine cases' shared mains copied as files) with
/// its `env`, and adds beside the users config the server reads the read-only auditor, with
/// the grants docs/live.md gives one, and an admin that flushes the logs.
fn prepare(case: &Case, dir: &Path) -> PathBuf {
    let tree = dir.join("tree");
    support::copy_tree(&case.tree, &tree);
    let env = case.tree.parent().unwrap().join("env");
    let env_file = dir.join("env");
    if env.is_file() && !case.tree.join("env").is_file() {
        std::fs::copy(&env, &env_file).unwrap();
    } else if case.tree.join("env").is_file() {
        std::fs::copy(case.tree.join("env"), &env_file).unwrap();
    } else {
        std::fs::write(&env_file, "").unwrap();
    }
    let mut options = LoadOptions::for_fixture(dir);
    options.default_include_from = chaudit::config::DefaultInclude::None;
    let loaded = chaudit::config::load(&tree.join("config.xml"), &options).expect("a tree the server starts loads");
    let users_main = match &loaded.users {
        Some(users) if !loaded.users_in_main => loaded.sources.file(users.files[0]).path.clone(),
        _ => tree.join("config.xml"),
    };
    let stem = users_main.file_stem().unwrap().to_string_lossy().to_string();
    let fragments = users_main.with_file_name(format!("{stem}.d"));
    std::fs::create_dir_all(&fragments).unwrap();
    let hash = sha256_hex(AUDITOR_PASSWORD);
    std::fs::write(
        fragments.join("zz-parity-auditor.xml"),
        format!(
            "<clickhouse>\n  <profiles><parity_auditor_readonly><readonly>1</readonly></parity_auditor_readonly></profiles>\n  \
             <users><{AUDITOR}><password_sha256_hex>{hash}</password_sha256_hex>\n    \
             <networks><ip>127.0.0.1</ip><ip>::1</ip></networks><profile>parity_auditor_readonly</profile>\n    \
             <grants><query>GRANT SELECT ON system.*</query>\n      \
             <query>GRANT SHOW DATABASES, SHOW TABLES, SHOW ACCESS ON *.*</query></grants>\n  </{AUDITOR}>\n  <{ADMIN}><password_sha256_hex>{hash}</password_sha256_hex>\n    \
             <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>\n  </{ADMIN}></users>\n</clickhouse>\n"
        ),
    )
    .unwrap();
    tree
}

fn sha256_hex(text: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// (rule, object) → severity of a JSON report's findings.
fn judgements(report: &Path) -> BTreeMap<(String, String), String> {
    let text = std::fs::read_to_string(report).unwrap_or_else(|e| panic!("{}: {e}", report.display()));
    let report: serde_json::Value = serde_json::from_str(&text).unwrap();
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let object = f["object"].as_str().unwrap_or("").to_string();
            ((f["rule_id"].as_str().unwrap().to_string(), object), f["severity"].as_str().unwrap().to_string())
        })
        .collect()
}

fn step(severity: &str) -> i32 {
    ["info", "low", "medium", "high", "critical"].iter().position(|s| *s == severity).map_or(-9, |p| p as i32)
}

/// The rules of `rules` that could not judge (errored, inconclusive), with why.
fn not_judged(report: &Path, rules: &[&str]) -> Vec<String> {
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap();
    report["outcomes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| rules.contains(&o["rule_id"].as_str().unwrap_or("")))
        .filter(|o| matches!(o["outcome"].as_str(), Some("errored" | "inconclusive")))
        .map(|o| format!("{} {}: {}", o["rule_id"], o["outcome"], o["reason"]))
        .collect()
}

/// What differs between the offline and the live judgements of one tree.
fn compare(
    pairs: &[(String, String)],
    offline: &BTreeMap<(String, String), String>,
    live: &BTreeMap<(String, String), String>,
    live_log_tables: &[String],
) -> Vec<String> {
    let mut out = Vec::new();
    for ((rule, object), severity) in offline {
        if LOG_TABLE_RULES.contains(&rule.as_str()) && !live_log_tables.contains(object) {
            continue;
        }
        let twins: Vec<&String> = pairs.iter().filter(|(_, c)| c == rule).map(|(l, _)| l).collect();
        let Some(twin) = twins.first() else { continue };
        match live.get(&((*twin).clone(), object.clone())) {
            None => out.push(format!("offline {rule} `{object}` ({severity}): no {twin} finding live")),
            Some(live_severity) if (step(live_severity) - step(severity)).abs() > 1 => {
                out.push(format!("offline {rule} `{object}` is {severity}, live {twin} {live_severity}"))
            }
            Some(_) => {}
        }
    }
    for ((rule, object), severity) in live {
        let configs: Vec<&String> = pairs.iter().filter(|(l, _)| l == rule).map(|(_, c)| c).collect();
        if !configs.is_empty() && !configs.iter().any(|c| offline.contains_key(&((*c).clone(), object.clone()))) {
            out.push(format!("live {rule} `{object}` ({severity}): no {} finding offline", configs[0]));
        }
    }
    out
}

#[test]
fn offline_and_live_judge_the_same_objects_alike() {
    let all = std::env::var("CHAUDIT_PARITY").is_ok_and(|v| v == "all");
    let pack = RulePack::load(false, &[support::repo_root().join("rules")]).expect("the rule pack loads");
    let pairs = pack.live_twins.clone();
    let config_rules: Vec<&str> = pairs.iter().map(|(_, c)| c.as_str()).collect();
    let live_rules: Vec<&str> = pairs.iter().map(|(l, _)| l.as_str()).collect();
    let chaudit = env!("CARGO_BIN_EXE_chaudit");
    let only = std::env::var("CHAUDIT_PARITY_ONLY").unwrap_or_default();
    let cases: Vec<Case> = cases(&pack, all).into_iter().filter(|c| c.name.contains(&only)).collect();
    let (mut started, mut compared) = (0, 0);
    let mut unaudited = Vec::new();
    let mut failures = Vec::new();
    for case in &cases {
        let dir = tempfile::tempdir().unwrap();
        let tree = prepare(case, dir.path());
        let offline = dir.path().join("offline.json");
        let out = Command::new(chaudit)
            .arg("--config")
            .arg(tree.join("config.xml"))
            .arg("--env-file")
            .arg(dir.path().join("env"))
            .args(["--default-include-from", "none", "--clickhouse-version", "25.8", "-q", "--format", "json"])
            .args(["--select", &config_rules.join(","), "-o"])
            .arg(&offline)
            .output()
            .unwrap();
        assert!(
            offline.is_file(),
            "{}: the offline audit wrote no report:\n{}",
            case.name,
            String::from_utf8_lossy(&out.stderr)
        );
        let live = dir.path().join("live.json");
        let tables = dir.path().join("tables.tsv");
        let then = format!(
            "curl -sS -u {ADMIN}:{AUDITOR_PASSWORD} \"$CHAUDIT_ENGINE_URL\" --data-binary 'SYSTEM FLUSH LOGS' >&2; \
             curl -sS -u {AUDITOR}:{AUDITOR_PASSWORD} \"$CHAUDIT_ENGINE_URL\" -o {} \
             --data-binary \"SELECT name FROM system.tables WHERE database = 'system'\"; \
             {chaudit} --dsn \"$CHAUDIT_ENGINE_URL\" -u {AUDITOR} --password {AUDITOR_PASSWORD} -q --since 0 \
             --format json --select {} -o {}",
            tables.display(),
            live_rules.join(","),
            live.display()
        );
        let verdict = start_and_run(&tree, &then);
        if !verdict["started"].as_bool().unwrap_or(false) {
            continue;
        }
        started += 1;
        if verdict["then_status"].is_null() {
            // it started without an HTTP port on loopback (an http_port read from an unset
            // variable): nothing a live audit over HTTP can read
            unaudited.push(format!("{}: no HTTP port", case.name));
            continue;
        }
        if !live.is_file() {
            failures.push(format!("{}: the live audit wrote no report ({verdict})", case.name));
            continue;
        }
        let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&live).unwrap()).unwrap();
        if report["summary"]["status"] == "not-audited" {
            // the server runs, but answers no query of the auditor (a default profile with
            // max_query_size = 1 refuses every query): the live audit says so and exits 3
            unaudited.push(format!("{}: {}", case.name, report["errors"]));
            continue;
        }
        compared += 1;
        for (side, report, rules) in [("offline", &offline, &config_rules), ("live", &live, &live_rules)] {
            for why in not_judged(report, rules) {
                failures.push(format!("{}: {side} {why}", case.name));
            }
        }
        let live_log_tables: Vec<String> =
            std::fs::read_to_string(&tables).unwrap_or_default().lines().map(str::to_string).collect();
        for difference in compare(&pairs, &judgements(&offline), &judgements(&live), &live_log_tables) {
            failures.push(format!("{}: {difference}", case.name));
        }
    }
    eprintln!(
        "{} trees, {started} started by the server, {compared} compared over {} rule pairs; not auditable live: {unaudited:?}",
        cases.len(),
        pairs.len()
    );
    assert!(unaudited.len() <= 2, "trees the live audit could not read: {unaudited:#?}");
    assert!(!only.is_empty() || started >= 40, "only {started} of {} trees started", cases.len());
    assert!(failures.is_empty(), "{} differences:\n{}", failures.len(), failures.join("\n"));
}

/// Starts the 25.8 server on `tree` in its own namespaces and runs `then` against it
/// (scripts/engine-preprocess.py --start --then): the start verdict.
fn start_and_run(tree: &Path, then: &str) -> serde_json::Value {
    let out = Command::new(support::server_engine_python())
        .arg(support::repo_root().join("scripts/engine-preprocess.py"))
        .arg("--start")
        .arg(tree)
        .args(["--timeout", "60", "--then", then])
        .output()
        .expect("run engine-preprocess.py --start");
    assert!(out.status.success(), "engine-preprocess.py failed:\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", String::from_utf8_lossy(&out.stdout)))
}
