//! The `<stack>-cloud-provider` ClusterResourceSet and its Secret: what a workload cluster
//! needs from the cloud that no Helm chart can know, as magnum-cluster-api's
//! `CloudProviderClusterResourcesSecret` writes it. Cluster API applies it to the cluster
//! (strategy `Reconcile`, selected by the `cluster-uuid` label):
//! - `cloud-config-secret.yaml`: the Secret `kube-system/cloud-config` the OpenStack cloud
//!   controller manager and Cinder's CSI plugin read, `cloud.conf` with the cluster's
//!   application credential and `ca.crt`;
//! - `storageclass-block-<type>.yaml`: a StorageClass per Cinder volume type, the default
//!   type's marked default (when Cinder's CSI is enabled).
//!
//! The Helm charts themselves (CNI, cloud controller manager, CSI, keystone auth) are not
//! rendered here: Cluster API's Helm add-on provider installs them (`deploy/addons/`,
//! selected by [`add_on_labels`]). The Secret's content never reaches a log.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret as KubeSecret;
use kube::api::ObjectMeta;
use serde_json::{json, Map, Value};

use super::cloud_config::CloudConfig;
use super::mcapi::cluster::CALICO_TAG;
use super::mcapi::labels::{LabelError, Labels};
use crate::model::{Cluster, ClusterTemplate};

/// The Secret type Cluster API's ClusterResourceSets apply.
pub const RESOURCE_SET_SECRET_TYPE: &str = "addons.cluster.x-k8s.io/resource-set";

/// mcapi's default `cilium_tag`.
pub const CILIUM_TAG: &str = "v1.15.3";

/// The prefix of the labels that select a cluster's add-ons in `deploy/addons/`.
pub const ADD_ON_LABEL_PREFIX: &str = "addons.magnum-rs/";

/// What `cloud.conf` says besides the labels: the cluster's `clouds.yaml` (Keystone's URL,
/// region, credential, TLS verification) and the CA bundle the operator configured
/// (`[drivers.cluster_api] cloud_ca_file`), empty when none is (magnum's
/// `get_openstack_ca()`).
#[derive(Debug)]
pub struct ProviderConfig<'a> {
    pub cloud: &'a CloudConfig<'a>,
    pub ca: &'a str,
}

/// Cinder's volume types, when the cluster gets Cinder's CSI plugin.
#[derive(Debug, Default)]
pub struct VolumeTypes {
    pub names: Vec<String>,
    pub default: String,
}

/// The ClusterResourceSet's and its Secret's name for the Cluster API cluster `stack`.
pub fn resource_name(stack: &str) -> String {
    format!("{stack}-cloud-provider")
}

/// Why the Secret cannot be made from the cluster's labels.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    #[error(transparent)]
    Label(#[from] LabelError),
    /// mcapi's `InvalidOctaviaLoadBalancerAlgorithm`.
    #[error("Invalid value for octavia_lb_algorithm: {0}.")]
    OctaviaAlgorithm(String),
}

/// Whether the cluster gets Cinder's CSI plugin: its `cinder_csi_enabled` label (default
/// on) and a volume service in the catalog (`integrations.cinder.is_enabled`).
pub fn cinder_enabled(cluster: &Cluster, volume_service: bool) -> Result<bool, LabelError> {
    Ok(Labels::of(cluster.labels.as_ref()).bool_or("cinder_csi_enabled", true)? && volume_service)
}

