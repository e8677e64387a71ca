//! What waits on one backend cluster, read in one call: the reconciler's read when a
//! driver's controller hands it a backend cluster (`stack_id`).

use super::{ClusterBy, Store};
use crate::model::{Cluster, NodeGroup, Tenancy};
use crate::operation::Operation;

/// One Magnum cluster on a backend cluster, with its nodegroups and the operations waiting
/// on it (oldest first).
#[derive(Debug)]
pub struct StackRows {
    pub cluster: Cluster,
    pub nodegroups: Vec<NodeGroup>,
    pub waiting: Vec<Operation>,
}

impl Store {
    /// The Magnum clusters whose `stack_id` is `stack` (one, unless rows were copied), each
    /// with its nodegroups and waiting operations.
    pub async fn stack_rows(&self, stack: &str) -> Result<Vec<StackRows>, sqlx::Error> {
        let clusters = self
            .find_clusters(&Tenancy::All, ClusterBy::StackId(stack))
            .await?;
        if clusters.is_empty() {
            return Ok(Vec::new());
        }
        let uuids: Vec<String> = clusters.iter().map(|c| c.uuid.clone()).collect();
        let mut nodegroups = self.nodegroups_of_clusters(&uuids).await?;
        let mut rows = Vec::with_capacity(clusters.len());
        for cluster in clusters {
            let waiting = self.waiting_operations(Some(&cluster.uuid)).await?;
            let (mine, rest) = nodegroups
                .into_iter()
                .partition(|n: &NodeGroup| n.cluster_id == cluster.uuid);
            nodegroups = rest;
            rows.push(StackRows {
                cluster,
                nodegroups: mine,
                waiting,
            });
        }
        Ok(rows)
    }
}
