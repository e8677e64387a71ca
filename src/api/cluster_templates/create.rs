//! `POST /v1/clustertemplates` (`ClusterTemplatesController.post`).

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{Map, Value};

use super::attributes::{check_bounds, read_attrs};
use super::validate::{enforce_volume_storage_size, validate_drivers, DEFAULT_NETWORK_DRIVER};
use super::view::render;
use crate::api::authz::enforce;
use crate::api::body::Body;
use crate::api::bounds::FieldBounds;
use crate::api::extract::MagnumBody;
use crate::api::query::{base_url, Query};
use crate::error::{ApiError, ApiResult};
use crate::model::{ClusterTemplate, RequestContext};
use crate::state::AppState;

const WRITABLE: &[&str] = &[
    "uuid",
    "name",
    "coe",
    "image_id",
    "flavor_id",
    "master_flavor_id",
    "dns_nameserver",
    "keypair_id",
    "external_network_id",
    "fixed_network",
    "fixed_subnet",
    "network_driver",
    "apiserver_port",
    "docker_volume_size",
    "cluster_distro",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "volume_driver",
    "registry_enabled",
    "labels",
    "tls_disabled",
    "public",
    "server_type",
    "insecure_registry",
    "docker_storage_driver",
    "master_lb_enabled",
    "floating_ip_enabled",
    "hidden",
    "tags",
    "driver",
];
const READ_ONLY: &[&str] = &["links", "project_id", "user_id", "created_at", "updated_at"];

/// A validated `ClusterTemplate` body of a POST.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterTemplateCreate {
    /// The template as the body describes it, with WSME's defaults.
    pub template: ClusterTemplate,
    /// The uuid the client chose, if any.
    pub uuid: Option<String>,
}

impl ClusterTemplateCreate {
    /// WSME's validation of the `ClusterTemplate` API type (`image_id` is mandatory), then
    /// magnum-rs's size bounds.
    pub fn from_body(bytes: &Bytes, bounds: FieldBounds) -> ApiResult<ClusterTemplateCreate> {
        let b = Body::parse(bytes, "cluster_template", WRITABLE, READ_ONLY)?;
        b.mandatory("image_id")?;
        let mut template = ClusterTemplate::default();
        read_attrs(&b, &mut template)?;
        check_bounds(&template, None, bounds)?;
        let uuid = b
            .raw()
            .get("uuid")
            .and_then(Value::as_str)
            .map(str::to_string);
        Ok(ClusterTemplateCreate { template, uuid })
    }
}

/// Mirrors `ClusterTemplatesController.post` (201 with the object and a Location header).
/// Without Glance, `cluster_distro` is taken from the body rather than the image.
pub(super) async fn create_template(
    State(state): State<AppState>,
    ctx: RequestContext,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    MagnumBody(bytes): MagnumBody,
) -> ApiResult<Response> {
    Query::parse(raw.as_deref(), &[])?;
    let ClusterTemplateCreate {
        template: mut t,
        uuid,
    } = ClusterTemplateCreate::from_body(&bytes, FieldBounds::new(&state.config.api))?;
    validate_drivers(
        &t,
        &state
            .config
            .cluster_template
            .kubernetes_allowed_network_drivers,
    )?;
    enforce_volume_storage_size(&t, None)?;
    // `_enforce_network_driver_types` stores the default for kubernetes
    // (`[cluster_template] kubernetes_default_network_driver`).
    if t.network_driver.is_none() {
        t.network_driver = Some(DEFAULT_NETWORK_DRIVER.into());
    }
    // enforce_driver_supported: the named driver, else the one providing the triple.
    let driver = state
        .drivers
        .for_new_template(&t, state.config.drivers.default_driver.as_deref())?;
    t.driver = Some(
        t.driver
            .clone()
            .unwrap_or_else(|| driver.name().to_string()),
    );
    enforce(&state, &ctx, "clustertemplate:create")?;
    if t.public == Some(true) || t.hidden == Some(true) {
        enforce(&state, &ctx, "clustertemplate:publish")
            .map_err(|_| ApiError::ClusterTemplatePublishDenied)?;
    }
    t.uuid = uuid.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    t.project_id = ctx.project_id.clone();
    t.user_id = ctx.user_id.clone();
    if t.labels.is_none() {
        t.labels = Some(Map::new());
    }
    if t.name.is_none() {
        t.name = Some(format!("{}-template", crate::names::generate()));
    }
    let created = state.store.insert_template(&t).await?;
    let base = base_url(&headers);
    let mut resp = (StatusCode::CREATED, Json(render(&created, &base))).into_response();
    if let Ok(loc) = format!("{base}/v1/clustertemplates/{}", created.uuid).parse() {
        resp.headers_mut().insert(header::LOCATION, loc);
    }
    Ok(resp)
}
