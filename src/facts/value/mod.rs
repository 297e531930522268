//! The facts as expression values, built when a rule first reads them and shared: the
//! interpreter copies a value wherever it binds one (each element of a comprehension, each
//! item a `filter` keeps), and copying a user's map with its nested settings at every step
//! of a comprehension over 2,000 users cost more than the rules' own work.
//!
//! An object (a typed fact, or JSON) is read in place: its fields are looked up by name in
//! name order and each field's value is built on its first read. Converting objects to the
//! interpreter's hash maps (every field of every user, hashed) cost a quarter of an audit
//! of 2,000 users, and a 16,000-disk lookup table was hashed whole by the first rule that
//! asked for one disk. A list is converted one level at a time, when first read.

use std::sync::{Arc, OnceLock};

use cel::ExecutionError;
use cel::common::traits::{Adder, Comparer, Container, Indexer, Iterable, Sizer, Zeroer};
use cel::common::types::{CelBool, CelDouble, CelInt, CelList, CelNull, CelString, CelUInt, Kind, Type};
use cel::common::value::{Builtin, BuiltinRef, CowVal, Val};
use cel::objects::{Key, Map};

mod object;
mod shared;

pub use object::object;
pub use shared::list;

/// A fact as an expression value that borrows the fact's strings (a large config has 16,000
/// disks: copying every name and path cost more than the rules): JSON (a snapshot's, a
/// collector's) or a typed fact (the config's), its lists and objects built when first read.
pub trait ToCel: Send + Sync + std::fmt::Debug {
    fn cel(&self) -> Box<dyn Val + '_>;
}

/// An object's fields: a JSON object's, a map's by name or a typed fact's.
pub trait FieldsOf: Send + Sync + std::fmt::Debug {
    /// Each field's name and value, in name order.
    fn fields(&self) -> Vec<(&str, &dyn ToCel)>;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn contains(&self, name: &str) -> bool;
}

/// A list's items.
pub trait ItemsOf: Send + Sync + std::fmt::Debug {
    fn items(&self) -> Vec<Box<dyn Val + '_>>;
}

/// A JSON fact as an expression value.
pub fn cel_value(v: &serde_json::Value) -> Box<dyn Val + '_> {
    v.cel()
}

/// Numbers as serde gives them in JSON: non-negative integers unsigned, negative ones
/// signed, the rest floats.
impl ToCel for serde_json::Value {
    fn cel(&self) -> Box<dyn Val + '_> {
        use serde_json::Value as Json;
        match self {
            Json::Null => Box::new(CelNull),
            Json::Bool(b) => b.cel(),
            Json::Number(n) => match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => Box::new(CelUInt::from(u)),
                (None, Some(i)) => Box::new(CelInt::from(i)),
                _ => Box::new(CelDouble::from(n.as_f64().unwrap_or(f64::NAN))),
            },
            Json::String(s) => s.cel(),
            Json::Array(items) => list(items),
            Json::Object(fields) => object(fields),
        }
    }
}

impl FieldsOf for serde_json::Map<String, serde_json::Value> {
    fn fields(&self) -> Vec<(&str, &dyn ToCel)> {
        self.iter().map(|(name, value)| (name.as_str(), value as &dyn ToCel)).collect()
    }

    fn len(&self) -> usize {
        self.len()
    }

    fn contains(&self, name: &str) -> bool {
        self.contains_key(name)
    }
}

impl<T: ToCel> FieldsOf for std::collections::BTreeMap<String, T> {
    fn fields(&self) -> Vec<(&str, &dyn ToCel)> {
        self.iter().map(|(name, value)| (name.as_str(), value as &dyn ToCel)).collect()
    }

    fn len(&self) -> usize {
        self.len()
    }

    fn contains(&self, name: &str) -> bool {
        self.contains_key(name)
    }
}

impl<T: ToCel> ToCel for std::collections::BTreeMap<String, T> {
    fn cel(&self) -> Box<dyn Val + '_> {
        object(self)
    }
}

impl<T: ToCel> ItemsOf for Vec<T> {
    fn items(&self) -> Vec<Box<dyn Val + '_>> {
        self.iter().map(ToCel::cel).collect()
    }
}

impl<T: ToCel> ToCel for Vec<T> {
    fn cel(&self) -> Box<dyn Val + '_> {
        list(self)
    }
}

impl<T: ToCel> ToCel for Arc<T> {
    fn cel(&self) -> Box<dyn Val + '_> {
        self.as_ref().cel()
    }
}

/// As serde writes `None` in JSON: null.
impl<T: ToCel> ToCel for Option<T> {
    fn cel(&self) -> Box<dyn Val + '_> {
        match self {
            Some(value) => value.cel(),
            None => Box::new(CelNull),
        }
    }
}

impl ToCel for String {
    fn cel(&self) -> Box<dyn Val + '_> {
        Box::new(CelString::from(self.as_str()))
    }
}

