//! The level-triggered end of waiting operations: whatever the trigger (a watched object
//! changed, a (re)list finished, this replica started or became leader, a stored deadline
//! passed), the reconciler reads the waiting operations from the store and asks the driver
//! where each stands now. The verdict, not the event, decides; so a missed event, a second
//! event or a restart changes nothing but the moment.
//!
//! While an operation waits, the controllers' own message is the nodegroup's (and the
//! cluster's) `status_reason`, and each new progress marker moves its stored deadline. At
//! the deadline with no progress it fails with the last message seen.

use std::collections::BTreeSet;
use std::time::Duration;

use tokio::sync::mpsc;

use super::dispatch::{load, Subject};
use super::outcome;
use super::reports::{record_facts, show_reason};
use super::Conductor;
use crate::drivers::{Change, InFlight, Verdict};
use crate::model::{NodeGroup, Tenancy};
use crate::store::operations::{OpKind, OpState, Operation};
use crate::store::ClusterBy;
use crate::telemetry::metrics;

/// How often stored deadlines are checked.
const DEADLINE_TICK: Duration = Duration::from_secs(1);

/// Starts every driver's watches and the reconciler that turns what they see into the
/// store's state. Returns the tasks (abort them to stop).
pub fn start_watchers(state: &Conductor) -> Vec<tokio::task::JoinHandle<()>> {
    let (tx, rx) = mpsc::unbounded_channel::<Change>();
    let mut handles = Vec::new();
    for d in state.drivers.drivers() {
        handles.extend(d.watch(tx.clone()));
    }
    drop(tx);
    if handles.is_empty() {
        return handles;
    }
    let state = state.clone();
    handles.push(tokio::spawn(run(state, rx)));
    handles
}

async fn run(state: Conductor, mut rx: mpsc::UnboundedReceiver<Change>) {
    // On start (and so on each leader change): everything waiting. Until the watches have
    // listed, the driver answers Unknown and nothing is concluded; their first lists end
    // with Change::All.
    metrics::reconcile_pass("start");
    if let Err(e) = reconcile_all(&state).await {
        tracing::error!(error = %e, "reconcile pass failed");
    }
    let mut tick = tokio::time::interval(DEADLINE_TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            change = rx.recv() => {
                let Some(first) = change else { return };
                // Everything queued meanwhile, de-duplicated: one look per cluster.
                let mut all = false;
                let mut stacks = BTreeSet::new();
                let mut next = Some(first);
                while let Some(c) = next {
                    match c {
                        Change::All => all = true,
                        Change::Stack(s) => { stacks.insert(s); }
                    }
                    next = rx.try_recv().ok();
                }
                let result = if all {
                    metrics::reconcile_pass("relist");
                    reconcile_all(&state).await
                } else {
                    metrics::reconcile_pass("change");
                    reconcile_stacks(&state, &stacks).await
                };
                if let Err(e) = result {
                    tracing::error!(error = %e, "reconcile pass failed");
                }
            }
            _ = tick.tick() => {
                metrics::reconcile_pass("deadline");
                if let Err(e) = reconcile_expired(&state).await {
                    tracing::error!(error = %e, "deadline pass failed");
                }
            }
        }
    }
}

/// Every waiting operation, and the facts of their clusters.
async fn reconcile_all(state: &Conductor) -> Result<(), sqlx::Error> {
    let ops = state.store.waiting_operations(None).await?;
    let mut clusters = BTreeSet::new();
    for op in &ops {
        clusters.insert(op.cluster_uuid.clone());
        reconcile_logged(state, op).await;
    }
    for uuid in clusters {
        if let Some(c) = state.store.cluster_by_uuid(&uuid).await? {
            record_facts(state, &c).await?;
        }
    }
    Ok(())
}

async fn reconcile_stacks(state: &Conductor, stacks: &BTreeSet<String>) -> Result<(), sqlx::Error> {
    for stack in stacks {
        let clusters = state
            .store
            .find_clusters(&Tenancy::All, ClusterBy::StackId(stack))
            .await?;
        for cluster in clusters {
            record_facts(state, &cluster).await?;
            for op in state.store.waiting_operations(Some(&cluster.uuid)).await? {
                reconcile_logged(state, &op).await;
            }
        }
    }
    Ok(())
}

async fn reconcile_expired(state: &Conductor) -> Result<(), sqlx::Error> {
    for op in state.store.expired_operations().await? {
        reconcile_logged(state, &op).await;
    }
    Ok(())
}

/// One operation; a database error is logged and the pass goes on with the next (the
/// operation stays waiting and is looked at again on the next trigger).
async fn reconcile_logged(state: &Conductor, op: &Operation) {
    if let Err(e) = reconcile_op(state, op).await {
        tracing::error!(operation = op.id, error = %e, "cannot reconcile an operation");
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
        Some(w) => reconcile_op(state, &w).await,
        None => Ok(()),
    }
}

/// Looks at one waiting operation and writes what the backend shows.
pub async fn reconcile_op(state: &Conductor, op: &Operation) -> Result<(), sqlx::Error> {
    const W: OpState = OpState::Waiting;
    let subject = match load(state, op).await? {
        Ok(s) => s,
        // What it worked on is gone (the row a delete waited to remove, or a nodegroup a
        // later request deleted).
        Err(e) if e.is_gone() => {
            metrics::reconcile_write("finish");
            return outcome::gone(state, op, W).await;
        }
        Err(reason) => {
            metrics::reconcile_write("fail");
            return outcome::fail(state, op, None, &reason.to_string(), W).await;
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
        Verdict::Unknown => Ok(()),
        Verdict::Complete => {
            observe_lag(op, "complete");
            metrics::reconcile_write("finish");
            outcome::finish(state, op, &subject, W).await
        }
        Verdict::Failed { reason } => {
            observe_lag(op, "failed");
            metrics::reconcile_write("fail");
            outcome::fail(state, op, Some(&subject), &reason, W).await
        }
        Verdict::InProgress { reason, marker } => {
            let deadline = subject.driver.progress_deadline().as_secs();
            if op.progress.as_deref() != Some(marker.as_str()) {
                state.store.note_progress(op.id, &marker, deadline).await?;
                metrics::reconcile_write("progress");
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
                return outcome::fail(state, op, Some(&subject), &why, W).await;
            }
            // A roll-back leaves the failure's reason in place while it runs.
            if op.kind() == OpKind::Rollback {
                return Ok(());
            }
            show_reason(state, &subject, reason).await
        }
    }
}
