//! How an operation ends, each outcome in one transaction guarded by the operation's state
//! (whoever ends it first wins; a second writer changes nothing) and by its cluster's row
//! lock: `*_COMPLETE`, waiting for the backend, `*_FAILED` with the reason, or closed because
//! what it worked on is gone ([`gone`], the one path for that). Rows are addressed by the
//! uuids the operation recorded; the cluster's own status settles only when its last open
//! operation ends, and no outcome of other work overwrites a delete in progress.

use super::dispatch::{Done, Subject};
use super::{transitions, Conductor};
use crate::drivers::{Progress, WaitOn};
use crate::model::Tenancy;
use crate::model::{ClusterTemplate, NodeGroup};
use crate::store::operations::{NewOperation, OpKind, OpPayload, OpState, Operation, Wait};
use crate::store::{Batch, ClusterSet, Guard, NodeGroupSet, Refused};

/// What [`after_driver`] wrote: the operation ended, or it now waits for the backend (and
/// the caller has the reconciler look at it at once: the change may already be visible).
/// A waiting operation carries its backend cluster's name as now stored: a create learns
/// it from the driver, after its subject was loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Next {
    Ended,
    Waiting { stack_id: Option<String> },
}

/// Writes what the driver answered for a running operation.
pub async fn after_driver(
    state: &Conductor,
    op: &Operation,
    s: &Subject,
    done: Done,
) -> Result<Next, sqlx::Error> {
    let mut stack_id = s.cluster.stack_id.clone();
    let wait = match done {
        Done::Progress(Progress::Complete) => None,
        Done::Progress(Progress::Waiting(w)) => Some(w),
        Done::Created(c) => {
            stack_id.clone_from(&c.stack_id);
            // The backend's name and facts first (idempotent, not an outcome).
            let mut changes = vec![
                ClusterSet::StackId(c.stack_id.clone()),
                ClusterSet::ApiAddress(c.api_address.clone()),
            ];
            if let Some(v) = c.coe_version.clone() {
                changes.push(ClusterSet::CoeVersion(Some(v)));
            }
            let mut batch = Batch::default()
                .guard(Guard::cluster(&s.cluster.uuid, Tenancy::All))
                .cluster(&s.cluster.uuid, changes);
            for ng in &s.nodegroups {
                batch = batch.nodegroup(&ng.uuid, [NodeGroupSet::StackId(c.stack_id.clone())]);
            }
            if let Err(Refused::ClusterGone) = state.store.commit(batch).await? {
                gone(state, op, OpState::Running).await?;
                return Ok(Next::Ended);
            }
            c.wait
        }
    };
    match wait {
        None => finish(state, op, s, OpState::Running)
            .await
            .map(|()| Next::Ended),
        Some(w) => start_waiting(state, op, s, w)
            .await
            .map(|waits| match waits {
                true => Next::Waiting { stack_id },
                false => Next::Ended,
            }),
    }
}

/// The operation now waits for the backend: what it waits for and its deadline are stored.
/// `false`: it had already ended.
async fn start_waiting(
    state: &Conductor,
    op: &Operation,
    s: &Subject,
    w: WaitOn,
) -> Result<bool, sqlx::Error> {
    crate::failpoint::pause("before-waiting").await;
    let wait = Wait {
        object: w.object,
        generation: w.generation,
        deadline_seconds: s.driver.progress_deadline().as_secs(),
    };
    if !state.store.start_waiting(op, &wait).await? {
        return Ok(false);
    }
    tracing::info!(operation = op.id, kind = op.kind().as_str(), object = %wait.object,
        generation = ?wait.generation, "operation waits for the backend");
    Ok(true)
}

/// The `kube_tag` label of the template an upgrade moves to (loaded with the subject).
pub fn kube_tag(s: &Subject) -> Option<String> {
    s.upgrade_to
        .as_ref()
        .and_then(ClusterTemplate::kube_tag)
        .map(str::to_string)
}

/// The guarded batch every outcome of `op` starts from: its cluster, locked.
fn on_cluster(op: &Operation) -> Batch {
    Batch::default().guard(Guard::cluster(&op.cluster_uuid, Tenancy::All))
}

