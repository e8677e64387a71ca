//! `GET /v1/stats` (`magnum/api/controllers/v1/stats.py`): cluster and node totals of the
//! caller's project, or of any project (or all) for an admin.

use super::routes::Routes;
use axum::extract::{RawQuery, State};
use axum::Json;
use serde_json::{json, Value};

use super::authz::enforce;
use super::query::Query;
use crate::error::{ApiError, ApiResult};
use crate::model::RequestContext;
use crate::state::AppState;

pub fn routes() -> Routes {
    Routes::default().get("/v1/stats", get_stats)
}

const ALLOWED_TYPES: [&str; 1] = ["cluster"];

/// Mirrors `StatsController.get_all`.
async fn get_stats(
    State(state): State<AppState>,
    ctx: RequestContext,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    let q = Query::parse(raw.as_deref(), &["project_id", "type"])?;
    enforce(&state, &ctx, "stats:get_all")?;
    let kind = q.get("type").unwrap_or("cluster");
    if !ALLOWED_TYPES.contains(&kind.to_lowercase().as_str()) {
        return Err(ApiError::InvalidParameterValue(format!(
            "Invalid stats type. Allowed values are '{}'",
            ALLOWED_TYPES.join(",")
        )));
    }
    let mut project_id = q.get("project_id").filter(|p| !p.is_empty());
    if !ctx.is_admin {
        let own = ctx.project_id.as_deref();
        project_id = project_id.or(own);
        if project_id != own {
            return Err(ApiError::NotAuthorized);
        }
    }
    // An empty project (a context without one) counts every row, as Magnum's `if project_id`.
    let (clusters, nodes) = state
        .store
        .cluster_stats(project_id.filter(|p| !p.is_empty()))
        .await?;
    Ok(Json(json!({"clusters": clusters, "nodes": nodes})))
}
