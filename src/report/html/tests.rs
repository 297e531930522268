//! The HTML report's escaping, its script hash, its inline assets.

use super::*;

#[test]
fn markup_in_names_is_text() {
    assert_eq!(
        esc("<script>alert(\"x\" & 'y')</script>"),
        "&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt;"
    );
    assert_eq!(esc("plain: a_b-c"), "plain: a_b-c");
}

/// A report whose every text from a config or a server is markup.
fn hostile_report() -> Report {
    use crate::eval::{Evaluation, HostOutcome, Outcome};
    const BAD: &str = "x\"'><script>alert(1)</script>&amp;<img src=x onerror=alert(2)>";
    let evidence: crate::eval::Evidence =
        [(BAD.to_string(), serde_json::json!(BAD)), ("list".to_string(), serde_json::json!([BAD, 1]))]
            .into_iter()
            .collect();
    let finding = Finding {
        rule_id: "some-rule".into(),
        severity: Severity::High,
        title: BAD.into(),
        message: BAD.into(),
        object: Some(BAD.into()),
        location: Some(crate::source::Location { file: BAD.into(), line: 3, column: 1 }),
        evidence: evidence.clone(),
        remediation: Box::new(crate::eval::finding::Remediation {
            config: Some(BAD.into()),
            manual: Some(BAD.into()),
            sql: Some(BAD.into()),
            command: Some(BAD.into()),
            ..Default::default()
        }),
        fingerprint: "0123456789abcdef".into(),
        rank: 1,
        score: 4.0,
        suppressed: None,
        baselined: false,
        hosts: vec![HostEvidence { host: BAD.into(), version: Some(BAD.into()), message: Some(BAD.into()), evidence }],
    };
    let outcome = Outcome {
        rule_id: "some-rule".into(),
        outcome: OutcomeKind::Fired,
        reason: Some(BAD.into()),
        hosts: vec![HostOutcome { host: BAD.into(), outcome: OutcomeKind::Inconclusive, reason: Some(BAD.into()) }],
    };
    Report::of(super::super::Run {
        target: BAD.into(),
        evaluation: Evaluation { outcomes: vec![outcome], findings: vec![finding] },
        policy: crate::verdict::Policy { fail_on: Some(Severity::High), allow_inconclusive: false },
        errors: vec![super::super::RunError::plain(BAD)],
        failure: None,
        warnings: vec![BAD.into()],
        rules: vec![RuleInfo {
            id: "some-rule".into(),
            title: BAD.into(),
            description: BAD.into(),
            severity: Severity::High,
            tags: vec![BAD.into()],
            category: BAD.into(),
            help_uri: Some(format!("https://example.com/{BAD}")),
        }],
        artifact_base: String::new(),
    })
}

#[test]
fn every_text_of_a_report_is_escaped() {
    let page = render(&hostile_report());
    assert_eq!(page.matches("<script").count(), 1, "only the page's own script");
    assert!(!page.contains("<img"), "no element from the report's texts");
    assert!(!page.contains("'><"), "no attribute closed by a report's text");
    let escaped = esc("x\"'><script>alert(1)</script>&amp;<img src=x onerror=alert(2)>");
    // target, title, message, object, file, evidence, replicas, fixes, rule, errors, reasons
    assert!(page.matches(escaped.as_str()).count() >= 20, "the texts are shown, escaped");
    assert!(page.contains("&amp;amp;"), "an entity in a name stays the text it is");
}

#[test]
fn base64_matches_the_standard_alphabet() {
    assert_eq!(base64(b""), "");
    assert_eq!(base64(b"f"), "Zg==");
    assert_eq!(base64(b"fo"), "Zm8=");
    assert_eq!(base64(b"foo"), "Zm9v");
    assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    assert_eq!(base64(&[0xfb, 0xff]), "+/8=");
}

#[test]
fn the_script_ends_no_element_early() {
    // the inline script is the page's only script: it must not close its own element
    assert!(!SCRIPT.contains("</"));
    assert!(!STYLE.contains("</"));
}
