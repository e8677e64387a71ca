//! What a cluster magnum-rs creates on magnum-cluster-api's class gets for its add-ons
//! (docs/architecture.md "Add-ons"), checked on the real controllers by the mcapi_capo
//! story, and what a cluster magnum-cluster-api created does not get (mcapi_adoption):
//! - the `<stack>-cloud-provider` ClusterResourceSet and Secret: the workload's
//!   `kube-system/cloud-config` with the cluster's own application credential, and a
//!   StorageClass per Cinder volume type;
//! - a HelmReleaseProxy per add-on of `deploy/addons/` (applied by scripts/test.sh as an
//!   operator applies them; Cluster API's Helm add-on provider, `scripts/caaph.sh`), made
//!   for the Cluster by its `addons.magnum-rs/*` labels, with values rendered from it. No
//!   workload API server comes up here (Nova is its API only), so the provider's install
//!   itself, gated on the control plane, is not reached.

use kube::api::ApiResource;
use magnum_rs::openstack::lookups;
use magnum_rs::openstack::Session;
use serde_json::{json, Value};

use crate::mcapi_capo::Env;

/// The Helm add-on provider's releases (`addons.cluster.x-k8s.io/v1alpha1`).
fn helm_release_proxies() -> ApiResource {
    ApiResource {
        group: "addons.cluster.x-k8s.io".into(),
        version: "v1alpha1".into(),
        api_version: "addons.cluster.x-k8s.io/v1alpha1".into(),
        kind: "HelmReleaseProxy".into(),
        plural: "helmreleaseproxies".into(),
    }
}

fn resource_sets() -> ApiResource {
    ApiResource {
        group: "addons.cluster.x-k8s.io".into(),
        version: "v1beta2".into(),
        api_version: "addons.cluster.x-k8s.io/v1beta2".into(),
        kind: "ClusterResourceSet".into(),
        plural: "clusterresourcesets".into(),
    }
}

fn secrets() -> ApiResource {
    ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: "Secret".into(),
        plural: "secrets".into(),
    }
}

/// Base64 `data[key]` of a Secret, as text.
fn secret_text(secret: &Value, key: &str) -> String {
    use base64::Engine;
    let b64 = secret["data"][key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} in {}", secret["metadata"]["name"]));
    String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .expect("base64"),
    )
    .expect("utf-8")
}

/// Requires the Helm add-on provider in the environment (scripts/test.sh starts it).
pub(crate) fn require_caaph() {
    assert_eq!(
        std::env::var("MAGNUM_RS_TEST_CAAPH").as_deref(),
        Ok("1"),
        "MAGNUM_RS_TEST_CAAPH is not set: scripts/test.sh starts Cluster API's Helm add-on \
         provider and applies deploy/addons/"
    );
}

