//! The level-triggered end of waiting operations: whatever the trigger (a watched object of
//! the cluster changed, a relist found it changed or gone, the controller started, a stored
//! deadline came), the driver's controller hands one backend cluster to
//! [`ConductorReconciler`], which reads what waits on it from the store and asks the driver
//! where each operation stands now. The verdict, not the event, decides; so a missed event,
//! a second event or a restart changes nothing but the moment.
//!
//! While an operation waits, the controllers' own message is the nodegroup's (and the
//! cluster's) `status_reason`, and each new progress marker moves its stored deadline; the
//! controller is told to look again at the earliest such deadline. At the deadline with no
//! progress it fails with the last message seen.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::NaiveDateTime;

use super::dispatch::{load, subject_of, LoadError, Subject};
use super::outcome;
use super::reports::{record_facts, show_reason};
use super::Conductor;
use crate::drivers::{InFlight, ReconcileFailed, StackReconciler, Verdict};
use crate::model::NodeGroup;
use crate::store::operations::{OpKind, OpState, Operation};
use crate::telemetry::metrics;

/// Starts every driver's controllers, which hand each backend cluster that changed to the
/// conductor. Returns the tasks (abort them to stop).
pub fn start_controllers(state: &Conductor) -> Vec<tokio::task::JoinHandle<()>> {
    let reconciler: Arc<dyn StackReconciler> = Arc::new(ConductorReconciler(state.clone()));
    let mut handles = Vec::new();
    for d in state.drivers.drivers() {
        handles.extend(d.run_controllers(Arc::clone(&reconciler)));
    }
    handles
}

/// What the drivers' controllers call: the conductor's side of a reconcile.
pub struct ConductorReconciler(Conductor);

#[async_trait]
impl StackReconciler for ConductorReconciler {
    async fn reconcile(&self, stack: &str) -> Result<Option<Duration>, ReconcileFailed> {
        let next = reconcile_stack(&self.0, stack)
            .await
            .map_err(|e| ReconcileFailed(e.to_string()))?;
        Ok(next.map(|at| {
            (at - chrono::Utc::now().naive_utc())
                .to_std()
                .unwrap_or_default()
        }))
    }

    async fn waiting_stacks(&self) -> Result<Vec<String>, ReconcileFailed> {
        waiting_stacks(&self.0)
            .await
            .map_err(|e| ReconcileFailed(e.to_string()))
    }
}

/// The backend clusters of every waiting operation.
async fn waiting_stacks(state: &Conductor) -> Result<Vec<String>, sqlx::Error> {
    let ops = state.store.waiting_operations(None).await?;
    let uuids: BTreeSet<String> = ops.into_iter().map(|o| o.cluster_uuid).collect();
    let mut stacks = BTreeSet::new();
    for uuid in uuids {
        if let Some(c) = state.store.cluster_by_uuid(&uuid).await? {
            stacks.extend(c.stack_id.filter(|s| !s.is_empty()));
        }
    }
    Ok(stacks.into_iter().collect())
}

/// One backend cluster: the facts of its Magnum cluster, and each operation waiting on it,
/// from one read of the store ([`crate::store::backend_clusters`]). Returns the earliest
/// deadline of what still waits. A database error on one operation is logged and the others
/// go on; the first such error is returned (the controller backs off and looks again).
async fn reconcile_stack(
    state: &Conductor,
    stack: &str,
) -> Result<Option<NaiveDateTime>, sqlx::Error> {
    let mut next: Option<NaiveDateTime> = None;
    let mut first_error = None;
    for rows in state.store.stack_rows(stack).await? {
        record_facts(state, &rows.cluster, &rows.nodegroups).await?;
        for op in &rows.waiting {
            let subject =
                subject_of(state, op, rows.cluster.clone(), rows.nodegroups.clone()).await;
            let judged = match subject {
                Ok(subject) => judge(state, op, subject).await,
                Err(e) => Err(e),
            };
            match judged {
                Ok(Some(at)) => next = Some(next.map_or(at, |n| n.min(at))),
                Ok(None) => {}
                Err(e) => {
                    tracing::error!(operation = op.id, error = %e, "cannot reconcile an operation");
                    first_error.get_or_insert(e);
                }
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(next),
    }
}

fn in_flight<'a>(
    op: &'a Operation,
    s: &'a Subject,
    target_version: Option<&'a str>,
) -> InFlight<'a> {
    InFlight {
        // A roll-back is a resize for the backend.
        kind: match op.kind() {
            OpKind::Rollback => OpKind::Resize,
            kind => kind,
        },
        cluster: &s.cluster,
        nodegroups: &s.nodegroups,
        nodegroup: s.nodegroup.as_ref(),
        target_count: match op.kind() {
            OpKind::Resize | OpKind::Rollback => op.new_count,
            _ => s.nodegroup.as_ref().map(|n| n.node_count),
        },
        target_version,
        generation: op.wait_generation,
    }
}

/// Seconds before a delete's failed clean-up is tried again.
const CLEAN_UP_RETRY_SECS: i64 = 10;

fn deadline_passed(op: &Operation) -> bool {
    op.deadline_at
        .is_some_and(|d| d <= chrono::Utc::now().naive_utc())
}

