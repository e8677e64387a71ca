//! magnum-rs: the OpenStack Magnum v1 API, with drivers that decide what a cluster may do
//! (notably resizing the Cluster API control plane).
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod api;
pub mod auth;
pub mod certificates;
pub mod cli;
pub mod config;
pub mod drivers;
pub mod error;
pub mod failpoint;
pub mod health;
pub mod listener;
pub mod model;
pub mod mservice;
pub mod names;
pub mod openstack;
pub mod operation;
pub mod operations;
pub mod policy;
pub mod secret;
pub mod state;
pub mod store;
pub mod telemetry;

use std::future::Future;
use std::sync::Arc;

use anyhow::Context as _;
use axum::Router;
use tokio::net::TcpListener;

use crate::auth::keystone::KeystoneAuth;
use crate::config::{AuthMode, Config};
use crate::drivers::cluster_api;
use crate::drivers::record_only::RecordOnlyDriver;
use crate::drivers::BaseDriverAllows;
use crate::drivers::DriverRegistry;
use crate::openstack::CloudAccess;
use crate::operations::OperationsHandle;
use crate::policy::Policy;
use crate::state::AppState;
use crate::store::Store;

/// The HTTP application: the operator routes (`/healthz`, `/readyz`, `/metrics`, outside
/// Magnum's auth and policy), the Magnum API for everything else, and the request log and
/// metrics around both.
pub fn app(state: AppState) -> Router {
    health::routes()
        .into_router()
        .with_state(state.clone())
        .fallback_service(api::router(state))
        .layer(axum::middleware::from_fn(telemetry::requests::observe))
}

/// The driver registry, with the ClusterAPI driver on its management clusters when any are
/// configured (record-only otherwise).
pub async fn build_drivers(config: &Config) -> anyhow::Result<DriverRegistry> {
    build_drivers_with(config, None).await
}

/// [`build_drivers`], the drivers reaching the cloud with `cloud` (keystone auth mode).
pub async fn build_drivers_with(
    config: &Config,
    cloud: Option<CloudAccess>,
) -> anyhow::Result<DriverRegistry> {
    let mut registry = DriverRegistry::default();
    let d = &config.drivers;
    if !d.disabled.contains(&d.base.name) {
        let base = RecordOnlyDriver::new(
            &d.base.name,
            d.base.provides.clone(),
            Box::new(BaseDriverAllows),
        )
        .with_journal(d.journal.clone());
        registry.register(Arc::new(base), &[]);
    }
    if !d.disabled.contains(&d.cluster_api.name) {
        let settings = cluster_api::mcapi::variables::Settings {
            default_boot_volume_size: config.openstack.default_boot_volume_size,
            default_boot_volume_type: Some(config.openstack.default_boot_volume_type.clone())
                .filter(|t| !t.is_empty()),
        };
        let cloud = cloud.map(|access| (access, settings));
        let capi = cluster_api::build(&d.cluster_api, d.journal.clone(), cloud).await?;
        registry.register(capi, &d.cluster_api.aliases);
    }
    Ok(registry)
}

/// Connects, migrates (when configured) and assembles the state.
pub async fn build_state(config: Config) -> anyhow::Result<AppState> {
    let store = Store::connect_with(&config.database_url, config.database.max_pool_size).await?;
    if config.auto_migrate {
        store.migrate().await?;
    }
    let policy = match &config.policy_file {
        Some(path) => Policy::with_overrides_file(path)?,
        None => Policy::magnum_defaults(),
    };
    let keystone = match config.effective_auth()? {
        AuthMode::Keystone => {
            let auth = Arc::new(KeystoneAuth::new(&config.keystone_authtoken)?);
            let access = CloudAccess::new(config.openstack.cloud()?, auth.clone());
            Some((auth, access))
        }
        AuthMode::Noauth => None,
    };
    let cloud = keystone.as_ref().map(|(_, access)| access.clone());
    let drivers = build_drivers_with(&config, cloud).await?;
    let state = AppState::new(config, store, policy, drivers, OperationsHandle::default());
    match keystone {
        Some((auth, access)) => state.with_keystone(auth, access),
        None => Ok(state),
    }
}

/// Serves until `shutdown` resolves, with the conductor role beside the API (and the
/// metrics on their own listener with `[metrics] bind`). Then no new connection is
/// accepted, the worker is told to stop, and requests in flight get `[api]
/// shutdown_timeout` to finish; whatever is still running then is dropped, so the process
/// ends even while a client trickles a body or a handler hangs.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    run_worker: bool,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let metrics_side = match state.config.metrics.bind {
        Some(addr) => Some((
            TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen on {addr} ([metrics] bind)"))?,
            health::metrics_app(state.clone()),
        )),
        None => None,
    };
    tracing::info!(
        metrics_bind = ?state.config.metrics.bind,
        metrics_token = !state.config.metrics.token.is_empty(),
        "serving /metrics"
    );
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopping = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|stop| *stop).await;
    };
    let worker = run_worker.then(|| {
        tokio::spawn(operations::role::run(
            state.conductor.clone(),
            stop_rx.clone(),
        ))
    });
    let limits = listener::ConnectionLimits::of(&state.config.api);
    let metrics = async {
        if let Some((l, app)) = metrics_side {
            listener::serve(l, app, limits, stopping(stop_rx.clone())).await;
        }
    };
    let api = listener::serve(listener, app(state), limits, stopping(stop_rx.clone()));
    let worker = async {
        stopping(stop_rx.clone()).await;
        if let Some(w) = worker {
            stop_worker(w, limits.shutdown_timeout).await;
        }
    };
    let signal = async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    };
    tokio::join!(api, metrics, worker, signal);
    Ok(())
}

/// Waits for the conductor role to stop, for at most `grace`; then abandons it (operations
/// are durable: a claimed one is taken up again as after a crash).
async fn stop_worker(mut worker: tokio::task::JoinHandle<()>, grace: std::time::Duration) {
    if tokio::time::timeout(grace, &mut worker).await.is_err() {
        tracing::warn!(
            shutdown_timeout_s = grace.as_secs(),
            "the operations worker did not stop by the shutdown deadline: abandoning it"
        );
        worker.abort();
    }
}
