//! `POST /v1/clusters/{ident}/actions/resize` and `…/upgrade`
//! (`magnum/api/controllers/v1/cluster_actions.py`). The handlers keep Magnum's check order;
//! every role-specific rule is the cluster driver's answer.

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::authz::{admin_all_tenants, enforce_on};
use super::body::{py_str, Body};
use super::bounds::FieldBounds;
use super::extract::{ApiVersion, MagnumBody, MagnumPath};
use super::lookup;
use super::microversion::Version;
use super::query::Query;
use super::refusals::{Refusing, Subject};
use super::routes::Routes;
use crate::error::{ApiError, ApiResult};
use crate::model::{status, Cluster, NodeGroup, RequestContext, Status, Tenancy};
use crate::state::AppState;
use crate::store::operations::{AcceptResize, NewOperation, OpPayload};
use crate::store::{Batch, ClusterSet, Guard, NodeGroupSet};

pub fn routes() -> Routes {
    Routes::default()
        .post("/v1/clusters/{ident}/actions/resize", resize_cluster)
        .post("/v1/clusters/{ident}/actions/upgrade", upgrade_cluster)
        // pecan finds no such method on the actions controller: 405 for every method.
        .any("/v1/clusters/{ident}/actions/{action}", unknown_action)
}

async fn unknown_action() -> ApiError {
    ApiError::MethodNotAllowed
}

/// A validated `ClusterResizeRequest`.
#[derive(Debug, Clone, PartialEq)]
pub struct ResizeBody {
    pub node_count: i64,
    pub nodes_to_remove: Vec<String>,
    pub nodegroup: Option<String>,
}

/// WSME's validation of `ClusterResizeRequest`, then magnum-rs's bound on `nodes_to_remove`
/// (`[api] max_field_size`: the list is stored with the operation, where Magnum passes it
/// over RPC).
pub fn parse_resize_body(bytes: &Bytes, bounds: FieldBounds) -> ApiResult<ResizeBody> {
    let b = Body::parse(
        bytes,
        "cluster_resize_req",
        &["node_count", "nodes_to_remove", "nodegroup"],
        &[],
    )?;
    b.mandatory("node_count")?;
    let node_count = b.int("node_count", Some(0))?.unwrap_or_default();
    let nodes_to_remove = match b.list("nodes_to_remove")? {
        None => Vec::new(),
        Some(items) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                Value::Number(n) => Ok(n.to_string()),
                other => Err(ApiError::invalid_input(
                    "nodes_to_remove",
                    py_str(&Value::Array(items.clone())),
                    format!(
                        "Wrong type. Expected '<class 'str'>', got '{}'",
                        super::body::py_type(other)
                    ),
                )),
            })
            .collect::<ApiResult<Vec<String>>>()?,
    };
    let nodegroup = b.string("nodegroup", 1, 255)?;
    bounds.strings("nodes_to_remove", &nodes_to_remove)?;
    Ok(ResizeBody {
        node_count,
        nodes_to_remove,
        nodegroup,
    })
}

/// Step 5 of Magnum's order: the named nodegroup of the cluster, else its default worker.
async fn select_nodegroup(
    state: &AppState,
    ctx: &RequestContext,
    cluster: &Cluster,
    ident: Option<&str>,
) -> ApiResult<NodeGroup> {
    match ident.filter(|s| !s.is_empty()) {
        None => lookup::default_worker(state, cluster).await,
        Some(ident) => lookup::nodegroup(state, ctx, &cluster.uuid, ident).await,
    }
}

/// Python's rendering of an optional maximum (`None` when unset).
fn py_opt(v: Option<i64>) -> String {
    v.map_or_else(|| "None".into(), |n| n.to_string())
}

