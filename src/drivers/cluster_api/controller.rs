//! The driver's kube-runtime `Controller` on one management cluster: its own objects are
//! the Cluster API `Cluster`s of the namespace; KubeadmControlPlanes, MachineDeployments and
//! Machines are watched children, each mapped to its Cluster by the
//! `cluster.x-k8s.io/cluster-name` label. Every reconcile hands one workload cluster to the
//! conductor's [`StackReconciler`], which writes what the driver's view shows and says when
//! to look again: [`Action::requeue`] at the earliest stored deadline of what still waits
//! there, else on the next change. A store error backs off (1 s doubling to 30 s) in
//! `error_policy`.
//!
//! kube-runtime reconciles only objects its store holds. A Cluster that is gone (a delete
//! that completed, or one deleted behind our back) comes out of the controller as
//! `ObjectNotFound`; that cluster is reconciled there, and looked at again at its deadline
//! through [`Running::look_at`], the same trigger the conductor uses when an operation
//! starts waiting and when the controller starts (each stack something waits on, read from
//! the store once all four kinds have listed).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt as _;
use kube::api::ApiResource;
use kube::runtime::controller::{Action, Config, Controller, Error as ControllerError};
use kube::runtime::reflector::ObjectRef;
use kube::ResourceExt as _;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::cache::{self, StackCache};
use super::slim::SlimObject;
use super::topology::Resources;
use crate::drivers::{ReconcileFailed, StackReconciler};
use crate::telemetry::metrics;

/// How many workload clusters are reconciled at once (each is a few store statements).
const CONCURRENCY: u16 = 8;
/// The first delay after a failed reconcile of one cluster; it doubles up to
/// [`RETRY_MAX`] while that cluster keeps failing.
const RETRY_MIN: Duration = Duration::from_secs(1);
const RETRY_MAX: Duration = Duration::from_secs(30);
/// Added to a requeue at a stored deadline, so that the look comes after it.
const PAST_DEADLINE: Duration = Duration::from_millis(100);

/// A management cluster's controller as the driver holds it: its view, and how to ask it
/// to look at one workload cluster.
#[derive(Clone)]
pub struct Running {
    pub name: String,
    pub cache: StackCache,
    look: mpsc::UnboundedSender<String>,
}

impl Running {
    /// Reconciles the workload cluster `stack` soon (present or gone).
    pub fn look_at(&self, stack: &str) {
        let _ = self.look.send(stack.to_string());
    }
}

struct Context {
    reconciler: Arc<dyn StackReconciler>,
    management: String,
    look: mpsc::UnboundedSender<String>,
    /// Consecutive failed reconciles, by workload cluster.
    failures: Mutex<HashMap<String, u32>>,
}

impl Context {
    fn succeeded(&self, stack: &str) {
        if let Ok(mut f) = self.failures.lock() {
            f.remove(stack);
        }
    }

    /// The delay before the next try after one more failure of `stack`.
    fn failed(&self, stack: &str) -> Duration {
        let n = self
            .failures
            .lock()
            .map(|mut f| {
                let n = f.entry(stack.to_string()).or_default();
                *n = n.saturating_add(1);
                *n
            })
            .unwrap_or(1);
        backoff(n)
    }

    /// Looks at `stack` again in `after` (a cluster the controller's store does not hold,
    /// so no `Action` schedules it).
    fn look_later(&self, stack: &str, after: Duration) {
        let look = self.look.clone();
        let stack = stack.to_string();
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            let _ = look.send(stack);
        });
    }

    /// Reconciles a workload cluster whose Cluster object is gone.
    async fn reconcile_gone(&self, stack: &str) {
        metrics::reconcile_pass("gone");
        match self.reconciler.reconcile(stack).await {
            Ok(next) => {
                self.succeeded(stack);
                if let Some(d) = next {
                    self.look_later(stack, d + PAST_DEADLINE);
                }
            }
            Err(e) => {
                let d = self.failed(stack);
                tracing::error!(management_cluster = %self.management, %stack, error = %e,
                    retry_in_ms = d.as_millis() as u64, "cannot reconcile a cluster");
                self.look_later(stack, d);
            }
        }
    }
}

/// 1 s after the first failure, doubling, at most 30 s.
fn backoff(failures: u32) -> Duration {
    let exp = failures.saturating_sub(1).min(5);
    RETRY_MIN.saturating_mul(1 << exp).min(RETRY_MAX)
}

async fn reconcile(cluster: Arc<SlimObject>, ctx: Arc<Context>) -> Result<Action, ReconcileFailed> {
    let stack = cluster.name_any();
    metrics::reconcile_pass("change");
    let next = ctx.reconciler.reconcile(&stack).await?;
    ctx.succeeded(&stack);
    Ok(next.map_or_else(Action::await_change, |d| Action::requeue(d + PAST_DEADLINE)))
}

