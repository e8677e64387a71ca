//! `/v1/clustertemplates` (`magnum/api/controllers/v1/cluster_template.py`): the routes,
//! list, show and delete here; the response shape in `view`, POST in `create`, PATCH in
//! `update`, the API type's attributes in `attributes` and Magnum's checks in `validate`.

mod attributes;
mod create;
mod update;
mod validate;
mod view;

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use serde_json::{json, Value};

use super::authz::{admin_all_tenants, enforce, enforce_on};
use super::body::member_post_error;
use super::extract::MagnumPath;
use super::lookup;
use super::query::{base_url, check_marker, next_link, PageArgs, Query, PAGINATION_ARGS};
use super::routes::Routes;
use crate::error::{ApiError, ApiResult};
use crate::model::RequestContext;
use crate::state::AppState;
use crate::store::{Batch, Guard, Marker, Refused, Table};

pub use create::ClusterTemplateCreate;
pub use validate::enforce_volume_storage_size;
pub use view::template_doc;

use create::create_template;
use update::update_template;
use view::render;

pub fn routes() -> Routes {
    Routes::default()
        .get("/v1/clustertemplates", list_templates)
        .post("/v1/clustertemplates", create_template)
        .delete("/v1/clustertemplates", missing_ident)
        .patch("/v1/clustertemplates", missing_ident)
        .get("/v1/clustertemplates/detail", list_templates_detail)
        .get("/v1/clustertemplates/{ident}", show_template)
        .post("/v1/clustertemplates/{ident}", post_on_template)
        .patch("/v1/clustertemplates/{ident}", update_template)
        .delete("/v1/clustertemplates/{ident}", delete_template)
        .get("/v1/clustertemplates/{ident}/detail", detail_under_template)
}

/// Mirrors `ClusterTemplatesController.get_all`.
async fn list_templates(
    State(state): State<AppState>,
    ctx: RequestContext,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    let q = Query::parse(raw.as_deref(), &PAGINATION_ARGS)?;
    let args = PageArgs::from_query(&q)?;
    enforce(&state, &ctx, "clustertemplate:get_all")?;
    collection(
        &state,
        &ctx,
        &headers,
        &args,
        "clustertemplates",
        "clustertemplate:get_all_all_projects",
    )
    .await
}

/// Mirrors `ClusterTemplatesController.detail` (the same full objects as the list).
async fn list_templates_detail(
    State(state): State<AppState>,
    ctx: RequestContext,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    let q = Query::parse(raw.as_deref(), &PAGINATION_ARGS)?;
    let args = PageArgs::from_query(&q)?;
    enforce(&state, &ctx, "clustertemplate:detail")?;
    collection(
        &state,
        &ctx,
        &headers,
        &args,
        "clustertemplates/detail",
        "clustertemplate:detail_all_projects",
    )
    .await
}

/// `DELETE`/`PATCH` on the collection: WSME misses the identifier argument.
async fn missing_ident() -> ApiError {
    ApiError::MissingArgument("cluster_template_ident".into())
}

async fn post_on_template(MagnumPath(ident): MagnumPath<String>) -> ApiError {
    member_post_error("cluster_template", "ClusterTemplate", &ident)
}

/// `GET /v1/clustertemplates/{x}/detail`: WSME binds `{x}` to `detail`'s `marker` (a uuid),
/// then Magnum raises `HTTPNotFound` without arguments ("/detail should only work against
/// collections").
async fn detail_under_template(
    State(state): State<AppState>,
    MagnumPath(ident): MagnumPath<String>,
    ctx: RequestContext,
) -> ApiResult<Json<Value>> {
    check_marker(&ident)?;
    enforce(&state, &ctx, "clustertemplate:detail")?;
    Err(ApiError::ResourceNotFoundUnformatted)
}

async fn collection(
    state: &AppState,
    ctx: &RequestContext,
    headers: &HeaderMap,
    args: &PageArgs,
    resource: &str,
    all_projects_rule: &str,
) -> ApiResult<Json<Value>> {
    let all_tenants = admin_all_tenants(state, ctx, all_projects_rule)?;
    let scope = lookup::template_scope(ctx, all_tenants);
    let (limit, dir) = args.limit_and_dir(state.config.api.max_limit)?;
    let marker_id = match &args.marker {
        Some(m) => Some(lookup::template(state, &scope, m).await?.id),
        None => None,
    };
    let page = args.page(
        limit,
        dir,
        marker_id.map(Marker::Id),
        Table::ClusterTemplate,
    )?;
    let items = state.store.list_templates(&scope, &page).await?;
    let base = base_url(headers);
    let mut body = json!({
        "clustertemplates": items.iter().map(|t| render(t, &base)).collect::<Vec<_>>(),
    });
    if items.len() as i64 == limit {
        if let Some(last) = items.last() {
            body["next"] =
                next_link(&base, resource, limit, &args.sort_key, dir, &last.uuid).into();
        }
    }
    Ok(Json(body))
}

/// Mirrors `ClusterTemplatesController.get_one`.
async fn show_template(
    State(state): State<AppState>,
    ctx: RequestContext,
    headers: HeaderMap,
    MagnumPath(ident): MagnumPath<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    Query::parse(raw.as_deref(), &[])?;
    let all_tenants = admin_all_tenants(&state, &ctx, "clustertemplate:get_one_all_projects")?;
    let scope = lookup::template_scope(&ctx, all_tenants);
    let t = lookup::template(&state, &scope, &ident).await?;
    if t.hidden.unwrap_or(false) && !ctx.is_admin && t.project_id != ctx.project_id {
        return Err(ApiError::ClusterTemplateNotFound(ident));
    }
    if !t.public.unwrap_or(false) {
        enforce_on(
            &state,
            &ctx,
            "clustertemplate:get",
            t.project_id.as_deref(),
            t.user_id.as_deref(),
        )?;
    }
    Ok(Json(render(&t, &base_url(&headers))))
}

/// Mirrors `ClusterTemplatesController.delete` (204).
async fn delete_template(
    State(state): State<AppState>,
    ctx: RequestContext,
    MagnumPath(ident): MagnumPath<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<StatusCode> {
    Query::parse(raw.as_deref(), &[])?;
    let all_tenants = admin_all_tenants(&state, &ctx, "clustertemplate:delete_all_projects")?;
    let scope = lookup::template_scope(&ctx, all_tenants);
    let t = lookup::template(&state, &scope, &ident).await?;
    enforce_on(
        &state,
        &ctx,
        "clustertemplate:delete",
        t.project_id.as_deref(),
        t.user_id.as_deref(),
    )?;
    if state.store.clusters_using_template(&t.uuid).await? > 0 {
        // `destroy()` passes the template's uuid, whatever identifier the client used.
        return Err(ApiError::ClusterTemplateReferenced(t.uuid.clone()));
    }
    // Checked again under the template's lock, which a cluster create takes too: a create
    // that raced this delete either counts here or finds the template gone.
    let batch = Batch::default()
        .guard(Guard::template(&t.uuid))
        .guard(Guard::template_unused(&t.uuid))
        .delete_template(&t.uuid);
    state
        .store
        .commit(batch)
        .await?
        .map_err(|refused| match refused {
            Refused::TemplateInUse => ApiError::ClusterTemplateReferenced(t.uuid.clone()),
            _ => ApiError::ClusterTemplateNotFound(ident.clone()),
        })?;
    Ok(StatusCode::NO_CONTENT)
}
