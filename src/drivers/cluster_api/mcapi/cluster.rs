//! The Cluster object magnum-cluster-api POSTs for a Magnum cluster
//! (`resources.Cluster.get_object`, in `cluster.x-k8s.io/v1beta1` as mcapi writes it): the
//! `cluster-uuid` and CNI labels, `clusterNetwork` from labels, the topology on mcapi's
//! class with the control plane's size, labels and health check, one entry per worker
//! nodegroup not being deleted, and the 39 variables.

use serde_json::{json, Value};

use super::labels::{LabelError, Labels};
use crate::model::{Cluster, ClusterTemplate};

/// The class magnum-cluster-api 0.38.2 applies and names (`"magnum-" + its version`).
pub const CLUSTER_CLASS: &str = "magnum-v0.38.2";

/// mcapi's `CALICO_TAG`, the calico version a cluster gets without a `calico_tag` label.
pub const CALICO_TAG: &str = "v3.32.1";

/// mcapi's `DEFAULT_POD_CIDR`.
pub const DEFAULT_POD_CIDR: &str = "10.100.0.0/16";

/// `utils.get_kube_tag`'s default.
pub const DEFAULT_KUBE_TAG: &str = "v1.25.3";

/// What the Cluster is made of besides the Magnum rows: its ClusterClass, the control
/// plane's size (its nodegroup's `node_count`, Magnum's `master_count`), the worker entries
/// and the variables (see [`super::machine_deployment`], [`super::variables`]).
pub struct Parts {
    /// [`CLUSTER_CLASS`] unless the operator names another.
    pub class: String,
    pub master_count: i64,
    pub machine_deployments: Vec<Value>,
    pub variables: Vec<Value>,
}

/// Whether a Cluster (either version) is on magnum-cluster-api's class: its topology has an `imageUUID`
/// variable.
pub fn is_mcapi(cluster: &Value) -> bool {
    cluster
        .pointer("/spec/topology/variables")
        .and_then(Value::as_array)
        .is_some_and(|vars| vars.iter().any(|v| v["name"] == "imageUUID"))
}

/// The Cluster named `stack` in `namespace`.
pub fn cluster_object(
    stack: &str,
    namespace: &str,
    cluster: &Cluster,
    template: &ClusterTemplate,
    parts: Parts,
) -> Result<Value, LabelError> {
    let l = Labels::of(cluster.labels.as_ref());
    let network_driver = template.network_driver.as_deref().unwrap_or_default();
    let mut labels = json!({"cluster-uuid": cluster.uuid});
    if network_driver == "calico" {
        labels["cni"] = json!(format!("calico-{}", l.text_or("calico_tag", CALICO_TAG)));
    }
    let pod_cidr = match network_driver {
        "calico" => l.text_or("calico_ipv4pool", DEFAULT_POD_CIDR),
        "cilium" => l.text_or("cilium_ipv4pool", DEFAULT_POD_CIDR),
        _ => DEFAULT_POD_CIDR.to_string(),
    };
    Ok(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": "Cluster",
        "metadata": {"name": stack, "namespace": namespace, "labels": labels},
        "spec": {
            "clusterNetwork": {
                "serviceDomain": l.text_or("dns_cluster_domain", "cluster.local"),
                "pods": {"cidrBlocks": [pod_cidr]},
                "services": {"cidrBlocks": [l.text_or("service_cluster_ip_range", "10.254.0.0/16")]},
            },
            "topology": {
                "class": parts.class,
                "version": l.text_or("kube_tag", DEFAULT_KUBE_TAG),
                "controlPlane": {
                    "metadata": {"labels": {"node-role.kubernetes.io/master": ""}},
                    "replicas": parts.master_count,
                    "machineHealthCheck": {"enable": l.bool_or("auto_healing_enabled", true)?},
                },
                "workers": {"machineDeployments": parts.machine_deployments},
                "variables": parts.variables,
            },
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cluster_is_mcapis_shape_with_labels_and_networks() {
        let cluster = Cluster {
            uuid: "3b1f0a52-6c7d-4e8f-9a0b-1c2d3e4f5a6b".into(),
            labels: json!({"kube_tag": "v1.34.1", "calico_ipv4pool": "10.200.0.0/16"})
                .as_object()
                .cloned(),
            ..Cluster::default()
        };
        let template = ClusterTemplate {
            network_driver: Some("calico".into()),
            ..ClusterTemplate::default()
        };
        let parts = |n| Parts {
            class: CLUSTER_CLASS.into(),
            master_count: n,
            machine_deployments: vec![],
            variables: vec![],
        };
        let c = cluster_object("kube-85r3h", "magnum-system", &cluster, &template, parts(3))
            .expect("object");
        assert_eq!(
            c["metadata"],
            json!({"name": "kube-85r3h", "namespace": "magnum-system",
                   "labels": {"cluster-uuid": "3b1f0a52-6c7d-4e8f-9a0b-1c2d3e4f5a6b",
                              "cni": "calico-v3.32.1"}})
        );
        assert_eq!(
            c["spec"]["clusterNetwork"],
            json!({"serviceDomain": "cluster.local",
                   "pods": {"cidrBlocks": ["10.200.0.0/16"]},
                   "services": {"cidrBlocks": ["10.254.0.0/16"]}})
        );
        assert_eq!(c["spec"]["topology"]["class"], "magnum-v0.38.2");
        assert_eq!(c["spec"]["topology"]["version"], "v1.34.1");
        assert_eq!(c["spec"]["topology"]["controlPlane"]["replicas"], 3);
        let cilium = ClusterTemplate {
            network_driver: Some("cilium".into()),
            ..ClusterTemplate::default()
        };
        let c = cluster_object("s", "ns", &Cluster::default(), &cilium, parts(1)).expect("object");
        assert!(
            c["metadata"]["labels"].get("cni").is_none(),
            "only calico names its CNI"
        );
        assert_eq!(
            c["spec"]["topology"]["version"], "v1.25.3",
            "mcapi's default"
        );
    }
}
