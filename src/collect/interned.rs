//! A replica's `live` document with its facts held once for the whole cluster: replicas of
//! one config and version answer the same 2,000 rows of settings, kept once, not once per
//! replica.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::ops::Index;
use std::sync::Arc;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

/// A document's top-level facts, each with its hash, shared with the documents that have an
/// equal value.
#[derive(Debug, Clone, Default)]
pub struct Document {
    fields: BTreeMap<String, (u64, Arc<Value>)>,
}

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

    /// The version the server said it runs.
    pub fn version(&self) -> Option<crate::version::Version> {
        self["version"].as_str()?.parse().ok()
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

/// The values seen so far, by hash.
#[derive(Default)]
pub struct Interner {
    seen: HashMap<u64, Vec<Arc<Value>>>,
}

impl Interner {
    /// `value`'s fields as a document, each one held once: a field equal to one seen before is
    /// that one (this value's copy is dropped here). A value that is not an object has no
    /// fields.
    pub fn document(&mut self, value: Value) -> Document {
        let Value::Object(fields) = value else { return Document::default() };
        let fields = fields
            .into_iter()
            .map(|(name, value)| {
                let mut h = DefaultHasher::new();
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
                (name, (hash, shared))
            })
            .collect();
        Document { fields }
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
}
