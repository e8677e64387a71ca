//! `/v1/quotas` (`magnum/api/controllers/v1/quota.py`): per-project hard limits in Magnum's
//! `quotas` table. A project without a row has `[quotas] max_clusters_per_project`.

use super::routes::Routes;
use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use serde_json::{json, Value};

use super::authz::enforce;
use super::body::{bool_from_string, py_str, Body};
use super::extract::{MagnumBody, MagnumPath};
use super::query::{base_url, PageArgs, Query, PAGINATION_ARGS};
use crate::error::{ApiError, ApiResult};
use crate::model::RequestContext;
use crate::state::AppState;
use crate::store::quotas::{Quota, QuotaWriteError};
use crate::store::{Marker, Table};

pub fn routes() -> Routes {
    Routes::default()
        .get("/v1/quotas", list_quotas)
        .post("/v1/quotas", create_quota)
        .patch("/v1/quotas", update_quota_from_body)
        .delete("/v1/quotas", missing_project)
        .get("/v1/quotas/{project_id}", missing_resource)
        .patch("/v1/quotas/{project_id}", update_quota_of_project)
        .delete("/v1/quotas/{project_id}", missing_resource)
        .get("/v1/quotas/{project_id}/{resource}", show_quota)
        .patch("/v1/quotas/{project_id}/{resource}", update_quota)
        .delete("/v1/quotas/{project_id}/{resource}", delete_quota)
}

/// The only resource Magnum counts (`fields.QuotaResourceName.ALL`).
pub const CLUSTER_RESOURCE: &str = "Cluster";

/// The attributes of Magnum's `Quota` API type (`created_at`/`updated_at` come from
/// `APIBase`; they and `id` are accepted and ignored, see docs/compatibility.md).
const ATTRIBUTES: &[&str] = &[
    "id",
    "hard_limit",
    "project_id",
    "resource",
    "created_at",
    "updated_at",
];

/// The hard limit that applies to `project_id` for `resource`: its row, else the default.
pub async fn effective_limit(state: &AppState, project_id: &str, resource: &str) -> ApiResult<i64> {
    Ok(match state.store.quota_of(project_id, resource).await? {
        Some(q) => q.hard_limit,
        None => state.config.quotas.max_clusters_per_project,
    })
}

fn render(q: &Quota) -> Value {
    json!({
        "id": q.id,
        "hard_limit": q.hard_limit,
        "project_id": q.project_id,
        "resource": q.resource,
        "created_at": q.created_at,
        "updated_at": q.updated_at,
    })
}

fn not_found(project_id: &str, resource: &str) -> ApiError {
    ApiError::QuotaNotFound(format!("project_id {project_id} resource {resource}."))
}

fn write_error(e: QuotaWriteError, project_id: &str, resource: &str) -> ApiError {
    match e {
        QuotaWriteError::Exists => ApiError::QuotaAlreadyExists {
            project_id: project_id.into(),
            resource: resource.into(),
        },
        QuotaWriteError::Missing => not_found(project_id, resource),
        QuotaWriteError::Sql(e) => e.into(),
    }
}

