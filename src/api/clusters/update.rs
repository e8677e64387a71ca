//! `PATCH /v1/clusters/{ident}` (`ClustersController.patch`): a JSON patch of which only
//! `node_count` (a resize of the default worker) and the health fields may change.

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::view::cluster_doc;
use super::HEALTH_STATUSES;
use crate::api::attr_validator::CloudChecks;
use crate::api::authz::{admin_all_tenants, enforce, enforce_on};
use crate::api::body::Body;
use crate::api::bounds::FieldBounds;
use crate::api::cluster_actions::resizing;
use crate::api::extract::{ApiVersion, MagnumBody, MagnumPath};
use crate::api::jsonpatch;
use crate::api::lookup;
use crate::api::query::Query;
use crate::error::{ApiError, ApiResult};
use crate::model::{status, ClusterCounts, RequestContext, Tenancy};
use crate::state::AppState;
use crate::store::operations::{AcceptResize, NewOperation, OpPayload};
use crate::store::{Batch, ClusterSet, Guard};

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

/// `validation.cluster_update_allowed_properties`.
const CLUSTER_UPDATE_ALLOWED_PROPERTIES: [&str; 3] =
    ["node_count", "health_status", "health_status_reason"];

/// `validation.validate_cluster_properties`: `delta` (the changed fields) may only name
/// the allowed properties. The refused ones are listed sorted (Python prints a set).
pub fn validate_cluster_properties(delta: &[&str]) -> ApiResult<()> {
    let mut disallowed: Vec<&str> = delta
        .iter()
        .copied()
        .filter(|k| !CLUSTER_UPDATE_ALLOWED_PROPERTIES.contains(k))
        .collect();
    if !disallowed.is_empty() {
        disallowed.sort_unstable();
        return Err(ApiError::InvalidParameterValue(format!(
            "cannot change cluster property(ies) {}.",
            disallowed.join(", ")
        )));
    }
    Ok(())
}

/// Mirrors `ClustersController.patch`: only `node_count` (applied to the default worker),
/// `health_status` and `health_status_reason` may change. 202 `{"uuid"}`.
pub(super) async fn update_cluster(
    State(state): State<AppState>,
    ApiVersion(version): ApiVersion,
    ctx: RequestContext,
    MagnumPath(ident): MagnumPath<String>,
    RawQuery(raw): RawQuery,
    MagnumBody(bytes): MagnumBody,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let allowed: &[&str] = if version.at_least(1, 3) {
        &["rollback"]
    } else {
        &[]
    };
    let q = Query::parse(raw.as_deref(), allowed)?;
    if let Some(r) = q.get("rollback") {
        // A query argument: WSME frames the converter's error.
        crate::api::body::bool_from_string(r).map_err(|e| {
            ApiError::invalid_input(
                "rollback",
                r,
                format!("unable to convert to boolean. Error: {e}"),
            )
        })?;
    }
    let ops = jsonpatch::parse(&bytes, PATCH_INTERNAL, &["/cluster_template_id"])?;
    let all_tenants = admin_all_tenants(&state, &ctx, "cluster:update_all_projects")?;
    let tenancy = Tenancy::of(&ctx, all_tenants);
    let c = lookup::cluster(&state, &tenancy, &ident).await?;
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
            let parsed = crate::api::pyliteral::parse(&s)
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
    // magnum-rs's bound on a new reason (docs/compatibility.md): one as stored is kept.
    if let Some(reason) = health_reason
        .as_ref()
        .filter(|_| health_reason != c.health_status_reason)
    {
        FieldBounds::new(&state.config.api).dict("health_status_reason", reason)?;
    }
    let delta: Vec<&str> = after
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(*v))
        .map(|(k, _)| k.as_str())
        .collect();
    if let Some(checks) = CloudChecks::of(&state, &ctx) {
        // The root volume of the flavors as patched, with the labels as patched.
        let labels = after.get("labels").and_then(Value::as_object);
        for key in ["flavor_id", "master_flavor_id"] {
            let flavor = after.get(key).and_then(Value::as_str);
            checks.flavor_root_volume_size(flavor, labels).await?;
        }
    }
    validate_cluster_properties(&delta)?;
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
                let batch = Batch::default()
                    .guard(Guard::cluster(&c.uuid, tenancy))
                    .cluster(&c.uuid, changes);
                state
                    .store
                    .commit(batch)
                    .await?
                    .map_err(|refused| resizing(&ident, "", "Updating").error(refused))?;
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
                nodegroup_uuid: Some(w.uuid.clone()),
                old_count: None,
                new_count: Some(node_count),
                payload: OpPayload::resize(),
            };
            let accepted = state
                .store
                .accept_resize(AcceptResize {
                    cluster_uuid: c.uuid.clone(),
                    tenancy,
                    nodegroup_uuid: w.uuid.clone(),
                    new_count: node_count,
                    op,
                    allowed: status::allows_update,
                    cluster_changes: changes,
                })
                .await?;
            accepted.map_err(|refused| resizing(&ident, &w.name, "Updating").error(refused))?;
            state.operations.kick();
        }
    }
    Ok((StatusCode::ACCEPTED, Json(json!({"uuid": c.uuid}))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_node_count_and_health_may_change() {
        assert!(validate_cluster_properties(&["node_count", "health_status"]).is_ok());
        let refused = validate_cluster_properties(&["name", "node_count", "labels"])
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            refused.as_deref(),
            Some("cannot change cluster property(ies) labels, name.")
        );
    }
}