/// `cloud.conf` as mcapi's `generate_cloud_controller_manager_config` writes it.
pub fn cloud_conf(cluster: &Cluster, c: &ProviderConfig<'_>) -> Result<String, ProviderError> {
    let l = Labels::of(cluster.labels.as_ref());
    let provider = l.text_or("octavia_provider", "amphorav2");
    let algorithm = match (provider.as_str(), l.text("octavia_lb_algorithm")) {
        ("ovn", Some(a)) if a != "SOURCE_IP_PORT" => {
            return Err(ProviderError::OctaviaAlgorithm(a))
        }
        ("ovn", None) => "SOURCE_IP_PORT".to_string(),
        ("amphora" | "amphorav2", None) => "ROUND_ROBIN".to_string(),
        // Python's f-string of `None`, as mcapi writes for another provider without one.
        (_, a) => a.unwrap_or_else(|| "None".to_string()),
    };
    let healthcheck = l.text_or("octavia_lb_healthcheck", "True");
    let ca_file = if c.ca.is_empty() {
        ""
    } else {
        "ca-file=/etc/config/ca.crt"
    };
    Ok(format!(
        "[Global]\nauth-url={}\nregion={}\napplication-credential-id={}\n\
         application-credential-secret={}\ntls-insecure={}\n{ca_file}\n\
         [LoadBalancer]\nlb-provider={provider}\nlb-method={algorithm}\n\
         create-monitor={healthcheck}\n",
        c.cloud.auth_url,
        c.cloud.region_name.unwrap_or("None"),
        c.cloud.credential_id,
        c.cloud.credential_secret.expose(),
        if c.cloud.verify { "false" } else { "true" },
    ))
}

/// mcapi's `utils.convert_to_rfc1123`: runs of other characters become `-`, lower case.
pub fn rfc1123(input: &str) -> String {
    let mut out = String::with_capacity(input.len());
    let mut in_run = false;
    for ch in input.chars() {
        if ch.is_ascii_alphanumeric() {
            out.push(ch.to_ascii_lowercase());
            in_run = false;
        } else if !in_run {
            out.push('-');
            in_run = true;
        }
    }
    out
}

/// A Secret data key for `name`: as is when a key may hold it, else its RFC 1123 form
/// (mcapi uses the name as is, and the API server refuses a key with other characters).
fn data_key(name: &str) -> String {
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if valid {
        name.to_string()
    } else {
        rfc1123(name)
    }
}

fn yaml(doc: &Value) -> String {
    // A JSON value always has a YAML form.
    serde_yaml_ng::to_string(doc).unwrap_or_default()
}

/// The Secret's data: the workload's `kube-system/cloud-config` and, with Cinder's CSI, a
/// StorageClass per volume type (`__DEFAULT__`, Cinder's placeholder, left out).
pub fn secret_data(
    cluster: &Cluster,
    c: &ProviderConfig<'_>,
    volumes: Option<&VolumeTypes>,
) -> Result<BTreeMap<String, String>, ProviderError> {
    let cloud_config = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "cloud-config", "namespace": "kube-system"},
        "stringData": {"cloud.conf": cloud_conf(cluster, c)?, "ca.crt": c.ca},
    });
    let mut data = BTreeMap::from([("cloud-config-secret.yaml".to_string(), yaml(&cloud_config))]);
    for name in volumes
        .map(|v| v.names.as_slice())
        .unwrap_or_default()
        .iter()
        .filter(|n| n.as_str() != "__DEFAULT__")
    {
        let default = volumes.is_some_and(|v| &v.default == name);
        let annotations = if default {
            json!({"storageclass.kubernetes.io/is-default-class": "true"})
        } else {
            json!({})
        };
        let class = json!({
            "apiVersion": "storage.k8s.io/v1",
            "allowVolumeExpansion": true,
            "kind": "StorageClass",
            "metadata": {"annotations": annotations, "name": format!("block-{}", rfc1123(name))},
            "provisioner": "cinder.csi.openstack.org",
            "parameters": {"type": name},
            "reclaimPolicy": "Delete",
            "volumeBindingMode": "Immediate",
        });
        data.insert(
            format!("storageclass-block-{}.yaml", data_key(name)),
            yaml(&class),
        );
    }
    Ok(data)
}

