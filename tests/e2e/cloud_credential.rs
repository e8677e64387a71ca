//! What a ClusterAPI cluster keeps in the cloud, as magnum-cluster-api keeps it, made by
//! magnum-rs with `--auth keystone` against the real Keystone 30 and Nova API 34
//! (`scripts/keystone.sh`, `scripts/openstack.sh`) and the real kube-apiserver with the
//! Cluster API CRDs (`scripts/kube.sh`, no controllers: a deleted Cluster is gone at once).
//!
//! The creating user's application credential (made with their token, which the API kept
//! only until then), the `<stack>-cloud-config` Secret CAPO reads, and the server groups of
//! the control plane and the worker nodegroup, before the Cluster; all of them gone once the
//! cluster is deleted, removed as magnum-rs's service user.
//!
//! Needs `MAGNUM_RS_TEST_KEYSTONE`, `MAGNUM_RS_TEST_OPENSTACK` and
//! `MAGNUM_RS_TEST_KUBECONFIG` (scripts/test.sh); takes the Keystone tests' turn.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Secret as KubeSecret};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use magnum_rs::drivers::cluster_api::topology::Resources;
use magnum_rs::openstack::{application_credentials, server_groups, Cloud, Interface};
use magnum_rs::store::cluster_credentials::CredentialRow;
use magnum_rs::store::Store;
use serde_json::{json, Value};

use crate::cloud_validation::glance_image;
use crate::keystone_auth::{call, magnum, magnum_with_env, Keystone, TURN};
use crate::openstack_lookups::{demo_token, services};

/// A client of the test kube-apiserver, a fresh namespace in it, and the kubeconfig's path.
async fn kube_namespace() -> (kube::Client, String, String) {
    let kubeconfig = std::env::var("MAGNUM_RS_TEST_KUBECONFIG")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| panic!("MAGNUM_RS_TEST_KUBECONFIG is not set: run scripts/test.sh, which starts a real kube-apiserver"));
    let kc = Kubeconfig::read_from(&kubeconfig).expect("kubeconfig");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("config");
    let client = kube::Client::try_from(cfg).expect("client");
    let ns = format!(
        "magnum-cloud-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let body: Namespace =
        serde_json::from_value(json!({"metadata": {"name": ns}})).expect("namespace");
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &body)
        .await
        .expect("create namespace");
    (client, ns, kubeconfig)
}

/// Polls `GET path` as `token` until `check` holds (bounded: 90 s).
async fn wait_for(
    port: u16,
    token: &str,
    path: &str,
    what: &str,
    check: impl Fn(u16, &Value) -> bool,
) -> Value {
    wait_for_within(port, token, path, what, Duration::from_secs(90), check).await
}

