//! Snapshots (`chaudit collect -o FILE`): the facts as JSON, read back for `check`.

use std::path::Path;

use super::{AuditError, Live};
use crate::collect::cluster::Collected;
use crate::facts::{Facts, Source};

/// The facts of a snapshot and, for a cluster snapshot, its nodes (audited as the cluster
/// audit does).
pub fn read_snapshot(path: &Path) -> Result<(Facts, Option<Live>), AuditError> {
    let mut recorded = Facts::read_snapshot(path).map_err(AuditError::Snapshot)?;
    let Some(nodes) = recorded.document.remove("nodes") else { return Ok((recorded, None)) };
    // the comparison is made again from the nodes; its recorded name is the cluster's
    let name = recorded
        .typed
        .remove(&Source::Cluster)
        .and_then(|cluster| cluster.get_as::<String>("name").cloned())
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
