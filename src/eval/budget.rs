//! A time budget for each rule's evaluation. The CEL interpreter has no step hook, but it
//! asks the root context's variable resolver every time an expression reaches for a fact
//! (`config`, `live`, ...), and every loop over the facts does so at each pass of the
//! enclosing loops. The resolver installed here checks the rule's deadline there (a
//! thread-local: a rule is evaluated on one thread); once it has passed, every further
//! lookup of a fact gives `null`, so the loops end at once, and the rule is `errored`
//! whatever the expression returned. Loops over literal lists only, which never reach for
//! a fact, are bounded by the size of the rule's own text.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cel::common::types::CelNull;
use cel::common::value::CowVal;
use cel::context::VariableResolver;

/// The budget of one rule, unless [`set_limit`] says otherwise.
pub const DEFAULT_LIMIT: Duration = Duration::from_secs(10);

static LIMIT_MS: AtomicU64 = AtomicU64::new(DEFAULT_LIMIT.as_millis() as u64);

/// The budget of every rule from now on (`--rule-budget`).
pub fn set_limit(limit: Duration) {
    LIMIT_MS.store(limit.as_millis().max(1) as u64, Ordering::Relaxed);
}

fn limit() -> Duration {
    Duration::from_millis(LIMIT_MS.load(Ordering::Relaxed))
}

thread_local! {
    /// The deadline of the rule evaluating on this thread, and whether it has passed.
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
    static EXHAUSTED: Cell<bool> = const { Cell::new(false) };
    static LOOKUPS: Cell<u32> = const { Cell::new(0) };
}

/// The resolver to install on the facts' root context.
pub static WATCH: Watch = Watch;

pub struct Watch;

impl VariableResolver for Watch {
    fn resolve<'b>(&'b self, _variable: &str) -> Option<CowVal<'b, 'b>> {
        if EXHAUSTED.get() {
            return Some(CowVal::owned(CelNull));
        }
        // the clock every 64 lookups: a lookup costs some nanoseconds, the clock about 20
        let n = LOOKUPS.get().wrapping_add(1);
        LOOKUPS.set(n);
        if n.is_multiple_of(64) && DEADLINE.get().is_some_and(|deadline| Instant::now() >= deadline) {
            EXHAUSTED.set(true);
            return Some(CowVal::owned(CelNull));
        }
        None
    }
}

/// Runs one rule's evaluation within the budget: its result, or why it was stopped.
pub fn within<T>(evaluate: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    within_limit(limit(), evaluate)
}

fn within_limit<T>(limit: Duration, evaluate: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    DEADLINE.set(Some(Instant::now() + limit));
    EXHAUSTED.set(false);
    let result = evaluate();
    DEADLINE.set(None);
    if EXHAUSTED.replace(false) {
        return Err(format!(
            "stopped after {:.1} s, the evaluation budget of a rule (--rule-budget): its loops over the facts \
             (nested exists/all/map/filter) cost too much on these facts",
            limit.as_secs_f64()
        ));
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::expr::Expr;

    fn context_with_items<'a>() -> cel::Context<'a, 'a> {
        let mut context = crate::rules::expr::context();
        context.set_variable_resolver(&WATCH);
        context.add_variable_from_value("items", (0..300).collect::<Vec<i64>>());
        context
    }

    fn compile(source: &str) -> Expr {
        Expr::compile(source, crate::config::Origin { file: crate::config::FileId(0), offset: 0 }).ok().unwrap()
    }

    #[test]
    fn nested_loops_over_the_facts_are_stopped_at_the_budget() {
        // 300^4 = 8.1e9 steps: ran for hours
        let context = context_with_items();
        let bomb = compile("items.exists(a, items.exists(b, items.exists(c, items.exists(d, a + b + c + d < 0))))");
        let started = Instant::now();
        let err = within_limit(Duration::from_millis(300), || bomb.eval(&context)).unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
        assert!(err.contains("evaluation budget"), "{err}");
        // the next rule on this thread has its whole budget again
        let quick = compile("items.exists(a, a == 299)");
        assert_eq!(within_limit(Duration::from_millis(300), || quick.eval(&context)), Ok(cel::Value::Bool(true)));
    }
}
