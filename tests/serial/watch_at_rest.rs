//! Status sync at rest, on a **real kube-apiserver** (`scripts/kube.sh`, started by
//! `scripts/test.sh` with the audit policy of tests/fixtures/kube/audit-policy.json): 200
//! clusters created through the API, their Cluster API objects played by the test (no
//! controllers run), magnum-rs as the leader watching them as user `magnum-rs` with
//! deploy/role.yaml's Role. The structural half of bench/kube:
//! - once synced, an idle fleet costs no request: over three renewals of its Lease, the API
//!   server's audit log shows no request of magnum-rs but its Lease (and at most the
//!   periodic renewal of a watch), and the reconciler writes nothing to the database;
//! - one status write on one cluster's object produces one database write (that cluster's
//!   `coe_version`), and no request;
//! - the KCP status write that completes a control-plane resize produces exactly one
//!   database write: the transaction that ends it (UPDATE_COMPLETE).
//!
//! Waiting is on observed state (the API, `/metrics`), bounded; "nothing happens" is
//! judged over the leader's renewals of its Lease (its one periodic request, every 2 s with
//! the test's `lease_duration_seconds = 6`) counted in the audit log, not over a sleep.
//! (The reconciler has no periodic pass to count: its controller looks at a cluster when
//! something of it changes, or at a stored deadline.)

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::server::{http, http_get, Server};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use magnum_rs::drivers::cluster_api::topology::Resources;
use serde_json::{json, Value};

const N: usize = 200;
const KINDS: [&str; 4] = [
    "clusters",
    "kubeadmcontrolplanes",
    "machinedeployments",
    "machines",
];

struct Kube {
    client: kube::Client,
    ns: String,
    res: Resources,
    limited_kubeconfig: String,
    audit: PathBuf,
}

fn kube_dir() -> PathBuf {
    let kubeconfig = std::env::var("MAGNUM_RS_TEST_KUBECONFIG")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            panic!("MAGNUM_RS_TEST_KUBECONFIG is not set: run scripts/test.sh, which starts a real kube-apiserver")
        });
    Path::new(&kubeconfig)
        .parent()
        .expect("kubeconfig directory")
        .to_path_buf()
}

fn env_value(dir: &Path, key: &str) -> String {
    let text = std::fs::read_to_string(dir.join("env")).expect("kube.sh's env file");
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("{key} not in kube.sh's env"))
        .to_string()
}

impl Kube {
    async fn connect() -> Kube {
        let dir = kube_dir();
        let kc = Kubeconfig::read_from(dir.join("kubeconfig")).expect("kubeconfig");
        let cfg = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
            .await
            .expect("config");
        let client = kube::Client::try_from(cfg).expect("client");
        let ns = format!("rest-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
        let k = Kube {
            client,
            ns,
            res: Resources::at("v1beta2"),
            limited_kubeconfig: env_value(&dir, "KUBE_LIMITED_KUBECONFIG"),
            audit: dir.join("audit.log"),
        };
        assert!(
            k.audit.exists(),
            "{} is missing: scripts/test.sh starts kube.sh with KUBE_AUDIT_POLICY",
            k.audit.display()
        );
        let nss: Api<Namespace> = Api::all(k.client.clone());
        k.post(nss, json!({"metadata": {"name": k.ns}})).await;
        k.grant_role().await;
        k
    }

    /// An object of a typed kind, created as the admin.
    async fn post<K>(&self, api: Api<K>, body: Value)
    where
        K: kube::Resource
            + Clone
            + std::fmt::Debug
            + serde::de::DeserializeOwned
            + serde::Serialize,
    {
        let o: K = serde_json::from_value(body).expect("object");
        api.create(&PostParams::default(), &o)
            .await
            .expect("create");
    }

    /// deploy/role.yaml's Role in the test's namespace, bound to the user magnum-rs.
    async fn grant_role(&self) {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/role.yaml"))
                .expect("deploy/role.yaml");
        let mut role = None;
        for doc in serde_yaml_ng::Deserializer::from_str(&text) {
            let v: Value = serde::Deserialize::deserialize(doc).expect("yaml");
            if v["kind"] == "Role" {
                role = Some(v);
            }
        }
        let mut role = role.expect("a Role in deploy/role.yaml");
        role["metadata"]["namespace"] = json!(self.ns);
        let ns = &self.ns;
        let roles: Api<Role> = Api::namespaced(self.client.clone(), ns);
        self.post(roles, role.clone()).await;
        let bindings: Api<RoleBinding> = Api::namespaced(self.client.clone(), ns);
        self.post(
            bindings,
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                   "metadata": {"name": "magnum-rs-user", "namespace": ns},
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                               "name": role["metadata"]["name"]},
                   "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "magnum-rs"}]}),
        )
        .await;
    }

