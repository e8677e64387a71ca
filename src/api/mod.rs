//! The HTTP layer: one module per Magnum controller, the routing quirks (`/clusters` means
//! `/v1/clusters`, trailing slashes), the request-id header and the version negotiation.

pub mod authz;
pub mod body;
pub mod certificates;
pub mod cluster_actions;
pub mod cluster_templates;
pub mod clusters;
pub mod jsonpatch;
pub mod lookup;
pub mod microversion;
pub mod mservices;
pub mod nodegroups;
pub mod pyliteral;
pub mod query;
pub mod quotas;
pub mod routes;
pub mod stats;
pub mod versions;

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::Router;
use tower::ServiceExt as _;

use self::routes::{Route, Routes};
use crate::error::{envelope, ApiError, ErrorMarker, Flavor};
use crate::state::AppState;

/// The `/v1` routes (they negotiate microversions).
fn v1_routes() -> Routes {
    versions::v1_routes()
        .merge(cluster_templates::routes())
        .merge(clusters::routes())
        .merge(cluster_actions::routes())
        .merge(nodegroups::routes())
        .merge(stats::routes())
        .merge(quotas::routes())
        .merge(mservices::routes())
        .merge(certificates::routes())
}

/// Every (method, path template) the Magnum router serves, read from the tables the router
/// is built from.
pub fn route_table() -> Vec<Route> {
    let mut all = versions::root_routes().table().to_vec();
    all.extend_from_slice(v1_routes().table());
    all
}

/// The Magnum API router (`/` and `/v1…`).
pub fn router(state: AppState) -> Router {
    let v1 = v1_routes()
        .into_router()
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn(microversion::negotiate_layer));
    let inner = Router::new()
        .merge(versions::root_routes().into_router())
        .merge(v1)
        .fallback(not_found)
        .with_state(state.clone())
        .layer(middleware::from_fn(crate::telemetry::requests::route_info))
        .layer(middleware::from_fn(finish_response));
    // Token authentication sees the raw path, before Magnum's routing rewrites it, as
    // keystonemiddleware sits in front of Magnum's pecan app.
    Router::new()
        .fallback_service(inner.map_request(normalize_path))
        .layer(middleware::from_fn_with_state(
            state,
            crate::auth::keystone::layer,
        ))
        .layer(middleware::from_fn(request_id))
}

async fn not_found() -> ApiError {
    ApiError::RouteNotFound
}

async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}

/// Magnum's routing: a first segment other than `v1` gets `v1` prepended, and trailing
/// slashes are ignored.
fn normalize_path(mut req: Request) -> Request {
    let uri = req.uri();
    let path = uri.path();
    let trimmed = path.trim_end_matches('/');
    let new_path = if trimmed.is_empty() {
        "/".to_string()
    } else if trimmed == "/v1" || trimmed.starts_with("/v1/") {
        trimmed.to_string()
    } else {
        format!("/v1{trimmed}")
    };
    if new_path != path {
        let pq = match uri.query() {
            Some(q) => format!("{new_path}?{q}"),
            None => new_path,
        };
        let mut parts = uri.clone().into_parts();
        if let Ok(pq) = pq.parse() {
            parts.path_and_query = Some(pq);
            if let Ok(u) = Uri::from_parts(parts) {
                *req.uri_mut() = u;
            }
        }
    }
    req
}

/// The Accept-dependent blanks of webob errors.
async fn finish_response(req: Request, next: Next) -> Response {
    let json = microversion::accepts_json(req.headers());
    let mut resp = next.run(req).await;
    let marker = resp.extensions().get::<ErrorMarker>().cloned();
    if let Some(m) = marker {
        if m.flavor == Flavor::Webob && !json {
            let status = resp.status();
            let mut blank = (status, axum::Json(envelope("", status, "", ""))).into_response();
            std::mem::swap(blank.headers_mut(), resp.headers_mut());
            // Everything the inner layers reported (the error marker, the matched route).
            std::mem::swap(blank.extensions_mut(), resp.extensions_mut());
            resp = blank;
        }
    }
    resp
}

/// Outermost layer (oslo's `request_id` middleware): `x-openstack-request-id` on every
/// response, the authentication layer's refusals included; the id the request log carries
/// (telemetry's layer) when there is one.
async fn request_id(req: Request, next: Next) -> Response {
    let id = req
        .extensions()
        .get::<crate::telemetry::requests::RequestId>()
        .map(|r| r.0.clone())
        .unwrap_or_else(|| format!("req-{}", uuid::Uuid::new_v4()));
    let mut resp = next.run(req).await;
    if let Ok(v) = HeaderValue::from_str(&id) {
        resp.headers_mut()
            .insert(HeaderName::from_static("x-openstack-request-id"), v);
    }
    resp
}
