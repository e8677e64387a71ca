//! The seed's story on magnum-cluster-api's own ClusterClass `magnum-v0.38.2` (applied by
//! mcapi's own code, `scripts/mcapi.sh apply-class`) with the real Cluster API v1.13
//! controllers and CAPO v0.14.7 (`scripts/capi.sh`, `scripts/capo.sh`), the real Keystone,
//! Glance, Nova API, Neutron and Cinder API, magnum-rs with `--auth keystone`, and the real
//! `openstack` CLI as demo.
//!
//! What the topology controller renders from the Cluster magnum-rs writes carries every
//! value of the template and the cluster; CAPO's own refusal (the real Neutron's) reaches
//! `status_reason` and ends the create `CREATE_FAILED` at the deadline; a nodegroup added
//! with its own flavor gets a machine template with it; a control-plane resize changes the
//! replicas and nothing else; the cluster gets its add-ons (tests/e2e/mcapi_addons.rs);
//! the delete leaves nothing in Kubernetes, Keystone, Nova or Neutron. (No machine boots here: Nova is its API only.)
//!
//! Needs `MAGNUM_RS_TEST_CAPI_ENV` with `MAGNUM_RS_TEST_CAPO` and `MAGNUM_RS_TEST_CAAPH`, `MAGNUM_RS_TEST_KEYSTONE`,
//! `MAGNUM_RS_TEST_OPENSTACK` and `MAGNUM_RS_OPENSTACK` (scripts/test.sh); takes the
//! Keystone tests' turn. The controllers' environment is the one `tests/serial` uses,
//! which never runs beside this binary.

use std::time::{Duration, Instant};

use futures::FutureExt;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use magnum_rs::drivers::cluster_api::topology::Resources;
use magnum_rs::openstack::{
    application_credentials, floating_ips, server_groups, Cloud, Interface,
};
use serde_json::{json, Value};

use crate::cloud_credential::wait_for_within;
use crate::cloud_validation::{endpoint_url, glance_image};
use crate::keystone_auth::{call, magnum, Cli, Keystone, TURN};
use crate::openstack_lookups::{demo_token, services};

/// Bounded waits: the topology controller renders within seconds; CAPO answers within its
/// first reconcile.
pub(crate) const RENDER_TIMEOUT: Duration = Duration::from_secs(60);
/// The ClusterAPI driver's progress deadline here: an operation the infrastructure blocks
/// fails after it.
const DEADLINE_SECS: u64 = 25;

/// The controllers' environment with CAPO, and a client on it.
pub(crate) struct Env {
    pub(crate) kubeconfig: String,
    pub(crate) namespace: String,
    client: kube::Client,
}

impl Env {
    pub(crate) async fn connect() -> Env {
        let env = crate::common::capi_env::values(" and CAPO");
        assert_eq!(
            std::env::var("MAGNUM_RS_TEST_CAPO").as_deref(),
            Ok("1"),
            "MAGNUM_RS_TEST_CAPO is not set: scripts/test.sh starts CAPO and applies magnum-cluster-api's class"
        );
        let kubeconfig = env["KUBECONFIG"].clone();
        Env {
            client: crate::common::capi_env::client(&kubeconfig).await,
            kubeconfig,
            namespace: env["KUBE_NAMESPACE"].clone(),
        }
    }

