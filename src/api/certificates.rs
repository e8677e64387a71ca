//! `/v1/certificates` (`magnum/api/controllers/v1/certificate.py`): a cluster's CA
//! certificate, signing a client's certificate request with it (what
//! `openstack coe cluster config` does), and CA rotation. The CAs Magnum's conductor made at
//! create time (`x509keypair`) answer, for every driver, as Magnum serves them; a cluster
//! created before magnum-rs kept them gets its driver's answer (the ClusterAPI driver:
//! Cluster API's Secrets) or refusal.

use super::routes::Routes;

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use serde_json::{json, Map, Value};

use super::authz::enforce_on;
use super::body::Body;
use super::extract::{MagnumBody, MagnumPath};
use super::lookup;
use super::query::{base_url, Query};
use crate::error::{ApiError, ApiResult};
use crate::model::{status, Cluster, ClusterTemplate, RequestContext, Tenancy};
use crate::operations::certificates::sign_with_stored;
use crate::state::AppState;
use crate::store::x509keypairs::{CertKind, StoredKeyPair};

pub fn routes() -> Routes {
    Routes::default()
        .post("/v1/certificates", sign_certificate)
        .get("/v1/certificates/{cluster_ident}", show_ca_certificate)
        .patch("/v1/certificates/{cluster_ident}", rotate_ca_certificate)
}

/// The attributes of Magnum's `Certificate` API type.
const ATTRIBUTES: &[&str] = &[
    "cluster_uuid",
    "csr",
    "pem",
    "ca_cert_type",
    "created_at",
    "updated_at",
];
const READ_ONLY: &[&str] = &["links"];

fn links(base: &str, cluster_uuid: &str) -> Value {
    json!([
        {"href": format!("{base}/v1/certificates/{cluster_uuid}"), "rel": "self"},
        {"href": format!("{base}/certificates/{cluster_uuid}"), "rel": "bookmark"},
    ])
}

/// `api_utils.get_resource('Cluster', …)`: the caller's project only, admins included.
async fn find_cluster(state: &AppState, ctx: &RequestContext, ident: &str) -> ApiResult<Cluster> {
    lookup::cluster(state, &Tenancy::of(ctx, false), ident).await
}

async fn template_of(state: &AppState, cluster: &Cluster) -> ApiResult<ClusterTemplate> {
    let id = cluster.cluster_template_id.clone().unwrap_or_default();
    state
        .store
        .template_by_uuid(&id)
        .await?
        .ok_or(ApiError::ClusterTemplateNotFound(id))
}

fn enforce_on_cluster(
    state: &AppState,
    ctx: &RequestContext,
    action: &str,
    c: &Cluster,
) -> ApiResult<()> {
    enforce_on(
        state,
        ctx,
        action,
        c.project_id.as_deref(),
        c.user_id.as_deref(),
    )
}

/// The cluster's CA of `ca_cert_type` as Magnum's x509keypair cert manager keeps it;
/// `None` for a cluster created before magnum-rs made them (its driver answers then).
async fn stored_ca(
    state: &AppState,
    cluster: &Cluster,
    ca_cert_type: Option<&str>,
) -> ApiResult<Option<StoredKeyPair>> {
    Ok(state
        .store
        .cluster_certificate(&cluster.uuid, CertKind::for_ca_cert_type(ca_cert_type))
        .await?)
}

/// Mirrors `CertificateController.get_one`.
async fn show_ca_certificate(
    State(state): State<AppState>,
    ctx: RequestContext,
    headers: HeaderMap,
    MagnumPath(ident): MagnumPath<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    let q = Query::parse(raw.as_deref(), &["ca_cert_type"])?;
    let cluster = find_cluster(&state, &ctx, &ident).await?;
    enforce_on_cluster(&state, &ctx, "certificate:get", &cluster)?;
    let driver = state.driver_of(&cluster).await??;
    let ca_cert_type = q.get("ca_cert_type");
    // The CA Magnum's conductor made at create time; for a cluster without one, the
    // driver's (Cluster API's Secret), or its refusal.
    let pem = match stored_ca(&state, &cluster, ca_cert_type).await? {
        Some(ca) => ca.certificate,
        None => driver.ca_certificate(&cluster, ca_cert_type).await?,
    };
    Ok(Json(json!({
        "cluster_uuid": cluster.uuid,
        "pem": pem,
        "links": links(&base_url(&headers), &cluster.uuid),
    })))
}

