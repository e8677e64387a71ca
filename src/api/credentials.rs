//! `PATCH /v1/credentials/{cluster}` (microversion 1.12): `CredentialsController.patch` and
//! the conductor's `credential_rotate`, an RPC call whose refusals reach the client. The
//! rotation itself is the cluster driver's (`Certificates::rotate_credential`).

use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::Json;
use serde_json::{json, Value};

use super::authz::enforce;
use super::extract::{ApiVersion, MagnumBody, MagnumPath};
use super::lookup;
use super::microversion::Version;
use super::query::Query;
use super::routes::Routes;
use crate::error::{ApiError, ApiResult};
use crate::model::{RequestContext, Tenancy};
use crate::state::AppState;

pub fn routes() -> Routes {
    Routes::default()
        .patch("/v1/credentials/{cluster_ident}", rotate_credential)
        .patch("/v1/credentials", missing_ident)
}

/// `PATCH` on the collection: past the version gate, WSME misses the identifier argument.
async fn missing_ident(ApiVersion(version): ApiVersion) -> ApiError {
    match version.require(Version::new(1, 12), "patch") {
        Err(refused) => refused,
        Ok(()) => ApiError::MissingArgument("cluster_ident".into()),
    }
}

/// `credential_conductor.ALLOWED_CLUSTER_STATES`.
const ALLOWED: [&str; 10] = [
    "CREATE_COMPLETE",
    "UPDATE_COMPLETE",
    "UPDATE_IN_PROGRESS",
    "UPDATE_FAILED",
    "RESUME_COMPLETE",
    "RESTORE_COMPLETE",
    "ROLLBACK_COMPLETE",
    "SNAPSHOT_COMPLETE",
    "CHECK_COMPLETE",
    "ADOPT_COMPLETE",
];

async fn rotate_credential(
    State(state): State<AppState>,
    ApiVersion(version): ApiVersion,
    ctx: RequestContext,
    MagnumPath(ident): MagnumPath<String>,
    RawQuery(raw): RawQuery,
    MagnumBody(bytes): MagnumBody,
) -> ApiResult<(StatusCode, Json<Value>)> {
    version.require(Version::new(1, 12), "patch")?;
    Query::parse(raw.as_deref(), &[])?;
    // The method takes no body: WSME reads a JSON object's keys as further arguments.
    if let Ok(Value::Object(m)) = serde_json::from_slice::<Value>(&bytes) {
        if let Some(k) = m.keys().next() {
            return Err(ApiError::UnknownArgument(k.clone()));
        }
    }
    enforce(&state, &ctx, "credential:rotate")?;
    let cluster = lookup::cluster(&state, &Tenancy::of(&ctx, false), &ident).await?;
    let current = cluster.status.clone().unwrap_or_default();
    if !ALLOWED.contains(&current.as_str()) {
        // The conductor names its module (`__name__`) as the operation.
        return Err(ApiError::NotSupported(format!(
            "magnum.conductor.handlers.credential_conductor when cluster status is \"{current}\""
        )));
    }
    let driver = state.driver_of(&cluster).await??;
    driver.rotate_credential(&cluster).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({"uuid": cluster.uuid}))))
}
