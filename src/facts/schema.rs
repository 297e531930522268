//! The facts catalog (schema.txt): every fact path, its type and its meaning. Rule
//! expressions are checked against it when the pack loads, snapshots when they are read,
//! and `chaudit facts` prints it.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

pub(crate) const CATALOG: &str = include_str!("schema.txt");

/// A fact's type. Its parts are shared: the rule checker copies the type of each fact an
/// expression names (`config` is the whole config catalog), a count and not a tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Type {
    /// Fixed fields; `open`: a system table's row, whose columns a newer server may add to.
    Map {
        fields: Arc<BTreeMap<String, Type>>,
        open: bool,
    },
    List(Arc<Type>),
    /// Any key; `settings`: keys are setting or section names.
    Dict {
        value: Arc<Type>,
        settings: bool,
    },
    String,
    Location,
    Bool,
    Flag,
    UInt,
    Int,
    Float,
    Number,
    Any,
    Nullable(Arc<Type>),
}

impl Type {
    /// The type without its nullability.
    pub fn strict(&self) -> &Type {
        match self {
            Type::Nullable(inner) => inner,
            other => other,
        }
    }

    pub fn is_numeric(&self) -> bool {
        matches!(self.strict(), Type::UInt | Type::Int | Type::Float | Type::Number)
    }

    /// A bool to the rules: a flag is read as one.
    pub fn is_bool(&self) -> bool {
        matches!(self.strict(), Type::Bool | Type::Flag)
    }

    pub fn is_text(&self) -> bool {
        matches!(self.strict(), Type::String | Type::Location)
    }

    /// The name `chaudit facts` shows.
    pub fn name(&self) -> String {
        match self {
            Type::Map { open: false, .. } => "map".into(),
            Type::Map { open: true, .. } => "row".into(),
            Type::List(_) => "list".into(),
            Type::Dict { settings: true, .. } => "dict:setting".into(),
            Type::Dict { .. } => "dict".into(),
            Type::String => "string".into(),
            Type::Location => "location".into(),
            Type::Bool => "bool".into(),
            Type::Flag => "flag".into(),
            Type::UInt => "uint".into(),
            Type::Int => "int".into(),
            Type::Float => "float".into(),
            Type::Number => "number".into(),
            Type::Any => "any".into(),
            Type::Nullable(inner) => format!("{}?", inner.name()),
        }
    }
}

/// One line of the catalog.
#[derive(Debug, Clone)]
pub struct Entry {
    pub path: String,
    pub kind: String,
    pub meaning: String,
}

pub struct Catalog {
    pub entries: Vec<Entry>,
    /// The source documents (`config`, `live`, ...) and their types.
    pub roots: BTreeMap<String, Type>,
}

/// The catalog compiled into the binary.
pub fn catalog() -> &'static Catalog {
    static PARSED: OnceLock<Catalog> = OnceLock::new();
    PARSED.get_or_init(|| parse(CATALOG).expect("src/facts/schema.txt is valid (tested)"))
}

/// Parses the catalog text: each path's parent must come before it.
fn parse(text: &str) -> Result<Catalog, String> {
    let mut entries = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let (Some(path), Some(kind)) = (words.next(), words.next()) else {
            return Err(format!("schema.txt:{}: a fact is PATH TYPE MEANING", n + 1));
        };
        let meaning = words.collect::<Vec<_>>().join(" ");
        entries.push(Entry { path: path.into(), kind: kind.into(), meaning });
    }
    let tree = Tree::of(&entries);
    let mut roots = BTreeMap::new();
    for e in &entries {
        if !e.path.contains(['.', '[', '{']) {
            let t = tree.build(&e.path)?;
            roots.insert(e.path.clone(), t);
        }
    }
    Ok(Catalog { entries, roots })
}

/// The entries by path, and each path's fields, indexed in one pass: looking each type's
/// fields up by scanning every entry cost every run 5 M instructions.
struct Tree<'a> {
    by_path: HashMap<&'a str, &'a Entry>,
    fields: HashMap<&'a str, Vec<(&'a str, &'a str)>>,
}

