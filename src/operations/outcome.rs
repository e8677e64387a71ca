//! How an operation ends, each outcome in one transaction guarded by the operation's state
//! (whoever ends it first wins; a second writer changes nothing): `*_COMPLETE`, waiting for
//! the backend, or `*_FAILED` with the reason.

use serde_json::Value;

use super::dispatch::{Done, Subject};
use super::{transitions, Conductor};
use crate::drivers::{Progress, WaitOn};
use crate::model::NodeGroup;
use crate::store::operations::{Batch, OpKind, OpState, Operation, Wait};
use crate::store::{ClusterSet, NodeGroupSet};

/// Whether other operations of the cluster are still open (then the cluster's own status
/// stays in progress).
pub async fn others_open(state: &Conductor, op: &Operation) -> Result<bool, sqlx::Error> {
    state
        .store
        .has_open_operations(&op.cluster_uuid, op.id)
        .await
}

/// Writes what the driver answered for a running operation.
pub async fn after_driver(
    state: &Conductor,
    op: &Operation,
    s: &Subject,
    done: Done,
) -> Result<(), sqlx::Error> {
    let wait = match done {
        Done::Progress(Progress::Complete) => None,
        Done::Progress(Progress::Waiting(w)) => Some(w),
        Done::Created(c) => {
            // The backend's name and facts first (idempotent, not an outcome).
            let mut changes = vec![
                ClusterSet::StackId(c.stack_id.clone()),
                ClusterSet::ApiAddress(c.api_address.clone()),
            ];
            if let Some(v) = c.coe_version.clone() {
                changes.push(ClusterSet::CoeVersion(Some(v)));
            }
            let mut batch = Batch::default().cluster(s.cluster.id, changes);
            for ng in &s.nodegroups {
                batch = batch.nodegroup(ng.id, [NodeGroupSet::StackId(c.stack_id.clone())]);
            }
            state.store.commit(batch).await?;
            c.wait
        }
    };
    match wait {
        None => finish(state, op, s, OpState::Running).await,
        Some(w) => start_waiting(state, op, s, w).await,
    }
}

/// The operation now waits for the backend: what it waits for and its deadline are stored,
/// and the reconciler looks at it at once (the change may already be visible).
async fn start_waiting(
    state: &Conductor,
    op: &Operation,
    s: &Subject,
    w: WaitOn,
) -> Result<(), sqlx::Error> {
    let wait = Wait {
        object: w.object,
        generation: w.generation,
        deadline_seconds: s.driver.progress_deadline().as_secs(),
    };
    if !state.store.start_waiting(op, &wait).await? {
        return Ok(());
    }
    tracing::info!(operation = op.id, kind = op.kind().as_str(), object = %wait.object,
        generation = ?wait.generation, "operation waits for the backend");
    if let Some(waiting) = state
        .store
        .waiting_operations(Some(&op.cluster_uuid))
        .await?
        .into_iter()
        .find(|o| o.id == op.id)
    {
        super::reconcile::reconcile_op(state, &waiting).await?;
    }
    Ok(())
}

/// The `kube_tag` label of the template an upgrade moves to.
pub async fn kube_tag(state: &Conductor, op: &Operation) -> Result<Option<String>, sqlx::Error> {
    let Some(t) = op.payload.upgrade_template() else {
        return Ok(None);
    };
    Ok(state
        .store
        .template_by_uuid(t)
        .await?
        .and_then(|t| t.labels)
        .and_then(|l| {
            l.get("kube_tag")
                .and_then(Value::as_str)
                .map(str::to_string)
        }))
}

