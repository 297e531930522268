//! A rule's expressions checked against the facts catalog when the pack loads: a misspelled
//! fact field, a setting name no ClickHouse has, a comparison of text with a number, or a
//! fact of a source the rule does not declare is a diagnostic, not a rule that silently
//! passes. The same walk derives the facts a rule needs (their absence makes it
//! inconclusive).

use std::collections::{BTreeMap, BTreeSet};

use cel::common::ast::{Expr as Ast, IdedExpr, LiteralValue, operators};

use super::expr::{Expr, Template};
use super::schema::{FactRef, Param, ParamType};
use crate::config::Origin;
use crate::facts::Source;
use crate::facts::catalog as settings;
use crate::facts::keys::{live, log};
use crate::facts::schema::{self, Type};
use crate::facts::startup::StartCheck;

mod kinds;
mod start_checks;

use kinds::mismatched;
use start_checks::is_start_problem;

/// Fields of a source document that describe the collection, not a fact of the server.
const META: &[&str] = &[
    live::ENDPOINT.name(),
    live::VERSION.name(),
    live::READONLY.name(),
    live::QUERY_ID_PREFIX.name(),
    live::UNAVAILABLE.name(),
    live::ABSENT.name(),
    log::WINDOW_SECONDS.name(),
];

/// The field name [`Checker::read`] gives a source read whole.
pub const WHOLE: &str = "*";

/// A problem in one expression: where in its text (byte offset) and what.
pub struct Problem {
    pub offset: usize,
    pub message: String,
    pub help: Option<String>,
}

/// What a rule's expressions read of the facts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reads {
    /// The facts it cannot run without: one that could not be read makes it inconclusive.
    pub needed: Vec<FactRef>,
    /// Every top-level field it reads (`config.disks`, `live.endpoint`, [`WHOLE`] for a source
    /// read whole): what an audit builds for it, and what its result depends on.
    pub fields: BTreeSet<FactRef>,
    /// The start-up checks it compares `config.start_problems[].check` with.
    pub start_checks: BTreeSet<StartCheck>,
}

/// A rule's expressions and what they are read with.
pub struct Expressions<'r> {
    pub sources: &'r [Source],
    pub optional: &'r [Source],
    pub params: &'r [Param],
    pub item: &'r str,
    pub for_each: Option<&'r Expr>,
    pub lets: &'r [(String, Expr)],
    pub when: Option<&'r Expr>,
    pub location: Option<&'r Expr>,
    pub impact: Option<&'r Expr>,
    pub object: Option<&'r Expr>,
    pub evidence: &'r [(String, Expr)],
    pub templates: Vec<&'r Template>,
}

impl<'r> Expressions<'r> {
    /// Every expression, template holes included.
    pub fn all(&self) -> Vec<&'r Expr> {
        let single = [self.for_each, self.when, self.location, self.impact, self.object].into_iter().flatten();
        let holes = self.templates.iter().flat_map(|t| t.holes());
        let named = self.lets.iter().chain(self.evidence).map(|(_, e)| e);
        single.chain(named).chain(holes).collect()
    }
}

/// A problem where it is written, with its message and help.
pub type Located = (Origin, String, Option<String>);

/// A rule's expressions checked together (the item `for_each` gives is typed in the others):
/// what they read, and the problems found.
pub fn rule(e: Expressions) -> (Reads, Vec<Located>) {
    let mut problems = Vec::new();
    let mut checker = Checker::new(e.sources, e.optional, e.params);
    if let Some(for_each) = e.for_each {
        let t = check_one(&mut checker, for_each, None, &mut problems);
        if !matches!(t.strict(), Type::List(_) | Type::Dict { .. } | Type::Any) {
            problems.push((for_each.origin, format!("`for_each` gives a {}, not a list", t.name()), None));
        }
        let item_type = item_type(&t);
        if e.object.is_none() && !names_itself(&item_type) {
            let fields = match item_type.strict() {
                Type::Map { fields, .. } => {
                    let text = fields.iter().filter(|(_, t)| matches!(t.strict(), Type::String));
                    text.map(|(f, _)| format!("{}.{f}", e.item)).collect::<Vec<_>>().join(", ")
                }
                _ => format!("{}[0]", e.item),
            };
            problems.push((
                for_each.origin,
                format!(
                    "`for_each` gives {} items with no `name`: `object:` says what each finding is about",
                    item_type.name()
                ),
                Some(format!(
                    "an expression naming the item from {fields}; the rule, the object and the file are a finding's fingerprint"
                )),
            ));
        }
        checker.bind(e.item, item_type);
    } else {
        checker.bind(e.item, Type::Any);
    }
    for (name, expr) in e.lets {
        let t = check_one(&mut checker, expr, None, &mut problems);
        checker.bind(name, t);
    }
    if let Some(when) = e.when {
        check_one(&mut checker, when, Some(Type::Bool), &mut problems);
    }
    if let Some(object) = e.object {
        check_one(&mut checker, object, Some(Type::String), &mut problems);
    }
    for expr in [e.location, e.impact].into_iter().flatten().chain(e.evidence.iter().map(|(_, x)| x)) {
        check_one(&mut checker, expr, None, &mut problems);
    }
    for hole in e.templates.iter().flat_map(|t| t.holes()) {
        check_one(&mut checker, hole, None, &mut problems);
    }
    let start_checks = std::mem::take(&mut checker.start_checks);
    (Reads { needed: checker.needed(), fields: checker.read(), start_checks }, problems)
}

