//! The object type of the watch caches: a Cluster, KubeadmControlPlane, MachineDeployment
//! or Machine reduced, while it is parsed, to the fields the driver reads (progress.rs,
//! status.rs). Everything else (the kubeadm spec, managedFields, annotations, condition
//! timestamps, conditions the driver does not look at) is skipped by the parser and never
//! held, not even for the moment of one list page: measured in bench/kube, a cache of
//! full `DynamicObject`s cost ~17 KB of RSS per object, this one about 1 KB.
//!
//! The driver reads its typed fields (status.rs, progress.rs); the tests compare it
//! serialized, in the shape of the Kubernetes object it came from (only fewer fields). A
//! field of an unexpected type is dropped, never an error: one odd object must not stop a
//! watch.

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::ApiResource;
use kube::core::DynamicResourceScope;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
#[cfg(test)]
use serde_json::Map;
use serde_json::Value;

use super::topology::{CLUSTER_NAME_LABEL, CONTROL_PLANE_LABEL, DEPLOYMENT_NAME_LABEL};

/// The labels the driver reads, kept as fields: a `BTreeMap` of labels costs about 0.5 KB
/// per object whatever it holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Labels {
    pub cluster_name: Option<String>,
    pub control_plane: bool,
    pub deployment_name: Option<String>,
}

impl Labels {
    fn from_map(mut m: BTreeMap<String, String>) -> Labels {
        Labels {
            cluster_name: m.remove(CLUSTER_NAME_LABEL),
            control_plane: m.contains_key(CONTROL_PLANE_LABEL),
            deployment_name: m.remove(DEPLOYMENT_NAME_LABEL),
        }
    }

    #[cfg(test)]
    fn to_json(&self) -> Option<Value> {
        let mut m = Map::new();
        if let Some(c) = &self.cluster_name {
            m.insert(CLUSTER_NAME_LABEL.into(), Value::String(c.clone()));
        }
        if self.control_plane {
            m.insert(CONTROL_PLANE_LABEL.into(), Value::String(String::new()));
        }
        if let Some(d) = &self.deployment_name {
            m.insert(DEPLOYMENT_NAME_LABEL.into(), Value::String(d.clone()));
        }
        (!m.is_empty()).then_some(Value::Object(m))
    }
}

/// Whether the driver reads a condition (progress.rs): the Cluster's
/// `TopologyReconciled` and `ControlPlaneAvailable` always; of the others only those that
/// speak of movement or of what blocks it (a True `ScalingUp`/`ScalingDown`/`RollingOut`,
/// a False `Available` or `InfrastructureReady`), so an object at rest keeps none.
fn wanted(kind: &str, status: Option<&str>) -> bool {
    match kind {
        "TopologyReconciled" | "ControlPlaneAvailable" => true,
        "ScalingUp" | "ScalingDown" | "RollingOut" => status == Some("True"),
        "Available" | "InfrastructureReady" => status != Some("True"),
        _ => false,
    }
}

/// A value of the expected type, or nothing (a field of another type is dropped).
fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(serde_json::from_value(v).ok())
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Meta {
    #[serde(default, deserialize_with = "lenient")]
    name: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    namespace: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    resource_version: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    generation: Option<i64>,
    #[serde(default, deserialize_with = "lenient")]
    labels: Option<BTreeMap<String, String>>,
    #[serde(default, deserialize_with = "lenient")]
    deletion_timestamp: Option<Time>,
}

/// An object as it arrives; turned into a [`SlimObject`].
#[derive(Deserialize)]
struct Wire {
    #[serde(default)]
    metadata: Meta,
    #[serde(default)]
    spec: Spec,
    #[serde(default)]
    status: Status,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct NameRef {
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub name: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct Endpoint {
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub host: Option<String>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub port: Option<i64>,
}

/// `{version}`: a Cluster's `spec.topology`, a MachineDeployment's `spec.template.spec`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct Versioned {
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub version: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct Template {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<Versioned>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Spec {
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub replicas: Option<i64>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub version: Option<String>,
    #[serde(
        rename = "providerID",
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub provider_id: Option<String>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub control_plane_ref: Option<NameRef>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub control_plane_endpoint: Option<Endpoint>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub template: Option<Template>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub topology: Option<Versioned>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

fn wanted_conditions<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Condition>>, D::Error> {
    let Some(list) = lenient::<D, Vec<Value>>(d)? else {
        return Ok(None);
    };
    Ok(Some(
        list.into_iter()
            .filter(|c| {
                c.get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| wanted(t, c.get("status").and_then(Value::as_str)))
            })
            .filter_map(|c| serde_json::from_value(c).ok())
            .collect(),
    ))
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct Address {
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
}

/// The replica counters (and conditions) of a v1beta2 status, also found under
/// `status.v1beta2` of a v1beta1 object.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Counters {
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub replicas: Option<i64>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub ready_replicas: Option<i64>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub available_replicas: Option<i64>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub up_to_date_replicas: Option<i64>,
    #[serde(
        default,
        deserialize_with = "wanted_conditions",
        skip_serializing_if = "Option::is_none"
    )]
    pub conditions: Option<Vec<Condition>>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub observed_generation: Option<i64>,
    #[serde(flatten)]
    pub counters: Counters,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub version: Option<String>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub phase: Option<String>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub v1beta2: Option<Box<Counters>>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub addresses: Option<Vec<Address>>,
    #[serde(
        default,
        deserialize_with = "lenient",
        skip_serializing_if = "Option::is_none"
    )]
    pub node_ref: Option<NameRef>,
}

