//! A config rule's live twin: the rule that judges the same object on the running server.
//!
//! The offline audit of a tree and the live audit of the server started on it judge one
//! state; `live_twin:` says which live rule makes each config rule's judgement there, or why
//! none can (`none: ...`, printed on the rule's page). The combined audit folds a live
//! finding into its twin's ([`crate::eval`]), and the parity harness (tests/parity_engine.rs)
//! proves on the real server that both name the same objects.

use crate::facts::Source;

use super::schema::Rule;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LiveTwin {
    /// This live rule names the same objects on the running server.
    Rule(String),
    /// No live rule can: why (what the running server does not show).
    None(String),
}

/// Whether a named twin is a rule of `rules` that reads the running server: Err says why not.
pub fn check(rule: &Rule, rules: &[Rule]) -> Result<(), String> {
    let Some(LiveTwin::Rule(id)) = &rule.live_twin else { return Ok(()) };
    match rules.iter().find(|r| r.id == *id) {
        None => Err(format!("`live_twin` names `{id}`, which is no rule of the pack")),
        Some(twin) if !twin.sources.contains(&Source::Live) => {
            Err(format!("`live_twin` names `{id}`, which does not read the running server (applies.sources: live)"))
        }
        Some(_) => Ok(()),
    }
}

/// (live rule, config rule) for every config rule of `rules` with a live twin.
pub fn pairs(rules: &[Rule]) -> Vec<(String, String)> {
    rules
        .iter()
        .filter_map(|r| match &r.live_twin {
            Some(LiveTwin::Rule(live)) if *live != r.id => Some((live.clone(), r.id.clone())),
            _ => None,
        })
        .collect()
}
