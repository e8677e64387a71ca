//! How a cluster row becomes Magnum's JSON (`Cluster.convert_with_links`), per microversion.

use std::collections::HashMap;

use serde::ser::{Serialize, SerializeMap as _, Serializer};
use serde_json::{json, Map, Value};

use crate::api::microversion::Version;
use crate::error::ApiResult;
use crate::model::{Cluster, ClusterCounts, ClusterSummary};
use crate::state::AppState;

const SUMMARY_FIELDS: &[&str] = &[
    "uuid",
    "name",
    "cluster_template_id",
    "keypair",
    "docker_volume_size",
    "labels",
    "node_count",
    "status",
    "master_flavor_id",
    "flavor_id",
    "create_timeout",
    "master_count",
    "health_status",
    "links",
    "merge_labels",
];

/// `api_utils.get_labels_diff(parent, labels)` → (overridden, added, skipped).
pub fn labels_diff(
    parent: &Map<String, Value>,
    labels: &Map<String, Value>,
) -> (Value, Value, Value) {
    let mut overridden = Map::new();
    let mut added = Map::new();
    let skipped: Map<String, Value> = parent
        .iter()
        .filter(|(k, _)| !labels.contains_key(*k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (k, v) in labels {
        match parent.get(k) {
            Some(pv) if pv != v => {
                overridden.insert(k.clone(), pv.clone());
            }
            Some(_) => {}
            None => {
                added.insert(k.clone(), v.clone());
            }
        }
    }
    (
        Value::Object(overridden),
        Value::Object(added),
        Value::Object(skipped),
    )
}

/// The API dictionary of a cluster with its computed counts (`Cluster.as_dict()` plus the
/// nodegroup sums), without links and label diffs.
pub fn cluster_doc(c: &Cluster, counts: &ClusterCounts) -> Map<String, Value> {
    let v = json!({
        "uuid": c.uuid,
        "name": c.name,
        "cluster_template_id": c.cluster_template_id,
        "keypair": c.keypair,
        "node_count": counts.node_count,
        "master_count": counts.master_count,
        "docker_volume_size": c.docker_volume_size,
        "labels": c.labels,
        "master_flavor_id": c.master_flavor_id,
        "flavor_id": c.flavor_id,
        "create_timeout": c.create_timeout,
        "stack_id": c.stack_id,
        "status": c.status,
        "status_reason": c.status_reason,
        "health_status": c.health_status,
        "health_status_reason": c.health_status_reason,
        "discovery_url": c.discovery_url,
        "api_address": c.api_address,
        "coe_version": c.coe_version,
        "container_version": c.container_version,
        "project_id": c.project_id,
        "user_id": c.user_id,
        "node_addresses": counts.node_addresses,
        "master_addresses": counts.master_addresses,
        "fixed_network": c.fixed_network,
        "fixed_subnet": c.fixed_subnet,
        "floating_ip_enabled": c.floating_ip_enabled,
        "master_lb_enabled": c.master_lb_enabled,
        "created_at": c.created_at,
        "updated_at": c.updated_at,
    });
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// The part of [`cluster_doc`] a summary keeps (plus `stack_id`, which becomes
/// `cluster_id` at 1.13), in the same key order, without building the rest: [`render`] then
/// runs the same steps on it as on the full dictionary, so the keys come out in the same
/// order.
fn summary_doc(c: &Cluster, counts: &ClusterCounts) -> Map<String, Value> {
    let text = |v: &Option<String>| v.as_ref().map_or(Value::Null, |s| Value::String(s.clone()));
    let int = |v: Option<i64>| v.map_or(Value::Null, Value::from);
    let mut m = Map::new();
    m.insert("uuid".into(), Value::String(c.uuid.clone()));
    m.insert("name".into(), text(&c.name));
    m.insert("cluster_template_id".into(), text(&c.cluster_template_id));
    m.insert("keypair".into(), text(&c.keypair));
    m.insert("node_count".into(), Value::from(counts.node_count));
    m.insert("master_count".into(), Value::from(counts.master_count));
    m.insert("docker_volume_size".into(), int(c.docker_volume_size));
    m.insert(
        "labels".into(),
        c.labels.clone().map_or(Value::Null, Value::Object),
    );
    m.insert("master_flavor_id".into(), text(&c.master_flavor_id));
    m.insert("flavor_id".into(), text(&c.flavor_id));
    m.insert("create_timeout".into(), int(c.create_timeout));
    m.insert("stack_id".into(), text(&c.stack_id));
    m.insert("status".into(), text(&c.status));
    m.insert("health_status".into(), text(&c.health_status));
    m
}

/// `Cluster.convert_with_links`: summary (`expand = false`; the summary list itself is
/// written by [`SummaryView`], which a test holds to this) or detail.
fn render(
    c: &Cluster,
    counts: &ClusterCounts,
    parent_labels: &Map<String, Value>,
    version: Version,
    expand: bool,
    base: &str,
) -> Value {
    let mut doc = if expand {
        cluster_doc(c, counts)
    } else {
        summary_doc(c, counts)
    };
    let use_cluster_id = version.at_least(1, 13);
    doc.insert("merge_labels".into(), Value::Bool(false));
    doc.insert(
        "links".into(),
        json!([
            {"href": format!("{base}/v1/clusters/{}", c.uuid), "rel": "self"},
            {"href": format!("{base}/clusters/{}", c.uuid), "rel": "bookmark"},
        ]),
    );
    if use_cluster_id {
        let stack = doc.remove("stack_id").unwrap_or(Value::Null);
        doc.insert("cluster_id".into(), stack);
    }
    if !expand {
        let id_key = if use_cluster_id {
            "cluster_id"
        } else {
            "stack_id"
        };
        doc.retain(|k, _| SUMMARY_FIELDS.contains(&k.as_str()) || k == id_key);
    } else {
        let labels = c.labels.clone().unwrap_or_default();
        let (o, a, s) = labels_diff(parent_labels, &labels);
        doc.insert("labels_overridden".into(), o);
        doc.insert("labels_added".into(), a);
        doc.insert("labels_skipped".into(), s);
    }
    Value::Object(doc)
}

/// One cluster of the summary list (`GET /v1/clusters`), written straight to the response:
/// the keys, values and order of [`render`]'s summary (`expand = false`), without building
/// a JSON map per cluster first (a list page writes fifty).
pub(super) struct SummaryView<'a> {
    cluster: &'a ClusterSummary,
    base: &'a str,
    /// 1.13 and later: `stack_id` shows as `cluster_id`.
    cluster_id_key: bool,
}

/// One entry of `links`.
#[derive(serde::Serialize)]
struct Link {
    href: String,
    rel: &'static str,
}

impl SummaryView<'_> {
    fn links(&self) -> [Link; 2] {
        let uuid = &self.cluster.uuid;
        [
            Link {
                href: format!("{}/v1/clusters/{uuid}", self.base),
                rel: "self",
            },
            Link {
                href: format!("{}/clusters/{uuid}", self.base),
                rel: "bookmark",
            },
        ]
    }
}

impl Serialize for SummaryView<'_> {
    /// The order is [`summary_doc`]'s with [`render`]'s steps applied: `merge_labels` and
    /// `links` appended; at 1.13 `stack_id` removed (the map's `remove` moves the last key,
    /// `links`, into its place) and `cluster_id` appended.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let c = self.cluster;
        let mut m = s.serialize_map(Some(16))?;
        m.serialize_entry("uuid", &c.uuid)?;
        m.serialize_entry("name", &c.name)?;
        m.serialize_entry("cluster_template_id", &c.cluster_template_id)?;
        m.serialize_entry("keypair", &c.keypair)?;
        m.serialize_entry("node_count", &c.node_count)?;
        m.serialize_entry("master_count", &c.master_count)?;
        m.serialize_entry("docker_volume_size", &c.docker_volume_size)?;
        m.serialize_entry("labels", &c.labels)?;
        m.serialize_entry("master_flavor_id", &c.master_flavor_id)?;
        m.serialize_entry("flavor_id", &c.flavor_id)?;
        m.serialize_entry("create_timeout", &c.create_timeout)?;
        if self.cluster_id_key {
            m.serialize_entry("links", &self.links())?;
        } else {
            m.serialize_entry("stack_id", &c.stack_id)?;
        }
        m.serialize_entry("status", &c.status)?;
        m.serialize_entry("health_status", &c.health_status)?;
        m.serialize_entry("merge_labels", &false)?;
        if self.cluster_id_key {
            m.serialize_entry("cluster_id", &c.stack_id)?;
        } else {
            m.serialize_entry("links", &self.links())?;
        }
        m.end()
    }
}

