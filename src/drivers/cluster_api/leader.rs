//! Lease-based leader election (`coordination.k8s.io/v1` Lease), so that of several
//! magnum-rs replicas sharing one database exactly one drives the management clusters at a
//! time: it runs the operations worker and the watchers. A replica that stops renewing loses
//! the lease after its duration; the next leader requeues the operations the dead one had
//! claimed. A replica that stops gracefully gives the lease up first (holder emptied, as
//! client-go's `ReleaseOnCancel` does), so the next one leads at its next round instead of
//! after the lease's duration.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, PostParams};
use serde_json::json;
use tokio::sync::watch;

/// How a replica competes for the lease.
#[derive(Clone, Debug)]
pub struct LeaseConfig {
    pub name: String,
    pub namespace: String,
    /// This replica's identity (hostname + a random suffix).
    pub holder: String,
    pub duration: Duration,
    pub renew_every: Duration,
}

fn now() -> MicroTime {
    MicroTime(k8s_openapi::jiff::Timestamp::now())
}

/// One round: take or renew the lease if it is free, expired or ours. `Ok(true)` when we hold
/// it afterwards.
pub async fn try_acquire(api: &Api<Lease>, cfg: &LeaseConfig) -> Result<bool, kube::Error> {
    let duration = i32::try_from(cfg.duration.as_secs()).unwrap_or(15);
    match api.get_opt(&cfg.name).await? {
        None => {
            let lease: Lease = serde_json::from_value(json!({
                "metadata": {"name": cfg.name, "namespace": cfg.namespace},
                "spec": {"holderIdentity": cfg.holder, "leaseDurationSeconds": duration, "leaseTransitions": 0},
            }))
            .map_err(kube::Error::SerdeError)?;
            let mut lease = lease;
            if let Some(spec) = lease.spec.as_mut() {
                spec.acquire_time = Some(now());
                spec.renew_time = Some(now());
            }
            match api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(s)) if s.is_already_exists() => Ok(false),
                Err(e) => Err(e),
            }
        }
        Some(mut lease) => {
            let spec = lease.spec.get_or_insert_with(Default::default);
            let ours = spec.holder_identity.as_deref() == Some(cfg.holder.as_str());
            // Given up by its last holder (see `release`): free now.
            let released = spec.holder_identity.as_deref().is_none_or(str::is_empty);
            let expired = released
                || match (&spec.renew_time, spec.lease_duration_seconds) {
                    (Some(MicroTime(t)), Some(d)) => {
                        let age = k8s_openapi::jiff::Timestamp::now().duration_since(*t);
                        age.as_secs() > i64::from(d)
                    }
                    _ => true,
                };
            if !ours && !expired {
                return Ok(false);
            }
            if !ours {
                spec.holder_identity = Some(cfg.holder.clone());
                spec.acquire_time = Some(now());
                spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
            }
            spec.lease_duration_seconds = Some(duration);
            spec.renew_time = Some(now());
            // The resourceVersion read above makes this replace conditional: of two replicas
            // taking an expired lease at once, one gets a conflict.
            match api.replace(&cfg.name, &PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(s)) if s.is_conflict() => Ok(false),
                Err(e) => Err(e),
            }
        }
    }
}

/// Gives the lease up if this replica holds it: the holder emptied and a duration of one
/// second (what client-go's elector writes on release), conditional on the version read, so
/// a lease another replica took meanwhile is left alone.
pub async fn release(api: &Api<Lease>, cfg: &LeaseConfig) -> Result<bool, kube::Error> {
    let Some(mut lease) = api.get_opt(&cfg.name).await? else {
        return Ok(false);
    };
    let spec = lease.spec.get_or_insert_with(Default::default);
    if spec.holder_identity.as_deref() != Some(cfg.holder.as_str()) {
        return Ok(false);
    }
    spec.holder_identity = None;
    spec.lease_duration_seconds = Some(1);
    spec.renew_time = Some(now());
    match api.replace(&cfg.name, &PostParams::default(), &lease).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(s)) if s.is_conflict() => Ok(false),
        Err(e) => Err(e),
    }
}

/// The lease task of a replica: whether it leads now, and how to make it stop.
pub struct Election {
    pub leading: watch::Receiver<bool>,
    stop: watch::Sender<bool>,
    task: tokio::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Election {
    /// Stops competing and gives the lease up if held; returns when that is done (or the
    /// API server did not answer).
    pub async fn step_down(&self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.lock().await.take() {
            let _ = task.await;
        }
    }
}

/// Competes for the lease until stopped ([`Election::step_down`]).
pub fn run(client: kube::Client, cfg: LeaseConfig) -> Election {
    let (tx, rx) = watch::channel(false);
    let (stop, mut stopped) = watch::channel(false);
    let handle = tokio::spawn(async move {
        let api: Api<Lease> = Api::namespaced(client, &cfg.namespace);
        loop {
            let leading = match try_acquire(&api, &cfg).await {
                Ok(l) => l,
                Err(e) => {
                    super::client::count_kube_error("lease", &e);
                    tracing::warn!(error = %e, lease = %cfg.name, "cannot reach the lease; not leading");
                    false
                }
            };
            if *tx.borrow() != leading {
                tracing::info!(lease = %cfg.name, holder = %cfg.holder, leading, "leadership changed");
                let _ = tx.send(leading);
            }
            tokio::select! {
                _ = tokio::time::sleep(cfg.renew_every) => {}
                _ = stopped.changed() => break,
            }
        }
        let _ = tx.send(false);
        match release(&api, &cfg).await {
            Ok(true) => tracing::info!(lease = %cfg.name, holder = %cfg.holder, "lease released"),
            Ok(false) => {}
            Err(e) => {
                super::client::count_kube_error("lease", &e);
                tracing::warn!(error = %e, lease = %cfg.name, "cannot release the lease; it expires");
            }
        }
    });
    Election {
        leading: rx,
        stop,
        task: tokio::sync::Mutex::new(Some(handle)),
    }
}
