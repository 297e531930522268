//! Pathological config trees: each gives the engine's behaviour or a diagnostic at file:line,
//! never a hang or a crash. benches/pathological.sh records their time and memory.

mod support;

use std::path::Path;

fn write(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

const CONFIG: &str =
    "<clickhouse>\n    <query_log><database>system</database><table>query_log</table></query_log>\n</clickhouse>\n";

/// users.xml whose `default` profile names itself twice, above a chain of `depth` profiles
/// each naming the next twice: a walk that follows every reference takes 2^depth steps.
pub fn inheritance_cycles(depth: usize) -> String {
    let mut profiles = String::from(
        "<default><profile>default</profile><profile>default</profile><profile>p0</profile>\
         <max_threads>8</max_threads></default>\n",
    );
    for i in 0..depth {
        let next = if i + 1 < depth { format!("p{}", i + 1) } else { "default".into() };
        profiles.push_str(&format!(
            "<p{i}><profile>{next}</profile><profile>{next}</profile><max_threads>{i}</max_threads></p{i}>\n"
        ));
    }
    format!(
        "<clickhouse>\n<profiles>\n{profiles}</profiles>\n<users><default><password/><networks><ip>::1</ip></networks>\
         <profile>default</profile></default></users>\n</clickhouse>\n"
    )
}

#[test]
fn profile_inheritance_cycles_are_walked_once_per_profile() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "config.xml", CONFIG);
    write(dir.path(), "users.xml", &inheritance_cycles(60));
    let (code, stdout, stderr) = support::chaudit(dir.path(), &["--config", "config.xml", "--format", "json"]);
    assert!(code == 0 || code == 1, "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(report["outcomes"].as_array().is_some_and(|o| !o.is_empty()));
}

#[test]
fn deep_nesting_is_a_diagnostic_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let n = 200_000;
    write(
        dir.path(),
        "config.xml",
        &format!("<clickhouse>\n<a>\n{}{}</a>\n</clickhouse>\n", "<b>".repeat(n), "</b>".repeat(n)),
    );
    let (code, stdout, stderr) = support::chaudit(dir.path(), &["config", "show", "--config", "config.xml"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stdout.is_empty());
    assert!(stderr.contains("config.xml:3:") && stderr.contains("nest deeper than 1000 levels"), "{stderr}");
}

#[test]
fn deep_elements_without_includes_are_not_an_include_loop() {
    let dir = tempfile::tempdir().unwrap();
    let n = 400;
    write(
        dir.path(),
        "config.xml",
        &format!("<clickhouse>\n{}1{}\n</clickhouse>\n", "<b>".repeat(n), "</b>".repeat(n)),
    );
    let (code, stdout, stderr) = support::chaudit(dir.path(), &["config", "show", "--config", "config.xml"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stdout.matches("<b>").count(), n);
}

#[test]
fn a_self_including_config_is_a_diagnostic() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "metrika.xml", "<clickhouse><loop><x incl=\"loop\"/></loop></clickhouse>\n");
    write(
        dir.path(),
        "config.xml",
        "<clickhouse>\n<include_from>metrika.xml</include_from>\n<y incl=\"loop\"/>\n</clickhouse>\n",
    );
    let (code, _, stderr) = support::chaudit(dir.path(), &["config", "show", "--config", "config.xml"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("substitutions nest too deeply (an include loop?)"), "{stderr}");
}

#[test]
fn a_rule_over_many_items_reports_each_once_in_document_order() {
    // more items than one core judges alone: the rule's items are split across cores
    let dir = tempfile::tempdir().unwrap();
    let n = 6_000;
    let elements: String =
        (0..n).map(|i| format!("<app_metric_{i}_threshold>{i}</app_metric_{i}_threshold>\n")).collect();
    write(dir.path(), "config.xml", &format!("<clickhouse>\n{elements}</clickhouse>\n"));
    let args =
        ["--config", "config.xml", "--format", "json", "--select", "unknown-server-setting", "--fail-on", "never"];
    let (code, stdout, stderr) = support::chaudit(dir.path(), &args);
    assert_eq!(code, 0, "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let lines: Vec<u64> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule_id"] == "unknown-server-setting")
        .map(|f| f["location"]["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, (2..n + 2).map(|l| l as u64).collect::<Vec<_>>());
    // the JSON report streamed to a file is the one on stdout
    let (code, _, stderr) = support::chaudit(dir.path(), &[&args[..], &["-o", "report.json"]].concat());
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(std::fs::read_to_string(dir.path().join("report.json")).unwrap(), stdout);
}
