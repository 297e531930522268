//! A replica's `live` document with its facts held once for the whole cluster: replicas of
//! one config and version answer the same 2,000 rows of settings, kept once, not once per
//! replica, and built once: a fact whose rows are those of a fact built before (by their
//! text) is that fact, not parsed again.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::ops::Index;
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHasher};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

/// A document's top-level facts, each with its hash, shared with the documents that have an
/// equal value.
#[derive(Debug, Clone, Default)]
pub struct Document {
    fields: BTreeMap<String, Field>,
}

/// A fact's value with its hash, shared by the documents that have it.
pub type Field = (u64, Arc<Value>);

static NULL: Value = Value::Null;

impl Document {
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.fields.get(name).map(|(_, value)| value.as_ref())
    }

    /// Each fact with its hash (equal values hash alike).
    pub fn fields(&self) -> impl Iterator<Item = (&str, u64, &Value)> {
        self.fields.iter().map(|(name, (hash, value))| (name.as_str(), *hash, value.as_ref()))
    }

    /// The document as one JSON value (a copy).
    pub fn to_value(&self) -> Value {
        Value::Object(self.fields.iter().map(|(name, (_, value))| (name.clone(), (**value).clone())).collect())
    }

    /// The document as one JSON value, a fact copied only if another document shares it.
    pub fn into_value(self) -> Value {
        let fields = self
            .fields
            .into_iter()
            .map(|(name, (_, value))| (name, Arc::try_unwrap(value).unwrap_or_else(|shared| (*shared).clone())));
        Value::Object(fields.collect())
    }

    /// The version the server said it runs.
    pub fn version(&self) -> Option<crate::version::Version> {
        crate::facts::live_version(self)
    }

    /// Sets fact `name` to a value held by the interner.
    pub fn insert(&mut self, name: &str, field: Field) {
        self.fields.insert(name.to_string(), field);
    }

    /// Sets fact `name` to `value`, held once with the documents that have it.
    pub fn set(&mut self, interner: &mut Interner, name: &str, value: Value) {
        self.insert(name, interner.field(value));
    }
}

impl crate::facts::typed::Facts for Document {
    fn fact(&self, name: &str) -> Option<&Value> {
        self.get(name)
    }
}

/// `document["fact"]`, null when absent, as on a JSON value.
impl Index<&str> for Document {
    type Output = Value;

    fn index(&self, name: &str) -> &Value {
        self.get(name).unwrap_or(&NULL)
    }
}

impl Serialize for Document {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.fields.len()))?;
        for (name, (_, value)) in &self.fields {
            map.serialize_entry(name, value.as_ref())?;
        }
        map.end()
    }
}

/// The values seen so far, by hash, and the facts built from rows, by the hash of the rows'
/// text.
#[derive(Default)]
pub struct Interner {
    seen: FxHashMap<u64, Vec<Arc<Value>>>,
    built: FxHashMap<u64, Vec<Built>>,
}

/// A fact built from rows: its name, the rows (to tell rows of equal hash apart) and value.
struct Built {
    name: String,
    rows: Vec<Arc<str>>,
    field: Field,
}

impl Interner {
    /// `value`'s fields as a document, each one held once: a field equal to one seen before is
    /// that one (this value's copy is dropped here). A value that is not an object has no
    /// fields.
    pub fn document(&mut self, value: Value) -> Document {
        let Value::Object(fields) = value else { return Document::default() };
        Document { fields: fields.into_iter().map(|(name, value)| (name, self.field(value))).collect() }
    }

    /// `value`, held once: the one seen before if equal.
    pub fn field(&mut self, value: Value) -> Field {
        let mut h = FxHasher::default();
        hash_json(&value, &mut h);
        let hash = h.finish();
        let alike = self.seen.entry(hash).or_default();
        let shared = match alike.iter().find(|seen| ***seen == value) {
            Some(seen) => Arc::clone(seen),
            None => {
                let value = Arc::new(value);
                alike.push(Arc::clone(&value));
                value
            }
        };
        (hash, shared)
    }

    /// Fact `name` from its rows (JSON lines): the fact built before from the same rows, else
    /// `build`'s, held for the next replica.
    pub fn built(
        &mut self,
        name: &str,
        rows: Vec<Arc<str>>,
        build: impl FnOnce(&[Arc<str>]) -> Result<Value, String>,
    ) -> Result<Field, String> {
        let mut h = FxHasher::default();
        (name, rows.len()).hash(&mut h);
        for row in &rows {
            row.hash(&mut h);
        }
        let key = h.finish();
        let same = |b: &Built| {
            b.name == name
                && b.rows.len() == rows.len()
                && b.rows.iter().zip(&rows).all(|(x, y)| Arc::ptr_eq(x, y) || x == y)
        };
        if let Some(built) = self.built.get(&key).and_then(|alike| alike.iter().find(|b| same(b))) {
            return Ok(built.field.clone());
        }
        let field = self.field(build(&rows)?);
        self.built.entry(key).or_default().push(Built { name: name.to_string(), rows, field: field.clone() });
        Ok(field)
    }
}

/// A structural hash: equal values hash alike (an object's fields in their order).
pub fn hash_json(value: &Value, h: &mut impl Hasher) {
    match value {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => (2u8, n).hash(h),
        Value::String(s) => (3u8, s).hash(h),
        Value::Array(items) => {
            (4u8, items.len()).hash(h);
            for item in items {
                hash_json(item, h);
            }
        }
        Value::Object(fields) => {
            (5u8, fields.len()).hash(h);
            for (name, value) in fields {
                name.hash(h);
                hash_json(value, h);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn equal_facts_are_held_once_and_read_as_before() {
        let mut interner = Interner::default();
        let a = interner.document(json!({"settings": {"x": {"value": "1"}}, "metrics": {"Query": 1}}));
        let b = interner.document(json!({"settings": {"x": {"value": "1"}}, "metrics": {"Query": 2}}));
        let held = |d: &Document, name: &str| Arc::as_ptr(&d.fields[name].1);
        assert_eq!(held(&a, "settings"), held(&b, "settings"));
        assert_ne!(held(&a, "metrics"), held(&b, "metrics"));
        assert_eq!(b["metrics"]["Query"], 2);
        assert!(b["absent"].is_null() && b.get("absent").is_none());
        assert_eq!(serde_json::to_value(&b).unwrap(), b.to_value());
        assert_eq!(b.to_value(), json!({"settings": {"x": {"value": "1"}}, "metrics": {"Query": 2}}));
    }

    #[test]
    fn a_fact_of_the_same_rows_is_built_once() {
        let mut interner = Interner::default();
        let lines = |text: &[&str]| text.iter().map(|t| Arc::<str>::from(*t)).collect::<Vec<_>>();
        let mut builds = 0;
        let mut build = |rows: &[Arc<str>]| {
            builds += 1;
            Ok(Value::from(rows.len()))
        };
        let first = interner.built("metrics", lines(&["{}", "{\"a\":1}"]), &mut build).unwrap();
        // the same text in other allocations (another replica's answer)
        let again = interner.built("metrics", lines(&["{}", "{\"a\":1}"]), &mut build).unwrap();
        assert!(Arc::ptr_eq(&first.1, &again.1));
        // another fact, or other rows, are built
        interner.built("events", lines(&["{}", "{\"a\":1}"]), &mut build).unwrap();
        interner.built("metrics", lines(&["{}"]), &mut build).unwrap();
        assert_eq!(builds, 3);
        let failed = interner.built("metrics", lines(&["x"]), |_| Err("bad response".to_string()));
        assert_eq!(failed.unwrap_err(), "bad response");
    }
}
