//! A time budget for each rule's evaluation. The CEL interpreter has no step hook, so the
//! budget is checked in two places: every loop of a compiled expression calls [`CHECK`] at
//! each pass (the syntax tree is rewritten once, at compile time, by [`guard`]), and the
//! root context's variable resolver checks it every time an expression reaches for a fact.
//! The deadline is a thread-local (a rule is evaluated on one thread); once it has passed,
//! the loop check fails the evaluation and every further lookup of a fact gives `null`, so
//! the loops end at once, whatever they loop over (facts or literal lists), and the rule is
//! `errored` whatever the expression returned.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use cel::common::ast::{CallExpr, Expr, IdedExpr, operators};
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

/// The function every loop pass calls (a name no rule can write: it is not an identifier).
pub const CHECK: &str = "@budget";

/// [`CHECK`]: its argument itself (not converted to a `cel::Value`: it may be a fact's map,
/// see `facts::value`) while the rule is within its budget, an error after.
pub fn check() -> crate::rules::expr::Function {
    Box::new(|call| {
        if !pass() {
            return Err(cel::ExecutionError::function_error(CHECK, "the evaluation budget is spent"));
        }
        Ok(if call.args.is_empty() { CowVal::owned(CelNull) } else { call.args.swap_remove(0) })
    })
}

/// One loop pass: whether the rule evaluating on this thread is still within its budget.
pub fn pass() -> bool {
    let n = LOOKUPS.get().wrapping_add(1);
    LOOKUPS.set(n);
    if EXHAUSTED.get() || (n.is_multiple_of(64) && DEADLINE.get().is_some_and(|deadline| Instant::now() >= deadline)) {
        EXHAUSTED.set(true);
        return false;
    }
    true
}

/// `expr` with a [`CHECK`] in each loop's per-pass condition, or, where the interpreter
/// needs that condition literal (`map`, `filter`), around the filter's test or the mapped
/// value: the shapes it runs in place stay those shapes. The same walk moves a literal
/// compared to a fact to the right of `==` (see `facts::value::facts_answer_equality`) and
/// reads a name's field as an index (`u.name` as `u["name"]`): the expression evaluated is
/// this one.
pub fn guard(expr: &IdedExpr) -> IdedExpr {
    let mut expr = expr.clone();
    guard_in_place(&mut expr);
    expr
}

fn checked(expr: &mut IdedExpr) {
    let inner = std::mem::take(expr);
    *expr = IdedExpr {
        id: inner.id,
        expr: Expr::Call(CallExpr { func_name: CHECK.to_string(), target: None, args: vec![inner] }),
    };
}

fn guard_in_place(expr: &mut IdedExpr) {
    match &mut expr.expr {
        Expr::Call(call) => {
            crate::facts::value::facts_answer_equality(call);
            if let Some(target) = call.target.as_mut() {
                guard_in_place(target);
            }
            call.args.iter_mut().for_each(guard_in_place);
        }
        Expr::Comprehension(c) => {
            for part in [&mut c.iter_range, &mut c.accu_init, &mut c.loop_cond, &mut c.loop_step, &mut c.result] {
                guard_in_place(part);
            }
            if !matches!(c.loop_cond.expr, Expr::Literal(_)) {
                checked(&mut c.loop_cond);
                return;
            }
            match &mut c.loop_step.expr {
                // filter, exists_one: `test ? step : @result`
                Expr::Call(step) if step.func_name == operators::CONDITIONAL && !step.args.is_empty() => {
                    checked(&mut step.args[0]);
                }
                // map: `@result + [value]`
                Expr::Call(step) if step.func_name == operators::ADD && step.args.len() == 2 => {
                    match &mut step.args[1].expr {
                        Expr::List(list) => list.elements.iter_mut().for_each(checked),
                        _ => checked(&mut c.loop_step),
                    }
                }
                _ => checked(&mut c.loop_step),
            }
        }
        Expr::List(list) => list.elements.iter_mut().for_each(guard_in_place),
        Expr::Map(map) => {
            for entry in &mut map.entries {
                match &mut entry.expr {
                    cel::common::ast::EntryExpr::MapEntry(e) => {
                        guard_in_place(&mut e.key);
                        guard_in_place(&mut e.value);
                    }
                    cel::common::ast::EntryExpr::StructField(f) => guard_in_place(&mut f.value),
                }
            }
        }
        // `u.name`: the interpreter looks a qualified name up as a whole first (`u.name` joined,
        // then sought in every scope, then `u`); `u["name"]` is the same field of the same
        // value, looked up at once (a fifth of an evaluation over 2,000 users went to that
        // search). `has(u.name)` is left as it is; `u.a.b` selects `b` from `u["a"]`
        Expr::Select(select) if !select.test && matches!(select.operand.expr, Expr::Ident(_)) => {
            let name = cel::common::ast::LiteralValue::String(std::mem::take(&mut select.field).into());
            let field = IdedExpr { id: expr.id, expr: Expr::Literal(name) };
            let operand = std::mem::take(&mut *select.operand);
            expr.expr = Expr::Call(CallExpr {
                func_name: operators::INDEX.to_string(),
                target: None,
                args: vec![operand, field],
            });
        }
        Expr::Select(select) => guard_in_place(&mut select.operand),
        Expr::Struct(s) => {
            for entry in &mut s.entries {
                if let cel::common::ast::EntryExpr::StructField(f) = &mut entry.expr {
                    guard_in_place(&mut f.value);
                }
            }
        }
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
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
            "stopped after {:.1} s, the evaluation budget of a rule (--rule-budget): its loops \
             (nested exists/all/map/filter) cost too much",
            limit.as_secs_f64()
        ));
    }
    result
}

