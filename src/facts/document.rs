//! The config's facts as rules read them: typed Rust values (or JSON, for a fact with no type
//! of its own), each an expression value when a rule reads it and JSON only when written
//! out. Turning 2,000 users into JSON first, field by field, and then into expression values
//! cost more than the rules that read them.

use std::any::Any;
use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::facts::typed::{self, ReadFact};
use crate::facts::value::{FieldsOf, ToCel};

/// A fact of a document: an expression value to the rules, JSON to a writer, its own type to
/// Rust code (`Document::get_as`).
pub trait Fact: ToCel + AsAny + 'static {
    /// The fact as JSON (the catalog check, the upgrade review).
    fn to_json(&self) -> Value;

    /// The fact as its own type (what an `Arc` shares, not the `Arc`): a fact built and the
    /// same fact read back from a snapshot are of one type.
    fn as_type(&self) -> &dyn Any {
        self.as_any()
    }

    /// The fact itself, when it is JSON.
    fn as_json(&self) -> Option<&Value> {
        None
    }
}

impl Fact for Value {
    fn to_json(&self) -> Value {
        self.clone()
    }

    fn as_json(&self) -> Option<&Value> {
        Some(self)
    }
}

/// A typed fact's JSON: its types hold strings, bools, lists and maps by string, which the
/// serializer cannot refuse.
fn json_of(fact: &impl Serialize) -> Value {
    serde_json::to_value(fact).expect("a typed fact serializes")
}

impl<T: ToCel + Serialize + 'static> Fact for Vec<T> {
    fn to_json(&self) -> Value {
        json_of(self)
    }
}

/// A map by name, a typed fact's struct (the cluster's query_log presence).
impl<T: FieldsOf + ToCel + Serialize + 'static> Fact for T {
    fn to_json(&self) -> Value {
        json_of(self)
    }
}

impl<T: ToCel + Serialize + 'static> Fact for crate::facts::typed::Settings<T> {
    fn to_json(&self) -> Value {
        json_of(self)
    }
}

impl Fact for String {
    fn to_json(&self) -> Value {
        Value::String(self.clone())
    }
}

impl Fact for u64 {
    fn to_json(&self) -> Value {
        Value::from(*self)
    }
}

impl Fact for bool {
    fn to_json(&self) -> Value {
        Value::Bool(*self)
    }
}

impl Fact for crate::facts::typed::Location {
    fn to_json(&self) -> Value {
        Value::String(self.0.clone())
    }
}

impl<T: ToCel + Serialize + 'static> Fact for Option<T> {
    fn to_json(&self) -> Value {
        json_of(self)
    }
}

/// A fact built once for several facts (the users config's profiles).
impl<T: Fact> Fact for std::sync::Arc<T> {
    fn to_json(&self) -> Value {
        self.as_ref().to_json()
    }

    fn as_type(&self) -> &dyn Any {
        self.as_ref().as_type()
    }
}

/// A value as `Any`, for [`Fact::as_type`].
pub trait AsAny {
    fn as_any(&self) -> &dyn Any;
}

impl<T: Any> AsAny for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A source's facts by name (the config's), held as built.
#[derive(Debug, Default)]
pub struct Document {
    facts: BTreeMap<String, Box<dyn Fact>>,
}

impl Document {
    pub fn insert(&mut self, name: impl Into<String>, fact: Box<dyn Fact>) {
        self.facts.insert(name.into(), fact);
    }

    pub fn get(&self, name: &str) -> Option<&dyn Fact> {
        self.facts.get(name).map(AsRef::as_ref)
    }

    /// A fact as its type, if it is one of that type.
    pub fn get_as<T: 'static>(&self, name: &str) -> Option<&T> {
        self.get(name)?.as_type().downcast_ref()
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.facts.keys().map(String::as_str)
    }

    /// The document as JSON.
    pub fn to_json(&self) -> serde_json::Map<String, Value> {
        self.facts.iter().map(|(name, fact)| (name.clone(), fact.to_json())).collect()
    }
}

/// A built fact of a snapshot that is not of its type: its path and why.
#[derive(Debug)]
pub struct Unreadable {
    pub path: String,
    pub why: String,
}

impl Document {
    /// A source chaudit builds (`config`, `cluster`) read back from a snapshot's JSON, each
    /// fact into its type.
    pub fn read(source: &str, json: Value) -> Result<Document, Unreadable> {
        let readers: BTreeMap<&str, ReadFact> =
            typed::facts().into_iter().filter_map(|fact| Some((fact.path, fact.read?))).collect();
        let Value::Object(facts) = json else {
            return Err(Unreadable { path: source.to_string(), why: "not a map of facts".into() });
        };
        let mut document = Document::default();
        for (name, value) in facts {
            let path = format!("{source}.{name}");
            let Some(read) = readers.get(path.as_str()) else {
                return Err(Unreadable { path, why: "not a fact chaudit builds".into() });
            };
            match read(value) {
                Ok(fact) => document.insert(name, fact),
                Err(e) => {
                    // the path of the value inside the fact: `[0].port`, `.name`, or `.` (itself)
                    let inner = e.path().to_string();
                    let path = match inner.as_str() {
                        "." => path,
                        _ if inner.starts_with('[') => path + &inner,
                        _ => format!("{path}.{inner}"),
                    };
                    return Err(Unreadable { path, why: format!("not of its type: {}", e.inner()) });
                }
            }
        }
        Ok(document)
    }
}

impl FieldsOf for Document {
    fn fields(&self) -> Vec<(&str, &dyn ToCel)> {
        self.facts.iter().map(|(name, fact)| (name.as_str(), fact.as_ref() as &dyn ToCel)).collect()
    }

    fn len(&self) -> usize {
        self.facts.len()
    }

