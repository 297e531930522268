//! The expression shapes rules write most, evaluated without the interpreter: a loop
//! (`filter`, `exists`, `all`, `map`) over the facts whose test reads the item's fields,
//! compares them with literals, and calls `num`/`truthy`. The interpreter binds each item in
//! a new scope, finds every name through its scopes and every function through its overload
//! table: some 5,000 instructions per item and rule over 2,000 users.
//!
//! An expression is compiled to a [`Native`] tree once, from the tree the interpreter would
//! run (the budget-guarded one, see `budget::guard`), when every node is of a shape known
//! here; else it has none and the interpreter runs it. Each node does what the interpreter
//! does on the way that succeeds, through the same value methods (`equals`, `compare`, an
//! indexer's `get`), and gives up where the interpreter would err or do anything else: the
//! interpreter then evaluates the expression from the start, and says what it says. So an
//! answer is the interpreter's answer; a test compares the two on every built-in rule's
//! fixtures.

use std::cmp::Ordering;

use cel::Context;
use cel::common::ast::{CallExpr, ComprehensionExpr, Expr as Ast, IdedExpr, LiteralValue, operators};
use cel::common::types::{CelBool, CelDouble, CelList, CelOptional, CelString, Kind};
use cel::common::value::{CowVal, Val};

use crate::rules::budget;

/// An expression as the audit evaluates it itself.
#[derive(Debug)]
pub struct Native(Node);

#[derive(Debug)]
enum Node {
    Literal(LiteralValue),
    /// The item of an enclosing loop: 0 the innermost.
    Item(usize),
    /// A variable of the context (a fact's root, a rule's item or parameter).
    Variable(String),
    /// `value[index]`, and `value.field` (the guarded tree reads a name's field as an index).
    Index(Box<Node>, Box<Node>),
    /// `has(value.field)`.
    Has(Box<Node>, String),
    List(Vec<Node>),
    Not(Box<Node>),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Equals {
        left: Box<Node>,
        right: Box<Node>,
        equal: bool,
    },
    Compare {
        left: Box<Node>,
        right: Box<Node>,
        holds: fn(Ordering) -> bool,
    },
    In(Box<Node>, Box<Node>),
    Conditional(Box<Node>, Box<Node>, Box<Node>),
    /// The budget check of a loop pass, around its value.
    Budget(Box<Node>),
    /// `num(value)` and `truthy(value)`, the functions `rules::expr` registers.
    Number(Box<Node>),
    Truthy(Box<Node>),
    Loop(Box<Loop>),
}

#[derive(Debug)]
struct Loop {
    kind: LoopKind,
    range: Node,
    /// The test (`filter`, `exists`, `all`) or the mapped value (`map`), of the item.
    body: Node,
}

#[derive(Debug, Clone, Copy)]
enum LoopKind {
    Filter,
    Map,
    Exists,
    All,
}

/// The items bound by the enclosing loops, innermost first.
struct Scope<'s, 'v> {
    item: &'s (dyn Val + 'v),
    outer: Option<&'s Scope<'s, 'v>>,
}

impl Native {
    /// `guarded` as a native tree, if every node of it is of a known shape.
    pub fn compile(guarded: &IdedExpr) -> Option<Native> {
        Compiler { items: Vec::new() }.node(guarded).map(Native)
    }

    /// The expression's value, or `None` where the interpreter must say (an error, or a value
    /// the native nodes do not take).
    pub fn eval<'s, 'v>(&'s self, context: &'s Context<'_, 'v>) -> Option<CowVal<'s, 'v>> {
        value(&self.0, context, None)
    }
}

struct Compiler<'a> {
    /// The names the enclosing loops bind, innermost last.
    items: Vec<&'a str>,
}

impl<'a> Compiler<'a> {
    fn node(&mut self, expr: &'a IdedExpr) -> Option<Node> {
        Some(match &expr.expr {
            Ast::Literal(literal) => Node::Literal(literal.clone()),
            Ast::Ident(name) => match self.items.iter().rev().position(|bound| bound == name) {
                Some(depth) => Node::Item(depth),
                None => Node::Variable(name.clone()),
            },
            Ast::Select(select) if select.test => Node::Has(self.boxed(&select.operand)?, select.field.clone()),
            // `u.a.b`: the guard leaves `.b` a selection from `u["a"]`, which the interpreter
            // indexes as it indexes `u["a"]["b"]`
            Ast::Select(select) => {
                let field = Node::Literal(LiteralValue::String(select.field.clone().into()));
                Node::Index(self.boxed(&select.operand)?, Box::new(field))
            }
            Ast::List(list) if list.optional_indices.is_empty() => {
                Node::List(list.elements.iter().map(|e| self.node(e)).collect::<Option<_>>()?)
            }
            Ast::Call(call) if call.target.is_none() => self.call(call)?,
            Ast::Comprehension(comprehension) => Node::Loop(Box::new(self.comprehension(comprehension)?)),
            _ => return None,
        })
    }