/// One cached object: its identity (name, namespace, resourceVersion, generation, deletion),
/// the labels the driver reads, and its slim spec and status.
#[derive(Clone, Debug, Default)]
pub struct SlimObject {
    pub metadata: ObjectMeta,
    pub labels: Labels,
    pub spec: Spec,
    pub status: Status,
}

impl<'de> Deserialize<'de> for SlimObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = Wire::deserialize(d)?;
        let m = w.metadata;
        Ok(SlimObject {
            metadata: ObjectMeta {
                name: m.name,
                namespace: m.namespace,
                resource_version: m.resource_version,
                generation: m.generation,
                deletion_timestamp: m.deletion_timestamp,
                ..ObjectMeta::default()
            },
            labels: m.labels.map(Labels::from_map).unwrap_or_default(),
            spec: w.spec,
            status: w.status,
        })
    }
}

impl kube::Resource for SlimObject {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl Condition {
    /// Whether the condition's status is `status` ("True", "False", "Unknown").
    pub fn is(&self, status: &str) -> bool {
        self.status.as_deref() == Some(status)
    }

    /// Its message, when it has one.
    pub fn text(&self) -> Option<&str> {
        self.message.as_deref().filter(|m| !m.is_empty())
    }
}

/// The v1beta2 replica counters, in the order [`SlimObject::counters`] gives them.
const COUNTERS: usize = 4;

impl SlimObject {
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    /// `spec.replicas`.
    pub fn replicas(&self) -> Option<i64> {
        self.spec.replicas
    }

    /// `replicas`, `readyReplicas`, `availableReplicas`, `upToDateReplicas` of the v1beta2
    /// status; a v1beta1 object carries them under `status.v1beta2`.
    pub fn counters(&self) -> [Option<i64>; COUNTERS] {
        let c = &self.status.counters;
        let old = self.status.v1beta2.as_deref();
        let or_old =
            |now: Option<i64>, f: fn(&Counters) -> Option<i64>| now.or_else(|| old.and_then(f));
        [
            or_old(c.replicas, |o| o.replicas),
            or_old(c.ready_replicas, |o| o.ready_replicas),
            or_old(c.available_replicas, |o| o.available_replicas),
            or_old(c.up_to_date_replicas, |o| o.up_to_date_replicas),
        ]
    }

    /// The conditions the parser kept (`status.conditions`).
    pub fn conditions(&self) -> impl Iterator<Item = &Condition> {
        self.status.counters.conditions.iter().flatten()
    }

    pub fn condition(&self, kind: &str) -> Option<&Condition> {
        self.conditions().find(|c| c.kind == kind)
    }

