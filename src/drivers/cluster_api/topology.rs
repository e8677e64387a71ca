//! What the ClusterAPI driver writes, as pure functions: each write touches only the field
//! it must (no full-object re-apply from a stale read, the cause of magnum-cluster-api's lost
//! updates), and worker entries are addressed by index **and** name (`test` op), so a
//! concurrent change of the list makes the patch fail instead of hitting the wrong entry.

use json_patch::jsonptr;
use json_patch::{
    AddOperation, Patch, PatchOperation, RemoveOperation, ReplaceOperation, TestOperation,
};
use kube::api::{ApiResource, GroupVersionKind};
use serde_json::{json, Map, Value};

use crate::model::{Cluster, ClusterTemplate, NodeGroup};

/// The annotation KCP and MachineSets honour when choosing Machines to delete.
pub const DELETE_MACHINE: &str = "cluster.x-k8s.io/delete-machine";
pub const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";
pub const CONTROL_PLANE_LABEL: &str = "cluster.x-k8s.io/control-plane";
pub const DEPLOYMENT_NAME_LABEL: &str = "topology.cluster.x-k8s.io/deployment-name";
pub const AUTOSCALER_MIN: &str = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size";
pub const AUTOSCALER_MAX: &str = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size";
/// The label Magnum puts on clusters created for it.
pub const CLUSTER_UUID_LABEL: &str = "cluster-uuid";

/// The Cluster API kinds the driver reads and writes, at one API version.
#[derive(Clone, Debug)]
pub struct Resources {
    pub cluster: ApiResource,
    pub machine_deployment: ApiResource,
    pub machine: ApiResource,
    pub control_plane: ApiResource,
}

impl Resources {
    /// `v1beta2` (CAPI's storage version) unless configured otherwise.
    pub fn at(version: &str) -> Self {
        let core = |kind: &str, plural: &str| {
            ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("cluster.x-k8s.io", version, kind),
                plural,
            )
        };
        Resources {
            cluster: core("Cluster", "clusters"),
            machine_deployment: core("MachineDeployment", "machinedeployments"),
            machine: core("Machine", "machines"),
            control_plane: ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk(
                    "controlplane.cluster.x-k8s.io",
                    version,
                    "KubeadmControlPlane",
                ),
                "kubeadmcontrolplanes",
            ),
        }
    }
}

/// Merge patch of the control-plane replicas, nothing else.
pub fn control_plane_replicas(n: i64) -> Value {
    json!({"spec": {"topology": {"controlPlane": {"replicas": n}}}})
}

/// Merge patch of an upgrade: the Kubernetes version, and the ClusterClass where the new
/// template names one.
pub fn upgrade(version: &str, class: Option<&str>, api_version: &str) -> Value {
    let mut topology = json!({"version": version});
    if let Some(c) = class {
        if api_version == "v1beta1" {
            topology["class"] = json!(c);
        } else {
            topology["classRef"] = json!({"name": c});
        }
    }
    json!({"spec": {"topology": topology}})
}

/// Merge patch marking a Machine for deletion on the next scale-down.
pub fn delete_machine_annotation() -> Value {
    json!({"metadata": {"annotations": {DELETE_MACHINE: "yes"}}})
}

/// The merge patch that takes [`delete_machine_annotation`] off again.
pub fn delete_machine_annotation_removed() -> Value {
    json!({"metadata": {"annotations": {DELETE_MACHINE: null}}})
}

fn md_path(index: usize, rest: &str) -> String {
    format!("/spec/topology/workers/machineDeployments/{index}{rest}")
}

fn pointer(p: &str) -> jsonptr::PointerBuf {
    jsonptr::PointerBuf::parse(p).unwrap_or_default()
}

fn test_name(index: usize, name: &str) -> PatchOperation {
    PatchOperation::Test(TestOperation {
        path: pointer(&md_path(index, "/name")),
        value: Value::String(name.to_string()),
    })
}

/// The index of the worker entry named `name` in a Cluster object.
pub fn machine_deployment_index(cluster: &Value, name: &str) -> Option<usize> {
    cluster
        .pointer("/spec/topology/workers/machineDeployments")?
        .as_array()?
        .iter()
        .position(|md| md.get("name").and_then(Value::as_str) == Some(name))
}

