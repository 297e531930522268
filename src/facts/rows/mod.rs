//! The rows of the server's system tables that chaudit's code reads, as the collection
//! records them (src/collect/plan/ has their queries). A row is open: a newer server may
//! add columns, which are kept in the document for the rules and ignored here. A column a
//! trimmed snapshot leaves out reads as empty.

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::Deserialize;

use super::typed::{Count, Flag, Number, SummedMap};

mod access;
mod log;
mod replication;
mod settings;
mod storage;

pub use access::{
    Grant, Privilege, ProfileElement, ProfileSetting, ProfileTarget, Quota, RoleGrant, RowPolicy, User, UserProfile,
};
pub use log::{
    CacheRate, InsertTarget, LockRate, LockTotals, ParallelReplicasUse, PartEvents, QueryError, QueryShape,
    WorkloadSetting, WorkloadUsage,
};
pub use replication::{
    ClusterReplica, DistributedDdlEntry, DistributionQueue, KeeperConnection, Macro, Replica, ReplicationQueueEntries,
};
pub use settings::{ChangedSettings, MergeTreeSetting, ServerSetting, SessionSetting};
pub use storage::{
    Database, DetachedParts, Disk, LogTable, Mutation, Partition, Projection, StoragePolicyVolume, Table, TableParts,
};

/// A row of system.warnings.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct Warning {
    pub message: String,
}

/// The running release's age, one row.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(extend("x-fact" = "row"))]
pub struct Release {
    /// days since the first day of the month its version (YY.M) names
    pub age_days: Number,
    /// seconds since the server started
    pub uptime_seconds: Number,
}