/// One expression's type, its problems added to `out` where they are written.
fn check_one(checker: &mut Checker, e: &Expr, want: Option<Type>, out: &mut Vec<Located>) -> Type {
    let (t, problems) = checker.check(e);
    let one_line = !e.source.contains('\n');
    for p in problems {
        let at =
            if one_line { Origin { file: e.origin.file, offset: e.origin.offset + p.offset as u32 } } else { e.origin };
        out.push((at, p.message, p.help));
    }
    if let Some(want) = want
        && !matches!(t.strict(), Type::Any)
        && t.strict() != &want
    {
        out.push((e.origin, format!("gives a {}, not a {}", t.name(), want.name()), None));
    }
    t
}

/// What the walk learned of a rule.
pub struct Checker<'a> {
    required: &'a [Source],
    optional: &'a [Source],
    params: Type,
    /// Variables in scope: the item (`as`) and comprehension variables.
    scopes: Vec<(String, Type)>,
    /// (source, fact) pairs the expressions read.
    reads: BTreeSet<(Source, String)>,
    /// Facts tested for with `has()`: the rule handles their absence.
    guarded: BTreeSet<(Source, String)>,
    /// Fields describing the collection (`live.endpoint`, `live.unavailable`) the
    /// expressions read: not facts a rule needs, but what its result depends on.
    meta: BTreeSet<(Source, String)>,
    /// How often each source is named, and how often as `source.fact`: a source named
    /// otherwise (`live["settings"]`, passed whole) is read whole, as [`WHOLE`].
    named: BTreeMap<Source, (usize, usize)>,
    /// Undeclared sources already reported (once per rule).
    undeclared: BTreeSet<Source>,
    /// The problems found, by the id of the node they are about.
    problems: Vec<(u64, String, Option<String>)>,
    /// The nodes reading the `check` of a start-up problem (`p.check`).
    start_check_reads: BTreeSet<u64>,
    /// The start-up checks those are compared with.
    start_checks: BTreeSet<StartCheck>,
}

