//! `--format openmetrics`: what node_exporter's textfile collector reads. Every output is
//! checked by Prometheus's own `promtool check metrics` (parse and lint, which must say
//! nothing), and its numbers must agree with the JSON report of the same run: the verdict,
//! the exit code, the active findings per severity, the failing count, one series per
//! active finding (per replica in a cluster audit), the unjudged rules and the errors.
//! promtool comes from Debian's `prometheus` package (`tests/clickhouse/ensure-promtool.sh`
//! installs it): without it the test fails, it is never skipped.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

const EXAMPLE: &str = "examples/production/config.xml";
const SNAPSHOTS: &str = "tests/cmd/fixtures/snapshots";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// promtool's path, installed when missing; panics (never skips) when it cannot be had.
fn promtool() -> &'static Path {
    static PROMTOOL: OnceLock<PathBuf> = OnceLock::new();
    PROMTOOL.get_or_init(|| {
        let script = root().join("tests/clickhouse/ensure-promtool.sh");
        let out = Command::new(&script).output().unwrap_or_else(|e| panic!("run {}: {e}", script.display()));
        assert!(
            out.status.success(),
            "promtool is required (Debian's `prometheus` package) and could not be installed by {}:\n{}",
            script.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let path = PathBuf::from(String::from_utf8(out.stdout).expect("utf-8 path").trim());
        assert!(path.is_file(), "ensure-promtool.sh printed {path:?}, which is not a file");
        path
    })
}

/// `promtool check metrics` on the text: parsed, and nothing for its linter to say.
fn promtool_check(metrics: &str, what: &str) {
    let mut child = Command::new(promtool())
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run promtool");
    child.stdin.take().expect("stdin").write_all(metrics.as_bytes()).expect("write to promtool");
    let out = child.wait_with_output().expect("promtool ends");
    let said = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && said.trim().is_empty(), "{what}: promtool check metrics says:\n{said}\n{metrics}");
}

fn chaudit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_chaudit"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .env_remove("CLICKHOUSE_HOST")
        .output()
        .expect("run chaudit")
}

/// The metrics and the JSON report of one run, and its exit code (the same for both).
fn both(args: &[&str]) -> (String, Value, i32) {
    let metrics = chaudit(&[args, &["--format", "openmetrics"]].concat());
    let json = chaudit(&[args, &["--format", "json"]].concat());
    let code = metrics.status.code().expect("exit code");
    assert_eq!(Some(code), json.status.code(), "{args:?}: metrics and JSON exit alike");
    let report: Value = serde_json::from_slice(&json.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: JSON report: {e}\n{}", String::from_utf8_lossy(&json.stderr)));
    (String::from_utf8(metrics.stdout).expect("utf-8 metrics"), report, code)
}

/// One sample: its family, its labels (unescaped) and its value.
#[derive(Debug, Clone)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// The samples of the text format, every family announced by `# HELP` and `# TYPE` first.
fn parse(metrics: &str) -> Vec<Sample> {
    let mut announced = std::collections::BTreeSet::new();
    let mut samples = Vec::new();
    for line in metrics.lines() {
        if let Some(rest) = line.strip_prefix("# ") {
            let mut words = rest.splitn(3, ' ');
            let (kind, name) = (words.next().unwrap(), words.next().expect("a family name"));
            assert!(kind == "HELP" || kind == "TYPE", "unexpected comment {line:?}");
            if kind == "TYPE" {
                assert_eq!(words.next(), Some("gauge"), "{line}");
                assert!(announced.contains(name), "TYPE before HELP: {line}");
            }
            announced.insert(name.to_string());
            continue;
        }
        let name_end = line.find(['{', ' ']).expect("a sample");
        let name = &line[..name_end];
        assert!(announced.contains(name), "{name} has no HELP: {line}");
        let mut labels = BTreeMap::new();
        let mut rest = &line[name_end..];
        if let Some(inner) = rest.strip_prefix('{') {
            let (pairs, after) = parse_labels(inner);
            for (k, v) in pairs {
                assert!(labels.insert(k, v).is_none(), "a label twice: {line}");
            }
            rest = after;
        }
        let value = rest.strip_prefix(' ').expect("a space before the value");
        samples.push(Sample {
            name: name.to_string(),
            labels,
            value: value.parse().unwrap_or_else(|e| panic!("value of {line}: {e}")),
        });
    }
    samples
}

/// The labels of `a="1",b="2"} rest` and what follows the closing brace.
fn parse_labels(text: &str) -> (Vec<(String, String)>, &str) {
    let mut labels = Vec::new();
    let mut at = 0;
    loop {
        let eq = text[at..].find("=\"").expect("label=\"value\"") + at;
        let label = text[at..eq].to_string();
        let mut value = String::new();
        let mut chars = text[eq + 2..].char_indices();
        let end = loop {
            match chars.next().expect("a closing quote") {
                (i, '"') => break eq + 2 + i,
                (_, '\\') => match chars.next().expect("an escaped character").1 {
                    '\\' => value.push('\\'),
                    '"' => value.push('"'),
                    'n' => value.push('\n'),
                    other => panic!("\\{other} is no escape of the text format"),
                },
                (_, c) => value.push(c),
            }
        };
        labels.push((label, value));
        match &text[end + 1..] {
            more if more.starts_with(',') => at = end + 2,
            more => return (labels, more.strip_prefix('}').expect("} after the labels")),
        }
    }
}

fn samples<'a>(all: &'a [Sample], name: &str) -> Vec<&'a Sample> {
    all.iter().filter(|s| s.name == name).collect()
}