impl ToCel for bool {
    fn cel(&self) -> Box<dyn Val + '_> {
        Box::new(CelBool::from(*self))
    }
}

impl ToCel for u64 {
    fn cel(&self) -> Box<dyn Val + '_> {
        Box::new(CelUInt::from(*self))
    }
}

impl ToCel for u16 {
    fn cel(&self) -> Box<dyn Val + '_> {
        Box::new(CelUInt::from(u64::from(*self)))
    }
}

/// A typed fact's fields, named as serde names them (`"type" = kind` for a renamed one): a
/// fact struct is an object to the rules, built field by field when read, never as JSON.
#[macro_export]
macro_rules! fact_object {
    ($type:ty { $($field:ident $(= $name:literal)?),* $(,)? }) => {
        impl $crate::facts::value::FieldsOf for $type {
            fn fields(&self) -> Vec<(&str, &dyn $crate::facts::value::ToCel)> {
                // the fields' name order, found once per type (sorting them for each of
                // 2,000 users was a fifth of a rule's evaluation)
                static ORDER: std::sync::OnceLock<Vec<usize>> = std::sync::OnceLock::new();
                let names = [$($crate::fact_object!(@name $field $($name)?)),*];
                let order = ORDER.get_or_init(|| {
                    let mut order: Vec<usize> = (0..names.len()).collect();
                    order.sort_unstable_by_key(|&i| names[i]);
                    order
                });
                let values = [$(&self.$field as &dyn $crate::facts::value::ToCel),*];
                order.iter().map(|&i| (names[i], values[i])).collect()
            }

            fn len(&self) -> usize {
                [$(stringify!($field)),*].len()
            }

            fn contains(&self, name: &str) -> bool {
                [$($crate::fact_object!(@name $field $($name)?)),*].contains(&name)
            }
        }

        impl $crate::facts::value::ToCel for $type {
            fn cel(&self) -> Box<dyn cel::common::value::Val + '_> {
                $crate::facts::value::object(self)
            }
        }
    };
    (@name $field:ident) => { stringify!($field) };
    (@name $field:ident $name:literal) => { $name };
}

/// An expression value as a [`cel::Value`] (for a rule's `when`, evidence and templates):
/// lists and string-keyed maps item by item, so a fact's object converts wherever it is
/// (the interpreter's own conversion refuses it), the rest as the interpreter converts them.
pub fn to_value(v: &dyn Val) -> Result<cel::Value, ExecutionError> {
    match v.get_type().kind() {
        Kind::Map => {
            let mut converted = std::collections::HashMap::new();
            for (key, value) in entries(v)? {
                let Some(name) = key.downcast_ref::<CelString>() else { return cel::Value::try_from(v) };
                converted.insert(Key::from(name.inner().to_string()), to_value(value.as_ref())?);
            }
            Ok(cel::Value::Map(Map { map: Arc::new(converted) }))
        }
        Kind::List => {
            let Some(items) = v.as_iterable() else { return cel::Value::try_from(v) };
            let mut values = Vec::new();
            let mut items = items.iter();
            while let Some(item) = items.next() {
                values.push(to_value(item)?);
            }
            Ok(cel::Value::List(Arc::new(values)))
        }
        _ => cel::Value::try_from(v),
    }
}

/// `literal == fact` as `fact == literal` (and `!=` alike), and `fact in [{...}, ...]` as
/// `fact == {...} || ...`: equality asks its left operand, and the interpreter's own maps
/// recognise only their own kind, so a literal map (or a list of them) asked would never
/// equal a fact (the compiled expression is rewritten once).
pub fn facts_answer_equality(call: &mut cel::common::ast::CallExpr) {
    use cel::common::ast::{CallExpr, Expr, IdedExpr, operators};
    let literal = |e: &Expr| matches!(e, Expr::Map(_) | Expr::List(_));
    if (call.func_name == operators::EQUALS || call.func_name == operators::NOT_EQUALS)
        && call.args.len() == 2
        && literal(&call.args[0].expr)
        && !literal(&call.args[1].expr)
    {
        call.args.swap(0, 1);
    }
    if call.func_name == operators::IN
        && let [needle, IdedExpr { expr: Expr::List(list), .. }] = call.args.as_slice()
        && list.optional_indices.is_empty()
        && list.elements.iter().any(|e| matches!(e.expr, Expr::Map(_)))
    {
        let call_of = |func: &str, id: u64, args: Vec<IdedExpr>| IdedExpr {
            id,
            expr: Expr::Call(CallExpr { func_name: func.to_string(), target: None, args }),
        };
        let mut equal = list.elements.iter().map(|e| call_of(operators::EQUALS, e.id, vec![needle.clone(), e.clone()]));
        let any =
            equal.next().map(|first| equal.fold(first, |any, e| call_of(operators::LOGICAL_OR, e.id, vec![any, e])));
        if let Some(IdedExpr { expr: Expr::Call(any), .. }) = any {
            *call = any;
        }
    }
}