    pub(crate) fn api(&self, ar: &ApiResource) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), &self.namespace, ar)
    }

    pub(crate) async fn get(&self, ar: &ApiResource, name: &str) -> Option<Value> {
        self.api(ar)
            .get_opt(name)
            .await
            .expect("get")
            .map(|o| serde_json::to_value(o).expect("json"))
    }

    pub(crate) async fn list(&self, ar: &ApiResource, selector: &str) -> Vec<Value> {
        self.api(ar)
            .list(&ListParams::default().labels(selector))
            .await
            .expect("list")
            .items
            .into_iter()
            .map(|o| serde_json::to_value(o).expect("json"))
            .collect()
    }

    /// Polls until `find` answers (bounded), naming `what` when it never does.
    pub(crate) async fn wait_for<T, F, Fut>(&self, what: &str, find: F) -> T
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        let deadline = Instant::now() + RENDER_TIMEOUT;
        loop {
            if let Some(found) = find().await {
                return found;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

pub(crate) fn capo(kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: "infrastructure.cluster.x-k8s.io".into(),
        version: "v1beta1".into(),
        api_version: "infrastructure.cluster.x-k8s.io/v1beta1".into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// The OpenStackMachineTemplate an object's `infrastructureRef` at `pointer` names.
pub(crate) async fn machine_template(env: &Env, owner: &Value, pointer: &str) -> Option<Value> {
    let name = owner.pointer(pointer)?.as_str()?;
    env.get(
        &capo("OpenStackMachineTemplate", "openstackmachinetemplates"),
        name,
    )
    .await
}

/// The MachineDeployment of nodegroup `ng` of cluster `stack`.
pub(crate) async fn machine_deployment(
    env: &Env,
    res: &Resources,
    stack: &str,
    ng: &str,
) -> Option<Value> {
    env.list(
        &res.machine_deployment,
        &format!(
            "cluster.x-k8s.io/cluster-name={stack},topology.cluster.x-k8s.io/deployment-name={ng}"
        ),
    )
    .await
    .into_iter()
    .next()
}

/// A Neutron call as `token` (JSON in, JSON out).
pub(crate) async fn neutron(
    url: &str,
    token: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = reqwest::Client::new()
        .request(method, format!("{url}{path}"))
        .header("X-Auth-Token", token);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.expect("neutron answers");
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// Polls the cluster as demo until `check` holds (bounded by `timeout`).
pub(crate) async fn wait_cluster(
    port: u16,
    token: &str,
    cluster: &str,
    what: &str,
    timeout: Duration,
    check: impl Fn(u16, &Value) -> bool,
) -> Value {
    let path = format!("/v1/clusters/{cluster}");
    wait_for_within(port, token, &path, what, timeout, check).await
}

#[tokio::test]
#[ignore = "needs scripts/test.sh"]
async fn the_seed_story_on_magnum_cluster_apis_class_with_capo_and_the_real_cloud() {
    let _turn = TURN.lock().await;
    let env = Env::connect().await;
    crate::mcapi_addons::require_caaph();
    let res = Resources::at("v1beta2");
    let os = services();
    let ks = Keystone::from_env();
    let extra = format!(
        "[drivers.cluster_api]\nnamespace = \"{}\"\nprogress_deadline_seconds = {DEADLINE_SECS}\n\
         [[drivers.cluster_api.management_clusters]]\nname = \"capo\"\nkubeconfig = \"{}\"\n",
        env.namespace, env.kubeconfig
    );
    let m = magnum(&ks, 30, &extra, &[]).await;
    let port = m.server.port;
    let demo = ks.token("demo", "demo").await;
    let admin = ks.token("admin", "admin").await;
    let (_, _, demo_user, demo_project) = demo_token(&os.keystone_url).await;
    let neutron_url = endpoint_url(&ks, &demo, "network").await;
    let sfx = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let image = glance_image(
        &ks,
        &demo,
        &format!("ubuntu-capo-{sfx}"),
        json!({"os_distro": "ubuntu"}),
    )
    .await;
    let (_, public) = neutron(
        &neutron_url,
        &demo,
        reqwest::Method::GET,
        "/v2.0/networks?name=public",
        None,
    )
    .await;
    let public_id = public["networks"][0]["id"]
        .as_str()
        .expect("network public")
        .to_string();

    // demo's project may make no further router: CAPO's reconcile of the cluster network is
    // refused by the real Neutron (Neutron's defaults are back at the end).
    let quota_path = format!("/v2.0/quotas/{demo_project}");
    let (_, routers) = neutron(
        &neutron_url,
        &admin,
        reqwest::Method::GET,
        &format!("/v2.0/routers?project_id={demo_project}"),
        None,
    )
    .await;
    let used = routers["routers"].as_array().map_or(0, Vec::len);
    let (code, q) = neutron(
        &neutron_url,
        &admin,
        reqwest::Method::PUT,
        &quota_path,
        Some(json!({"quota": {"router": used}})),
    )
    .await;
    assert_eq!(code, 200, "{q}");

    let story = Story {
        port,
        env: &env,
        res: &res,
        ks: &ks,
        demo: &demo,
        image: &image,
        public_id: &public_id,
        neutron_url: &neutron_url,
        admin: &admin,
        quota_path: &quota_path,
        keystone_url: &os.keystone_url,
        demo_user: &demo_user,
        sfx: &sfx,
    };
    let outcome = std::panic::AssertUnwindSafe(story.run())
        .catch_unwind()
        .await;
    if outcome.is_err() {
        // What a failed run left: the cluster, deleted through the API (best effort).
        let path = format!("/v1/clusters/story-{sfx}");
        call(port, "DELETE", &path, Some(&demo), None).await;
        let deadline = Instant::now() + Duration::from_secs(180);
        while Instant::now() < deadline
            && call(port, "GET", &path, Some(&demo), None).await.status != 404
        {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    // Back to Neutron's defaults (also after a run that failed half-way).
    let (code, q) = neutron(
        &neutron_url,
        &admin,
        reqwest::Method::DELETE,
        &quota_path,
        None,
    )
    .await;
    assert!(code == 204 || code == 404, "{code} {q}");
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// What the story works with.
struct Story<'a> {
    port: u16,
    env: &'a Env,
    res: &'a Resources,
    ks: &'a Keystone,
    demo: &'a str,
    image: &'a str,
    public_id: &'a str,
    neutron_url: &'a str,
    admin: &'a str,
    quota_path: &'a str,
    keystone_url: &'a str,
    demo_user: &'a str,
    sfx: &'a str,
}

impl Story<'_> {
    async fn run(&self) {
        let Story {
            port,
            env,
            res,
            ks,
            demo,
            image,
            public_id,
            neutron_url,
            admin,
            quota_path,
            keystone_url,
            demo_user,
            sfx,
        } = *self;
        // The seed's template and cluster, through the CLI as demo.
        let cli = Cli::new(ks);
        let template = format!("capo-{sfx}");
        cli.ok(
            "demo",
            &[
                "coe",
                "cluster",
                "template",
                "create",
                &template,
                "--coe",
                "kubernetes",
                "--image",
                image,
                "--flavor",
                "m1.small",
                "--master-flavor",
                "m1.medium",
                "--keypair",
                "default",
                "--external-network",
                "public",
                "--docker-volume-size",
                "10",
                "--network-driver",
                "calico",
                "--labels",
                "kube_tag=v1.34.1,boot_volume_size=20,availability_zone=nova",
            ],
        );
        let name = format!("story-{sfx}");
        cli.ok(
            "demo",
            &[
                "coe",
                "cluster",
                "create",
                &name,
                "--cluster-template",
                &template,
                "--master-count",
                "1",
                "--node-count",
                "1",
            ],
        );
        let shown = wait_cluster(
            port,
            demo,
            &name,
            "its Cluster API name",
            RENDER_TIMEOUT,
            |s, b| s == 200 && b["cluster_id"].as_str().is_some_and(|s| !s.is_empty()),
        )
        .await;
        let uuid = shown["uuid"].as_str().expect("uuid").to_string();
        // The latest microversion shows `stack_id` as `cluster_id`.
        let stack = shown["cluster_id"].as_str().expect("stack").to_string();

        // What the topology controller rendered from it.
        let cluster = env
            .wait_for("the Cluster's infrastructure and control plane", || async {
                env.get(&res.cluster, &stack).await.filter(|c| {
                    c.pointer("/spec/infrastructureRef/name").is_some()
                        && c.pointer("/spec/controlPlaneRef/name").is_some()
                })
            })
            .await;
        let osc = env
            .wait_for("the OpenStackCluster", || {
                let name = cluster["spec"]["infrastructureRef"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let env = &env;
                async move {
                    env.get(&capo("OpenStackCluster", "openstackclusters"), &name)
                        .await
                }
            })
            .await;
        let kcp_name = cluster["spec"]["controlPlaneRef"]["name"]
            .as_str()
            .expect("KCP")
            .to_string();
        let kcp = env
            .wait_for("the KubeadmControlPlane", || {
                env.get(&res.control_plane, &kcp_name)
            })
            .await;
        let cp_template = env
            .wait_for("the control plane's machine template", || {
                machine_template(
                    env,
                    &kcp,
                    "/spec/machineTemplate/spec/infrastructureRef/name",
                )
            })
            .await;
        let md = env
            .wait_for("the default worker's MachineDeployment", || {
                machine_deployment(env, res, &stack, "default-worker")
            })
            .await;
        let worker_template = env
            .wait_for("the default worker's machine template", || {
                machine_template(env, &md, "/spec/template/spec/infrastructureRef/name")
            })
            .await;
        eprintln!("OpenStackCluster: {osc}");
        eprintln!("control plane template: {cp_template}");
        eprintln!("worker template: {worker_template}");
        eprintln!("MachineDeployment: {md}");

        let cloud = Cloud::new(Duration::from_secs(10), Interface::Public, None).expect("cloud");
        let (token, catalog, _, _) = demo_token(keystone_url).await;
        let session = cloud.session(token, std::sync::Arc::new(catalog));
        let group_id = |name: String| {
            let session = &session;
            async move {
                server_groups::find(session, &name, None, false)
                    .await
                    .expect("nova answers")
                    .unwrap_or_else(|| panic!("server group {name}"))
                    .id
            }
        };
        let cp_group = group_id(stack.clone()).await;
        let worker_group = group_id(format!("{stack}-default-worker")).await;
        let cp = &cp_template["spec"]["template"]["spec"];
        assert_eq!(cp["flavor"], "m1.medium", "{cp}");
        assert_eq!(cp["image"]["id"], json!(image), "{cp}");
        assert_eq!(cp["sshKeyName"], "default", "{cp}");
        assert_eq!(cp["serverGroup"]["id"], json!(cp_group), "{cp}");
        assert_eq!(cp["rootVolume"]["sizeGiB"], 20, "{cp}");
        assert_eq!(
            cp["identityRef"]["name"],
            json!(format!("{stack}-cloud-config")),
            "{cp}"
        );
        let w = &worker_template["spec"]["template"]["spec"];
        assert_eq!(w["flavor"], "m1.small", "{w}");
        assert_eq!(w["image"]["id"], json!(image), "{w}");
        assert_eq!(w["sshKeyName"], "default", "{w}");
        assert_eq!(w["serverGroup"]["id"], json!(worker_group), "{w}");
        assert_eq!(w["rootVolume"]["sizeGiB"], 20, "{w}");
        assert_eq!(
            md["spec"]["template"]["spec"]["failureDomain"], "nova",
            "{md}"
        );
        let o = &osc["spec"];
        assert_eq!(o["externalNetwork"]["id"], json!(public_id), "{o}");
        assert_eq!(o["apiServerLoadBalancer"]["enabled"], false, "{o}");
        assert_eq!(o["managedSubnets"][0]["cidr"], "10.0.0.0/24", "{o}");
        assert_eq!(
            o["identityRef"]["name"],
            json!(format!("{stack}-cloud-config")),
            "{o}"
        );

        // Its add-ons: the cloud's side by a ClusterResourceSet, the Helm charts of
        // deploy/addons/ by the Cluster's labels (a release each, values rendered from it).
        let labels = &cluster["metadata"]["labels"];
        for (key, value) in [
            ("cloud-provider", "openstack"),
            ("cni", "calico-v3.32.1"),
            ("cinder-csi", "enabled"),
            ("keystone-auth", "enabled"),
        ] {
            assert_eq!(labels[format!("addons.magnum-rs/{key}")], value, "{labels}");
        }
        // What the keystone-auth chart reads: Keystone's URL and the cluster's project.
        let annotations = &cluster["metadata"]["annotations"];
        assert_eq!(
            annotations["addons.magnum-rs/project-id"], shown["project_id"],
            "{annotations}"
        );
        assert!(
            annotations["addons.magnum-rs/keystone-auth-url"]
                .as_str()
                .is_some_and(|u| u.starts_with("http")),
            "{annotations}"
        );
        crate::mcapi_addons::assert_cloud_provider(env, &stack, &uuid, &session).await;
        // kube_tag v1.34.1: mcapi's cloud provider tag for 1.34 is v1.34.1.
        crate::mcapi_addons::assert_helm_add_ons(env, &stack, &uuid, "10.100.0.0/16", "v1.34.1")
            .await;

        // CAPO's own refusal (Neutron's quota) reaches status_reason, then fails the create.
        let waiting = wait_cluster(
            port,
            demo,
            &name,
            "CAPO's refusal in status_reason",
            RENDER_TIMEOUT,
            |_, b| {
                b["status_reason"]
                    .as_str()
                    .is_some_and(|r| r.contains("Quota exceeded"))
            },
        )
        .await;
        assert_eq!(waiting["status"], "CREATE_IN_PROGRESS", "{waiting}");
        let failed = wait_cluster(
            port,
            demo,
            &name,
            "CREATE_FAILED",
            Duration::from_secs(DEADLINE_SECS * 3),
            |_, b| b["status"] == "CREATE_FAILED",
        )
        .await;
        let reason = failed["status_reason"].as_str().unwrap_or_default();
        assert!(
            reason.starts_with("Cluster API made no progress") && reason.contains("Quota exceeded"),
            "{failed}"
        );

        // With the quota back, CAPO's next try makes the router and the API server's
        // floating IP: the cluster gets its API address, which a nodegroup create needs.
        let (code, q) = neutron(
            neutron_url,
            admin,
            reqwest::Method::DELETE,
            quota_path,
            None,
        )
        .await;
        assert_eq!(code, 204, "{q}");
        let addressed = wait_cluster(
            port,
            demo,
            &name,
            "the API address once Neutron allows the router",
            Duration::from_secs(240),
            |_, b| b["api_address"].is_string(),
        )
        .await;
        eprintln!("API address: {}", addressed["api_address"]);

        // A nodegroup with its own flavor: its machine template has it, and its own group.
        cli.ok(
            "demo",
            &[
                "coe",
                "nodegroup",
                "create",
                &name,
                "big",
                "--flavor",
                "m1.large",
                "--node-count",
                "1",
            ],
        );
        // Its entry is added once its server group exists (a refusal, such as Nova's
        // quota of server groups, fails it: shown at once).
        let ng_path = format!("/v1/clusters/{name}/nodegroups/big");
        let big = env
            .wait_for("nodegroup big's MachineDeployment", || async {
                let md = machine_deployment(env, res, &stack, "big").await;
                if md.is_none() {
                    let ng = call(port, "GET", &ng_path, Some(demo), None).await;
                    assert_ne!(ng.body["status"], "CREATE_FAILED", "{}", ng.body);
                }
                md
            })
            .await;
        let big_template = env
            .wait_for("nodegroup big's machine template", || {
                machine_template(env, &big, "/spec/template/spec/infrastructureRef/name")
            })
            .await;
        let b = &big_template["spec"]["template"]["spec"];
        assert_eq!(b["flavor"], "m1.large", "{b}");
        assert_eq!(
            b["serverGroup"]["id"],
            json!(group_id(format!("{stack}-big")).await),
            "{b}"
        );

        // The control plane to 3: the Cluster's replicas change, nothing else of its spec.
        let before = env.get(&res.cluster, &stack).await.expect("Cluster");
        cli.ok(
            "demo",
            &[
                "coe",
                "cluster",
                "resize",
                &name,
                "3",
                "--nodegroup",
                "default-master",
            ],
        );
        let after = env
            .wait_for("controlPlane.replicas 3", || async {
                env.get(&res.cluster, &stack)
                    .await
                    .filter(|c| c["spec"]["topology"]["controlPlane"]["replicas"] == 3)
            })
            .await;
        let mut expected = before["spec"].clone();
        expected["topology"]["controlPlane"]["replicas"] = json!(3);
        assert_eq!(after["spec"], expected, "only the replicas changed");
        env.wait_for("the KubeadmControlPlane at 3", || async {
            env.get(&res.control_plane, &kcp_name)
                .await
                .filter(|k| k["spec"]["replicas"] == 3)
        })
        .await;

        // The delete: nothing left in Kubernetes, Keystone, Nova or Neutron.
        cli.ok("demo", &["coe", "cluster", "delete", &name]);
        wait_cluster(
            port,
            demo,
            &name,
            "the cluster to be gone",
            Duration::from_secs(180),
            |s, _| s == 404,
        )
        .await;
        assert!(env.get(&res.cluster, &stack).await.is_none());
        crate::mcapi_addons::assert_no_add_ons_left(env, &stack).await;
        assert!(env
            .get(
                &capo("OpenStackCluster", "openstackclusters"),
                osc["metadata"]["name"].as_str().unwrap_or_default()
            )
            .await
            .is_none());
        assert_eq!(
            application_credentials::find(&session, demo_user, &uuid)
                .await
                .expect("keystone answers"),
            None,
            "the credential is deleted"
        );
        for g in [
            stack.clone(),
            format!("{stack}-default-worker"),
            format!("{stack}-big"),
        ] {
            assert_eq!(
                server_groups::find(&session, &g, None, false)
                    .await
                    .expect("nova answers"),
                None,
                "server group {g}"
            );
        }
        // The API server's floating IP CAPO made and left (no machine ever had it).
        assert_no_capo_network_left(neutron_url, demo, &env.namespace, &stack).await;
    }
}

/// Nothing of the network CAPO made for `stack` is left in the project of `token`: no
/// network named after it, no floating IP with CAPO's description of it.
pub(crate) async fn assert_no_capo_network_left(
    neutron_url: &str,
    token: &str,
    namespace: &str,
    stack: &str,
) {
    let (_, nets) = neutron(
        neutron_url,
        token,
        reqwest::Method::GET,
        "/v2.0/networks",
        None,
    )
    .await;
    let left: Vec<&Value> = nets["networks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|n| n["name"].as_str().is_some_and(|n| n.contains(stack)))
        .collect();
    assert!(
        left.is_empty(),
        "CAPO's networks of {stack} are gone: {left:?}"
    );
    let (_, ips) = neutron(
        neutron_url,
        token,
        reqwest::Method::GET,
        "/v2.0/floatingips",
        None,
    )
    .await;
    let capos = floating_ips::capo_description(namespace, stack);
    let left: Vec<&Value> = ips["floatingips"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|ip| ip["description"] == capos.as_str())
        .collect();
    assert!(
        left.is_empty(),
        "CAPO's floating IPs of {stack} are gone: {left:?}"
    );
}
