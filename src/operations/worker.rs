//! The worker: claims pending operations and hands each to its driver.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::certificates::Made;
use super::credentials::Credential;
use super::dispatch::{call_driver, load};
use super::outcome;
use super::Conductor;
use crate::drivers::{CreateGiven, DriverError};
use crate::model::Cluster;
use crate::store::operations::{OpKind, OpState, Operation};

/// The first retry's delay after a passing driver failure; each next one doubles, up to
/// [`RETRY_MAX`], with jitter (see [`retry_delay`]).
const RETRY_BASE: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(30);

/// The delay before the retry that follows `attempts` claims: exponential from
/// [`RETRY_BASE`], capped at [`RETRY_MAX`], and a random half of it taken off ("equal
/// jitter"), so that replicas and operations failing together do not retry in step.
pub fn retry_delay(attempts: i64) -> Duration {
    let exp = u32::try_from(attempts.saturating_sub(1).clamp(0, 16)).unwrap_or(16);
    let full = RETRY_BASE.saturating_mul(1u32 << exp).min(RETRY_MAX);
    let fraction = (uuid::Uuid::new_v4().as_u128() % 1000) as u32;
    full / 2 + (full / 2) * fraction / 1000
}

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
        for op in batch.iter().filter(|o| o.kind().sets_count()) {
            if let Some(ng) = &op.nodegroup_uuid {
                let newest = newest_resize.entry(ng.clone()).or_insert(op.id);
                *newest = (*newest).max(op.id);
            }
        }
        let (superseded, to_run): (Vec<Operation>, Vec<Operation>) =
            batch.into_iter().partition(|op| {
                op.kind().sets_count()
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
        let creates: Vec<&Operation> = to_run
            .iter()
            .filter(|op| op.kind() == OpKind::CreateCluster && claim.running.contains(&op.id))
            .collect();
        super::certificates::prepare(state, &creates).await;
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
    // Magnum's conductor makes the cluster's certificates before the driver creates it;
    // the driver gets them opened (the ClusterAPI driver hands them to Cluster API).
    let mut cas = None;
    let mut credential = None;
    if op.kind() == OpKind::CreateCluster {
        let failure = match super::certificates::ensure_for_create(state, &subject.cluster).await? {
            Made::Ready => {
                match super::certificates::opened_for_driver(state, &op.cluster_uuid).await? {
                    Ok(opened) => {
                        cas = opened;
                        None
                    }
                    Err(reason) => Some(reason),
                }
            }
            Made::Deleting => None,
            Made::ClusterGone => return outcome::gone(state, &op, OpState::Running).await,
            Made::Failed(reason) => Some(reason),
        };
        if let Some(reason) = failure {
            return outcome::fail(state, &op, Some(&subject), &reason, OpState::Running).await;
        }
        // Then the cluster's application credential, for a driver that reaches the cloud
        // with one (made with the creating user's token, which the API kept).
        match super::credentials::ensure_for_create(state, &subject.cluster, &*subject.driver)
            .await?
        {
            Credential::NotNeeded => {}
            Credential::Ready(made) => credential = Some(made),
            Credential::ClusterGone => return outcome::gone(state, &op, OpState::Running).await,
            Credential::Failed(reason) => {
                return outcome::fail(state, &op, Some(&subject), &reason, OpState::Running).await
            }
            Credential::Unavailable(reason) => {
                return retry_later(state, &op, &subject, &DriverError::transient(reason)).await
            }
        }
    }
    let given = CreateGiven {
        cas: cas.as_ref(),
        credential: credential.as_ref(),
    };
    let outcome = call_driver(&subject, &op, &given).await;
    match outcome {
        Ok(done) => {
            if op.kind() == OpKind::Rollback {
                crate::failpoint::hit("rollback-sent");
            }
            // The change may already be visible: the driver's controller looks at once (and
            // schedules the deadline); without one, the worker looks itself. A create's
            // backend cluster is named only now, so the controller is asked by that name.
            if let outcome::Next::Waiting { stack_id } =
                outcome::after_driver(state, &op, &subject, done).await?
            {
                let now = Cluster {
                    stack_id,
                    ..subject.cluster.clone()
                };
                if !subject.driver.look_again(&now) {
                    super::reconcile::look_now(state, &op).await?;
                }
            }
            Ok(())
        }
        Err(e @ DriverError::Transient(_)) => retry_later(state, &op, &subject, &e).await,
        Err(e) => outcome::fail(state, &op, Some(&subject), &e.to_string(), OpState::Running).await,
    }
}

/// A passing driver failure (the management cluster unreachable, a conflict): the operation
/// goes back to pending with its next try stored (`not_before`, backoff with jitter), so a
/// restart or another leader keeps the schedule. The retries end at the driver's progress
/// deadline, counted from the first failure of the run; then the operation fails with the
/// last reason.
async fn retry_later(
    state: &Conductor,
    op: &Operation,
    subject: &super::dispatch::Subject,
    e: &DriverError,
) -> Result<(), sqlx::Error> {
    let reason = e.reason().as_str();
    let now = chrono::Utc::now().naive_utc();
    let since = op.retry_since.unwrap_or(now);
    let deadline = subject.driver.progress_deadline();
    let failing_for = (now - since).to_std().unwrap_or_default();
    if failing_for >= deadline {
        let why = format!("{reason} (retried for {} seconds)", failing_for.as_secs());
        return outcome::fail(state, op, Some(subject), &why, OpState::Running).await;
    }
    let delay = retry_delay(op.attempts).min(deadline - failing_for);
    match e.kube_source() {
        Some(source) => tracing::warn!(operation = op.id, %reason, %source,
            retry_in_ms = delay.as_millis() as u64, "transient driver failure; will retry"),
        None => tracing::warn!(operation = op.id, %reason,
            retry_in_ms = delay.as_millis() as u64, "transient driver failure; will retry"),
    }
    state.store.retry_later(op.id, reason, delay, since).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Doubling from 1 s, capped at 30 s, with at most half taken off.
    #[test]
    fn retry_delays_double_up_to_the_cap_with_jitter() {
        for (attempts, full) in [(1, 1), (2, 2), (3, 4), (5, 16), (6, 30), (40, 30)] {
            let full = Duration::from_secs(full);
            for _ in 0..50 {
                let d = retry_delay(attempts);
                assert!(d >= full / 2 && d <= full, "attempt {attempts}: {d:?}");
            }
        }
    }
}
