//! The worker: claims pending operations and hands each to its driver.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::dispatch::{call_driver, load};
use super::outcome;
use super::Conductor;
use crate::drivers::DriverError;
use crate::store::operations::{OpKind, OpState, Operation};

/// How often a transient driver failure is retried before the operation fails.
const MAX_ATTEMPTS: i64 = 5;

/// Runs the worker until `shutdown` turns true. Pending work recorded by another replica or
/// a previous process is found by the periodic pass as well.
pub async fn run_worker(state: Conductor, mut shutdown: watch::Receiver<bool>) {
    match state.store.requeue_running().await {
        Ok(n) if n > 0 => tracing::info!(requeued = n, "operations of a previous process requeued"),
        Ok(_) => {}
        Err(e) => tracing::error!(error = %e, "cannot requeue running operations"),
    }
    let poll = Duration::from_secs(state.config.operations.poll_interval.max(1));
    let coalesce = Duration::from_millis(state.config.operations.coalesce_ms);
    let notify = Arc::clone(&state.operations.notify);
    loop {
        if let Err(e) = run_pending(&state).await {
            tracing::error!(error = %e, "operations pass failed");
        }
        let kicked = tokio::select! {
            _ = notify.notified() => true,
            _ = tokio::time::sleep(poll) => {
                prune_history(&state).await;
                false
            }
            _ = shutdown.changed() => false,
        };
        if kicked && !coalesce.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(coalesce) => {}
                _ = shutdown.changed() => {}
            }
        }
        if *shutdown.borrow() {
            break;
        }
    }
}

/// Keeps `[operations] keep_finished` finished operations, on the periodic pass.
async fn prune_history(state: &Conductor) {
    match state
        .store
        .prune_finished(state.config.operations.keep_finished)
        .await
    {
        Ok(0) => {}
        Ok(n) => tracing::debug!(deleted = n, "finished operations pruned"),
        Err(e) => tracing::warn!(error = %e, "cannot prune finished operations"),
    }
}

/// How many pending operations one pass reads.
const BATCH: i64 = 64;

/// Processes pending operations until none is left; returns how many were handled.
pub async fn run_pending(state: &Conductor) -> Result<usize, sqlx::Error> {
    let mut handled = 0;
    loop {
        let batch = state.store.pending_operations(BATCH).await?;
        let full = batch.len() as i64 == BATCH;
        // Of several resizes of one nodegroup in the batch only the newest runs (ids follow
        // the order the counts were written; the newest carries the final count). One that
        // is recorded after the batch was read runs after the older one, with the same end
        // state.
        let mut newest_resize: std::collections::HashMap<String, i64> =
            std::collections::HashMap::new();
        for op in batch.iter().filter(|o| o.kind() == OpKind::Resize) {
            if let Some(ng) = &op.nodegroup_uuid {
                let newest = newest_resize.entry(ng.clone()).or_insert(op.id);
                *newest = (*newest).max(op.id);
            }
        }
        let (superseded, to_run): (Vec<Operation>, Vec<Operation>) =
            batch.into_iter().partition(|op| {
                op.kind() == OpKind::Resize
                    && op
                        .nodegroup_uuid
                        .as_deref()
                        .and_then(|ng| newest_resize.get(ng))
                        .is_some_and(|newest| *newest > op.id)
            });
        // One transaction claims the whole batch; another worker may have taken some first.
        let superseded: Vec<i64> = superseded.iter().map(|op| op.id).collect();
        let run: Vec<i64> = to_run.iter().map(|op| op.id).collect();
        let claim = state.store.claim_operations(&superseded, &run).await?;
        let progressed = claim.superseded > 0 || !claim.running.is_empty();
        handled += claim.superseded as usize + claim.running.len();
        // A database error on one operation does not strand the rest of the claimed batch:
        // that one goes back to pending (if the database lets it), the others run, and the
        // first error ends the pass once the batch is through.
        let mut first_error = None;
        for op in to_run {
            if !claim.running.contains(&op.id) {
                continue;
            }
            let id = op.id;
            if let Err(e) = process(state, op).await {
                tracing::error!(operation = id, error = %e, "operation interrupted by a database error; requeued");
                let reason = format!("database error: {e}");
                if let Err(e2) = state
                    .store
                    .transition_operation(id, OpState::Running, OpState::Pending, Some(&reason))
                    .await
                {
                    tracing::error!(operation = id, error = %e2, "cannot requeue the operation");
                }
                first_error.get_or_insert(e);
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        // A short batch was all there was; what was recorded since then kicked the worker
        // (or the periodic pass finds it).
        if !progressed || !full {
            return Ok(handled);
        }
    }
}

pub(super) async fn process(state: &Conductor, op: Operation) -> Result<(), sqlx::Error> {
    let subject = match load(state, &op).await? {
        Ok(s) => s,
        // Already deleted (a repeated delete), or deleted by a later request.
        Err(e) if e.is_gone() => return outcome::gone(state, &op, OpState::Running).await,
        Err(e) => return outcome::fail(state, &op, None, &e.to_string(), OpState::Running).await,
    };
    tracing::info!(operation = op.id, kind = op.kind().as_str(), cluster = %op.cluster_uuid, "handing operation to driver");
    let outcome = call_driver(&subject, &op).await;
    match outcome {
        Ok(done) => outcome::after_driver(state, &op, &subject, done).await,
        Err(e @ DriverError::Transient(_)) if op.attempts < MAX_ATTEMPTS => {
            let reason = e.reason().as_str();
            match e.kube_source() {
                Some(source) => {
                    tracing::warn!(operation = op.id, %reason, %source, "transient driver failure; will retry")
                }
                None => {
                    tracing::warn!(operation = op.id, %reason, "transient driver failure; will retry")
                }
            }
            state
                .store
                .transition_operation(op.id, OpState::Running, OpState::Pending, Some(reason))
                .await?;
            Ok(())
        }
        Err(e) => outcome::fail(state, &op, Some(&subject), &e.to_string(), OpState::Running).await,
    }
}