fn value(all: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    let found: Vec<&Sample> = samples(all, name)
        .into_iter()
        .filter(|s| {
            s.labels.len() == labels.len()
                && labels.iter().all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(v))
        })
        .collect();
    assert_eq!(found.len(), 1, "one sample {name}{labels:?}: {found:?}");
    found[0].value
}

/// A name as the metrics write it: control characters written out and a long one cut, as
/// every report shows a value.
fn visible(text: &str) -> String {
    chaudit::mask::excerpt(&chaudit::mask::without_controls(text)).into_owned()
}

/// Everything the metrics say agrees with the JSON report of the same run.
fn agree(metrics: &str, report: &Value, code: i32, what: &str) -> Vec<Sample> {
    promtool_check(metrics, what);
    let all = parse(metrics);
    let summary = &report["summary"];
    let status = summary["status"].as_str().expect("status");
    // the verdict: every status listed, 1 for this run's
    let verdicts = samples(&all, "chaudit_verdict");
    assert_eq!(verdicts.len(), 5, "{what}: {verdicts:?}");
    for v in verdicts {
        let expected = if v.labels["status"] == status { 1.0 } else { 0.0 };
        assert_eq!(v.value, expected, "{what}: {v:?} for status {status}");
    }
    assert_eq!(value(&all, "chaudit_exit_code", &[]), f64::from(code), "{what}");
    // active findings per severity, every severity listed
    let findings = report["findings"].as_array().cloned().unwrap_or_default();
    let active: Vec<&Value> =
        findings.iter().filter(|f| f.get("suppressed").is_none() && f.get("baselined").is_none()).collect();
    for severity in ["critical", "high", "medium", "low", "info"] {
        let n = active.iter().filter(|f| f["severity"] == severity).count();
        assert_eq!(value(&all, "chaudit_findings", &[("severity", severity)]), n as f64, "{what}: {severity}");
    }
    let fail_on = summary["fail_on"].as_str().expect("fail_on");
    assert_eq!(
        value(&all, "chaudit_findings_failing", &[("fail_on", fail_on)]),
        summary["failing"].as_f64().unwrap(),
        "{what}"
    );
    assert_eq!(value(&all, "chaudit_findings_suppressed", &[]), summary["suppressed"].as_f64().unwrap(), "{what}");
    assert_eq!(value(&all, "chaudit_findings_baselined", &[]), summary["baselined"].as_f64().unwrap(), "{what}");
    // one series per active finding, per replica in a cluster audit
    let mut expected: BTreeMap<BTreeMap<String, String>, f64> = BTreeMap::new();
    for f in &active {
        let mut labels = BTreeMap::from([
            ("rule".to_string(), f["rule_id"].as_str().unwrap().to_string()),
            ("severity".to_string(), f["severity"].as_str().unwrap().to_string()),
        ]);
        if let Some(object) = f["object"].as_str() {
            labels.insert("object".into(), visible(object));
        }
        match f["hosts"].as_array() {
            Some(hosts) => {
                for h in hosts {
                    let mut labels = labels.clone();
                    labels.insert("replica".into(), h["host"].as_str().unwrap().to_string());
                    *expected.entry(labels).or_default() += 1.0;
                }
            }
            None => *expected.entry(labels).or_default() += 1.0,
        }
    }
    let series: BTreeMap<BTreeMap<String, String>, f64> =
        samples(&all, "chaudit_finding").into_iter().map(|s| (s.labels.clone(), s.value)).collect();
    assert_eq!(series.len(), samples(&all, "chaudit_finding").len(), "{what}: a finding series twice");
    assert_eq!(series, expected, "{what}: chaudit_finding");
    // rules per outcome, the unjudged rules, the errors
    for outcome in ["fired", "passed", "not-applicable", "inconclusive", "errored"] {
        let n = summary["outcomes"].get(outcome).and_then(Value::as_f64).unwrap_or(0.0);
        assert_eq!(value(&all, "chaudit_rules", &[("outcome", outcome)]), n, "{what}: {outcome}");
    }
    let unjudged = report["unjudged"].as_array().cloned().unwrap_or_default();
    let series: f64 = samples(&all, "chaudit_rule_unjudged").iter().map(|s| s.value).sum();
    assert_eq!(series, unjudged.len() as f64, "{what}: chaudit_rule_unjudged");
    for u in &unjudged {
        let mut labels = vec![
            ("rule", u["rule_id"].as_str().unwrap().to_string()),
            ("outcome", u["outcome"].as_str().unwrap().to_string()),
        ];
        labels.extend(u["host"].as_str().map(|h| ("replica", h.to_string())));
        let labels: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
        assert!(value(&all, "chaudit_rule_unjudged", &labels) >= 1.0, "{what}: {u}");
    }
    let errors = report["errors"].as_array().map_or(0, Vec::len);
    assert_eq!(value(&all, "chaudit_errors", &[]), errors as f64, "{what}");
    // who made it, and when
    let target = report["target"].as_str().unwrap();
    let version = report["chaudit_version"].as_str().unwrap();
    assert_eq!(value(&all, "chaudit_info", &[("version", version), ("target", target)]), 1.0, "{what}");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    let at = value(&all, "chaudit_audit_timestamp_seconds", &[]);
    assert!((now - 600.0..=now + 1.0).contains(&at), "{what}: made at {at}, now {now}");
    let took = value(&all, "chaudit_audit_duration_seconds", &[]);
    assert!((0.0..600.0).contains(&took), "{what}: took {took}");
    all
}