/// The Cluster `stack` of cluster `uuid` has its `<stack>-cloud-provider` resource set: the
/// workload's cloud-config with the credential of `<stack>-cloud-config`, a StorageClass
/// per volume type `session` sees (the default one marked).
pub(crate) async fn assert_cloud_provider(
    env: &Env,
    stack: &str,
    uuid: &str,
    session: &Session<'_>,
) {
    let name = format!("{stack}-cloud-provider");
    let crs = env
        .get(&resource_sets(), &name)
        .await
        .unwrap_or_else(|| panic!("ClusterResourceSet {name}"));
    assert_eq!(
        crs["spec"]["clusterSelector"],
        json!({"matchLabels": {"cluster-uuid": uuid}}),
        "{crs}"
    );
    assert_eq!(
        crs["spec"]["resources"],
        json!([{"kind": "Secret", "name": name}]),
        "{crs}"
    );
    assert_eq!(crs["spec"]["strategy"], "Reconcile", "{crs}");
    let secret = env
        .get(&secrets(), &name)
        .await
        .unwrap_or_else(|| panic!("Secret {name}"));
    assert_eq!(secret["type"], "addons.cluster.x-k8s.io/resource-set");
    // The credential CAPO uses is the one the workload's cloud provider gets.
    let cloud_config = env
        .get(&secrets(), &format!("{stack}-cloud-config"))
        .await
        .expect("the cloud-config Secret");
    let clouds: Value =
        serde_yaml_ng::from_str(&secret_text(&cloud_config, "clouds.yaml")).expect("yaml");
    let credential_id = clouds["clouds"]["default"]["auth"]["application_credential_id"]
        .as_str()
        .expect("a credential id");
    let workload: Value =
        serde_yaml_ng::from_str(&secret_text(&secret, "cloud-config-secret.yaml")).expect("yaml");
    assert_eq!(
        workload["metadata"],
        json!({"name": "cloud-config", "namespace": "kube-system"})
    );
    let conf = workload["stringData"]["cloud.conf"]
        .as_str()
        .expect("cloud.conf");
    assert!(
        conf.contains(&format!("\napplication-credential-id={credential_id}\n")),
        "the workload's cloud.conf names the cluster's credential"
    );
    assert!(conf.contains("\n[LoadBalancer]\nlb-provider=amphorav2\n"));
    // A StorageClass per Cinder volume type, as demo sees them.
    let types = lookups::volume_types(session)
        .await
        .expect("cinder answers");
    let default = lookups::default_volume_type(session)
        .await
        .expect("cinder answers");
    let mut keys: Vec<String> = secret["data"]
        .as_object()
        .expect("data")
        .keys()
        .filter(|k| k.starts_with("storageclass-"))
        .cloned()
        .collect();
    keys.sort();
    let mut expected: Vec<String> = types
        .iter()
        .filter(|t| t.as_str() != "__DEFAULT__")
        .map(|t| format!("storageclass-block-{t}.yaml"))
        .collect();
    expected.sort();
    assert!(!expected.is_empty(), "Cinder has volume types here");
    assert_eq!(keys, expected);
    // The default type's class is the default one (none when Cinder's default is its
    // placeholder `__DEFAULT__`, which gets no class, as with mcapi).
    for key in &keys {
        let class: Value = serde_yaml_ng::from_str(&secret_text(&secret, key)).expect("yaml");
        let marked = class["metadata"]["annotations"]
            ["storageclass.kubernetes.io/is-default-class"]
            == "true";
        assert_eq!(
            marked,
            class["parameters"]["type"] == json!(default),
            "{key}: {class}"
        );
    }
}

/// The Helm add-on provider's releases for the Cluster `stack`.
pub(crate) async fn helm_releases(env: &Env, stack: &str) -> Vec<Value> {
    env.list(
        &helm_release_proxies(),
        &format!("cluster.x-k8s.io/cluster-name={stack}"),
    )
    .await
}