    fn boxed(&mut self, expr: &'a IdedExpr) -> Option<Box<Node>> {
        self.node(expr).map(Box::new)
    }

    fn call(&mut self, call: &'a CallExpr) -> Option<Node> {
        Some(match (call.func_name.as_str(), call.args.as_slice()) {
            (operators::LOGICAL_NOT, [operand]) => Node::Not(self.boxed(operand)?),
            (operators::LOGICAL_AND, [left, right]) => Node::And(self.boxed(left)?, self.boxed(right)?),
            (operators::LOGICAL_OR, [left, right]) => Node::Or(self.boxed(left)?, self.boxed(right)?),
            (operators::EQUALS, [left, right]) => {
                Node::Equals { left: self.boxed(left)?, right: self.boxed(right)?, equal: true }
            }
            (operators::NOT_EQUALS, [left, right]) => {
                Node::Equals { left: self.boxed(left)?, right: self.boxed(right)?, equal: false }
            }
            (operators::INDEX, [value, index]) => Node::Index(self.boxed(value)?, self.boxed(index)?),
            (operators::IN, [needle, haystack]) => Node::In(self.boxed(needle)?, self.boxed(haystack)?),
            (operators::CONDITIONAL, [test, then, otherwise]) => {
                Node::Conditional(self.boxed(test)?, self.boxed(then)?, self.boxed(otherwise)?)
            }
            (budget::CHECK, [value]) => Node::Budget(self.boxed(value)?),
            ("num", [value]) => Node::Number(self.boxed(value)?),
            ("truthy", [value]) => Node::Truthy(self.boxed(value)?),
            (operator, [left, right]) => {
                let holds: fn(Ordering) -> bool = match operator {
                    operators::LESS => Ordering::is_lt,
                    operators::LESS_EQUALS => Ordering::is_le,
                    operators::GREATER => Ordering::is_gt,
                    operators::GREATER_EQUALS => Ordering::is_ge,
                    _ => return None,
                };
                Node::Compare { left: self.boxed(left)?, right: self.boxed(right)?, holds }
            }
            _ => return None,
        })
    }

    /// The loops the `filter`, `map`, `exists` and `all` macros expand to, as the budget
    /// guard writes them; any other comprehension is the interpreter's.
    fn comprehension(&mut self, c: &'a ComprehensionExpr) -> Option<Loop> {
        if c.iter_var2.is_some() || !is_ident(&c.result, &c.accu_var) {
            return None;
        }
        let range = self.node(&c.iter_range)?;
        let accu = |e: &IdedExpr| is_ident(e, &c.accu_var);
        let (kind, body) = match (&c.accu_init.expr, unguarded(&c.loop_cond), call_of(&c.loop_step)) {
            // filter: `test ? @result + [item] : @result`
            (
                Ast::List(init),
                Ast::Literal(LiteralValue::Boolean(t)),
                Some((operators::CONDITIONAL, [test, add, rest])),
            ) if init.elements.is_empty() && *t.inner() && accu(rest) => {
                let [item] = appended(add, &c.accu_var)? else { return None };
                is_ident(item, &c.iter_var).then_some((LoopKind::Filter, unguarded_expr(test)))?
            }
            // map: `@result + [value]`
            (Ast::List(init), Ast::Literal(LiteralValue::Boolean(t)), Some((operators::ADD, _)))
                if init.elements.is_empty() && *t.inner() =>
            {
                let [value] = appended(&c.loop_step, &c.accu_var)? else { return None };
                (LoopKind::Map, unguarded_expr(value))
            }
            // exists: `@result || test`, while `!@result` is not false
            (Ast::Literal(LiteralValue::Boolean(init)), cond, Some((operators::LOGICAL_OR, [result, test])))
                if !*init.inner() && accu(result) && strictly_not_false(cond, &c.accu_var, true) =>
            {
                (LoopKind::Exists, test)
            }
            // all: `@result && test`, while `@result` is not false
            (Ast::Literal(LiteralValue::Boolean(init)), cond, Some((operators::LOGICAL_AND, [result, test])))
                if *init.inner() && accu(result) && strictly_not_false(cond, &c.accu_var, false) =>
            {
                (LoopKind::All, test)
            }
            _ => return None,
        };
        self.items.push(&c.iter_var);
        let body = self.node(body);
        self.items.pop();
        Some(Loop { kind, range, body: body? })
    }
}

fn is_ident(expr: &IdedExpr, name: &str) -> bool {
    matches!(&expr.expr, Ast::Ident(n) if n == name)
}

