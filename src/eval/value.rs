//! The facts as expression values. A fact's maps and lists are converted one level at a
//! time, when a rule first reads them (converting the whole document up front cost a
//! quarter of an audit of 2,000 users, most of it facts no rule reads, such as where each
//! profile setting is written), and shared: the interpreter copies a value wherever it binds
//! one (each element of a comprehension, each item a `filter` keeps), and copying a user's
//! map with its nested settings at every step of a comprehension over 2,000 users cost more
//! than the rules' own work.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use cel::ExecutionError;
use cel::common::traits::{Adder, Comparer, Container, Indexer, Iterable, Sizer, Zeroer};
use cel::common::types::{CelBool, CelDouble, CelInt, CelList, CelMap, CelMapKey, CelNull, CelString, CelUInt, Type};
use cel::common::value::{Builtin, BuiltinRef, CowVal, Val};

/// A JSON fact as an expression value that borrows the fact's strings (a large config has
/// 16,000 disks: copying every name and path cost more than the rules). Numbers as serde
/// gives them: non-negative integers unsigned, negative ones signed, the rest floats.
pub fn cel_value(v: &serde_json::Value) -> Box<dyn Val + '_> {
    use serde_json::Value as Json;
    match v {
        Json::Null => Box::new(CelNull),
        Json::Bool(b) => Box::new(CelBool::from(*b)),
        Json::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Box::new(CelUInt::from(u)),
            (None, Some(i)) => Box::new(CelInt::from(i)),
            _ => Box::new(CelDouble::from(n.as_f64().unwrap_or(f64::NAN))),
        },
        Json::String(s) => Box::new(CelString::from(s.as_str())),
        Json::Array(_) | Json::Object(_) => Box::new(Shared(Arc::new(Lazy { json: v, converted: OnceLock::new() }))),
    }
}

/// A JSON list or map and, once read, its expression value: one level, whose lists and
/// maps are themselves converted when read.
#[derive(Debug)]
struct Lazy<'v> {
    json: &'v serde_json::Value,
    converted: OnceLock<Box<dyn Val + 'v>>,
}

impl<'v> Lazy<'v> {
    fn value(&self) -> &(dyn Val + 'v) {
        use serde_json::Value as Json;
        let converted = self.converted.get_or_init(|| match self.json {
            Json::Array(items) => Box::new(CelList::from(items.iter().map(cel_value).collect::<Vec<_>>())),
            Json::Object(fields) => Box::new(CelMap::from(
                fields
                    .iter()
                    .map(|(k, v)| (CelMapKey::String(CelString::from(k.as_str())), cel_value(v)))
                    .collect::<HashMap<_, _>>(),
            )),
            scalar => cel_value(scalar),
        });
        converted.as_ref()
    }
}

/// A list or map that every copy shares: a copy is a reference count. It is the value it
/// holds to the interpreter (its type, operators and built-in identity are the inner
/// value's), so functions that take a `list` or `map` take it. Only a consumer that takes
/// the value by ownership (an owned result indexed or converted) copies the one level it
/// takes; the elements stay shared.
#[derive(Debug)]
struct Shared<'v>(Arc<Lazy<'v>>);

impl<'s> Val for Shared<'s> {
    fn get_type(&self) -> &Type {
        self.0.value().get_type()
    }

    fn cel_type() -> &'static Type {
        // a list or a map, per value: no overload is declared for this type
        &cel::common::types::DYN_TYPE
    }

    fn as_adder<'b, 'v>(&'b self) -> Option<&'b (dyn Adder + 'v)>
    where
        Self: 'v,
    {
        self.0.value().as_adder()
    }

    fn as_comparer(&self) -> Option<&dyn Comparer> {
        self.0.value().as_comparer()
    }

    fn as_container(&self) -> Option<&dyn Container> {
        self.0.value().as_container()
    }

    fn as_indexer<'b, 'v>(&'b self) -> Option<&'b (dyn Indexer + 'v)>
    where
        Self: 'v,
    {
        self.0.value().as_indexer()
    }

    fn into_indexer<'v>(self: Box<Self>) -> Option<Box<dyn Indexer + 'v>>
    where
        Self: 'v,
    {
        self.0.value().as_indexer().is_some().then_some(self as Box<dyn Indexer + 'v>)
    }

    fn as_iterable<'b, 'v>(&'b self) -> Option<&'b (dyn Iterable + 'v)>
    where
        Self: 'v,
    {
        self.0.value().as_iterable()
    }

    fn as_sizer(&self) -> Option<&dyn Sizer> {
        self.0.value().as_sizer()
    }

    fn as_zeroer(&self) -> Option<&dyn Zeroer> {
        self.0.value().as_zeroer()
    }

    fn equals(&self, other: &dyn Val) -> bool {
        self.0.value().equals(other)
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v>
    where
        Self: 'v,
    {
        Box::new(Shared(Arc::clone(&self.0)))
    }

    fn as_builtin<'b, 'v>(&'b self) -> BuiltinRef<'b, 'v>
    where
        Self: 'v,
    {
        self.0.value().as_builtin()
    }

    fn into_builtin<'v>(self: Box<Self>) -> Option<Builtin<'v>>
    where
        Self: 'v,
    {
        // the interpreter takes a built-in by value only where it may consume it: one copy
        // of this level (its elements are shared)
        self.0.value().clone_as_boxed().into_builtin()
    }
}

impl Indexer for Shared<'_> {
    fn get<'b, 'v>(&'b self, idx: &dyn Val) -> Result<CowVal<'b, 'v>, ExecutionError>
    where
        Self: 'v,
    {
        match self.0.value().as_indexer() {
            Some(indexer) => indexer.get(idx),
            None => Err(ExecutionError::UnexpectedType {
                got: self.0.value().get_type().name().to_owned(),
                want: "map or list".to_owned(),
            }),
        }
    }

    fn steal<'v>(self: Box<Self>, idx: &dyn Val) -> Result<Box<dyn Val + 'v>, ExecutionError>
    where
        Self: 'v,
    {
        self.get(idx).map(CowVal::into_owned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::expr;

    fn eval(expression: &str, facts: &serde_json::Value) -> cel::Value {
        let mut context = expr::context(crate::facts::catalog::of(None));
        context.add_variable_as_val("f", cel_value(facts));
        let program = cel::Program::compile(expression).unwrap();
        program.execute(&context).unwrap()
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
            ("f.users.filter(u, true)[1].name", "b".into()),
            ("f.users.map(u, u.nets)[0][0]", "::/0".into()),
            ("f.map['k']['v']", 1u64.into()),
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
