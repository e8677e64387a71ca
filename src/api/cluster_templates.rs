//! `/v1/clustertemplates` (`magnum/api/controllers/v1/cluster_template.py`).

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

use super::authz::{admin_all_tenants, enforce, enforce_on};
use super::body::{member_post_error, Body};
use super::jsonpatch::{self, BASE_INTERNAL};
use super::lookup;
use super::query::{base_url, check_marker, next_link, PageArgs, Query, PAGINATION_ARGS};
use super::routes::Routes;
use crate::error::{ApiError, ApiResult};
use crate::model::{ClusterTemplate, RequestContext};
use crate::state::AppState;
use crate::store::Table;

pub fn routes() -> Routes {
    Routes::default()
        .get("/v1/clustertemplates", list_templates)
        .post("/v1/clustertemplates", create_template)
        .delete("/v1/clustertemplates", missing_ident)
        .patch("/v1/clustertemplates", missing_ident)
        .get("/v1/clustertemplates/detail", list_templates_detail)
        .get("/v1/clustertemplates/{ident}", show_template)
        .post("/v1/clustertemplates/{ident}", post_on_template)
        .patch("/v1/clustertemplates/{ident}", update_template)
        .delete("/v1/clustertemplates/{ident}", delete_template)
        .get("/v1/clustertemplates/{ident}/detail", detail_under_template)
}

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
const NON_REMOVABLE: &[&str] = &[
    "/network_driver",
    "/external_network_id",
    "/tls_disabled",
    "/public",
    "/server_type",
    "/coe",
    "/registry_enabled",
    "/cluster_distro",
    "/hidden",
    // `image_id` is a mandatory attribute of the API type.
    "/image_id",
];
const NETWORK_DRIVERS: [&str; 3] = ["flannel", "calico", "cilium"];
const DEFAULT_NETWORK_DRIVER: &str = "flannel";
const VOLUME_DRIVERS: [&str; 1] = ["cinder"];