/// The summary list's views of a page of clusters.
pub(super) fn summaries<'a>(
    clusters: &'a [ClusterSummary],
    version: Version,
    base: &'a str,
) -> Vec<SummaryView<'a>> {
    let cluster_id_key = version.at_least(1, 13);
    clusters
        .iter()
        .map(|cluster| SummaryView {
            cluster,
            base,
            cluster_id_key,
        })
        .collect()
}

/// The detail of each of a page of clusters (the detail list, a show), with what it needs:
/// counts with addresses, and the templates' labels.
pub(super) async fn render_details(
    state: &AppState,
    clusters: &[Cluster],
    version: Version,
    base: &str,
) -> ApiResult<Vec<Value>> {
    let uuids: Vec<String> = clusters.iter().map(|c| c.uuid.clone()).collect();
    let counts = state.store.counts_of_clusters(&uuids).await?;
    let mut parents: HashMap<String, Map<String, Value>> = HashMap::new();
    for c in clusters {
        if let Some(t) = &c.cluster_template_id {
            if !parents.contains_key(t) {
                let labels = state.store.template_labels(t).await?.unwrap_or_default();
                parents.insert(t.clone(), labels);
            }
        }
    }
    let empty = Map::new();
    let none = ClusterCounts::default();
    Ok(clusters
        .iter()
        .map(|c| {
            let counts = counts.get(&c.uuid).unwrap_or(&none);
            let parent = c
                .cluster_template_id
                .as_ref()
                .and_then(|t| parents.get(t))
                .unwrap_or(&empty);
            render(c, counts, parent, version, true, base)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(stack_id: Option<&str>, labels: Option<Map<String, Value>>) -> Cluster {
        Cluster {
            uuid: "c0000000-0000-4000-8000-000000000001".into(),
            name: Some("one".into()),
            cluster_template_id: Some("t".into()),
            keypair: None,
            docker_volume_size: Some(20),
            labels,
            master_flavor_id: Some("m1.large".into()),
            create_timeout: Some(60),
            stack_id: stack_id.map(str::to_string),
            status: Some("CREATE_COMPLETE".into()),
            health_status: None,
            status_reason: Some("not in the summary".into()),
            ..Cluster::default()
        }
    }

    /// The summary view writes byte for byte what the map-building render writes, at every
    /// microversion where the output differs (1.13 renames `stack_id`).
    #[test]
    fn the_summary_view_writes_what_render_writes() {
        let labels: Map<String, Value> =
            serde_json::from_str(r#"{"kube_tag": "v1.30.4", "a": "\"q\""}"#).expect("labels");
        let counts = ClusterCounts {
            node_count: 3,
            master_count: 1,
            node_addresses: vec![json!("10.0.0.1")],
            master_addresses: Vec::new(),
        };
        for c in [cluster(Some("kube-1"), Some(labels)), cluster(None, None)] {
            for minor in [1, 12, 13, 14] {
                let version = Version::new(1, minor);
                let base = "http://h:9511";
                let expected = render(&c, &counts, &Map::new(), version, false, base);
                let summary = ClusterSummary {
                    uuid: c.uuid.clone(),
                    name: c.name.clone(),
                    cluster_template_id: c.cluster_template_id.clone(),
                    keypair: c.keypair.clone(),
                    docker_volume_size: c.docker_volume_size,
                    labels: c.labels.clone(),
                    master_flavor_id: c.master_flavor_id.clone(),
                    flavor_id: c.flavor_id.clone(),
                    create_timeout: c.create_timeout,
                    stack_id: c.stack_id.clone(),
                    status: c.status.clone(),
                    health_status: c.health_status.clone(),
                    master_count: counts.master_count,
                    node_count: counts.node_count,
                };
                let view = SummaryView {
                    cluster: &summary,
                    base,
                    cluster_id_key: version.at_least(1, 13),
                };
                assert_eq!(
                    serde_json::to_string(&view).expect("view"),
                    serde_json::to_string(&expected).expect("render"),
                    "1.{minor}"
                );
            }
        }
    }
}