impl<'a> Checker<'a> {
    pub fn new(required: &'a [Source], optional: &'a [Source], params: &[Param]) -> Checker<'a> {
        let fields = params
            .iter()
            .map(|p| {
                let t = match p.kind {
                    ParamType::UInt => Type::UInt,
                    ParamType::Int => Type::Int,
                    ParamType::Float => Type::Float,
                    ParamType::Bool => Type::Bool,
                    ParamType::String => Type::String,
                };
                (p.name.clone(), t)
            })
            .collect();
        Checker {
            required,
            optional,
            params: Type::Map { fields: std::sync::Arc::new(fields), open: false },
            scopes: Vec::new(),
            reads: BTreeSet::new(),
            guarded: BTreeSet::new(),
            meta: BTreeSet::new(),
            named: BTreeMap::new(),
            undeclared: BTreeSet::new(),
            problems: Vec::new(),
            start_check_reads: BTreeSet::new(),
            start_checks: BTreeSet::new(),
        }
    }

    /// Checks one expression; returns its type (`Any` where it cannot tell) and the
    /// problems found in it.
    pub fn check(&mut self, expr: &Expr) -> (Type, Vec<Problem>) {
        // node ids are those of one expression
        self.start_check_reads.clear();
        let t = self.infer(expr.tree());
        if self.problems.is_empty() {
            return (t, Vec::new());
        }
        // where the problems are written: asked of the parser only when there are some
        let offsets = expr.offsets();
        let problems = std::mem::take(&mut self.problems)
            .into_iter()
            .map(|(node, message, help)| {
                let offset = offsets.as_ref().and_then(|info| info.offset_for(node));
                Problem { offset: offset.map_or(0, |(start, _)| start as usize), message, help }
            })
            .collect();
        (t, problems)
    }

    /// Binds the rule's item (`as`) for the expressions after `for_each`.
    pub fn bind(&mut self, name: &str, t: Type) {
        self.scopes.push((name.to_string(), t));
    }

    fn problem(&mut self, e: &IdedExpr, message: String, help: Option<String>) {
        self.problems.push((e.id, message, help));
    }

    fn lookup(&self, name: &str) -> Option<Type> {
        if let Some((_, t)) = self.scopes.iter().rev().find(|(n, _)| n == name) {
            return Some(t.clone());
        }
        match name {
            "version" => Some(Type::String),
            "params" => Some(self.params.clone()),
            _ => Source::parse(name).and_then(|_| schema::catalog().roots.get(name).cloned()),
        }
    }

    fn infer(&mut self, e: &IdedExpr) -> Type {
        match &e.expr {
            Ast::Ident(name) => {
                if let Some(source) = Source::parse(name)
                    && self.lookup_is_global(name)
                {
                    self.named.entry(source).or_default().0 += 1;
                }
                if let Some(source) = Source::parse(name)
                    && !self.required.contains(&source)
                    && !self.optional.contains(&source)
                    && self.lookup_is_global(name)
                    && self.undeclared.insert(source)
                {
                    self.problem(
                        e,
                        format!("reads `{name}` facts, but `applies.sources` does not name {name}"),
                        Some(format!(
                            "add {name} to `applies.sources` (or to `applies.optional` if the rule runs without it)"
                        )),
                    );
                }
                match self.lookup(name) {
                    Some(t) => t,
                    None => {
                        let known = self
                            .scopes
                            .iter()
                            .map(|(n, _)| n.as_str())
                            .chain(["config", "live", "log", "host", "cluster", "version", "params"]);
                        let help = crate::suggest::closest(name, known).map(|s| format!("did you mean `{s}`?"));
                        self.problem(e, format!("unknown variable `{name}`"), help);
                        Type::Any
                    }
                }
            }
            Ast::Select(select) => {
                let operand = self.infer(&select.operand);
                self.record_read(&select.operand, &select.field, select.test);
                if select.field == "check" && is_start_problem(&operand) {
                    self.start_check_reads.insert(e.id);
                }
                self.field(e, &operand, &select.field, &select.operand)
            }
            Ast::Literal(literal) => match literal {
                LiteralValue::Boolean(_) => Type::Bool,
                LiteralValue::Int(_) => Type::Int,
                LiteralValue::UInt(_) => Type::UInt,
                LiteralValue::Double(_) => Type::Float,
                LiteralValue::String(_) => Type::String,
                LiteralValue::Null => Type::Any,
                LiteralValue::Bytes(_) => Type::Any,
            },
            Ast::List(list) => {
                let items: Vec<Type> = list.elements.iter().map(|i| self.infer(i)).collect();
                Type::List(std::sync::Arc::new(items.into_iter().next().unwrap_or(Type::Any)))
            }
            Ast::Map(map) => {
                for entry in &map.entries {
                    if let cel::common::ast::EntryExpr::MapEntry(m) = &entry.expr {
                        self.infer(&m.key);
                        self.infer(&m.value);
                    }
                }
                Type::Any
            }
            Ast::Comprehension(c) => {
                let range = self.infer(&c.iter_range);
                let item = match range.strict() {
                    Type::List(item) => (**item).clone(),
                    // iterating a map gives its keys
                    Type::Map { .. } | Type::Dict { .. } => Type::String,
                    _ => Type::Any,
                };
                let accu = self.infer(&c.accu_init);
                let depth = self.scopes.len();
                self.scopes.push((c.iter_var.clone(), item));
                // map(): the accumulator is a list of what the step appends
                let accu = match appended(&c.loop_step, &c.accu_var) {
                    Some(x) => {
                        self.scopes.push((c.accu_var.clone(), accu));
                        Type::List(std::sync::Arc::new(self.infer(x)))
                    }
                    None => accu,
                };
                self.scopes.truncate(depth + 1);
                self.scopes.push((c.accu_var.clone(), accu.clone()));
                self.infer(&c.loop_cond);
                self.infer(&c.loop_step);
                self.scopes.truncate(depth);
                self.scopes.push((c.accu_var.clone(), accu));
                let result = self.infer(&c.result);
                self.scopes.truncate(depth);
                result
            }
            Ast::Call(call) => self.call(e, call),
            Ast::Struct(_) | Ast::Unspecified => Type::Any,
        }
    }

    /// `source.fact` read at the top of a source document: a fact the rule needs, unless
    /// it tests for it (`has(source.fact)`) and so runs without it.
    fn record_read(&mut self, operand: &IdedExpr, field: &str, test: bool) {
        if let Ast::Ident(name) = &operand.expr
            && let Some(source) = Source::parse(name)
            && self.lookup_is_global(name)
        {
            self.named.entry(source).or_default().1 += 1;
            let read = (source, field.to_string());
            if META.contains(&field) {
                self.meta.insert(read);
            } else if test {
                self.guarded.insert(read);
            } else {
                self.reads.insert(read);
            }
        }
    }

    /// The facts the rule cannot run without: read of a source it needs, and never tested
    /// for.
    pub fn needed(&self) -> Vec<(Source, String)> {
        self.reads.difference(&self.guarded).filter(|(source, _)| self.required.contains(source)).cloned().collect()
    }

    /// Every top-level field the rule reads, needed or not: what an audit must build for it,
    /// and what its result depends on (with [`WHOLE`] for a source read whole).
    pub fn read(&self) -> BTreeSet<(Source, String)> {
        let whole =
            self.named.iter().filter(|(_, (named, selected))| named > selected).map(|(s, _)| (*s, WHOLE.into()));
        self.reads.union(&self.guarded).chain(&self.meta).cloned().chain(whole).collect()
    }

    fn lookup_is_global(&self, name: &str) -> bool {
        !self.scopes.iter().any(|(n, _)| n == name)
    }

    /// The type of `operand.field`.
    fn field(&mut self, e: &IdedExpr, operand: &Type, field: &str, operand_expr: &IdedExpr) -> Type {
        match operand.strict() {
            Type::Map { fields, .. } => match fields.get(field) {
                Some(t) => t.clone(),
                None => {
                    let path = spelled(operand_expr).map_or_else(|| field.to_string(), |p| format!("{p}.{field}"));
                    let help = crate::suggest::closest(field, fields.keys().map(String::as_str))
                        .map(|s| format!("did you mean `{s}`?"))
                        .or_else(|| {
                            Some(format!("its fields: {}", fields.keys().cloned().collect::<Vec<_>>().join(", ")))
                        });
                    self.problem(e, format!("`{path}` is not a fact (see `chaudit facts`)"), help);
                    Type::Any
                }
            },
            Type::Dict { value, settings: true } => {
                if !is_setting_or_section(field) {
                    let help = settings::builtin().suggest(field).map(|s| format!("did you mean `{s}`?"));
                    self.problem(e, format!("`{field}` is no ClickHouse setting or config section"), help);
                }
                (**value).clone()
            }
            Type::Dict { value, .. } => (**value).clone(),
            Type::Any => Type::Any,
            other => {
                self.problem(e, format!("`.{field}` on a {}, which has no fields", other.name()), None);
                Type::Any
            }
        }
    }

    fn call(&mut self, e: &IdedExpr, call: &cel::common::ast::CallExpr) -> Type {
        // a method's receiver is checked like any operand (its type decides nothing here)
        if let Some(target) = &call.target {
            self.infer(target);
        }
        let args: Vec<Type> = call.args.iter().map(|a| self.infer(a)).collect();
        self.conversion_needed(e, call, &args);
        match call.func_name.as_str() {
            operators::IN => {
                // `p.check in ["a", "b"]`
                if let [a, IdedExpr { expr: Ast::List(list), .. }] = call.args.as_slice() {
                    for item in &list.elements {
                        self.start_check_compared(a, item);
                    }
                }
                Type::Bool
            }
            operators::LOGICAL_AND | operators::LOGICAL_OR | operators::LOGICAL_NOT | operators::NOT_STRICTLY_FALSE => {
                Type::Bool
            }
            operators::EQUALS
            | operators::NOT_EQUALS
            | operators::LESS
            | operators::LESS_EQUALS
            | operators::GREATER
            | operators::GREATER_EQUALS => {
                if let [a, b] = args.as_slice()
                    && let Some(kinds) = mismatched(a, b)
                {
                    self.problem(
                        e,
                        format!("compares {kinds}: the comparison is always false or an error"),
                        Some("settings are text: compare num(value) with a number, truthy(value) with a bool".into()),
                    );
                }
                if let [a, b] = call.args.as_slice()
                    && matches!(call.func_name.as_str(), operators::EQUALS | operators::NOT_EQUALS)
                {
                    self.start_check_compared(a, b);
                    self.start_check_compared(b, a);
                }
                Type::Bool
            }
            operators::CONDITIONAL => args.get(1).cloned().unwrap_or(Type::Any),
            operators::INDEX => match (args.first().map(Type::strict), call.args.get(1)) {
                (Some(Type::List(item)), _) => (**item).clone(),
                (Some(Type::Dict { value, .. }), _) => (**value).clone(),
                (Some(t @ Type::Map { .. }), Some(IdedExpr { expr: Ast::Literal(LiteralValue::String(key)), .. })) => {
                    let t = t.clone();
                    self.field(e, &t, key.as_ref(), &call.args[0])
                }
                _ => Type::Any,
            },
            operators::ADD | operators::SUBSTRACT | operators::MULTIPLY | operators::DIVIDE | operators::MODULO => {
                self.arithmetic(e, call, &args);
                args.first().cloned().unwrap_or(Type::Any)
            }
            operators::NEGATE => args.first().cloned().unwrap_or(Type::Any),
            "size" => Type::Int,
            "int" => Type::Int,
            "uint" => Type::UInt,
            "double" | "num" => Type::Float,
            "string" | "join" | "shorten" | "setting_suggestion" | "root_element_suggestion" | "setting_default" => {
                Type::String
            }
            "truthy"
            | "same_setting_value"
            | "setting_ever_obsolete"
            | "setting_known"
            | "session_setting"
            | "server_setting"
            | "merge_tree_setting"
            | "setting_obsolete" => Type::Bool,
            "contains" | "startsWith" | "endsWith" | "matches" => Type::Bool,
            "limit_of" => Type::Int,
            // a list of lists' items
            "flatten" => match args.first().map(Type::strict) {
                Some(Type::List(inner)) if matches!(inner.strict(), Type::List(_)) => (**inner).clone(),
                _ => Type::Any,
            },
            _ => Type::Any,
        }
    }
}

