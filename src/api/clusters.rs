//! `/v1/clusters` (`magnum/api/controllers/v1/cluster.py`).

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::{Extension, Json};
use serde_json::{json, Map, Value};

use super::authz::{admin_all_tenants, enforce, enforce_on};
use super::body::{check_name_pattern, member_post_error, Body};
use super::cluster_actions::resize_refused;
use super::jsonpatch::{self, BASE_INTERNAL};
use super::lookup;
use super::microversion::Version;
use super::query::{base_url, check_marker, next_link, PageArgs, Query, PAGINATION_ARGS};
use super::routes::Routes;
use crate::error::{ApiError, ApiResult};
use crate::model::{
    status, Cluster, ClusterCounts, NodeGroup, RequestContext, Tenancy, ROLE_MASTER, ROLE_WORKER,
};
use crate::state::AppState;
use crate::store::operations::{AcceptResize, NewOperation, OpPayload};
use crate::store::{ClusterBy, ClusterSet, Table};

pub fn routes() -> Routes {
    Routes::default()
        .get("/v1/clusters", list_clusters)
        .post("/v1/clusters", create_cluster)
        .delete("/v1/clusters", missing_ident)
        .patch("/v1/clusters", missing_ident)
        .get("/v1/clusters/detail", list_clusters_detail)
        .get("/v1/clusters/{ident}", show_cluster)
        .post("/v1/clusters/{ident}", post_on_cluster)
        .patch("/v1/clusters/{ident}", update_cluster)
        .delete("/v1/clusters/{ident}", delete_cluster)
        .get("/v1/clusters/{ident}/detail", detail_under_cluster)
}

/// `fields.ClusterHealthStatus.ALL`.
const HEALTH_STATUSES: [&str; 3] = ["HEALTHY", "UNHEALTHY", "UNKNOWN"];

const WRITABLE: &[&str] = &[
    "uuid",
    "name",
    "cluster_template_id",
    "keypair",
    "node_count",
    "master_count",
    "docker_volume_size",
    "labels",
    "master_flavor_id",
    "flavor_id",
    "create_timeout",
    "status",
    "status_reason",
    "health_status",
    "health_status_reason",
    "discovery_url",
    "faults",
    "fixed_network",
    "fixed_subnet",
    "floating_ip_enabled",
    "merge_labels",
    "labels_overridden",
    "labels_added",
    "labels_skipped",
    "master_lb_enabled",
];
const READ_ONLY: &[&str] = &[
    "links",
    "stack_id",
    "cluster_id",
    "api_address",
    "coe_version",
    "container_version",
    "project_id",
    "user_id",
    "node_addresses",
    "master_addresses",
    "created_at",
    "updated_at",
];
/// `ClusterPatchType.internal_attrs`.
const PATCH_INTERNAL: &[&str] = &[
    "/created_at",
    "/id",
    "/links",
    "/updated_at",
    "/uuid",
    "/project_id",
    "/user_id",
    "/api_address",
    "/node_addresses",
    "/master_addresses",
    "/stack_id",
    "/cluster_id",
    "/ca_cert_ref",
    "/magnum_cert_ref",
    "/etcd_ca_cert_ref",
    "/front_proxy_ca_cert_ref",
];
const SUMMARY_FIELDS: &[&str] = &[
    "uuid",
    "name",
    "cluster_template_id",
    "keypair",
    "docker_volume_size",
    "labels",
    "node_count",
    "status",
    "master_flavor_id",
    "flavor_id",
    "create_timeout",
    "master_count",
    "health_status",
    "links",
    "merge_labels",
];