fn entry(cluster: &Value, index: usize) -> Option<&Value> {
    cluster.pointer(&md_path(index, ""))
}

/// JSON patch setting one worker entry's replicas (and dropping autoscaler bounds, which
/// must never be sent together with replicas).
pub fn worker_replicas(cluster: &Value, index: usize, name: &str, n: i64) -> Patch {
    let mut ops = vec![test_name(index, name)];
    let current = entry(cluster, index);
    let has_replicas = current.and_then(|e| e.get("replicas")).is_some();
    ops.push(if has_replicas {
        PatchOperation::Replace(ReplaceOperation {
            path: pointer(&md_path(index, "/replicas")),
            value: json!(n),
        })
    } else {
        PatchOperation::Add(AddOperation {
            path: pointer(&md_path(index, "/replicas")),
            value: json!(n),
        })
    });
    for key in [AUTOSCALER_MIN, AUTOSCALER_MAX] {
        if current
            .and_then(|e| e.pointer("/metadata/annotations"))
            .and_then(|a| a.get(key))
            .is_some()
        {
            ops.push(PatchOperation::Remove(RemoveOperation {
                path: pointer(&md_path(
                    index,
                    &format!("/metadata/annotations/{}", escape(key)),
                )),
            }));
        }
    }
    Patch(ops)
}

/// JSON patch handing one worker entry to the cluster-autoscaler: the min/max annotations
/// and no `replicas` key.
pub fn worker_autoscaling(cluster: &Value, index: usize, name: &str, min: i64, max: i64) -> Patch {
    let mut ops = vec![test_name(index, name)];
    let current = entry(cluster, index);
    if current.and_then(|e| e.get("metadata")).is_none() {
        ops.push(PatchOperation::Add(AddOperation {
            path: pointer(&md_path(index, "/metadata")),
            value: json!({}),
        }));
    }
    if current
        .and_then(|e| e.pointer("/metadata/annotations"))
        .is_none()
    {
        ops.push(PatchOperation::Add(AddOperation {
            path: pointer(&md_path(index, "/metadata/annotations")),
            value: json!({}),
        }));
    }
    for (key, v) in [(AUTOSCALER_MIN, min), (AUTOSCALER_MAX, max)] {
        ops.push(PatchOperation::Add(AddOperation {
            path: pointer(&md_path(
                index,
                &format!("/metadata/annotations/{}", escape(key)),
            )),
            value: json!(v.to_string()),
        }));
    }
    if current.and_then(|e| e.get("replicas")).is_some() {
        ops.push(PatchOperation::Remove(RemoveOperation {
            path: pointer(&md_path(index, "/replicas")),
        }));
    }
    Patch(ops)
}

/// JSON patch appending a worker entry.
pub fn add_worker(entry: Value) -> Patch {
    Patch(vec![PatchOperation::Add(AddOperation {
        path: pointer("/spec/topology/workers/machineDeployments/-"),
        value: entry,
    })])
}

/// JSON patch removing a worker entry (guarded by its name).
pub fn remove_worker(index: usize, name: &str) -> Patch {
    Patch(vec![
        test_name(index, name),
        PatchOperation::Remove(RemoveOperation {
            path: pointer(&md_path(index, "")),
        }),
    ])
}

/// RFC 6901 escaping of one reference token.
fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Labels and options read from the template, overlaid by the cluster's labels.
fn label<'a>(cluster: &'a Cluster, template: &'a ClusterTemplate, key: &str) -> Option<&'a str> {
    cluster
        .labels
        .as_ref()
        .and_then(|l| l.get(key))
        .or_else(|| template.labels.as_ref().and_then(|l| l.get(key)))
        .and_then(Value::as_str)
}

/// Names and defaults of the topology a template describes (documented in
/// `etc/magnum-rs.toml`).
#[derive(Clone, Debug)]
pub struct TopologyDefaults {
    pub cluster_class: String,
    pub worker_class: String,
    /// The class of magnum-cluster-api's shape.
    pub mcapi_cluster_class: String,
}