fn call_of(expr: &IdedExpr) -> Option<(&str, &[IdedExpr])> {
    match &expr.expr {
        Ast::Call(call) if call.target.is_none() => Some((call.func_name.as_str(), call.args.as_slice())),
        _ => None,
    }
}

/// The expression inside a budget check (the native loop checks the budget at each pass).
fn unguarded_expr(expr: &IdedExpr) -> &IdedExpr {
    match call_of(expr) {
        Some((budget::CHECK, [inner])) => inner,
        _ => expr,
    }
}

fn unguarded(expr: &IdedExpr) -> &Ast {
    &unguarded_expr(expr).expr
}

/// The elements of `@result + [elements]`.
fn appended<'e>(expr: &'e IdedExpr, accu: &str) -> Option<&'e [IdedExpr]> {
    match call_of(expr)? {
        (operators::ADD, [result, IdedExpr { expr: Ast::List(list), .. }])
            if is_ident(result, accu) && list.optional_indices.is_empty() =>
        {
            Some(&list.elements)
        }
        _ => None,
    }
}

/// `@not_strictly_false(!@result)` (`negated`) or `@not_strictly_false(@result)`.
fn strictly_not_false(cond: &Ast, accu: &str, negated: bool) -> bool {
    let Ast::Call(call) = cond else { return false };
    let [arg] = call.args.as_slice() else { return false };
    let result = match (negated, call_of(arg)) {
        (true, Some((operators::LOGICAL_NOT, [result]))) => result,
        (false, _) => arg,
        _ => return false,
    };
    call.func_name == operators::NOT_STRICTLY_FALSE && call.target.is_none() && is_ident(result, accu)
}

fn boolean(value: bool) -> CowVal<'static, 'static> {
    CowVal::Borrowed(if value { &CelBool::TRUE } else { &CelBool::FALSE })
}

fn value<'s, 'v>(
    node: &'s Node,
    context: &'s Context<'_, 'v>,
    scope: Option<&'s Scope<'s, 'v>>,
) -> Option<CowVal<'s, 'v>> {
    let truth = |node: &'s Node| test(node, context, scope);
    let of = |node: &'s Node| value(node, context, scope);
    Some(match node {
        Node::Literal(literal) => literal.to_val(),
        Node::Item(depth) => {
            let mut bound = scope?;
            for _ in 0..*depth {
                bound = bound.outer?;
            }
            CowVal::Borrowed(bound.item)
        }
        Node::Variable(name) => context.get_variable(name)?,
        Node::Index(operand, index) => {
            let operand = of(operand)?;
            let index = of(index)?;
            index_into(operand, index.as_ref())?
        }
        Node::Has(operand, field) => {
            let operand = of(operand)?;
            if operand.downcast_ref::<CelOptional>().is_some() {
                return None;
            }
            let field = CelString::from(field.as_str());
            // a map has the key or not: its value is not built, nor an error for its absence
            if operand.get_type().kind() == Kind::Map
                && let Some(map) = operand.as_container()
            {
                return Some(boolean(map.contains(&field).ok()?));
            }
            match operand.as_indexer()?.get(&field) {
                Ok(_) => boolean(true),
                Err(cel::ExecutionError::NoSuchKey(_)) => boolean(false),
                Err(_) => return None,
            }
        }
        Node::List(items) => {
            let items = items.iter().map(|item| of(item).map(CowVal::into_owned)).collect::<Option<Vec<_>>>()?;
            CowVal::owned(CelList::from(items))
        }
        Node::Not(operand) => boolean(!truth(operand)?),
        Node::And(left, right) => boolean(truth(left)? && truth(right)?),
        Node::Or(left, right) => boolean(truth(left)? || truth(right)?),
        Node::Equals { left, right, equal } => boolean(of(left)?.as_ref().equals(of(right)?.as_ref()) == *equal),
        Node::Compare { left, right, holds } => {
            let (left, right) = (of(left)?, of(right)?);
            boolean(holds(left.as_comparer()?.compare(right.as_ref()).ok()?))
        }
        Node::In(needle, haystack) => {
            let (needle, haystack) = (of(needle)?, of(haystack)?);
            boolean(haystack.as_container()?.contains(needle.as_ref()).ok()?)
        }
        Node::Conditional(condition, then, otherwise) => of(if truth(condition)? { then } else { otherwise })?,
        Node::Budget(inner) => {
            if !budget::pass() {
                return None;
            }
            of(inner)?
        }
        Node::Number(operand) => CowVal::owned(CelDouble::from(number(of(operand)?.as_ref())?)),
        Node::Truthy(operand) => boolean(number(of(operand)?.as_ref())? != 0.0),
        Node::Loop(each) => run(each, context, scope)?,
    })
}

