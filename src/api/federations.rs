//! `/v1/federations` (`magnum/api/controllers/v1/federation.py`): a host cluster, its member
//! clusters and a DNS zone. Magnum 23's conductor drops every write (`NotImplementedError`
//! after the API's 202); magnum-rs records them, since no driver has federation work to do
//! (docs/compatibility.md, `diff:federations-recorded`).

use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use serde_json::{json, Map, Value};

use super::authz::{enforce, enforce_on};
use super::body::{bool_from_string, check_name_pattern, member_post_error, py_str, Body};
use super::bounds::FieldBounds;
use super::extract::{MagnumBody, MagnumPath};
use super::jsonpatch::{self, PatchOp, BASE_INTERNAL};
use super::query::{
    base_url, check_marker, is_uuid_like, next_link, PageArgs, Query, PAGINATION_ARGS,
};
use super::routes::Routes;
use crate::error::{ApiError, ApiResult};
use crate::model::{RequestContext, Tenancy};
use crate::state::AppState;
use crate::store::federations::{Federation, FederationChange, FederationUpdate, NewFederation};
use crate::store::{ClusterBy, Marker, Table};

pub fn routes() -> Routes {
    Routes::default()
        .get("/v1/federations", list_federations)
        .post("/v1/federations", create_federation)
        .delete("/v1/federations", missing_ident)
        .patch("/v1/federations", missing_ident)
        .get("/v1/federations/detail", list_federations_detail)
        .get("/v1/federations/{ident}", show_federation)
        .post("/v1/federations/{ident}", post_on_federation)
        .patch("/v1/federations/{ident}", update_federation)
        .delete("/v1/federations/{ident}", delete_federation)
        .get("/v1/federations/{ident}/detail", detail_under_federation)
}

/// The attributes of Magnum's `Federation` API type.
const WRITABLE: &[&str] = &[
    "uuid",
    "name",
    "hostcluster_id",
    "member_ids",
    "status",
    "status_reason",
    "properties",
    "created_at",
    "updated_at",
];
const READ_ONLY: &[&str] = &["links"];

/// `fields.FederationStatus.ALL`.
const STATUSES: &[&str] = &[
    "CREATE_IN_PROGRESS",
    "CREATE_FAILED",
    "CREATE_COMPLETE",
    "UPDATE_IN_PROGRESS",
    "UPDATE_FAILED",
    "UPDATE_COMPLETE",
    "DELETE_IN_PROGRESS",
    "DELETE_FAILED",
    "DELETE_COMPLETE",
];

/// `validation.federation_update_allowed_properties`.
const UPDATABLE: &[&str] = &["member_ids", "properties"];

/// Concurrent updates of one federation are retried this often before the last one is told
/// to try again.
const UPDATE_ATTEMPTS: usize = 8;

/// Every federation of the caller's project: `context.all_tenants` is never set on this
/// controller, so admins see their own project's too.
fn tenancy(ctx: &RequestContext) -> Tenancy {
    Tenancy::of(ctx, false)
}

fn links(base: &str, uuid: &str) -> Value {
    json!([
        {"href": format!("{base}/v1/federations/{uuid}"), "rel": "self"},
        {"href": format!("{base}/federations/{uuid}"), "rel": "bookmark"},
    ])
}

/// The expanded form (`get_one`, `detail`).
fn render(f: &Federation, base: &str) -> Value {
    json!({
        "uuid": f.uuid,
        "name": f.name,
        "hostcluster_id": f.hostcluster_id,
        "member_ids": f.member_ids,
        "status": f.status,
        "status_reason": f.status_reason,
        "properties": f.properties,
        "created_at": f.created_at,
        "updated_at": f.updated_at,
        "links": links(base, &f.uuid),
    })
}

/// The list form (`unset_fields_except`).
fn render_short(f: &Federation, base: &str) -> Value {
    json!({
        "uuid": f.uuid,
        "name": f.name,
        "hostcluster_id": f.hostcluster_id,
        "member_ids": f.member_ids,
        "status": f.status,
        "properties": f.properties,
        "links": links(base, &f.uuid),
    })
}

/// `api_utils.get_resource('Federation', ident)`.
async fn lookup(state: &AppState, ctx: &RequestContext, ident: &str) -> ApiResult<Federation> {
    let by_name = !is_uuid_like(ident);
    let mut found = state
        .store
        .find_federations(&tenancy(ctx), by_name, ident)
        .await?;
    match found.len() {
        0 => Err(ApiError::FederationNotFound(ident.into())),
        1 => Ok(found.remove(0)),
        _ => Err(ApiError::Conflict(
            "Multiple federations exist with same name. Please use the federation uuid instead."
                .into(),
        )),
    }
}

