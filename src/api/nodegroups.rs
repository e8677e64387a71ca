//! `/v1/clusters/{cluster}/nodegroups` (`magnum/api/controllers/v1/nodegroup.py`), from 1.9.

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::{Extension, Json};
use serde_json::{json, Map, Value};

use super::authz::{admin_all_tenants, enforce};
use super::body::{member_post_error, Body};
use super::clusters::labels_diff;
use super::jsonpatch::{self, BASE_INTERNAL};
use super::lookup;
use super::microversion::Version;
use super::query::{base_url, next_link, PageArgs, Query};
use super::routes::Routes;
use crate::error::{ApiError, ApiResult};
use crate::model::{status, Cluster, NodeGroup, RequestContext, Tenancy, ROLE_MASTER};
use crate::state::AppState;
use crate::store::nodegroups::NodeGroupFilter;
use crate::store::operations::{Batch, NewOperation, OpPayload};
use crate::store::{ClusterSet, NodeGroupSet, Table};

const MIN_VERSION: Version = Version::new(1, 9);
/// The method Magnum's 406 names on every nodegroup route below 1.9: pecan looks the
/// controller's attributes up in `dir()` order, and the versioned `delete` comes first.
const VERSIONED_NAME: &str = "delete";

pub fn routes() -> Routes {
    Routes::default()
        .get("/v1/clusters/{cluster}/nodegroups", list_nodegroups)
        .post("/v1/clusters/{cluster}/nodegroups", create_nodegroup)
        .delete("/v1/clusters/{cluster}/nodegroups", missing_nodegroup_ident)
        .patch("/v1/clusters/{cluster}/nodegroups", missing_nodegroup_ident)
        .get(
            "/v1/clusters/{cluster}/nodegroups/{nodegroup}",
            show_nodegroup,
        )
        .post(
            "/v1/clusters/{cluster}/nodegroups/{nodegroup}",
            post_on_nodegroup,
        )
        .patch(
            "/v1/clusters/{cluster}/nodegroups/{nodegroup}",
            update_nodegroup,
        )
        .delete(
            "/v1/clusters/{cluster}/nodegroups/{nodegroup}",
            delete_nodegroup,
        )
}

const WRITABLE: &[&str] = &[
    "id",
    "uuid",
    "name",
    "cluster_id",
    "docker_volume_size",
    "labels",
    "flavor_id",
    "image_id",
    "node_count",
    "role",
    "min_node_count",
    "max_node_count",
    "is_default",
    "status",
    "status_reason",
    "version",
    "merge_labels",
    "labels_overridden",
    "labels_added",
    "labels_skipped",
    "node_labels",
    "node_taints",
];
const READ_ONLY: &[&str] = &[
    "project_id",
    "links",
    "node_addresses",
    "stack_id",
    "created_at",
    "updated_at",
];
const PATCH_INTERNAL_EXTRA: &[&str] = &[
    "/name",
    "/cluster_id",
    "/project_id",
    "/docker_volume_size",
    "/labels",
    "/flavor_id",
    "/image_id",
    "/node_addresses",
    "/node_count",
    "/role",
    "/is_default",
    "/stack_id",
    "/status",
    "/status_reason",
    "/version",
];
const SUMMARY_FIELDS: &[&str] = &[
    "uuid",
    "name",
    "flavor_id",
    "node_count",
    "role",
    "is_default",
    "image_id",
    "status",
    "stack_id",
];
const TAINT_EFFECTS: [&str; 3] = ["NoSchedule", "PreferNoSchedule", "NoExecute"];
const TAINT_FIELDS: [&str; 3] = ["key", "value", "effect"];
const KUBELET_ALLOWED_NAMESPACES: [&str; 2] = ["kubelet.kubernetes.io", "node.kubernetes.io"];
const KUBELET_ALLOWED_LABELS: [&str; 12] = [
    "beta.kubernetes.io/arch",
    "beta.kubernetes.io/instance-type",
    "beta.kubernetes.io/os",
    "failure-domain.beta.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "kubernetes.io/arch",
    "kubernetes.io/hostname",
    "kubernetes.io/os",
    "node.kubernetes.io/instance-type",
    "node.kubernetes.io/windows-build",
    "topology.kubernetes.io/region",
    "topology.kubernetes.io/zone",
];

