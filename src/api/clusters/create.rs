//! `POST /v1/clusters` (`ClustersController.post`): the body, Magnum's decorators and the
//! accepted cluster with its default nodegroups.

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Map, Value};

use super::labels::{cluster_labels, merged_labels, worker_min_node_count};
use super::HEALTH_STATUSES;
use crate::api::attr_validator::{CloudChecks, OsResources};
use crate::api::authz::enforce;
use crate::api::body::{check_name_pattern, Body};
use crate::api::bounds::{column_width, FieldBounds};
use crate::api::cluster_templates::enforce_volume_storage_size;
use crate::api::extract::{ApiVersion, MagnumBody};
use crate::api::lookup;
use crate::api::microversion::Version;
use crate::api::query::Query;
use crate::api::refusals::{Refusing, Subject};
use crate::error::{ApiError, ApiResult};
use crate::model::{
    status, Cluster, ClusterTemplate, NodeGroup, RequestContext, Status, ROLE_MASTER, ROLE_WORKER,
};
use crate::state::AppState;
use crate::store::cluster_credentials::KeptToken;
use crate::store::operations::{NewOperation, OpPayload};
use crate::store::{Batch, Guard};

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

/// A validated `Cluster` body of a POST: what the client asked for, before the template's
/// values fill the gaps.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterCreate {
    pub name: Option<String>,
    /// The template's uuid or name, as the client wrote it.
    pub cluster_template_id: String,
    pub keypair: Option<String>,
    pub node_count: i64,
    pub master_count: i64,
    pub docker_volume_size: Option<i64>,
    pub labels: Option<Map<String, Value>>,
    pub master_flavor_id: Option<String>,
    pub flavor_id: Option<String>,
    /// `None` for an explicit null.
    pub create_timeout: Option<i64>,
    pub fixed_network: Option<String>,
    pub fixed_subnet: Option<String>,
    pub floating_ip_enabled: Option<bool>,
    pub master_lb_enabled: Option<bool>,
    pub merge_labels: bool,
    pub discovery_url: Option<String>,
}

impl ClusterCreate {
    /// WSME's validation of the `Cluster` API type, attribute by attribute, then magnum-rs's
    /// size bounds.
    pub fn from_body(bytes: &Bytes, bounds: FieldBounds) -> ApiResult<ClusterCreate> {
        let b = Body::parse(bytes, "cluster", WRITABLE, READ_ONLY)?;
        // Validated, then ignored: the new cluster always gets a fresh uuid.
        b.uuid("uuid")?;
        // WSME attribute validation.
        let name = b.string("name", 1, 242)?;
        if let Some(n) = &name {
            check_name_pattern("name", n)?;
        }
        b.mandatory("cluster_template_id")?;
        let cluster_template_id = b.text("cluster_template_id")?.unwrap_or_default();
        let keypair = b.string("keypair", 1, 255)?;
        let node_count = b.int("node_count", Some(0))?.unwrap_or(1);
        let master_count = b.int("master_count", Some(1))?.unwrap_or(1);
        let docker_volume_size = b.int("docker_volume_size", Some(1))?;
        let labels = b.labels("labels")?;
        let master_flavor_id = b.string("master_flavor_id", 1, 255)?;
        let flavor_id = b.string("flavor_id", 1, 255)?;
        // WSME's default (60) is for a missing key; an explicit null (gophercloud sends one
        // when the caller leaves it unset) is stored and shown as null, as Magnum does.
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
        b.one_of("status", &status::NAMES)?;
        b.text("status_reason")?;
        b.one_of("health_status", &HEALTH_STATUSES)?;
        b.text_dict("health_status_reason")?;
        b.text_dict("faults")?;
        for key in ["labels_overridden", "labels_added", "labels_skipped"] {
            b.label_values(key)?;
        }
        // magnum-rs's bounds (docs/compatibility.md): the labels as the body gives them, and
        // `discovery_url` at the width of its column (`wtypes.text` in Magnum).
        if let Some(l) = &labels {
            bounds.labels(l)?;
        }
        if let Some(url) = &discovery_url {
            column_width("discovery_url", url)?;
        }
        Ok(ClusterCreate {
            name,
            cluster_template_id,
            keypair,
            node_count,
            master_count,
            docker_volume_size,
            labels,
            master_flavor_id,
            flavor_id,
            create_timeout,
            fixed_network,
            fixed_subnet,
            floating_ip_enabled,
            master_lb_enabled,
            merge_labels,
            discovery_url,
        })
    }
}

