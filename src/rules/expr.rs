//! Rule expressions: CEL (non-Turing-complete, side-effect free), compiled once per rule,
//! and message templates with `{{ expression }}` holes.

use std::sync::{Arc, OnceLock};

use cel::common::value::CowVal;
use cel::extractors::IntoResolveResult;
use cel::parser::ParseErrors;
use cel::{Context, Env, ExecutionError, Value};

use crate::config::Origin;
use crate::facts::catalog;
use crate::facts::value::to_value;
use crate::rules::native::Native;

/// A compiled expression and its source, for error messages.
#[derive(Clone)]
pub struct Expr {
    pub source: String,
    pub origin: Origin,
    /// `file:line:column` of the expression in its rule file, which an error at run time
    /// names (empty for an expression of no file).
    at: Arc<str>,
    /// The syntax tree, as written (its calls are checked against the facts catalog); a
    /// [deferred](Expr::deferred) expression's is parsed when first asked for.
    tree: Arc<OnceLock<cel::IdedExpr>>,
    /// The syntax tree with a budget check in every loop (see [`budget::guard`]), written on
    /// the first evaluation: an audit evaluates only the rules that apply to what it read.
    guarded: Arc<OnceLock<cel::IdedExpr>>,
    /// The guarded tree as the audit evaluates it itself, when it is of a shape it knows (see
    /// `rules::native`), written with it.
    native: Arc<OnceLock<Option<Native>>>,
}

impl std::fmt::Debug for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Expr({:?})", self.source)
    }
}

/// A compile error: the message and the (line, column) inside the expression.
pub struct CompileError {
    pub message: String,
    pub line: usize,
    pub column: usize,
}

fn env() -> &'static Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| Arc::new(Env::stdlib()))
}

impl Expr {
    /// Every start compiles the expressions of the rules it runs, so they are parsed by the `cel` crate's
    /// Pratt parser, about 4 times faster than its ANTLR one and giving the same tree, node ids
    /// and all (a test compares them on every built-in expression). The ANTLR parser, which
    /// keeps where each node is written, is asked only for a diagnostic: its error message,
    /// and the offsets of [`Expr::offsets`].
    pub fn compile(source: &str, origin: Origin) -> Result<Expr, CompileError> {
        let tree = parse(source)?;
        Ok(Expr {
            source: source.to_string(),
            origin,
            at: Arc::from(""),
            tree: Arc::new(OnceLock::from(tree)),
            guarded: Arc::default(),
            native: Arc::default(),
        })
    }

    /// An expression parsed when first read: a built-in rule's, which the test suite compiles
    /// and checks whole (`chaudit rules test` too), so that an audit parses only the rules that
    /// apply to what it read. Should one not parse, it is an expression naming an undeclared
    /// variable, which errs when evaluated: the rule is errored, never silently passed.
    pub fn deferred(source: &str, origin: Origin) -> Expr {
        Expr {
            source: source.to_string(),
            origin,
            at: Arc::from(""),
            tree: Arc::default(),
            guarded: Arc::default(),
            native: Arc::default(),
        }
    }

    /// The syntax tree, as written.
    pub fn tree(&self) -> &cel::IdedExpr {
        self.tree.get_or_init(|| {
            parse(&self.source).unwrap_or_else(|_| cel::IdedExpr {
                id: 1,
                expr: cel::common::ast::Expr::Ident("__expression_that_does_not_compile".into()),
            })
        })
    }

    /// Where each node of [`Expr::tree`] is written (by its id), for a diagnostic: the ANTLR
    /// parser's offsets, if it gives the same tree.
    pub fn offsets(&self) -> Option<cel::common::ast::SourceInfo> {
        let (tree, info) = env().parser().parse_with_source_info(&self.source).ok()?;
        (tree == *self.tree()).then_some(info)
    }

    fn guarded(&self) -> &cel::IdedExpr {
        self.guarded.get_or_init(|| crate::rules::budget::guard(self.tree()))
    }

    /// The expression with where its rule file writes it (`file:line:column`).
    pub fn located(mut self, at: String) -> Expr {
        self.at = Arc::from(at);
        self
    }