/// The cluster's status after `op` completed (or closed with nothing left to do): written
/// at once where the operation decides it (a create), else when `op` is the cluster's last
/// open operation; after a roll-back only if other work left the cluster in progress (the
/// failure it undid stays what the API shows).
fn cluster_status_after(batch: Batch, op: &Operation) -> Batch {
    let kind = op.kind();
    if kind == OpKind::Rollback {
        return batch.settle_cluster_in_progress(
            &op.cluster_uuid,
            crate::model::Status::UpdateComplete,
            op.id,
        );
    }
    match (
        transitions::completed(kind, false).cluster,
        transitions::completed(kind, true).cluster,
    ) {
        (Some(st), _) => batch.cluster(&op.cluster_uuid, ClusterSet::status(st)),
        (None, Some(st)) => batch.settle_cluster(&op.cluster_uuid, st, op.id),
        (None, None) => batch,
    }
}

/// `*_COMPLETE` (or the row removed, for deletes), from state `from`, in one transaction.
pub async fn finish(
    state: &Conductor,
    op: &Operation,
    s: &Subject,
    from: OpState,
) -> Result<(), sqlx::Error> {
    let ends = transitions::completed(op.kind(), true);
    let mut batch = on_cluster(op);
    match op.kind() {
        OpKind::CreateCluster => {
            let mut ch: Vec<ClusterSet> = Vec::new();
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
                        .and_then(ClusterTemplate::kube_tag)
                        .map(str::to_string)
                });
            if let Some(v) = version {
                ch.push(ClusterSet::CoeVersion(Some(v)));
            }
            if let Some(a) = facts.and_then(|f| f.api_address) {
                ch.push(ClusterSet::ApiAddress(Some(a)));
            }
            batch = cluster_status_after(batch.cluster(&s.cluster.uuid, ch), op);
            if let Some(ng_status) = ends.nodegroup {
                for ng in &s.nodegroups {
                    batch = batch.nodegroup(&ng.uuid, NodeGroupSet::status(ng_status));
                }
            }
        }
        OpKind::DeleteCluster => batch = batch.delete_cluster(&s.cluster.uuid),
        // The backend is back at the restored count; the failure stays what the API shows.
        OpKind::Rollback => batch = cluster_status_after(batch, op),
        OpKind::DeleteNodeGroup => {
            if let Some(ng) = &s.nodegroup {
                batch = batch.delete_nodegroup(&ng.uuid);
            }
            batch = cluster_status_after(batch, op);
        }
        kind => {
            if let (Some(ng), Some(ng_status)) = (&s.nodegroup, ends.nodegroup) {
                let mut ch = NodeGroupSet::status(ng_status).to_vec();
                if kind == OpKind::Upgrade {
                    ch.push(NodeGroupSet::Version(kube_tag(s)));
                }
                batch = batch.nodegroup_unless_deleting(&ng.uuid, ch);
            }
            let mut ch = Vec::new();
            if kind == OpKind::Upgrade && s.nodegroup.as_ref().is_some_and(NodeGroup::is_default) {
                if let Some(t) = op.payload.upgrade_template() {
                    ch.push(ClusterSet::ClusterTemplateId(t.to_string()));
                }
                if let Some(tag) = kube_tag(s) {
                    ch.push(ClusterSet::CoeVersion(Some(tag)));
                }
            }
            batch = cluster_status_after(batch.cluster(&s.cluster.uuid, ch), op);
        }
    }
    let batch = batch.transition(op.id, from, OpState::Done);
    match state.store.commit(batch).await? {
        Ok(_) => {
            tracing::info!(operation = op.id, kind = op.kind().as_str(), cluster = %op.cluster_uuid,
                "operation complete");
            Ok(())
        }
        Err(Refused::ClusterGone) => gone(state, op, from).await,
        Err(_) => Ok(()),
    }
}

/// Closes an operation whose cluster or nodegroup is gone (a repeated delete, or work on a
/// nodegroup a later request deleted): nothing is left for it to do. The cluster, if it is
/// still there, settles as if the operation had completed (its last open operation ends).
pub async fn gone(state: &Conductor, op: &Operation, from: OpState) -> Result<(), sqlx::Error> {
    let batch = cluster_status_after(on_cluster(op), op).transition(op.id, from, OpState::Done);
    if let Err(Refused::ClusterGone) = state.store.commit(batch).await? {
        let batch = Batch::default().transition(op.id, from, OpState::Done);
        state.store.commit(batch).await?.ok();
    }
    tracing::info!(operation = op.id, kind = op.kind().as_str(), cluster = %op.cluster_uuid,
        "operation closed: what it worked on is gone");
    Ok(())
}