/// Records how long the backend took, from the stored start of the wait.
fn observe_lag(op: &Operation, outcome: &str) {
    if let Some(start) = op.started_at {
        let lag = (chrono::Utc::now().naive_utc() - start)
            .to_std()
            .unwrap_or_default();
        metrics::reconcile_lag(outcome, lag);
    }
}

fn what(ng: Option<&NodeGroup>) -> String {
    match ng {
        Some(n) if n.is_master() => "the control plane".into(),
        Some(n) => format!("nodegroup {}", n.name),
        None => "the cluster".into(),
    }
}

/// Looks at once at an operation that just started waiting (its change may already be
/// visible), read back as it is stored now.
pub async fn look_now(state: &Conductor, op: &Operation) -> Result<(), sqlx::Error> {
    let waiting = state
        .store
        .waiting_operations(Some(&op.cluster_uuid))
        .await?
        .into_iter()
        .find(|o| o.id == op.id);
    match waiting {
        Some(w) => reconcile_op(state, &w).await.map(|_| ()),
        None => Ok(()),
    }
}

/// Looks at one waiting operation and writes what the backend shows. Returns its stored
/// deadline while it still waits.
pub async fn reconcile_op(
    state: &Conductor,
    op: &Operation,
) -> Result<Option<NaiveDateTime>, sqlx::Error> {
    let subject = load(state, op).await?;
    judge(state, op, subject).await
}

/// The verdict on one waiting operation, written.
async fn judge(
    state: &Conductor,
    op: &Operation,
    subject: Result<Subject, LoadError>,
) -> Result<Option<NaiveDateTime>, sqlx::Error> {
    const W: OpState = OpState::Waiting;
    let subject = match subject {
        Ok(s) => s,
        // What it worked on is gone (the row a delete waited to remove, or a nodegroup a
        // later request deleted).
        Err(e) if e.is_gone() => {
            metrics::reconcile_write("finish");
            return outcome::gone(state, op, W).await.map(|()| None);
        }
        Err(reason) => {
            metrics::reconcile_write("fail");
            return outcome::fail(state, op, None, &reason.to_string(), W)
                .await
                .map(|()| None);
        }
    };
    let target_version = match op.kind() {
        OpKind::Upgrade => outcome::kube_tag(&subject),
        _ => None,
    };
    let verdict = subject
        .driver
        .observe(&in_flight(op, &subject, target_version.as_deref()));
    match verdict {
        // Not known yet (the view has not listed): its listing triggers the next look.
        Verdict::Unknown => Ok(None),
        Verdict::Complete => {
            let (driver, cluster) = (&subject.driver, &subject.cluster);
            let cleaned = match (op.kind(), &subject.nodegroup) {
                (OpKind::DeleteCluster, _) => {
                    Some(("cluster", driver.clean_up_deleted(cluster).await))
                }
                (OpKind::DeleteNodeGroup, Some(ng)) => Some((
                    "nodegroup",
                    driver.clean_up_deleted_nodegroup(cluster, ng).await,
                )),
                _ => None,
            };
            if let Some((what, Err(e))) = cleaned {
                // The backend's cluster (nodegroup) is gone, what it left is not yet:
                // the delete waits, and it is tried again until the operation's
                // deadline.
                let why = format!("cleaning up after the deleted {what}: {e}");
                if deadline_passed(op) {
                    metrics::reconcile_write("fail");
                    return outcome::fail(state, op, Some(&subject), &why, W)
                        .await
                        .map(|()| None);
                }
                show_reason(state, &subject, Some(why)).await?;
                return Ok(Some(
                    chrono::Utc::now().naive_utc() + chrono::Duration::seconds(CLEAN_UP_RETRY_SECS),
                ));
            }
            observe_lag(op, "complete");
            metrics::reconcile_write("finish");
            outcome::finish(state, op, &subject, W).await.map(|()| None)
        }
        Verdict::Failed { reason } => {
            observe_lag(op, "failed");
            metrics::reconcile_write("fail");
            outcome::fail(state, op, Some(&subject), &reason, W)
                .await
                .map(|()| None)
        }
        Verdict::InProgress { reason, marker } => {
            let deadline = subject.driver.progress_deadline().as_secs();
            let mut next = op.deadline_at;
            if op.progress.as_deref() != Some(marker.as_str()) {
                state.store.note_progress(op.id, &marker, deadline).await?;
                metrics::reconcile_write("progress");
                next = Some(
                    chrono::Utc::now().naive_utc()
                        + chrono::Duration::seconds(
                            i64::try_from(deadline).unwrap_or(i64::MAX / 1000),
                        ),
                );
            } else if deadline_passed(op) {
                let mut why = format!(
                    "Cluster API made no progress on {} within {deadline} seconds",
                    what(subject.nodegroup.as_ref())
                );
                if let Some(r) = &reason {
                    why.push_str(": ");
                    why.push_str(r);
                }
                observe_lag(op, "failed");
                metrics::reconcile_write("fail");
                return outcome::fail(state, op, Some(&subject), &why, W)
                    .await
                    .map(|()| None);
            }
            // A roll-back leaves the failure's reason in place while it runs.
            if op.kind() != OpKind::Rollback {
                show_reason(state, &subject, reason).await?;
            }
            Ok(next)
        }
    }
}