fn nodegroup_doc(ng: &NodeGroup) -> Map<String, Value> {
    let v = json!({
        "id": ng.id,
        "uuid": ng.uuid,
        "name": ng.name,
        "cluster_id": ng.cluster_id,
        "project_id": ng.project_id,
        "docker_volume_size": ng.docker_volume_size,
        "labels": ng.labels,
        "flavor_id": ng.flavor_id,
        "image_id": ng.image_id,
        "node_addresses": ng.node_addresses,
        "node_count": ng.node_count,
        "role": ng.role,
        "max_node_count": ng.max_node_count,
        "min_node_count": ng.min_node_count,
        "is_default": ng.is_default,
        "stack_id": ng.stack_id,
        "status": ng.status,
        "status_reason": ng.status_reason,
        "version": ng.version,
        "node_labels": ng.node_labels,
        "node_taints": ng.node_taints,
        "created_at": ng.created_at,
        "updated_at": ng.updated_at,
    });
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn links(base: &str, cluster_uuid: &str, ng_uuid: &str) -> Value {
    json!([
        {"href": format!("{base}/v1/clusters/{cluster_uuid}/nodegroups/{ng_uuid}"), "rel": "self"},
        {"href": format!("{base}/clusters/{cluster_uuid}/nodegroups/{ng_uuid}"), "rel": "bookmark"},
    ])
}

/// `NodeGroup.convert(ng, expand=True)`: every field, links and label diffs against the
/// cluster's labels.
fn render_detail(mut doc: Map<String, Value>, cluster: &Cluster, base: &str) -> Value {
    let ng_uuid = doc
        .get("uuid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    doc.insert("links".into(), links(base, &cluster.uuid, &ng_uuid));
    let labels = doc
        .get("labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let (o, a, s) = labels_diff(&cluster.labels.clone().unwrap_or_default(), &labels);
    doc.insert("labels_overridden".into(), o);
    doc.insert("labels_added".into(), a);
    doc.insert("labels_skipped".into(), s);
    doc.insert("merge_labels".into(), Value::Bool(false));
    Value::Object(doc)
}

/// `NodeGroup.convert(ng, expand=False)`: nine fields, plus the WSME defaults of the
/// unset `min_node_count`, `max_node_count` and `merge_labels`.
fn render_summary(ng: &NodeGroup) -> Value {
    let mut doc = nodegroup_doc(ng);
    doc.retain(|k, _| SUMMARY_FIELDS.contains(&k.as_str()));
    doc.insert("min_node_count".into(), json!(0));
    doc.insert("max_node_count".into(), Value::Null);
    doc.insert("merge_labels".into(), Value::Bool(false));
    Value::Object(doc)
}

/// `DELETE`/`PATCH` on the collection: WSME misses the identifier argument.
async fn post_on_nodegroup(
    Extension(version): Extension<Version>,
    Path((_cluster, nodegroup)): Path<(String, String)>,
) -> ApiResult<()> {
    version.require(MIN_VERSION, VERSIONED_NAME)?;
    Err(member_post_error("nodegroup", "NodeGroup", &nodegroup))
}

async fn missing_nodegroup_ident(Extension(version): Extension<Version>) -> ApiResult<()> {
    version.require(MIN_VERSION, VERSIONED_NAME)?;
    Err(ApiError::MissingArgument("nodegroup_id".into()))
}

fn project_filter(ctx: &RequestContext) -> Option<String> {
    (!ctx.is_admin).then(|| ctx.project_id.clone().unwrap_or_default())
}

/// Mirrors `NodeGroupController.get_all` (1.9+).
async fn list_nodegroups(
    State(state): State<AppState>,
    Extension(version): Extension<Version>,
    ctx: RequestContext,
    headers: HeaderMap,
    Path(cluster_ident): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    version.require(MIN_VERSION, VERSIONED_NAME)?;
    let q = Query::parse(
        raw.as_deref(),
        &["marker", "limit", "sort_key", "sort_dir", "role"],
    )?;
    let args = PageArgs::from_query(&q)?;
    enforce(&state, &ctx, "nodegroup:get_all")?;
    let all_tenants = admin_all_tenants(&state, &ctx, "nodegroup:get_all_all_projects")?;
    let cluster = lookup::cluster(&state, &Tenancy::of(&ctx, all_tenants), &cluster_ident).await?;
    let filter = NodeGroupFilter {
        project_id: project_filter(&ctx),
        role: q.get("role").map(str::to_string),
    };
    let (limit, dir) = args.limit_and_dir(state.config.api.max_limit)?;
    let marker_id = match &args.marker {
        Some(m) => Some(lookup::nodegroup(&state, &ctx, &cluster.uuid, m).await?.id),
        None => None,
    };
    let page = args.page(limit, dir, marker_id, Table::NodeGroup)?;
    let ngs = state
        .store
        .list_nodegroups(&cluster.uuid, &filter, &page)
        .await?;
    let base = base_url(&headers);
    let mut body = json!({"nodegroups": ngs.iter().map(render_summary).collect::<Vec<_>>()});
    if ngs.len() as i64 == limit {
        if let Some(last) = ngs.last() {
            let resource = format!("clusters/{}/nodegroups", cluster.uuid);
            body["next"] =
                next_link(&base, &resource, limit, &args.sort_key, dir, &last.uuid).into();
        }
    }
    Ok(Json(body))
}

/// Mirrors `NodeGroupController.get_one` (1.9+).
async fn show_nodegroup(
    State(state): State<AppState>,
    Extension(version): Extension<Version>,
    ctx: RequestContext,
    headers: HeaderMap,
    Path((cluster_ident, ng_ident)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    version.require(MIN_VERSION, VERSIONED_NAME)?;
    Query::parse(raw.as_deref(), &[])?;
    enforce(&state, &ctx, "nodegroup:get")?;
    let all_tenants = admin_all_tenants(&state, &ctx, "nodegroup:get_one_all_projects")?;
    let cluster = lookup::cluster(&state, &Tenancy::of(&ctx, all_tenants), &cluster_ident).await?;
    let ng = lookup::nodegroup(&state, &ctx, &cluster.uuid, &ng_ident).await?;
    Ok(Json(render_detail(
        nodegroup_doc(&ng),
        &cluster,
        &base_url(&headers),
    )))
}

/// Reads the writable attributes of a nodegroup body (or a patched dictionary).
fn read_attrs(b: &Body, ng: &mut NodeGroup) -> ApiResult<()> {
    if b.has("name") {
        ng.name = b.string("name", 1, 255)?.unwrap_or_default();
    }
    ng.docker_volume_size = b
        .int("docker_volume_size", Some(1))?
        .or(ng.docker_volume_size);
    if let Some(l) = b.labels("labels")? {
        ng.labels = Some(l);
    }
    ng.flavor_id = b.string("flavor_id", 1, 255)?.or(ng.flavor_id.take());
    ng.image_id = b.string("image_id", 1, 255)?.or(ng.image_id.take());
    ng.node_count = b.int("node_count", Some(0))?.unwrap_or(ng.node_count);
    ng.role = b.string("role", 1, 255)?.or(ng.role.take());
    ng.min_node_count = b.int("min_node_count", Some(0))?.unwrap_or(0);
    ng.max_node_count = b.int("max_node_count", Some(0))?;
    if b.has("node_labels") {
        let m = b.object("node_labels")?.unwrap_or_default();
        for v in m.values() {
            if !v.is_string() {
                return Err(ApiError::invalid_input(
                    "node_labels",
                    super::body::py_str(&Value::Object(m.clone())),
                    format!(
                        "Wrong type. Expected '<class 'str'>', got '<class '{}'>'",
                        super::body::py_type(v)
                    ),
                ));
            }
        }
        ng.node_labels = Some(m);
    } else {
        ng.node_labels = None;
    }
    ng.node_taints = if b.has("node_taints") {
        b.list("node_taints")?
    } else {
        None
    };
    Ok(())
}

/// What is being validated: a nodegroup to create, or an existing one patched.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Validating {
    Create,
    Update,
}

/// `_validate_node_count`, `_validate_node_attrs_role`, `_validate_node_labels`,
/// `_validate_node_taints`, then (on create, as Magnum's `post` does next) the refusal of
/// master nodegroups, then the driver's autoscaling capability.
fn validate(
    ng: &NodeGroup,
    state: &AppState,
    template_driver: Option<&std::sync::Arc<dyn crate::drivers::Driver>>,
    validating: Validating,
) -> ApiResult<()> {
    let invalid = |attr: &str, expl: String| ApiError::NodeGroupInvalidInput {
        attr: attr.into(),
        nodegroup: ng.name.clone(),
        expl,
    };
    if let Some(max) = ng.max_node_count.filter(|m| *m != 0) {
        if max < ng.min_node_count {
            return Err(invalid(
                "max_node_count",
                format!(
                    "min_node_count ({}) should be less or equal to max_node_count ({max})",
                    ng.min_node_count
                ),
            ));
        }
        if ng.node_count > max {
            return Err(invalid(
                "max_node_count",
                format!(
                    "node_count ({}) should be less or equal to max_node_count ({max})",
                    ng.node_count
                ),
            ));
        }
    }
    if ng.min_node_count > ng.node_count {
        return Err(invalid(
            "min_node_count",
            format!(
                "min_node_count ({}) should be less or equal to node_count ({})",
                ng.min_node_count, ng.node_count
            ),
        ));
    }
    if ng.role.as_deref() == Some(ROLE_MASTER) {
        if ng.node_labels.as_ref().is_some_and(|m| !m.is_empty()) {
            return Err(invalid(
                "node_labels",
                "node_labels may not be set on master nodegroups".into(),
            ));
        }
        if ng.node_taints.as_ref().is_some_and(|t| !t.is_empty()) {
            return Err(invalid(
                "node_taints",
                "node_taints may not be set on master nodegroups".into(),
            ));
        }
    }
    for key in ng.node_labels.iter().flat_map(|m| m.keys()) {
        let Some((prefix, _)) = key.split_once('/') else {
            continue;
        };
        let restricted = prefix == "kubernetes.io"
            || prefix == "k8s.io"
            || prefix.ends_with(".kubernetes.io")
            || prefix.ends_with(".k8s.io");
        if !restricted
            || KUBELET_ALLOWED_NAMESPACES.contains(&prefix)
            || KUBELET_ALLOWED_LABELS.contains(&key.as_str())
        {
            continue;
        }
        return Err(invalid(
            "node_labels",
            format!(
                "node label '{key}' is in a restricted Kubernetes namespace; the kubelet will refuse to start. \
                 Labels in the kubernetes.io/ and k8s.io/ namespaces must use one of the allowed prefixes ({}) \
                 or be one of the allowed labels ({}).",
                KUBELET_ALLOWED_NAMESPACES.join(", "),
                KUBELET_ALLOWED_LABELS.join(", ")
            ),
        ));
    }
    for (i, taint) in ng.node_taints.iter().flatten().enumerate() {
        let Value::Object(t) = taint else {
            return Err(invalid(
                "node_taints",
                format!("node_taints[{i}] must be an object with key, effect and optional value"),
            ));
        };
        let mut unknown: Vec<&str> = t
            .keys()
            .map(String::as_str)
            .filter(|k| !TAINT_FIELDS.contains(k))
            .collect();
        if !unknown.is_empty() {
            unknown.sort_unstable();
            return Err(invalid(
                "node_taints",
                format!(
                    "node_taints[{i}] contains unrecognised field(s) {}; allowed fields are {}",
                    unknown.join(", "),
                    TAINT_FIELDS.join(", ")
                ),
            ));
        }
        if t.get("key")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(invalid(
                "node_taints",
                format!("node_taints[{i}].key is required"),
            ));
        }
        if !t
            .get("effect")
            .and_then(Value::as_str)
            .is_some_and(|e| TAINT_EFFECTS.contains(&e))
        {
            return Err(invalid(
                "node_taints",
                format!(
                    "node_taints[{i}].effect must be one of {}",
                    TAINT_EFFECTS.join(", ")
                ),
            ));
        }
    }
    if validating == Validating::Create && ng.role.as_deref() == Some(ROLE_MASTER) {
        return Err(ApiError::CreateMasterNodeGroup);
    }
    if let Some(driver) = template_driver {
        let bounds_set = ng.min_node_count != 0 || ng.max_node_count.is_some_and(|m| m != 0);
        if bounds_set && !driver.supports_autoscaling(ng) {
            return Err(invalid(
                if ng.min_node_count != 0 { "min_node_count" } else { "max_node_count" },
                format!(
                    "the {} driver cannot autoscale {} nodegroups, so min_node_count and max_node_count cannot be set on them",
                    driver.name(),
                    ng.role.as_deref().unwrap_or("worker")
                ),
            ));
        }
    }
    let _ = state;
    Ok(())
}

/// The cluster's driver, when its template resolves to one.
async fn driver_of(
    state: &AppState,
    cluster: &Cluster,
) -> ApiResult<Option<std::sync::Arc<dyn crate::drivers::Driver>>> {
    let Some(t) = &cluster.cluster_template_id else {
        return Ok(None);
    };
    Ok(match state.store.template_by_uuid(t).await? {
        Some(t) => state.drivers.for_template(&t).ok(),
        None => None,
    })
}

/// Mirrors `NodeGroupController.post` (1.9+): 202 with the new nodegroup.
async fn create_nodegroup(
    State(state): State<AppState>,
    Extension(version): Extension<Version>,
    ctx: RequestContext,
    headers: HeaderMap,
    Path(cluster_ident): Path<String>,
    RawQuery(raw): RawQuery,
    bytes: Bytes,
) -> ApiResult<(StatusCode, Json<Value>)> {
    version.require(MIN_VERSION, VERSIONED_NAME)?;
    Query::parse(raw.as_deref(), &[])?;
    let b = Body::parse(&bytes, "nodegroup", WRITABLE, READ_ONLY)?;
    // Validated, then overwritten (a fresh uuid, the cluster's uuid).
    b.uuid("uuid")?;
    b.uuid("cluster_id")?;
    let mut ng = NodeGroup {
        role: Some("worker".into()),
        node_count: 1,
        ..NodeGroup::default()
    };
    read_attrs(&b, &mut ng)?;
    let merge_labels = b.boolean("merge_labels")?.unwrap_or(false);
    let is_default = b.boolean("is_default")?;
    enforce(&state, &ctx, "nodegroup:create")?;
    let cluster = lookup::cluster(&state, &Tenancy::of(&ctx, false), &cluster_ident).await?;
    if cluster
        .api_address
        .as_deref()
        .unwrap_or_default()
        .is_empty()
    {
        return Err(ApiError::ClusterApiAddressUnavailable);
    }
    if ng.name.is_empty() {
        // Magnum answers 500 (`Field `name' cannot be None`); a name is required.
        return Err(ApiError::invalid_input(
            "name",
            "None",
            "Mandatory field missing.",
        ));
    }
    let existing = state
        .store
        .nodegroups_of_clusters(std::slice::from_ref(&cluster.uuid))
        .await?;
    if existing.iter().any(|e| e.name == ng.name) {
        return Err(ApiError::NodeGroupAlreadyExists {
            name: ng.name.clone(),
            cluster: cluster.name.clone().unwrap_or_default(),
        });
    }
    let driver = driver_of(&state, &cluster).await?;
    validate(&ng, &state, driver.as_ref(), Validating::Create)?;
    let cluster_labels = cluster.labels.clone().unwrap_or_default();
    if ng.image_id.is_none() {
        let t = match &cluster.cluster_template_id {
            Some(t) => state.store.template_by_uuid(t).await?,
            None => None,
        };
        ng.image_id = t.and_then(|t| t.image_id);
    }
    if ng.flavor_id.is_none() {
        ng.flavor_id = cluster.flavor_id.clone();
    }
    ng.labels = Some(match ng.labels.take() {
        None => cluster_labels.clone(),
        Some(l) if merge_labels => {
            let mut merged = cluster_labels.clone();
            merged.extend(l);
            merged
        }
        Some(l) => l,
    });
    ng.uuid = uuid::Uuid::new_v4().to_string();
    ng.cluster_id = cluster.uuid.clone();
    ng.project_id = ctx.project_id.clone().unwrap_or_default();
    ng.is_default = Some(is_default.unwrap_or(false));
    ng.stack_id = cluster.stack_id.clone();
    ng.status = Some(status::CREATE_IN_PROGRESS.into());
    // The response carries what Magnum's API had set before the conductor created the row.
    let mut doc = Map::new();
    for (k, v) in nodegroup_doc(&ng) {
        if matches!(
            k.as_str(),
            "cluster_id"
                | "flavor_id"
                | "image_id"
                | "labels"
                | "max_node_count"
                | "min_node_count"
                | "name"
                | "node_count"
                | "project_id"
                | "role"
                | "uuid"
        ) || (b.has(&k) && !matches!(k.as_str(), "id" | "status" | "created_at" | "updated_at"))
        {
            doc.insert(k, v);
        }
    }
    let batch = Batch::default()
        .insert_nodegroup(ng.clone())
        .cluster(
            cluster.id,
            [ClusterSet::Status(status::UPDATE_IN_PROGRESS.into())],
        )
        .operation(NewOperation {
            cluster_uuid: cluster.uuid.clone(),
            nodegroup_id: None,
            old_count: None,
            new_count: Some(ng.node_count),
            payload: OpPayload::CreateNodeGroup,
        });
    state.store.commit(batch).await.map_err(|e| match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() => ApiError::NodeGroupAlreadyExists {
            name: ng.name.clone(),
            cluster: cluster.name.clone().unwrap_or_default(),
        },
        _ => e.into(),
    })?;
    state.operations.kick();
    Ok((
        StatusCode::ACCEPTED,
        Json(render_detail(doc, &cluster, &base_url(&headers))),
    ))
}

/// Mirrors `NodeGroupController.patch` (1.9+): only min/max and node labels/taints.
async fn update_nodegroup(
    State(state): State<AppState>,
    Extension(version): Extension<Version>,
    ctx: RequestContext,
    headers: HeaderMap,
    Path((cluster_ident, ng_ident)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
    bytes: Bytes,
) -> ApiResult<(StatusCode, Json<Value>)> {
    version.require(MIN_VERSION, VERSIONED_NAME)?;
    Query::parse(raw.as_deref(), &[])?;
    let internal: Vec<&str> = BASE_INTERNAL
        .iter()
        .chain(PATCH_INTERNAL_EXTRA)
        .copied()
        .collect();
    let ops = jsonpatch::parse(&bytes, &internal, &[])?;
    let cluster = lookup::cluster(&state, &Tenancy::of(&ctx, false), &cluster_ident).await?;
    enforce(&state, &ctx, "nodegroup:update")?;
    let current = lookup::nodegroup(&state, &ctx, &cluster.uuid, &ng_ident).await?;
    let mut doc = nodegroup_doc(&current);
    jsonpatch::apply(&mut doc, &ops)?;
    for key in ["node_labels", "node_taints"] {
        if let Some(Value::String(s)) = doc.get(key).cloned() {
            let parsed = super::pyliteral::parse(&s).ok_or_else(|| {
                ApiError::invalid_input(key, &s, "Value is not a valid Python literal")
            })?;
            doc.insert(key.into(), parsed);
        }
    }
    for key in ["min_node_count", "max_node_count"] {
        if let Some(Value::String(s)) = doc.get(key) {
            // WSME keeps the string; the count validation then compares str with int.
            return Err(ApiError::invalid_input(
                key,
                s,
                "'<' not supported between instances of 'str' and 'int'",
            ));
        }
    }
    let patched = Body::from_map("nodegroup", doc);
    let mut ng = current.clone();
    read_attrs(&patched, &mut ng)?;
    let driver = driver_of(&state, &cluster).await?;
    validate(&ng, &state, driver.as_ref(), Validating::Update)?;
    let changes = [
        NodeGroupSet::MinNodeCount(ng.min_node_count),
        NodeGroupSet::MaxNodeCount(ng.max_node_count),
        NodeGroupSet::NodeLabels(ng.node_labels.clone()),
        NodeGroupSet::NodeTaints(ng.node_taints.clone()),
    ];
    let changed = ng.min_node_count != current.min_node_count
        || ng.max_node_count != current.max_node_count
        || ng.node_labels != current.node_labels
        || ng.node_taints != current.node_taints;
    if changed {
        let batch = Batch::default()
            .nodegroup(ng.id, changes)
            .operation(NewOperation {
                cluster_uuid: cluster.uuid.clone(),
                nodegroup_id: Some(ng.id),
                old_count: None,
                new_count: None,
                payload: OpPayload::UpdateNodeGroup,
            });
        state.store.commit(batch).await?;
        state.operations.kick();
    }
    // Magnum answers with the object it handed to the conductor: the new values, and the
    // `updated_at` from before the update.
    Ok((
        StatusCode::ACCEPTED,
        Json(render_detail(
            nodegroup_doc(&ng),
            &cluster,
            &base_url(&headers),
        )),
    ))
}

/// Mirrors `NodeGroupController.delete` (1.9+): 204; default nodegroups cannot be deleted.
async fn delete_nodegroup(
    State(state): State<AppState>,
    Extension(version): Extension<Version>,
    ctx: RequestContext,
    Path((cluster_ident, ng_ident)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
) -> ApiResult<StatusCode> {
    version.require(MIN_VERSION, VERSIONED_NAME)?;
    Query::parse(raw.as_deref(), &[])?;
    enforce(&state, &ctx, "nodegroup:delete")?;
    let cluster = lookup::cluster(&state, &Tenancy::of(&ctx, false), &cluster_ident).await?;
    let ng = lookup::nodegroup(&state, &ctx, &cluster.uuid, &ng_ident).await?;
    if ng.is_default() {
        return Err(ApiError::DeletingDefaultNgNotSupported);
    }
    let batch = Batch::default()
        .nodegroup(
            ng.id,
            [NodeGroupSet::Status(status::DELETE_IN_PROGRESS.into())],
        )
        .cluster(
            cluster.id,
            [ClusterSet::Status(status::UPDATE_IN_PROGRESS.into())],
        )
        .operation(NewOperation {
            cluster_uuid: cluster.uuid.clone(),
            nodegroup_id: Some(ng.id),
            old_count: None,
            new_count: None,
            payload: OpPayload::DeleteNodeGroup,
        });
    state.store.commit(batch).await?;
    state.operations.kick();
    Ok(StatusCode::NO_CONTENT)
}