    fn native(&self) -> Option<&Native> {
        self.native.get_or_init(|| Native::compile(self.guarded())).as_ref()
    }

    pub fn eval(&self, context: &Context) -> Result<Value, String> {
        self.eval_val(context).and_then(|v| to_value(v.as_ref()).map_err(|e| self.failed(e)))
    }

    /// The value itself, not converted to a [`Value`]: a list of facts stays the facts
    /// (shared, see `facts::value`) instead of being copied whole. The native tree answers
    /// where it can, else the interpreter.
    pub fn eval_val<'e, 'v>(&'e self, context: &'e Context<'_, 'v>) -> Result<CowVal<'e, 'v>, String> {
        if let Some(value) = self.native().and_then(|native| native.eval(context)) {
            #[cfg(test)]
            cross_check::compare(self, context, value.as_ref());
            return Ok(value);
        }
        self.interpreted(context)
    }

    fn interpreted<'e, 'v>(&'e self, context: &'e Context<'_, 'v>) -> Result<CowVal<'e, 'v>, String> {
        Value::resolve_val(self.guarded(), context).map_err(|e| self.failed(e))
    }

    /// An error at run time, said with the expression and where it is written.
    fn failed(&self, error: impl std::fmt::Display) -> String {
        match self.at.as_ref() {
            "" => format!("`{}`: {error}", self.source),
            at => format!("{at}: `{}`: {error}", self.source),
        }
    }
}

fn parse(source: &str) -> Result<cel::IdedExpr, CompileError> {
    match cel::parser::PrattParser::default().parse(source) {
        Ok(tree) => Ok(tree),
        Err(_) => env().parser().parse(source).map_err(compile_error),
    }
}

fn compile_error(errors: ParseErrors) -> CompileError {
    let first = errors.errors.first();
    CompileError {
        message: first.map_or_else(|| errors.to_string(), |e| e.msg.clone()),
        line: first.map_or(0, |e| e.pos.0.max(0) as usize),
        column: first.map_or(0, |e| e.pos.1.max(0) as usize),
    }
}

/// A new evaluation context with the functions rules may call; the setting helpers answer
/// from `catalog` (the audited version's, see [`catalog::of`]).
pub fn context<'a>(catalog: &'static catalog::Catalog) -> Context<'a, 'a> {
    let c = catalog;
    let known = move |name: Arc<String>| c.is_session(&name) || c.is_server(&name);
    let default_of = move |name: Arc<String>| {
        let setting = c
            .session
            .get(name.as_str())
            .or_else(|| c.server.get(name.as_str()))
            .or_else(|| c.merge_tree.get(name.as_str()));
        setting.and_then(|s| s.default).unwrap_or_default().to_string()
    };
    let mut context = Context::with_env(Arc::clone(env()));
    let registered = [
        context.add_function(crate::rules::budget::CHECK, crate::rules::budget::check()),
        context.add_function("setting_known", known),
        context.add_function("session_setting", move |name: Arc<String>| c.is_session(&name)),
        context.add_function("server_setting", move |name: Arc<String>| c.is_server(&name)),
        context.add_function("merge_tree_setting", move |name: Arc<String>| c.merge_tree.contains_key(&name)),
        context.add_function("setting_obsolete", move |name: Arc<String>| c.is_obsolete(&name)),
        context.add_function("setting_ever_obsolete", |name: Arc<String>| catalog::obsolete_somewhere(&name)),
        context.add_function("same_setting_value", |a: Arc<String>, b: Arc<String>| same_setting_value(&a, &b)),
        context.add_function("setting_suggestion", move |name: Arc<String>| {
            c.suggest(&name).unwrap_or_default().to_string()
        }),
        context.add_function("root_element_suggestion", |name: Arc<String>| {
            crate::facts::config::root_element_suggestion(&name).unwrap_or_default().to_string()
        }),
        context.add_function("setting_default", default_of),
        context.add_function("num", of_values(|args| args.first().map_or(f64::NAN, number_of))),
        context.add_function("truthy", of_values(|args| args.first().is_some_and(|v| number_of(v) != 0.0))),
        context.add_function("limit_of", |query: Arc<String>| limit_of(&query)),
        context.add_function("shorten", |text: Arc<String>, max_chars: i64| {
            crate::mask::shorten(&text, usize::try_from(max_chars).unwrap_or(0).max(2))
        }),
        context.add_function("join", of_values(join)),
        context.add_function("flatten", of_values(flatten)),
    ];
    debug_assert!(registered.iter().all(Result::is_ok), "built-in functions register once");
    context
}