/// [`wait_for`] bounded by `timeout`.
pub(crate) async fn wait_for_within(
    port: u16,
    token: &str,
    path: &str,
    what: &str,
    timeout: Duration,
    check: impl Fn(u16, &Value) -> bool,
) -> Value {
    let deadline = Instant::now() + timeout;
    loop {
        let r = call(port, "GET", path, Some(token), None).await;
        if check(r.status, &r.body) {
            return r.body;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; last: {} {}",
            r.status,
            r.body
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
#[ignore = "needs scripts/test.sh"]
async fn a_capi_cluster_gets_its_users_credential_cloud_config_and_server_groups_and_loses_them_with_it(
) {
    let _turn = TURN.lock().await;
    let os = services();
    let ks = Keystone::from_env();
    let (client, ns, kubeconfig) = kube_namespace().await;
    let extra = format!(
        "[drivers.cluster_api]\nnamespace = \"{ns}\"\nprogress_deadline_seconds = 600\n\
         [[drivers.cluster_api.management_clusters]]\nname = \"test\"\nkubeconfig = \"{kubeconfig}\"\n"
    );
    let m = magnum(&ks, 30, &extra, &[]).await;
    let port = m.server.port;
    let demo = ks.token("demo", "demo").await;
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    let image = glance_image(
        &ks,
        &demo,
        &format!("ubuntu-{suffix}"),
        json!({"os_distro": "ubuntu"}),
    )
    .await;

    let t = call(
        port,
        "POST",
        "/v1/clustertemplates",
        Some(&demo),
        Some(json!({
            "name": format!("capi-{suffix}"), "coe": "kubernetes", "image_id": image,
            "flavor_id": "m1.small", "master_flavor_id": "m1.medium",
            "external_network_id": "public",
            "labels": {"kube_tag": "v1.30.4", "server_group_policies": "anti-affinity"},
        })),
    )
    .await;
    assert_eq!(t.status, 201, "{}", t.body);
    let c = call(
        port,
        "POST",
        "/v1/clusters",
        Some(&demo),
        Some(json!({"name": "k8s", "cluster_template_id": t.body["uuid"],
                    "master_count": 1, "node_count": 1})),
    )
    .await;
    assert_eq!(c.status, 202, "{}", c.body);
    let uuid = c.body["uuid"].as_str().expect("uuid").to_string();
    let path = format!("/v1/clusters/{uuid}");
    let shown = wait_for(port, &demo, &path, "the Cluster API name", |s, b| {
        s == 200 && b["cluster_id"].as_str().is_some_and(|s| !s.is_empty())
    })
    .await;
    assert_eq!(shown["status"], "CREATE_IN_PROGRESS", "{shown}");
    // The latest microversion shows `stack_id` as `cluster_id`.
    let stack = shown["cluster_id"].as_str().expect("stack").to_string();
    let clusters: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &ns, &Resources::at("v1beta2").cluster);
    // In keystone mode the Cluster is magnum-cluster-api's on its class, its variables
    // looked up as the credential.
    let written =
        serde_json::to_value(clusters.get(&stack).await.expect("the Cluster")).expect("json");
    let variables = written["spec"]["topology"]["variables"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(variables.len(), 39, "{written}");
    let var = |name: &str| {
        variables
            .iter()
            .find(|v| v["name"] == name)
            .map(|v| v["value"].clone())
            .unwrap_or_else(|| panic!("variable {name}"))
    };
    assert_eq!(
        written["spec"]["topology"]["classRef"]["name"],
        "magnum-v0.38.2"
    );
    assert_eq!(var("flavor"), "m1.small");
    assert_eq!(var("controlPlaneFlavor"), "m1.medium");
    assert_eq!(var("imageUUID"), json!(image));
    assert_eq!(
        var("clusterIdentityRefName"),
        json!(format!("{stack}-cloud-config"))
    );

    // The credential: demo's, named after the cluster, stored, the kept token gone.
    let (token, catalog, demo_user, _) = demo_token(&os.keystone_url).await;
    let cloud = Cloud::new(Duration::from_secs(10), Interface::Public, None).expect("cloud");
    let s = cloud.session(token, Arc::new(catalog));
    let credential = application_credentials::find(&s, &demo_user, &uuid)
        .await
        .expect("keystone answers")
        .expect("demo has the cluster's application credential");
    let store = Store::connect(&m.db.url).await.expect("store");
    let kept = store.cluster_credential(&uuid).await.expect("row");
    let Some(CredentialRow::Made { id, secret }) = kept else {
        panic!("the credential is stored and the token cleared: {kept:?}");
    };
    assert_eq!(id, credential);

    // <stack>-cloud-config: clouds.yaml with that credential, which authenticates as demo.
    let secrets: Api<KubeSecret> = Api::namespaced(client.clone(), &ns);
    let cc = secrets
        .get(&format!("{stack}-cloud-config"))
        .await
        .expect("the cloud-config Secret");
    assert_eq!(cc.type_.as_deref(), Some("Opaque"));
    assert_eq!(
        cc.metadata.labels.unwrap_or_default().get("cluster-uuid"),
        Some(&uuid)
    );
    let data = cc.data.unwrap_or_default();
    assert!(data.contains_key("cacert"), "cacert key");
    let yaml: serde_yaml_ng::Value =
        serde_yaml_ng::from_slice(&data["clouds.yaml"].0).expect("clouds.yaml");
    let auth = &yaml["clouds"]["default"]["auth"];
    assert_eq!(
        auth["application_credential_id"].as_str(),
        Some(id.as_str())
    );
    assert_eq!(
        auth["application_credential_secret"].as_str(),
        Some(secret.expose())
    );
    assert_eq!(
        yaml["clouds"]["default"]["endpoint_type"].as_str(),
        Some("public")
    );
    let auth_url = auth["auth_url"]
        .as_str()
        .expect("auth_url")
        .trim_end_matches('/');
    let v3 = if auth_url.ends_with("/v3") {
        auth_url.to_string()
    } else {
        format!("{auth_url}/v3")
    };
    let issued = reqwest::Client::new()
        .post(format!("{v3}/auth/tokens"))
        .json(
            &json!({"auth": {"identity": {"methods": ["application_credential"],
            "application_credential": {"id": id, "secret": secret.expose()}}}}),
        )
        .send()
        .await
        .expect("keystone answers");
    assert_eq!(
        issued.status().as_u16(),
        201,
        "the credential authenticates"
    );
    let body: Value = issued.json().await.expect("token");
    assert_eq!(body["token"]["user"]["id"], json!(demo_user));

    // The server groups, with the template's policy, in demo's project.
    for name in [stack.clone(), format!("{stack}-default-worker")] {
        let g = server_groups::find(&s, &name, None, false)
            .await
            .expect("nova answers")
            .unwrap_or_else(|| panic!("server group {name}"));
        assert_eq!(g.policies, vec!["anti-affinity".to_string()], "{name}");
    }

    // A nodegroup added later gets its own group, made as the credential the cluster's
    // cloud-config holds, with the nodegroup's policy. (Magnum adds nodegroups to a cluster
    // with an API address: the infrastructure provider's part, played here.)
    clusters
        .patch(
            &stack,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"controlPlaneEndpoint":
                {"host": "203.0.113.10", "port": 6443}}})),
        )
        .await
        .expect("endpoint");
    wait_for(port, &demo, &path, "the API address", |s, b| {
        s == 200 && b["api_address"].is_string()
    })
    .await;
    let ng = call(
        port,
        "POST",
        &format!("{path}/nodegroups"),
        Some(&demo),
        Some(json!({"name": "gpu", "node_count": 1,
                    "labels": {"server_group_policies": "soft-affinity"}})),
    )
    .await;
    assert_eq!(ng.status, 202, "{}", ng.body);
    let gpu = format!("{stack}-gpu");
    let deadline = Instant::now() + Duration::from_secs(60);
    let group = loop {
        if let Some(g) = server_groups::find(&s, &gpu, None, false)
            .await
            .expect("nova answers")
        {
            break g;
        }
        if Instant::now() >= deadline {
            let ng = call(
                port,
                "GET",
                &format!("{path}/nodegroups/gpu"),
                Some(&demo),
                None,
            )
            .await;
            panic!("no server group {gpu}; the nodegroup: {}", ng.body);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(group.policies, vec!["soft-affinity".to_string()]);
    // Its entry is magnum-cluster-api's, stored in v1beta2: its own server group, the
    // cluster's flavor and image (the nodegroup names none), mcapi's detach timeout.
    let deadline = Instant::now() + Duration::from_secs(60);
    let entry = loop {
        let c = serde_json::to_value(clusters.get(&stack).await.expect("Cluster")).expect("json");
        let found = c["spec"]["topology"]["workers"]["machineDeployments"]
            .as_array()
            .and_then(|mds| mds.iter().find(|md| md["name"] == "gpu").cloned());
        if let Some(entry) = found {
            break entry;
        }
        assert!(Instant::now() < deadline, "no entry gpu in {c}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let override_of = |name: &str| {
        entry["variables"]["overrides"]
            .as_array()
            .and_then(|o| o.iter().find(|v| v["name"] == name))
            .map(|v| v["value"].clone())
            .unwrap_or_else(|| panic!("override {name} in {entry}"))
    };
    assert_eq!(override_of("serverGroupId"), json!(group.id));
    assert_eq!(override_of("flavor"), "m1.small");
    assert_eq!(override_of("imageUUID"), json!(image));
    assert_eq!(entry["class"], "default-worker");
    assert_eq!(entry["deletion"]["nodeVolumeDetachTimeoutSeconds"], 300);
    assert_eq!(entry["healthCheck"]["enabled"], true);
    // Deleted, the nodegroup's group goes once its machines are gone (none here).
    let ng_path = format!("{path}/nodegroups/gpu");
    let del = call(port, "DELETE", &ng_path, Some(&demo), None).await;
    assert_eq!(del.status, 204, "{}", del.body);
    wait_for(port, &demo, &ng_path, "the nodegroup to be gone", |s, _| {
        s == 404
    })
    .await;
    assert_eq!(
        server_groups::find(&s, &gpu, None, false)
            .await
            .expect("nova answers"),
        None,
        "the nodegroup's server group is deleted with it"
    );

    // Deleted: the Cluster goes at once (no controllers), then everything beside it.
    let d = call(port, "DELETE", &path, Some(&demo), None).await;
    assert_eq!(d.status, 204, "{}", d.body);
    wait_for(port, &demo, &path, "the cluster to be gone", |s, _| {
        s == 404
    })
    .await;
    assert_eq!(
        application_credentials::find(&s, &demo_user, &uuid)
            .await
            .expect("keystone answers"),
        None,
        "the credential is deleted"
    );
    for name in [stack.clone(), format!("{stack}-default-worker"), gpu] {
        assert_eq!(
            server_groups::find(&s, &name, None, false)
                .await
                .expect("nova answers"),
            None,
            "server group {name} is deleted"
        );
    }
    let gone = secrets.get_opt(&format!("{stack}-cloud-config")).await;
    assert!(
        matches!(gone, Ok(None)),
        "the cloud-config Secret is deleted"
    );
    assert_eq!(store.cluster_credential(&uuid).await.expect("row"), None);
}

/// Killed after Keystone made the credential but before it was stored, the create makes
/// it again after the restart (the first deleted: one credential of the cluster's name,
/// the stored one). Killed after the delete removed the server groups and the credential,
/// the delete ends after the restart with the Secrets gone too.
#[tokio::test]
#[ignore = "needs scripts/test.sh"]
async fn a_process_killed_between_the_clouds_steps_ends_the_same_after_its_restart() {
    let _turn = TURN.lock().await;
    let os = services();
    let ks = Keystone::from_env();
    let (client, ns, kubeconfig) = kube_namespace().await;
    // A short Lease, so that each restart leads soon after the killed process.
    let extra = format!(
        "[drivers.cluster_api]\nnamespace = \"{ns}\"\nprogress_deadline_seconds = 600\n\
         lease_duration_seconds = 3\n\
         [[drivers.cluster_api.management_clusters]]\nname = \"test\"\nkubeconfig = \"{kubeconfig}\"\n"
    );
    let kill_at = |point: &'static str| [("MAGNUM_RS_TEST_FAILPOINTS", point)];
    let mut m = magnum_with_env(&ks, 30, &extra, &[], &kill_at("credential-made")).await;
    let port = m.server.port;
    let demo = ks.token("demo", "demo").await;
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    let image = glance_image(
        &ks,
        &demo,
        &format!("ubuntu-{suffix}"),
        json!({"os_distro": "ubuntu"}),
    )
    .await;
    let t = call(
        port,
        "POST",
        "/v1/clustertemplates",
        Some(&demo),
        Some(json!({
            "name": format!("capi-{suffix}"), "coe": "kubernetes", "image_id": image,
            "flavor_id": "m1.small", "master_flavor_id": "m1.medium",
            "external_network_id": "public", "labels": {"kube_tag": "v1.30.4"},
        })),
    )
    .await;
    assert_eq!(t.status, 201, "{}", t.body);
    let c = call(
        port,
        "POST",
        "/v1/clusters",
        Some(&demo),
        Some(json!({"name": "k8s", "cluster_template_id": t.body["uuid"], "node_count": 1})),
    )
    .await;
    assert_eq!(c.status, 202, "{}", c.body);
    let uuid = c.body["uuid"].as_str().expect("uuid").to_string();
    let died = m.server.wait_exit(Duration::from_secs(60));
    assert!(!died.success(), "aborted at credential-made");

    let (token, catalog, demo_user, _) = demo_token(&os.keystone_url).await;
    let cloud = Cloud::new(Duration::from_secs(10), Interface::Public, None).expect("cloud");
    let s = cloud.session(token, Arc::new(catalog));
    let first = application_credentials::find(&s, &demo_user, &uuid)
        .await
        .expect("keystone answers")
        .expect("the credential was made before the kill");
    let store = Store::connect(&m.db.url).await.expect("store");
    assert!(
        matches!(
            store.cluster_credential(&uuid).await.expect("row"),
            Some(CredentialRow::Token { .. })
        ),
        "not stored: the token is still kept"
    );

    // Killed again once the Secrets and server groups are there, before the Cluster.
    m.restart(&kill_at("cloud-prepared"));
    let died = m.server.wait_exit(Duration::from_secs(60));
    assert!(!died.success(), "aborted at cloud-prepared");

    m.restart(&kill_at("cloud-cleaned-up"));
    let path = format!("/v1/clusters/{uuid}");
    let shown = wait_for(port, &demo, &path, "the Cluster API name", |s, b| {
        s == 200 && b["cluster_id"].as_str().is_some_and(|s| !s.is_empty())
    })
    .await;
    let stack = shown["cluster_id"].as_str().expect("stack").to_string();
    let Some(CredentialRow::Made { id, .. }) = store.cluster_credential(&uuid).await.expect("row")
    else {
        panic!("the credential is stored after the restart");
    };
    assert_ne!(id, first, "the unstored credential was replaced");
    assert_eq!(
        application_credentials::find(&s, &demo_user, &uuid)
            .await
            .expect("keystone answers"),
        Some(id.clone()),
        "Keystone has the stored one"
    );
    let secrets: Api<KubeSecret> = Api::namespaced(client.clone(), &ns);
    secrets
        .get(&format!("{stack}-cloud-config"))
        .await
        .expect("the cloud-config Secret");
    // One group of each name: the run after the kill found those the killed one made.
    for name in [stack.clone(), format!("{stack}-default-worker")] {
        let found = server_groups::find(&s, &name, None, false).await;
        assert!(matches!(found, Ok(Some(_))), "one group {name}: {found:?}");
    }

    let d = call(port, "DELETE", &path, Some(&demo), None).await;
    assert_eq!(d.status, 204, "{}", d.body);
    let died = m.server.wait_exit(Duration::from_secs(60));
    assert!(!died.success(), "aborted at cloud-cleaned-up");
    assert_eq!(
        application_credentials::find(&s, &demo_user, &uuid)
            .await
            .expect("keystone answers"),
        None,
        "the credential went before the kill"
    );
    assert!(
        secrets
            .get_opt(&format!("{stack}-cloud-config"))
            .await
            .expect("kube answers")
            .is_some(),
        "the Secrets were not deleted yet"
    );

    m.restart(&[]);
    wait_for(port, &demo, &path, "the cluster to be gone", |s, _| {
        s == 404
    })
    .await;
    for suffix in ["cloud-config", "ca", "etcd", "proxy", "sa"] {
        assert!(
            secrets
                .get_opt(&format!("{stack}-{suffix}"))
                .await
                .expect("kube answers")
                .is_none(),
            "{stack}-{suffix} is deleted"
        );
    }
    for name in [stack.clone(), format!("{stack}-default-worker")] {
        assert_eq!(
            server_groups::find(&s, &name, None, false)
                .await
                .expect("nova answers"),
            None,
            "server group {name} is deleted"
        );
    }
    assert_eq!(store.cluster_credential(&uuid).await.expect("row"), None);
}