/// The Secret `<stack>-cloud-provider` holding `data`.
pub fn secret(stack: &str, namespace: &str, data: BTreeMap<String, String>) -> KubeSecret {
    KubeSecret {
        metadata: ObjectMeta {
            name: Some(resource_name(stack)),
            namespace: Some(namespace.to_string()),
            ..ObjectMeta::default()
        },
        type_: Some(RESOURCE_SET_SECRET_TYPE.into()),
        string_data: Some(data),
        ..KubeSecret::default()
    }
}

/// The ClusterResourceSet `<stack>-cloud-provider` applying that Secret to the cluster
/// labelled `cluster-uuid: <cluster_uuid>`, kept in step with it (`Reconcile`).
pub fn resource_set(stack: &str, namespace: &str, cluster_uuid: &str) -> Value {
    json!({
        "apiVersion": "addons.cluster.x-k8s.io/v1beta2",
        "kind": "ClusterResourceSet",
        "metadata": {"name": resource_name(stack), "namespace": namespace},
        "spec": {
            "clusterSelector": {"matchLabels": {"cluster-uuid": cluster_uuid}},
            "resources": [{"kind": "Secret", "name": resource_name(stack)}],
            "strategy": "Reconcile",
        },
    })
}

/// The labels by which `deploy/addons/`'s HelmChartProxies pick the add-ons of a cluster
/// magnum-rs creates (clusters magnum-cluster-api created carry none: their add-ons come
/// from its own ClusterResourceSets):
/// - `cloud-provider: openstack`, every cluster;
/// - `cni: calico-<calico_tag>` or `cilium-<cilium_tag>`, by the template's network driver;
/// - `cinder-csi: enabled` with Cinder's CSI ([`cinder_enabled`]);
/// - `keystone-auth: enabled` with the `keystone_auth_enabled` label (default on).
pub fn add_on_labels(
    cluster: &Cluster,
    template: &ClusterTemplate,
    cinder: bool,
) -> Result<Map<String, Value>, LabelError> {
    let l = Labels::of(cluster.labels.as_ref());
    let key = |name: &str| format!("{ADD_ON_LABEL_PREFIX}{name}");
    let mut labels = Map::new();
    labels.insert(key("cloud-provider"), json!("openstack"));
    match template.network_driver.as_deref() {
        Some("calico") => {
            labels.insert(
                key("cni"),
                json!(format!("calico-{}", l.text_or("calico_tag", CALICO_TAG))),
            );
        }
        Some("cilium") => {
            labels.insert(
                key("cni"),
                json!(format!("cilium-{}", l.text_or("cilium_tag", CILIUM_TAG))),
            );
        }
        _ => {}
    }
    if cinder {
        labels.insert(key("cinder-csi"), json!("enabled"));
    }
    if l.bool_or("keystone_auth_enabled", true)? {
        labels.insert(key("keystone-auth"), json!("enabled"));
    }
    Ok(labels)
}