    fn api(&self, ar: &kube::api::ApiResource) -> Api<DynamicObject> {
        Api::namespaced_with(self.client.clone(), &self.ns, ar)
    }

    async fn create(&self, ar: &kube::api::ApiResource, obj: Value) {
        let o: DynamicObject = serde_json::from_value(obj).expect("object");
        self.api(ar)
            .create(&PostParams::default(), &o)
            .await
            .expect("create");
    }

    async fn merge(&self, ar: &kube::api::ApiResource, name: &str, patch: Value) -> i64 {
        let o = self
            .api(ar)
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("patch");
        o.metadata.generation.unwrap_or(1)
    }

    async fn status(&self, ar: &kube::api::ApiResource, name: &str, status: Value) {
        self.api(ar)
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"status": status})),
            )
            .await
            .expect("status");
    }

    async fn counters(&self, ar: &kube::api::ApiResource, name: &str, n: i64, generation: i64) {
        self.status(ar, name, json!({"observedGeneration": generation, "replicas": n,
            "readyReplicas": n, "availableReplicas": n, "upToDateReplicas": n, "version": "v1.30.4"}))
            .await;
    }

    /// What the topology controller and the providers leave for a created cluster with one
    /// control-plane node and the worker nodegroup default-worker of one node.
    async fn materialize(&self, stack: &str) {
        self.merge(
            &self.res.cluster,
            stack,
            json!({"spec": {"controlPlaneEndpoint": {"host": "203.0.113.10", "port": 6443}}}),
        )
        .await;
        let cp = format!("{stack}-control-plane");
        self.create(&self.res.control_plane, json!({
            "apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane",
            "metadata": {"name": cp, "namespace": self.ns, "labels": {"cluster.x-k8s.io/cluster-name": stack}},
            "spec": {"replicas": 1, "version": "v1.30.4",
                     "machineTemplate": {"spec": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io",
                                                                         "kind": "DevMachineTemplate", "name": "cp"}}}},
        })).await;
        self.counters(&self.res.control_plane, &cp, 1, 1).await;
        let md = format!("{stack}-default-worker");
        self.create(&self.res.machine_deployment, json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
            "metadata": {"name": md, "namespace": self.ns,
                         "labels": {"cluster.x-k8s.io/cluster-name": stack, "topology.cluster.x-k8s.io/deployment-name": "default-worker"}},
            "spec": {"clusterName": stack, "replicas": 1,
                     "selector": {"matchLabels": {"topology.cluster.x-k8s.io/deployment-name": "default-worker"}},
                     "template": {"metadata": {"labels": {"topology.cluster.x-k8s.io/deployment-name": "default-worker"}},
                                  "spec": {"clusterName": stack, "version": "v1.30.4",
                                           "bootstrap": {"configRef": {"apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfigTemplate", "name": "w"}},
                                           "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DevMachineTemplate", "name": "w"}}}},
        })).await;
        self.counters(&self.res.machine_deployment, &md, 1, 1).await;
        self.status(
            &self.res.cluster,
            stack,
            json!({"conditions": [{"type": "ControlPlaneAvailable", "status": "True",
            "reason": "Available", "message": "", "lastTransitionTime": "2026-12-04T00:00:00Z"}]}),
        )
        .await;
    }

    async fn control_plane_machine(&self, stack: &str, name: &str) {
        self.create(&self.res.machine, json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
            "metadata": {"name": name, "namespace": self.ns,
                         "labels": {"cluster.x-k8s.io/cluster-name": stack, "cluster.x-k8s.io/control-plane": ""}},
            "spec": {"clusterName": stack, "version": "v1.30.4",
                     "bootstrap": {"configRef": {"apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfig", "name": name}},
                     "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DevMachine", "name": name}},
        })).await;
    }
}

