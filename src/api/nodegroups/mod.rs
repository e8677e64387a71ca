//! `/v1/clusters/{cluster}/nodegroups` (`magnum/api/controllers/v1/nodegroup.py`), from 1.9:
//! the routes, list, show and delete here; the response shapes in `view`, POST in `create`,
//! PATCH in `update`, the API type's attributes in `attributes` and Magnum's checks in
//! `validate`.

mod attributes;
mod create;
mod update;
mod validate;
mod view;

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use serde_json::{json, Value};

use super::authz::{admin_all_tenants, enforce};
use super::body::member_post_error;
use super::extract::{ApiVersion, MagnumPath};
use super::lookup;
use super::microversion::Version;
use super::query::{base_url, next_link, PageArgs, Query};
use super::refusals::{Refusing, Subject};
use super::routes::Routes;
use crate::error::{ApiError, ApiResult};
use crate::model::{status, RequestContext, Status, Tenancy};
use crate::state::AppState;
use crate::store::nodegroups::NodeGroupFilter;
use crate::store::operations::{NewOperation, OpPayload};
use crate::store::{Batch, ClusterSet, Guard, Marker, NodeGroupSet, Refused, Table};

pub use create::NodeGroupCreate;

use create::create_nodegroup;
use update::update_nodegroup;
use view::{nodegroup_doc, render_detail, render_summary};

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

/// `POST` on a member: WSME fails to build a `NodeGroup` from the path segment.
async fn post_on_nodegroup(
    ApiVersion(version): ApiVersion,
    MagnumPath((_cluster, nodegroup)): MagnumPath<(String, String)>,
) -> ApiResult<()> {
    version.require(MIN_VERSION, VERSIONED_NAME)?;
    Err(member_post_error("nodegroup", "NodeGroup", &nodegroup))
}

/// `DELETE`/`PATCH` on the collection: WSME misses the identifier argument.
async fn missing_nodegroup_ident(ApiVersion(version): ApiVersion) -> ApiResult<()> {
    version.require(MIN_VERSION, VERSIONED_NAME)?;
    Err(ApiError::MissingArgument("nodegroup_id".into()))
}

fn project_filter(ctx: &RequestContext) -> Option<String> {
    (!ctx.is_admin).then(|| ctx.project_id.clone().unwrap_or_default())
}

/// Mirrors `NodeGroupController.get_all` (1.9+).
async fn list_nodegroups(
    State(state): State<AppState>,
    ApiVersion(version): ApiVersion,
    ctx: RequestContext,
    headers: HeaderMap,
    MagnumPath(cluster_ident): MagnumPath<String>,
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
    let page = args.page(limit, dir, marker_id.map(Marker::Id), Table::NodeGroup)?;
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
    ApiVersion(version): ApiVersion,
    ctx: RequestContext,
    headers: HeaderMap,
    MagnumPath((cluster_ident, ng_ident)): MagnumPath<(String, String)>,
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

/// Mirrors `NodeGroupController.delete` (1.9+): 204; default nodegroups cannot be deleted.
/// A nodegroup (or cluster) already being deleted answers 204 again and records nothing.
async fn delete_nodegroup(
    State(state): State<AppState>,
    ApiVersion(version): ApiVersion,
    ctx: RequestContext,
    MagnumPath((cluster_ident, ng_ident)): MagnumPath<(String, String)>,
    RawQuery(raw): RawQuery,
) -> ApiResult<StatusCode> {
    version.require(MIN_VERSION, VERSIONED_NAME)?;
    Query::parse(raw.as_deref(), &[])?;
    enforce(&state, &ctx, "nodegroup:delete")?;
    let tenancy = Tenancy::of(&ctx, false);
    let cluster = lookup::cluster(&state, &tenancy, &cluster_ident).await?;
    let ng = lookup::nodegroup(&state, &ctx, &cluster.uuid, &ng_ident).await?;
    if ng.is_default() {
        return Err(ApiError::DeletingDefaultNgNotSupported);
    }
    let batch = Batch::default()
        .guard(Guard::cluster(&cluster.uuid, tenancy))
        .guard(Guard::nodegroup(&ng.uuid, &cluster.uuid))
        .guard(Guard::cluster_status(&cluster.uuid, status::not_deleting))
        .guard(Guard::nodegroup_status(&ng.uuid, status::not_deleting))
        .nodegroup(
            &ng.uuid,
            [NodeGroupSet::Status(Status::DeleteInProgress.into())],
        )
        .cluster(
            &cluster.uuid,
            [ClusterSet::Status(Status::UpdateInProgress.into())],
        )
        .operation(NewOperation {
            cluster_uuid: cluster.uuid.clone(),
            nodegroup_uuid: Some(ng.uuid.clone()),
            old_count: None,
            new_count: None,
            payload: OpPayload::DeleteNodeGroup,
        });
    match state.store.commit(batch).await? {
        Ok(_) => state.operations.kick(),
        // Its delete (or the cluster's) is under way.
        Err(Refused::ClusterStatus(_) | Refused::NodeGroupStatus(_)) => {}
        Err(refused) => {
            return Err(Refusing {
                verb: "Deleting",
                on: Subject::NodeGroup,
                cluster: &cluster_ident,
                nodegroup: &ng_ident,
                template: "",
            }
            .error(refused))
        }
    }
    Ok(StatusCode::NO_CONTENT)
}