/// The API dictionary of a template (every field, `null` where unset), without links.
pub fn template_doc(t: &ClusterTemplate) -> Map<String, Value> {
    let v = json!({
        "uuid": t.uuid,
        "name": t.name,
        "coe": t.coe,
        "image_id": t.image_id,
        "flavor_id": t.flavor_id,
        "master_flavor_id": t.master_flavor_id,
        "dns_nameserver": t.dns_nameserver,
        "keypair_id": t.keypair_id,
        "external_network_id": t.external_network_id,
        "fixed_network": t.fixed_network,
        "fixed_subnet": t.fixed_subnet,
        "network_driver": t.network_driver,
        "apiserver_port": t.apiserver_port,
        "docker_volume_size": t.docker_volume_size,
        "cluster_distro": t.cluster_distro,
        "http_proxy": t.http_proxy,
        "https_proxy": t.https_proxy,
        "no_proxy": t.no_proxy,
        "volume_driver": t.volume_driver,
        "registry_enabled": t.registry_enabled,
        "labels": t.labels,
        "tls_disabled": t.tls_disabled,
        "public": t.public,
        "server_type": t.server_type,
        "insecure_registry": t.insecure_registry,
        "docker_storage_driver": t.docker_storage_driver,
        "master_lb_enabled": t.master_lb_enabled,
        "floating_ip_enabled": t.floating_ip_enabled,
        "project_id": t.project_id,
        "user_id": t.user_id,
        "hidden": t.hidden,
        "tags": t.tags,
        "driver": t.driver,
        "created_at": t.created_at,
        "updated_at": t.updated_at,
    });
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn render(t: &ClusterTemplate, base: &str) -> Value {
    let mut doc = template_doc(t);
    doc.insert(
        "links".into(),
        json!([
            {"href": format!("{base}/v1/clustertemplates/{}", t.uuid), "rel": "self"},
            {"href": format!("{base}/clustertemplates/{}", t.uuid), "rel": "bookmark"},
        ]),
    );
    Value::Object(doc)
}

/// Mirrors `ClusterTemplatesController.get_all`.
async fn list_templates(
    State(state): State<AppState>,
    ctx: RequestContext,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    let q = Query::parse(raw.as_deref(), &PAGINATION_ARGS)?;
    let args = PageArgs::from_query(&q)?;
    enforce(&state, &ctx, "clustertemplate:get_all")?;
    collection(
        &state,
        &ctx,
        &headers,
        &args,
        "clustertemplates",
        "clustertemplate:get_all_all_projects",
    )
    .await
}

/// Mirrors `ClusterTemplatesController.detail` (the same full objects as the list).
async fn list_templates_detail(
    State(state): State<AppState>,
    ctx: RequestContext,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    let q = Query::parse(raw.as_deref(), &PAGINATION_ARGS)?;
    let args = PageArgs::from_query(&q)?;
    enforce(&state, &ctx, "clustertemplate:detail")?;
    collection(
        &state,
        &ctx,
        &headers,
        &args,
        "clustertemplates/detail",
        "clustertemplate:detail_all_projects",
    )
    .await
}

/// `DELETE`/`PATCH` on the collection: WSME misses the identifier argument.
async fn missing_ident() -> ApiError {
    ApiError::MissingArgument("cluster_template_ident".into())
}

async fn post_on_template(Path(ident): Path<String>) -> ApiError {
    member_post_error("cluster_template", "ClusterTemplate", &ident)
}

/// `GET /v1/clustertemplates/{x}/detail`: WSME binds `{x}` to `detail`'s `marker` (a uuid),
/// then Magnum raises `HTTPNotFound` without arguments ("/detail should only work against
/// collections").
async fn detail_under_template(
    State(state): State<AppState>,
    Path(ident): Path<String>,
    ctx: RequestContext,
) -> ApiResult<Json<Value>> {
    check_marker(&ident)?;
    enforce(&state, &ctx, "clustertemplate:detail")?;
    Err(ApiError::ResourceNotFoundUnformatted)
}

async fn collection(
    state: &AppState,
    ctx: &RequestContext,
    headers: &HeaderMap,
    args: &PageArgs,
    resource: &str,
    all_projects_rule: &str,
) -> ApiResult<Json<Value>> {
    let all_tenants = admin_all_tenants(state, ctx, all_projects_rule)?;
    let scope = lookup::template_scope(ctx, all_tenants);
    let (limit, dir) = args.limit_and_dir(state.config.api.max_limit)?;
    let marker_id = match &args.marker {
        Some(m) => Some(lookup::template(state, &scope, m).await?.id),
        None => None,
    };
    let page = args.page(limit, dir, marker_id, Table::ClusterTemplate)?;
    let items = state.store.list_templates(&scope, &page).await?;
    let base = base_url(headers);
    let mut body = json!({
        "clustertemplates": items.iter().map(|t| render(t, &base)).collect::<Vec<_>>(),
    });
    if items.len() as i64 == limit {
        if let Some(last) = items.last() {
            body["next"] =
                next_link(&base, resource, limit, &args.sort_key, dir, &last.uuid).into();
        }
    }
    Ok(Json(body))
}

/// Mirrors `ClusterTemplatesController.get_one`.
async fn show_template(
    State(state): State<AppState>,
    ctx: RequestContext,
    headers: HeaderMap,
    Path(ident): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    Query::parse(raw.as_deref(), &[])?;
    let all_tenants = admin_all_tenants(&state, &ctx, "clustertemplate:get_one_all_projects")?;
    let scope = lookup::template_scope(&ctx, all_tenants);
    let t = lookup::template(&state, &scope, &ident).await?;
    if t.hidden.unwrap_or(false) && !ctx.is_admin && t.project_id != ctx.project_id {
        return Err(ApiError::ClusterTemplateNotFound(ident));
    }
    if !t.public.unwrap_or(false) {
        enforce_on(
            &state,
            &ctx,
            "clustertemplate:get",
            t.project_id.as_deref(),
            t.user_id.as_deref(),
        )?;
    }
    Ok(Json(render(&t, &base_url(&headers))))
}

/// Reads and validates a template's fields from a body or a patched dictionary.
fn template_from_body(b: &Body, into: &mut ClusterTemplate) -> ApiResult<()> {
    b.uuid("uuid")?;
    let s = |name: &str| b.string(name, 1, 255);
    into.name = s("name")?;
    into.coe = s("coe")?;
    if let Some(coe) = &into.coe {
        if coe != "kubernetes" {
            return Err(ApiError::invalid_input(
                "coe",
                coe,
                "Value should be one of: kubernetes",
            ));
        }
    }
    into.image_id = s("image_id")?;
    into.flavor_id = s("flavor_id")?;
    into.master_flavor_id = s("master_flavor_id")?;
    into.dns_nameserver = b.text("dns_nameserver")?;
    if let Some(dns) = &into.dns_nameserver {
        validate_dns(dns)?;
    }
    into.keypair_id = s("keypair_id")?;
    into.external_network_id = s("external_network_id")?;
    into.fixed_network = s("fixed_network")?;
    into.fixed_subnet = s("fixed_subnet")?;
    into.network_driver = s("network_driver")?;
    into.apiserver_port = b.int("apiserver_port", Some(1024))?;
    if let Some(p) = into.apiserver_port {
        if p > 65535 {
            return Err(ApiError::invalid_input(
                "apiserver_port",
                p.to_string(),
                "Value should be lower or equal to 65535",
            ));
        }
    }
    into.docker_volume_size = b.int("docker_volume_size", Some(1))?;
    into.cluster_distro = s("cluster_distro")?;
    into.http_proxy = s("http_proxy")?;
    into.https_proxy = s("https_proxy")?;
    into.no_proxy = s("no_proxy")?;
    into.volume_driver = s("volume_driver")?;
    into.registry_enabled = Some(b.boolean("registry_enabled")?.unwrap_or(false));
    into.labels = b.labels("labels")?;
    into.tls_disabled = Some(b.boolean("tls_disabled")?.unwrap_or(false));
    into.public = Some(b.boolean("public")?.unwrap_or(false));
    into.server_type = Some(s("server_type")?.unwrap_or_else(|| "vm".into()));
    if let Some(st) = into.server_type.as_deref() {
        // `wtypes.Enum(wtypes.text, 'vm', 'bm')` (a set: Python prints it in hash order).
        if !["vm", "bm"].contains(&st) {
            return Err(ApiError::invalid_input(
                "server_type",
                st,
                "Value should be one of: vm, bm",
            ));
        }
    }
    into.insecure_registry = s("insecure_registry")?;
    into.docker_storage_driver = s("docker_storage_driver")?;
    into.master_lb_enabled = Some(b.boolean("master_lb_enabled")?.unwrap_or(false));
    into.floating_ip_enabled = Some(b.boolean("floating_ip_enabled")?.unwrap_or(true));
    into.hidden = Some(b.boolean("hidden")?.unwrap_or(false));
    into.tags = b.string("tags", 0, 255)?;
    into.driver = s("driver")?;
    Ok(())
}

/// `DNSListType` (`magnum.common.utils.validate_dns`): one IPv4 address or a comma-separated
/// list of them, each in dotted-quad form (spaces around an entry are ignored).
fn validate_dns(dns: &str) -> ApiResult<()> {
    let valid = dns
        .split(',')
        .all(|d| d.trim().parse::<std::net::Ipv4Addr>().is_ok());
    if valid {
        Ok(())
    } else {
        Err(ApiError::InvalidParameterValue(format!(
            "Expected a single dns address or comma separated dns list, but received {dns}."
        )))
    }
}

/// `_enforce_volume_storage_size`: devicemapper needs a docker volume of at least 3 GB (the
/// cluster's, else the template's).
pub fn enforce_volume_storage_size(
    t: &ClusterTemplate,
    cluster_volume_size: Option<i64>,
) -> ApiResult<()> {
    let storage = t.docker_storage_driver.as_deref().unwrap_or_default();
    if storage != "devicemapper" {
        return Ok(());
    }
    let size = cluster_volume_size
        .filter(|v| *v != 0)
        .or(t.docker_volume_size.filter(|v| *v != 0));
    match size {
        Some(v) if v >= 3 => Ok(()),
        _ => Err(ApiError::InvalidParameterValue(format!(
            "docker volume size {} GB is not valid, expecting minimum value 3GB for {storage} storage driver.",
            size.map_or_else(|| "None".to_string(), |v| v.to_string())
        ))),
    }
}

/// `Validator` checks of `magnum/api/validation.py` (server type, network and volume driver),
/// with `[cluster_template] kubernetes_allowed_network_drivers`.
fn validate_drivers(t: &ClusterTemplate, allowed_network_drivers: &[String]) -> ApiResult<()> {
    // `Validator.get_coe_validator`: WSME drops the Enum's `mandatory`, so a missing coe
    // gets this far.
    if t.coe.as_deref() != Some("kubernetes") {
        return Err(ApiError::InvalidParameterValue(format!(
            "Requested COE type {} is not supported.",
            // WSME's `Unset` sentinel, as Magnum prints it.
            t.coe.as_deref().unwrap_or("Unset")
        )));
    }
    let server_type = t.server_type.as_deref().unwrap_or("vm");
    if !["vm", "bm"].contains(&server_type) {
        return Err(ApiError::InvalidParameterValue(format!(
            "Server type {server_type} is not supported, expecting a vm/bm/unspecified server type."
        )));
    }
    // `_enforce_network_driver_types` validates the default when none is named.
    let nd = t
        .network_driver
        .as_deref()
        .unwrap_or(DEFAULT_NETWORK_DRIVER);
    if !NETWORK_DRIVERS.contains(&nd) {
        return Err(ApiError::InvalidParameterValue(format!(
            "Network driver type {nd} is not supported, expecting a flannel/calico/cilium/unspecified network driver."
        )));
    }
    if !allowed_network_drivers
        .iter()
        .any(|a| a == "all" || a == nd)
    {
        // Magnum's text ends with a space.
        return Err(ApiError::InvalidParameterValue(format!(
            "Network driver type {nd} is not allowed, expecting a {}/unspecified network driver. ",
            allowed_network_drivers.join("/")
        )));
    }
    if let Some(vd) = &t.volume_driver {
        if !VOLUME_DRIVERS.contains(&vd.as_str()) {
            return Err(ApiError::InvalidParameterValue(format!(
                "Volume driver type {vd} is not supported, expecting a cinder/unspecified volume driver."
            )));
        }
    }
    Ok(())
}

/// Mirrors `ClusterTemplatesController.post` (201 with the object and a Location header).
/// Without Glance, `cluster_distro` is taken from the body rather than the image.
async fn create_template(
    State(state): State<AppState>,
    ctx: RequestContext,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
    bytes: Bytes,
) -> ApiResult<Response> {
    Query::parse(raw.as_deref(), &[])?;
    let b = Body::parse(&bytes, "cluster_template", WRITABLE, READ_ONLY)?;
    b.mandatory("image_id")?;
    let mut t = ClusterTemplate::default();
    template_from_body(&b, &mut t)?;
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
    t.uuid = b
        .raw()
        .get("uuid")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
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

/// Mirrors `ClusterTemplatesController.patch` (200 with the object).
async fn update_template(
    State(state): State<AppState>,
    ctx: RequestContext,
    headers: HeaderMap,
    Path(ident): Path<String>,
    RawQuery(raw): RawQuery,
    bytes: Bytes,
) -> ApiResult<Json<Value>> {
    Query::parse(raw.as_deref(), &[])?;
    let ops = jsonpatch::parse(&bytes, &BASE_INTERNAL, NON_REMOVABLE)?;
    let all_tenants = admin_all_tenants(&state, &ctx, "clustertemplate:update_all_projects")?;
    let scope = lookup::template_scope(&ctx, all_tenants);
    let current = lookup::template(&state, &scope, &ident).await?;
    enforce_on(
        &state,
        &ctx,
        "clustertemplate:update",
        current.project_id.as_deref(),
        current.user_id.as_deref(),
    )?;
    let mut doc = template_doc(&current);
    jsonpatch::apply(&mut doc, &ops)?;
    // Fields that are not API attributes were added by the patch: WSME refuses them.
    for k in ["project_id", "user_id", "created_at", "updated_at", "uuid"] {
        doc.remove(k);
    }
    if let Some(Value::String(s)) = doc.get("labels").cloned() {
        let parsed = super::pyliteral::parse(&s)
            .ok_or_else(|| ApiError::invalid_input("labels", &s, "Value not a valid dict"))?;
        doc.insert("labels".into(), parsed);
    }
    let patched = Body::from_map("cluster_template", doc);
    let mut t = current.clone();
    template_from_body(&patched, &mut t)?;
    validate_drivers(
        &t,
        &state
            .config
            .cluster_template
            .kubernetes_allowed_network_drivers,
    )?;
    if t.public != current.public || t.hidden != current.hidden {
        enforce(&state, &ctx, "clustertemplate:publish")
            .map_err(|_| ApiError::ClusterTemplatePublishDenied)?;
    }
    if state.store.clusters_using_template(&current.uuid).await? > 0
        && !referenced_update_allowed(&current, &t)
    {
        return Err(ApiError::ClusterTemplateReferenced(current.uuid.clone()));
    }
    state.store.update_template(&t).await?;
    let mut saved = state
        .store
        .template_by_uuid(&t.uuid)
        .await?
        .ok_or_else(|| ApiError::ClusterTemplateNotFound(ident.clone()))?;
    // `cluster_template.save()` does not refresh the object: Magnum's answer carries the
    // `updated_at` from before the update.
    saved.updated_at = current.updated_at.clone();
    Ok(Json(render(&saved, &base_url(&headers))))
}

/// `_do_update_cluster_template`: a template used by clusters may only be renamed, or have
/// exactly one of `public` (to true), `hidden` or `tags` (to a value) changed.
fn referenced_update_allowed(current: &ClusterTemplate, new: &ClusterTemplate) -> bool {
    let before = template_doc(current);
    let after = template_doc(new);
    let changed: Vec<&str> = after
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(*v))
        .map(|(k, _)| k.as_str())
        .filter(|k| !matches!(*k, "created_at" | "updated_at"))
        .collect();
    match changed.as_slice() {
        ["name"] | ["hidden"] => true,
        ["public"] => new.public == Some(true),
        ["tags"] => new.tags.is_some(),
        _ => false,
    }
}

/// Mirrors `ClusterTemplatesController.delete` (204).
async fn delete_template(
    State(state): State<AppState>,
    ctx: RequestContext,
    Path(ident): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<StatusCode> {
    Query::parse(raw.as_deref(), &[])?;
    let all_tenants = admin_all_tenants(&state, &ctx, "clustertemplate:delete_all_projects")?;
    let scope = lookup::template_scope(&ctx, all_tenants);
    let t = lookup::template(&state, &scope, &ident).await?;
    enforce_on(
        &state,
        &ctx,
        "clustertemplate:delete",
        t.project_id.as_deref(),
        t.user_id.as_deref(),
    )?;
    if state.store.clusters_using_template(&t.uuid).await? > 0 {
        // `destroy()` passes the template's uuid, whatever identifier the client used.
        return Err(ApiError::ClusterTemplateReferenced(t.uuid.clone()));
    }
    state.store.delete_template(t.id).await?;
    Ok(StatusCode::NO_CONTENT)
}
