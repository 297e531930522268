//! The kinds of value an expression mixes: text compared with a number, a conversion of what
//! is already converted (`num()` of a number, `truthy()` of a bool: collected facts are typed),
//! arithmetic on text or mixing a double with an integer (an error when it runs).

use cel::common::ast::{CallExpr, IdedExpr, operators};

use super::{Checker, Type, spelled};

impl Checker<'_> {
    /// `num()` of what is a number already, `truthy()` of a bool: the fact is typed (numbers
    /// the server quoted are read as numbers), the conversion only hides that.
    pub(super) fn conversion_needed(&mut self, e: &IdedExpr, call: &CallExpr, args: &[Type]) {
        let ([arg], [arg_expr]) = (args, call.args.as_slice()) else { return };
        let shown = spelled(arg_expr).map_or_else(String::new, |path| format!(" `{path}`,"));
        match call.func_name.as_str() {
            "num" if is_double(arg) => {
                self.problem(e, format!("num() of{shown} a number already"), Some("drop num()".into()));
            }
            "num" | "truthy" if arg.is_bool() => {
                let name = &call.func_name;
                self.problem(e, format!("{name}() of{shown} a bool already"), Some(format!("drop {name}()")));
            }
            _ => {}
        }
    }

    /// `a + b`, `a * b`, ...: the interpreter refuses text in arithmetic (but `+` of two
    /// texts) and a double with an integer.
    pub(super) fn arithmetic(&mut self, e: &IdedExpr, call: &CallExpr, args: &[Type]) {
        let concatenates = call.func_name == operators::ADD;
        if let [a, b] = args
            && (a.is_text() || b.is_text())
            && !(concatenates && a.is_text() && b.is_text())
            && !(concatenates && (a.is_text() && *b.strict() == Type::Any || b.is_text() && *a.strict() == Type::Any))
        {
            self.problem(
                e,
                "arithmetic on text: an error when it runs".into(),
                Some("settings are text: num(value) reads one as a number".into()),
            );
        }
        if let [a, b] = args
            && (is_double(a) && is_integer(b) || is_integer(a) && is_double(b))
        {
            self.problem(
                e,
                "mixes a double with an integer: an error when it runs".into(),
                Some("write the integer as a double (`2.0`) or convert it with double()".into()),
            );
        }
    }
}

/// A double to the interpreter: a `number` fact is read as one.
fn is_double(t: &Type) -> bool {
    matches!(t.strict(), Type::Float | Type::Number)
}

fn is_integer(t: &Type) -> bool {
    matches!(t.strict(), Type::Int | Type::UInt)
}

/// Two kinds of value that never compare equal, if these are.
pub(super) fn mismatched(a: &Type, b: &Type) -> Option<&'static str> {
    let kind = |t: &Type| {
        if t.is_text() {
            Some("text")
        } else if t.is_bool() {
            Some("a bool")
        } else if t.is_numeric() {
            Some("a number")
        } else {
            None
        }
    };
    match (kind(a)?, kind(b)?) {
        (x, y) if x == y => None,
        ("text", "a number") | ("a number", "text") => Some("text with a number"),
        ("text", "a bool") | ("a bool", "text") => Some("text with a bool"),
        _ => Some("a bool with a number"),
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use crate::config::SourceMap;
    use crate::rules::error::RuleError;
    use crate::rules::load::parse_rule;

    /// The problems of a rule whose condition is `when`.
    fn problems(when: &str) -> Vec<String> {
        let text = format!(
            "id: x\ntitle: t\nseverity: low\ndescription: d\napplies:\n  sources: [live, log]\nwhen: '{when}'\n\
             message: m\nremediation:\n  manual: m\n"
        );
        let mut sources = SourceMap::new(PathBuf::new());
        let id = sources.add(PathBuf::from("rules/x.yaml"), text);
        match parse_rule(&sources, id, Path::new("rules"), None, false) {
            Ok(_) => Vec::new(),
            Err(errors) => errors
                .iter()
                .map(|e| match e {
                    RuleError::Invalid(problem) => problem.message.clone(),
                    other => format!("{other:?}"),
                })
                .collect(),
        }
    }

    #[test]
    fn conversions_of_typed_facts_are_refused() {
        assert_eq!(problems("num(live.metrics.Query) > 1.0"), ["num() of `live.metrics.Query`, a number already"]);
        assert_eq!(
            problems("live.disks.exists(d, truthy(d.is_remote))"),
            ["truthy() of `d.is_remote`, a bool already"]
        );
        // a setting's value is text: num() reads it
        assert!(problems("num(live.settings.max_threads.value) > 1.0").is_empty());
        assert!(problems("live.metrics.Query > 1").is_empty(), "a comparison may mix a double with an integer");
    }

    #[test]
    fn arithmetic_that_fails_when_it_runs_is_refused() {
        assert_eq!(problems("live.metrics.Query * 2 > 1.0"), ["mixes a double with an integer: an error when it runs"]);
        assert_eq!(
            problems("live.settings.max_threads.value * 2.0 != \"\"")[0],
            "arithmetic on text: an error when it runs"
        );
        assert!(problems("live.metrics.Query * 2.0 > 1.0").is_empty());
        assert!(problems("live.version + \"x\" != \"\"").is_empty(), "text + text is text");
    }
}