/// A map's values, in the order of its keys.
pub fn values<'b, 'v>(map: &'b (dyn Val + 'v)) -> Result<Vec<CowVal<'b, 'v>>, ExecutionError> {
    Ok(entries(map)?.into_iter().map(|(_, value)| value).collect())
}

/// A map's keys with their values (none for a value that is no map).
fn entries<'b, 'v>(map: &'b (dyn Val + 'v)) -> Result<Vec<(&'b (dyn Val + 'v), CowVal<'b, 'v>)>, ExecutionError> {
    let (Some(keys), Some(indexer)) = (map.as_iterable(), map.as_indexer()) else { return Ok(Vec::new()) };
    let mut entries = Vec::new();
    let mut keys = keys.iter();
    while let Some(key) = keys.next() {
        entries.push((key, indexer.get(key)?));
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::expr;

    fn eval(expression: &str, facts: &serde_json::Value) -> cel::Value {
        let mut context = expr::context(crate::facts::catalog::of(None));
        context.add_variable_as_val("f", cel_value(facts));
        let origin = crate::config::Origin { file: crate::config::FileId(0), offset: 0 };
        let compiled =
            expr::Expr::compile(expression, origin).unwrap_or_else(|e| panic!("{expression}: {}", e.message));
        compiled.eval(&context).unwrap()
    }

    #[test]
    fn shared_lists_and_maps_behave_as_the_values_they_hold() {
        let facts = serde_json::json!({
            "users": [{"name": "a", "nets": ["::/0"], "n": 2}, {"name": "b", "nets": [], "n": 5}],
            "map": {"k": {"v": 1}},
        });
        let cases = [
            ("f.users.filter(u, u.n > 3).map(u, u.name)", cel::Value::from(vec![cel::Value::from("b")])),
            ("f.users.exists(u, '::/0' in u.nets)", true.into()),
            ("size(f.users) == 2 && size(f.map) == 1", true.into()),
            ("has(f.map.k.v) && !has(f.map.k.w) && 'k' in f.map", true.into()),
            ("f.users[0] == {'name': 'a', 'nets': ['::/0'], 'n': 2u}", true.into()),
            ("f.users + [1] == f.users + [1] && size(f.users + f.users) == 4", true.into()),
            ("size([] + f.users) == 2 && ([] + f.users)[1].name == 'b' && size(f.users + []) == 2", true.into()),
            ("flatten([f.users, f.users])[3].name == 'b' && flatten([[1], [2, 3], 4]) == [1, 2, 3, 4]", true.into()),
            ("f.users.filter(u, true)[1].name", "b".into()),
            ("f.users.map(u, u.nets)[0][0]", "::/0".into()),
            ("f.users.map(u, u)[1].name + f.users.filter(u, u.n > 3u).map(u, u)[0].name", "bb".into()),
            (
                "join(f.users.map(u, u.nets), '; ') + ' ' + string(num(f.users[1].n)) + string(truthy(f.users[0].n))",
                "::/0;  5true".into(),
            ),
            ("join(f.users, '|').contains('::/0') && num(f.map) != num(f.map)", true.into()),
            (
                "{'u': f.users[0]}",
                cel::to_value(serde_json::json!({"u": {"name": "a", "nets": ["::/0"], "n": 2}})).unwrap(),
            ),
            ("f.map['k']['v']", 1u64.into()),
            ("f.map == {'k': {'v': 1u}} && {'k': {'v': 1u}} == f.map && {'k': {'v': 2u}} != f.map", true.into()),
            (
                "f.map.k in [{'v': 2u}, {'v': 1u}] && !(f.map.k in [{'v': 2u}]) && f.map.k in [1, {'v': 1u}]",
                true.into(),
            ),
            ("[{'name': 'a', 'nets': ['::/0'], 'n': 2u}] == f.users.filter(u, u.n < 3u)", true.into()),
            ("f.map.exists(k, k == 'k') && f.map.k.all(k, k == 'v') && size(f.map.k) == 1", true.into()),
            ("!('w' in f.map.k) && 'v' in f.map.k && f.map.?w.orValue(0) == 0", true.into()),
            (
                "f.map.k",
                cel::Value::Map(std::collections::HashMap::from([("v".to_string(), cel::Value::UInt(1))]).into()),
            ),
            ("type(f.users) == list && type(f.map) == map", true.into()),
        ];
        for (expression, expected) in cases {
            assert_eq!(eval(expression, &facts), expected, "{expression}");
        }
    }

    #[test]
    fn a_copy_is_the_same_value_not_a_new_one() {
        let facts = serde_json::json!([{"a": 1}]);
        let value = cel_value(&facts);
        let copy = value.clone_as_boxed();
        let (Some(original), Some(copied)) = (value.downcast_ref::<CelList>(), copy.downcast_ref::<CelList>()) else {
            panic!("a list");
        };
        assert!(std::ptr::eq(original, copied));
    }
}