/// Requests of user magnum-rs in the test's namespace logged after byte `from`:
/// "verb resource" for each (a watch when it starts, anything else when answered).
fn audit_since(k: &Kube, from: u64) -> Vec<String> {
    let text = std::fs::read(&k.audit).expect("audit log");
    let tail = &text[usize::try_from(from).unwrap_or(0).min(text.len())..];
    String::from_utf8_lossy(tail)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| {
            e["user"]["username"] == "magnum-rs" && e["objectRef"]["namespace"] == k.ns.as_str()
        })
        .filter(|e| (e["verb"] == "watch") == (e["stage"] == "ResponseStarted"))
        .map(|e| {
            format!(
                "{} {}",
                e["verb"].as_str().unwrap_or(""),
                e["objectRef"]["resource"].as_str().unwrap_or("")
            )
        })
        .collect()
}

fn audit_end(k: &Kube) -> u64 {
    std::fs::metadata(&k.audit).map(|m| m.len()).unwrap_or(0)
}

/// The sum of one metric's samples whose labels contain `label` (all when empty).
fn metric(port: u16, name: &str, label: &str) -> f64 {
    let (_, text) = http_get(port, "/metrics").expect("/metrics");
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
        .filter(|l| label.is_empty() || l.contains(label))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn writes(port: u16) -> f64 {
    metric(port, "magnum_rs_reconcile_writes_total", "")
}

fn wait_until<T>(what: &str, secs: u64, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::park_timeout(Duration::from_millis(50));
    }
}

/// `reqs` without the watches' periodic renewals: the server ends each watch after its
/// timeout (kube-rs asks for 290 s) and the watcher opens it again from the last resource
/// version, whatever the fleet does, so a window of the test may hold one renewal of each
/// kind (CI 18 saw all four inside a resize's window on a slow run). More than one of a
/// kind in a window shorter than that timeout is a restarting watch: it fails the test.
fn without_watch_renewals(reqs: Vec<String>) -> Vec<String> {
    for kind in KINDS {
        let opened = reqs
            .iter()
            .filter(|r| **r == format!("watch {kind}"))
            .count();
        assert!(
            opened <= 1,
            "{kind} watched {opened} times in one window: {reqs:?}"
        );
    }
    reqs.into_iter()
        .filter(|r| !r.starts_with("watch "))
        .collect()
}

/// Waits until the leader has renewed its Lease `n` more times.
fn passes(k: &Kube, n: usize) {
    let from = audit_end(k);
    wait_until("Lease renewals", 30, || {
        let renewals = audit_since(k, from)
            .iter()
            .filter(|r| *r == "update leases")
            .count();
        (renewals >= n).then_some(())
    });
}

/// Waits until the reconciler wrote nothing over two Lease renewals (whatever was queued is
/// done).
fn quiet(port: u16, k: &Kube) {
    wait_until("a quiet reconciler", 60, || {
        let w = writes(port);
        passes(k, 2);
        (writes(port) == w).then_some(())
    });
}