/// `Cluster.get_by_uuid` within the caller's project.
async fn cluster_exists(state: &AppState, ctx: &RequestContext, uuid: &str) -> ApiResult<String> {
    let found = state
        .store
        .find_clusters(&Tenancy::of(ctx, false), ClusterBy::Uuid(uuid))
        .await?;
    found
        .into_iter()
        .next()
        .map(|c| c.uuid)
        .ok_or_else(|| ApiError::ClusterNotFound(uuid.into()))
}

/// Mirrors `FederationsController.get_all`.
async fn list_federations(
    State(state): State<AppState>,
    ctx: RequestContext,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    let args = PageArgs::from_query(&Query::parse(raw.as_deref(), &PAGINATION_ARGS)?)?;
    enforce(&state, &ctx, "federation:get_all")?;
    collection(&state, &ctx, &headers, &args, "federations", false).await
}

/// Mirrors `FederationsController.detail`.
async fn list_federations_detail(
    State(state): State<AppState>,
    ctx: RequestContext,
    headers: HeaderMap,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    let args = PageArgs::from_query(&Query::parse(raw.as_deref(), &PAGINATION_ARGS)?)?;
    enforce(&state, &ctx, "federation:detail")?;
    collection(&state, &ctx, &headers, &args, "federations/detail", true).await
}

async fn collection(
    state: &AppState,
    ctx: &RequestContext,
    headers: &HeaderMap,
    args: &PageArgs,
    resource: &str,
    expand: bool,
) -> ApiResult<Json<Value>> {
    let (limit, dir) = args.limit_and_dir(state.config.api.max_limit)?;
    let marker_id = match &args.marker {
        Some(m) => Some(
            state
                .store
                .find_federations(&tenancy(ctx), false, m)
                .await?
                .first()
                .ok_or_else(|| ApiError::FederationNotFound(m.clone()))?
                .id,
        ),
        None => None,
    };
    let page = args.page(limit, dir, marker_id.map(Marker::Id), Table::Federation)?;
    let items = state.store.list_federations(&tenancy(ctx), &page).await?;
    let base = base_url(headers);
    let view = if expand { render } else { render_short };
    let mut body = json!({
        "federations": items.iter().map(|f| view(f, &base)).collect::<Vec<_>>(),
    });
    if items.len() as i64 == limit {
        if let Some(last) = items.last() {
            body["next"] =
                next_link(&base, resource, limit, &args.sort_key, dir, &last.uuid).into();
        }
    }
    Ok(Json(body))
}

/// `DELETE`/`PATCH` on the collection: WSME misses the identifier argument.
async fn missing_ident() -> ApiError {
    ApiError::MissingArgument("federation_ident".into())
}

async fn post_on_federation(MagnumPath(ident): MagnumPath<String>) -> ApiError {
    member_post_error("federation", "Federation", &ident)
}

/// `GET /v1/federations/{x}/detail`: `{x}` is `detail`'s marker, then "/detail should only
/// work against collections".
async fn detail_under_federation(
    State(state): State<AppState>,
    MagnumPath(ident): MagnumPath<String>,
    ctx: RequestContext,
) -> ApiResult<Json<Value>> {
    check_marker(&ident)?;
    enforce(&state, &ctx, "federation:detail")?;
    Err(ApiError::ResourceNotFoundUnformatted)
}