#[test]
fn the_bundled_example() {
    let (metrics, report, code) = both(&["--config", EXAMPLE]);
    assert_eq!(code, 1);
    let all = agree(&metrics, &report, code, "example");
    assert_eq!(value(&all, "chaudit_verdict", &[("status", "failing")]), 1.0);
    assert!(value(&all, "chaudit_findings", &[("severity", "critical")]) >= 1.0);
    // a finding about the server as a whole has no object label, not an empty one
    assert!(!metrics.contains("=\"\""), "{metrics}");
}

/// A cluster snapshot: a finding holds on some replicas, one series each.
#[test]
fn a_cluster_snapshot() {
    let snapshot = format!("{SNAPSHOTS}/cluster-rolling-upgrade.json");
    let args = [
        "check",
        "--snapshot",
        &snapshot,
        "--config",
        "tests/cmd/fixtures/version-catalog/config.xml",
        "--select",
        "obsolete-setting-in-profile,unknown-server-setting,unbatched-end-of-query-packets",
    ];
    let (metrics, report, code) = both(&args);
    assert_eq!(code, 0);
    let all = agree(&metrics, &report, code, "cluster-rolling-upgrade");
    let replicas: Vec<&str> =
        samples(&all, "chaudit_finding").iter().filter_map(|s| s.labels.get("replica").map(String::as_str)).collect();
    assert!(replicas.contains(&"old:8123") && replicas.contains(&"new:8123"), "{metrics}");
    assert!(samples(&all, "chaudit_finding").iter().all(|s| s.labels.contains_key("replica")), "{metrics}");

    // a replica not read: incomplete, its rules unjudged on it by name
    let (metrics, report, code) = both(&["check", "--snapshot", &format!("{SNAPSHOTS}/cluster-six-unread.json")]);
    assert_eq!(code, 3);
    let all = agree(&metrics, &report, code, "cluster-six-unread");
    assert_eq!(value(&all, "chaudit_verdict", &[("status", "incomplete")]), 1.0);
    assert!(!samples(&all, "chaudit_rule_unjudged").is_empty());
}