/// The ClusterClass a new cluster names: its label `capi_cluster_class`, else `default`.
pub fn class_of(cluster: &Cluster, template: &ClusterTemplate, default: &str) -> String {
    label(cluster, template, "capi_cluster_class")
        .unwrap_or(default)
        .to_string()
}

/// The worker entry of a nodegroup.
pub fn worker_entry(ng: &NodeGroup, worker_class: &str, autoscale: bool) -> Value {
    let mut e = json!({"class": worker_class, "name": ng.name});
    match (autoscale, ng.max_node_count.filter(|m| *m > 0)) {
        (true, Some(max)) => {
            e["metadata"] = json!({"annotations": {
                AUTOSCALER_MIN: ng.min_node_count.to_string(),
                AUTOSCALER_MAX: max.to_string(),
            }});
        }
        _ => e["replicas"] = json!(ng.node_count),
    }
    e
}

/// Whether a cluster's nodegroups are handed to the autoscaler (`auto_scaling_enabled`).
pub fn autoscaling_enabled(cluster: &Cluster, template: &ClusterTemplate) -> bool {
    label(cluster, template, "auto_scaling_enabled").is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

/// The Kubernetes version of a template (`kube_tag`).
pub fn kube_version(cluster: &Cluster, template: &ClusterTemplate) -> Option<String> {
    label(cluster, template, crate::model::KUBE_TAG).map(str::to_string)
}

/// The `Cluster` object for a new Magnum cluster: topology from the template (class from
/// label `capi_cluster_class`, version from `kube_tag`, variables from labels
/// `capi_variable_<name>` whose value is JSON or a string).
pub fn cluster_object(
    name: &str,
    namespace: &str,
    api_version: &str,
    cluster: &Cluster,
    template: &ClusterTemplate,
    nodegroups: &[NodeGroup],
    defaults: &TopologyDefaults,
) -> Value {
    let class = label(cluster, template, "capi_cluster_class").unwrap_or(&defaults.cluster_class);
    let worker_class =
        label(cluster, template, "capi_worker_class").unwrap_or(&defaults.worker_class);
    let autoscale = autoscaling_enabled(cluster, template);
    let masters = nodegroups
        .iter()
        .filter(|n| n.is_master())
        .map(|n| n.node_count)
        .sum::<i64>()
        .max(1);
    let workers: Vec<Value> = nodegroups
        .iter()
        .filter(|n| !n.is_master())
        .map(|n| worker_entry(n, worker_class, autoscale))
        .collect();
    let mut labels = Map::new();
    for src in [template.labels.as_ref(), cluster.labels.as_ref()]
        .into_iter()
        .flatten()
    {
        for (k, v) in src {
            if let Some(var) = k.strip_prefix("capi_variable_") {
                let value = v
                    .as_str()
                    .and_then(|s| serde_json::from_str::<Value>(s).ok())
                    .unwrap_or_else(|| v.clone());
                labels.insert(var.to_string(), value);
            }
        }
    }
    let variables: Vec<Value> = labels
        .into_iter()
        .map(|(name, value)| json!({"name": name, "value": value}))
        .collect();
    // v1beta2 names the ClusterClass by `classRef`; v1beta1 by `class`.
    let class_field = if api_version == "v1beta1" {
        json!({"class": class})
    } else {
        json!({"classRef": {"name": class}})
    };
    let mut topology = json!({
        "version": kube_version(cluster, template).unwrap_or_default(),
        "controlPlane": {"replicas": masters},
    });
    if let (Some(t), Some(c)) = (topology.as_object_mut(), class_field.as_object()) {
        t.extend(c.clone());
    }
    if !workers.is_empty() {
        topology["workers"] = json!({"machineDeployments": workers});
    }
    if !variables.is_empty() {
        topology["variables"] = Value::Array(variables);
    }
    json!({
        "apiVersion": format!("cluster.x-k8s.io/{api_version}"),
        "kind": "Cluster",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {CLUSTER_UUID_LABEL: cluster.uuid},
        },
        "spec": {"topology": topology},
    })
}