/// Whether two setting values as written mean the same value: `true` is `1`, `10Gi` is
/// `10737418240`; values that are not numbers compare as text.
fn same_setting_value(a: &str, b: &str) -> bool {
    let (x, y) = (parse_number(a), parse_number(b));
    if x.is_nan() || y.is_nan() { a.trim() == b.trim() } else { x == y }
}

/// A function as the interpreter holds one: it takes its arguments unconverted.
pub type Function = Box<
    dyn for<'context, 'call> Fn(
            &mut cel::FunctionContext<'context, 'call>,
        ) -> Result<CowVal<'context, 'call>, ExecutionError>
        + Send
        + Sync,
>;

/// A function of its arguments as [`Value`]s, converted as a rule's results are (a fact's
/// map included, see `facts::value::to_value`, which the interpreter's own conversion refuses).
fn of_values<R: Into<Value>>(function: impl Fn(&[Value]) -> R + Send + Sync + 'static) -> Function {
    Box::new(move |call| {
        let args = call.args.iter().map(|a| to_value(a.as_ref())).collect::<Result<Vec<_>, _>>()?;
        function(&args).into().into_resolve_result()
    })
}

/// `join(list, separator)`: the items as a message shows them, separated.
fn join(args: &[Value]) -> String {
    let separator = match args.get(1) {
        Some(Value::String(s)) => s.to_string(),
        _ => ", ".to_string(),
    };
    match args.first() {
        Some(Value::List(items)) => items.iter().map(display).collect::<Vec<_>>().join(&separator),
        Some(other) => display(other),
        None => String::new(),
    }
}

/// `flatten(lists)`: the items of a list of lists, in order; an item that is no list is
/// itself. A rule about a few names reads their items in a lookup fact
/// (`config.profile_settings_by_name`) and flattens them, instead of scanning every item.
fn flatten(args: &[Value]) -> Value {
    let items = match args.first() {
        Some(Value::List(lists)) => lists
            .iter()
            .flat_map(|list| match list {
                Value::List(items) => items.to_vec(),
                other => vec![other.clone()],
            })
            .collect(),
        _ => Vec::new(),
    };
    Value::List(Arc::new(items))
}

/// A value as a number: strings as ClickHouse writes them (JSON output quotes 64-bit
/// integers), numbers as they are.
pub(crate) fn number_of(value: &Value) -> f64 {
    match value {
        Value::String(s) => parse_number(s),
        Value::Int(i) => *i as f64,
        Value::UInt(u) => *u as f64,
        Value::Float(f) => *f,
        Value::Bool(b) => f64::from(u8::from(*b)),
        _ => f64::NAN,
    }
}

/// The row limit of a Top-N query (`SELECT ... ORDER BY ... LIMIT n`, no GROUP BY), read by
/// the SQL parser; -1 when the text is no such query.
fn limit_of(query: &str) -> i64 {
    crate::sql::top_n(query).and_then(|t| i64::try_from(t.limit).ok()).unwrap_or(-1)
}

/// A ClickHouse setting value as a number: `true`/`false` count as 1/0, size suffixes
/// (`10Gi`, `5G`) are expanded; anything else is NaN (compares false).
pub fn parse_number(value: &str) -> f64 {
    let v = value.trim().to_ascii_lowercase();
    match v.as_str() {
        "true" | "yes" | "on" => return 1.0,
        "false" | "no" | "off" => return 0.0,
        _ => {}
    }
    let suffixes: [(&str, f64); 8] = [
        ("ki", 1024.0),
        ("mi", 1024.0 * 1024.0),
        ("gi", 1024.0 * 1024.0 * 1024.0),
        ("ti", 1024.0_f64.powi(4)),
        ("k", 1e3),
        ("m", 1e6),
        ("g", 1e9),
        ("t", 1e12),
    ];
    for (suffix, factor) in suffixes {
        if let Some(number) = v.strip_suffix(suffix).and_then(|n| n.trim().parse::<f64>().ok()) {
            return number * factor;
        }
    }
    v.parse().unwrap_or(f64::NAN)
}

