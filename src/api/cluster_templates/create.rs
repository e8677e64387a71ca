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
use crate::api::attr_validator::{CloudChecks, OsResources};
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
/// With the requesting user's catalog (keystone auth), the image, flavors and networks are
/// checked in the cloud and `cluster_distro` is the image's `os_distro`; without one
/// (noauth), nothing is looked up and `cluster_distro` is taken from the body.
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
    let checks = CloudChecks::of(&state, &ctx);
    // enforce_driver_supported: the named driver, else the image's `magnum_driver`, else
    // the one providing the triple (the distro is the image's when the body lacks the
    // distro or the driver).
    let mut resolved = t.clone();
    if let (Some(c), Some(image_id)) = (&checks, t.image_id.as_deref()) {
        if t.cluster_distro.is_none() || t.driver.is_none() {
            if let Some(image) = c.image_for_driver(image_id).await? {
                resolved.cluster_distro = image.os_distro;
                resolved.driver = resolved.driver.or(image.magnum_driver);
            }
        }
    }
    let driver = state
        .drivers
        .for_new_template(&resolved, state.config.drivers.default_driver.as_deref())?;
    t.driver = Some(
        resolved
            .driver
            .clone()
            .unwrap_or_else(|| driver.name().to_string()),
    );
    enforce(&state, &ctx, "clustertemplate:create")?;
    if let Some(c) = &checks {
        // validate_os_resources, then validate_image's `os_distro` as the distro.
        if let Some(image) = c.os_resources(OsResources::of_template(&t), None).await? {
            t.cluster_distro = image.os_distro;
        }
    }
    if t.public == Some(true) || t.hidden == Some(true) {
        enforce(&state, &ctx, "clustertemplate:publish")
            .map_err(|_| ApiError::ClusterTemplatePublishDenied)?;
    }
    if let Some(c) = &checks {
        // The root volume of the flavors the body names, with the template's labels.
        for flavor in [&t.flavor_id, &t.master_flavor_id] {
            if let Some(f) = flavor.as_deref() {
                c.flavor_root_volume_size(Some(f), t.labels.as_ref())
                    .await?;
            }
        }
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
