//! `deploy/` against a **real kube-apiserver** (`scripts/kube.sh`, with the Cluster API CRDs):
//! every manifest is applied (server-side apply; the Deployment, PodDisruptionBudget and
//! example Secret as a server-side dry run, since no workload can run there), then a token of
//! the manifests' ServiceAccount (TokenRequest API) drives the real ClusterAPI driver with the
//! ConfigMap's configuration: leader election, readiness probe, watchers, cluster create,
//! control-plane resize with `nodes_to_remove`, worker resize and delete all succeed, and
//! calls outside the Role are refused with 403.
//!
//! `scripts/test.sh` starts the server and sets `MAGNUM_RS_TEST_KUBECONFIG` (an admin
//! kubeconfig); without it this test fails.

use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use kube::config::{AuthInfo, KubeConfigOptions, Kubeconfig};
use magnum_rs::config::Config;
use magnum_rs::drivers::cluster_api::driver::KubeClusterApiDriver;
use magnum_rs::drivers::cluster_api::topology::Resources;
use magnum_rs::drivers::{
    Background, Certificates, CreateGiven, DriverError, InFlight, Lifecycle, Progress,
    ReconcileFailed, ResizeRequest, StackReconciler, Verdict,
};
use magnum_rs::model::{Cluster, ClusterTemplate, NodeGroup};
use magnum_rs::store::operations::OpKind;
use serde_json::{json, Value};

const DEPLOY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy");
/// Kinds only a server-side dry run can take here: no controllers or kubelet run, and the
/// example Secret holds placeholders.
const DRY_RUN_KINDS: &[&str] = &["Deployment", "PodDisruptionBudget", "Secret"];

/// A cluster's certificates as the worker hands them to the driver (keys opened).
fn opened_cas(name: &str) -> magnum_rs::certificates::ClusterCas {
    use magnum_rs::certificates::{
        cluster_certificates, decrypt_private_key, KeyPairPem, OpenedKeyPair,
    };
    let made = cluster_certificates(name, 2048).expect("certificates");
    let open = |kp: KeyPairPem| OpenedKeyPair {
        private_key: decrypt_private_key(&kp.private_key, Some(&kp.passphrase)).expect("open"),
        certificate: kp.certificate,
    };
    magnum_rs::certificates::ClusterCas {
        ca: open(made.ca),
        etcd_ca: open(made.etcd_ca),
        front_proxy_ca: open(made.front_proxy_ca),
        service_account: open(made.magnum_client),
    }
}

fn admin_kubeconfig() -> String {
    std::env::var("MAGNUM_RS_TEST_KUBECONFIG")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            panic!("MAGNUM_RS_TEST_KUBECONFIG is not set: run scripts/test.sh, which starts a real kube-apiserver")
        })
}

async fn client_from(kc: Kubeconfig) -> kube::Client {
    let cfg = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("kube config");
    kube::Client::try_from(cfg).expect("client")
}

/// Every document of the manifests named in deploy/kustomization.yaml, in its order.
fn manifests() -> Vec<Value> {
    let kust: Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(format!("{DEPLOY}/kustomization.yaml")).expect("kustomization"),
    )
    .expect("kustomization yaml");
    let mut docs = Vec::new();
    for file in kust["resources"].as_array().expect("resources") {
        let file = file.as_str().expect("file name");
        let text = std::fs::read_to_string(format!("{DEPLOY}/{file}")).expect("manifest");
        for doc in serde_yaml_ng::Deserializer::from_str(&text) {
            let v: Value = serde::Deserialize::deserialize(doc).expect("yaml document");
            if !v.is_null() {
                docs.push(v);
            }
        }
    }
    docs
}

fn find<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in deploy/"))
}

fn forbidden<T: std::fmt::Debug>(r: Result<T, kube::Error>, what: &str) {
    match r {
        Err(kube::Error::Api(s)) if s.code == 403 => {}
        other => panic!("{what}: expected 403 Forbidden, got {other:?}"),
    }
}

