//! `GET /v1/mservices` (`magnum/api/controllers/v1/magnum_services.py`): the processes doing
//! the conductor's work, from Magnum's `magnum_service` table, with their computed state.

use super::routes::Routes;
use axum::extract::{RawQuery, State};
use axum::Json;
use serde_json::{json, Value};

use super::authz::enforce;
use super::query::Query;
use crate::error::ApiResult;
use crate::model::RequestContext;
use crate::mservice::is_up;
use crate::state::AppState;
use crate::store::iso8601;

pub fn routes() -> Routes {
    Routes::default().get("/v1/mservices", list_services)
}

/// Mirrors `MagnumServiceController.get_all`.
async fn list_services(
    State(state): State<AppState>,
    ctx: RequestContext,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    Query::parse(raw.as_deref(), &[])?;
    enforce(&state, &ctx, "magnum-service:get_all")?;
    let now = chrono::Utc::now().naive_utc();
    let down_time = state.config.service.service_down_time;
    let services = state.store.list_services().await?;
    let items: Vec<Value> = services
        .iter()
        .map(|s| {
            json!({
                "host": s.host,
                "binary": s.binary,
                "state": if is_up(s, down_time, now) { "up" } else { "down" },
                "id": s.id,
                "report_count": s.report_count,
                "disabled": s.disabled,
                "disabled_reason": s.disabled_reason,
                "created_at": s.created_at.as_deref().map(iso8601),
                "updated_at": s.updated_at.as_deref().map(iso8601),
            })
        })
        .collect();
    Ok(Json(json!({"mservices": items})))
}