/// A message or snippet with `{{ expression }}` holes.
#[derive(Debug, Clone)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone)]
enum Part {
    Text(String),
    Hole(Expr),
}

impl Template {
    /// The template as written, holes and all (for the rules reference).
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .map(|part| match part {
                Part::Text(text) => text.clone(),
                Part::Hole(expr) => format!("{{{{ {} }}}}", expr.source),
            })
            .collect()
    }

    /// Compiles the holes; an error gives the byte offset of the hole in `text`.
    pub fn compile(text: &str, origin: Origin) -> Result<Template, (usize, CompileError)> {
        Template::split(text, origin, Expr::compile)
    }

    /// The template with [deferred](Expr::deferred) holes; an error is a hole not closed.
    pub fn deferred(text: &str, origin: Origin) -> Result<Template, (usize, CompileError)> {
        Template::split(text, origin, |source, origin| Ok(Expr::deferred(source, origin)))
    }

    fn split(
        text: &str,
        origin: Origin,
        hole: impl Fn(&str, Origin) -> Result<Expr, CompileError>,
    ) -> Result<Template, (usize, CompileError)> {
        let mut parts = Vec::new();
        let mut rest = text;
        let mut consumed = 0;
        while let Some(start) = rest.find("{{") {
            let Some(len) = rest[start..].find("}}") else {
                let error = CompileError { message: "`{{` without `}}`".into(), line: 0, column: 0 };
                return Err((consumed + start, error));
            };
            if start > 0 {
                parts.push(Part::Text(rest[..start].to_string()));
            }
            let source = rest[start + 2..start + len].trim();
            let hole_origin = Origin { file: origin.file, offset: origin.offset + (consumed + start) as u32 };
            parts.push(Part::Hole(hole(source, hole_origin).map_err(|e| (consumed + start, e))?));
            consumed += start + len + 2;
            rest = &rest[start + len + 2..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_string()));
        }
        Ok(Template { parts })
    }

    /// Each hole with where its rule file writes it (`at` gives a position's `file:line:column`).
    pub fn located(mut self, at: impl Fn(Origin) -> String) -> Template {
        for part in &mut self.parts {
            if let Part::Hole(expr) = part {
                let place = at(expr.origin);
                *expr = expr.clone().located(place);
            }
        }
        self
    }

    /// The expressions of the holes.
    pub fn holes(&self) -> impl Iterator<Item = &Expr> {
        self.parts.iter().filter_map(|p| match p {
            Part::Hole(e) => Some(e),
            Part::Text(_) => None,
        })
    }

    pub fn render(&self, context: &Context) -> Result<String, String> {
        // joined once at its exact length: a finding keeps its texts for the whole run, and a
        // string grown piece by piece holds up to twice its length
        let mut shown = Vec::with_capacity(self.parts.len());
        for part in &self.parts {
            shown.push(match part {
                Part::Text(t) => std::borrow::Cow::Borrowed(t.as_str()),
                Part::Hole(e) => std::borrow::Cow::Owned(display(&e.eval(context)?)),
            });
        }
        Ok(shown.concat())
    }
}

/// A value as a message shows it: strings bare, lists comma-separated.
pub fn display(value: &Value) -> String {
    match value {
        Value::String(s) => s.to_string(),
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".into(),
        Value::List(items) => items.iter().map(display).collect::<Vec<_>>().join(", "),
        other => other.json().map(|j| j.to_string()).unwrap_or_else(|_| format!("{other:?}")),
    }
}

/// Under test, every value the native tree gives is compared with the interpreter's (see
/// `rules::native`): each expression answered natively, with what differed.
#[cfg(test)]
pub(crate) mod cross_check {
    use std::sync::Mutex;

    /// The source of each expression answered natively, and the difference if any.
    pub(crate) static ANSWERED: Mutex<Vec<(String, Option<String>)>> = Mutex::new(Vec::new());

