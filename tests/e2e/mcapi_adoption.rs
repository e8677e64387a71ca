//! magnum-rs takes over a cluster magnum-cluster-api created. mcapi 0.38.2's own driver
//! creates it through Magnum 23's conductor (`scripts/mcapi.sh create`) on a Magnum
//! database made by Magnum's migrations, against the real Keystone, Nova, Neutron, Glance
//! and Cinder, on the management cluster with the real Cluster API controllers and CAPO.
//! magnum-rs (`--auth keystone`) then runs on that database and management cluster, and
//! the `openstack` CLI as demo drives it:
//! - the row mcapi left `CREATE_IN_PROGRESS` is adopted: it shows the controllers' words and
//!   ends `CREATE_FAILED` at the deadline (no machine boots here: Nova is its API only);
//!   adopting writes nothing to the Cluster;
//! - a nodegroup create adds one worker entry; the control plane goes 1 → 3, and back to 1
//!   with `nodes_to_remove` naming its Machine; a worker resize changes that entry's
//!   replicas. After each, the Cluster's spec, labels and annotations equal the ones before
//!   but for the fields the operation must change: never the class or mcapi's variables;
//! - once what is under way has ended and nodegroup big is deleted (`UPDATE_COMPLETE`), an
//!   upgrade to a template with another image and kube_tag changes the Cluster's version
//!   and `imageUUID`s, nothing else;
//! - the delete removes what mcapi made: the Cluster, mcapi's Secrets and
//!   ClusterResourceSets, the application credential, the server groups, CAPO's network and
//!   floating IP.
//!
//! Needs what `mcapi_capo` needs, plus MariaDB (`MAGNUM_RS_TEST_CONFORMANCE_MYSQL`) and
//! magnum-cluster-api (`MAGNUM_RS_TEST_MCAPI`), all from scripts/test.sh.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use futures::FutureExt;
use kube::api::ApiResource;
use magnum_rs::drivers::cluster_api::topology::Resources;
use magnum_rs::openstack::{application_credentials, server_groups, Cloud, Interface};
use serde_json::{json, Value};

use crate::cloud_validation::{endpoint_url, glance_image};
use crate::common::TestDb;
use crate::keystone_auth::{call, magnum_on, Cli, Keystone, TURN};
use crate::mcapi_capo::{
    assert_no_capo_network_left, capo, machine_deployment, wait_cluster, Env, RENDER_TIMEOUT,
};
use crate::openstack_lookups::{demo_token, services};
use magnum_rs::operation::{OpKind, OpState};

/// The driver's progress deadline here: the adopted create fails after it.
const DEADLINE_SECS: u64 = 25;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs one of the project's scripts; its standard output.
fn script(args: &[&str]) -> String {
    let out = Command::new(root().join("scripts").join(args[0]))
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("scripts/{}: {e}", args[0]));
    assert!(
        out.status.success(),
        "scripts/{args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: if group.is_empty() {
            version.into()
        } else {
            format!("{group}/{version}")
        },
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// What of the Cluster an operation may change: its spec, labels and annotations, but
/// `spec.controlPlaneEndpoint`, which Cluster API's controller fills from the infrastructure.
fn shape(cluster: &Value) -> Value {
    let mut spec = cluster["spec"].clone();
    if let Some(s) = spec.as_object_mut() {
        s.remove("controlPlaneEndpoint");
    }
    json!({
        "spec": spec,
        "labels": cluster["metadata"]["labels"],
        "annotations": cluster["metadata"]["annotations"],
    })
}