/// The operation that sets the backend back to `old` after the resize `op` (to `new`)
/// failed with `reason`.
fn roll_back(op: &Operation, nodegroup: &str, new: i64, old: i64, reason: &str) -> NewOperation {
    NewOperation {
        cluster_uuid: op.cluster_uuid.clone(),
        nodegroup_uuid: Some(nodegroup.to_string()),
        old_count: Some(new),
        new_count: Some(old),
        payload: OpPayload::Rollback {
            failed: op.id,
            from_count: new,
            reason: reason.to_string(),
        },
    }
}

/// Magnum's conductor on a driver failure: `*_FAILED` with the reason on the cluster and
/// the nodegroup, and for a resize the previous count back, in one transaction. Another
/// operation's failure does not overwrite a delete in progress.
pub async fn fail(
    state: &Conductor,
    op: &Operation,
    s: Option<&Subject>,
    reason: &str,
    from: OpState,
) -> Result<(), sqlx::Error> {
    let store = &state.store;
    let kind = op.kind();
    let ends = transitions::failed(kind);
    let mut batch = on_cluster(op);
    let mut reason = reason.to_string();
    if kind == OpKind::Resize {
        if let (Some(ng), Some(new), Some(old)) = (&op.nodegroup_uuid, op.new_count, op.old_count) {
            batch = if from == OpState::Waiting && new != old {
                // The backend took the change: it is set back too, durably (issue 29).
                let undo = roll_back(op, ng, new, old, &reason);
                batch.restore_count_and_roll_back(ng, new, old, undo)
            } else {
                batch.restore_count(ng, new, old)
            };
        }
    }
    if let OpPayload::Rollback {
        reason: failure,
        from_count,
        ..
    } = &op.payload
    {
        let target = op.new_count.unwrap_or_default();
        reason = format!("{failure}; the roll-back to {target} did not complete: {reason}");
        // The API shows the count the backend is asked for, never one it is not asked for.
        let asked = match s {
            Some(s) => match &s.nodegroup {
                Some(ng) => s.driver.asked_count(&s.cluster, ng).await.ok().flatten(),
                None => None,
            },
            None => None,
        };
        if let (Some(asked), Some(ng)) = (asked, &op.nodegroup_uuid) {
            if asked != target {
                tracing::warn!(
                    operation = op.id,
                    asked,
                    target,
                    from_count,
                    "the backend still asks for another count than the restored one"
                );
                batch = batch.nodegroup_unless_deleting(ng, [NodeGroupSet::NodeCount(asked)]);
            }
        }
    }
    let reason = reason.as_str();
    // A failed create marks its nodegroups failed too (without a subject: those that still
    // exist), rather than leaving them in progress.
    let nodegroups = match (s, kind) {
        (_, k) if k != OpKind::CreateCluster => Vec::new(),
        (Some(s), _) => s.nodegroups.clone(),
        (None, _) => {
            store
                .nodegroups_of_clusters(std::slice::from_ref(&op.cluster_uuid))
                .await?
        }
    };
    if let Some(st) = ends.cluster {
        batch = if kind == OpKind::DeleteCluster {
            batch.cluster(&op.cluster_uuid, ClusterSet::failed(st, reason))
        } else {
            batch.cluster_unless_deleting(&op.cluster_uuid, ClusterSet::failed(st, reason))
        };
    }
    if let Some(ng_status) = ends.nodegroup {
        let failed = NodeGroupSet::failed(ng_status, reason);
        if let Some(ng) = &op.nodegroup_uuid {
            batch = if kind == OpKind::DeleteNodeGroup {
                batch.nodegroup(ng, failed)
            } else {
                batch.nodegroup_unless_deleting(ng, failed)
            };
        } else if kind == OpKind::CreateCluster {
            for ng in &nodegroups {
                batch = batch.nodegroup(&ng.uuid, failed.clone());
            }
        }
    }
    if kind == OpKind::CreateCluster {
        batch = batch.clear_credential_token(&op.cluster_uuid);
    }
    let batch = batch.transition_failed(op.id, from, reason);
    match store.commit(batch).await? {
        Ok(committed) => {
            tracing::warn!(operation = op.id, kind = kind.as_str(), %reason, "operation failed");
            if committed.rolled_back {
                tracing::info!(operation = op.id, "roll-back recorded");
                crate::failpoint::hit("rollback-recorded");
                state.operations.kick();
            }
            Ok(())
        }
        Err(Refused::ClusterGone) => gone(state, op, from).await,
        Err(_) => Ok(()),
    }
}
