//! Probes and metrics for operators, outside the Magnum routes and their auth and policy:
//! `GET /healthz` (the process answers), `GET /readyz` (the database answers; per management
//! cluster, whether this replica reaches it and whether it leads) and `GET /metrics` (with
//! `[metrics] bind`, on its own listener instead; with a token, for its bearer only).

use std::time::Duration;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use crate::api::routes::{Route, Routes};
use crate::state::AppState;
use crate::telemetry::{access, metrics};

/// How long a probe waits for the database or a management cluster.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// The operator routes (served beside the Magnum router, never through it).
pub fn routes() -> Routes {
    Routes::default()
        .get("/healthz", healthz)
        .get("/readyz", readyz)
        .get("/metrics", scrape)
}

/// The operator routes' table (for the api-ref test).
pub fn route_table() -> Vec<Route> {
    routes().table().to_vec()
}

/// `magnum-rs healthcheck`: `GET /healthz` on the configured address (loopback when bound to
/// every address) must answer 200.
pub fn probe(bind: std::net::SocketAddr) -> anyhow::Result<()> {
    use std::io::{Read as _, Write as _};
    let mut addr = bind;
    if addr.ip().is_unspecified() {
        addr.set_ip(if addr.is_ipv4() {
            std::net::Ipv4Addr::LOCALHOST.into()
        } else {
            std::net::Ipv6Addr::LOCALHOST.into()
        });
    }
    let mut s = std::net::TcpStream::connect_timeout(&addr, PROBE_TIMEOUT)?;
    s.set_read_timeout(Some(PROBE_TIMEOUT))?;
    write!(
        s,
        "GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut answer = String::new();
    s.read_to_string(&mut answer)?;
    match answer.split_whitespace().nth(1) {
        Some("200") => Ok(()),
        other => anyhow::bail!("{addr}/healthz answered {}", other.unwrap_or("nothing")),
    }
}

async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

async fn database_answers(state: &AppState) -> bool {
    tokio::time::timeout(PROBE_TIMEOUT, state.store.ping())
        .await
        .unwrap_or(false)
}

/// Ready when the database answers: a replica that does not lead, or cannot reach a
/// management cluster, still accepts requests (operations are durable and run when the
/// leader reaches the cluster), so those are reported but do not make it unready.
async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Value>) {
    let database = database_answers(&state).await;
    let mut clusters = Vec::new();
    for driver in state.drivers.drivers() {
        let probes = tokio::time::timeout(PROBE_TIMEOUT, driver.management_status()).await;
        for mc in probes.unwrap_or_default() {
            clusters.push(json!({
                "driver": driver.name(),
                "name": mc.name,
                "connected": mc.connected,
                "leader": mc.leader,
            }));
        }
    }
    let code = if database {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        code,
        Json(json!({
            "status": if database { "ready" } else { "unready" },
            "database": if database { "ok" } else { "unreachable" },
            "management_clusters": clusters,
        })),
    )
}

/// The router of the metrics' own listener (`[metrics] bind`): `/metrics` only.
pub fn metrics_app(state: AppState) -> axum::Router {
    Routes::default()
        .get("/metrics", scrape_own_listener)
        .into_router()
        .with_state(state)
        .layer(axum::middleware::from_fn(
            crate::telemetry::requests::observe,
        ))
}

/// `/metrics` on the API's listener: not there when the metrics have a listener of their own.
async fn scrape(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if state.config.metrics.bind.is_some() {
        return crate::error::ApiError::RouteNotFound.into_response();
    }
    scrape_own_listener(State(state), headers).await
}

/// Prometheus text format, for a scrape with the configured credential, if any; the
/// operations queue is read from the database now.
async fn scrape_own_listener(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Err(refused) = access::check(&headers, &state.config.metrics.token) {
        return *refused;
    }
    match tokio::time::timeout(PROBE_TIMEOUT, state.store.open_operations()).await {
        Ok(Ok(queue)) => {
            for q in queue {
                metrics::set_queue(q.state, q.count, q.oldest_age);
            }
        }
        Ok(Err(e)) => tracing::warn!(error = %e, "cannot read the operations queue"),
        Err(_) => tracing::warn!("reading the operations queue timed out"),
    }
    (
        [(header::CONTENT_TYPE, metrics::CONTENT_TYPE)],
        metrics::encode(),
    )
        .into_response()
}