#[tokio::test]
#[ignore = "needs scripts/test.sh"]
async fn a_cluster_magnum_cluster_api_created_is_adopted_resized_and_deleted_through_magnum_rs() {
    let _turn = TURN.lock().await;
    assert_eq!(
        std::env::var("MAGNUM_RS_TEST_MCAPI").as_deref(),
        Ok("1"),
        "MAGNUM_RS_TEST_MCAPI is not set: scripts/test.sh installs magnum-cluster-api"
    );
    let mysql = std::env::var("MAGNUM_RS_TEST_CONFORMANCE_MYSQL")
        .ok()
        .filter(|v| !v.is_empty())
        .expect("MAGNUM_RS_TEST_CONFORMANCE_MYSQL is not set: scripts/test.sh starts MariaDB");
    let env = Env::connect().await;
    crate::mcapi_addons::require_caaph();
    let res = Resources::at("v1beta2");
    let os = services();
    let ks = Keystone::from_env();
    let demo = ks.token("demo", "demo").await;
    let (_, _, demo_user, _) = demo_token(&os.keystone_url).await;
    let sfx = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let image = glance_image(
        &ks,
        &demo,
        &format!("ubuntu-adopt-{sfx}"),
        json!({"os_distro": "ubuntu"}),
    )
    .await;

    // mcapi's own driver creates the cluster, on a Magnum database of Magnum's migrations.
    let db_name = format!("mrs_adopt_{sfx}");
    script(&["magnum-db.sh", "create", &db_name]);
    let dir = tempfile::tempdir().expect("tempdir");
    let rows = dir.path().join("rows.json");
    let name = format!("adopt-{sfx}");
    let kube_tag = "v1.34.1";
    std::fs::write(
        &rows,
        json!({
            "keystone_url": os.keystone_url,
            "user": "demo", "password": "demo-secret", "project": "demo",
            "cluster": {"name": name, "labels": {"kube_tag": kube_tag},
                "master_flavor_id": "m1.medium", "flavor_id": "m1.small",
                "keypair": "default", "master_lb_enabled": false,
                "status": "CREATE_IN_PROGRESS"},
            "template": {"name": format!("adopt-t-{sfx}"), "coe": "kubernetes",
                "network_driver": "calico", "cluster_distro": "ubuntu",
                "external_network_id": "public", "dns_nameserver": "8.8.8.8",
                "labels": {"kube_tag": kube_tag}, "image_id": image,
                "master_flavor_id": "m1.medium", "flavor_id": "m1.small",
                "keypair_id": "default", "master_lb_enabled": false, "server_type": "vm"},
            "nodegroups": [{"name": "default-master", "role": "master", "node_count": 1},
                           {"name": "default-worker", "role": "worker", "node_count": 1}],
            "conf": {"cinder_client": {"region_name": "RegionOne"}},
            "database": format!("{}/{db_name}?charset=utf8mb4",
                mysql.replacen("mysql://", "mysql+pymysql://", 1)),
            "kubeconfig": env.kubeconfig,
        })
        .to_string(),
    )
    .expect("rows");
    let made: Value = serde_json::from_str(&script(&[
        "mcapi.sh",
        "create",
        rows.to_str().expect("path"),
    ]))
    .expect("mcapi.sh create prints JSON");
    assert_eq!(made["status"], "CREATE_IN_PROGRESS", "{made}");
    let stack = made["stack_id"].as_str().expect("stack_id").to_string();
    let uuid = made["uuid"].as_str().expect("uuid").to_string();
    let mcapi_cluster = env
        .get(&res.cluster, &stack)
        .await
        .expect("mcapi's Cluster");
    assert_eq!(
        mcapi_cluster["spec"]["topology"]["classRef"]["name"], "magnum-v0.38.2",
        "{mcapi_cluster}"
    );

    // A short Lease, so that the restart leads soon after the killed process.
    let extra = format!(
        "[drivers.cluster_api]\nnamespace = \"{}\"\nprogress_deadline_seconds = {DEADLINE_SECS}\n\
         lease_duration_seconds = 3\n\
         [[drivers.cluster_api.management_clusters]]\nname = \"capo\"\nkubeconfig = \"{}\"\n",
        env.namespace, env.kubeconfig
    );
    let db = TestDb {
        url: format!("{mysql}/{db_name}"),
        _dir: None,
    };
    // Killed right after it adopted the create: the restart adopts nothing twice, and the
    // create ends as without the kill.
    let mut m = magnum_on(
        &ks,
        30,
        &extra,
        &[],
        &[("MAGNUM_RS_TEST_FAILPOINTS", "adopted")],
        db,
    );
    let died = m.server.wait_exit(Duration::from_secs(60));
    assert!(!died.success(), "aborted at the adopted failpoint");
    let store = magnum_rs::store::Store::connect(&m.db.url)
        .await
        .expect("store");
    let adopted = store
        .operations_of_cluster(&uuid)
        .await
        .expect("operations");
    assert_eq!(adopted.len(), 1, "{adopted:?}");
    assert_eq!(adopted[0].kind(), OpKind::CreateCluster);
    assert_eq!(adopted[0].state, OpState::Waiting);
    m.restart(&[]);
    let port = m.server.port;
    let takeover = TakeOver {
        port,
        env: &env,
        res: &res,
        ks: &ks,
        demo: &demo,
        demo_user: &demo_user,
        keystone_url: &os.keystone_url,
        name: &name,
        uuid: &uuid,
        stack: &stack,
        made: &made,
        before: shape(&mcapi_cluster),
        store: &store,
    };
    let outcome = std::panic::AssertUnwindSafe(takeover.run())
        .catch_unwind()
        .await;
    if let Err(panic) = outcome {
        // What a failed run left: the cluster, deleted through magnum-rs (best effort).
        let path = format!("/v1/clusters/{uuid}");
        call(port, "DELETE", &path, Some(&demo), None).await;
        let deadline = Instant::now() + Duration::from_secs(180);
        while Instant::now() < deadline
            && call(port, "GET", &path, Some(&demo), None).await.status != 404
        {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        std::panic::resume_unwind(panic);
    }
}

/// What the take-over works with.
struct TakeOver<'a> {
    port: u16,
    env: &'a Env,
    res: &'a Resources,
    ks: &'a Keystone,
    demo: &'a str,
    demo_user: &'a str,
    keystone_url: &'a str,
    name: &'a str,
    uuid: &'a str,
    stack: &'a str,
    /// What `mcapi.sh create` reported it made.
    made: &'a Value,
    /// The Cluster's spec, labels and annotations as mcapi wrote them.
    before: Value,
    /// magnum-rs's store on that database (what it recorded).
    store: &'a magnum_rs::store::Store,
}