    /// The object as JSON, in its Kubernetes shape (with fewer fields): what the tests
    /// compare.
    #[cfg(test)]
    pub fn to_value(&self) -> Option<Value> {
        let mut meta = match serde_json::to_value(&self.metadata).ok()? {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        if let Some(l) = self.labels.to_json() {
            meta.insert("labels".into(), l);
        }
        let mut o = Map::new();
        o.insert("metadata".into(), Value::Object(meta));
        o.insert("spec".into(), serde_json::to_value(&self.spec).ok()?);
        o.insert("status".into(), serde_json::to_value(&self.status).ok()?);
        Some(Value::Object(o))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The slim object of `v`, as the driver reads it.
    fn typed(v: &Value) -> SlimObject {
        serde_json::from_value(v.clone()).expect("a SlimObject")
    }

    fn slim(v: Value) -> Value {
        let o: SlimObject = serde_json::from_value(v).expect("a SlimObject");
        assert!(o.metadata.labels.is_none() && o.metadata.annotations.is_none());
        o.to_value().expect("json")
    }

    #[test]
    fn a_control_plane_keeps_its_counters_and_the_conditions_the_driver_reads() {
        let v = slim(json!({
            "apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane",
            "metadata": {"name": "kube-a-cp", "namespace": "ns", "generation": 3,
                         "labels": {CLUSTER_NAME_LABEL: "kube-a", "other": "x"},
                         "annotations": {"big": "x"}, "finalizers": ["f"],
                         "managedFields": [{"manager": "m"}]},
            "spec": {"replicas": 3, "version": "v1.31.0",
                     "kubeadmConfigSpec": {"files": [{"content": "long"}]}},
            "status": {"observedGeneration": 3, "replicas": 3, "readyReplicas": 2,
                       "availableReplicas": 2, "upToDateReplicas": 3, "version": "v1.31.0",
                       "selector": "s", "initialization": {"controlPlaneInitialized": true},
                       "conditions": [
                           {"type": "ScalingUp", "status": "True", "reason": "ScalingUp",
                            "message": "Scaling up", "observedGeneration": 3,
                            "lastTransitionTime": "2026-12-04T00:00:00Z"},
                           {"type": "ScalingDown", "status": "False", "reason": "NotScalingDown"},
                           {"type": "Available", "status": "True", "reason": "Available"},
                           {"type": "EtcdClusterHealthy", "status": "True"}]}
        }));
        assert_eq!(v["spec"], json!({"replicas": 3, "version": "v1.31.0"}));
        assert_eq!(v["status"]["readyReplicas"], 2);
        assert_eq!(v["status"]["upToDateReplicas"], 3);
        assert_eq!(
            v["status"]["conditions"],
            json!([{"type": "ScalingUp", "status": "True", "reason": "ScalingUp",
                    "message": "Scaling up", "observedGeneration": 3}])
        );
        assert!(v["status"].get("selector").is_none());
        assert!(v["metadata"].get("annotations").is_none());
        assert!(v["metadata"].get("managedFields").is_none());
        assert_eq!(v["metadata"]["generation"], 3);
        assert_eq!(
            v["metadata"]["labels"],
            json!({CLUSTER_NAME_LABEL: "kube-a"})
        );
        assert_eq!(
            super::super::status::scaled(&typed(&v), 3),
            super::super::status::Observed::InProgress { reason: None }
        );
    }

    #[test]
    fn a_machine_keeps_its_identity_addresses_and_version() {
        let v = slim(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
            "metadata": {"name": "m1", "namespace": "ns",
                         "labels": {CLUSTER_NAME_LABEL: "kube-a", CONTROL_PLANE_LABEL: ""}},
            "spec": {"version": "v1.30.4", "providerID": "openstack:///srv-1",
                     "bootstrap": {"configRef": {"name": "b"}}},
            "status": {"phase": "Running",
                       "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
                       "nodeRef": {"name": "node-1", "uid": "u"}, "nodeInfo": {"bootID": "x"}}
        }));
        assert_eq!(
            v["spec"],
            json!({"version": "v1.30.4", "providerID": "openstack:///srv-1"})
        );
        assert_eq!(v["status"]["nodeRef"], json!({"name": "node-1"}));
        assert_eq!(v["status"]["addresses"][0]["address"], "10.0.0.5");
        assert!(v["status"].get("nodeInfo").is_none());
        assert!(super::super::topology::machine_matches(&v, "srv-1"));
        assert!(super::super::topology::machine_matches(&v, "node-1"));
    }

    #[test]
    fn a_cluster_keeps_its_references_and_a_refusal_of_the_topology_controller() {
        let v = slim(json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": {"name": "kube-a", "namespace": "ns", "generation": 4},
            "spec": {"controlPlaneRef": {"kind": "KubeadmControlPlane", "name": "kube-a-cp"},
                     "controlPlaneEndpoint": {"host": "10.0.0.1", "port": 6443},
                     "topology": {"version": "v1.30.4", "controlPlane": {"replicas": 3}}},
            "status": {"observedGeneration": 4, "phase": "Provisioned",
                       "conditions": [{"type": "TopologyReconciled", "status": "False",
                                       "reason": "ReconcileFailed", "message": "refused",
                                       "observedGeneration": 4}]}
        }));
        assert_eq!(
            v["spec"],
            json!({"controlPlaneRef": {"name": "kube-a-cp"},
                   "controlPlaneEndpoint": {"host": "10.0.0.1", "port": 6443},
                   "topology": {"version": "v1.30.4"}})
        );
        assert_eq!(
            super::super::status::topology_failure(&typed(&v)),
            Some("refused".into())
        );
        assert_eq!(
            super::super::status::api_address(&typed(&v)),
            Some("https://10.0.0.1:6443".into())
        );
    }

    #[test]
    fn a_v1beta1_object_keeps_its_v1beta2_counters() {
        let v = slim(json!({
            "metadata": {"name": "md", "generation": 2},
            "spec": {"replicas": 2, "template": {"spec": {"version": "v1.31.0", "bootstrap": {}}}},
            "status": {"observedGeneration": 2, "replicas": 2, "readyReplicas": 2,
                       "v1beta2": {"readyReplicas": 2, "availableReplicas": 2, "upToDateReplicas": 2}}
        }));
        assert_eq!(v["spec"]["template"]["spec"]["version"], "v1.31.0");
        assert_eq!(
            super::super::status::scaled(&typed(&v), 2),
            super::super::status::Observed::Complete
        );
    }

    #[test]
    fn a_field_of_an_unexpected_type_is_dropped_not_an_error() {
        let v = slim(json!({
            "metadata": {"name": "odd", "labels": "not a map", "generation": "seven"},
            "spec": {"replicas": "three", "controlPlaneEndpoint": {"host": 5}},
            "status": {"conditions": {"not": "a list"}, "readyReplicas": 1}
        }));
        assert_eq!(v["metadata"]["name"], "odd");
        assert!(v["metadata"].get("labels").is_none());
        assert!(v["spec"].get("replicas").is_none());
        assert_eq!(v["status"]["readyReplicas"], 1);
        assert!(v["status"].get("conditions").is_none());
    }
}