/// What deploy/addons/'s keystone-auth proxy reads from the Cluster's annotations, as
/// mcapi passes it to that chart: Keystone's URL, the cluster's project (its policy's
/// match) and the operator's CA for the cloud (when one is configured). None without
/// keystone auth.
pub fn add_on_annotations(
    cluster: &Cluster,
    keystone_url: &str,
    ca: &str,
) -> Result<Map<String, Value>, LabelError> {
    let mut annotations = Map::new();
    if !Labels::of(cluster.labels.as_ref()).bool_or("keystone_auth_enabled", true)? {
        return Ok(annotations);
    }
    let key = |name: &str| format!("{ADD_ON_LABEL_PREFIX}{name}");
    annotations.insert(key("keystone-auth-url"), json!(keystone_url));
    annotations.insert(
        key("project-id"),
        json!(cluster.project_id.as_deref().unwrap_or_default()),
    );
    if !ca.is_empty() {
        annotations.insert(key("openstack-ca"), json!(ca));
    }
    Ok(annotations)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;

    fn cluster(labels: Value) -> Cluster {
        Cluster {
            uuid: "3b1f0a52-6c7d-4e8f-9a0b-1c2d3e4f5a6b".into(),
            labels: labels.as_object().cloned(),
            ..Cluster::default()
        }
    }

    use crate::drivers::cluster_api::cloud_config::tests::config as cloud;

    fn config<'a>(cloud: &'a CloudConfig<'a>, ca: &'a str) -> ProviderConfig<'a> {
        ProviderConfig { cloud, ca }
    }

    #[test]
    fn cloud_conf_is_mcapis_text_with_the_credential_and_octavias_defaults() {
        let s = Secret::new("shh");
        let cc = cloud(&s);
        let conf = cloud_conf(&cluster(json!({})), &config(&cc, "")).expect("conf");
        assert_eq!(
            conf,
            "[Global]\nauth-url=https://keystone.example:5000/v3\nregion=RegionOne\n\
             application-credential-id=c0ffee\napplication-credential-secret=shh\n\
             tls-insecure=false\n\n[LoadBalancer]\nlb-provider=amphorav2\n\
             lb-method=ROUND_ROBIN\ncreate-monitor=True\n"
        );
        let with_ca = cloud_conf(&cluster(json!({})), &config(&cc, "PEM")).expect("conf");
        assert!(with_ca.contains("\ntls-insecure=false\nca-file=/etc/config/ca.crt\n"));
        let ovn = cloud_conf(
            &cluster(json!({"octavia_provider": "ovn", "octavia_lb_healthcheck": "false"})),
            &config(&cc, ""),
        )
        .expect("conf");
        assert!(ovn.ends_with("lb-provider=ovn\nlb-method=SOURCE_IP_PORT\ncreate-monitor=false\n"));
    }

    #[test]
    fn ovn_with_another_algorithm_is_refused_with_mcapis_text() {
        let s = Secret::new("shh");
        let cc = cloud(&s);
        let err = cloud_conf(
            &cluster(json!({"octavia_provider": "ovn", "octavia_lb_algorithm": "ROUND_ROBIN"})),
            &config(&cc, ""),
        )
        .expect_err("refused");
        assert_eq!(
            err.to_string(),
            "Invalid value for octavia_lb_algorithm: ROUND_ROBIN."
        );
    }

    #[test]
    fn the_data_holds_the_workloads_cloud_config_and_a_class_per_volume_type() {
        let s = Secret::new("shh");
        let cc = cloud(&s);
        let volumes = VolumeTypes {
            names: vec!["__DEFAULT__".into(), "ssd".into(), "Fast HDD".into()],
            default: "ssd".into(),
        };
        let data =
            secret_data(&cluster(json!({})), &config(&cc, "PEM"), Some(&volumes)).expect("data");
        assert_eq!(
            data.keys().collect::<Vec<_>>(),
            [
                "cloud-config-secret.yaml",
                "storageclass-block-fast-hdd.yaml",
                "storageclass-block-ssd.yaml"
            ]
        );
        let workload: Value =
            serde_yaml_ng::from_str(&data["cloud-config-secret.yaml"]).expect("yaml");
        assert_eq!(
            workload["metadata"],
            json!({"name": "cloud-config", "namespace": "kube-system"})
        );
        assert_eq!(workload["stringData"]["ca.crt"], "PEM");
        assert!(workload["stringData"]["cloud.conf"]
            .as_str()
            .is_some_and(|c| c.contains("application-credential-secret=shh\n")));
        let ssd: Value =
            serde_yaml_ng::from_str(&data["storageclass-block-ssd.yaml"]).expect("yaml");
        assert_eq!(
            ssd,
            json!({"apiVersion": "storage.k8s.io/v1", "allowVolumeExpansion": true,
                   "kind": "StorageClass",
                   "metadata": {"annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
                                "name": "block-ssd"},
                   "provisioner": "cinder.csi.openstack.org", "parameters": {"type": "ssd"},
                   "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"})
        );
        let hdd: Value =
            serde_yaml_ng::from_str(&data["storageclass-block-fast-hdd.yaml"]).expect("yaml");
        assert_eq!(hdd["metadata"]["annotations"], json!({}));
        assert_eq!(hdd["parameters"]["type"], "Fast HDD");
        let without = secret_data(&cluster(json!({})), &config(&cc, ""), None).expect("data");
        assert_eq!(
            without.keys().collect::<Vec<_>>(),
            ["cloud-config-secret.yaml"]
        );
    }

    #[test]
    fn the_resource_set_applies_the_secret_to_the_cluster_by_its_uuid() {
        let crs = resource_set("kube-ab12c", "magnum-system", "u-1");
        assert_eq!(crs["metadata"]["name"], "kube-ab12c-cloud-provider");
        assert_eq!(
            crs["spec"],
            json!({"clusterSelector": {"matchLabels": {"cluster-uuid": "u-1"}},
                   "resources": [{"kind": "Secret", "name": "kube-ab12c-cloud-provider"}],
                   "strategy": "Reconcile"})
        );
        let s = secret("kube-ab12c", "magnum-system", BTreeMap::new());
        assert_eq!(s.type_.as_deref(), Some(RESOURCE_SET_SECRET_TYPE));
        assert_eq!(
            s.metadata.name.as_deref(),
            Some("kube-ab12c-cloud-provider")
        );
    }

    #[test]
    fn add_on_labels_follow_the_network_driver_cinder_and_keystone_auth() {
        let calico = ClusterTemplate {
            network_driver: Some("calico".into()),
            ..ClusterTemplate::default()
        };
        let labels = add_on_labels(&cluster(json!({})), &calico, true).expect("labels");
        assert_eq!(
            Value::Object(labels),
            json!({"addons.magnum-rs/cloud-provider": "openstack",
                   "addons.magnum-rs/cni": "calico-v3.32.1",
                   "addons.magnum-rs/cinder-csi": "enabled",
                   "addons.magnum-rs/keystone-auth": "enabled"})
        );
        let cilium = ClusterTemplate {
            network_driver: Some("cilium".into()),
            ..ClusterTemplate::default()
        };
        let labels = add_on_labels(
            &cluster(json!({"cilium_tag": "v1.16.1", "keystone_auth_enabled": "false"})),
            &cilium,
            false,
        )
        .expect("labels");
        assert_eq!(
            Value::Object(labels),
            json!({"addons.magnum-rs/cloud-provider": "openstack",
                   "addons.magnum-rs/cni": "cilium-v1.16.1"})
        );
        assert!(add_on_labels(
            &cluster(json!({"keystone_auth_enabled": "maybe"})),
            &calico,
            true
        )
        .is_err());
    }

    #[test]
    fn keystone_auth_gets_keystones_url_the_project_and_a_configured_ca() {
        let c = Cluster {
            project_id: Some("p-1".into()),
            ..cluster(json!({}))
        };
        assert_eq!(
            Value::Object(add_on_annotations(&c, "https://ks/v3", "").expect("annotations")),
            json!({"addons.magnum-rs/keystone-auth-url": "https://ks/v3",
                   "addons.magnum-rs/project-id": "p-1"})
        );
        let with_ca = add_on_annotations(&c, "https://ks/v3", "PEM").expect("annotations");
        assert_eq!(with_ca["addons.magnum-rs/openstack-ca"], "PEM");
        let off = Cluster {
            labels: json!({"keystone_auth_enabled": "false"})
                .as_object()
                .cloned(),
            ..c
        };
        assert!(add_on_annotations(&off, "https://ks/v3", "PEM")
            .expect("annotations")
            .is_empty());
    }

    #[test]
    fn rfc1123_is_mcapis_conversion() {
        assert_eq!(rfc1123("Fast  HDD__x"), "fast-hdd-x");
        assert_eq!(rfc1123("ssd"), "ssd");
        assert_eq!(rfc1123("-a-"), "-a-");
    }
}
