//! What the driver is handed for an operation: the subject loaded fresh from the store,
//! and the driver call for each kind.

use std::sync::Arc;

use super::{Conductor, NoDriver};
use crate::drivers::{CreateGiven, CreateOutcome, Driver, DriverError, Progress, ResizeRequest};
use crate::model::{Cluster, ClusterTemplate, NodeGroup};
use crate::store::operations::{OpKind, OpPayload, Operation};

/// What the driver needs, loaded fresh.
pub struct Subject {
    pub cluster: Cluster,
    /// The whole template, for a cluster create only (the one call that reads it; every
    /// other operation reads only what chooses the driver).
    pub template: Option<ClusterTemplate>,
    pub driver: Arc<dyn Driver>,
    pub nodegroup: Option<NodeGroup>,
    /// For an upgrade, the template to move to (Magnum's driver `upgrade_cluster` gets the
    /// new template; the driver itself is the one of the current template).
    pub upgrade_to: Option<ClusterTemplate>,
    /// All the cluster's nodegroups (a create builds the topology from them; the
    /// reconciler's view needs their counts).
    pub nodegroups: Vec<NodeGroup>,
}

/// Why an operation's subject could not be loaded; the text is the failure's reason.
/// [`LoadError::is_gone`]: what the operation worked on no longer exists.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    #[error("Cluster {0} could not be found.")]
    ClusterGone(String),
    #[error("ClusterTemplate {0} could not be found.")]
    TemplateGone(String),
    /// The template names no driver this service has (the registry's text).
    #[error("{0}")]
    NoDriver(String),
    #[error("Nodegroup {0} could not be found.")]
    NodeGroupGone(String),
}

impl LoadError {
    /// The cluster or nodegroup is gone: the operation has nothing left to do (it closes
    /// through [`super::outcome::gone`], it does not fail).
    pub fn is_gone(&self) -> bool {
        matches!(
            self,
            LoadError::ClusterGone(_) | LoadError::NodeGroupGone(_)
        )
    }
}

/// The subject of `op`, loaded fresh from the store.
pub async fn load(
    state: &Conductor,
    op: &Operation,
) -> Result<Result<Subject, LoadError>, sqlx::Error> {
    let Some(cluster) = state.store.cluster_by_uuid(&op.cluster_uuid).await? else {
        return Ok(Err(LoadError::ClusterGone(op.cluster_uuid.clone())));
    };
    let nodegroups = state
        .store
        .nodegroups_of_clusters(std::slice::from_ref(&cluster.uuid))
        .await?;
    subject_of(state, op, cluster, nodegroups).await
}

/// The subject of `op` from its cluster and nodegroups as already read (the reconciler's
/// one read of a backend cluster): what chooses the driver is read, and a create's or an
/// upgrade's template.
pub async fn subject_of(
    state: &Conductor,
    op: &Operation,
    cluster: Cluster,
    nodegroups: Vec<NodeGroup>,
) -> Result<Result<Subject, LoadError>, sqlx::Error> {
    // Only a cluster create hands the template itself to the driver: read once for both.
    let chosen = if op.kind() == OpKind::CreateCluster {
        state
            .driver_and_template_of(&cluster)
            .await?
            .map(|(d, t)| (d, Some(t)))
    } else {
        state.driver_of(&cluster).await?.map(|d| (d, None))
    };
    let (driver, template) = match chosen {
        Ok(chosen) => chosen,
        Err(NoDriver::TemplateGone(id)) => return Ok(Err(LoadError::TemplateGone(id))),
        Err(NoDriver::Unsupported(r)) => return Ok(Err(LoadError::NoDriver(r.to_string()))),
    };
    let nodegroup = match &op.nodegroup_uuid {
        Some(uuid) => match nodegroups.iter().find(|n| n.uuid == *uuid) {
            Some(ng) => Some(ng.clone()),
            None => return Ok(Err(LoadError::NodeGroupGone(uuid.clone()))),
        },
        None => None,
    };
    let upgrade_to = match op.payload.upgrade_template() {
        Some(t) => state.store.template_by_uuid(t).await?,
        None => None,
    };
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

pub async fn call_driver(
    s: &Subject,
    op: &Operation,
    given: &CreateGiven<'_>,
) -> Result<Done, DriverError> {
    let d = &s.driver;
    let ng = || {
        s.nodegroup
            .as_ref()
            .ok_or_else(|| DriverError::rejected("the operation names no nodegroup"))
    };
    Ok(match &op.payload {
        OpPayload::CreateCluster { .. } => {
            let template = s.template.as_ref().ok_or_else(|| {
                DriverError::rejected("a cluster create was loaded without its template")
            })?;
            Done::Created(
                d.create_cluster(&s.cluster, template, &s.nodegroups, given)
                    .await?,
            )
        }
        OpPayload::DeleteCluster => Done::Progress(d.delete_cluster(&s.cluster).await?),
        OpPayload::Resize { nodes_to_remove } => {
            let req = ResizeRequest {
                node_count: op.new_count.unwrap_or(1),
                nodes_to_remove: nodes_to_remove.clone(),
            };
            Done::Progress(d.resize(&s.cluster, ng()?, &req).await?)
        }
        // A resize back to the restored count: the same one-field change, nothing removed
        // by name (the backend picks, as for any scale down).
        OpPayload::Rollback { .. } => {
            let req = ResizeRequest {
                node_count: op.new_count.unwrap_or(1),
                nodes_to_remove: Vec::new(),
            };
            Done::Progress(d.resize(&s.cluster, ng()?, &req).await?)
        }
        OpPayload::Upgrade {
            cluster_template,
            max_batch_size,
        } => {
            // The target template may have been deleted since the upgrade was accepted.
            let target = s.upgrade_to.as_ref().ok_or_else(|| {
                DriverError::rejected(format!(
                    "ClusterTemplate {cluster_template} could not be found."
                ))
            })?;
            Done::Progress(
                d.upgrade(&s.cluster, target, ng()?, *max_batch_size)
                    .await?,
            )
        }
        OpPayload::CreateNodeGroup => Done::Progress(d.create_nodegroup(&s.cluster, ng()?).await?),
        OpPayload::UpdateNodeGroup => Done::Progress(d.update_nodegroup(&s.cluster, ng()?).await?),
        OpPayload::DeleteNodeGroup => Done::Progress(d.delete_nodegroup(&s.cluster, ng()?).await?),
    })
}