impl<'a> Tree<'a> {
    fn of(entries: &'a [Entry]) -> Tree<'a> {
        let mut by_path = HashMap::new();
        let mut fields: HashMap<&str, Vec<(&str, &str)>> = HashMap::new();
        for e in entries {
            by_path.entry(e.path.as_str()).or_insert(e);
            // `parent.name`: a field (`parent[]` and `parent{}` are a list's and a dict's items)
            if let Some((parent, name)) = e.path.rsplit_once('.')
                && !name.contains(['[', '{'])
            {
                fields.entry(parent).or_default().push((name, e.path.as_str()));
            }
        }
        Tree { by_path, fields }
    }

    /// The type at `path`, with its children from the entries below it.
    fn build(&self, path: &str) -> Result<Type, String> {
        let entry = self.by_path.get(path).ok_or_else(|| format!("schema.txt: `{path}` is not declared"))?;
        let (kind, nullable) = match entry.kind.strip_suffix('?') {
            Some(k) => (k, true),
            None => (entry.kind.as_str(), false),
        };
        let t = match kind {
            "map" | "row" => {
                let mut fields = BTreeMap::new();
                for (name, child) in self.fields.get(path).into_iter().flatten() {
                    fields.entry(name.to_string()).or_insert(self.build(child)?);
                }
                Type::Map { fields: Arc::new(fields), open: kind == "row" }
            }
            "list" => Type::List(Arc::new(self.build(&format!("{path}[]"))?)),
            "dict" | "dict:setting" => {
                Type::Dict { value: Arc::new(self.build(&format!("{path}{{}}"))?), settings: kind == "dict:setting" }
            }
            "string" => Type::String,
            "location" => Type::Location,
            "bool" => Type::Bool,
            "flag" => Type::Flag,
            "uint" => Type::UInt,
            "int" => Type::Int,
            "float" => Type::Float,
            "number" => Type::Number,
            "any" => Type::Any,
            other => return Err(format!("schema.txt: `{path}` has an unknown type `{other}`")),
        };
        Ok(if nullable { Type::Nullable(Arc::new(t)) } else { t })
    }
}

/// Where a document differs from the catalog.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    pub path: String,
    pub problem: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.path, self.problem)
    }
}

/// Reads a collected source's values (`live`, `log`) as the catalog types them: ClickHouse's
/// JSON quotes 64-bit integers, so a `uint`, `int` or `number` column may arrive as text. A
/// `number` is a double to the rules whatever the server wrote (a count and an average
/// compare and multiply alike), a `flag` a bool. A value its type does not describe (a newer
/// server's column, text that is no number) is left as written, for the check to name.
pub fn type_source(source: &str, value: &mut Value) {
    if let Some(t) = catalog().roots.get(source) {
        type_value(t, value);
    }
}

/// [`type_source`] for one fact of a source, as a collector builds it.
pub fn type_fact(source: &str, fact: &str, value: &mut Value) {
    if let Some(Type::Map { fields, .. }) = catalog().roots.get(source)
        && let Some(t) = fields.get(fact)
    {
        type_value(t, value);
    }
}

/// Each source of a snapshot's document typed ([`type_source`]), a cluster snapshot's
/// replicas' included.
pub fn type_document(document: &mut serde_json::Map<String, Value>) {
    for source in ["live", "log"] {
        if let Some(value) = document.get_mut(source) {
            type_source(source, value);
        }
    }
    let nodes = document.get_mut("nodes").and_then(|n| n.get_mut("nodes")).and_then(Value::as_array_mut);
    for node in nodes.into_iter().flatten() {
        for source in ["live", "log"] {
            if let Some(value) = node.get_mut(source) {
                type_source(source, value);
            }
        }
    }
}

fn type_value(t: &Type, value: &mut Value) {
    match (t.strict(), &mut *value) {
        (_, Value::Null) => {}
        (Type::Map { fields, .. }, Value::Object(map)) => {
            for (name, field) in map.iter_mut() {
                if let Some(ft) = fields.get(name) {
                    type_value(ft, field);
                }
            }
        }
        (Type::List(item), Value::Array(items)) => items.iter_mut().for_each(|v| type_value(item, v)),
        (Type::Dict { value: vt, .. }, Value::Object(map)) => map.values_mut().for_each(|v| type_value(vt, v)),
        (Type::Number | Type::Float, Value::Number(n)) if !n.is_f64() => {
            if let Some(f) = n.as_f64().and_then(serde_json::Number::from_f64) {
                *value = Value::Number(f);
            }
        }
        (Type::Number | Type::Float, Value::String(s)) => {
            if let Some(f) = s.parse::<f64>().ok().and_then(serde_json::Number::from_f64) {
                *value = Value::Number(f);
            }
        }
        (Type::UInt, Value::String(s)) => {
            if let Ok(u) = s.parse::<u64>() {
                *value = Value::from(u);
            }
        }
        (Type::Int, Value::String(s)) => {
            if let Ok(i) = s.parse::<i64>() {
                *value = Value::from(i);
            }
        }
        (Type::Flag, Value::Number(n)) => match n.as_u64() {
            Some(0) => *value = Value::Bool(false),
            Some(1) => *value = Value::Bool(true),
            _ => {}
        },
        _ => {}
    }
}

