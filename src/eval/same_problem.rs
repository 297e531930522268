//! One finding per problem: a live rule that sees on the running server what a config rule
//! sees in the files (the config rule's `live_twin`) reports the same object twice when both
//! sources are audited (`--config` with `--dsn`). The live finding then joins the config
//! finding as its second evidence.

use serde_json::{Value, json};

use super::finding::Finding;

/// Folds every live finding of a pair (live rule, config rule) into the config finding about
/// the same object.
pub fn merge(findings: Vec<Finding>, pairs: &[(String, String)]) -> Vec<Finding> {
    // taken out in place: the others (100,000 findings of a large tree) are not moved
    let mut kept = findings;
    let live: Vec<Finding> = kept.extract_if(.., |f| pairs.iter().any(|(l, _)| *l == f.rule_id)).collect();
    for f in live {
        // a live rule may be the twin of several config rules (the default user's and the others')
        let twin_of = |k: &Finding| pairs.iter().any(|(l, c)| *l == f.rule_id && *c == k.rule_id);
        let twin = f.object.as_ref().and_then(|o| kept.iter_mut().find(|k| twin_of(k) && k.object.as_ref() == Some(o)));
        match twin {
            Some(twin) => {
                twin.evidence.insert(
                    "live".into(),
                    json!({"rule": f.rule_id, "message": f.message, "evidence": Value::from(f.evidence)}),
                );
                twin.severity = twin.severity.max(f.severity);
                twin.score = twin.score.max(f.score);
            }
            None => kept.push(f),
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::Severity;

    fn finding(rule_id: &str, severity: Severity, table: &str) -> Finding {
        crate::eval::finding::example(rule_id, severity, &format!("{rule_id} {table}"), Some(table))
    }

    #[test]
    fn a_live_finding_joins_the_config_finding_about_the_same_table() {
        let pairs = [("live-system-log-without-ttl".to_string(), "system-log-without-ttl".to_string())];
        let merged = merge(
            vec![
                finding("system-log-without-ttl", Severity::Medium, "part_log"),
                finding("live-system-log-without-ttl", Severity::Medium, "part_log"),
                finding("live-system-log-without-ttl", Severity::Medium, "query_log"),
            ],
            &pairs,
        );
        assert_eq!(merged.len(), 2, "{merged:?}");
        let part_log = merged.iter().find(|f| f.rule_id == "system-log-without-ttl").expect("config finding kept");
        assert_eq!(part_log.evidence["live"]["rule"], "live-system-log-without-ttl");
        assert!(
            merged
                .iter()
                .any(|f| f.rule_id == "live-system-log-without-ttl" && f.object.as_deref() == Some("query_log"))
        );
    }
}