/// Mirrors `ActionsController._resize` (1.7+; a zero count only from 1.10).
async fn resize_cluster(
    State(state): State<AppState>,
    ApiVersion(version): ApiVersion,
    ctx: RequestContext,
    MagnumPath(ident): MagnumPath<String>,
    RawQuery(raw): RawQuery,
    MagnumBody(bytes): MagnumBody,
) -> ApiResult<(StatusCode, Json<Value>)> {
    version.require(Version::new(1, 7), "resize")?;
    Query::parse(raw.as_deref(), &[])?;
    let req = parse_resize_body(&bytes, FieldBounds::new(&state.config.api))?;
    if req.node_count == 0 && !version.at_least(1, 10) {
        return Err(ApiError::ZeroNodeCountNotSupported);
    }
    // Resize does not take `all_tenants`, even for admins.
    let tenancy = Tenancy::of(&ctx, false);
    let cluster = lookup::cluster(&state, &tenancy, &ident).await?;
    enforce_on(
        &state,
        &ctx,
        "cluster:resize",
        cluster.project_id.as_deref(),
        cluster.user_id.as_deref(),
    )?;
    let nodegroup = select_nodegroup(&state, &ctx, &cluster, req.nodegroup.as_deref()).await?;
    if !nodegroup.is_master() {
        let max = nodegroup.max_node_count.filter(|m| *m != 0);
        if nodegroup.min_node_count > req.node_count || max.is_some_and(|m| m < req.node_count) {
            return Err(ApiError::NgResizeOutBounds {
                nodegroup: nodegroup.name.clone(),
                min: nodegroup.min_node_count,
                max: py_opt(nodegroup.max_node_count),
            });
        }
    }
    let driver = state.driver_of(&cluster).await??;
    if nodegroup.is_master() {
        driver.validate_master_resize(req.node_count)?;
    }
    // The conductor's status rule, answered synchronously here (docs/compatibility.md).
    let current = cluster.status.clone().unwrap_or_default();
    if !status::allows_resize(&current) {
        return Err(ApiError::NotSupported(format!(
            "Resizing a cluster when status is \"{current}\""
        )));
    }
    let nodes_to_remove =
        if req.nodes_to_remove.is_empty() || driver.honours_nodes_to_remove(&nodegroup) {
            req.nodes_to_remove
        } else {
            tracing::warn!(
                driver = driver.name(),
                nodegroup = %nodegroup.name,
                "nodes_to_remove is not honoured by this driver for this nodegroup; ignoring it"
            );
            Vec::new()
        };
    let op = NewOperation {
        cluster_uuid: cluster.uuid.clone(),
        nodegroup_uuid: Some(nodegroup.uuid.clone()),
        old_count: None,
        new_count: Some(req.node_count),
        payload: OpPayload::Resize { nodes_to_remove },
    };
    let accepted = state
        .store
        .accept_resize(AcceptResize {
            cluster_uuid: cluster.uuid.clone(),
            tenancy,
            nodegroup_uuid: nodegroup.uuid.clone(),
            new_count: req.node_count,
            op,
            allowed: status::allows_resize,
            cluster_changes: Vec::new(),
        })
        .await?;
    accepted.map_err(|refused| resizing(&ident, &nodegroup.name, "Resizing").error(refused))?;
    state.operations.kick();
    Ok((StatusCode::ACCEPTED, Json(json!({"uuid": cluster.uuid}))))
}

/// How a resize (or a cluster update that resizes) refused under the row locks answers.
pub(crate) fn resizing<'a>(cluster: &'a str, nodegroup: &'a str, verb: &'a str) -> Refusing<'a> {
    Refusing {
        verb,
        on: Subject::Cluster,
        cluster,
        nodegroup,
        template: "",
    }
}