/// `api_utils.get_labels_diff(parent, labels)` → (overridden, added, skipped).
pub fn labels_diff(
    parent: &Map<String, Value>,
    labels: &Map<String, Value>,
) -> (Value, Value, Value) {
    let mut overridden = Map::new();
    let mut added = Map::new();
    let skipped: Map<String, Value> = parent
        .iter()
        .filter(|(k, _)| !labels.contains_key(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, v) in labels {
        match parent.get(k) {
            Some(pv) if pv != v => {
                overridden.insert(k.clone(), pv.clone());
            }
            Some(_) => {}
            None => {
                added.insert(k.clone(), v.clone());
            }
        }
    }
    (
        Value::Object(overridden),
        Value::Object(added),
        Value::Object(skipped),
    )
}

/// The API dictionary of a cluster with its computed counts (`Cluster.as_dict()` plus the
/// nodegroup sums), without links and label diffs.
pub fn cluster_doc(c: &Cluster, counts: &ClusterCounts) -> Map<String, Value> {
    let v = json!({
        "uuid": c.uuid,
        "name": c.name,
        "cluster_template_id": c.cluster_template_id,
        "keypair": c.keypair,
        "node_count": counts.node_count,
        "master_count": counts.master_count,
        "docker_volume_size": c.docker_volume_size,
        "labels": c.labels,
        "master_flavor_id": c.master_flavor_id,
        "flavor_id": c.flavor_id,
        "create_timeout": c.create_timeout,
        "stack_id": c.stack_id,
        "status": c.status,
        "status_reason": c.status_reason,
        "health_status": c.health_status,
        "health_status_reason": c.health_status_reason,
        "discovery_url": c.discovery_url,
        "api_address": c.api_address,
        "coe_version": c.coe_version,
        "container_version": c.container_version,
        "project_id": c.project_id,
        "user_id": c.user_id,
        "node_addresses": counts.node_addresses,
        "master_addresses": counts.master_addresses,
        "fixed_network": c.fixed_network,
        "fixed_subnet": c.fixed_subnet,
        "floating_ip_enabled": c.floating_ip_enabled,
        "master_lb_enabled": c.master_lb_enabled,
        "created_at": c.created_at,
        "updated_at": c.updated_at,
    });
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// The part of [`cluster_doc`] a summary keeps (plus `stack_id`, which becomes
/// `cluster_id` at 1.13), in the same key order, without building the rest: [`render`] then
/// runs the same steps on it as on the full dictionary, so the keys come out in the same
/// order.
fn summary_doc(c: &Cluster, counts: &ClusterCounts) -> Map<String, Value> {
    let text = |v: &Option<String>| v.as_ref().map_or(Value::Null, |s| Value::String(s.clone()));
    let int = |v: Option<i64>| v.map_or(Value::Null, Value::from);
    let mut m = Map::new();
    m.insert("uuid".into(), Value::String(c.uuid.clone()));
    m.insert("name".into(), text(&c.name));
    m.insert("cluster_template_id".into(), text(&c.cluster_template_id));
    m.insert("keypair".into(), text(&c.keypair));
    m.insert("node_count".into(), Value::from(counts.node_count));
    m.insert("master_count".into(), Value::from(counts.master_count));
    m.insert("docker_volume_size".into(), int(c.docker_volume_size));
    m.insert(
        "labels".into(),
        c.labels.clone().map_or(Value::Null, Value::Object),
    );
    m.insert("master_flavor_id".into(), text(&c.master_flavor_id));
    m.insert("flavor_id".into(), text(&c.flavor_id));
    m.insert("create_timeout".into(), int(c.create_timeout));
    m.insert("stack_id".into(), text(&c.stack_id));
    m.insert("status".into(), text(&c.status));
    m.insert("health_status".into(), text(&c.health_status));
    m
}

/// `Cluster.convert_with_links`: summary (`expand = false`) or detail.
fn render(
    c: &Cluster,
    counts: &ClusterCounts,
    parent_labels: &Map<String, Value>,
    version: Version,
    expand: bool,
    base: &str,
) -> Value {
    let mut doc = if expand {
        cluster_doc(c, counts)
    } else {
        summary_doc(c, counts)
    };
    let use_cluster_id = version.at_least(1, 13);
    doc.insert("merge_labels".into(), Value::Bool(false));
    doc.insert(
        "links".into(),
        json!([
            {"href": format!("{base}/v1/clusters/{}", c.uuid), "rel": "self"},
            {"href": format!("{base}/clusters/{}", c.uuid), "rel": "bookmark"},
        ]),
    );
    if use_cluster_id {
        let stack = doc.remove("stack_id").unwrap_or(Value::Null);
        doc.insert("cluster_id".into(), stack);
    }
    if !expand {
        let id_key = if use_cluster_id {
            "cluster_id"
        } else {
            "stack_id"
        };
        doc.retain(|k, _| SUMMARY_FIELDS.contains(&k.as_str()) || k == id_key);
    } else {
        let labels = c.labels.clone().unwrap_or_default();
        let (o, a, s) = labels_diff(parent_labels, &labels);
        doc.insert("labels_overridden".into(), o);
        doc.insert("labels_added".into(), a);
        doc.insert("labels_skipped".into(), s);
    }
    Value::Object(doc)
}

/// Loads what rendering needs for a page of clusters: counts and template labels.
async fn render_many(
    state: &AppState,
    clusters: &[Cluster],
    version: Version,
    expand: bool,
    base: &str,
) -> ApiResult<Vec<Value>> {
    let uuids: Vec<String> = clusters.iter().map(|c| c.uuid.clone()).collect();
    // The summary shows the counts but not the addresses.
    let counts = state.store.counts_of_clusters(&uuids, expand).await?;
    let mut parents: HashMap<String, Map<String, Value>> = HashMap::new();
    if expand {
        for c in clusters {
            if let Some(t) = &c.cluster_template_id {
                if !parents.contains_key(t) {
                    let labels = state.store.template_labels(t).await?.unwrap_or_default();
                    parents.insert(t.clone(), labels);
                }
            }
        }
    }
    let empty = Map::new();
    let none = ClusterCounts::default();
    Ok(clusters
        .iter()
        .map(|c| {
            let counts = counts.get(&c.uuid).unwrap_or(&none);
            let parent = c
                .cluster_template_id
                .as_ref()
                .and_then(|t| parents.get(t))
                .unwrap_or(&empty);
            render(c, counts, parent, version, expand, base)
        })
        .collect())
}

/// Mirrors `ClustersController.get_all`.
async fn list_clusters(
    State(state): State<AppState>,
    Extension(version): Extension<Version>,
    ctx: RequestContext,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    let q = Query::parse(raw.as_deref(), &PAGINATION_ARGS)?;
    let args = PageArgs::from_query(&q)?;
    enforce(&state, &ctx, "cluster:get_all")?;
    collection(&state, &ctx, version, &headers, &args, false).await
}

/// Mirrors `ClustersController.detail`.
async fn list_clusters_detail(
    State(state): State<AppState>,
    Extension(version): Extension<Version>,
    ctx: RequestContext,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    let q = Query::parse(raw.as_deref(), &PAGINATION_ARGS)?;
    let args = PageArgs::from_query(&q)?;
    enforce(&state, &ctx, "cluster:detail")?;
    collection(&state, &ctx, version, &headers, &args, true).await
}

/// `DELETE`/`PATCH` on the collection: WSME misses the identifier argument.
async fn missing_ident() -> ApiError {
    ApiError::MissingArgument("cluster_ident".into())
}

async fn post_on_cluster(Path(ident): Path<String>) -> ApiError {
    member_post_error("cluster", "Cluster", &ident)
}

/// `GET /v1/clusters/{x}/detail`: WSME binds `{x}` to `detail`'s `marker` (a uuid), then
/// Magnum raises `HTTPNotFound` without arguments.
async fn detail_under_cluster(
    State(state): State<AppState>,
    Path(ident): Path<String>,
    ctx: RequestContext,
) -> ApiResult<Json<Value>> {
    check_marker(&ident)?;
    enforce(&state, &ctx, "cluster:detail")?;
    Err(ApiError::ResourceNotFoundUnformatted)
}

async fn collection(
    state: &AppState,
    ctx: &RequestContext,
    version: Version,
    headers: &HeaderMap,
    args: &PageArgs,
    expand: bool,
) -> ApiResult<Json<Value>> {
    let rule = if expand {
        "cluster:detail_all_projects"
    } else {
        "cluster:get_all_all_projects"
    };
    let all_tenants = admin_all_tenants(state, ctx, rule)?;
    let tenancy = Tenancy::of(ctx, all_tenants);
    let (limit, dir) = args.limit_and_dir(state.config.api.max_limit)?;
    let marker_id = match &args.marker {
        Some(m) => Some(
            state
                .store
                .find_clusters(&tenancy, ClusterBy::Uuid(m))
                .await?
                .first()
                .map(|c| c.id)
                .ok_or_else(|| ApiError::ClusterNotFound(m.clone()))?,
        ),
        None => None,
    };
    let page = args.page(limit, dir, marker_id, Table::Cluster)?;
    let clusters = state.store.list_clusters(&tenancy, &page).await?;
    let base = base_url(headers);
    let items = render_many(state, &clusters, version, expand, &base).await?;
    let resource = if expand {
        "clusters/detail"
    } else {
        "clusters"
    };
    let mut body = json!({ "clusters": items });
    if clusters.len() as i64 == limit {
        if let Some(last) = clusters.last() {
            body["next"] =
                next_link(&base, resource, limit, &args.sort_key, dir, &last.uuid).into();
        }
    }
    Ok(Json(body))
}

/// Mirrors `ClustersController.get_one`, with `faults` for failed clusters.
async fn show_cluster(
    State(state): State<AppState>,
    Extension(version): Extension<Version>,
    ctx: RequestContext,
    headers: HeaderMap,
    Path(ident): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    Query::parse(raw.as_deref(), &[])?;
    let all_tenants = admin_all_tenants(&state, &ctx, "cluster:get_one_all_projects")?;
    let c = lookup::cluster(&state, &Tenancy::of(&ctx, all_tenants), &ident).await?;
    enforce_on(
        &state,
        &ctx,
        "cluster:get",
        c.project_id.as_deref(),
        c.user_id.as_deref(),
    )?;
    let base = base_url(&headers);
    let mut items = render_many(&state, std::slice::from_ref(&c), version, true, &base).await?;
    let mut doc = items.pop().unwrap_or(Value::Null);
    if status::FAILED.contains(&c.status.as_deref().unwrap_or_default()) {
        let ngs = state
            .store
            .nodegroups_of_clusters(std::slice::from_ref(&c.uuid))
            .await?;
        let faults: Map<String, Value> = ngs
            .iter()
            .filter(|ng| ng.status.as_deref().is_some_and(|s| s.ends_with("FAILED")))
            .map(|ng| (ng.name.clone(), json!(ng.status_reason)))
            .collect();
        doc["faults"] = Value::Object(faults);
    }
    Ok(Json(doc))
}

/// Mirrors `ClustersController.post` (both microversion variants): 202 `{"uuid"}`.
async fn create_cluster(
    State(state): State<AppState>,
    Extension(version): Extension<Version>,
    ctx: RequestContext,
    RawQuery(raw): RawQuery,
    bytes: Bytes,
) -> ApiResult<(StatusCode, Json<Value>)> {
    Query::parse(raw.as_deref(), &[])?;
    let b = Body::parse(&bytes, "cluster", WRITABLE, READ_ONLY)?;
    // Validated, then ignored: the new cluster always gets a fresh uuid.
    b.uuid("uuid")?;
    // WSME attribute validation.
    let name = b.string("name", 1, 242)?;
    if let Some(n) = &name {
        check_name_pattern("name", n)?;
    }
    b.mandatory("cluster_template_id")?;
    let template_ident = b.text("cluster_template_id")?.unwrap_or_default();
    let keypair = b.string("keypair", 1, 255)?;
    let node_count = b.int("node_count", Some(0))?.unwrap_or(1);
    let master_count = b.int("master_count", Some(1))?.unwrap_or(1);
    let docker_volume_size = b.int("docker_volume_size", Some(1))?;
    let labels = b.labels("labels")?;
    let master_flavor_id = b.string("master_flavor_id", 1, 255)?;
    let flavor_id = b.string("flavor_id", 1, 255)?;
    // WSME's default (60) is for a missing key; an explicit null (gophercloud sends one when
    // the caller leaves it unset) is stored and shown as null, as Magnum does.
    let create_timeout = match b.raw().get("create_timeout") {
        Some(Value::Null) => None,
        _ => Some(b.int("create_timeout", Some(0))?.unwrap_or(60)),
    };
    let fixed_network = b.string("fixed_network", 1, 255)?;
    let fixed_subnet = b.string("fixed_subnet", 1, 255)?;
    let floating_ip_enabled = b.boolean("floating_ip_enabled")?;
    let master_lb_enabled = b.boolean("master_lb_enabled")?;
    let merge_labels = b.boolean("merge_labels")?.unwrap_or(false);
    let discovery_url = b.text("discovery_url")?;
    // Accepted and ignored, but typed as WSME types them (a wrong type is a 400 there too).
    b.one_of("status", &status::ALL)?;
    b.text("status_reason")?;
    b.one_of("health_status", &HEALTH_STATUSES)?;
    b.text_dict("health_status_reason")?;
    b.text_dict("faults")?;
    for key in ["labels_overridden", "labels_added", "labels_skipped"] {
        b.label_values(key)?;
    }

    // Decorators: template lookup (400 instead of 404 below 1.10), cluster type, master size.
    let scope = lookup::template_scope(&ctx, false);
    let template = match lookup::template(&state, &scope, &template_ident).await {
        Err(ApiError::ClusterTemplateNotFound(t)) if !version.at_least(1, 10) => {
            return Err(ApiError::InvalidParameterValue(format!(
                "ClusterTemplate {t} could not be found."
            )))
        }
        other => other?,
    };
    // Magnum resolves by triple only here; magnum-rs uses the template's driver (named, or
    // by triple), because without Glance a template may have no distro.
    let driver = state.drivers.for_template(&template)?;
    super::cluster_templates::enforce_volume_storage_size(&template, docker_volume_size)?;
    driver.validate_master_size(master_count)?;
    if !version.at_least(1, 10) && node_count == 0 {
        return Err(ApiError::ZeroNodeCountNotSupported);
    }
    enforce(&state, &ctx, "cluster:create")?;
    let project = ctx.project_id.clone().unwrap_or_default();
    // The project's row in Magnum's `quotas` table, else `[quotas] max_clusters_per_project`.
    let limit =
        super::quotas::effective_limit(&state, &project, super::quotas::CLUSTER_RESOURCE).await?;
    if state.store.count_project_clusters(&project).await? >= limit {
        return Err(ApiError::ResourceLimitExceeded(format!(
            "You have reached the maximum clusters per project, {limit}. You may delete a cluster to make room for a new one."
        )));
    }
    if template.hidden.unwrap_or(false) && !ctx.is_admin {
        return Err(ApiError::NotAuthorized);
    }
    let template_labels = template.labels.clone().unwrap_or_default();
    let labels = match labels {
        Some(l) if !l.is_empty() => {
            if merge_labels {
                let mut merged = template_labels.clone();
                merged.extend(l);
                merged
            } else {
                l
            }
        }
        _ => template_labels,
    };
    let floating_ip_enabled = floating_ip_enabled.or(template.floating_ip_enabled);
    let master_lb_enabled = master_lb_enabled.or(template.master_lb_enabled);
    if master_count > 1 && !master_lb_enabled.unwrap_or(false) {
        return Err(ApiError::InvalidParameterValue(
            "master_count must be 1 when master_lb_enabled is False".into(),
        ));
    }
    let or_template =
        |v: Option<String>, t: &Option<String>| v.filter(|s| !s.is_empty()).or_else(|| t.clone());
    let cluster = Cluster {
        uuid: uuid::Uuid::new_v4().to_string(),
        project_id: ctx.project_id.clone(),
        user_id: ctx.user_id.clone(),
        name: Some(name.unwrap_or_else(|| format!("{}-cluster", crate::names::generate()))),
        cluster_template_id: Some(template.uuid.clone()),
        keypair: keypair.or_else(|| template.keypair_id.clone()),
        docker_volume_size: docker_volume_size.or(template.docker_volume_size),
        labels: Some(labels.clone()),
        master_flavor_id: or_template(master_flavor_id, &template.master_flavor_id),
        flavor_id: or_template(flavor_id, &template.flavor_id),
        status: Some(status::CREATE_IN_PROGRESS.into()),
        create_timeout,
        discovery_url,
        fixed_network: or_template(fixed_network, &template.fixed_network),
        fixed_subnet: or_template(fixed_subnet, &template.fixed_subnet),
        floating_ip_enabled,
        master_lb_enabled,
        ..Cluster::default()
    };
    let nodegroups = default_nodegroups(&cluster, &template, master_count, node_count);
    let op = NewOperation {
        cluster_uuid: cluster.uuid.clone(),
        nodegroup_id: None,
        old_count: None,
        new_count: None,
        payload: OpPayload::CreateCluster { create_timeout },
    };
    state
        .store
        .insert_cluster(&cluster, &nodegroups, Some(&op))
        .await?;
    state.operations.kick();
    Ok((StatusCode::ACCEPTED, Json(json!({"uuid": cluster.uuid}))))
}

/// `conductor.utils._get_nodegroup_object` for the master and the worker.
fn default_nodegroups(
    c: &Cluster,
    t: &crate::model::ClusterTemplate,
    master_count: i64,
    node_count: i64,
) -> Vec<NodeGroup> {
    let labels = c.labels.clone().unwrap_or_default();
    let make = |role: &str, count: i64| {
        let master = role == ROLE_MASTER;
        NodeGroup {
            uuid: uuid::Uuid::new_v4().to_string(),
            name: format!("default-{role}"),
            cluster_id: c.uuid.clone(),
            project_id: c.project_id.clone().unwrap_or_default(),
            docker_volume_size: c.docker_volume_size.or(t.docker_volume_size),
            labels: Some(labels.clone()),
            flavor_id: if master {
                c.master_flavor_id
                    .clone()
                    .or_else(|| t.master_flavor_id.clone())
            } else {
                c.flavor_id.clone().or_else(|| t.flavor_id.clone())
            },
            image_id: t.image_id.clone(),
            node_count: count,
            min_node_count: if master {
                0
            } else {
                labels
                    .get("min_node_count")
                    .and_then(|v| v.as_str().and_then(|s| s.parse().ok()).or(v.as_i64()))
                    .unwrap_or(0)
            },
            role: Some(role.into()),
            is_default: Some(true),
            status: Some(status::CREATE_IN_PROGRESS.into()),
            ..NodeGroup::default()
        }
    };
    vec![
        make(ROLE_MASTER, master_count),
        make(ROLE_WORKER, node_count),
    ]
}

/// Mirrors `ClustersController.patch`: only `node_count` (applied to the default worker),
/// `health_status` and `health_status_reason` may change. 202 `{"uuid"}`.
async fn update_cluster(
    State(state): State<AppState>,
    Extension(version): Extension<Version>,
    ctx: RequestContext,
    Path(ident): Path<String>,
    RawQuery(raw): RawQuery,
    bytes: Bytes,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let allowed: &[&str] = if version.at_least(1, 3) {
        &["rollback"]
    } else {
        &[]
    };
    let q = Query::parse(raw.as_deref(), allowed)?;
    if let Some(r) = q.get("rollback") {
        // A query argument: WSME frames the converter's error.
        super::body::bool_from_string(r).map_err(|e| {
            ApiError::invalid_input(
                "rollback",
                r,
                format!("unable to convert to boolean. Error: {e}"),
            )
        })?;
    }
    let ops = jsonpatch::parse(&bytes, PATCH_INTERNAL, &["/cluster_template_id"])?;
    let _ = BASE_INTERNAL;
    let all_tenants = admin_all_tenants(&state, &ctx, "cluster:update_all_projects")?;
    let c = lookup::cluster(&state, &Tenancy::of(&ctx, all_tenants), &ident).await?;
    enforce_on(
        &state,
        &ctx,
        "cluster:update",
        c.project_id.as_deref(),
        c.user_id.as_deref(),
    )?;
    enforce(&state, &ctx, "cluster:update_health_status")?;
    let ngs = state
        .store
        .nodegroups_of_clusters(std::slice::from_ref(&c.uuid))
        .await?;
    let counts = ClusterCounts::from_nodegroups(&ngs);
    let before = cluster_doc(&c, &counts);
    let mut after = before.clone();
    jsonpatch::apply(&mut after, &ops)?;
    for key in ["labels", "health_status_reason"] {
        if let Some(Value::String(s)) = after.get(key).cloned() {
            let parsed = super::pyliteral::parse(&s)
                .ok_or_else(|| ApiError::invalid_input(key, &s, "Value not a valid dict"))?;
            after.insert(key.into(), parsed);
        }
    }
    let patched = Body::from_map("cluster", after.clone());
    let new_node_count = patched.int("node_count", Some(0))?.unwrap_or(1);
    patched.int("master_count", Some(1))?;
    let health_status = patched.string("health_status", 0, 20)?;
    if let Some(h) = &health_status {
        if !HEALTH_STATUSES.contains(&h.as_str()) {
            return Err(ApiError::invalid_input(
                "health_status",
                h,
                "Value should be one of: HEALTHY, UNHEALTHY, UNKNOWN",
            ));
        }
    }
    let health_reason = patched.object("health_status_reason")?;
    let mut delta: Vec<&str> = after
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(*v))
        .map(|(k, _)| k.as_str())
        .filter(|k| !["node_count", "health_status", "health_status_reason"].contains(k))
        .collect();
    if !delta.is_empty() {
        delta.sort_unstable();
        return Err(ApiError::InvalidParameterValue(format!(
            "cannot change cluster property(ies) {}.",
            delta.join(", ")
        )));
    }
    let worker = ngs
        .iter()
        .find(|ng| ng.is_default() && !ng.is_master())
        .cloned();
    let touches_count = ops.iter().any(|p| p.path == "/node_count");
    let node_count = if touches_count {
        new_node_count
    } else {
        worker.as_ref().map_or(1, |w| w.node_count)
    };
    if node_count == 0 && !version.at_least(1, 10) {
        return Err(ApiError::ZeroNodeCountNotSupported);
    }
    let mut changes: Vec<ClusterSet> = Vec::new();
    if health_status != c.health_status {
        changes.push(ClusterSet::HealthStatus(health_status));
    }
    if health_reason != c.health_status_reason {
        changes.push(ClusterSet::HealthStatusReason(health_reason));
    }
    match worker.filter(|w| w.node_count != node_count) {
        // No resize: the health fields alone.
        None => {
            if !changes.is_empty() {
                state.store.update_cluster(c.id, &changes).await?;
            }
        }
        // The health fields and the resize in one transaction, so a refused resize writes
        // nothing at all.
        Some(w) => {
            // The conductor's cluster_update: only from the *_COMPLETE states.
            let current = c.status.clone().unwrap_or_default();
            if !status::allows_update(&current) {
                return Err(ApiError::NotSupported(format!(
                    "Updating a cluster when status is \"{current}\""
                )));
            }
            let op = NewOperation {
                cluster_uuid: c.uuid.clone(),
                nodegroup_id: Some(w.id),
                old_count: None,
                new_count: Some(node_count),
                payload: OpPayload::resize(),
            };
            let accepted = state
                .store
                .accept_resize(AcceptResize {
                    cluster_id: c.id,
                    nodegroup_id: w.id,
                    seen: w.node_count,
                    new_count: node_count,
                    op,
                    allowed: status::allows_update,
                    cluster_changes: changes,
                })
                .await?;
            accepted.map_err(|refused| resize_refused(refused, &ident, &w.name, "Updating"))?;
            state.operations.kick();
        }
    }
    Ok((StatusCode::ACCEPTED, Json(json!({"uuid": c.uuid}))))
}

/// Mirrors `ClustersController.delete` (204; the driver deletes asynchronously).
async fn delete_cluster(
    State(state): State<AppState>,
    ctx: RequestContext,
    Path(ident): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<StatusCode> {
    Query::parse(raw.as_deref(), &[])?;
    let all_tenants = admin_all_tenants(&state, &ctx, "cluster:delete_all_projects")?;
    let c = lookup::cluster(&state, &Tenancy::of(&ctx, all_tenants), &ident).await?;
    enforce_on(
        &state,
        &ctx,
        "cluster:delete",
        c.project_id.as_deref(),
        c.user_id.as_deref(),
    )?;
    let batch = crate::store::operations::Batch::default()
        .cluster(c.id, ClusterSet::status(status::DELETE_IN_PROGRESS))
        .operation(NewOperation {
            cluster_uuid: c.uuid.clone(),
            nodegroup_id: None,
            old_count: None,
            new_count: None,
            payload: OpPayload::DeleteCluster,
        });
    state.store.commit(batch).await?;
    state.operations.kick();
    Ok(StatusCode::NO_CONTENT)
}