/// `*_COMPLETE` (or the row removed, for deletes), from state `from`, in one transaction.
pub async fn finish(
    state: &Conductor,
    op: &Operation,
    s: &Subject,
    from: OpState,
) -> Result<(), sqlx::Error> {
    let cluster_done = !others_open(state, op).await?;
    let ends = transitions::completed(op.kind(), cluster_done);
    let mut batch = Batch::default();
    match op.kind() {
        OpKind::CreateCluster => {
            let mut ch: Vec<ClusterSet> = ends
                .cluster
                .map(ClusterSet::status)
                .into_iter()
                .flatten()
                .collect();
            // Every real driver shows the Kubernetes version by now: the control plane's,
            // or the template's kube_tag.
            let facts = s.driver.facts(&s.cluster);
            let version = facts
                .as_ref()
                .and_then(|f| f.coe_version.clone())
                .or_else(|| s.cluster.coe_version.clone())
                .or_else(|| {
                    s.template
                        .as_ref()
                        .and_then(|t| t.labels.as_ref())
                        .and_then(|l| l.get("kube_tag"))
                        .and_then(Value::as_str)
                        .map(str::to_string)
                });
            if let Some(v) = version {
                ch.push(ClusterSet::CoeVersion(Some(v)));
            }
            if let Some(a) = facts.and_then(|f| f.api_address) {
                ch.push(ClusterSet::ApiAddress(Some(a)));
            }
            batch = batch.cluster(s.cluster.id, ch);
            if let Some(ng_status) = ends.nodegroup {
                for ng in &s.nodegroups {
                    batch = batch.nodegroup(ng.id, NodeGroupSet::status(ng_status));
                }
            }
        }
        OpKind::DeleteCluster => batch = batch.delete_cluster(&s.cluster.uuid),
        OpKind::DeleteNodeGroup => {
            if let Some(ng) = &s.nodegroup {
                batch = batch.delete_nodegroup(ng.id);
            }
            if let Some(st) = ends.cluster {
                batch = batch.cluster(s.cluster.id, ClusterSet::status(st));
            }
        }
        kind => {
            if let (Some(ng), Some(ng_status)) = (&s.nodegroup, ends.nodegroup) {
                let mut ch = NodeGroupSet::status(ng_status).to_vec();
                if kind == OpKind::Upgrade {
                    ch.push(NodeGroupSet::Version(kube_tag(state, op).await?));
                }
                batch = batch.nodegroup(ng.id, ch);
            }
            let mut ch = Vec::new();
            if let Some(st) = ends.cluster {
                ch.extend(ClusterSet::status(st));
            }
            if kind == OpKind::Upgrade && s.nodegroup.as_ref().is_some_and(NodeGroup::is_default) {
                if let Some(t) = op.payload.upgrade_template() {
                    ch.push(ClusterSet::ClusterTemplateId(t.to_string()));
                }
                if let Some(tag) = kube_tag(state, op).await? {
                    ch.push(ClusterSet::CoeVersion(Some(tag)));
                }
            }
            batch = batch.cluster(s.cluster.id, ch);
        }
    }
    let batch = batch.transition(op.id, from, OpState::Done);
    if state.store.commit(batch).await? {
        tracing::info!(operation = op.id, kind = op.kind().as_str(), cluster = %op.cluster_uuid,
            "operation complete");
    }
    Ok(())
}

/// Ends an operation whose cluster or nodegroup row is already gone (a repeated delete).
pub async fn done_without_subject(
    state: &Conductor,
    op: &Operation,
    from: OpState,
) -> Result<(), sqlx::Error> {
    state
        .store
        .transition_operation(op.id, from, OpState::Done, None)
        .await?;
    Ok(())
}

/// Magnum's conductor on a driver failure: `*_FAILED` with the reason on the cluster and
/// the nodegroup, and for a resize the previous count back, in one transaction.
pub async fn fail(
    state: &Conductor,
    op: &Operation,
    s: Option<&Subject>,
    reason: &str,
    from: OpState,
) -> Result<(), sqlx::Error> {
    let store = &state.store;
    let ends = transitions::failed(op.kind());
    let mut batch = Batch::default();
    if op.kind() == OpKind::Resize {
        if let (Some(ng), Some(new), Some(old)) = (op.nodegroup_id, op.new_count, op.old_count) {
            batch = batch.restore_count(ng, new, old);
        }
    }
    // Without a subject (the driver, template or nodegroup could not be loaded) the cluster
    // and nodegroup that still exist are marked failed too, rather than left in progress.
    let (cluster, nodegroup, nodegroups) = match s {
        Some(s) => (
            Some(s.cluster.clone()),
            s.nodegroup.clone(),
            s.nodegroups.clone(),
        ),
        None => {
            let cluster = store.cluster_by_uuid(&op.cluster_uuid).await?;
            let nodegroup = match op.nodegroup_id {
                Some(id) => store.nodegroup_by_id(id).await?,
                None => None,
            };
            let all = match &cluster {
                Some(c) => {
                    store
                        .nodegroups_of_clusters(std::slice::from_ref(&c.uuid))
                        .await?
                }
                None => Vec::new(),
            };
            (cluster, nodegroup, all)
        }
    };
    if let Some(cluster) = cluster {
        if let Some(st) = ends.cluster {
            batch = batch.cluster(cluster.id, ClusterSet::failed(st, reason));
        }
        if let Some(ng_status) = ends.nodegroup {
            if let Some(ng) = &nodegroup {
                batch = batch.nodegroup(ng.id, NodeGroupSet::failed(ng_status, reason));
            } else if op.kind() == OpKind::CreateCluster {
                for ng in &nodegroups {
                    batch = batch.nodegroup(ng.id, NodeGroupSet::failed(ng_status, reason));
                }
            }
        }
    }
    let batch = batch.transition_failed(op.id, from, reason);
    if store.commit(batch).await? {
        tracing::warn!(operation = op.id, kind = op.kind().as_str(), %reason, "operation failed");
    }
    Ok(())
}
