//! `PATCH /v1/clusters/{cluster}/nodegroups/{nodegroup}` (`NodeGroupController.patch`,
//! 1.9+): only the autoscaling bounds and the node labels and taints may change.

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use serde_json::Value;

use super::attributes::{check_bounds, read_attrs};
use super::validate::{validate_nodegroup, Validating};
use super::view::{nodegroup_doc, render_detail};
use super::{MIN_VERSION, VERSIONED_NAME};
use crate::api::attr_validator::CloudChecks;
use crate::api::authz::enforce;
use crate::api::body::Body;
use crate::api::bounds::FieldBounds;
use crate::api::extract::{ApiVersion, MagnumBody, MagnumPath};
use crate::api::jsonpatch::{self, BASE_INTERNAL};
use crate::api::lookup;
use crate::api::query::{base_url, Query};
use crate::api::refusals::{Refusing, Subject};
use crate::error::{ApiError, ApiResult};
use crate::model::{status, RequestContext, Tenancy};
use crate::state::AppState;
use crate::store::operations::{NewOperation, OpPayload};
use crate::store::{Batch, Guard, NodeGroupSet};

/// `NodeGroupPatchType.internal_attrs` beyond the base ones.
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

/// Mirrors `NodeGroupController.patch` (1.9+): only min/max and node labels/taints.
pub(super) async fn update_nodegroup(
    State(state): State<AppState>,
    ApiVersion(version): ApiVersion,
    ctx: RequestContext,
    headers: HeaderMap,
    MagnumPath((cluster_ident, ng_ident)): MagnumPath<(String, String)>,
    RawQuery(raw): RawQuery,
    MagnumBody(bytes): MagnumBody,
) -> ApiResult<(StatusCode, Json<Value>)> {
    version.require(MIN_VERSION, VERSIONED_NAME)?;
    Query::parse(raw.as_deref(), &[])?;
    let internal: Vec<&str> = BASE_INTERNAL
        .iter()
        .chain(PATCH_INTERNAL_EXTRA)
        .copied()
        .collect();
    let ops = jsonpatch::parse(&bytes, &internal, &[])?;
    let tenancy = Tenancy::of(&ctx, false);
    let cluster = lookup::cluster(&state, &tenancy, &cluster_ident).await?;
    enforce(&state, &ctx, "nodegroup:update")?;
    let current = lookup::nodegroup(&state, &ctx, &cluster.uuid, &ng_ident).await?;
    let mut doc = nodegroup_doc(&current);
    jsonpatch::apply(&mut doc, &ops)?;
    for key in ["node_labels", "node_taints"] {
        if let Some(Value::String(s)) = doc.get(key).cloned() {
            let parsed = crate::api::pyliteral::parse(&s).ok_or_else(|| {
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
    check_bounds(&ng, Some(&current), FieldBounds::new(&state.config.api))?;
    if let Some(checks) = CloudChecks::of(&state, &ctx) {
        // With the cluster's labels.
        checks
            .flavor_root_volume_size(ng.flavor_id.as_deref(), cluster.labels.as_ref())
            .await?;
    }
    // Without a driver (its template gone or unsupported) only Magnum's checks apply.
    let driver = state.driver_of(&cluster).await?.ok();
    validate_nodegroup(&ng, driver.as_deref(), Validating::Update)?;
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
        // Checked again under the rows' locks: the nodegroup is still the cluster's, and
        // neither is being deleted.
        let batch = Batch::default()
            .guard(Guard::cluster(&cluster.uuid, tenancy))
            .guard(Guard::nodegroup(&ng.uuid, &cluster.uuid))
            .guard(Guard::cluster_status(&cluster.uuid, status::not_deleting))
            .guard(Guard::nodegroup_status(&ng.uuid, status::not_deleting))
            .nodegroup(&ng.uuid, changes)
            .operation(NewOperation {
                cluster_uuid: cluster.uuid.clone(),
                nodegroup_uuid: Some(ng.uuid.clone()),
                old_count: None,
                new_count: None,
                payload: OpPayload::UpdateNodeGroup,
            });
        let refusing = Refusing {
            verb: "Updating",
            on: Subject::NodeGroup,
            cluster: &cluster_ident,
            nodegroup: &ng_ident,
            template: "",
        };
        state
            .store
            .commit(batch)
            .await?
            .map_err(|refused| refusing.error(refused))?;
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
