//! A nodegroup's entry in `spec.topology.workers.machineDeployments`, as magnum-cluster-api
//! writes a new one (`resources.mutate_machine_deployment` without an existing entry): class
//! `default-worker`, node-role and nodegroup labels, replicas or the autoscaler's
//! annotations, the volume detach timeout, machine health check, the availability zone as
//! failure domain, and seven variable overrides from the nodegroup's own flavor, image,
//! labels and server group.

use serde_json::{json, Map, Value};

use super::labels::{LabelError, Labels};
use crate::drivers::cluster_api::topology::{AUTOSCALER_MAX, AUTOSCALER_MIN};
use crate::model::{Cluster, NodeGroup};

/// The class every magnum-cluster-api worker entry names.
pub const WORKER_CLASS: &str = "default-worker";

/// `CLUSTER_CLASS_NODE_VOLUME_DETACH_TIMEOUT`.
pub const NODE_VOLUME_DETACH_TIMEOUT: &str = "300s";

/// The label that names a Machine's nodegroup.
pub const NODEGROUP_LABEL: &str = "node.cluster.x-k8s.io/nodegroup";

/// A Nova flavor as mcapi reads it for a nodegroup.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlavorFacts {
    pub name: String,
    /// MiB.
    pub ram: i64,
    pub vcpus: i64,
    /// GB of root disk.
    pub disk: i64,
}

/// What mcapi looks up for a nodegroup's entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeGroupFacts {
    pub flavor: FlavorFacts,
    pub image_id: String,
    pub hw_disk_bus: Option<String>,
    /// The id of the server group `<stack>-<nodegroup>`.
    pub server_group_id: String,
    /// `[cinder] default_boot_volume_type`, else Cinder's default type's name.
    pub default_boot_volume_type: String,
    /// `[cinder] default_boot_volume_size`.
    pub default_boot_volume_size: i64,
}

