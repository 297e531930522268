//! A fact's key: its source, its name and its Rust type, declared once (src/facts/keys/) and
//! used both to register the fact in the catalog and to read or write it, so the name Rust
//! code reads and the type it reads it as are the catalog's.

use std::marker::PhantomData;

use super::*;
use crate::facts::Source;
use crate::facts::document::Document;

/// The key of a fact of type `T` (the type the catalog is generated from).
pub struct FactKey<T> {
    source: Source,
    path: &'static str,
    name: &'static str,
    of: PhantomData<fn() -> T>,
}

// by hand: a key is copied whatever its fact's type
impl<T> Clone for FactKey<T> {
    fn clone(&self) -> FactKey<T> {
        *self
    }
}

impl<T> Copy for FactKey<T> {}

impl<T> FactKey<T> {
    /// The key of `source`'s fact `name`, whose path is `path` (`live.parts`).
    pub(crate) const fn new(source: Source, path: &'static str, name: &'static str) -> FactKey<T> {
        FactKey { source, path, name, of: PhantomData }
    }

    pub const fn source(&self) -> Source {
        self.source
    }

    /// The fact's name in its source's document (`parts`).
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The fact's path in the catalog (`live.parts`).
    pub const fn path(&self) -> &'static str {
        self.path
    }

    /// The fact's JSON in a collected document, as it is.
    pub fn json<'a>(&self, document: &'a impl Facts) -> Option<&'a Value> {
        document.fact(self.name)
    }
}

impl<T: FactType> FactKey<T> {
    /// The fact of `document` as its type (its text borrowed where the type has a borrowed
    /// form); empty when the fact is absent (not read, or not in the server's version). A fact
    /// of another shape is an error naming it.
    pub fn read<'a>(&self, document: &'a impl Facts) -> Result<T::Read<'a>, String> {
        Ok(self.present(document)?.unwrap_or_default())
    }

    /// The fact of `document` as its type, `None` when it is absent or null.
    pub fn present<'a>(&self, document: &'a impl Facts) -> Result<Option<T::Read<'a>>, String> {
        match document.fact(self.name) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => T::Read::deserialize(value)
                .map(Some)
                .map_err(|e| format!("{} is not of the catalog's shape: {e}", self.path)),
        }
    }
}

impl<T: ByName> FactKey<T> {
    /// One entry of a fact that is a map by name (a setting of `live.settings`) as its type,
    /// if present: the other 1,300 rows are not read.
    pub fn entry<'a>(
        &self,
        document: &'a impl Facts,
        name: &str,
    ) -> Result<Option<<T::Entry as FactType>::Read<'a>>, String> {
        match document.fact(self.name).and_then(|map| map.get(name)) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => <T::Entry as FactType>::Read::deserialize(value)
                .map(Some)
                .map_err(|e| format!("{}.{name} is not of the catalog's shape: {e}", self.path)),
        }
    }
}

impl FactKey<String> {
    /// A text fact of a collected document (`live.endpoint`, `live.version`), borrowed: empty
    /// when absent or not text.
    pub fn text<'a>(&self, document: &'a impl Facts) -> &'a str {
        document.fact(self.name).and_then(Value::as_str).unwrap_or_default()
    }
}

impl<T: Fact> FactKey<T> {
    /// The fact of a document chaudit builds (the config's, the cluster comparison's, the
    /// host's), if it holds it as its type.
    pub fn get<'d>(&self, document: &'d Document) -> Option<&'d T> {
        document.get_as(self.name)
    }

    /// Whether a built document holds the fact (of whatever type).
    pub fn is_in(&self, document: &Document) -> bool {
        document.get(self.name).is_some()
    }

    /// Writes the fact into a document chaudit builds, under its name.
    pub fn put(&self, document: &mut Document, fact: T) {
        document.insert(self.name, Box::new(fact));
    }
}

/// What a fact of type `T` is built as: `T`, or `T` shared with other facts (the users
/// config's profiles and users, built once for the facts about them).
pub trait BuiltAs<T>: Fact {}

impl<T: Fact> BuiltAs<T> for T {}

impl<T: Fact> BuiltAs<T> for std::sync::Arc<T> {}

/// A fact's type as a collected document's JSON is read into it: itself, or, for a type
/// holding text the rows borrow (1,300 settings a replica are read, not copied), its borrowed
/// form.
pub trait FactType: 'static {
    type Read<'a>: Deserialize<'a> + Default;
}

/// A fact that is a map by name, whose entries are read one at a time.
pub trait ByName {
    type Entry: FactType;
}

impl<T: FactType> ByName for Settings<T> {
    type Entry = T;
}

impl<T: FactType> ByName for BTreeMap<String, T> {
    type Entry = T;
}

impl<T: FactType> FactType for Vec<T> {
    type Read<'a> = Vec<T::Read<'a>>;
}

impl<T: FactType> FactType for Option<T> {
    type Read<'a> = Option<T::Read<'a>>;
}

impl<T: FactType> FactType for BTreeMap<String, T> {
    type Read<'a> = BTreeMap<String, T::Read<'a>>;
}

impl<T: FactType> FactType for Settings<T> {
    type Read<'a> = Settings<T::Read<'a>>;
}

/// A UInt64 the server wrote: a number, or text when it quotes 64-bit integers.
impl FactType for u64 {
    type Read<'a> = Count;
}

/// Types read as themselves.
macro_rules! read_as_itself {
    ($($type:ty),* $(,)?) => {
        $(impl FactType for $type {
            type Read<'a> = $type;
        })*
    };
}

/// Types whose text is borrowed from the document.
macro_rules! read_borrowed {
    ($($type:ident),* $(,)?) => {
        $(impl FactType for $type<'static> {
            type Read<'a> = $type<'a>;
        })*
    };
}

use crate::facts::rows;

read_as_itself!(
    String,
    bool,
    Count,
    Number,
    Flag,
    Location,
    rows::Grant,
    rows::Privilege,
    rows::ProfileElement,
    rows::ProfileSetting,
    rows::ProfileTarget,
    rows::Quota,
    rows::RoleGrant,
    rows::RowPolicy,
    rows::User,
    rows::UserProfile,
    rows::CacheRate,
    rows::InsertTarget,
    rows::LockRate,
    rows::LockTotals,
    rows::ParallelReplicasUse,
    rows::PartEvents,
    rows::QueryError,
    rows::QueryShape,
    rows::WorkloadSetting,
    rows::WorkloadUsage,
    rows::ClusterReplica,
    rows::DistributedDdlEntry,
    rows::DistributionQueue,
    rows::KeeperConnection,
    rows::Macro,
    rows::Replica,
    rows::ReplicationQueueEntries,
    rows::Database,
    rows::DetachedParts,
    rows::Disk,
    rows::Mutation,
    rows::Partition,
    rows::Projection,
    rows::StoragePolicyVolume,
    rows::Table,
    rows::TableParts,
    rows::Warning,
    rows::Release,
);

use rows::{LogTable, MergeTreeSetting, ServerSetting, SessionSetting};
read_borrowed!(SessionSetting, ServerSetting, MergeTreeSetting, LogTable);
