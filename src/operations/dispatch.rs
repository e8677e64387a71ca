//! What the driver is handed for an operation: the subject loaded fresh from the store,
//! and the driver call for each kind.

use std::sync::Arc;

use serde_json::Value;

use crate::drivers::{CreateOutcome, Driver, DriverError, Progress, ResizeRequest};
use crate::model::{Cluster, ClusterTemplate, NodeGroup};
use crate::state::AppState;
use crate::store::operations::{OpKind, Operation};

/// What the driver needs, loaded fresh.
pub struct Subject {
    pub cluster: Cluster,
    pub template: ClusterTemplate,
    pub driver: Arc<dyn Driver>,
    pub nodegroup: Option<NodeGroup>,
    /// For an upgrade, the template to move to (Magnum's driver `upgrade_cluster` gets the
    /// new template; the driver itself is the one of the current template).
    pub upgrade_to: Option<ClusterTemplate>,
    /// All the cluster's nodegroups (a create builds the topology from them; the
    /// reconciler's view needs their counts).
    pub nodegroups: Vec<NodeGroup>,
}

pub async fn load(
    state: &AppState,
    op: &Operation,
) -> Result<Result<Subject, String>, sqlx::Error> {
    let Some(cluster) = state.store.cluster_by_uuid(&op.cluster_uuid).await? else {
        return Ok(Err(format!(
            "Cluster {} could not be found.",
            op.cluster_uuid
        )));
    };
    // Only a cluster create hands the template itself to the driver.
    let template = match &cluster.cluster_template_id {
        Some(t) if op.kind == OpKind::CreateCluster => state.store.template_by_uuid(t).await?,
        Some(t) => state.store.template_for_driver(t).await?,
        None => None,
    };
    let Some(template) = template else {
        return Ok(Err(format!(
            "ClusterTemplate {} could not be found.",
            cluster.cluster_template_id.clone().unwrap_or_default()
        )));
    };
    let driver = match state.drivers.for_template(&template) {
        Ok(d) => d,
        Err(e) => return Ok(Err(e.to_string())),
    };
    let nodegroup = match op.nodegroup_id {
        Some(id) => match state.store.nodegroup_by_id(id).await? {
            Some(ng) => Some(ng),
            None => return Ok(Err(format!("Nodegroup {id} could not be found."))),
        },
        None => None,
    };
    let upgrade_to = match op.kind {
        OpKind::Upgrade => match op.payload.get("cluster_template").and_then(Value::as_str) {
            Some(t) => state.store.template_by_uuid(t).await?,
            None => None,
        },
        _ => None,
    };
    let nodegroups = state
        .store
        .nodegroups_of_clusters(std::slice::from_ref(&cluster.uuid))
        .await?;
    Ok(Ok(Subject {
        cluster,
        template,
        driver,
        nodegroup,
        upgrade_to,
        nodegroups,
    }))
}

/// The driver call for an operation; `Complete` for a cluster create carries its facts.
pub enum Done {
    Progress(Progress),
    Created(CreateOutcome),
}

pub async fn call_driver(s: &Subject, op: &Operation) -> Result<Done, DriverError> {
    let d = &s.driver;
    let ng = || {
        s.nodegroup
            .as_ref()
            .ok_or_else(|| DriverError::Rejected("the operation names no nodegroup".into()))
    };
    Ok(match op.kind {
        OpKind::CreateCluster => Done::Created(
            d.create_cluster(&s.cluster, &s.template, &s.nodegroups)
                .await?,
        ),
        OpKind::DeleteCluster => Done::Progress(d.delete_cluster(&s.cluster).await?),
        OpKind::Resize => {
            let nodes_to_remove = op
                .payload
                .get("nodes_to_remove")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            let req = ResizeRequest {
                node_count: op.new_count.unwrap_or(1),
                nodes_to_remove,
            };
            Done::Progress(d.resize(&s.cluster, ng()?, &req).await?)
        }
        OpKind::Upgrade => {
            let max_batch = op
                .payload
                .get("max_batch_size")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            // The target template may have been deleted since the upgrade was accepted.
            let target = s.upgrade_to.as_ref().ok_or_else(|| {
                DriverError::Rejected(format!(
                    "ClusterTemplate {} could not be found.",
                    op.payload
                        .get("cluster_template")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                ))
            })?;
            Done::Progress(d.upgrade(&s.cluster, target, ng()?, max_batch).await?)
        }
        OpKind::CreateNodeGroup => Done::Progress(d.create_nodegroup(&s.cluster, ng()?).await?),
        OpKind::UpdateNodeGroup => Done::Progress(d.update_nodegroup(&s.cluster, ng()?).await?),
        OpKind::DeleteNodeGroup => Done::Progress(d.delete_nodegroup(&s.cluster, ng()?).await?),
    })
}
