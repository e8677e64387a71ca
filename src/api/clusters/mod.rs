//! `/v1/clusters` (`magnum/api/controllers/v1/cluster.py`): the routes, list, show and
//! delete here; the response shapes in `view`, POST in `create`, PATCH in `update`.

mod create;
mod labels;
mod update;
mod view;

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse as _, Response};
use axum::Json;
use serde_json::{json, Map, Value};

use super::authz::{admin_all_tenants, enforce, enforce_on};
use super::body::member_post_error;
use super::extract::{ApiVersion, MagnumPath};
use super::lookup;
use super::microversion::Version;
use super::query::{base_url, check_marker, next_link, PageArgs, Query, PAGINATION_ARGS};
use super::refusals::{Refusing, Subject};
use super::routes::Routes;
use crate::error::{ApiError, ApiResult};
use crate::model::{status, RequestContext, Status, Tenancy};
use crate::state::AppState;
use crate::store::operations::{NewOperation, OpPayload};
use crate::store::{Batch, ClusterSet, Guard, Marker, Refused, Table};

pub use create::ClusterCreate;
pub use update::validate_cluster_properties;
pub use view::{cluster_doc, labels_diff};

use create::create_cluster;
use update::update_cluster;
use view::{render_details, summaries};

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

/// Mirrors `ClustersController.get_all`.
async fn list_clusters(
    State(state): State<AppState>,
    ApiVersion(version): ApiVersion,
    ctx: RequestContext,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    let q = Query::parse(raw.as_deref(), &PAGINATION_ARGS)?;
    let args = PageArgs::from_query(&q)?;
    enforce(&state, &ctx, "cluster:get_all")?;
    collection(&state, &ctx, version, &headers, &args, false).await
}

/// Mirrors `ClustersController.detail`.
async fn list_clusters_detail(
    State(state): State<AppState>,
    ApiVersion(version): ApiVersion,
    ctx: RequestContext,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    let q = Query::parse(raw.as_deref(), &PAGINATION_ARGS)?;
    let args = PageArgs::from_query(&q)?;
    enforce(&state, &ctx, "cluster:detail")?;
    collection(&state, &ctx, version, &headers, &args, true).await
}

/// `DELETE`/`PATCH` on the collection: WSME misses the identifier argument.
async fn missing_ident() -> ApiError {
    ApiError::MissingArgument("cluster_ident".into())
}

async fn post_on_cluster(MagnumPath(ident): MagnumPath<String>) -> ApiError {
    member_post_error("cluster", "Cluster", &ident)
}

/// `GET /v1/clusters/{x}/detail`: WSME binds `{x}` to `detail`'s `marker` (a uuid), then
/// Magnum raises `HTTPNotFound` without arguments.
async fn detail_under_cluster(
    State(state): State<AppState>,
    MagnumPath(ident): MagnumPath<String>,
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
) -> ApiResult<Response> {
    let rule = if expand {
        "cluster:detail_all_projects"
    } else {
        "cluster:get_all_all_projects"
    };
    let all_tenants = admin_all_tenants(state, ctx, rule)?;
    let tenancy = Tenancy::of(ctx, all_tenants);
    let (limit, dir) = args.limit_and_dir(state.config.api.max_limit)?;
    // The marker is looked up by the page's own statement; Magnum looks it up first, so a
    // page that cannot be built (a bad sort key) or comes back empty asks whether it exists.
    let marker = args.marker.as_ref().map(|uuid| Marker::Uuid {
        uuid: uuid.clone(),
        tenancy: tenancy.clone(),
    });
    let page = match args.page(limit, dir, marker, Table::Cluster) {
        Ok(page) => page,
        Err(e) => {
            marker_must_exist(state, &tenancy, args).await?;
            return Err(e);
        }
    };
    let base = base_url(headers);
    let next = |len: usize, last: Option<&str>| match last {
        Some(last) if len as i64 == limit => {
            let resource = if expand {
                "clusters/detail"
            } else {
                "clusters"
            };
            Some(next_link(&base, resource, limit, &args.sort_key, dir, last))
        }
        _ => None,
    };
    if expand {
        let clusters = state.store.list_clusters(&tenancy, &page).await?;
        if clusters.is_empty() {
            marker_must_exist(state, &tenancy, args).await?;
        }
        let items = render_details(state, &clusters, version, &base).await?;
        let next = next(clusters.len(), clusters.last().map(|c| c.uuid.as_str()));
        Ok(Json(ClusterPage {
            clusters: items,
            next,
        })
        .into_response())
    } else {
        let clusters = state.store.list_cluster_summaries(&tenancy, &page).await?;
        if clusters.is_empty() {
            marker_must_exist(state, &tenancy, args).await?;
        }
        let next = next(clusters.len(), clusters.last().map(|c| c.uuid.as_str()));
        let items = summaries(&clusters, version, &base);
        let hint = SUMMARY_BYTES_HINT * items.len();
        Ok(json_with_capacity(
            &ClusterPage {
                clusters: items,
                next,
            },
            hint,
        ))
    }
}