/// Mirrors `FederationsController.get_one`.
async fn show_federation(
    State(state): State<AppState>,
    ctx: RequestContext,
    headers: HeaderMap,
    MagnumPath(ident): MagnumPath<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<Value>> {
    Query::parse(raw.as_deref(), &[])?;
    let f = lookup(&state, &ctx, &ident).await?;
    enforce_on(
        &state,
        &ctx,
        "federation:get",
        f.project_id.as_deref(),
        None,
    )?;
    Ok(Json(render(&f, &base_url(&headers))))
}

/// The `Federation` type's attribute checks, on a body or a patched dictionary.
struct Attributes {
    name: Option<String>,
    hostcluster_id: Option<String>,
    member_ids: Option<Vec<Value>>,
    properties: Option<Map<String, Value>>,
}

fn attributes(b: &Body) -> ApiResult<Attributes> {
    b.uuid("uuid")?;
    let name = b.string("name", 1, 242)?;
    if let Some(n) = &name {
        check_name_pattern("name", n)?;
    }
    let hostcluster_id = b.text("hostcluster_id")?;
    let member_ids = b.list("member_ids")?;
    if let Some(bad) = member_ids
        .iter()
        .flatten()
        .find(|v| !v.is_string() && !v.is_null())
    {
        return Err(ApiError::invalid_input(
            "member_ids",
            py_str(&Value::Array(member_ids.clone().unwrap_or_default())),
            format!(
                "Wrong type. Expected '<class 'str'>', got '<class '{}'>'",
                super::body::py_type(bad)
            ),
        ));
    }
    b.one_of("status", STATUSES)?;
    b.text("status_reason")?;
    let properties = b.text_dict("properties")?;
    Ok(Attributes {
        name,
        hostcluster_id,
        member_ids,
        properties,
    })
}

/// magnum-rs's size bounds (`[api] max_field_size`) on the `properties` and `member_ids` of
/// `a` that differ from `before`'s (both, on a create). Run after WSME's checks.
fn check_bounds(a: &Attributes, before: Option<&Federation>, bounds: FieldBounds) -> ApiResult<()> {
    if let Some(p) = &a.properties {
        if before.is_none_or(|f| f.properties.as_ref() != Some(p)) {
            bounds.dict("properties", p)?;
        }
    }
    if let Some(m) = &a.member_ids {
        if before.is_none_or(|f| f.member_ids.as_ref() != Some(m)) {
            bounds.list("member_ids", m)?;
        }
    }
    Ok(())
}

/// Mirrors `FederationsController.post`: 202 with the new uuid. The federation is recorded
/// complete at once (there is nothing for a driver to build).
async fn create_federation(
    State(state): State<AppState>,
    ctx: RequestContext,
    RawQuery(raw): RawQuery,
    MagnumBody(bytes): MagnumBody,
) -> ApiResult<(StatusCode, Json<Value>)> {
    Query::parse(raw.as_deref(), &[])?;
    let b = Body::parse(&bytes, "federation", WRITABLE, READ_ONLY)?;
    let a = attributes(&b)?;
    check_bounds(&a, None, FieldBounds::new(&state.config.api))?;
    enforce(&state, &ctx, "federation:create")?;
    // `attr_validator.validate_federation_hostcluster`.
    let Some(host) = &a.hostcluster_id else {
        return Err(ApiError::InvalidParameterValue(
            "No hostcluster specified. Please specify a hostcluster_id.".into(),
        ));
    };
    super::lookup::cluster(&state, &Tenancy::of(&ctx, false), host).await?;
    let properties = validate_federation_properties(a.properties)?;
    // The body's uuid is validated, then replaced.
    let uuid = uuid::Uuid::new_v4().to_string();
    let new = NewFederation {
        uuid: uuid.clone(),
        project_id: ctx.project_id.clone(),
        name: a
            .name
            .unwrap_or_else(|| format!("{}-federation", crate::names::generate())),
        hostcluster_id: a.hostcluster_id,
        member_ids: a.member_ids.unwrap_or_default(),
        status: "CREATE_COMPLETE".into(),
        status_reason: None,
        properties,
    };
    state.store.insert_federation(&new).await?;
    Ok((StatusCode::ACCEPTED, Json(json!({"uuid": uuid}))))
}

/// `attr_validator.validate_federation_properties`: a create needs a `properties` dict
/// naming a `dns-zone`.
fn validate_federation_properties(
    properties: Option<Map<String, Value>>,
) -> ApiResult<Map<String, Value>> {
    let Some(properties) = properties else {
        return Err(ApiError::InvalidParameterValue(
            "Please specify a `properties` dict for the federation.".into(),
        ));
    };
    if properties.get("dns-zone").is_none_or(Value::is_null) {
        return Err(ApiError::InvalidParameterValue(
            "No DNS zone specified. Please specify a `dns-zone`.".into(),
        ));
    }
    Ok(properties)
}

/// `validation.validate_federation_properties(delta)`: a PATCH changes only the
/// properties in `federation_update_allowed_properties`.
fn validate_federation_delta(
    before: &Map<String, Value>,
    after: &Map<String, Value>,
) -> ApiResult<()> {
    let mut disallowed: Vec<&str> = WRITABLE
        .iter()
        .copied()
        .filter(|k| {
            let was = before.get(*k).unwrap_or(&Value::Null);
            !UPDATABLE.contains(k) && after.get(*k).unwrap_or(&Value::Null) != was
        })
        .collect();
    disallowed.sort_unstable();
    if disallowed.is_empty() {
        Ok(())
    } else {
        Err(ApiError::InvalidParameterValue(format!(
            "cannot change federation property(ies) {}.",
            disallowed.join(", ")
        )))
    }
}

/// Mirrors `FederationsController.patch`: 202 with the uuid. `add`/`remove` of a value at
/// `/member_ids` joins or unjoins one cluster; other attributes than `member_ids` and
/// `properties` cannot change.
async fn update_federation(
    State(state): State<AppState>,
    ctx: RequestContext,
    MagnumPath(ident): MagnumPath<String>,
    RawQuery(raw): RawQuery,
    MagnumBody(bytes): MagnumBody,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let q = Query::parse(raw.as_deref(), &["rollback"])?;
    if let Some(r) = q.get("rollback") {
        bool_from_string(r).map_err(|e| {
            ApiError::invalid_input(
                "rollback",
                r,
                format!("unable to convert to boolean. Error: {e}"),
            )
        })?;
    }
    let ops = jsonpatch::parse(&bytes, &BASE_INTERNAL, &[])?;
    for _ in 0..UPDATE_ATTEMPTS {
        let current = lookup(&state, &ctx, &ident).await?;
        enforce_on(
            &state,
            &ctx,
            "federation:update",
            current.project_id.as_deref(),
            None,
        )?;
        let change = patched(&state, &ctx, &current, &ops).await?;
        match state.store.update_federation(&current, &change).await? {
            FederationUpdate::Done => {
                return Ok((StatusCode::ACCEPTED, Json(json!({"uuid": current.uuid}))))
            }
            FederationUpdate::Gone => return Err(ApiError::FederationNotFound(ident)),
            FederationUpdate::Raced => continue,
        }
    }
    Err(ApiError::Conflict(format!(
        "Federation {ident} is being updated by other requests; try again."
    )))
}

/// The federation after the patch, checked as `_patch` checks it.
async fn patched(
    state: &AppState,
    ctx: &RequestContext,
    current: &Federation,
    ops: &[PatchOp],
) -> ApiResult<FederationChange> {
    let mut ops = ops.to_vec();
    let members: Vec<Value> = current.member_ids.clone().unwrap_or_default();
    // `_join_wrapper` / `_unjoin_wrapper`: only the first operation is looked at.
    if let Some(first) = ops.first_mut() {
        if first.path == "/member_ids" {
            match (first.op.as_str(), first.value.clone()) {
                ("add", Some(v)) if !v.is_null() => {
                    let id = py_str(&v);
                    let found = cluster_exists(state, ctx, &id).await?;
                    if members.iter().any(|m| py_str(m) == id) {
                        return Err(ApiError::Conflict(format!(
                            "A cluster with UUID {id} is already a member of the federation {}.",
                            current.name.as_deref().unwrap_or("None")
                        )));
                    }
                    let mut joined = members.clone();
                    joined.push(Value::String(found));
                    *first = first.replaced_with(Value::Array(joined));
                }
                ("remove", Some(v)) if !v.is_null() => {
                    let id = py_str(&v);
                    cluster_exists(state, ctx, &id).await?;
                    if !members.iter().any(|m| py_str(m) == id) {
                        return Err(ApiError::NotFoundMessage(format!(
                            "Cluster {id} is not a member of the federation {}.",
                            current.name.as_deref().unwrap_or("None")
                        )));
                    }
                    let rest = members.iter().filter(|m| py_str(m) != id).cloned();
                    *first = first.replaced_with(Value::Array(rest.collect()));
                }
                _ => {}
            }
        }
    }
    let before = document(current);
    let mut doc = before.clone();
    jsonpatch::apply(&mut doc, &ops)?;
    let a = attributes(&Body::from_map("federation", doc.clone()))?;
    check_bounds(&a, Some(current), FieldBounds::new(&state.config.api))?;
    validate_federation_delta(&before, &doc)?;
    let _ = a.name;
    Ok(FederationChange {
        member_ids: a.member_ids.unwrap_or_default(),
        properties: a.properties.unwrap_or_default(),
        status: "UPDATE_COMPLETE".into(),
        status_reason: None,
    })
}

/// `federation.as_dict()`: the object's fields, as the patch sees them.
fn document(f: &Federation) -> Map<String, Value> {
    let v = json!({
        "id": f.id,
        "uuid": f.uuid,
        "name": f.name,
        "project_id": f.project_id,
        "hostcluster_id": f.hostcluster_id,
        "member_ids": f.member_ids,
        "status": f.status,
        "status_reason": f.status_reason,
        "properties": f.properties,
        "created_at": f.created_at,
        "updated_at": f.updated_at,
    });
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Mirrors `FederationsController.delete` (204).
async fn delete_federation(
    State(state): State<AppState>,
    ctx: RequestContext,
    MagnumPath(ident): MagnumPath<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<StatusCode> {
    Query::parse(raw.as_deref(), &[])?;
    let f = lookup(&state, &ctx, &ident).await?;
    enforce_on(
        &state,
        &ctx,
        "federation:delete",
        f.project_id.as_deref(),
        None,
    )?;
    if !state.store.delete_federation(f.id).await? {
        return Err(ApiError::FederationNotFound(ident));
    }
    Ok(StatusCode::NO_CONTENT)
}
