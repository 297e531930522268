//! A start-up problem's `check` compared with a text: the text must be a registered start-up
//! check (`StartCheck`), else the comparison never holds and the rule is refused; the checks
//! compared with are recorded, for the rule's page.

use super::*;
use crate::facts::keys;

impl Checker<'_> {
    /// `read` (a start-up problem's `check`) compared with `value`: a text that is no
    /// registered check would never match, and is a problem; a registered one is recorded.
    pub(super) fn start_check_compared(&mut self, read: &IdedExpr, value: &IdedExpr) {
        let Ast::Literal(LiteralValue::String(id)) = &value.expr else { return };
        let id: &str = id.as_ref();
        if !self.start_check_reads.contains(&read.id) {
            return;
        }
        match StartCheck::parse(id) {
            Some(check) => {
                self.start_checks.insert(check);
            }
            None => {
                let help = crate::suggest::closest(id, StartCheck::all().map(StartCheck::id))
                    .map(|s| format!("did you mean `{s}`?"))
                    .or_else(|| Some("the checks are listed in src/facts/startup/checks.rs".into()));
                self.problem(value, format!("`{id}` is no start-up check: no problem ever has it"), help);
            }
        }
    }
}

/// Whether `t` is the type of a start-up problem (`config.start_problems[]`).
pub(super) fn is_start_problem(t: &Type) -> bool {
    static ITEM: std::sync::OnceLock<Option<Type>> = std::sync::OnceLock::new();
    let item = ITEM.get_or_init(|| {
        let config = schema::catalog().roots.get(Source::Config.name())?;
        let Type::Map { fields, .. } = config.strict() else { return None };
        Some(item_type(fields.get(keys::config::START_PROBLEMS.name())?))
    });
    item.as_ref().is_some_and(|item| matches!(t.strict(), Type::Map { .. }) && t.strict() == item.strict())
}