impl TakeOver<'_> {
    async fn cluster(&self) -> Value {
        self.env
            .get(&self.res.cluster, self.stack)
            .await
            .expect("the Cluster")
    }

    /// Waits until the Cluster's shape is `expected`; fails naming both when it never is.
    async fn expect_shape(&self, what: &str, expected: &Value) {
        let deadline = Instant::now() + RENDER_TIMEOUT;
        loop {
            let now = shape(&self.cluster().await);
            if &now == expected {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: the Cluster changed otherwise than expected\nexpected: {expected}\nfound:    {now}"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    async fn run(&self) {
        let TakeOver {
            port,
            env,
            res,
            ks,
            demo,
            name,
            stack,
            ..
        } = *self;
        let cli = Cli::new(ks);

        // The create mcapi began is followed to its end: the controllers' words, then the
        // deadline. Adopting it wrote nothing to the Cluster.
        let failed = wait_cluster(
            port,
            demo,
            name,
            "the adopted create to end CREATE_FAILED at its deadline",
            Duration::from_secs(DEADLINE_SECS * 4),
            |_, b| b["status"] == "CREATE_FAILED",
        )
        .await;
        let reason = failed["status_reason"].as_str().unwrap_or_default();
        assert!(
            reason.starts_with("Cluster API made no progress on the cluster"),
            "{failed}"
        );
        assert_eq!(failed["cluster_id"], stack, "{failed}");
        // Adopted once, across the kill and the restart.
        let ops = self
            .store
            .operations_of_cluster(self.uuid)
            .await
            .expect("operations");
        let creates: Vec<_> = ops
            .iter()
            .filter(|o| o.kind() == OpKind::CreateCluster)
            .collect();
        assert_eq!(creates.len(), 1, "{ops:?}");
        assert_eq!(creates[0].state, OpState::Failed, "{ops:?}");
        assert_eq!(
            shape(&self.cluster().await),
            self.before,
            "adoption writes nothing"
        );
        // Its add-ons stay mcapi's ClusterResourceSets: no proxy of deploy/addons/ selects
        // it (the Clusters each selector matches, as the API server selects them).
        let selected = crate::mcapi_addons::clusters_selected_by_proxies(env).await;
        assert!(!selected.is_empty(), "deploy/addons/ is applied");
        for (proxy, clusters) in &selected {
            assert!(
                !clusters.iter().any(|c| c == stack),
                "{proxy} selects the cluster mcapi created: {clusters:?}"
            );
        }
        let addressed = wait_cluster(
            port,
            demo,
            name,
            "the API address CAPO's floating IP gives",
            Duration::from_secs(120),
            |_, b| b["api_address"].is_string(),
        )
        .await;
        eprintln!("adopted: {addressed}");

        // A nodegroup: one worker entry more (mcapi's shape, on the Cluster's own class).
        cli.ok(
            "demo",
            &[
                "coe",
                "nodegroup",
                "create",
                name,
                "big",
                "--flavor",
                "m1.large",
                "--node-count",
                "1",
            ],
        );
        let big = env
            .wait_for("nodegroup big's MachineDeployment", || {
                machine_deployment(env, res, stack, "big")
            })
            .await;
        let after_big = shape(&self.cluster().await);
        let entries = after_big["spec"]["topology"]["workers"]["machineDeployments"]
            .as_array()
            .expect("worker entries")
            .clone();
        let (added, kept): (Vec<Value>, Vec<Value>) =
            entries.into_iter().partition(|e| e["name"] == "big");
        assert_eq!(added.len(), 1, "{after_big}");
        let mut expected = self.before.clone();
        expected["spec"]["topology"]["workers"]["machineDeployments"] = json!(kept);
        let mut unchanged = after_big.clone();
        unchanged["spec"]["topology"]["workers"]["machineDeployments"] = json!(kept);
        assert_eq!(unchanged, expected, "only the entry was added");
        let entry = &added[0];
        assert_eq!(entry["class"], "default-worker", "{entry}");
        let flavor = entry["variables"]["overrides"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| v["name"] == "flavor");
        assert_eq!(
            flavor.map(|f| &f["value"]),
            Some(&json!("m1.large")),
            "{entry}"
        );
        eprintln!("big: {big}");

        // The control plane 1 → 3: the replicas, nothing else.
        cli.ok(
            "demo",
            &[
                "coe",
                "cluster",
                "resize",
                name,
                "3",
                "--nodegroup",
                "default-master",
            ],
        );
        let mut at_three = after_big.clone();
        at_three["spec"]["topology"]["controlPlane"]["replicas"] = json!(3);
        self.expect_shape("control plane to 3", &at_three).await;

        // Back to 1, removing the control plane's Machine the user names.
        let machines = env
            .list(
                &res.machine,
                &format!("cluster.x-k8s.io/cluster-name={stack},cluster.x-k8s.io/control-plane"),
            )
            .await;
        let machine = machines
            .first()
            .and_then(|m| m["metadata"]["name"].as_str())
            .expect("a control-plane Machine")
            .to_string();
        cli.ok(
            "demo",
            &[
                "coe",
                "cluster",
                "resize",
                name,
                "1",
                "--nodegroup",
                "default-master",
                "--nodes-to-remove",
                &machine,
            ],
        );
        self.expect_shape("control plane back to 1", &after_big)
            .await;
        let marked = env.get(&res.machine, &machine).await.expect("the Machine");
        assert!(
            marked["metadata"]["annotations"]
                .get("cluster.x-k8s.io/delete-machine")
                .is_some(),
            "the named Machine is marked for deletion: {marked}"
        );

        // A worker resize: that entry's replicas, nothing else.
        cli.ok(
            "demo",
            &[
                "coe",
                "cluster",
                "resize",
                name,
                "2",
                "--nodegroup",
                "default-worker",
            ],
        );
        let mut workers_two = after_big.clone();
        let list = workers_two["spec"]["topology"]["workers"]["machineDeployments"]
            .as_array_mut()
            .expect("entries");
        for e in list.iter_mut().filter(|e| e["name"] == "default-worker") {
            e["replicas"] = json!(2);
        }
        self.expect_shape("default-worker to 2", &workers_two).await;

        self.upgrade(&cli).await;
        self.delete(&cli).await;
    }

    /// How many operations of magnum-rs are pending, running or waiting (`/metrics`).
    async fn open_operations(&self) -> i64 {
        let text = reqwest::get(format!("http://127.0.0.1:{}/metrics", self.port))
            .await
            .expect("metrics")
            .text()
            .await
            .expect("metrics text");
        let depths: Vec<f64> = text
            .lines()
            .filter(|l| !l.starts_with('#') && l.contains("operations_queue_depth{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .collect();
        assert_eq!(depths.len(), 3, "pending, running, waiting: {text}");
        depths.iter().sum::<f64>() as i64
    }

    /// The upgrade needs a `*_COMPLETE` cluster. What is under way ends first (no machine
    /// boots here: big's create, the resizes and their roll-backs fail at the deadline);
    /// then big's delete completes and leaves the cluster `UPDATE_COMPLETE`. The upgrade
    /// to a template with another image and kube_tag changes the Cluster's version and
    /// images (the cluster's and every worker override's `imageUUID`), nothing else.
    async fn upgrade(&self, cli: &Cli) {
        let TakeOver {
            port,
            env,
            res,
            ks,
            demo,
            name,
            stack,
            ..
        } = *self;
        let deadline = Instant::now() + Duration::from_secs(DEADLINE_SECS * 8);
        while self.open_operations().await > 0 {
            assert!(
                Instant::now() < deadline,
                "the resizes and their roll-backs did not end"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        cli.ok("demo", &["coe", "nodegroup", "delete", name, "big"]);
        let done = wait_cluster(
            port,
            demo,
            name,
            "UPDATE_COMPLETE once big is deleted",
            Duration::from_secs(120),
            |_, b| b["status"] == "UPDATE_COMPLETE",
        )
        .await;
        assert!(
            machine_deployment(env, res, stack, "big").await.is_none(),
            "{done}"
        );
        let new_image = glance_image(
            ks,
            demo,
            &format!("ubuntu-adopt-up-{stack}"),
            json!({"os_distro": "ubuntu"}),
        )
        .await;
        let template = format!("adopt-up-{stack}");
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
                &new_image,
                "--external-network",
                "public",
                "--network-driver",
                "calico",
                "--flavor",
                "m1.small",
                "--master-flavor",
                "m1.medium",
                "--keypair",
                "default",
                "--labels",
                "kube_tag=v1.34.2",
            ],
        );
        let before = shape(&self.cluster().await);
        cli.ok("demo", &["coe", "cluster", "upgrade", name, &template]);
        let mut expected = before.clone();
        let topology = &mut expected["spec"]["topology"];
        topology["version"] = json!("v1.34.2");
        let set_image = |vars: &mut Value| {
            for v in vars.as_array_mut().into_iter().flatten() {
                if v["name"] == "imageUUID" {
                    v["value"] = json!(new_image);
                }
            }
        };
        set_image(&mut topology["variables"]);
        for md in topology["workers"]["machineDeployments"]
            .as_array_mut()
            .into_iter()
            .flatten()
        {
            set_image(&mut md["variables"]["overrides"]);
        }
        assert_ne!(expected, before, "the upgrade changes something");
        self.expect_shape("the upgrade", &expected).await;
    }

    /// The delete: what mcapi made is gone.
    async fn delete(&self, cli: &Cli) {
        let TakeOver {
            port,
            env,
            res,
            demo,
            demo_user,
            keystone_url,
            name,
            uuid,
            stack,
            made,
            ..
        } = *self;
        let osc_name = self.cluster().await["spec"]["infrastructureRef"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        cli.ok("demo", &["coe", "cluster", "delete", name]);
        wait_cluster(
            port,
            demo,
            name,
            "the cluster to be gone",
            Duration::from_secs(180),
            |s, _| s == 404,
        )
        .await;
        assert!(env.get(&res.cluster, stack).await.is_none());
        assert!(env
            .get(&capo("OpenStackCluster", "openstackclusters"), &osc_name)
            .await
            .is_none());
        let secrets = resource("", "v1", "Secret", "secrets");
        for s in made["kubernetes"]["secrets"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let s = s.as_str().unwrap_or_default();
            if let Some(left) = env.get(&secrets, s).await {
                // Kubernetes' garbage collector deletes what an owner holds (none runs here).
                assert!(
                    left["metadata"]["ownerReferences"].is_array(),
                    "mcapi's Secret {s} is deleted"
                );
            }
        }
        let sets = resource(
            "addons.cluster.x-k8s.io",
            "v1beta2",
            "ClusterResourceSet",
            "clusterresourcesets",
        );
        for s in made["kubernetes"]["clusterresourcesets"]
            .as_array()
            .into_iter()
            .flatten()
        {
            // Deleted; gone once Cluster API's controller has removed its finalizer.
            let s = s.as_str().unwrap_or_default();
            env.wait_for(&format!("ClusterResourceSet {s} to be gone"), || async {
                env.get(&sets, s).await.is_none().then_some(())
            })
            .await;
        }
        let cloud = Cloud::new(Duration::from_secs(10), Interface::Public, None).expect("cloud");
        let (token, catalog, _, _) = demo_token(keystone_url).await;
        let session = cloud.session(token, std::sync::Arc::new(catalog));
        assert_eq!(
            application_credentials::find(&session, demo_user, uuid)
                .await
                .expect("keystone answers"),
            None,
            "mcapi's application credential is deleted"
        );
        for g in made["server_groups"].as_object().into_iter().flatten() {
            assert_eq!(
                server_groups::find(&session, g.0, None, false)
                    .await
                    .expect("nova answers"),
                None,
                "server group {}",
                g.0
            );
        }
        let neutron_url = endpoint_url(self.ks, demo, "network").await;
        assert_no_capo_network_left(&neutron_url, demo, &env.namespace, stack).await;
    }
}