/// `f` of each item on every core, in order, each under the budget of the rule evaluating
/// on this thread: the items of one rule share its deadline, and a helper that spends the
/// budget spends the rule's.
pub fn on_every_core<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let deadline = DEADLINE.get();
    let judged = crate::parallel::on_every_core(items, |item| {
        let outer = (DEADLINE.replace(deadline), EXHAUSTED.replace(false));
        let result = f(item);
        let spent = EXHAUSTED.get();
        DEADLINE.set(outer.0);
        EXHAUSTED.set(outer.1 || spent);
        (result, spent)
    });
    if judged.iter().any(|(_, spent)| *spent) {
        EXHAUSTED.set(true);
    }
    judged.into_iter().map(|(result, _)| result).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::expr::Expr;

    fn context_with_items<'a>() -> cel::Context<'a, 'a> {
        let mut context = crate::rules::expr::context(crate::facts::catalog::builtin());
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

    #[test]
    fn a_rule_judged_on_every_core_shares_its_budget() {
        let context = context_with_items();
        let bomb = compile("items.exists(a, items.exists(b, items.exists(c, a + b + c < 0)))");
        let started = Instant::now();
        let err = within_limit(Duration::from_millis(300), || {
            // each helper thread stops at the rule's deadline, and its spent budget is the rule's
            on_every_core(&[0, 1, 2, 3], |_| bomb.eval(&context)).into_iter().collect::<Result<Vec<_>, _>>()
        })
        .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
        assert!(err.contains("evaluation budget"), "{err}");
        let quick = compile("items.exists(a, a == 299)");
        let judged = within_limit(Duration::from_millis(300), || Ok(on_every_core(&[0, 1], |_| quick.eval(&context))));
        assert_eq!(judged, Ok(vec![Ok(cel::Value::Bool(true)), Ok(cel::Value::Bool(true))]));
    }

    #[test]
    fn loops_over_literal_lists_are_stopped_at_the_budget() {
        let context = context_with_items();
        let list = format!("[{}]", (0..300).map(|i| i.to_string()).collect::<Vec<_>>().join(","));
        for bomb in [
            format!("{list}.exists(a, {list}.exists(b, {list}.exists(c, {list}.exists(d, a + b + c + d < 0))))"),
            format!("[items].exists(all, {list}.map(a, {list}.filter(b, {list}.exists(c, a + b + c < 0))).size() > 0)"),
            format!("{list}.all(a, {list}.exists_one(b, {list}.all(c, {list}.all(d, a + b + c + d >= 0))))"),
        ] {
            let started = Instant::now();
            let err = within_limit(Duration::from_millis(300), || compile(&bomb).eval(&context)).unwrap_err();
            assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
            assert!(err.contains("evaluation budget"), "{err}");
        }
        // the checks change no result
        let plain = compile(
            "[1, 2, 3].map(x, x * 2).filter(y, y > 2).exists_one(z, z == 4) && [[1]].all(l, l.exists(v, v == 1))",
        );
        assert_eq!(within_limit(Duration::from_millis(300), || plain.eval(&context)), Ok(cel::Value::Bool(true)));
    }

    #[test]
    fn a_names_field_read_as_an_index_is_the_same_field() {
        let mut context = context_with_items();
        let user = serde_json::json!({"name": "u", "settings": {"max_threads": 8}});
        context.add_variable_from_value("user", cel::to_value(&user).unwrap());
        let eval = |source: &str| within(|| compile(source).eval(&context));
        assert_eq!(eval("user.settings.max_threads == 8 && user.name == 'u'"), Ok(cel::Value::Bool(true)));
        assert_eq!(
            eval("has(user.settings.max_threads) && !has(user.settings.min_threads)"),
            Ok(cel::Value::Bool(true))
        );
        assert_eq!(eval("[user].exists(u, u.name == 'u')"), Ok(cel::Value::Bool(true)));
        let missing = eval("user.nothing == 1").unwrap_err();
        assert!(missing.contains("No such key: nothing"), "{missing}");
    }
}