    pub(super) fn compare(expr: &super::Expr, context: &cel::Context, native: &dyn cel::common::value::Val) {
        let native = super::to_value(native).map_err(|e| e.to_string());
        let interpreted =
            expr.interpreted(context).and_then(|v| super::to_value(v.as_ref()).map_err(|e| e.to_string()));
        // NaN is no number equal to itself: the same value shows the same
        let same = native == interpreted || format!("{native:?}") == format!("{interpreted:?}");
        let difference = (!same).then(|| format!("native {native:?}, interpreter {interpreted:?}"));
        if let Ok(mut answered) = ANSWERED.lock() {
            answered.push((expr.source.clone(), difference));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::FileId;
    use cel::common::ast::Expr as Ast;

    fn origin() -> Origin {
        Origin { file: FileId(0), offset: 0 }
    }

    #[test]
    fn both_parsers_give_every_builtin_expression_the_same_tree() {
        let pack = crate::rules::RulePack::load(true, &[]).ok().unwrap();
        let expressions: Vec<&Expr> = pack.rules.iter().flat_map(|rule| rule.expressions().all()).collect();
        assert!(expressions.len() > 1000, "{} expressions", expressions.len());
        for expr in expressions {
            let antlr = env().parser().parse(&expr.source).ok();
            assert_eq!(antlr.as_ref(), Some(expr.tree()), "{}", expr.source);
            assert!(expr.offsets().is_some(), "{}", expr.source);
        }
    }

    #[test]
    fn a_problem_points_into_the_expression_and_a_syntax_error_says_the_antlr_message() {
        let e = Expr::compile("size(config.users) > 0 && config.userz", origin()).ok().unwrap();
        let offsets = e.offsets().unwrap();
        let Ast::Call(and) = &e.tree().expr else { panic!("{:?}", e.tree()) };
        // a field selection is written where its `.` is
        assert_eq!(offsets.offset_for(and.args[1].id).map(|(start, _)| start), Some(32));
        let error = Expr::compile("size(config.users) >", origin()).err().unwrap();
        let antlr = env().parser().parse("size(config.users) >").err().unwrap();
        assert_eq!(error.message, antlr.errors[0].msg);
        assert_eq!((error.line, error.column), (1, 21));
    }

    #[test]
    fn numbers_understand_clickhouse_values() {
        assert_eq!(parse_number("true"), 1.0);
        assert_eq!(parse_number("10Gi"), 10.0 * 1024.0 * 1024.0 * 1024.0);
        assert_eq!(parse_number(" 0.9 "), 0.9);
        assert!(parse_number("auto").is_nan());
    }

    #[test]
    fn templates_fill_holes() {
        let t = Template::compile("user `{{ name }}` has {{ size(ips) }} networks", origin()).ok().unwrap();
        let mut c = context(catalog::builtin());
        c.add_variable_from_value("name", "default");
        c.add_variable_from_value("ips", vec!["::/0"]);
        assert_eq!(t.render(&c).unwrap(), "user `default` has 1 networks");
    }

    #[test]
    fn functions_read_the_catalog() {
        // the audited version's catalog: obsolete in 26.9 only, so obsolete there and not on 25.8
        let newest = context(catalog::builtin());
        let lts = context(catalog::of(Some("25.8".parse::<crate::version::Version>().unwrap())));
        for (c, expr) in [
            (
                &newest,
                "setting_obsolete('allow_experimental_analyzer') && setting_ever_obsolete('allow_experimental_analyzer')",
            ),
            (
                &lts,
                "setting_ever_obsolete('allow_experimental_analyzer') && !setting_obsolete('allow_experimental_analyzer')",
            ),
            (&newest, "setting_obsolete('allow_experimental_map_type') && !setting_known('max_thread')"),
            (
                &newest,
                "same_setting_value('true', '1') && same_setting_value('1Gi', '1073741824') && !same_setting_value('a', 'b')",
            ),
        ] {
            let e = Expr::compile(expr, origin());
            assert_eq!(e.ok().unwrap().eval(c).unwrap(), Value::Bool(true), "{expr}");
        }
    }
}