fn error_policy(cluster: Arc<SlimObject>, e: &ReconcileFailed, ctx: Arc<Context>) -> Action {
    let stack = cluster.name_any();
    let d = ctx.failed(&stack);
    tracing::error!(management_cluster = %ctx.management, %stack, error = %e,
        retry_in_ms = d.as_millis() as u64, "cannot reconcile a cluster");
    Action::requeue(d)
}

/// The children's mapping to their Cluster: the `cluster.x-k8s.io/cluster-name` label.
fn owner(
    ar: ApiResource,
    namespace: String,
) -> impl Fn(SlimObject) -> Option<ObjectRef<SlimObject>> {
    move |o| {
        o.labels
            .cluster_name
            .as_deref()
            .map(|stack| ObjectRef::new_with(stack, ar.clone()).within(&namespace))
    }
}

/// Starts the controller of one management cluster.
pub fn start(
    client: &kube::Client,
    namespace: &str,
    resources: &Resources,
    management: &str,
    reconciler: Arc<dyn StackReconciler>,
) -> (Running, Vec<JoinHandle<()>>) {
    let w = cache::watch_all(client, namespace, resources, management);
    let (look, looks) = mpsc::unbounded_channel::<String>();
    let ctx = Arc::new(Context {
        reconciler: Arc::clone(&reconciler),
        management: management.to_string(),
        look: look.clone(),
        failures: Mutex::default(),
    });
    let cluster_ar = resources.cluster.clone();
    let ns = namespace.to_string();
    let looks = futures::stream::unfold(looks, |mut rx| async move {
        rx.recv().await.map(|stack| (stack, rx))
    })
    .map({
        let (ar, ns) = (cluster_ar.clone(), ns.clone());
        move |stack| ObjectRef::new_with(&stack, ar.clone()).within(&ns)
    });
    let controller =
        Controller::for_stream_with(w.clusters, w.cache.cluster_store(), cluster_ar.clone())
            .watches_stream_with(
                w.control_planes,
                owner(cluster_ar.clone(), ns.clone()),
                resources.control_plane.clone(),
            )
            .watches_stream_with(
                w.deployments,
                owner(cluster_ar.clone(), ns.clone()),
                resources.machine_deployment.clone(),
            )
            .watches_stream_with(
                w.machines,
                owner(cluster_ar.clone(), ns.clone()),
                resources.machine.clone(),
            )
            .reconcile_on(looks)
            .with_config(Config::default().concurrency(CONCURRENCY));
    let run_ctx = Arc::clone(&ctx);
    let run = tokio::spawn(async move {
        controller
            .run(reconcile, error_policy, Arc::clone(&run_ctx))
            .for_each(|result| {
                let ctx = Arc::clone(&run_ctx);
                async move {
                    match result {
                        Ok(_) => {}
                        Err(ControllerError::ObjectNotFound(gone)) => {
                            ctx.reconcile_gone(&gone.name).await
                        }
                        // Logged by error_policy, which also schedules the retry.
                        Err(ControllerError::ReconcilerFailed(..)) => {}
                        Err(e) => tracing::warn!(management_cluster = %ctx.management,
                            error = %e, "controller error"),
                    }
                }
            })
            .await;
    });
    // On start (and so on each leader change), once every kind has listed: each cluster
    // something waits on, from the store.
    let mut listed = w.kinds_listed;
    let start_ctx = Arc::clone(&ctx);
    let starting = tokio::spawn(async move {
        if listed.wait_for(|n| *n == 4).await.is_err() {
            return;
        }
        let mut failures = 0;
        loop {
            match start_ctx.reconciler.waiting_stacks().await {
                Ok(stacks) => {
                    metrics::reconcile_pass("start");
                    for s in stacks {
                        let _ = start_ctx.look.send(s);
                    }
                    return;
                }
                Err(e) => {
                    failures += 1;
                    let d = backoff(failures);
                    tracing::error!(management_cluster = %start_ctx.management, error = %e,
                        retry_in_ms = d.as_millis() as u64, "cannot read what waits");
                    tokio::time::sleep(d).await;
                }
            }
        }
    });
    let running = Running {
        name: management.to_string(),
        cache: w.cache,
        look,
    };
    (running, vec![run, starting])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_cluster_is_retried_after_one_second_doubling_up_to_thirty() {
        let delays: Vec<u64> = (1..=8).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(delays, vec![1, 2, 4, 8, 16, 30, 30, 30]);
    }
}