/// The Cluster `stack` (calico, Cinder, keystone auth: the story's template) gets a release
/// of each add-on of deploy/addons/, with values rendered from it.
pub(crate) async fn assert_helm_add_ons(
    env: &Env,
    stack: &str,
    uuid: &str,
    pod_cidr: &str,
    occm_tag: &str,
) {
    let wanted = [
        "openstack-cloud-controller-manager",
        "openstack-cinder-csi",
        "tigera-operator",
        "k8s-keystone-auth",
    ];
    let releases = env
        .wait_for("a HelmReleaseProxy per add-on", || async {
            let found = helm_releases(env, stack).await;
            let charts: Vec<&str> = found
                .iter()
                .filter_map(|r| r["spec"]["chartName"].as_str())
                .collect();
            wanted
                .iter()
                .all(|w| charts.contains(w))
                .then_some(found.clone())
        })
        .await;
    let charts: Vec<&str> = releases
        .iter()
        .filter_map(|r| r["spec"]["chartName"].as_str())
        .collect();
    assert_eq!(
        charts.len(),
        wanted.len(),
        "one release per add-on: {charts:?}"
    );
    for r in &releases {
        let values = r["spec"]["values"].as_str().unwrap_or_default();
        let parsed: Value = serde_yaml_ng::from_str(values).unwrap_or_else(|e| {
            panic!(
                "{}'s values are YAML: {e}\n{values}",
                r["spec"]["chartName"]
            )
        });
        assert!(parsed.is_object(), "{values}");
    }
    let values_of = |chart: &str| {
        releases
            .iter()
            .find(|r| r["spec"]["chartName"] == chart)
            .and_then(|r| r["spec"]["values"].as_str())
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        values_of("tigera-operator").contains(pod_cidr),
        "calico's pool is the Cluster's pod network: {}",
        values_of("tigera-operator")
    );
    // The cloud controller manager: mcapi's release, the cluster named by its uuid (in the
    // names of its load balancers), the tag mcapi picks for the Cluster's Kubernetes.
    let occm = releases
        .iter()
        .find(|r| r["spec"]["chartName"] == "openstack-cloud-controller-manager")
        .expect("OCCM");
    assert_eq!(occm["spec"]["namespace"], "kube-system", "{occm}");
    assert_eq!(occm["spec"]["releaseName"], "openstack-ccm", "{occm}");
    let values: Value =
        serde_yaml_ng::from_str(occm["spec"]["values"].as_str().unwrap_or_default()).expect("yaml");
    assert_eq!(values["cluster"]["name"], uuid, "{values}");
    assert_eq!(values["secret"]["create"], false, "{values}");
    assert_eq!(values["image"]["tag"], occm_tag, "{values}");
    assert!(
        values_of("k8s-keystone-auth").contains("auth_url: \"http"),
        "keystone-auth gets Keystone's URL: {}",
        values_of("k8s-keystone-auth")
    );
}

/// Once the Cluster `stack` is gone: no resource set, Secret or Helm release of its add-ons.
pub(crate) async fn assert_no_add_ons_left(env: &Env, stack: &str) {
    let name = format!("{stack}-cloud-provider");
    assert!(env.get(&secrets(), &name).await.is_none(), "Secret {name}");
    // Deleted; Cluster API's finalizer on it goes with its controller's next reconcile.
    env.wait_for("the ClusterResourceSet to go", || async {
        env.get(&resource_sets(), &name)
            .await
            .is_none()
            .then_some(())
    })
    .await;
    env.wait_for("the Helm releases to go with the Cluster", || async {
        helm_releases(env, stack).await.is_empty().then_some(())
    })
    .await;
}

fn helm_chart_proxies() -> ApiResource {
    ApiResource {
        kind: "HelmChartProxy".into(),
        plural: "helmchartproxies".into(),
        ..helm_release_proxies()
    }
}

/// A LabelSelector (`matchLabels`, `matchExpressions`) as a list call's selector string.
fn selector_text(selector: &Value) -> String {
    let mut parts: Vec<String> = selector["matchLabels"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    for e in selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let key = e["key"].as_str().unwrap_or_default();
        let values: Vec<&str> = e["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        parts.push(match e["operator"].as_str().unwrap_or_default() {
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            other => panic!("selector operator {other}"),
        });
    }
    parts.join(",")
}

/// Each HelmChartProxy of the namespace with the names of the Clusters its selector
/// matches (the provider lists Clusters with that selector).
pub(crate) async fn clusters_selected_by_proxies(env: &Env) -> Vec<(String, Vec<String>)> {
    let clusters = ApiResource {
        group: "cluster.x-k8s.io".into(),
        version: "v1beta2".into(),
        api_version: "cluster.x-k8s.io/v1beta2".into(),
        kind: "Cluster".into(),
        plural: "clusters".into(),
    };
    let mut out = Vec::new();
    for proxy in env.list(&helm_chart_proxies(), "").await {
        let selector = selector_text(&proxy["spec"]["clusterSelector"]);
        assert!(
            !selector.is_empty(),
            "a proxy selecting every Cluster: {proxy}"
        );
        let names = env
            .list(&clusters, &selector)
            .await
            .iter()
            .filter_map(|c| c["metadata"]["name"].as_str().map(str::to_string))
            .collect();
        let name = proxy["metadata"]["name"].as_str().unwrap_or_default();
        out.push((name.to_string(), names));
    }
    out
}
