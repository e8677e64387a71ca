//! magnum-cluster-api's objects in `cluster.x-k8s.io/v1beta2`, the version magnum-rs reads
//! and writes (Cluster API's storage version). mcapi writes v1beta1; Cluster API v1.13
//! converts what it stores, and this does the same to the few v1beta1 fields mcapi's
//! topology uses, so the stored object is the one mcapi's own POST leaves:
//! `class` → `classRef.name` (`classNamespace` → `classRef.namespace`),
//! `machineHealthCheck.enable` → `healthCheck.enabled`, the `node*Timeout` durations →
//! `deletion.node*TimeoutSeconds`. Everything else keeps its path and value.

use serde_json::{json, Map, Value};

/// The v1beta1 timeouts of a topology entry and their v1beta2 names under `deletion`.
const TIMEOUTS: [(&str, &str); 3] = [
    ("nodeDrainTimeout", "nodeDrainTimeoutSeconds"),
    ("nodeVolumeDetachTimeout", "nodeVolumeDetachTimeoutSeconds"),
    ("nodeDeletionTimeout", "nodeDeletionTimeoutSeconds"),
];

/// mcapi's v1beta1 Cluster as v1beta2.
pub fn cluster(mut v1beta1: Value) -> Value {
    v1beta1["apiVersion"] = json!("cluster.x-k8s.io/v1beta2");
    if let Some(topology) = v1beta1
        .pointer_mut("/spec/topology")
        .and_then(Value::as_object_mut)
    {
        let mut class_ref = Map::new();
        if let Some(name) = topology.remove("class") {
            class_ref.insert("name".into(), name);
        }
        if let Some(namespace) = topology.remove("classNamespace") {
            class_ref.insert("namespace".into(), namespace);
        }
        if !class_ref.is_empty() {
            topology.insert("classRef".into(), Value::Object(class_ref));
        }
        if let Some(cp) = topology
            .get_mut("controlPlane")
            .and_then(Value::as_object_mut)
        {
            convert_entry(cp);
        }
        if let Some(mds) = topology
            .get_mut("workers")
            .and_then(|w| w.get_mut("machineDeployments"))
            .and_then(Value::as_array_mut)
        {
            mds.iter_mut()
                .filter_map(Value::as_object_mut)
                .for_each(convert_entry);
        }
    }
    v1beta1
}

/// mcapi's v1beta1 worker entry as v1beta2.
pub fn machine_deployment(mut v1beta1: Value) -> Value {
    if let Some(entry) = v1beta1.as_object_mut() {
        convert_entry(entry);
    }
    v1beta1
}

/// The health check and the timeouts of a control-plane or worker entry.
fn convert_entry(entry: &mut Map<String, Value>) {
    if let Some(Value::Object(mut mhc)) = entry.remove("machineHealthCheck") {
        let mut health = Map::new();
        if let Some(enable) = mhc.remove("enable") {
            health.insert("enabled".into(), enable);
        }
        // mcapi sets `enable` only; anything else it might carry keeps its name.
        health.extend(mhc);
        entry.insert("healthCheck".into(), Value::Object(health));
    }
    for (old, new) in TIMEOUTS {
        let Some(value) = entry.remove(old) else {
            continue;
        };
        let seconds = value.as_str().and_then(duration_seconds);
        let deletion = entry
            .entry("deletion")
            .or_insert_with(|| json!({}))
            .as_object_mut();
        if let (Some(deletion), Some(seconds)) = (deletion, seconds) {
            deletion.insert(new.into(), json!(seconds));
        }
    }
}

/// Whole seconds of a Go duration such as `300s`, `5m` or `1h30m`.
fn duration_seconds(text: &str) -> Option<i64> {
    let mut total = 0i64;
    let mut digits = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let n: i64 = digits.parse().ok()?;
        digits.clear();
        total += n * match c {
            'h' => 3600,
            'm' => 60,
            's' => 1,
            _ => return None,
        };
    }
    digits.is_empty().then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcapis_cluster_is_stored_with_the_v1beta2_names_of_its_fields() {
        let v1beta1 = json!({
            "apiVersion": "cluster.x-k8s.io/v1beta1",
            "kind": "Cluster",
            "metadata": {"name": "kube-85r3h", "labels": {"cluster-uuid": "u"}},
            "spec": {
                "clusterNetwork": {"pods": {"cidrBlocks": ["10.100.0.0/16"]}},
                "topology": {
                    "class": "magnum-v0.38.2",
                    "version": "v1.34.1",
                    "controlPlane": {
                        "metadata": {"labels": {"node-role.kubernetes.io/master": ""}},
                        "replicas": 3,
                        "machineHealthCheck": {"enable": true},
                    },
                    "workers": {"machineDeployments": [{
                        "class": "default-worker",
                        "name": "default-worker",
                        "replicas": 2,
                        "nodeVolumeDetachTimeout": "300s",
                        "machineHealthCheck": {"enable": false},
                        "failureDomain": "az1",
                        "variables": {"overrides": [{"name": "flavor", "value": "m1.large"}]},
                    }]},
                    "variables": [{"name": "nodeCidr", "value": "10.0.0.0/24"}],
                },
            },
        });
        let v1beta2 = cluster(v1beta1);
        assert_eq!(
            v1beta2,
            json!({
                "apiVersion": "cluster.x-k8s.io/v1beta2",
                "kind": "Cluster",
                "metadata": {"name": "kube-85r3h", "labels": {"cluster-uuid": "u"}},
                "spec": {
                    "clusterNetwork": {"pods": {"cidrBlocks": ["10.100.0.0/16"]}},
                    "topology": {
                        "classRef": {"name": "magnum-v0.38.2"},
                        "version": "v1.34.1",
                        "controlPlane": {
                            "metadata": {"labels": {"node-role.kubernetes.io/master": ""}},
                            "replicas": 3,
                            "healthCheck": {"enabled": true},
                        },
                        "workers": {"machineDeployments": [{
                            "class": "default-worker",
                            "name": "default-worker",
                            "replicas": 2,
                            "deletion": {"nodeVolumeDetachTimeoutSeconds": 300},
                            "healthCheck": {"enabled": false},
                            "failureDomain": "az1",
                            "variables": {"overrides": [{"name": "flavor", "value": "m1.large"}]},
                        }]},
                        "variables": [{"name": "nodeCidr", "value": "10.0.0.0/24"}],
                    },
                },
            })
        );
    }

    #[test]
    fn a_worker_entry_alone_converts_as_inside_the_cluster() {
        let entry = json!({"name": "gpu", "nodeDrainTimeout": "1h30m",
                           "nodeVolumeDetachTimeout": "5m"});
        assert_eq!(
            machine_deployment(entry),
            json!({"name": "gpu", "deletion": {"nodeDrainTimeoutSeconds": 5400,
                                               "nodeVolumeDetachTimeoutSeconds": 300}})
        );
    }

    #[test]
    fn go_durations_in_whole_seconds() {
        assert_eq!(duration_seconds("300s"), Some(300));
        assert_eq!(duration_seconds("10m"), Some(600));
        assert_eq!(duration_seconds("1h0m5s"), Some(3605));
        assert_eq!(duration_seconds("300"), None, "a unit is required");
        assert_eq!(duration_seconds("1.5s"), None, "fractions are not mcapi's");
    }
}
