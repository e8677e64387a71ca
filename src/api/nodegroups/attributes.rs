//! The writable attributes of the `NodeGroup` API type, read and type-checked as WSME does,
//! from a POST body or from a nodegroup's dictionary after a JSON patch.

use serde_json::Value;

use crate::api::body::{py_str, py_type, Body};
use crate::api::bounds::FieldBounds;
use crate::error::{ApiError, ApiResult};
use crate::model::NodeGroup;

/// Reads the writable attributes of a nodegroup body (or a patched dictionary) into `ng`.
pub(super) fn read_attrs(b: &Body, ng: &mut NodeGroup) -> ApiResult<()> {
    if b.has("name") {
        ng.name = b.string("name", 1, 255)?.unwrap_or_default();
    }
    ng.docker_volume_size = b
        .int("docker_volume_size", Some(1))?
        .or(ng.docker_volume_size);
    if let Some(l) = b.labels("labels")? {
        ng.labels = Some(l);
    }
    ng.flavor_id = b.string("flavor_id", 1, 255)?.or(ng.flavor_id.take());
    ng.image_id = b.string("image_id", 1, 255)?.or(ng.image_id.take());
    ng.node_count = b.int("node_count", Some(0))?.unwrap_or(ng.node_count);
    ng.role = b.string("role", 1, 255)?.or(ng.role.take());
    ng.min_node_count = b.int("min_node_count", Some(0))?.unwrap_or(0);
    ng.max_node_count = b.int("max_node_count", Some(0))?;
    if b.has("node_labels") {
        let m = b.object("node_labels")?.unwrap_or_default();
        for v in m.values() {
            if !v.is_string() {
                return Err(ApiError::invalid_input(
                    "node_labels",
                    py_str(&Value::Object(m.clone())),
                    format!(
                        "Wrong type. Expected '<class 'str'>', got '<class '{}'>'",
                        py_type(v)
                    ),
                ));
            }
        }
        ng.node_labels = Some(m);
    } else {
        ng.node_labels = None;
    }
    ng.node_taints = if b.has("node_taints") {
        b.list("node_taints")?
    } else {
        None
    };
    Ok(())
}

/// magnum-rs's size bounds on the free-form fields of `ng` that differ from `before` (all of
/// them, on a create): `labels` (`[api] max_labels_size`), `node_labels` and `node_taints`
/// (`[api] max_field_size`). Run after WSME's checks (`read_attrs`).
pub(super) fn check_bounds(
    ng: &NodeGroup,
    before: Option<&NodeGroup>,
    bounds: FieldBounds,
) -> ApiResult<()> {
    let labels_changed = before.is_none_or(|b| b.labels != ng.labels);
    if let Some(l) = ng.labels.as_ref().filter(|_| labels_changed) {
        bounds.labels(l)?;
    }
    let node_labels_changed = before.is_none_or(|b| b.node_labels != ng.node_labels);
    if let Some(m) = ng.node_labels.as_ref().filter(|_| node_labels_changed) {
        bounds.dict("node_labels", m)?;
    }
    let node_taints_changed = before.is_none_or(|b| b.node_taints != ng.node_taints);
    if let Some(t) = ng.node_taints.as_ref().filter(|_| node_taints_changed) {
        bounds.list("node_taints", t)?;
    }
    Ok(())
}