/// Mirrors `ClustersController.post` (both microversion variants): 202 `{"uuid"}`.
pub(super) async fn create_cluster(
    State(state): State<AppState>,
    ApiVersion(version): ApiVersion,
    ctx: RequestContext,
    RawQuery(raw): RawQuery,
    MagnumBody(bytes): MagnumBody,
) -> ApiResult<(StatusCode, Json<Value>)> {
    Query::parse(raw.as_deref(), &[])?;
    let bounds = FieldBounds::new(&state.config.api);
    let req = ClusterCreate::from_body(&bytes, bounds)?;

    // Decorators: template lookup (400 instead of 404 below 1.10), cluster type, master size.
    let scope = lookup::template_scope(&ctx, false);
    let template = lookup::template(&state, &scope, &req.cluster_template_id)
        .await
        .map_err(|e| ct_not_found_as_bad_request(version, e))?;
    // `enforce_cluster_type_supported`: Magnum resolves by triple only here; magnum-rs uses
    // the template's driver (named, or by triple), because without Glance a template may
    // have no distro.
    let driver = state.drivers.for_template(&template)?;
    // `enforce_cluster_volume_storage_size`.
    enforce_volume_storage_size(&template, req.docker_volume_size)?;
    // `enforce_cluster_master_size_supported`.
    driver.validate_master_size(req.master_count)?;
    if !version.at_least(1, 10) && req.node_count == 0 {
        return Err(ApiError::ZeroNodeCountNotSupported);
    }
    enforce(&state, &ctx, "cluster:create")?;
    let quota = check_cluster_quota_limit(&state, &ctx).await?;
    if template.hidden.unwrap_or(false) && !ctx.is_admin {
        return Err(ApiError::NotAuthorized);
    }
    let floating_ip_enabled = req.floating_ip_enabled.or(template.floating_ip_enabled);
    let master_lb_enabled = req.master_lb_enabled.or(template.master_lb_enabled);
    let or_template =
        |v: Option<String>, t: &Option<String>| v.filter(|s| !s.is_empty()).or_else(|| t.clone());
    let keypair = req.keypair.or_else(|| template.keypair_id.clone());
    let flavor_id = or_template(req.flavor_id, &template.flavor_id);
    let master_flavor_id = or_template(req.master_flavor_id, &template.master_flavor_id);
    let fixed_network = or_template(req.fixed_network, &template.fixed_network);
    let fixed_subnet = or_template(req.fixed_subnet, &template.fixed_subnet);
    if let Some(c) = CloudChecks::of(&state, &ctx) {
        let merged = merged_labels(
            template.labels.as_ref(),
            req.labels.as_ref(),
            req.merge_labels,
        );
        for flavor in [&flavor_id, &master_flavor_id] {
            c.flavor_root_volume_size(flavor.as_deref(), Some(&merged))
                .await?;
        }
        let overrides = OsResources {
            flavor_id: flavor_id.as_deref(),
            master_flavor_id: master_flavor_id.as_deref(),
            fixed_network: fixed_network.as_deref(),
            fixed_subnet: fixed_subnet.as_deref(),
            ..OsResources::default()
        };
        c.os_resources(
            OsResources::of_template(&template),
            Some((overrides, keypair.as_deref())),
        )
        .await?;
    }
    validate_master_count(req.master_count, master_lb_enabled)?;
    // magnum-rs's own checks, after every one of Magnum's: the merged labels' size and the
    // worker's `min_node_count` label (docs/compatibility.md).
    let labels = cluster_labels(
        template.labels.as_ref(),
        req.labels,
        req.merge_labels,
        bounds,
    )?;
    let min_node_count = worker_min_node_count(&labels)?;
    let create_timeout = req.create_timeout;
    let cluster = Cluster {
        uuid: uuid::Uuid::new_v4().to_string(),
        project_id: ctx.project_id.clone(),
        user_id: ctx.user_id.clone(),
        name: Some(
            req.name
                .unwrap_or_else(|| format!("{}-cluster", crate::names::generate())),
        ),
        cluster_template_id: Some(template.uuid.clone()),
        keypair,
        docker_volume_size: req.docker_volume_size.or(template.docker_volume_size),
        labels: Some(labels.clone()),
        master_flavor_id,
        flavor_id,
        status: Some(Status::CreateInProgress.into()),
        create_timeout,
        discovery_url: req.discovery_url,
        fixed_network,
        fixed_subnet,
        floating_ip_enabled,
        master_lb_enabled,
        ..Cluster::default()
    };
    let nodegroups = default_nodegroups(
        &cluster,
        &template,
        req.master_count,
        req.node_count,
        min_node_count,
    );
    let op = NewOperation {
        cluster_uuid: cluster.uuid.clone(),
        nodegroup_uuid: None,
        old_count: None,
        new_count: None,
        payload: OpPayload::CreateCluster { create_timeout },
    };
    // The template and the quota again, under the template's and the project's locks in the
    // transaction that inserts: a template delete or other creates of the project that raced
    // this one are counted (a burst of creates stores at most the quota's headroom).
    let mut batch = Batch::default()
        .guard(Guard::template(&template.uuid))
        .guard(quota)
        .insert_cluster(cluster.clone());
    for ng in nodegroups {
        batch = batch.insert_nodegroup(ng);
    }
    // A driver that reaches the cloud with the user's own application credential gets it
    // made by the worker, with this request's token (kept until then).
    if let Some(caller) = ctx
        .caller
        .as_ref()
        .filter(|_| driver.uses_cloud_credential())
    {
        batch = batch.keep_token_for_credential(KeptToken {
            cluster_uuid: cluster.uuid.clone(),
            token: caller.token.clone(),
            expires_at: caller.expires_at.map(|t| t.to_rfc3339()),
        });
    }
    let refusing = Refusing {
        verb: "Creating",
        on: Subject::Cluster,
        cluster: "",
        nodegroup: "",
        template: &req.cluster_template_id,
    };
    state
        .store
        .commit(batch.operation(op))
        .await?
        .map_err(|refused| ct_not_found_as_bad_request(version, refusing.error(refused)))?;
    state.operations.kick();
    Ok((StatusCode::ACCEPTED, Json(json!({"uuid": cluster.uuid}))))
}