async fn wait_until<F, Fut>(what: &str, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(60);
    while !f().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
#[ignore = "needs scripts/test.sh"]
async fn deploy_manifests_apply_and_their_service_account_can_do_what_the_driver_does_and_nothing_else(
) {
    let admin_path = admin_kubeconfig();
    let admin_kc = Kubeconfig::read_from(&admin_path).expect("kubeconfig");
    let admin = client_from(admin_kc.clone()).await;

    // --- 1. apply every manifest (server-side apply; dry run for workloads) ---
    let docs = manifests();
    for doc in &docs {
        let (group, version) = match doc["apiVersion"].as_str().expect("apiVersion") {
            v if v.contains('/') => v.split_once('/').expect("gv"),
            v => ("", v),
        };
        let kind = doc["kind"].as_str().expect("kind");
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (ar, caps) = kube::discovery::pinned_kind(&admin, &gvk)
            .await
            .unwrap_or_else(|e| panic!("{kind}: not served: {e}"));
        let name = doc["metadata"]["name"].as_str().expect("name");
        let api: Api<DynamicObject> = match caps.scope {
            kube::discovery::Scope::Namespaced => Api::namespaced_with(
                admin.clone(),
                doc["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{kind}/{name} names no namespace")),
                &ar,
            ),
            kube::discovery::Scope::Cluster => Api::all_with(admin.clone(), &ar),
        };
        let mut pp = PatchParams::apply("magnum-rs-deploy-test").force();
        if DRY_RUN_KINDS.contains(&kind) {
            pp = pp.dry_run();
        }
        api.patch(name, &pp, &Patch::Apply(doc))
            .await
            .unwrap_or_else(|e| panic!("applying {kind}/{name}: {e}"));
    }

    // --- 2. what the manifests say about the service account and the configuration ---
    let sa = find(&docs, "ServiceAccount");
    let sa_name = sa["metadata"]["name"].as_str().expect("sa name");
    let ns = sa["metadata"]["namespace"].as_str().expect("sa namespace");
    let deployment = find(&docs, "Deployment");
    assert_eq!(
        deployment["spec"]["template"]["spec"]["serviceAccountName"], sa_name,
        "the Deployment runs as the ServiceAccount the Role is bound to"
    );
    let binding = find(&docs, "RoleBinding");
    assert_eq!(binding["subjects"][0]["name"], sa_name);
    assert!(
        !docs
            .iter()
            .any(|d| d["kind"] == "ClusterRole" || d["kind"] == "ClusterRoleBinding"),
        "nothing cluster-wide is granted"
    );
    let toml_text = find(&docs, "ConfigMap")["data"]["magnum-rs.toml"]
        .as_str()
        .expect("magnum-rs.toml in the ConfigMap");
    let mut config: Config =
        toml::from_str(toml_text).expect("the ConfigMap's configuration parses");
    assert_eq!(config.drivers.cluster_api.namespace, ns);
    assert!(
        find(&docs, "Secret")["stringData"]
            .get("MAGNUM_RS_DATABASE_URL")
            .is_some(),
        "the database URL comes from the Secret"
    );
    assert!(
        !toml_text.contains("database_url"),
        "no database URL in the ConfigMap"
    );
    assert!(
        find(&docs, "Secret")["stringData"]
            .get("MAGNUM_RS_KEYSTONE_PASSWORD")
            .is_some(),
        "the Keystone service password comes from the Secret"
    );
    assert!(
        config.keystone_authtoken.password.is_empty(),
        "no Keystone password in the ConfigMap"
    );

    // --- 3. a token of that ServiceAccount, in a kubeconfig like the pod's in-cluster one ---
    let tr: TokenRequest = serde_json::from_value(json!({
        "spec": {"audiences": [], "expirationSeconds": 3600}
    }))
    .expect("token request");
    let token = Api::<ServiceAccount>::namespaced(admin.clone(), ns)
        .create_token_request(sa_name, &PostParams::default(), &tr)
        .await
        .expect("TokenRequest")
        .status
        .expect("token status")
        .token;
    let mut sa_kc = admin_kc.clone();
    for a in &mut sa_kc.auth_infos {
        a.auth_info = Some(AuthInfo {
            token: Some(token.clone().into()),
            ..AuthInfo::default()
        });
    }
    let dir = tempfile::tempdir().expect("dir");
    let sa_path = dir.path().join("sa.kubeconfig");
    std::fs::write(&sa_path, serde_yaml_ng::to_string(&sa_kc).expect("yaml")).expect("write");
    let sa_client = client_from(sa_kc).await;

    // A fresh lease for this run (an earlier run's holder would hold it for its duration).
    let leases: Api<Lease> = Api::namespaced(admin.clone(), ns);
    let lease_name = config.drivers.cluster_api.lease_name.clone();
    let _ = leases.delete(&lease_name, &DeleteParams::default()).await;

    // --- 4. the real driver, configured as the ConfigMap says, on the SA's kubeconfig ---
    config.drivers.cluster_api.management_clusters[0].kubeconfig = Some(sa_path.clone());
    let driver = KubeClusterApiDriver::connect(&config.drivers.cluster_api)
        .await
        .expect("driver connects");
    let status = driver.management_status().await;
    assert_eq!(status.len(), 1);
    assert!(status[0].connected, "{status:?}");

    let mut leading = driver.leadership().expect("leader election is configured");
    wait_until("leadership through the Lease", || {
        let l = *leading.borrow_and_update();
        async move { l }
    })
    .await;
    assert!(driver.management_status().await[0].leader);

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let watchers = driver.run_controllers(std::sync::Arc::new(Forward(tx)));

    let res = Resources::at(&config.drivers.cluster_api.api_version);
    let stack = format!(
        "kube-rbac{}",
        &uuid::Uuid::new_v4().simple().to_string()[..6]
    );
    let cluster = Cluster {
        uuid: uuid::Uuid::new_v4().to_string(),
        name: Some("rbac".into()),
        stack_id: Some(stack.clone()),
        ..Cluster::default()
    };
    let template = ClusterTemplate {
        labels: json!({"kube_tag": "v1.30.4"}).as_object().cloned(),
        ..ClusterTemplate::default()
    };
    let master = NodeGroup {
        name: "default-master".into(),
        role: Some("master".into()),
        node_count: 1,
        ..NodeGroup::default()
    };
    let worker = NodeGroup {
        name: "default-worker".into(),
        role: Some("worker".into()),
        node_count: 1,
        ..NodeGroup::default()
    };
    // Magnum's CAs go into the Secrets kubeadm's control plane reads, before the Cluster.
    let cas = opened_cas("rbac");
    let created = driver
        .create_cluster(
            &cluster,
            &template,
            &[master.clone(), worker.clone()],
            &CreateGiven {
                cas: Some(&cas),
                credential: None,
            },
        )
        .await
        .expect("cluster create with the SA token");
    assert_eq!(created.stack_id.as_deref(), Some(stack.as_str()));
    let secrets = Api::<Secret>::namespaced(admin.clone(), ns);
    for (suffix, pair) in [
        ("ca", &cas.ca),
        ("etcd", &cas.etcd_ca),
        ("proxy", &cas.front_proxy_ca),
        ("sa", &cas.service_account),
    ] {
        let s = secrets
            .get(&format!("{stack}-{suffix}"))
            .await
            .expect("CA Secret written");
        assert_eq!(s.type_.as_deref(), Some("cluster.x-k8s.io/secret"));
        let data = s.data.unwrap_or_default();
        assert_eq!(data["tls.crt"].0, pair.certificate.as_bytes(), "{suffix}");
        assert_eq!(data["tls.key"].0, pair.private_key.as_bytes(), "{suffix}");
    }
    // A create run again (after a crash) keeps what the first run wrote.
    driver
        .create_cluster(
            &cluster,
            &template,
            &[master.clone(), worker.clone()],
            &CreateGiven {
                cas: Some(&cas),
                credential: None,
            },
        )
        .await
        .expect("a repeated create with the SA token");
    // The CA Secret is what a cluster without stored CAs is answered from.
    assert_eq!(
        driver
            .ca_certificate(&cluster, None)
            .await
            .expect("CA with the SA token"),
        cas.ca.certificate
    );

    // Play the topology controller as admin: the KCP, the MD and one control-plane Machine.
    let admin_api = |ar: &ApiResource| Api::<DynamicObject>::namespaced_with(admin.clone(), ns, ar);
    let create = |ar: ApiResource, obj: Value| {
        let api = admin_api(&ar);
        async move {
            let o: DynamicObject = serde_json::from_value(obj).expect("object");
            api.create(&PostParams::default(), &o)
                .await
                .expect("admin create")
        }
    };
    create(res.control_plane.clone(), json!({
        "apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane",
        "metadata": {"name": format!("{stack}-control-plane"), "namespace": ns,
                     "labels": {"cluster.x-k8s.io/cluster-name": stack}},
        "spec": {"replicas": 1, "version": "v1.30.4",
                 "machineTemplate": {"spec": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io",
                                                                     "kind": "OpenStackMachineTemplate", "name": "cp"}}}},
    })).await;
    create(res.machine_deployment.clone(), json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
        "metadata": {"name": format!("{stack}-default-worker"), "namespace": ns,
                     "labels": {"cluster.x-k8s.io/cluster-name": stack, "topology.cluster.x-k8s.io/deployment-name": "default-worker"}},
        "spec": {"clusterName": stack, "replicas": 1,
                 "selector": {"matchLabels": {"topology.cluster.x-k8s.io/deployment-name": "default-worker"}},
                 "template": {"metadata": {"labels": {"topology.cluster.x-k8s.io/deployment-name": "default-worker"}},
                              "spec": {"clusterName": stack,
                                       "bootstrap": {"configRef": {"apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfigTemplate", "name": "w"}},
                                       "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "OpenStackMachineTemplate", "name": "w"}}}},
    })).await;
    let machine = format!("{stack}-control-plane-abcde");
    create(res.machine.clone(), json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
        "metadata": {"name": machine, "namespace": ns,
                     "labels": {"cluster.x-k8s.io/cluster-name": stack, "cluster.x-k8s.io/control-plane": ""}},
        "spec": {"clusterName": stack,
                 "bootstrap": {"configRef": {"apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfig", "name": "b"}},
                 "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "OpenStackMachine", "name": "m"}},
    })).await;

    // Control-plane resize 1 → 3 removing that Machine: list + patch Machines, patch Cluster.
    let progress = driver
        .resize(
            &cluster,
            &master,
            &ResizeRequest {
                node_count: 3,
                nodes_to_remove: vec![machine.clone()],
            },
        )
        .await
        .expect("control-plane resize with the SA token");
    assert!(matches!(progress, Progress::Waiting(_)), "{progress:?}");
    let c = admin_api(&res.cluster).get(&stack).await.expect("cluster");
    let c = serde_json::to_value(c).expect("json");
    assert_eq!(
        c.pointer("/spec/topology/controlPlane/replicas"),
        Some(&json!(3)),
        "{c}"
    );
    let m = serde_json::to_value(
        admin_api(&res.machine)
            .get(&machine)
            .await
            .expect("machine"),
    )
    .expect("json");
    assert_eq!(
        m.pointer("/metadata/annotations/cluster.x-k8s.io~1delete-machine"),
        Some(&json!("yes")),
        "{m}"
    );

    // Cluster API reaches 3: what the SA's watches cache shows the resize complete.
    let kcp = format!("{stack}-control-plane");
    let more_machines: Vec<String> = ["fghij", "klmno"]
        .iter()
        .map(|s| format!("{stack}-control-plane-{s}"))
        .collect();
    for name in &more_machines {
        create(res.machine.clone(), json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
            "metadata": {"name": name, "namespace": ns,
                         "labels": {"cluster.x-k8s.io/cluster-name": stack, "cluster.x-k8s.io/control-plane": ""}},
            "spec": {"clusterName": stack,
                     "bootstrap": {"configRef": {"apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfig", "name": "b"}},
                     "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "OpenStackMachine", "name": "m"}},
        })).await;
    }
    let o = admin_api(&res.control_plane)
        .patch(
            &kcp,
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("kcp spec");
    let generation = o.metadata.generation.unwrap_or(1);
    admin_api(&res.control_plane)
        .patch_status(
            &kcp,
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": {"observedGeneration": generation, "replicas": 3,
                "readyReplicas": 3, "availableReplicas": 3, "upToDateReplicas": 3, "version": "v1.30.4"}})),
        )
        .await
        .expect("kcp status");
    let master3 = NodeGroup {
        node_count: 3,
        ..master.clone()
    };
    let nodegroups = [master3.clone(), worker.clone()];
    let resize = InFlight {
        kind: OpKind::Resize,
        cluster: &cluster,
        nodegroups: &nodegroups,
        nodegroup: Some(&master3),
        target_count: Some(3),
        target_version: None,
        generation: None,
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let change = tokio::time::timeout(Duration::from_secs(60), rx.recv())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "no further change from the watchers; the resize looks {:?}",
                    driver.observe(&resize)
                )
            })
            .expect("watchers alive");
        let ours = change == stack;
        if ours && driver.observe(&resize) == Verdict::Complete {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the resize never looked complete: {:?}",
            driver.observe(&resize)
        );
    }

    // Worker resize: get + JSON patch of the Cluster.
    driver
        .resize(
            &cluster,
            &worker,
            &ResizeRequest {
                node_count: 2,
                nodes_to_remove: vec![],
            },
        )
        .await
        .expect("worker resize with the SA token");

    // --- 5. outside the Role: refused ---
    forbidden(
        Api::<Secret>::namespaced(sa_client.clone(), ns)
            .list(&ListParams::default())
            .await,
        "listing Secrets of its own namespace",
    );
    forbidden(
        Api::<DynamicObject>::namespaced_with(sa_client.clone(), "default", &res.cluster)
            .list(&ListParams::default())
            .await,
        "listing Clusters of another namespace",
    );
    forbidden(
        Api::<DynamicObject>::all_with(sa_client.clone(), &res.cluster)
            .list(&ListParams::default())
            .await,
        "listing Clusters cluster-wide",
    );
    forbidden(
        Api::<k8s_openapi::api::core::v1::Node>::all(sa_client.clone())
            .list(&ListParams::default())
            .await,
        "listing Nodes",
    );
    forbidden(
        Api::<DynamicObject>::namespaced_with(sa_client.clone(), ns, &res.machine_deployment)
            .patch(
                &format!("{stack}-default-worker"),
                &PatchParams::default(),
                &Patch::Merge(&json!({"spec": {"replicas": 5}})),
            )
            .await,
        "patching a MachineDeployment (the driver changes the Cluster topology only)",
    );
    forbidden(
        Api::<Lease>::namespaced(sa_client.clone(), ns)
            .get("some-other-lease")
            .await,
        "reading a Lease other than its own",
    );
    // The driver itself, pointed at a namespace the Role does not cover, is refused, and the
    // refusal is counted in the metrics.
    let mut elsewhere = config.drivers.cluster_api.clone();
    elsewhere.namespace = "default".into();
    elsewhere.leader_election = false;
    let outside = KubeClusterApiDriver::connect(&elsewhere)
        .await
        .expect("driver");
    match outside
        .create_cluster(
            &cluster,
            &template,
            std::slice::from_ref(&master),
            &CreateGiven::default(),
        )
        .await
    {
        Err(DriverError::Rejected(msg)) => assert!(msg.contains("forbidden"), "{msg}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(!outside.management_status().await[0].connected);
    let metrics = magnum_rs::telemetry::metrics::encode();
    assert!(
        metrics.contains("magnum_rs_kube_request_errors_total{call=\"request\",code=\"403\"}"),
        "{metrics}"
    );

    // --- 6. cluster delete with the SA token ---
    assert!(matches!(
        driver.delete_cluster(&cluster).await.expect("delete"),
        Progress::Waiting(_)
    ));
    wait_until("the Cluster object to go", || {
        let api = admin_api(&res.cluster);
        let stack = stack.clone();
        async move { matches!(api.get_opt(&stack).await, Ok(None)) }
    })
    .await;
    // Once the Cluster is gone, the delete cleans up the Secrets the create wrote (with the
    // SA token: the Role's `delete` on Secrets), and is done when run again.
    assert!(
        secrets
            .get_opt(&format!("{stack}-ca"))
            .await
            .expect("read")
            .is_some(),
        "the CA Secret outlives the Cluster until the clean-up"
    );
    for _ in 0..2 {
        driver
            .clean_up_deleted(&cluster)
            .await
            .expect("clean-up with the SA token");
    }
    for suffix in ["ca", "etcd", "proxy", "sa", "cloud-config"] {
        assert!(
            secrets
                .get_opt(&format!("{stack}-{suffix}"))
                .await
                .expect("read")
                .is_none(),
            "{stack}-{suffix} deleted"
        );
    }
    assert!(matches!(
        driver.delete_cluster(&cluster).await.expect("delete again"),
        Progress::Complete
    ));
    for w in watchers {
        w.abort();
    }
    for (ar, name) in [
        (&res.control_plane, kcp),
        (&res.machine_deployment, format!("{stack}-default-worker")),
        (&res.machine, machine),
        (&res.machine, more_machines[0].clone()),
        (&res.machine, more_machines[1].clone()),
    ] {
        let _ = admin_api(ar).delete(&name, &DeleteParams::default()).await;
    }
    let _ = leases.delete(&lease_name, &DeleteParams::default()).await;
}

/// The controller's reconciles, as the names of the clusters it looks at.
struct Forward(tokio::sync::mpsc::UnboundedSender<String>);

#[async_trait::async_trait]
impl StackReconciler for Forward {
    async fn reconcile(&self, stack: &str) -> Result<Option<Duration>, ReconcileFailed> {
        let _ = self.0.send(stack.to_string());
        Ok(None)
    }

    async fn waiting_stacks(&self) -> Result<Vec<String>, ReconcileFailed> {
        Ok(Vec::new())
    }
}