/// A run stopped before any rule: the metrics still say it failed, so an alert fires.
#[test]
fn a_stopped_run() {
    let (metrics, report, code) = both(&["--dsn", "http://127.0.0.1:1"]);
    assert_eq!(code, 3);
    let all = agree(&metrics, &report, code, "unreachable server");
    assert_eq!(value(&all, "chaudit_verdict", &[("status", "failed")]), 1.0);
    assert_eq!(value(&all, "chaudit_exit_code", &[]), 3.0);
    assert_eq!(value(&all, "chaudit_errors", &[]), 1.0);

    // broken rule files: nothing audited (exit 2)
    let (metrics, report, code) = both(&["--config", EXAMPLE, "--rules", "tests/cmd/fixtures/bad-rules"]);
    assert_eq!(code, 2);
    let all = agree(&metrics, &report, code, "broken rules");
    assert_eq!(value(&all, "chaudit_verdict", &[("status", "not-audited")]), 1.0);
    assert!(value(&all, "chaudit_errors", &[]) >= 1.0);

    // the metrics file is written there too, whole
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("chaudit.prom");
    let out = chaudit(&["--dsn", "http://127.0.0.1:1", "--format", "openmetrics", "-o", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    let written = std::fs::read_to_string(&file).expect("the metrics file");
    promtool_check(&written, "stopped run, -o");
    assert_eq!(value(&parse(&written), "chaudit_verdict", &[("status", "failed")]), 1.0);
}

/// Names with terminal escapes, quotes, backslashes and line feeds are label values the
/// format reads back as the report's names.
#[test]
fn hostile_names() {
    let (metrics, report, code) = both(&["--config", "tests/cmd/fixtures/escape-names/config.yaml"]);
    let all = agree(&metrics, &report, code, "escape-names");
    assert!(!metrics.contains('\u{1b}'), "{metrics}");
    let objects: Vec<&str> =
        samples(&all, "chaudit_finding").iter().filter_map(|s| s.labels.get("object").map(String::as_str)).collect();
    assert!(objects.contains(&"bad\\u{1b}[31mkey"), "{objects:?}");

    // replicas named with escapes
    let (metrics, report, code) = both(&["check", "--snapshot", &format!("{SNAPSHOTS}/cluster-escape.json")]);
    agree(&metrics, &report, code, "cluster-escape");
    assert!(!metrics.contains('\u{1b}') && !metrics.contains('\u{7}'), "{metrics}");

    // quotes, backslashes and a line feed in setting names
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        "listen_host: 127.0.0.1\n\"bad\\\"quote\": 1\n'back\\slash\\n': 2\nprofiles:\n  default:\n    \"line\\nfeed\\\\\": 8\n",
    )
    .unwrap();
    let (metrics, report, code) = both(&["--config", config.to_str().unwrap()]);
    let all = agree(&metrics, &report, code, "quotes and line feeds");
    let objects: Vec<&str> =
        samples(&all, "chaudit_finding").iter().filter_map(|s| s.labels.get("object").map(String::as_str)).collect();
    for name in ["bad\"quote", "back\\slash\\n", "default/line\nfeed\\"] {
        assert!(objects.contains(&name), "{name:?} not among {objects:?}:\n{metrics}");
    }

    // a setting named with 100,000 characters is a label of a few hundred
    let long = "y".repeat(100_000);
    let config = dir.path().join("long.xml");
    let xml = format!("<clickhouse><listen_host>127.0.0.1</listen_host><{long}>1</{long}></clickhouse>\n");
    std::fs::write(&config, xml).unwrap();
    let (metrics, report, code) = both(&["--config", config.to_str().unwrap()]);
    agree(&metrics, &report, code, "a long name");
    assert!(metrics.contains("yyy… (99760 more bytes)") && metrics.len() < 20_000, "{} bytes", metrics.len());
}

/// Baselined findings are counted, not listed, and do not fail the run.
#[test]
fn baselined_findings() {
    let dir = tempfile::tempdir().expect("tempdir");
    let baseline = dir.path().join("baseline.json");
    let baseline = baseline.to_str().unwrap();
    let out = chaudit(&["--config", EXAMPLE, "--write-baseline", baseline, "--format", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (metrics, report, code) = both(&["--config", EXAMPLE, "--baseline", baseline]);
    assert_eq!(code, 0);
    let all = agree(&metrics, &report, code, "baselined");
    assert!(samples(&all, "chaudit_finding").is_empty(), "{metrics}");
    assert!(value(&all, "chaudit_findings_baselined", &[]) >= 7.0);
    assert_eq!(value(&all, "chaudit_verdict", &[("status", "passed")]), 1.0);
}

/// The alert rules of docs/metrics.md load (`promtool check rules`) and fire as documented
/// (`promtool test rules`) on the metrics of real runs: the bundled example is failing with
/// critical findings, a stopped run did not judge, and a file no longer rewritten is stale.
#[test]
fn the_documented_alerts() {
    let doc = std::fs::read_to_string(root().join("docs/metrics.md")).expect("docs/metrics.md");
    let start = doc.find("```yaml\n").expect("a yaml block in docs/metrics.md") + "```yaml\n".len();
    let rules = &doc[start..start + doc[start..].find("```").expect("the block's end")];
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("rules.yml"), rules).unwrap();
    let out = Command::new(promtool()).args(["check", "rules", "rules.yml"]).current_dir(dir.path()).output().unwrap();
    assert!(out.status.success(), "promtool check rules:\n{}", String::from_utf8_lossy(&out.stderr));

    // each sample of a run as an input series, unchanged for 5 hours; the audit made at
    // time 0 of the test and never again
    let series = |args: &[&str]| {
        let out = chaudit(&[args, &["--format", "openmetrics"]].concat());
        let metrics = String::from_utf8(out.stdout).expect("utf-8");
        let critical = value(&parse(&metrics), "chaudit_findings", &[("severity", "critical")]);
        let mut yaml = String::new();
        for line in metrics.lines().filter(|l| !l.starts_with('#')) {
            let (series, value) = line.rsplit_once(' ').expect("a sample");
            let value = if series == "chaudit_audit_timestamp_seconds" { "0" } else { value };
            yaml.push_str(&format!("      - series: '{series}'\n        values: '{value}x300'\n"));
        }
        (yaml, critical)
    };
    let (example_series, critical) = series(&["--config", EXAMPLE]);
    assert!(critical > 0.0, "the example has critical findings");
    let alert = |name: &str, at: &str, expected: &str| {
        format!("      - eval_time: {at}\n        alertname: {name}\n        exp_alerts: {expected}\n")
    };
    let example = [
        alert(
            "ClickHouseAuditFailing",
            "1h",
            r#"[{exp_labels: {severity: warning, status: failing}, exp_annotations: {summary: "chaudit: findings at or above fail-on on "}}]"#,
        ),
        alert(
            "ClickHouseAuditCritical",
            "1h",
            &format!(
                r#"[{{exp_labels: {{severity: critical}}, exp_annotations: {{summary: "chaudit: {critical} critical finding(s) on "}}}}]"#
            ),
        ),
        alert("ClickHouseAuditDidNotJudge", "1h", "[]"),
        alert("ClickHouseAuditStale", "1h", "[]"),
        alert(
            "ClickHouseAuditStale",
            "3h",
            r#"[{exp_labels: {severity: warning}, exp_annotations: {summary: "chaudit has not audited  for two hours"}}]"#,
        ),
    ]
    .concat();
    let stopped = [
        alert("ClickHouseAuditFailing", "1h", "[]"),
        alert("ClickHouseAuditCritical", "1h", "[]"),
        alert(
            "ClickHouseAuditDidNotJudge",
            "1h",
            r#"[{exp_labels: {severity: warning, status: failed}, exp_annotations: {summary: "chaudit could not audit  (failed)"}}]"#,
        ),
    ]
    .concat();
    let tests = format!(
        "rule_files: [rules.yml]\nevaluation_interval: 1m\ntests:\n\
         \x20 - interval: 1m\n    input_series:\n{}    alert_rule_test:\n{example}\
         \x20 - interval: 1m\n    input_series:\n{}    alert_rule_test:\n{stopped}",
        example_series,
        series(&["--dsn", "http://127.0.0.1:1"]).0,
    );
    std::fs::write(dir.path().join("tests.yml"), &tests).unwrap();
    let out = Command::new(promtool()).args(["test", "rules", "tests.yml"]).current_dir(dir.path()).output().unwrap();
    assert!(
        out.status.success(),
        "promtool test rules:\n{}{}\n{tests}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