/// `validation.ct_not_found_to_bad_request` (on the 1.1–1.9 `post` only): a template that
/// cannot be found is a 400 with the 404's text.
fn ct_not_found_as_bad_request(version: Version, e: ApiError) -> ApiError {
    match e {
        ApiError::ClusterTemplateNotFound(t) if !version.at_least(1, 10) => {
            ApiError::InvalidParameterValue(format!("ClusterTemplate {t} could not be found."))
        }
        other => other,
    }
}

/// `ClustersController._check_cluster_quota_limit`: the project's row in Magnum's `quotas`
/// table, else `[quotas] max_clusters_per_project`. Returns the quota as a guard, which the
/// insert checks again under the project's lock.
async fn check_cluster_quota_limit(state: &AppState, ctx: &RequestContext) -> ApiResult<Guard> {
    let project = ctx.project_id.clone().unwrap_or_default();
    let limit =
        crate::api::quotas::effective_limit(state, &project, crate::api::quotas::CLUSTER_RESOURCE)
            .await?;
    if state.store.count_project_clusters(&project).await? >= limit {
        return Err(ApiError::cluster_quota_reached(limit));
    }
    Ok(Guard::cluster_quota(&project, limit))
}

/// `attr_validator.validate_master_count`: several masters need a load balancer.
fn validate_master_count(master_count: i64, master_lb_enabled: Option<bool>) -> ApiResult<()> {
    if master_count > 1 && !master_lb_enabled.unwrap_or(false) {
        return Err(ApiError::InvalidParameterValue(
            "master_count must be 1 when master_lb_enabled is False".into(),
        ));
    }
    Ok(())
}

/// `conductor.utils._get_nodegroup_object` for the master and the worker
/// (`min_node_count`: the worker's, read from the labels by `worker_min_node_count`).
fn default_nodegroups(
    c: &Cluster,
    t: &ClusterTemplate,
    master_count: i64,
    node_count: i64,
    min_node_count: i64,
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
            min_node_count: if master { 0 } else { min_node_count },
            role: Some(role.into()),
            is_default: Some(true),
            status: Some(Status::CreateInProgress.into()),
            ..NodeGroup::default()
        }
    };
    vec![
        make(ROLE_MASTER, master_count),
        make(ROLE_WORKER, node_count),
    ]
}