fn get(port: u16, path: &str) -> Value {
    let (code, body) = http(port, "GET", path, None);
    assert_eq!(code, 200, "GET {path}: {body}");
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs scripts/test.sh"]
async fn an_idle_fleet_costs_no_request_and_one_status_write_costs_one_database_write() {
    let _load = crate::load_async().await;
    let k = Kube::connect().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let db = common::fresh_database().await;
    let url = match std::env::var("MAGNUM_RS_TEST_MYSQL_URL") {
        Ok(base) if !base.is_empty() => db.url.clone(),
        _ => format!("sqlite://{}", dir.path().join("rest.db").display()),
    };
    let config = dir.path().join("magnum-rs.toml");
    std::fs::write(
        &config,
        format!(
            "[quotas]\nmax_clusters_per_project = 1000\n\
             [drivers.cluster_api]\nnamespace = \"{}\"\nprogress_deadline_seconds = 600\n\
             lease_duration_seconds = 6\n\
             [[drivers.cluster_api.management_clusters]]\nname = \"rest\"\nkubeconfig = \"{}\"\n",
            k.ns, k.limited_kubeconfig
        ),
    )
    .expect("config");
    let server = Server::start(
        &url,
        dir.path(),
        &["--config", &config.display().to_string()],
    );
    let port = server.port;

    // 200 clusters through the API; the test plays Cluster API for each.
    let (code, body) = http(
        port,
        "POST",
        "/v1/clustertemplates",
        Some(&json!({
        "name": "capi", "coe": "kubernetes", "image_id": "ubuntu-2204",
        "external_network_id": "public", "master_lb_enabled": true,
        "labels": {"kube_tag": "v1.30.4"}})),
    );
    assert_eq!(code, 201, "template: {body}");
    for i in 0..N {
        let (code, body) = http(
            port,
            "POST",
            "/v1/clusters",
            Some(&json!({
            "name": format!("rest-{i:03}"), "cluster_template_id": "capi",
            "master_count": 1, "node_count": 1})),
        );
        assert_eq!(code, 202, "cluster {i}: {body}");
    }
    let clusters = k.api(&k.res.cluster);
    let clusters_listed = loop {
        let list = clusters.list(&ListParams::default()).await.expect("list");
        if list.items.len() == N {
            break list.items;
        }
        tokio::task::yield_now().await;
    };
    let stacks: Vec<String> = clusters_listed
        .iter()
        .map(|c| c.metadata.name.clone().unwrap_or_default())
        .collect();
    futures::stream::iter(stacks.iter().map(|s| k.materialize(s)))
        .buffer_unordered(12)
        .collect::<Vec<_>>()
        .await;
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let v = get(port, "/v1/clusters/detail?limit=1000");
        let all = v["clusters"].as_array().cloned().unwrap_or_default();
        let left: Vec<&Value> = all
            .iter()
            .filter(|c| c["status"] != "CREATE_COMPLETE")
            .collect();
        if all.len() == N && left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {N} clusters not CREATE_COMPLETE, e.g. {}",
            left.len(),
            left.first()
                .map(|c| format!("{} {} {}", c["stack_id"], c["status"], c["status_reason"]))
                .unwrap_or_default()
        );
        std::thread::park_timeout(Duration::from_millis(100));
    }
    for kind in KINDS {
        assert_eq!(
            metric(port, "magnum_rs_watch_synced", &format!("kind=\"{kind}\"")),
            1.0,
            "{kind} synced"
        );
    }
    quiet(port, &k);

    // Idle: three Lease renewals, no request but the Lease, no write.
    let from = audit_end(&k);
    let w0 = writes(port);
    passes(&k, 3);
    let idle = without_watch_renewals(audit_since(&k, from));
    assert!(
        idle.iter()
            .all(|r| r == "get leases" || r == "update leases"),
        "requests of an idle fleet: {idle:?}"
    );
    assert_eq!(writes(port), w0, "database writes of an idle fleet");

    // One status write on one cluster's object: one database write, no request.
    // The driver labels each Cluster object with the uuid of its cluster.
    let uuid_of = |stack: &str| -> String {
        clusters_listed
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some(stack))
            .and_then(|c| c.metadata.labels.as_ref()?.get("cluster-uuid").cloned())
            .unwrap_or_else(|| panic!("no cluster-uuid label on {stack}"))
    };
    let one = &stacks[7];
    let uuid = uuid_of(one);
    let from = audit_end(&k);
    let w0 = writes(port);
    k.status(
        &k.res.control_plane,
        &format!("{one}-control-plane"),
        json!({"version": "v1.30.5"}),
    )
    .await;
    wait_until("coe_version v1.30.5", 30, || {
        (get(port, &format!("/v1/clusters/{uuid}"))["coe_version"] == "v1.30.5").then_some(())
    });
    quiet(port, &k);
    assert_eq!(
        writes(port) - w0,
        1.0,
        "database writes for one status write"
    );
    let changed = get(port, "/v1/clusters/detail?limit=1000")["clusters"]
        .as_array()
        .map(|a| a.iter().filter(|c| c["coe_version"] == "v1.30.5").count())
        .unwrap_or(0);
    assert_eq!(changed, 1, "clusters whose coe_version changed");
    let reqs = without_watch_renewals(audit_since(&k, from));
    assert!(
        reqs.iter().all(|r| r.ends_with(" leases")),
        "requests for one status write: {reqs:?}"
    );

    // A control-plane resize 1 -> 3: the completing KCP status write is one transaction.
    let two = &stacks[9];
    let uuid = uuid_of(two);
    let from = audit_end(&k);
    let (code, body) = http(
        port,
        "POST",
        &format!("/v1/clusters/{uuid}/actions/resize"),
        Some(&json!({"node_count": 3, "nodegroup": "default-master"})),
    );
    assert_eq!(code, 202, "resize: {body}");
    let cluster_api = k.api(&k.res.cluster);
    loop {
        let c = cluster_api.get(two).await.expect("the Cluster");
        if c.data.pointer("/spec/topology/controlPlane/replicas") == Some(&json!(3)) {
            break;
        }
        tokio::task::yield_now().await;
    }
    for m in 0..3 {
        k.control_plane_machine(two, &format!("{two}-cp-{m}")).await;
    }
    let cp = format!("{two}-control-plane");
    let generation = k
        .merge(&k.res.control_plane, &cp, json!({"spec": {"replicas": 3}}))
        .await;
    let ng = format!("/v1/clusters/{uuid}/nodegroups/default-master");
    wait_until("the reason of a scale in flight", 30, || {
        let v = get(port, &ng);
        (v["status"] == "UPDATE_IN_PROGRESS"
            && v["status_reason"] == "the control plane: 1 of 3 replicas ready")
            .then_some(())
    });
    quiet(port, &k);
    let w0 = writes(port);
    let finish0 = metric(port, "magnum_rs_reconcile_writes_total", "write=\"finish\"");
    k.counters(&k.res.control_plane, &cp, 3, generation).await;
    wait_until("UPDATE_COMPLETE", 30, || {
        (get(port, &ng)["status"] == "UPDATE_COMPLETE").then_some(())
    });
    quiet(port, &k);
    assert_eq!(
        writes(port) - w0,
        1.0,
        "database writes for the completing status write"
    );
    assert_eq!(
        metric(port, "magnum_rs_reconcile_writes_total", "write=\"finish\"") - finish0,
        1.0
    );
    assert_eq!(
        get(port, &format!("/v1/clusters/{uuid}"))["master_count"],
        3
    );
    let reqs: Vec<String> = without_watch_renewals(audit_since(&k, from))
        .into_iter()
        .filter(|r| !r.ends_with(" leases"))
        .collect();
    assert_eq!(
        reqs,
        vec!["get clusters".to_string(), "patch clusters".to_string()],
        "magnum-rs's requests for one control-plane resize"
    );
    // The namespace goes with the test (its objects with it).
    drop(server);
    let nss: Api<Namespace> = Api::all(k.client.clone());
    let _ = nss.delete(&k.ns, &Default::default()).await;
}
