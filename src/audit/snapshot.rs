//! Snapshots (`chaudit collect -o FILE`): the facts as JSON, read back for `check`.

use std::path::Path;

use super::{AuditError, Live};
use crate::collect::NodeDocuments;
use crate::collect::cluster::Collected;
use crate::facts::{Facts, Source, keys};

/// A snapshot to write: its text, and what could not be read (the snapshot is written, the
/// collection is incomplete).
pub struct Snapshot {
    pub text: String,
    pub unread: Vec<String>,
}

impl Snapshot {
    /// Incomplete when something could not be read.
    pub fn status(&self) -> crate::verdict::Status {
        crate::verdict::of_counts(0, self.unread.len())
    }
}

/// The snapshot of one server's collection.
pub fn of_node(node: NodeDocuments) -> Result<Snapshot, serde_json::Error> {
    let NodeDocuments { live, log, .. } = node;
    let mut unread = crate::collect::unread(&live, keys::live::UNAVAILABLE);
    unread.extend(log.iter().flat_map(|log| crate::collect::unread(log, keys::log::UNAVAILABLE)));
    let mut facts = Facts::empty(keys::live::ENDPOINT.text(&live).to_string());
    facts.add_live(live.into_value());
    if let Some(log) = log {
        facts.add_log(log);
    }
    Ok(Snapshot { text: facts.to_snapshot()?, unread })
}

/// The snapshot of a cluster's collection: every replica's facts, and their comparison
/// (`read_snapshot` makes it again from the replicas).
pub fn of_cluster(name: Option<&str>, collected: &Collected) -> Result<Snapshot, serde_json::Error> {
    let mut unread = Vec::new();
    for node in &collected.nodes {
        let live = node.live.iter().flat_map(|live| crate::collect::unread(live, keys::live::UNAVAILABLE));
        let log = node.log.iter().flat_map(|log| crate::collect::unread(log, keys::log::UNAVAILABLE));
        let failed = node.error.iter().cloned().chain(live).chain(log);
        unread.extend(failed.map(|why| format!("{}: {why}", node.name)));
    }
    let mut facts = Facts::empty(name.map_or_else(|| "nodes".into(), |n| format!("cluster {n}")));
    facts.add_cluster(crate::cluster::document::document(name, collected));
    facts.document.insert("nodes".into(), collected.to_json());
    Ok(Snapshot { text: facts.to_snapshot()?, unread })
}

/// The facts of a snapshot and, for a cluster snapshot, its nodes (audited as the cluster
/// audit does).
pub fn read_snapshot(path: &Path) -> Result<(Facts, Option<Live>), AuditError> {
    let mut recorded = Facts::read_snapshot(path).map_err(AuditError::Snapshot)?;
    let Some(nodes) = recorded.document.remove("nodes") else { return Ok((recorded, None)) };
    // the comparison is made again from the nodes; its recorded name is the cluster's
    let name = recorded
        .typed
        .remove(&Source::Cluster)
        .and_then(|cluster| keys::cluster::NAME.get(&cluster).cloned())
        .filter(|n| !n.is_empty());
    recorded.sources.remove(&Source::Cluster);
    let collected = Collected::from_json(nodes).map_err(|why| {
        AuditError::Snapshot(format!("{}: `nodes` is not a cluster's recorded nodes: {why}", path.display()))
    })?;
    if collected.nodes.is_empty() {
        return Err(AuditError::Snapshot(format!("{}: a cluster snapshot with no replica in `nodes`", path.display())));
    }
    Ok((recorded, Some(Live::Cluster { name, collected: Box::new(collected) })))
}