/// In a map() comprehension's step (`accu + [x]`, or `cond ? accu + [x] : accu`), the x.
fn appended<'e>(step: &'e IdedExpr, accu: &str) -> Option<&'e IdedExpr> {
    let Ast::Call(call) = &step.expr else { return None };
    match (call.func_name.as_str(), call.args.as_slice()) {
        (operators::ADD, [IdedExpr { expr: Ast::Ident(a), .. }, IdedExpr { expr: Ast::List(list), .. }])
            if a == accu && list.elements.len() == 1 =>
        {
            Some(&list.elements[0])
        }
        (operators::CONDITIONAL, [_, then, _]) => appended(then, accu),
        _ => None,
    }
}

/// `a.b.c` as written, for messages.
fn spelled(e: &IdedExpr) -> Option<String> {
    match &e.expr {
        Ast::Ident(name) => Some(name.clone()),
        Ast::Select(s) => Some(format!("{}.{}", spelled(&s.operand)?, s.field)),
        _ => None,
    }
}

/// A name a `dict:setting` may hold: a setting of some kind in the newest catalog, a
/// config section, or one of the older releases' settings.
fn is_setting_or_section(name: &str) -> bool {
    let c = settings::builtin();
    c.is_session(name)
        || c.is_server(name)
        || c.merge_tree.contains_key(name)
        || crate::facts::config::is_known_section(name)
}

/// Whether an item of this type is its own object (text) or has a `name` that is: a rule
/// over such items needs no `object:`. An item of unknown type is judged when it is there.
pub fn names_itself(item: &Type) -> bool {
    match item.strict() {
        Type::String | Type::Any => true,
        Type::Map { fields, .. } => fields.get("name").is_some_and(|t| matches!(t.strict(), Type::String)),
        _ => false,
    }
}

/// The types of the facts a rule's `for_each` gives each item of.
pub fn item_type(t: &Type) -> Type {
    match t.strict() {
        Type::List(item) => (**item).clone(),
        Type::Dict { value, .. } => (**value).clone(),
        _ => Type::Any,
    }
}