/// Mirrors `CertificateController.post`: WSME looks the cluster up while it reads the
/// body (a missing one is a 400 there), then the policy, then the CA signs.
async fn sign_certificate(
    State(state): State<AppState>,
    ctx: RequestContext,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    MagnumBody(bytes): MagnumBody,
) -> ApiResult<(StatusCode, Json<Value>)> {
    Query::parse(raw.as_deref(), &[])?;
    let b = Body::parse(&bytes, "certificate", ATTRIBUTES, &[])?;
    let cluster = match b.raw().get("cluster_uuid").filter(|v| !v.is_null()) {
        Some(v) => {
            let ident = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            match find_cluster(&state, &ctx, &ident).await {
                Err(ApiError::ClusterNotFound(i)) => {
                    return Err(ApiError::InvalidParameterValue(format!(
                        "Cluster {i} could not be found."
                    )))
                }
                other => other?,
            }
        }
        // Magnum looks up the attribute's `Unset` marker and reports it (404).
        None => return Err(ApiError::ClusterNotFound("Unset".into())),
    };
    for ro in READ_ONLY {
        if let Some(v) = b.raw().get(*ro) {
            return Err(ApiError::invalid_input(
                *ro,
                super::body::py_str(v),
                "Cannot set read only field.",
            ));
        }
    }
    let csr = b.string("csr", 1, usize::MAX)?;
    b.string("pem", 0, usize::MAX)?;
    let ca_cert_type = b.string("ca_cert_type", 0, usize::MAX)?;
    enforce_on_cluster(&state, &ctx, "certificate:create", &cluster)?;
    let driver = state.driver_of(&cluster).await??;
    let csr = csr.unwrap_or_default();
    let pem = match stored_ca(&state, &cluster, ca_cert_type.as_deref()).await? {
        Some(ca) => sign_with_stored(&ca, &cluster.uuid, &csr)?,
        None => {
            driver
                .sign_certificate(&cluster, ca_cert_type.as_deref(), &csr)
                .await?
        }
    };
    let mut out = Map::new();
    out.insert("cluster_uuid".into(), cluster.uuid.clone().into());
    out.insert("csr".into(), csr.into());
    out.insert("pem".into(), pem.into());
    if let Some(t) = ca_cert_type {
        out.insert("ca_cert_type".into(), t.into());
    }
    out.insert("links".into(), links(&base_url(&headers), &cluster.uuid));
    Ok((StatusCode::CREATED, Json(Value::Object(out))))
}

/// Mirrors `CertificateController.patch` and the conductor's `rotate_ca_certificate`
/// (an RPC call: its refusals reach the client).
async fn rotate_ca_certificate(
    State(state): State<AppState>,
    ctx: RequestContext,
    MagnumPath(ident): MagnumPath<String>,
    RawQuery(raw): RawQuery,
    MagnumBody(bytes): MagnumBody,
) -> ApiResult<(StatusCode, Json<Value>)> {
    Query::parse(raw.as_deref(), &[])?;
    // The method takes no body: WSME reads a JSON object's keys as further arguments.
    if let Ok(Value::Object(m)) = serde_json::from_slice::<Value>(&bytes) {
        if let Some(k) = m.keys().next() {
            return Err(ApiError::UnknownArgument(k.clone()));
        }
    }
    let cluster = find_cluster(&state, &ctx, &ident).await?;
    enforce_on_cluster(&state, &ctx, "certificate:rotate_ca", &cluster)?;
    let template = template_of(&state, &cluster).await?;
    if template.tls_disabled.unwrap_or(false) {
        return Err(ApiError::NotSupportedMessage(
            "Rotating the CA certificate on a non-TLS cluster is not supported".into(),
        ));
    }
    let current = cluster.status.clone().unwrap_or_default();
    if !status::allows_update(&current) {
        return Err(ApiError::NotSupported(format!(
            "Updating a cluster when status is \"{current}\""
        )));
    }
    let driver = state.driver_of(&cluster).await??;
    driver.rotate_ca_certificate(&cluster).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({"uuid": cluster.uuid}))))
}
