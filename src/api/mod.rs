//! The HTTP layer: one module per Magnum controller, the routing quirks (`/clusters` means
//! `/v1/clusters`, trailing slashes), the request-id header and the version negotiation.

pub mod attr_validator;
pub mod authz;
pub mod body;
pub mod bounds;
pub mod certificates;
pub mod cluster_actions;
pub mod cluster_templates;
pub mod clusters;
pub mod credentials;
pub mod driver_refusals;
pub mod extract;
pub mod federations;
pub mod jsonpatch;
pub mod lookup;
pub mod microversion;
pub mod mservices;
pub mod nodegroups;
pub mod pyliteral;
pub mod query;
pub mod quotas;
pub mod refusals;
pub mod request_body;
pub mod routes;
pub mod stats;
pub mod versions;

use axum::extract::{DefaultBodyLimit, Request};
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
        .merge(credentials::routes())
        .merge(federations::routes())
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
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            request_body::check,
        ))
        // request_body::check enforces `[api] max_request_body_size` instead.
        .layer(DefaultBodyLimit::disable())
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
            state.keystone.clone(),
            crate::auth::keystone::layer,
        ))
        .layer(middleware::from_fn_with_state(state, proxy_headers))
        .layer(middleware::from_fn(request_id))
}

/// oslo.middleware's `HTTPProxyToWSGI` in Magnum's pipeline: `X-Forwarded-Proto` names the
/// scheme of the links only with `[api] enable_proxy_headers_parsing` (off by default, as
/// oslo's option of that name), that is when a trusted proxy sets it; otherwise a client
/// could make every link it is shown point elsewhere.
async fn proxy_headers(
    axum::extract::State(state): axum::extract::State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    if !state.config.api.enable_proxy_headers_parsing {
        req.headers_mut().remove("x-forwarded-proto");
    }
    next.run(req).await
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

/// The Accept-dependent blanks of webob errors, and the envelope around whatever the HTTP
/// framework still refuses by itself before a handler runs (its 405, a panic caught by a
/// layer); every handler's extractors ([`extract`]) refuse through [`ApiError`] already.
async fn finish_response(req: Request, next: Next) -> Response {
    let json = microversion::accepts_json(req.headers());
    let allow = allow_header(req.uri().path());
    let mut resp = next.run(req).await;
    if resp.status() == axum::http::StatusCode::METHOD_NOT_ALLOWED {
        resp.headers_mut()
            .insert(axum::http::header::ALLOW, HeaderValue::from_static(allow));
    }
    if is_framework_rejection(&resp) {
        resp = into_envelope(resp).await;
    }
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

/// The `Allow` header of pecan's 405 for a (normalized) path: the methods its controller
/// class defines, not those the route serves.
fn allow_header(path: &str) -> &'static str {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    match segments.as_slice() {
        [""] | ["v1"] => "GET",
        ["v1", "clusters", _, "actions", ..] => "",
        ["v1", "stats" | "mservices", ..] => "GET",
        ["v1", "certificates", ..] => "GET, PATCH, POST",
        _ => "DELETE, GET, PATCH, POST",
    }
}

/// An error response that did not come from [`ApiError`]: axum's own extractors answer in
/// plain text.
fn is_framework_rejection(resp: &Response) -> bool {
    let status = resp.status();
    (status.is_client_error() || status.is_server_error())
        && resp.extensions().get::<ErrorMarker>().is_none()
        && resp
            .headers()
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/plain"))
}

/// The same status and text, through [`ApiError`] (so in Magnum's envelope).
async fn into_envelope(resp: Response) -> Response {
    let status = resp.status();
    let (parts, body) = resp.into_parts();
    let text = axum::body::to_bytes(body, 64 * 1024)
        .await
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let mut enveloped = ApiError::rejected(status, text).into_response();
    for (name, value) in parts.headers.iter() {
        if name != axum::http::header::CONTENT_TYPE && name != axum::http::header::CONTENT_LENGTH {
            enveloped.headers_mut().insert(name.clone(), value.clone());
        }
    }
    enveloped
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
