//! The request log and request metrics: every request gets an id (also the Magnum
//! `x-openstack-request-id` header), a span with the route template and the project, one log
//! line when it is answered, and a count and latency in the metrics. Headers and bodies are
//! never logged (they carry tokens and credentials).

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use tracing::field::Empty;
use tracing::Instrument as _;

use crate::model::RequestContext;

/// The id of one request, shared by its log lines and its `x-openstack-request-id`.
#[derive(Clone, Debug)]
pub struct RequestId(pub String);

/// What the Magnum router knows about a request once it was routed: the route template it
/// matched (none: no route) and the caller's project.
#[derive(Clone, Debug, Default)]
pub struct RouteInfo {
    pub route: Option<String>,
    pub project_id: Option<String>,
}

/// Route label of requests no route matched (keeps the metrics' cardinality bounded).
pub const UNMATCHED: &str = "unmatched";

/// Paths whose answers are logged at debug level only (probes and scrapes come every few
/// seconds from every kubelet and Prometheus).
const QUIET: &[&str] = &["/healthz", "/readyz", "/metrics"];

/// Layer inside the Magnum router (per matched route): reports the route template and the
/// project to [`observe`] through a response extension.
pub async fn route_info(req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_string());
    let project_id = req
        .extensions()
        .get::<RequestContext>()
        .and_then(|c| c.project_id.clone())
        .or_else(|| {
            ["x-project-id", "x-tenant-id"].iter().find_map(|h| {
                req.headers()
                    .get(*h)
                    .and_then(|v| v.to_str().ok())
                    .map(str::trim)
                    .filter(|v| !v.is_empty())
                    .map(str::to_string)
            })
        });
    let mut resp = next.run(req).await;
    resp.extensions_mut()
        .insert(RouteInfo { route, project_id });
    resp
}

/// Outermost layer: request id, span, metrics and the one log line per request.
pub async fn observe(mut req: Request, next: Next) -> Response {
    let start = Instant::now();
    let id = format!("req-{}", uuid::Uuid::new_v4());
    req.extensions_mut().insert(RequestId(id.clone()));
    let method = req.method().as_str().to_string();
    let outer_route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str().to_string());
    let span = tracing::info_span!(
        "request",
        request_id = %id,
        method = %method,
        route = Empty,
        project_id = Empty
    );
    let mut resp = next.run(req).instrument(span.clone()).await;
    let info = resp
        .extensions()
        .get::<RouteInfo>()
        .cloned()
        .unwrap_or_default();
    let route = outer_route
        .or(info.route)
        .unwrap_or_else(|| UNMATCHED.to_string());
    span.record("route", route.as_str());
    if let Some(p) = &info.project_id {
        span.record("project_id", p.as_str());
    }
    if !resp.headers().contains_key("x-openstack-request-id") {
        if let Ok(v) = HeaderValue::from_str(&id) {
            resp.headers_mut()
                .insert(HeaderName::from_static("x-openstack-request-id"), v);
        }
    }
    let elapsed = start.elapsed();
    let status = resp.status().as_u16();
    super::metrics::record_request(&method, &route, status, elapsed);
    let duration_ms = elapsed.as_secs_f64() * 1000.0;
    span.in_scope(|| {
        if QUIET.contains(&route.as_str()) {
            tracing::debug!(status, duration_ms, "request answered");
        } else {
            tracing::info!(status, duration_ms, "request answered");
        }
    });
    resp
}
