//! `POST /v1/clusters/{cluster}/nodegroups` (`NodeGroupController.post`, 1.9+).

use std::collections::BTreeSet;

use axum::body::Bytes;
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
use crate::api::lookup;
use crate::api::query::{base_url, Query};
use crate::api::refusals::{Refusing, Subject};
use crate::error::{ApiError, ApiResult};
use crate::model::{status, NodeGroup, RequestContext, Status, Tenancy};
use crate::state::AppState;
use crate::store::operations::{NewOperation, OpPayload};
use crate::store::{Batch, ClusterSet, Guard};

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

/// A validated `NodeGroup` body of a POST.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeGroupCreate {
    /// The nodegroup as the body describes it (a worker of one node unless told otherwise).
    pub nodegroup: NodeGroup,
    pub merge_labels: bool,
    pub is_default: Option<bool>,
    /// The attributes the body sets (present and not null).
    given: BTreeSet<String>,
}

impl NodeGroupCreate {
    /// WSME's validation of the `NodeGroup` API type, then magnum-rs's size bounds.
    pub fn from_body(bytes: &Bytes, bounds: FieldBounds) -> ApiResult<NodeGroupCreate> {
        let b = Body::parse(bytes, "nodegroup", WRITABLE, READ_ONLY)?;
        // Validated, then overwritten (a fresh uuid, the cluster's uuid).
        b.uuid("uuid")?;
        b.uuid("cluster_id")?;
        let mut nodegroup = NodeGroup {
            role: Some("worker".into()),
            node_count: 1,
            ..NodeGroup::default()
        };
        read_attrs(&b, &mut nodegroup)?;
        let merge_labels = b.boolean("merge_labels")?.unwrap_or(false);
        let is_default = b.boolean("is_default")?;
        check_bounds(&nodegroup, None, bounds)?;
        let given = b.raw().keys().filter(|k| b.has(k)).cloned().collect();
        Ok(NodeGroupCreate {
            nodegroup,
            merge_labels,
            is_default,
            given,
        })
    }

    /// Whether the body sets `attr` (present and not null).
    pub fn sets(&self, attr: &str) -> bool {
        self.given.contains(attr)
    }
}

/// Mirrors `NodeGroupController.post` (1.9+): 202 with the new nodegroup.
pub(super) async fn create_nodegroup(
    State(state): State<AppState>,
    ApiVersion(version): ApiVersion,
    ctx: RequestContext,
    headers: HeaderMap,
    MagnumPath(cluster_ident): MagnumPath<String>,
    RawQuery(raw): RawQuery,
    MagnumBody(bytes): MagnumBody,
) -> ApiResult<(StatusCode, Json<Value>)> {
    version.require(MIN_VERSION, VERSIONED_NAME)?;
    Query::parse(raw.as_deref(), &[])?;
    let bounds = FieldBounds::new(&state.config.api);
    let req = NodeGroupCreate::from_body(&bytes, bounds)?;
    let mut ng = req.nodegroup.clone();
    enforce(&state, &ctx, "nodegroup:create")?;
    let tenancy = Tenancy::of(&ctx, false);
    let cluster = lookup::cluster(&state, &tenancy, &cluster_ident).await?;
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
    // Without a driver (its template gone or unsupported) only Magnum's checks apply.
    let driver = state.driver_of(&cluster).await?.ok();
    validate_nodegroup(&ng, driver.as_deref(), Validating::Create)?;
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
        Some(l) if req.merge_labels => {
            let mut merged = cluster_labels.clone();
            merged.extend(l);
            // The body's labels were bounded as given; laid over the cluster's, again.
            bounds.labels(&merged)?;
            merged
        }
        Some(l) => l,
    });
    if let Some(checks) = CloudChecks::of(&state, &ctx) {
        // With the cluster's labels, not the nodegroup's.
        checks
            .flavor_root_volume_size(ng.flavor_id.as_deref(), Some(&cluster_labels))
            .await?;
    }
    ng.uuid = uuid::Uuid::new_v4().to_string();
    ng.cluster_id = cluster.uuid.clone();
    ng.project_id = ctx.project_id.clone().unwrap_or_default();
    ng.is_default = Some(req.is_default.unwrap_or(false));
    ng.stack_id = cluster.stack_id.clone();
    ng.status = Some(Status::CreateInProgress.into());
    // Checked again under the cluster's lock in the transaction that inserts: a cluster
    // delete that raced this create either sees the new nodegroup (and deletes it with the
    // cluster) or this create finds the cluster gone or being deleted.
    let batch = Batch::default()
        .guard(Guard::cluster(&cluster.uuid, tenancy))
        .guard(Guard::cluster_status(&cluster.uuid, status::not_deleting))
        .insert_nodegroup(ng.clone())
        .cluster(
            &cluster.uuid,
            [ClusterSet::Status(Status::UpdateInProgress.into())],
        )
        .operation(NewOperation {
            cluster_uuid: cluster.uuid.clone(),
            nodegroup_uuid: Some(ng.uuid.clone()),
            old_count: None,
            new_count: Some(ng.node_count),
            payload: OpPayload::CreateNodeGroup,
        });
    let refusing = Refusing {
        verb: "Creating",
        on: Subject::NodeGroup,
        cluster: &cluster_ident,
        nodegroup: &ng.name,
        template: "",
    };
    state
        .store
        .commit(batch)
        .await
        .map_err(|e| match &e {
            sqlx::Error::Database(d) if d.is_unique_violation() => {
                ApiError::NodeGroupAlreadyExists {
                    name: ng.name.clone(),
                    cluster: cluster.name.clone().unwrap_or_default(),
                }
            }
            _ => e.into(),
        })?
        .map_err(|refused| refusing.error(refused))?;
    state.operations.kick();
    // The whole nodegroup as recorded (Magnum's `NodeGroup.convert` of the created object;
    // docs/compatibility.md): read back, or as inserted if a delete removed it meanwhile.
    let stored = state.store.nodegroup_by_uuid(&ng.uuid).await?.unwrap_or(ng);
    Ok((
        StatusCode::ACCEPTED,
        Json(render_detail(
            nodegroup_doc(&stored),
            &cluster,
            &base_url(&headers),
        )),
    ))
}
