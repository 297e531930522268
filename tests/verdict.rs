//! The verdict cases: every way an audit can end, in every format. The exit code is the one
//! the report's status documents, and each format says that status: JSON's
//! `summary.status`, SARIF's invocation, JUnit's failures and errors, the status line of
//! text and Markdown, the HTML page's verdict.

mod support;

use std::path::PathBuf;

use serde_json::Value;

/// How an audit ends, and a run that ends that way (from tests/cmd, beside its fixtures).
struct Case {
    what: &'static str,
    args: &'static [&'static str],
    status: &'static str,
}

const CASES: &[Case] = &[
    Case {
        what: "judged, nothing failing",
        args: &["--config", "fixtures/small/config.xml", "--fail-on", "never"],
        status: "passed",
    },
    Case {
        what: "findings at or above fail-on",
        args: &["--config", "../../examples/production/config.xml"],
        status: "failing",
    },
    Case {
        what: "a server config ClickHouse refuses",
        args: &["--config", "fixtures/broken-server/config.xml"],
        status: "not-audited",
    },
    Case {
        what: "a users config ClickHouse refuses (the server config audited)",
        args: &["--config", "fixtures/broken-users/config.xml"],
        status: "not-audited",
    },
    Case {
        what: "a selection of which nothing applies",
        args: &["--config", "fixtures/small/config.xml", "--select", "too-many-simultaneous-queries"],
        status: "not-audited",
    },
    Case {
        what: "a selection that names no rule",
        args: &["--config", "fixtures/small/config.xml", "--select", "no-such-rule"],
        status: "not-audited",
    },
    Case {
        what: "a rule that errors",
        args: &[
            "--config",
            "../../examples/production/config.xml",
            "--no-builtin-rules",
            "--rules",
            "fixtures/erroring-rules",
        ],
        status: "incomplete",
    },
    Case {
        what: "a replica whose evidence was not read",
        args: &[
            "check",
            "--snapshot",
            "fixtures/snapshots/cluster-one-unread.json",
            "--select",
            "too-many-simultaneous-queries",
        ],
        status: "incomplete",
    },
    Case { what: "a server that cannot be read", args: &["--dsn", "http://127.0.0.1:1"], status: "failed" },
];

const FORMATS: &[&str] = &["text", "json", "sarif", "junit", "markdown", "html", "openmetrics"];

fn exit_code(status: &str) -> i32 {
    match status {
        "passed" => 0,
        "failing" => 1,
        "not-audited" => 2,
        "incomplete" | "failed" => 3,
        other => panic!("no such status: {other}"),
    }
}

fn judged(status: &str) -> bool {
    matches!(status, "passed" | "failing")
}

/// `count="N"` of a JUnit XML attribute on the first element that has it.
fn junit_count(xml: &str, attribute: &str) -> usize {
    let at = xml.find(&format!(" {attribute}=\"")).unwrap_or_else(|| panic!("no {attribute} in {xml}"));
    let rest = &xml[at + attribute.len() + 3..];
    rest[..rest.find('"').unwrap()].parse().unwrap()
}

/// What the format's output says the status is (None: the format prints nothing for it).
fn stated_status(format: &str, out: &str) -> Option<String> {
    if out.is_empty() {
        return None;
    }
    match format {
        "json" => {
            let report: Value = serde_json::from_str(out).unwrap();
            Some(report["summary"]["status"].as_str().unwrap().to_string())
        }
        "sarif" => {
            let log: Value = serde_json::from_str(out).unwrap();
            let invocation = &log["runs"][0]["invocations"][0];
            let status = invocation["properties"]["status"].as_str().unwrap().to_string();
            assert_eq!(invocation["executionSuccessful"], judged(&status), "{invocation}");
            Some(status)
        }
        "html" => {
            let at = out.find("class=\"verdict status-").expect("the HTML report's verdict") + 22;
            let status = &out[at..at + out[at..].find('"').unwrap()];
            assert!(out.contains(&format!("exit code {}", exit_code(status))), "the HTML verdict's exit code");
            Some(status.to_string())
        }
        "openmetrics" => {
            let set = out.lines().find_map(|l| l.strip_prefix("chaudit_verdict{status=\"")?.strip_suffix("\"} 1"));
            let status = set.expect("the metrics' verdict").to_string();
            let exit = format!("chaudit_exit_code {}", exit_code(&status));
            assert!(out.lines().any(|l| l == exit), "the metrics' exit code: {exit}");
            Some(status)
        }
        "junit" => Some(
            match (junit_count(out, "errors") > 0, junit_count(out, "failures") > 0) {
                (true, _) => "not judged",
                (false, true) => "failing",
                (false, false) => "passed",
            }
            .to_string(),
        ),
        _ => {
            // the status line: a line of its own in text, Markdown's warning
            let line = out.lines().map(|l| l.trim_start_matches("> **Warning**: ")).find_map(|l| {
                ["not audited:", "failed:", "incomplete:"].into_iter().find(|prefix| l.starts_with(prefix))
            });
            Some(
                match line {
                    Some("not audited:") => "not-audited",
                    Some("failed:") => "failed",
                    Some(_) => "incomplete",
                    None => "judged",
                }
                .to_string(),
            )
        }
    }
}

/// The status as the format can tell it: JUnit has errors for every run that did not judge;
/// text and Markdown print a status line only then.
fn as_format_tells(format: &str, status: &str) -> String {
    match (format, judged(status)) {
        ("junit", false) => "not judged".into(),
        ("text" | "markdown", true) => "judged".into(),
        _ => status.into(),
    }
}

#[test]
fn every_ending_in_every_format_says_what_the_exit_code_says() {
    let cwd = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/cmd");
    let mut wrong = Vec::new();
    for case in CASES {
        for format in FORMATS {
            let mut args = case.args.to_vec();
            args.extend(["--format", format]);
            let (code, out, err) = support::chaudit(&cwd, &args);
            let expected = exit_code(case.status);
            if code != expected {
                wrong.push(format!("{} --format {format}: exit {code}, not {expected}\n{err}", case.what));
                continue;
            }
            // text and Markdown of a run stopped before any rule print nothing: stderr says why
            let stated = stated_status(format, &out);
            let stopped = matches!(case.status, "failed") || case.args.contains(&"no-such-rule");
            let expected_stated =
                (!(stopped && matches!(*format, "text" | "markdown"))).then(|| as_format_tells(format, case.status));
            if stated != expected_stated {
                wrong.push(format!(
                    "{} --format {format}: says {stated:?}, exit {code} says {expected_stated:?}\n{out}",
                    case.what
                ));
            }
            if !judged(case.status) && err.trim().is_empty() {
                wrong.push(format!("{} --format {format}: exit {code} with nothing on stderr", case.what));
            }
        }
    }
    assert!(wrong.is_empty(), "{} of {} runs:\n{}", wrong.len(), CASES.len() * FORMATS.len(), wrong.join("\n\n"));
}

#[test]
fn a_run_that_failed_says_why_in_its_report() {
    let cwd = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/cmd");
    let (code, out, _) = support::chaudit(&cwd, &["--dsn", "http://127.0.0.1:1", "--format", "json"]);
    assert_eq!(code, 3);
    let report: Value = serde_json::from_str(&out).unwrap();
    let message = report["errors"][0]["message"].as_str().unwrap();
    assert!(message.contains("127.0.0.1:1") && message.contains("refused"), "{message}");
}