/// Checks the documents of a snapshot (or any facts) against the catalog: typed first
/// ([`type_document`]), so a number still held as text is one that is not a number.
pub fn check_document(document: &serde_json::Map<String, Value>) -> Result<(), Vec<Mismatch>> {
    let catalog = catalog();
    let mut problems = Vec::new();
    for (name, value) in document {
        match catalog.roots.get(name) {
            Some(t) => check_value(t, value, name, &mut problems),
            None => problems.push(Mismatch { path: name.clone(), problem: "not a fact source".into() }),
        }
    }
    // a cluster snapshot's replicas hold each a node's documents
    for (i, node) in
        document.get("nodes").and_then(|n| n.get("nodes")).and_then(Value::as_array).into_iter().flatten().enumerate()
    {
        for source in ["live", "log"] {
            if let (Some(t), Some(value)) = (catalog.roots.get(source), node.get(source).filter(|v| !v.is_null())) {
                check_value(t, value, &format!("nodes.nodes[{i}].{source}"), &mut problems);
            }
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems) }
}

fn check_value(t: &Type, value: &Value, path: &str, problems: &mut Vec<Mismatch>) {
    if problems.len() >= 100 {
        return;
    }
    let mut wrong = |expected: &str| {
        let got = match value {
            Value::Null => "null".to_string(),
            Value::Bool(_) => "a bool".into(),
            Value::Number(_) => "a number".into(),
            Value::String(s) => format!("the string {:?}", s.chars().take(40).collect::<String>()),
            Value::Array(_) => "a list".into(),
            Value::Object(_) => "a map".into(),
        };
        problems.push(Mismatch { path: path.into(), problem: format!("expected {expected}, found {got}") });
    };
    match (t, value) {
        (Type::Nullable(_), Value::Null) | (Type::Any, _) => {}
        (Type::Nullable(inner), v) => check_value(inner, v, path, problems),
        (Type::Map { fields, open }, Value::Object(map)) => {
            for (k, v) in map {
                match fields.get(k) {
                    Some(ft) => check_value(ft, v, &format!("{path}.{k}"), problems),
                    None if *open => {}
                    None => problems.push(Mismatch { path: format!("{path}.{k}"), problem: "not a known fact".into() }),
                }
            }
        }
        (Type::List(item), Value::Array(items)) => {
            for (i, v) in items.iter().enumerate() {
                check_value(item, v, &format!("{path}[{i}]"), problems);
            }
        }
        (Type::Dict { value: vt, .. }, Value::Object(map)) => {
            for (k, v) in map {
                check_value(vt, v, &format!("{path}.{k}"), problems);
            }
        }
        (Type::String | Type::Location, Value::String(_)) | (Type::Bool, Value::Bool(_)) => {}
        (Type::Flag, Value::Bool(_)) => {}
        (Type::UInt, Value::Number(n)) if n.as_u64().is_some() => {}
        (Type::Int, Value::Number(n)) if n.as_i64().is_some() => {}
        (Type::Float | Type::Number, Value::Number(_)) => {}
        (Type::Map { .. }, _) => wrong("a map"),
        (Type::List(_), _) => wrong("a list"),
        (Type::Dict { .. }, _) => wrong("a map"),
        (other, _) => wrong(&format!("a {}", other.name())),
    }
}

