//! Every fact's key, declared once with its source, name, Rust type and meaning: the registry
//! the catalog is generated from (`typed::facts()`) is built from these declarations, and Rust
//! code reads and writes a fact only through its key (`keys::live::PARTS.read(live)`), so the
//! name it uses and the type it reads cannot disagree with the catalog.

use crate::facts::Source;
use crate::facts::typed::TypedFact;

/// Declares the keys of one source's facts (`KEY: Type = "name", "meaning";`) and
/// `registered()`, their registry entries: `built` for a source chaudit builds (its facts are
/// read back from a snapshot into their types), `typed` for a collected one.
macro_rules! fact_keys {
    ($source:ident $prefix:literal, $register:ident; $($key:ident: $type:ty = $name:literal, $meaning:literal;)*) => {
        $(
            // the path first: a fact whose meaning is its type's has none of its own here
            #[doc = concat!("`", $prefix, ".", $name, "`: ", $meaning)]
            pub const $key: $crate::facts::typed::FactKey<$type> =
                $crate::facts::typed::FactKey::new($crate::facts::Source::$source, concat!($prefix, ".", $name), $name);
        )*

        /// This source's facts, in the catalog's order.
        pub(super) fn registered() -> Vec<$crate::facts::typed::TypedFact> {
            vec![$($crate::facts::typed::$register::<$type>($key.path(), $meaning)),*]
        }

        /// This source's keys as their paths and their types' schemas (the registry's check).
        #[cfg(test)]
        pub(super) fn declared() -> Vec<($crate::facts::Source, &'static str, &'static str, schemars::Schema)> {
            vec![$(($key.source(), $key.name(), $key.path(), $crate::facts::typed::schema_of::<$type>())),*]
        }
    };
}

pub mod cluster;
pub mod config;
pub mod host;
pub mod live;
pub mod log;

/// Every fact, by source.
pub(super) fn registered() -> Vec<TypedFact> {
    let sources =
        [config::registered(), live::registered(), log::registered(), cluster::registered(), host::registered()];
    sources.into_iter().flatten().collect()
}

/// A fact that says, by fact name, why other facts of its source are left out.
pub type Reasons = crate::facts::typed::FactKey<std::collections::BTreeMap<String, String>>;

/// The facts of `source` whose input is absent by nature, if the source says so.
pub fn absent(source: Source) -> Option<Reasons> {
    match source {
        Source::Config => Some(config::ABSENT),
        Source::Live => Some(live::ABSENT),
        Source::Log => Some(log::ABSENT),
        Source::Host | Source::Cluster => None,
    }
}

/// The facts of `source` that could not be read, if the source says so.
pub fn unavailable(source: Source) -> Option<Reasons> {
    match source {
        Source::Config => Some(config::UNAVAILABLE),
        Source::Live => Some(live::UNAVAILABLE),
        Source::Log => Some(log::UNAVAILABLE),
        Source::Host => Some(host::UNAVAILABLE),
        Source::Cluster => None,
    }
}

/// The facts of `source` built from part of their inputs, if the source says so.
pub fn partial(source: Source) -> Option<Reasons> {
    match source {
        Source::Cluster => Some(cluster::PARTIAL),
        Source::Config | Source::Live | Source::Log | Source::Host => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each key is a fact of the registry, under its source, of the type the catalog gives it.
    #[test]
    fn every_key_is_registered_with_its_catalog_type() {
        let registry = crate::facts::typed::facts();
        let catalog = crate::facts::schema::catalog();
        let declared =
            [config::declared(), live::declared(), log::declared(), cluster::declared(), host::declared()].concat();
        assert_eq!(declared.len(), registry.len(), "every registered fact has a key");
        for (source, name, path, schema) in declared {
            assert_eq!(path, format!("{}.{name}", source.name()), "a key's path is its source and name");
            let registered: Vec<&TypedFact> = registry.iter().filter(|f| f.path == path).collect();
            let [fact] = registered.as_slice() else { panic!("{path} is registered {} times", registered.len()) };
            assert_eq!((fact.schema)(), schema, "{path} is registered with another type than its key's");
            let generated = crate::facts::typed::entries(fact).unwrap();
            let listed = catalog.entries.iter().find(|e| e.path == path).unwrap_or_else(|| panic!("{path}"));
            assert_eq!(generated[0].kind, listed.kind, "{path}: the key's type is not the catalog's");
        }
    }
}