    fn contains(&self, name: &str) -> bool {
        self.facts.contains_key(name)
    }
}

#[cfg(test)]
mod tests {
    use serde::Serialize;

    use super::*;
    use crate::facts::config_sections as sections;
    use crate::facts::config_storage as storage;
    use crate::facts::config_users as users;
    use crate::facts::keys;
    use crate::facts::value::{cel_value, to_value};

    /// A typed fact's fields are the ones serde writes: the catalog is generated from the
    /// serde form, so a field the rules could not read would be a silent `no such key`.
    fn fields_are_serdes<T: FieldsOf + Serialize + Default>() {
        let fact = T::default();
        let json = serde_json::to_value(&fact).unwrap();
        let written: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
        let read: Vec<&str> = fact.fields().into_iter().map(|(name, _)| name).collect();
        assert_eq!(read, written, "{}", std::any::type_name::<T>());
        assert_eq!(fact.len(), read.len());
        assert!(read.iter().all(|name| fact.contains(name)) && !fact.contains("absent"));
    }

    #[test]
    fn every_typed_fact_has_the_fields_serde_writes() {
        fields_are_serdes::<storage::ConfigDisk>();
        fields_are_serdes::<storage::MisspelledElement>();
        fields_are_serdes::<storage::MisspelledDisk>();
        fields_are_serdes::<storage::CacheDisk>();
        fields_are_serdes::<storage::ConfigPolicy>();
        fields_are_serdes::<storage::Volume>();
        fields_are_serdes::<storage::ConfigCluster>();
        fields_are_serdes::<storage::Replica>();
        fields_are_serdes::<sections::NamedAt>();
        fields_are_serdes::<sections::LogSection>();
        fields_are_serdes::<sections::LogUnknownElement>();
        fields_are_serdes::<sections::PlaintextCredential>();
        fields_are_serdes::<sections::OpenSslClient>();
        fields_are_serdes::<sections::InterserverCredentials>();
        fields_are_serdes::<sections::Logger>();
        fields_are_serdes::<users::ConfigProfile>();
        fields_are_serdes::<users::ConfigUser>();
        fields_are_serdes::<users::Networks>();
        fields_are_serdes::<users::WrittenSetting>();
        fields_are_serdes::<crate::facts::config::RootElement>();
        fields_are_serdes::<crate::facts::config::LoaderProblem>();
        fields_are_serdes::<crate::facts::startup::StartProblemFact>();
        fields_are_serdes::<crate::facts::derived::Route>();
        fields_are_serdes::<crate::facts::derived::BlockDevice>();
        use crate::facts::cluster;
        fields_are_serdes::<cluster::NodeSummary>();
        fields_are_serdes::<cluster::Unreachable>();
        fields_are_serdes::<cluster::VersionHosts>();
        fields_are_serdes::<cluster::Divergence>();
        fields_are_serdes::<cluster::HostValue>();
        fields_are_serdes::<cluster::StorageGap>();
        fields_are_serdes::<cluster::QueryLogPresence>();
        // the cluster document's facts are its fields
        let whole = serde_json::to_value(cluster::ClusterDocument::default()).unwrap();
        let facts = cluster::ClusterDocument::default().into_document().to_json();
        assert_eq!(Value::Object(facts), whole);
    }

    /// Each fact of `document` is to the rules what its JSON would be (same fields, numbers,
    /// nulls and lists), and a snapshot of them reads back into the same facts, each of the
    /// type it was built as.
    fn typed_as_its_json(source: &str, document: &Document) -> Document {
        for (name, fact) in document.fields() {
            let json = document.get(name).unwrap().to_json();
            let typed = to_value(fact.cel().as_ref()).unwrap();
            assert_eq!(typed, to_value(cel_value(&json).as_ref()).unwrap(), "{source}.{name}");
        }
        let read = Document::read(source, Value::Object(document.to_json())).unwrap();
        assert_eq!(read.to_json(), document.to_json());
        for name in document.names() {
            let (built, back) = (document.get(name).unwrap().as_type(), read.get(name).unwrap().as_type());
            assert_eq!(built.type_id(), back.type_id(), "{source}.{name} is built as one type and read as another");
        }
        read
    }

    #[test]
    fn a_typed_fact_is_the_value_its_json_would_be() {
        let main = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/production/config.xml");
        let options = crate::config::LoadOptions {
            default_include_from: crate::config::DefaultInclude::None,
            env: Default::default(),
            env_origin: None,
            roots: Default::default(),
            base: None,
        };
        let loaded = crate::config::load(&main, &options).unwrap();
        let facts = crate::facts::config::facts(&loaded, "example".into(), None);
        let config = &facts.typed[&crate::facts::Source::Config];
        assert!(config.len() > 30, "every fact is built");
        let read = typed_as_its_json("config", config);
        assert!(keys::config::USERS.get(&read).is_some_and(|u| !u.is_empty()));
        assert_eq!(keys::config::EXPOSED.get(&read), keys::config::EXPOSED.get(config));
        // this machine's facts, each read or said unavailable
        let host = crate::collect::host::collect();
        let read = typed_as_its_json("host", &host);
        let unavailable = keys::host::UNAVAILABLE.get(&read).unwrap();
        for fact in typed::facts().iter().filter_map(|f| f.path.strip_prefix("host.")) {
            assert!(
                host.get(fact).is_some() || unavailable.contains_key(fact),
                "host.{fact} is neither read nor unavailable"
            );
        }
        let replica = storage::Replica { host: "h".into(), port: Some(9000) };
        assert_eq!(
            to_value(replica.cel().as_ref()).unwrap(),
            to_value(cel_value(&serde_json::to_value(&replica).unwrap()).as_ref()).unwrap()
        );
    }
}