/// The entry for `nodegroup` of `cluster`.
pub fn machine_deployment(
    cluster: &Cluster,
    nodegroup: &NodeGroup,
    facts: &NodeGroupFacts,
) -> Result<Value, LabelError> {
    let cl = Labels::of(cluster.labels.as_ref());
    let nl = Labels::of(nodegroup.labels.as_ref());
    let role = nodegroup.role.as_deref().unwrap_or("worker");
    let name = nodegroup.name.as_str();
    let boot_volume_size = nl.int_or("boot_volume_size", facts.default_boot_volume_size)?;
    let mut entry = Map::new();
    let annotations = if cl.bool_or("auto_scaling_enabled", false)? {
        let max = match nodegroup.max_node_count {
            Some(max) => max,
            None => nl.int_or("max_node_count", nodegroup.min_node_count + 1)?,
        };
        let disk = if boot_volume_size == 0 {
            facts.flavor.disk
        } else {
            boot_volume_size
        };
        json!({
            AUTOSCALER_MIN: nodegroup.min_node_count.to_string(),
            AUTOSCALER_MAX: max.to_string(),
            "capacity.cluster-autoscaler.kubernetes.io/memory":
                format!("{}G", (facts.flavor.ram + 1023) / 1024),
            "capacity.cluster-autoscaler.kubernetes.io/cpu": facts.flavor.vcpus.to_string(),
            "capacity.cluster-autoscaler.kubernetes.io/ephemeral-disk": disk.to_string(),
            "capacity.cluster-autoscaler.kubernetes.io/labels":
                format!("node-role.kubernetes.io/{role}=,{NODEGROUP_LABEL}={name}"),
        })
    } else {
        entry.insert("replicas".into(), json!(nodegroup.node_count));
        json!({})
    };
    entry.insert(
        "metadata".into(),
        json!({
            "annotations": annotations,
            "labels": {format!("node-role.kubernetes.io/{role}"): "", NODEGROUP_LABEL: name},
        }),
    );
    entry.insert(
        "nodeVolumeDetachTimeout".into(),
        json!(NODE_VOLUME_DETACH_TIMEOUT),
    );
    entry.insert("class".into(), json!(WORKER_CLASS));
    entry.insert("name".into(), json!(name));
    entry.insert(
        "machineHealthCheck".into(),
        json!({"enable": cl.bool_or("auto_healing_enabled", true)?}),
    );
    let different_failure_domain = nl.bool_or("different_failure_domain", false)?
        || cl.bool_or("different_failure_domain", false)?;
    entry.insert(
        "variables".into(),
        json!({"overrides": [
            {"name": "bootVolume", "value": {
                "size": boot_volume_size,
                "type": nl.text("boot_volume_type")
                    .unwrap_or_else(|| facts.default_boot_volume_type.clone()),
            }},
            {"name": "flavor", "value": facts.flavor.name},
            {"name": "imageRepository", "value": nl.text_or("container_infra_prefix", "")},
            {"name": "imageUUID", "value": facts.image_id},
            {"name": "hardwareDiskBus", "value": facts.hw_disk_bus.clone().unwrap_or_default()},
            {"name": "serverGroupId", "value": facts.server_group_id},
            {"name": "isServerGroupDiffFailureDomain", "value": different_failure_domain},
        ]}),
    );
    if let Some(az) = nl.text("availability_zone").filter(|az| !az.is_empty()) {
        entry.insert("failureDomain".into(), json!(az));
    }
    Ok(Value::Object(entry))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> NodeGroupFacts {
        NodeGroupFacts {
            flavor: FlavorFacts {
                name: "m1.large".into(),
                ram: 8192,
                vcpus: 4,
                disk: 40,
            },
            image_id: "img-2".into(),
            hw_disk_bus: None,
            server_group_id: "sg-gpu".into(),
            default_boot_volume_type: "__DEFAULT__".into(),
            default_boot_volume_size: 0,
        }
    }

    fn nodegroup(labels: Value) -> NodeGroup {
        NodeGroup {
            name: "gpu".into(),
            role: Some("worker".into()),
            node_count: 3,
            min_node_count: 1,
            labels: labels.as_object().cloned(),
            ..NodeGroup::default()
        }
    }

    #[test]
    fn a_new_entry_is_mcapis_with_the_nodegroups_overrides() {
        let md = machine_deployment(
            &Cluster::default(),
            &nodegroup(json!({"availability_zone": "az2"})),
            &facts(),
        )
        .expect("entry");
        assert_eq!(
            md,
            json!({
                "replicas": 3,
                "metadata": {"annotations": {}, "labels": {
                    "node-role.kubernetes.io/worker": "",
                    "node.cluster.x-k8s.io/nodegroup": "gpu"}},
                "nodeVolumeDetachTimeout": "300s",
                "class": "default-worker",
                "name": "gpu",
                "machineHealthCheck": {"enable": true},
                "variables": {"overrides": [
                    {"name": "bootVolume", "value": {"size": 0, "type": "__DEFAULT__"}},
                    {"name": "flavor", "value": "m1.large"},
                    {"name": "imageRepository", "value": ""},
                    {"name": "imageUUID", "value": "img-2"},
                    {"name": "hardwareDiskBus", "value": ""},
                    {"name": "serverGroupId", "value": "sg-gpu"},
                    {"name": "isServerGroupDiffFailureDomain", "value": false},
                ]},
                "failureDomain": "az2",
            })
        );
    }

    #[test]
    fn an_autoscaled_entry_has_no_replicas_and_the_autoscalers_annotations() {
        let cluster = Cluster {
            labels: json!({"auto_scaling_enabled": "true"}).as_object().cloned(),
            ..Cluster::default()
        };
        let md = machine_deployment(&cluster, &nodegroup(json!({})), &facts()).expect("entry");
        assert!(md.get("replicas").is_none());
        assert_eq!(
            md["metadata"]["annotations"],
            json!({
                AUTOSCALER_MIN: "1",
                AUTOSCALER_MAX: "2",
                "capacity.cluster-autoscaler.kubernetes.io/memory": "8G",
                "capacity.cluster-autoscaler.kubernetes.io/cpu": "4",
                "capacity.cluster-autoscaler.kubernetes.io/ephemeral-disk": "40",
                "capacity.cluster-autoscaler.kubernetes.io/labels":
                    "node-role.kubernetes.io/worker=,node.cluster.x-k8s.io/nodegroup=gpu",
            })
        );
    }
}
