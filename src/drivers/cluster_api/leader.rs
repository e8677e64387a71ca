//! Lease-based leader election (`coordination.k8s.io/v1` Lease), so that of several
//! magnum-rs replicas sharing one database exactly one drives the management clusters at a
//! time: it runs the operations worker and the watchers. A replica that stops renewing loses
//! the lease after its duration; the next leader requeues the operations the dead one had
//! claimed.

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
            let expired = match (&spec.renew_time, spec.lease_duration_seconds) {
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

/// Competes for the lease forever; the receiver says whether this replica leads now.
pub fn run(
    client: kube::Client,
    cfg: LeaseConfig,
) -> (watch::Receiver<bool>, tokio::task::JoinHandle<()>) {
    let (tx, rx) = watch::channel(false);
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
            if tx.is_closed() {
                break;
            }
            tokio::time::sleep(cfg.renew_every).await;
        }
    });
    (rx, handle)
}