/// The catalog as `chaudit facts` prints it (a Markdown table per source).
pub fn render() -> String {
    let mut out = String::from(
        "# Facts rules read\n\nType `?`: may be null. `x[]`: an item of list x; `x{}`: a value of dict x.\n",
    );
    for e in &catalog().entries {
        if !e.path.contains(['.', '[', '{']) {
            out.push_str(&format!("\n## `{}`: {}\n\n| fact | type | meaning |\n|---|---|---|\n", e.path, e.meaning));
        } else {
            out.push_str(&format!("| `{}` | {} | {} |\n", e.path, e.kind, e.meaning));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_parses_and_every_parent_is_declared() {
        let parsed = parse(CATALOG).unwrap();
        assert_eq!(parsed.roots.keys().collect::<Vec<_>>(), ["cluster", "config", "host", "live", "log", "nodes"]);
        for e in &parsed.entries {
            let parent = e.path.rfind(['.', '[', '{']).map(|i| &e.path[..i]);
            if let Some(parent) = parent {
                assert!(parsed.entries.iter().any(|p| p.path == parent), "{} has no parent {parent}", e.path);
            }
        }
    }

    #[test]
    fn snapshots_of_the_wrong_shape_are_named() {
        let doc: serde_json::Map<String, Value> =
            serde_json::from_str(r#"{"live": {"settings": "oops", "disks": [{"name": 3}]}, "lve": {}}"#).unwrap();
        let problems = check_document(&doc).unwrap_err();
        let shown: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert!(shown.contains(&"`live.settings`: expected a map, found the string \"oops\"".to_string()), "{shown:?}");
        assert!(shown.contains(&"`live.disks[0].name`: expected a string, found a number".to_string()), "{shown:?}");
        assert!(shown.contains(&"`lve`: not a fact source".to_string()), "{shown:?}");
    }

    /// A value of every fact of `t`, numbers quoted as ClickHouse quotes 64-bit integers and
    /// flags as its UInt8.
    fn as_the_server_writes(t: &Type) -> Value {
        match t.strict() {
            Type::Map { fields, .. } => {
                Value::Object(fields.iter().map(|(name, ft)| (name.clone(), as_the_server_writes(ft))).collect())
            }
            Type::List(item) => Value::Array(vec![as_the_server_writes(item)]),
            Type::Dict { value, .. } => serde_json::json!({"max_threads": as_the_server_writes(value)}),
            Type::Number | Type::Float | Type::UInt => Value::String("18446744073709551615".into()),
            Type::Int => Value::String("-3".into()),
            Type::Flag => Value::from(1),
            Type::Bool => Value::Bool(true),
            Type::String | Type::Location => Value::String("text".into()),
            Type::Any => Value::Null,
            Type::Nullable(_) => unreachable!("strict"),
        }
    }

    /// Each number, flag and bool of `value` as the rules get it (`None` where `t` says
    /// nothing of it).
    fn kinds(t: &Type, value: &Value, path: &str, out: &mut Vec<(String, &'static str)>) {
        match (t.strict(), value) {
            (Type::Map { fields, .. }, Value::Object(map)) => {
                for (name, v) in map {
                    kinds(&fields[name], v, &format!("{path}.{name}"), out);
                }
            }
            (Type::List(item), Value::Array(items)) => {
                items.iter().for_each(|v| kinds(item, v, &format!("{path}[]"), out))
            }
            (Type::Dict { value: vt, .. }, Value::Object(map)) => map.values().for_each(|v| kinds(vt, v, path, out)),
            (Type::Number | Type::Float, v) => out.push((path.into(), if v.is_f64() { "double" } else { "other" })),
            (Type::UInt, v) => out.push((path.into(), if v.is_u64() { "uint" } else { "other" })),
            (Type::Int, v) => out.push((path.into(), if v.is_i64() { "int" } else { "other" })),
            (Type::Flag | Type::Bool, v) => out.push((path.into(), if v.is_boolean() { "bool" } else { "other" })),
            _ => {}
        }
    }

    /// Every number, flag and bool the catalog declares for a collected source reaches the
    /// rules as its type, however the server wrote it: quoted 64-bit integers, UInt8 flags.
    #[test]
    fn every_collected_fact_is_read_as_its_type() {
        let mut typed_paths = 0;
        for source in ["live", "log"] {
            let t = &catalog().roots[source];
            let mut value = as_the_server_writes(t);
            type_source(source, &mut value);
            let mut document = serde_json::Map::new();
            document.insert(source.to_string(), value.clone());
            assert_eq!(check_document(&document), Ok(()), "{source}");
            let mut found = Vec::new();
            kinds(t, &value, source, &mut found);
            let wrong: Vec<_> = found.iter().filter(|(_, kind)| *kind == "other").collect();
            assert!(wrong.is_empty(), "not read as their type: {wrong:?}");
            typed_paths += found.len();
        }
        let declared = CATALOG
            .lines()
            .filter(|l| l.starts_with("live.") || l.starts_with("log."))
            .filter(|l| {
                ["number", "float", "uint", "int", "flag", "bool"]
                    .iter()
                    .any(|k| l.split_whitespace().nth(1).is_some_and(|w| w.trim_end_matches('?') == *k))
            })
            .count();
        assert_eq!(typed_paths, declared, "every typed fact of the catalog was generated");
    }

    #[test]
    fn text_that_is_no_number_is_left_for_the_check_to_name() {
        let mut document: serde_json::Map<String, Value> = serde_json::from_str(
            r#"{"live": {"metrics": {"Query": "many"}, "disks": [{"name": "d", "is_remote": 2}]}}"#,
        )
        .unwrap();
        type_document(&mut document);
        let shown: Vec<String> = check_document(&document).unwrap_err().iter().map(ToString::to_string).collect();
        assert!(
            shown.contains(&"`live.metrics.Query`: expected a number, found the string \"many\"".to_string()),
            "{shown:?}"
        );
        assert!(shown.contains(&"`live.disks[0].is_remote`: expected a flag, found a number".to_string()), "{shown:?}");
    }
}