/// Mirrors `QuotaController.get_all`.
async fn list_quotas(
    State(state): State<AppState>,
    ctx: RequestContext,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    let mut allowed = PAGINATION_ARGS.to_vec();
    allowed.push("all_tenants");
    let q = Query::parse(raw.as_deref(), &allowed)?;
    let marker = match q.get("marker") {
        None => None,
        Some(m) => Some(m.trim().parse::<i64>().map_err(|_| {
            ApiError::invalid_input(
                "marker",
                m,
                format!("unable to convert to int. Error: invalid literal for int() with base 10: '{m}'"),
            )
        })?),
    };
    let args = PageArgs::from_query(&Query::parse(
        Some(&without_marker(raw.as_deref())),
        &allowed,
    )?)?;
    // WSME's `types.boolean` (Magnum answers 500 to a value it cannot convert).
    let all_tenants = match q.get("all_tenants") {
        None => false,
        Some(v) => bool_from_string(v).map_err(ApiError::InvalidParameterValue)?,
    };
    enforce(&state, &ctx, "quota:get_all")?;
    let project = if !ctx.is_admin || !all_tenants {
        Some(ctx.project_id.clone().unwrap_or_default())
    } else {
        None
    };
    let (limit, dir) = args.limit_and_dir(state.config.api.max_limit)?;
    let marker_id = match marker {
        Some(id) => match state.store.quota_by_id(id).await? {
            Some(q) => Some(q.id),
            None => return Err(ApiError::QuotaNotFound(format!("quota id {id} ."))),
        },
        None => None,
    };
    let page = args.page(limit, dir, marker_id.map(Marker::Id), Table::Quota)?;
    let items = state.store.list_quotas(project.as_deref(), &page).await?;
    let mut body = json!({"quotas": items.iter().map(render).collect::<Vec<_>>()});
    if items.len() as i64 == limit {
        if let Some(last) = items.last() {
            body["next"] = format!(
                "{}/v1/quotas?sort_key={}&sort_dir={}&limit={limit}&marker={}",
                base_url(&headers),
                args.sort_key,
                dir.as_str(),
                last.id
            )
            .into();
        }
    }
    Ok(Json(body))
}

/// The query without `marker`, whose quota form (an integer id) `PageArgs` does not read.
fn without_marker(raw: Option<&str>) -> String {
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(
            form_urlencoded::parse(raw.unwrap_or("").as_bytes()).filter(|(k, _)| k != "marker"),
        )
        .finish()
}

/// `PATCH|DELETE /v1/quotas`: WSME misses the path arguments.
async fn missing_project() -> ApiError {
    ApiError::MissingArgument("project_id".into())
}

/// `GET|PATCH|DELETE /v1/quotas/{project_id}`: WSME misses the second path argument.
async fn missing_resource() -> ApiError {
    ApiError::MissingArgument("resource".into())
}

/// Mirrors `QuotaController.get_one`.
async fn show_quota(
    State(state): State<AppState>,
    ctx: RequestContext,
    MagnumPath((project_id, resource)): MagnumPath<(String, String)>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    Query::parse(raw.as_deref(), &[])?;
    enforce(&state, &ctx, "quota:get")?;
    if !ctx.is_admin && Some(project_id.as_str()) != ctx.project_id.as_deref() {
        return Err(ApiError::NotAuthorized);
    }
    Ok(Json(
        match state.store.quota_of(&project_id, &resource).await? {
            Some(q) => render(&q),
            // Magnum's default `Quota` has no id or timestamps, and its resource is the
            // attribute default whatever the path said.
            None => json!({
                "hard_limit": state.config.quotas.max_clusters_per_project,
                "project_id": project_id,
                "resource": CLUSTER_RESOURCE,
            }),
        },
    ))
}

/// The `Quota` body attributes WSME validates; `hard_limit` defaults to 1.
struct QuotaBody {
    hard_limit: i64,
    project_id: Option<String>,
    resource: Option<String>,
}

fn quota_body(bytes: &Bytes, argname: &'static str) -> ApiResult<QuotaBody> {
    let b = Body::parse(bytes, argname, ATTRIBUTES, &[])?;
    // WSME converts integer attributes while it builds the object, so a string that is no
    // integer is reported against the whole body.
    for name in ["id", "hard_limit"] {
        if let Some(Value::String(s)) = b.raw().get(name) {
            if s.trim().parse::<i64>().is_err() {
                return Err(ApiError::invalid_input(
                    argname,
                    py_str(&Value::Object(b.raw().clone())),
                    format!("invalid literal for int() with base 10: '{s}'"),
                ));
            }
        }
    }
    b.int("id", Some(1))?;
    let hard_limit = b.int("hard_limit", Some(0))?.unwrap_or(1);
    let project_id = b.string("project_id", 1, 255)?;
    if let Some(r) = b.raw().get("resource").filter(|v| !v.is_null()) {
        if r.as_str() != Some(CLUSTER_RESOURCE) {
            return Err(ApiError::invalid_input(
                "resource",
                py_str(r),
                format!("Value should be one of: {CLUSTER_RESOURCE}"),
            ));
        }
    }
    let resource = b.text("resource")?;
    Ok(QuotaBody {
        hard_limit,
        project_id,
        resource,
    })
}