/// The label selector of a nodegroup's Machines.
pub fn machine_selector(stack: &str, ng: &crate::drivers::NodeGroupRef) -> String {
    match ng {
        crate::drivers::NodeGroupRef::ControlPlane => {
            format!("{CLUSTER_NAME_LABEL}={stack},{CONTROL_PLANE_LABEL}")
        }
        crate::drivers::NodeGroupRef::Worker(name) => {
            format!("{CLUSTER_NAME_LABEL}={stack},{DEPLOYMENT_NAME_LABEL}={name}")
        }
    }
}

/// Whether a Machine is the node a user named in `nodes_to_remove`: by Machine name, by
/// Node name, or by the server id that ends the provider ID (what Magnum users pass).
pub fn machine_matches(machine: &Value, ident: &str) -> bool {
    let name = machine.pointer("/metadata/name").and_then(Value::as_str);
    let node = machine
        .pointer("/status/nodeRef/name")
        .and_then(Value::as_str);
    let provider = machine
        .pointer("/spec/providerID")
        .and_then(Value::as_str)
        .and_then(|p| p.rsplit('/').next());
    [name, node, provider]
        .into_iter()
        .flatten()
        .any(|v| v == ident)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn capi_cluster() -> Value {
        json!({"spec": {"topology": {"workers": {"machineDeployments": [
            {"class": "default-worker", "name": "default-worker", "replicas": 2},
            {"class": "default-worker", "name": "gpu", "metadata": {"annotations": {AUTOSCALER_MIN: "1", AUTOSCALER_MAX: "3"}}},
        ]}}}})
    }

    #[test]
    fn control_plane_patch_touches_only_replicas() {
        assert_eq!(
            control_plane_replicas(3),
            json!({"spec": {"topology": {"controlPlane": {"replicas": 3}}}})
        );
    }

    #[test]
    fn upgrade_patches_version_and_class_only() {
        assert_eq!(
            upgrade("v1.31.2", Some("magnum-v0.39.0"), "v1beta2"),
            json!({"spec": {"topology": {"version": "v1.31.2", "classRef": {"name": "magnum-v0.39.0"}}}})
        );
        assert_eq!(
            upgrade("v1.31.2", None, "v1beta2"),
            json!({"spec": {"topology": {"version": "v1.31.2"}}})
        );
    }

    #[test]
    fn worker_patch_tests_the_name_at_the_index() {
        let c = capi_cluster();
        let i = machine_deployment_index(&c, "default-worker").expect("found");
        let p = serde_json::to_value(worker_replicas(&c, i, "default-worker", 5)).expect("json");
        assert_eq!(
            p,
            json!([
                {"op": "test", "path": "/spec/topology/workers/machineDeployments/0/name", "value": "default-worker"},
                {"op": "replace", "path": "/spec/topology/workers/machineDeployments/0/replicas", "value": 5},
            ])
        );
    }

    #[test]
    fn replicas_and_autoscaler_bounds_are_never_sent_together() {
        let c = capi_cluster();
        let p = serde_json::to_value(worker_replicas(&c, 1, "gpu", 4)).expect("json");
        let ops = p.as_array().cloned().unwrap_or_default();
        assert_eq!(ops.len(), 4);
        assert_eq!(ops[1]["op"], "add");
        assert_eq!(
            ops[2]["path"],
            "/spec/topology/workers/machineDeployments/1/metadata/annotations/cluster.x-k8s.io~1cluster-api-autoscaler-node-group-min-size"
        );
        let a =
            serde_json::to_value(worker_autoscaling(&c, 0, "default-worker", 1, 5)).expect("json");
        let last = a
            .as_array()
            .and_then(|o| o.last())
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            last,
            json!({"op": "remove", "path": "/spec/topology/workers/machineDeployments/0/replicas"})
        );
    }

    #[test]
    fn nodes_to_remove_match_machine_node_or_server_id() {
        let m = json!({"metadata": {"name": "kube-abcde-cp-x1"}, "spec": {"providerID": "openstack:///3f6c-server"},
                       "status": {"nodeRef": {"name": "kube-abcde-control-plane-1"}}});
        assert!(machine_matches(&m, "kube-abcde-cp-x1"));
        assert!(machine_matches(&m, "kube-abcde-control-plane-1"));
        assert!(machine_matches(&m, "3f6c-server"));
        assert!(!machine_matches(&m, "other"));
    }
}