/// Mirrors `ActionsController.upgrade` (400 at exactly 1.7) and `_upgrade` (1.8+), plus the
/// conductor's synchronous status check.
async fn upgrade_cluster(
    State(state): State<AppState>,
    ApiVersion(version): ApiVersion,
    ctx: RequestContext,
    MagnumPath(ident): MagnumPath<String>,
    RawQuery(raw): RawQuery,
    MagnumBody(bytes): MagnumBody,
) -> ApiResult<(StatusCode, Json<Value>)> {
    // Magnum's 406 names `resize` here too: pecan looks the actions controller's attributes
    // up in `dir()` (alphabetical) order, and the versioned `resize` comes first.
    version.require(Version::new(1, 7), "resize")?;
    Query::parse(raw.as_deref(), &[])?;
    let b = Body::parse(
        &bytes,
        "cluster_upgrade_req",
        &["max_batch_size", "nodegroup", "cluster_template"],
        &[],
    )?;
    let max_batch_size = b.int("max_batch_size", Some(1))?.unwrap_or(1);
    let ng_ident = b.string("nodegroup", 1, 255)?;
    let template_ident = b.string("cluster_template", 1, 255)?;
    if !version.at_least(1, 8) {
        return Err(ApiError::ClusterUpgradeNotSupported);
    }
    let all_tenants = admin_all_tenants(&state, &ctx, "cluster:upgrade_all_projects")?;
    let tenancy = Tenancy::of(&ctx, all_tenants);
    let cluster = lookup::cluster(&state, &tenancy, &ident).await?;
    enforce_on(
        &state,
        &ctx,
        "cluster:upgrade",
        cluster.project_id.as_deref(),
        cluster.user_id.as_deref(),
    )?;
    // Magnum answers 500 when the template is missing; a clear 400 here.
    let template_ident = template_ident.ok_or_else(|| {
        ApiError::invalid_input("cluster_template", "None", "Mandatory field missing.")
    })?;
    let new_template = lookup::template(
        &state,
        &lookup::template_scope(&ctx, all_tenants),
        &template_ident,
    )
    .await?;
    let nodegroup = match ng_ident.as_deref() {
        None => lookup::default_worker(&state, &cluster).await?,
        Some(ng) => {
            let nodegroup = lookup::nodegroup(&state, &ctx, &cluster.uuid, ng).await?;
            if Some(&new_template.uuid) != cluster.cluster_template_id.as_ref()
                && !nodegroup.is_default()
            {
                let current_name = match &cluster.cluster_template_id {
                    Some(t) => state.store.template_by_uuid(t).await?.and_then(|t| t.name),
                    None => None,
                };
                return Err(ApiError::InvalidClusterTemplateForUpgrade(format!(
                    "Nodegroup {} can be upgraded only to match cluster's template ({}).",
                    nodegroup.name,
                    current_name.unwrap_or_else(|| "None".into())
                )));
            }
            nodegroup
        }
    };
    let current = cluster.status.clone().unwrap_or_default();
    if !status::allows_upgrade(&current) {
        return Err(ApiError::NotSupported(format!(
            "Upgrading a cluster when status is \"{current}\""
        )));
    }
    // The cluster's own driver carries the upgrade out: it must still resolve, and allow
    // the move from the cluster's template to the new one.
    let driver = state.driver_of(&cluster).await??;
    if let Some(current) = &cluster.cluster_template_id {
        if let Some(from) = state.store.template_by_uuid(current).await? {
            driver.validate_upgrade(&from, &new_template)?;
        }
    }
    // The same checks again under the rows' locks, in the same order, with the writes.
    let batch = Batch::default()
        .guard(Guard::cluster(&cluster.uuid, tenancy))
        .guard(Guard::template(&new_template.uuid))
        .guard(Guard::nodegroup(&nodegroup.uuid, &cluster.uuid))
        .guard(Guard::nodegroup_status(
            &nodegroup.uuid,
            status::not_deleting,
        ))
        .guard(Guard::cluster_status(&cluster.uuid, status::allows_upgrade))
        .cluster(&cluster.uuid, ClusterSet::status(Status::UpdateInProgress))
        .nodegroup(
            &nodegroup.uuid,
            [NodeGroupSet::Status(Status::UpdateInProgress.into())],
        )
        .operation(NewOperation {
            cluster_uuid: cluster.uuid.clone(),
            nodegroup_uuid: Some(nodegroup.uuid.clone()),
            old_count: None,
            new_count: None,
            payload: OpPayload::Upgrade {
                cluster_template: new_template.uuid.clone(),
                max_batch_size,
            },
        });
    let refusing = Refusing {
        verb: "Upgrading",
        on: Subject::Cluster,
        cluster: &ident,
        nodegroup: &nodegroup.name,
        template: &template_ident,
    };
    state
        .store
        .commit(batch)
        .await?
        .map_err(|refused| refusing.error(refused))?;
    state.operations.kick();
    Ok((StatusCode::ACCEPTED, Json(json!({"uuid": cluster.uuid}))))
}