/// A node's value that must be a boolean, as the interpreter's logical operators take one.
fn test<'s, 'v>(node: &'s Node, context: &'s Context<'_, 'v>, scope: Option<&'s Scope<'s, 'v>>) -> Option<bool> {
    value(node, context, scope)?.downcast_ref::<CelBool>().map(|b| *b.inner())
}

/// `value[index]` as the interpreter indexes: an owned value's element copied out.
fn index_into<'s, 'v>(value: CowVal<'s, 'v>, index: &dyn Val) -> Option<CowVal<'s, 'v>> {
    if value.downcast_ref::<CelOptional>().is_some() {
        return None;
    }
    match value {
        CowVal::Borrowed(v) => v.as_indexer()?.get(index).ok(),
        CowVal::Owned(v) => v.as_indexer()?.get(index).ok().map(|e| CowVal::Owned(e.into_owned())),
    }
}

/// `num`'s number of a value (`rules::expr::number_of` of it as converted for a function).
fn number(value: &dyn Val) -> Option<f64> {
    match value.downcast_ref::<CelString>() {
        Some(text) => Some(crate::rules::expr::parse_number(text.inner())),
        None => crate::facts::value::to_value(value).ok().map(|v| crate::rules::expr::number_of(&v)),
    }
}

/// A loop over its range's items, each bound in a scope of its own, the budget checked at
/// each pass.
fn run<'s, 'v>(
    each: &'s Loop,
    context: &'s Context<'_, 'v>,
    scope: Option<&'s Scope<'s, 'v>>,
) -> Option<CowVal<'s, 'v>> {
    let range = value(&each.range, context, scope)?;
    let mut items = range.as_iterable()?.iter();
    let mut kept = Vec::new();
    while let Some(item) = items.next() {
        if !budget::pass() {
            return None;
        }
        let inner = Scope { item, outer: scope };
        match each.kind {
            LoopKind::Filter => {
                if test(&each.body, context, Some(&inner))? {
                    kept.push(item.clone_as_boxed());
                }
            }
            LoopKind::Map => kept.push(value(&each.body, context, Some(&inner))?.into_owned()),
            LoopKind::Exists if test(&each.body, context, Some(&inner))? => return Some(boolean(true)),
            LoopKind::All if !test(&each.body, context, Some(&inner))? => return Some(boolean(false)),
            LoopKind::Exists | LoopKind::All => {}
        }
    }
    Some(match each.kind {
        LoopKind::Filter | LoopKind::Map => CowVal::owned(CelList::from(kept)),
        LoopKind::Exists => boolean(false),
        LoopKind::All => boolean(true),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::expr::cross_check::ANSWERED;

    #[test]
    fn every_rule_fixture_gets_the_interpreters_values() {
        let pack = crate::rules::RulePack::load(true, &[]).ok().unwrap();
        let failed: Vec<_> = crate::ruletest::run(&pack).into_iter().filter(|r| r.failure.is_some()).collect();
        assert!(failed.is_empty(), "{failed:?}");
        let answered = ANSWERED.lock().unwrap();
        let differing: Vec<_> = answered.iter().filter(|(_, difference)| difference.is_some()).collect();
        assert!(differing.is_empty(), "{differing:?}");
        // the loops over users and profiles are the native tree's
        let natively: std::collections::BTreeSet<&str> = answered.iter().map(|(source, _)| source.as_str()).collect();
        for rule in &pack.rules {
            let Some(for_each) = &rule.for_each else { continue };
            if for_each.source.starts_with("config.users.filter(") || for_each.source.starts_with("config.profiles.") {
                assert!(natively.contains(for_each.source.as_str()), "{}: {}", rule.id, for_each.source);
            }
        }
        assert!(natively.len() > 300, "{} expressions answered natively", natively.len());
    }

    #[test]
    fn shapes_not_known_are_the_interpreters() {
        let origin = crate::config::Origin { file: crate::config::FileId(0), offset: 0 };
        let compiled = |source: &str| {
            let expr = crate::rules::expr::Expr::compile(source, origin).ok().unwrap();
            Native::compile(&budget::guard(expr.tree())).is_some()
        };
        assert!(compiled("config.users.filter(u, u.name != 'default' && has(u.settings.readonly))"));
        assert!(compiled(
            "config.users.exists(u, num(u.settings.max_threads) > 0.0) ? config.users.map(u, u.name) : []"
        ));
        assert!(!compiled("config.users.filter(u, u.name.startsWith('a'))"));
        assert!(!compiled("config.users.exists_one(u, u.name == 'a')"));
        assert!(!compiled("size(config.users) > 1"));
    }
}