/// The list's `marker`, if any, names a cluster visible within `tenancy` (or 404, as
/// Magnum's `Cluster.get_by_uuid` of the marker).
async fn marker_must_exist(state: &AppState, tenancy: &Tenancy, args: &PageArgs) -> ApiResult<()> {
    let Some(m) = &args.marker else {
        return Ok(());
    };
    match state.store.cluster_marker_id(tenancy, m).await? {
        Some(_) => Ok(()),
        None => Err(ApiError::ClusterNotFound(m.clone())),
    }
}

/// About what one cluster of the summary list takes in the response: the buffer is sized
/// once instead of doubled a dozen times for a page of fifty.
const SUMMARY_BYTES_HINT: usize = 768;

/// `Json(body)`, serialized into a buffer of `capacity` bytes to begin with.
fn json_with_capacity<T: serde::Serialize>(body: &T, capacity: usize) -> Response {
    let mut buf = Vec::with_capacity(capacity);
    match serde_json::to_writer(&mut buf, body) {
        Ok(()) => (
            [(
                axum::http::header::CONTENT_TYPE,
                axum::http::HeaderValue::from_static("application/json"),
            )],
            buf,
        )
            .into_response(),
        Err(e) => ApiError::Internal(e.into()).into_response(),
    }
}

/// A page of the collection: `{"clusters": [...]}`, with `next` when the page is full.
#[derive(serde::Serialize)]
struct ClusterPage<T> {
    clusters: Vec<T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next: Option<String>,
}

/// Mirrors `ClustersController.get_one`, with `faults` for failed clusters.
async fn show_cluster(
    State(state): State<AppState>,
    ApiVersion(version): ApiVersion,
    ctx: RequestContext,
    headers: HeaderMap,
    MagnumPath(ident): MagnumPath<String>,
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
    let mut items = render_details(&state, std::slice::from_ref(&c), version, &base).await?;
    let mut doc = items.pop().unwrap_or(Value::Null);
    if status::is_failed(c.status.as_deref().unwrap_or_default()) {
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

/// Mirrors `ClustersController.delete` (204; the driver deletes asynchronously). A cluster
/// already being deleted answers 204 again and records nothing: its delete is under way.
async fn delete_cluster(
    State(state): State<AppState>,
    ctx: RequestContext,
    MagnumPath(ident): MagnumPath<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<StatusCode> {
    Query::parse(raw.as_deref(), &[])?;
    let all_tenants = admin_all_tenants(&state, &ctx, "cluster:delete_all_projects")?;
    let tenancy = Tenancy::of(&ctx, all_tenants);
    let c = lookup::cluster(&state, &tenancy, &ident).await?;
    enforce_on(
        &state,
        &ctx,
        "cluster:delete",
        c.project_id.as_deref(),
        c.user_id.as_deref(),
    )?;
    let batch = Batch::default()
        .guard(Guard::cluster(&c.uuid, tenancy))
        .guard(Guard::cluster_status(&c.uuid, status::not_deleting))
        .cluster(&c.uuid, ClusterSet::status(Status::DeleteInProgress))
        .operation(NewOperation {
            cluster_uuid: c.uuid.clone(),
            nodegroup_uuid: None,
            old_count: None,
            new_count: None,
            payload: OpPayload::DeleteCluster,
        });
    match state.store.commit(batch).await? {
        Ok(_) => state.operations.kick(),
        Err(Refused::ClusterStatus(_)) => {}
        Err(refused) => {
            return Err(Refusing {
                verb: "Deleting",
                on: Subject::Cluster,
                cluster: &ident,
                nodegroup: "",
                template: "",
            }
            .error(refused))
        }
    }
    Ok(StatusCode::NO_CONTENT)
}
