//! What the backend reports while operations wait, written where it differs from the rows:
//! the controllers' message as `status_reason`, and the cluster's facts (`api_address`,
//! `coe_version`, each nodegroup's `node_addresses`).

use serde_json::Value;

use super::dispatch::Subject;
use super::Conductor;
use crate::drivers::NodeGroupRef;
use crate::model::{Cluster, NodeGroup};
use crate::store::{ClusterSet, NodeGroupSet};
use crate::telemetry::metrics;

/// The controllers' message as `status_reason` while in flight (written when it changed).
pub(super) async fn show_reason(
    state: &Conductor,
    s: &Subject,
    reason: Option<String>,
) -> Result<(), sqlx::Error> {
    if reason.is_none() {
        return Ok(());
    }
    if let Some(ng) = &s.nodegroup {
        if ng.status_reason != reason {
            state
                .store
                .update_nodegroup(&ng.uuid, &[NodeGroupSet::StatusReason(reason.clone())])
                .await?;
            metrics::reconcile_write("reason");
        }
    }
    if s.cluster.status_reason != reason {
        state
            .store
            .update_cluster(&s.cluster.uuid, &[ClusterSet::StatusReason(reason)])
            .await?;
        metrics::reconcile_write("reason");
    }
    Ok(())
}

/// Writes what the backend shows about a cluster (`api_address`, `coe_version`,
/// `node_addresses`) where it differs from the rows (the cluster and its nodegroups as
/// read).
pub(super) async fn record_facts(
    state: &Conductor,
    cluster: &Cluster,
    ngs: &[NodeGroup],
) -> Result<(), sqlx::Error> {
    let Ok(driver) = state.driver_of(cluster).await? else {
        return Ok(());
    };
    let Some(facts) = driver.facts(cluster) else {
        return Ok(());
    };
    let mut ch = Vec::new();
    if facts.api_address.is_some() && facts.api_address != cluster.api_address {
        ch.push(ClusterSet::ApiAddress(facts.api_address.clone()));
    }
    if facts.coe_version.is_some() && facts.coe_version != cluster.coe_version {
        ch.push(ClusterSet::CoeVersion(facts.coe_version.clone()));
    }
    if !ch.is_empty() {
        state.store.update_cluster(&cluster.uuid, &ch).await?;
        metrics::reconcile_write("facts");
    }
    for (which, addresses) in &facts.addresses {
        let found = ngs.iter().find(|n| match which {
            NodeGroupRef::ControlPlane => n.is_master() && n.is_default(),
            NodeGroupRef::Worker(name) => !n.is_master() && n.name == *name,
        });
        if let Some(ng) = found {
            let new: Vec<Value> = addresses.iter().cloned().map(Value::String).collect();
            let current = ng.node_addresses.clone().unwrap_or_default();
            if current != new {
                state
                    .store
                    .update_nodegroup(&ng.uuid, &[NodeGroupSet::NodeAddresses(new)])
                    .await?;
                metrics::reconcile_write("facts");
            }
        }
    }
    Ok(())
}
