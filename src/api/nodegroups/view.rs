//! How a nodegroup row becomes Magnum's JSON (`NodeGroup.convert`): the summary of a list,
//! the detail of show, create and update.

use serde_json::{json, Map, Value};

use crate::api::clusters::labels_diff;
use crate::model::{Cluster, NodeGroup};

const SUMMARY_FIELDS: &[&str] = &[
    "uuid",
    "name",
    "flavor_id",
    "node_count",
    "role",
    "is_default",
    "image_id",
    "status",
    "stack_id",
];

/// The API dictionary of a nodegroup (every field, `null` where unset), without links.
pub(super) fn nodegroup_doc(ng: &NodeGroup) -> Map<String, Value> {
    let v = json!({
        "id": ng.id,
        "uuid": ng.uuid,
        "name": ng.name,
        "cluster_id": ng.cluster_id,
        "project_id": ng.project_id,
        "docker_volume_size": ng.docker_volume_size,
        "labels": ng.labels,
        "flavor_id": ng.flavor_id,
        "image_id": ng.image_id,
        "node_addresses": ng.node_addresses,
        "node_count": ng.node_count,
        "role": ng.role,
        "max_node_count": ng.max_node_count,
        "min_node_count": ng.min_node_count,
        "is_default": ng.is_default,
        "stack_id": ng.stack_id,
        "status": ng.status,
        "status_reason": ng.status_reason,
        "version": ng.version,
        "node_labels": ng.node_labels,
        "node_taints": ng.node_taints,
        "created_at": ng.created_at,
        "updated_at": ng.updated_at,
    });
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn links(base: &str, cluster_uuid: &str, ng_uuid: &str) -> Value {
    json!([
        {"href": format!("{base}/v1/clusters/{cluster_uuid}/nodegroups/{ng_uuid}"), "rel": "self"},
        {"href": format!("{base}/clusters/{cluster_uuid}/nodegroups/{ng_uuid}"), "rel": "bookmark"},
    ])
}

/// `NodeGroup.convert(ng, expand=True)`: every field, links and label diffs against the
/// cluster's labels.
pub(super) fn render_detail(mut doc: Map<String, Value>, cluster: &Cluster, base: &str) -> Value {
    let ng_uuid = doc
        .get("uuid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    doc.insert("links".into(), links(base, &cluster.uuid, &ng_uuid));
    let labels = doc
        .get("labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let (o, a, s) = labels_diff(&cluster.labels.clone().unwrap_or_default(), &labels);
    doc.insert("labels_overridden".into(), o);
    doc.insert("labels_added".into(), a);
    doc.insert("labels_skipped".into(), s);
    doc.insert("merge_labels".into(), Value::Bool(false));
    Value::Object(doc)
}

/// `NodeGroup.convert(ng, expand=False)`: nine fields, plus the WSME defaults of the
/// unset `min_node_count`, `max_node_count` and `merge_labels`.
pub(super) fn render_summary(ng: &NodeGroup) -> Value {
    let mut doc = nodegroup_doc(ng);
    doc.retain(|k, _| SUMMARY_FIELDS.contains(&k.as_str()));
    doc.insert("min_node_count".into(), json!(0));
    doc.insert("max_node_count".into(), Value::Null);
    doc.insert("merge_labels".into(), Value::Bool(false));
    Value::Object(doc)
}
