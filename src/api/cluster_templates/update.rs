//! `PATCH /v1/clustertemplates/{ident}` (`ClusterTemplatesController.patch`).

use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::Json;
use serde_json::Value;

use super::attributes::{check_bounds, read_attrs};
use super::validate::validate_drivers;
use super::view::{render, template_doc};
use crate::api::attr_validator::{CloudChecks, OsResources};
use crate::api::authz::{admin_all_tenants, enforce, enforce_on};
use crate::api::body::Body;
use crate::api::bounds::FieldBounds;
use crate::api::extract::{MagnumBody, MagnumPath};
use crate::api::jsonpatch::{self, BASE_INTERNAL};
use crate::api::lookup;
use crate::api::query::{base_url, Query};
use crate::error::{ApiError, ApiResult};
use crate::model::{ClusterTemplate, RequestContext};
use crate::state::AppState;
use crate::store::Refused;

const NON_REMOVABLE: &[&str] = &[
    "/network_driver",
    "/external_network_id",
    "/tls_disabled",
    "/public",
    "/server_type",
    "/coe",
    "/registry_enabled",
    "/cluster_distro",
    "/hidden",
    // `image_id` is a mandatory attribute of the API type.
    "/image_id",
];

/// Mirrors `ClusterTemplatesController.patch` (200 with the object).
pub(super) async fn update_template(
    State(state): State<AppState>,
    ctx: RequestContext,
    headers: HeaderMap,
    MagnumPath(ident): MagnumPath<String>,
    RawQuery(raw): RawQuery,
    MagnumBody(bytes): MagnumBody,
) -> ApiResult<Json<Value>> {
    Query::parse(raw.as_deref(), &[])?;
    let ops = jsonpatch::parse(&bytes, &BASE_INTERNAL, NON_REMOVABLE)?;
    let all_tenants = admin_all_tenants(&state, &ctx, "clustertemplate:update_all_projects")?;
    let scope = lookup::template_scope(&ctx, all_tenants);
    let current = lookup::template(&state, &scope, &ident).await?;
    enforce_on(
        &state,
        &ctx,
        "clustertemplate:update",
        current.project_id.as_deref(),
        current.user_id.as_deref(),
    )?;
    let mut doc = template_doc(&current);
    jsonpatch::apply(&mut doc, &ops)?;
    // Fields that are not API attributes were added by the patch: WSME refuses them.
    for k in ["project_id", "user_id", "created_at", "updated_at", "uuid"] {
        doc.remove(k);
    }
    if let Some(Value::String(s)) = doc.get("labels").cloned() {
        let parsed = crate::api::pyliteral::parse(&s)
            .ok_or_else(|| ApiError::invalid_input("labels", &s, "Value not a valid dict"))?;
        doc.insert("labels".into(), parsed);
    }
    let patched = Body::from_map("cluster_template", doc);
    let mut t = current.clone();
    read_attrs(&patched, &mut t)?;
    check_bounds(&t, Some(&current), FieldBounds::new(&state.config.api))?;
    validate_drivers(
        &t,
        &state
            .config
            .cluster_template
            .kubernetes_allowed_network_drivers,
    )?;
    let checks = CloudChecks::of(&state, &ctx);
    if let Some(c) = &checks {
        c.os_resources(OsResources::of_template(&t), None).await?;
    }
    if t.public != current.public || t.hidden != current.hidden {
        enforce(&state, &ctx, "clustertemplate:publish")
            .map_err(|_| ApiError::ClusterTemplatePublishDenied)?;
    }
    if let Some(c) = &checks {
        // Both flavors, set or not, with the labels from before the patch.
        for flavor in [&t.flavor_id, &t.master_flavor_id] {
            c.flavor_root_volume_size(flavor.as_deref(), current.labels.as_ref())
                .await?;
        }
    }
    let restricted = !referenced_update_allowed(&current, &t);
    if restricted && state.store.clusters_using_template(&current.uuid).await? > 0 {
        return Err(ApiError::ClusterTemplateReferenced(current.uuid.clone()));
    }
    // Checked again under the template's lock (a cluster create that raced the count
    // either counts there or waits); only the changed columns are written.
    state
        .store
        .patch_template(&current, &t, restricted)
        .await?
        .map_err(|refused| match refused {
            Refused::TemplateInUse => ApiError::ClusterTemplateReferenced(current.uuid.clone()),
            _ => ApiError::ClusterTemplateNotFound(ident.clone()),
        })?;
    let mut saved = state
        .store
        .template_by_uuid(&t.uuid)
        .await?
        .ok_or_else(|| ApiError::ClusterTemplateNotFound(ident.clone()))?;
    // `cluster_template.save()` does not refresh the object: Magnum's answer carries the
    // `updated_at` from before the update.
    saved.updated_at = current.updated_at.clone();
    Ok(Json(render(&saved, &base_url(&headers))))
}

/// `_do_update_cluster_template`: a template used by clusters may only be renamed, or have
/// exactly one of `public` (to true), `hidden` or `tags` (to a value) changed.
fn referenced_update_allowed(current: &ClusterTemplate, new: &ClusterTemplate) -> bool {
    let before = template_doc(current);
    let after = template_doc(new);
    let changed: Vec<&str> = after
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(*v))
        .map(|(k, _)| k.as_str())
        .filter(|k| !matches!(*k, "created_at" | "updated_at"))
        .collect();
    match changed.as_slice() {
        ["name"] | ["hidden"] => true,
        ["public"] => new.public == Some(true),
        ["tags"] => new.tags.is_some(),
        _ => false,
    }
}
