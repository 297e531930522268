//! A finding's evidence: named values, in name order, as a JSON object shows them.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;
use thin_vec::ThinVec;

/// Named values kept sorted by name in one small vector: a finding has a few, and 100,000
/// findings each holding a map node sized for eleven take tens of MB more.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Evidence(ThinVec<(String, Value)>);

impl Evidence {
    pub fn new() -> Evidence {
        Evidence::default()
    }

    /// Sets `name` to `value`, replacing what it had.
    pub fn insert(&mut self, name: String, value: Value) {
        match self.0.binary_search_by(|(n, _)| n.as_str().cmp(&name)) {
            Ok(i) => self.0[i].1 = value,
            Err(i) => self.0.insert(i, (name, value)),
        }
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.binary_search_by(|(n, _)| n.as_str().cmp(name)).ok().map(|i| &self.0[i].1)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.0.iter().map(|(n, v)| (n, v))
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&String, &mut Value)> {
        self.0.iter_mut().map(|(n, v)| (&*n, v))
    }

    pub fn values(&self) -> impl Iterator<Item = &Value> {
        self.0.iter().map(|(_, v)| v)
    }
}

impl<'a> IntoIterator for &'a Evidence {
    type Item = (&'a String, &'a Value);
    type IntoIter = std::iter::Map<std::slice::Iter<'a, (String, Value)>, fn(&'a (String, Value)) -> Self::Item>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(n, v)| (n, v))
    }
}

impl FromIterator<(String, Value)> for Evidence {
    fn from_iter<I: IntoIterator<Item = (String, Value)>>(entries: I) -> Evidence {
        let mut evidence = Evidence::new();
        for (name, value) in entries {
            evidence.insert(name, value);
        }
        evidence
    }
}

impl From<Evidence> for Value {
    fn from(evidence: Evidence) -> Value {
        Value::Object(evidence.0.into_iter().collect())
    }
}

impl std::ops::Index<&str> for Evidence {
    type Output = Value;

    /// `Value::Null` for a name it lacks, as a JSON object's index.
    fn index(&self, name: &str) -> &Value {
        static NULL: Value = Value::Null;
        self.get(name).unwrap_or(&NULL)
    }
}

impl Serialize for Evidence {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, value) in &self.0 {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shown as the JSON object of the same entries: names in order, a name set twice once.
    #[test]
    fn serializes_as_the_json_object_of_its_entries() {
        let entries = [("zeta", 1), ("alpha", 2), ("mid", 3), ("alpha", 4)];
        let evidence: Evidence = entries.iter().map(|(n, v)| (n.to_string(), Value::from(*v))).collect();
        let object: serde_json::Map<String, Value> =
            entries.iter().map(|(n, v)| (n.to_string(), Value::from(*v))).collect();
        assert_eq!(serde_json::to_string(&evidence).unwrap(), serde_json::to_string(&object).unwrap());
        assert_eq!(Value::from(evidence.clone()), Value::Object(object));
        assert_eq!(evidence["alpha"], 4);
        assert_eq!(evidence["none"], Value::Null);
    }
}