/// Mirrors `QuotaController.post`.
async fn create_quota(
    State(state): State<AppState>,
    ctx: RequestContext,
    RawQuery(raw): RawQuery,
    MagnumBody(bytes): MagnumBody,
) -> ApiResult<(StatusCode, Json<Value>)> {
    Query::parse(raw.as_deref(), &[])?;
    let body = quota_body(&bytes, "quota")?;
    enforce(&state, &ctx, "quota:create")?;
    let Some(project_id) = body.project_id else {
        return Err(ApiError::InvalidParameterValue(
            "Must provide a valid project ID.".into(),
        ));
    };
    let q = state
        .store
        .insert_quota(&project_id, CLUSTER_RESOURCE, body.hard_limit)
        .await
        .map_err(|e| write_error(e, &project_id, CLUSTER_RESOURCE))?;
    Ok((StatusCode::CREATED, Json(render(&q))))
}

/// Mirrors `QuotaController.patch`: the body is a `Quota` (not a JSON patch); the path's
/// project and resource win over the body's, and an absent `hard_limit` means 1.
async fn update_quota(
    State(state): State<AppState>,
    ctx: RequestContext,
    MagnumPath((project_id, resource)): MagnumPath<(String, String)>,
    RawQuery(raw): RawQuery,
    MagnumBody(bytes): MagnumBody,
) -> ApiResult<(StatusCode, Json<Value>)> {
    Query::parse(raw.as_deref(), &[])?;
    let body = quota_body(&bytes, "quotapatch")?;
    enforce(&state, &ctx, "quota:update")?;
    let q = state
        .store
        .update_quota(&project_id, &resource, body.hard_limit)
        .await
        .map_err(|e| write_error(e, &project_id, &resource))?;
    Ok((StatusCode::ACCEPTED, Json(render(&q))))
}

/// `PATCH /v1/quotas` (python-magnumclient's `quotas update` sends this): WSME fills the
/// missing path arguments from the body's `project_id` and `resource`.
async fn update_quota_from_body(
    state: State<AppState>,
    ctx: RequestContext,
    raw: RawQuery,
    MagnumBody(bytes): MagnumBody,
) -> ApiResult<(StatusCode, Json<Value>)> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(missing_project().await);
    }
    let body = quota_body(&bytes, "quotapatch")?;
    let project_id = body.project_id.ok_or(missing_project().await)?;
    let resource = body.resource.ok_or(missing_resource().await)?;
    update_quota(
        state,
        ctx,
        MagnumPath((project_id, resource)),
        raw,
        MagnumBody(bytes),
    )
    .await
}

/// `PATCH /v1/quotas/{project_id}`: the resource from the body, as above.
async fn update_quota_of_project(
    state: State<AppState>,
    ctx: RequestContext,
    MagnumPath(project_id): MagnumPath<String>,
    raw: RawQuery,
    MagnumBody(bytes): MagnumBody,
) -> ApiResult<(StatusCode, Json<Value>)> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(missing_resource().await);
    }
    let body = quota_body(&bytes, "quotapatch")?;
    let resource = body.resource.ok_or(missing_resource().await)?;
    update_quota(
        state,
        ctx,
        MagnumPath((project_id, resource)),
        raw,
        MagnumBody(bytes),
    )
    .await
}

/// Mirrors `QuotaController.delete`.
async fn delete_quota(
    State(state): State<AppState>,
    ctx: RequestContext,
    MagnumPath((project_id, resource)): MagnumPath<(String, String)>,
    RawQuery(raw): RawQuery,
) -> ApiResult<StatusCode> {
    Query::parse(raw.as_deref(), &[])?;
    enforce(&state, &ctx, "quota:delete")?;
    state
        .store
        .delete_quota(&project_id, &resource)
        .await
        .map_err(|e| write_error(e, &project_id, &resource))?;
    Ok(StatusCode::NO_CONTENT)
}
