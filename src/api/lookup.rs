//! Finding resources the way `api_utils.get_resource` and `NodeGroup.get` do: uuid-like
//! identifiers only by uuid, others only by name; nodegroups also by integer id.

use super::query::{is_int_like, is_uuid_like};
use crate::error::{ApiError, ApiResult};
use crate::model::{Cluster, ClusterTemplate, NodeGroup, RequestContext, Tenancy};
use crate::state::AppState;
use crate::store::nodegroups::NodeGroupFilter;
use crate::store::templates::TemplateScope;
use crate::store::{ClusterBy, NodeGroupBy, TemplateBy};

pub async fn cluster(state: &AppState, tenancy: &Tenancy, ident: &str) -> ApiResult<Cluster> {
    let by = if is_uuid_like(ident) {
        ClusterBy::Uuid(ident)
    } else {
        ClusterBy::Name(ident)
    };
    let mut found = state.store.find_clusters(tenancy, by).await?;
    match found.len() {
        0 => Err(ApiError::ClusterNotFound(ident.into())),
        1 => Ok(found.remove(0)),
        _ => Err(ApiError::Conflict(
            "Multiple clusters exist with same name. Please use the cluster uuid instead.".into(),
        )),
    }
}

pub fn template_scope(ctx: &RequestContext, all_tenants: bool) -> TemplateScope {
    TemplateScope {
        tenancy: Tenancy::of(ctx, all_tenants),
        is_admin: ctx.is_admin,
    }
}

pub async fn template(
    state: &AppState,
    scope: &TemplateScope,
    ident: &str,
) -> ApiResult<ClusterTemplate> {
    let by = if is_uuid_like(ident) {
        TemplateBy::Uuid(ident)
    } else {
        TemplateBy::Name(ident)
    };
    let mut found = state.store.find_templates(scope, by).await?;
    match found.len() {
        0 => Err(ApiError::ClusterTemplateNotFound(ident.into())),
        1 => Ok(found.remove(0)),
        _ => Err(ApiError::Conflict(
            "Multiple ClusterTemplates exist with same name. Please use the ClusterTemplate uuid instead."
                .into(),
        )),
    }
}

/// `NodeGroup.get(ctx, cluster_uuid, ident)`: integer id, else uuid, else name; non-admins
/// only see their project's nodegroups.
pub async fn nodegroup(
    state: &AppState,
    ctx: &RequestContext,
    cluster_uuid: &str,
    ident: &str,
) -> ApiResult<NodeGroup> {
    let filter = NodeGroupFilter {
        project_id: if ctx.is_admin {
            None
        } else {
            Some(ctx.project_id.clone().unwrap_or_default())
        },
        role: None,
    };
    let by = match ident.parse::<i64>() {
        Ok(id) if is_int_like(ident) => NodeGroupBy::Id(id),
        _ if is_uuid_like(ident) => NodeGroupBy::Uuid(ident),
        _ => NodeGroupBy::Name(ident),
    };
    state
        .store
        .find_nodegroup(cluster_uuid, &filter, by)
        .await?
        .ok_or_else(|| ApiError::NodeGroupNotFound(ident.into()))
}

/// The cluster's default worker nodegroup (`cluster.default_ng_worker`).
pub async fn default_worker(state: &AppState, cluster: &Cluster) -> ApiResult<NodeGroup> {
    let ngs = state
        .store
        .nodegroups_of_clusters(std::slice::from_ref(&cluster.uuid))
        .await?;
    ngs.into_iter()
        .find(|ng| ng.is_default() && !ng.is_master())
        .ok_or_else(|| ApiError::NodeGroupNotFound("default-worker".into()))
}
