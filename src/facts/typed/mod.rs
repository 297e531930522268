//! Facts as Rust types: the rows of system tables that chaudit's own code reads, and the facts
//! it derives from them. Each type derives its serde form and its JSON schema; the catalog's
//! entries of a typed fact are generated from that schema (its doc comments are the meanings),
//! and a test holds schema.txt to them (`CHAUDIT_CATALOG=overwrite` rewrites the lines).
//!
//! The schema's JSON types give the catalog's (`string`, `uint`, `bool`, `list`, `map`, ...);
//! an `x-fact` extension names the catalog types JSON has no word for: `row` (a system
//! table's row, whose columns a newer server may add to), `location`, `flag`, `number` and
//! `dict:setting`.

use std::collections::BTreeMap;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde::de::{Deserializer, Error as _};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::document::Fact;
use super::schema::Entry;
use crate::facts::value::ToCel;
use cel::common::value::Val;

/// The schema of a value the catalog calls by its own type name.
macro_rules! catalog_type {
    ($type:ident, $json:literal, $kind:literal) => {
        impl JsonSchema for $type {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($type).into()
            }

            fn inline_schema() -> bool {
                true
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                schemars::json_schema!({"type": $json, "x-fact": $kind})
            }
        }
    };
}

// after the macro, which they use
mod entries;
mod key;
mod values;

pub use entries::entries;
pub use key::{BuiltAs, ByName, FactKey, FactType};
pub use values::{Count, Flag, Location, Number, Settings, SummedMap, flag, uint};

/// A document whose facts are read by name: a JSON object, or a replica's document with its
/// facts held once for the replicas alike.
pub trait Facts {
    fn fact(&self, name: &str) -> Option<&Value>;
}

impl Facts for Value {
    fn fact(&self, name: &str) -> Option<&Value> {
        self.get(name)
    }
}

impl Facts for serde_json::Map<String, Value> {
    fn fact(&self, name: &str) -> Option<&Value> {
        self.get(name)
    }
}

/// A typed fact: its path in the documents, what it is, its type's schema and, for a fact
/// chaudit builds (the config's, the cluster comparison's), how a snapshot's JSON of it is read
/// back into its type.
pub struct TypedFact {
    pub path: &'static str,
    pub meaning: &'static str,
    pub schema: fn() -> Schema,
    pub read: Option<ReadFact>,
}

/// A built fact read from its JSON; an error names where in the fact (`[0].shards[0][0].port`).
pub type ReadFact = fn(Value) -> Result<Box<dyn Fact>, serde_path_to_error::Error<serde_json::Error>>;

/// The schema of a fact of type `T`.
pub(crate) fn schema_of<T: JsonSchema>() -> Schema {
    schemars::generate::SchemaSettings::draft2020_12().into_generator().into_root_schema_for::<T>()
}

/// A typed fact of type `T` (a collected one: its rows stay JSON, a newer server's columns kept).
pub(crate) fn typed<T: JsonSchema>(path: &'static str, meaning: &'static str) -> TypedFact {
    TypedFact { path, meaning, schema: schema_of::<T>, read: None }
}

/// A fact chaudit builds, of type `T`: a snapshot's JSON of it is read back as `T`.
pub(crate) fn built<T: JsonSchema + DeserializeOwned + Fact>(path: &'static str, meaning: &'static str) -> TypedFact {
    fn read<T: DeserializeOwned + Fact>(
        json: Value,
    ) -> Result<Box<dyn Fact>, serde_path_to_error::Error<serde_json::Error>> {
        serde_path_to_error::deserialize::<_, T>(json).map(|fact| Box::new(fact) as Box<dyn Fact>)
    }
    TypedFact { read: Some(read::<T>), ..typed::<T>(path, meaning) }
}

/// Every typed fact, by source: the keys' registry (src/facts/keys/).
pub fn facts() -> Vec<TypedFact> {
    crate::facts::keys::registered()
}

#[cfg(test)]
mod tests {
    use crate::facts::keys;
    use crate::facts::rows::ChangedSettings;

    #[test]
    fn one_setting_or_the_changed_ones_are_read_alone() {
        let live = serde_json::json!({"settings": {
            "max_threads": {"value": "8", "default": "auto", "changed": true},
            "readonly": {"value": "0", "default": "0", "changed": false},
            "log_queries": {"value": "1", "default": "1", "changed": true},
            "bad": {"value": 5},
        }});
        let settings = keys::live::SETTINGS;
        let threads = settings.entry(&live, "max_threads").unwrap();
        assert_eq!(threads.map(|s| s.value.into_owned()), Some("8".to_string()));
        assert!(settings.entry(&live, "nope").unwrap().is_none());
        let bad = settings.entry(&live, "bad").unwrap_err();
        assert!(bad.starts_with("live.settings.bad is not of the catalog's shape"), "{bad}");
        let mut live = live;
        live["settings"].as_object_mut().unwrap().remove("bad");
        let ChangedSettings(changed) = settings.changed(&live).unwrap();
        assert_eq!(changed.iter().map(|(name, _)| *name).collect::<Vec<_>>(), ["log_queries", "max_threads"]);
    }

    #[test]
    fn a_row_of_another_shape_is_named() {
        let live = serde_json::json!({"role_grants": [{"user_name": "u", "granted_role_name": 7}]});
        let error = keys::live::ROLE_GRANTS.read(&live).unwrap_err();
        assert!(
            error.starts_with("live.role_grants is not of the catalog's shape: invalid type: integer `7`"),
            "{error}"
        );
        assert!(keys::live::GRANTS.read(&live).unwrap().is_empty());
    }
}
