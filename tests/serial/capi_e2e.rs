//! End to end with the **real Cluster API controllers** (`scripts/capi.sh`: core with the
//! topology controller, KubeadmControlPlane, kubeadm bootstrap and CAPD's in-memory
//! backend, with their webhooks) and the real `openstack` CLI against the real binary.
//! Nothing here writes Cluster API status: the controllers do the work, and the tests wait
//! on what they and magnum-rs report, with bounded timeouts.
//!
//! `scripts/test.sh` starts the controllers and sets `MAGNUM_RS_TEST_CAPI_ENV` (the path of
//! capi.sh's `DIR/env`) and `MAGNUM_RS_OPENSTACK`; without them these tests fail. The tests
//! share one set of controllers and some stop parts of it, so they run one at a time.

use crate::common;
// One test at a time: they share the controllers, and some stop a provider.
use crate::controllers;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::server::{http, Server};
use kube::api::{Api, DynamicObject, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use magnum_rs::drivers::cluster_api::topology::Resources;
use serde_json::{json, Value};

/// Bounded waits: a new cluster takes the controllers about 20 s, a control-plane scale
/// step or a rollout 10–50 s (the managers of scripts/capi.sh retry a failed connection to
/// a new workload cluster after 2 s and wait at most 5 s on an etcd member).
const CREATE_TIMEOUT: Duration = Duration::from_secs(300);
const STEP_TIMEOUT: Duration = Duration::from_secs(240);

/// The controllers' environment (capi.sh's DIR/env) and a kube client on it.
struct Capi {
    env: BTreeMap<String, String>,
    rt: tokio::runtime::Runtime,
    client: kube::Client,
    res: Resources,
}

impl Capi {
    fn connect() -> Capi {
        let env = common::capi_env::values("");
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let client = rt.block_on(common::capi_env::client(&env["KUBECONFIG"]));
        Capi {
            env,
            rt,
            client,
            res: Resources::at("v1beta2"),
        }
    }

    fn ns(&self) -> &str {
        &self.env["KUBE_NAMESPACE"]
    }

    /// `scripts/capi.sh ARGS… DIR`-style control of the controllers (`provider DIR stop capd`).
    fn script(&self, args: &[&str]) {
        let dir = &self.env["CAPI_DIR"];
        let mut full = vec![args[0], dir.as_str()];
        full.extend(&args[1..]);
        let out = Command::new(&self.env["CAPI_SCRIPT"])
            .args(&full)
            .output()
            .expect("capi.sh");
        assert!(
            out.status.success(),
            "capi.sh {full:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn list(&self, ar: &kube::api::ApiResource, selector: &str) -> Vec<Value> {
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), self.ns(), ar);
        self.rt
            .block_on(api.list(&ListParams::default().labels(selector)))
            .map(|l| {
                l.items
                    .into_iter()
                    .map(|o| serde_json::to_value(o).expect("json"))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn get(&self, ar: &kube::api::ApiResource, name: &str) -> Option<Value> {
        let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), self.ns(), ar);
        self.rt
            .block_on(api.get_opt(name))
            .expect("get")
            .map(|o| serde_json::to_value(o).expect("json"))
    }

    /// Secret `name` of the namespace, as JSON (its `data` base64, as the API gives it).
    fn secret(&self, name: &str) -> Option<k8s_openapi::api::core::v1::Secret> {
        let api: Api<k8s_openapi::api::core::v1::Secret> =
            Api::namespaced(self.client.clone(), self.ns());
        self.rt.block_on(api.get_opt(name)).expect("get Secret")
    }

    /// Names of the cluster's Machines (control plane or workers).
    fn machines(&self, stack: &str, control_plane: bool) -> Vec<String> {
        let mut selector = format!("cluster.x-k8s.io/cluster-name={stack}");
        selector.push_str(if control_plane {
            ",cluster.x-k8s.io/control-plane"
        } else {
            ",!cluster.x-k8s.io/control-plane"
        });
        let mut names: Vec<String> = self
            .list(&self.res.machine, &selector)
            .iter()
            .filter_map(|m| m.pointer("/metadata/name").and_then(Value::as_str))
            .map(str::to_string)
            .collect();
        names.sort();
        names
    }

    /// The PATCHes magnum-rs sent to the Cluster object `stack`, from the API server's
    /// audit log.
    fn patches_sent(&self, stack: &str) -> usize {
        let log = std::fs::read_to_string(&self.env["CAPI_AUDIT_LOG"]).unwrap_or_default();
        log.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| {
                e["stage"] == "ResponseComplete"
                    && e["verb"] == "patch"
                    && e["objectRef"]["resource"] == "clusters"
                    && e["objectRef"]["name"] == stack
                    && e["objectRef"].get("subresource").is_none()
                    && e["userAgent"]
                        .as_str()
                        .is_some_and(|u| u.starts_with("magnum-rs/"))
            })
            .count()
    }

    /// Waits (bounded) until the Cluster object satisfies `check`.
    fn wait_cluster_object(&self, stack: &str, what: &str, check: impl Fn(&Value) -> bool) {
        let deadline = Instant::now() + STEP_TIMEOUT;
        loop {
            let c = self.get(&self.res.cluster, stack);
            if c.as_ref().is_some_and(&check) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; last: {c:?}"
            );
            std::thread::park_timeout(Duration::from_millis(200));
        }
    }
}

/// Options of one magnum-rs configuration.
#[derive(Default)]
struct Options {
    progress_deadline_seconds: Option<u64>,
    allow_even_control_plane: bool,
    /// Leader election through this Lease (off when None).
    lease: Option<&'static str>,
}

fn write_config(capi: &Capi, dir: &Path, o: &Options) -> String {
    let mut t = format!(
        "[drivers.cluster_api]\nnamespace = \"{}\"\nallow_even_control_plane = {}\n",
        capi.ns(),
        o.allow_even_control_plane
    );
    if let Some(s) = o.progress_deadline_seconds {
        t.push_str(&format!("progress_deadline_seconds = {s}\n"));
    }
    match o.lease {
        Some(name) => t.push_str(&format!(
            "leader_election = true\nlease_name = \"{name}\"\nlease_duration_seconds = 3\n"
        )),
        None => t.push_str("leader_election = false\n"),
    }
    t.push_str(&format!(
        "[[drivers.cluster_api.management_clusters]]\nname = \"capi\"\nkubeconfig = \"{}\"\n",
        capi.env["KUBECONFIG"]
    ));
    let path = dir.join("magnum-rs.toml");
    std::fs::write(&path, t).expect("config");
    path.display().to_string()
}

fn database_url(dir: &Path) -> String {
    match std::env::var("MAGNUM_RS_TEST_MYSQL_URL") {
        Ok(base) if !base.is_empty() => {
            let rt = tokio::runtime::Runtime::new().expect("runtime");
            rt.block_on(common::fresh_database()).url
        }
        _ => format!("sqlite://{}", dir.join("capi-e2e.db").display()),
    }
}

/// The real `openstack` CLI, noauth, against one server.
struct Cli {
    bin: String,
    endpoint: String,
    /// The server's port, for the cheap reads that tell when to ask the CLI.
    port: u16,
}

/// The API path a CLI `show` reads.
fn api_path(args: &[&str]) -> Option<String> {
    match args {
        ["coe", "cluster", "show", c] => Some(format!("/v1/clusters/{c}")),
        ["coe", "nodegroup", "show", c, ng] => Some(format!("/v1/clusters/{c}/nodegroups/{ng}")),
        _ => None,
    }
}

/// How often the API is read while a wait lasts.
const POLL: Duration = Duration::from_millis(250);

impl Cli {
    fn new(server: &Server) -> Cli {
        let bin = std::env::var("MAGNUM_RS_OPENSTACK").unwrap_or_else(|_| {
            panic!("MAGNUM_RS_OPENSTACK is not set: run scripts/test.sh, which installs the openstack CLI")
        });
        Cli {
            bin,
            endpoint: server.endpoint(),
            port: server.port,
        }
    }

    /// Reads the API (not the CLI: each `openstack` run is a Python process that takes a
    /// second of CPU, which a wait in a loop would take from the controllers it waits for)
    /// until `ready` holds for what `args` shows, or the deadline. Answers nothing: the
    /// caller then asks the CLI, whose output is what the test checks.
    fn until_api(&self, args: &[&str], deadline: Instant, ready: impl Fn(u16, &Value) -> bool) {
        let Some(path) = api_path(args) else { return };
        while Instant::now() < deadline {
            let (code, v) = http(self.port, "GET", &path, None);
            if ready(code, &v) {
                return;
            }
            std::thread::park_timeout(POLL);
        }
    }

    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = Command::new(&self.bin)
            .args(["--os-auth-type", "none", "--os-endpoint", &self.endpoint])
            .args(args)
            // `coe cluster config` reads $SHELL (magnumclient's utils.config_cluster).
            .env(
                "SHELL",
                std::env::var("SHELL").unwrap_or_else(|_| "/bin/sh".to_owned()),
            )
            .output()
            .expect("openstack");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn ok(&self, args: &[&str]) -> String {
        let (code, out, err) = self.run(args);
        assert_eq!(code, 0, "openstack {args:?}: {out}{err}");
        out
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut a = args.to_vec();
        a.extend(["-f", "json"]);
        serde_json::from_str(&self.ok(&a)).expect("json output")
    }

    /// Polls a `show` until `check` holds; fails at once on a terminal status that is not
    /// the one awaited (no waiting out the timeout on a known failure).
    fn wait(
        &self,
        args: &[&str],
        timeout: Duration,
        what: &str,
        check: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + timeout;
        let t0 = Instant::now();
        loop {
            self.until_api(args, deadline, |code, v| {
                code != 200
                    || check(v)
                    || v["status"].as_str().is_some_and(|s| s.ends_with("_FAILED"))
            });
            let v = self.json(args);
            if check(&v) {
                // Shown when a test fails: how long each wait took, in order.
                eprintln!("{what} after {:.1} s: {args:?}", t0.elapsed().as_secs_f64());
                return v;
            }
            let status = v["status"].as_str().unwrap_or_default();
            assert!(
                !status.ends_with("_FAILED") || what.contains("FAILED"),
                "{args:?} is {status} while waiting for {what}: {v}"
            );
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; last: {v}"
            );
        }
    }

    fn wait_status(&self, args: &[&str], timeout: Duration, want: &str) -> Value {
        self.wait(args, timeout, want, |v| v["status"] == want)
    }

    /// `coe cluster resize CLUSTER N --nodegroup default-master`, then the master
    /// nodegroup once its status is `want`.
    fn resize_master(&self, cluster: &str, n: i64, want: &str) -> Value {
        let n = n.to_string();
        let out = self.ok(&[
            "coe",
            "cluster",
            "resize",
            cluster,
            &n,
            "--nodegroup",
            "default-master",
        ]);
        assert!(out.contains("has been accepted"), "{out}");
        self.wait_status(
            &["coe", "nodegroup", "show", cluster, "default-master"],
            STEP_TIMEOUT,
            want,
        )
    }

    /// A template on the in-memory ClusterClass (magnum-rs's default class name).
    fn template(&self, name: &str, kube_tag: &str) {
        self.ok(&[
            "coe",
            "cluster",
            "template",
            "create",
            name,
            "--coe",
            "kubernetes",
            "--image",
            "ubuntu-2204",
            "--external-network",
            "public",
            "--master-lb-enabled",
            "--labels",
            &format!("kube_tag={kube_tag}"),
        ]);
    }

    /// Creates cluster `name` (1 master, 1 worker) and waits for CREATE_COMPLETE; returns
    /// its stack id (the Cluster object's name).
    fn cluster(&self, name: &str, template: &str) -> String {
        let out = self.ok(&[
            "coe",
            "cluster",
            "create",
            name,
            "--cluster-template",
            template,
            "--master-count",
            "1",
            "--node-count",
            "1",
        ]);
        assert!(out.contains("Request to create cluster"), "{out}");
        let c = self.wait_status(
            &["coe", "cluster", "show", name],
            CREATE_TIMEOUT,
            "CREATE_COMPLETE",
        );
        c["stack_id"]
            .as_str()
            .or_else(|| c["cluster_id"].as_str())
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no stack id: {c}"))
    }

    /// Deletes a cluster and waits until magnum-rs no longer knows it.
    fn delete_cluster(&self, name: &str) {
        self.ok(&["coe", "cluster", "delete", name]);
        let t0 = Instant::now();
        let deadline = t0 + STEP_TIMEOUT;
        loop {
            self.until_api(&["coe", "cluster", "show", name], deadline, |code, v| {
                code != 200 || v["status"] == "DELETE_FAILED"
            });
            let (code, out, err) = self.run(&["coe", "cluster", "show", name, "-f", "json"]);
            if code != 0 {
                assert!(err.contains("could not be found"), "{out}{err}");
                eprintln!("{name} gone after {:.1} s", t0.elapsed().as_secs_f64());
                return;
            }
            let v: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
            assert_ne!(v["status"], "DELETE_FAILED", "{v}");
            assert!(Instant::now() < deadline, "cluster {name} never went: {v}");
        }
    }
}

fn master(cli: &Cli, cluster: &str) -> Value {
    cli.json(&["coe", "nodegroup", "show", cluster, "default-master"])
}

/// Lists the workload cluster's Nodes with the kubeconfig `coe cluster config` wrote.
fn workload_nodes(rt: &tokio::runtime::Runtime, kubeconfig: &Path) -> Vec<Value> {
    rt.block_on(async {
        let kc = Kubeconfig::read_from(kubeconfig).expect("workload kubeconfig");
        let cfg = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
            .await
            .expect("workload config");
        let client = kube::Client::try_from(cfg).expect("workload client");
        let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(client);
        nodes
            .list(&ListParams::default())
            .await
            .expect("the workload cluster's Nodes")
            .items
            .into_iter()
            .map(|n| serde_json::to_value(n).expect("json"))
            .collect()
    })
}

/// The seed's story: create, control plane 1 → 3, the kubeconfig shows 3 control-plane
/// Nodes, 3 → 1 removing the named Machines, concurrent worker resizes, nodegroup create
/// and delete, an upgrade to a newer kube_tag, a worker resize accepted while the API
/// server is away for 20 s, and delete — all completed by the real controllers' status.
#[test]
#[ignore = "needs scripts/test.sh"]
fn seed_story_with_the_real_controllers_from_create_to_delete() {
    let _controllers = controllers();
    let capi = Capi::connect();
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write_config(&capi, dir.path(), &Options::default());
    let server = Server::start(&database_url(dir.path()), dir.path(), &["--config", &cfg]);
    let cli = Cli::new(&server);

    // Create: CREATE_COMPLETE from the controllers' status.
    cli.template("capi", "v1.30.4");
    let stack = cli.cluster("story", "capi");
    let c = cli.json(&["coe", "cluster", "show", "story"]);
    // CAPD's in-memory API servers listen on CAPI_POD_IP:20000 and up, one per cluster.
    let pod_ip = capi
        .env
        .get("CAPI_POD_IP")
        .map_or("127.0.0.1", String::as_str);
    assert!(
        c["api_address"]
            .as_str()
            .is_some_and(|a| a.starts_with(&format!("https://{pod_ip}:200"))),
        "{c}"
    );
    assert_eq!(c["coe_version"], "v1.30.4", "{c}");
    assert_eq!(c["master_count"], 1);
    assert_eq!(capi.machines(&stack, true).len(), 1);
    // Cluster API's control plane runs on the CAs Magnum's conductor made: the Secrets it
    // reads hold the certificates the API serves (and the kubeconfig below, signed through
    // `POST /v1/certificates`, is accepted by the workload cluster's API server).
    let uuid = c["uuid"].as_str().expect("uuid").to_string();
    for (ca_cert_type, suffix) in [
        ("kubernetes", "ca"),
        ("etcd", "etcd"),
        ("front_proxy", "proxy"),
    ] {
        let path = format!("/v1/certificates/{uuid}?ca_cert_type={ca_cert_type}");
        let (code, body) = http(server.port, "GET", &path, None);
        assert_eq!(code, 200, "{body}");
        let served = body["pem"].as_str().expect("pem").to_string();
        let held = capi
            .secret(&format!("{stack}-{suffix}"))
            .and_then(|s| s.data)
            .map(|d| String::from_utf8(d["tls.crt"].0.clone()).expect("utf-8"))
            .expect("CA Secret");
        assert_eq!(served.trim(), held.trim(), "{suffix}");
    }
    // The kubeadm control plane adopts them (its controller owner reference; the
    // magnum-cluster-api notes saw none because their control plane never got that far).
    // magnum-rs deletes them itself once the Cluster is gone (below), as magnum-cluster-api
    // does; this test environment runs no garbage collector.
    for suffix in ["ca", "etcd", "proxy", "sa"] {
        let owners = capi
            .secret(&format!("{stack}-{suffix}"))
            .and_then(|s| s.metadata.owner_references)
            .unwrap_or_default();
        assert!(
            owners
                .iter()
                .any(|o| o.kind == "KubeadmControlPlane" && o.controller == Some(true)),
            "{suffix}: {owners:?}"
        );
    }

    // Control plane 1 → 3: KCP really reaches 3 ready replicas.
    let out = cli.ok(&[
        "coe",
        "cluster",
        "resize",
        "story",
        "3",
        "--nodegroup",
        "default-master",
    ]);
    assert_eq!(
        out.trim(),
        "Request to resize cluster story has been accepted."
    );
    let ng = cli.wait_status(
        &["coe", "nodegroup", "show", "story", "default-master"],
        STEP_TIMEOUT,
        "UPDATE_COMPLETE",
    );
    assert_eq!(ng["node_count"], 3);
    let c = cli.wait_status(
        &["coe", "cluster", "show", "story"],
        STEP_TIMEOUT,
        "UPDATE_COMPLETE",
    );
    assert_eq!(c["master_count"], 3);
    let kcp = capi
        .list(
            &capi.res.control_plane,
            &format!("cluster.x-k8s.io/cluster-name={stack}"),
        )
        .pop()
        .expect("the KubeadmControlPlane");
    assert_eq!(
        kcp.pointer("/status/readyReplicas"),
        Some(&json!(3)),
        "{kcp}"
    );
    assert_eq!(capi.patches_sent(&stack), 1, "one patch for one resize");

    // The kubeconfig from `coe cluster config` lists 3 control-plane Nodes.
    let conf_dir = dir.path().join("conf");
    std::fs::create_dir_all(&conf_dir).expect("dir");
    let conf = conf_dir.display().to_string();
    cli.ok(&[
        "coe", "cluster", "config", "story", "--dir", &conf, "--force",
    ]);
    let nodes = workload_nodes(&capi.rt, &conf_dir.join("config"));
    let control_plane: Vec<&Value> = nodes
        .iter()
        .filter(|n| {
            n.pointer("/metadata/labels")
                .and_then(|l| l.get("node-role.kubernetes.io/control-plane"))
                .is_some()
        })
        .collect();
    assert_eq!(control_plane.len(), 3, "{nodes:?}");

    // 3 → 1 naming two control-plane nodes: exactly those Machines go.
    let before = capi.machines(&stack, true);
    assert_eq!(before.len(), 3);
    let (removed, kept) = (&before[..2], &before[2]);
    let out = cli.ok(&[
        "coe",
        "cluster",
        "resize",
        "story",
        "1",
        "--nodegroup",
        "default-master",
        "--nodes-to-remove",
        &removed[0],
        "--nodes-to-remove",
        &removed[1],
    ]);
    assert!(out.contains("has been accepted"), "{out}");
    let ng = cli.wait_status(
        &["coe", "nodegroup", "show", "story", "default-master"],
        STEP_TIMEOUT,
        "UPDATE_COMPLETE",
    );
    assert_eq!(ng["node_count"], 1);
    assert_eq!(capi.machines(&stack, true), vec![kept.clone()]);

    // Nodegroup create; then two worker resizes at once, on different nodegroups.
    cli.ok(&[
        "coe",
        "nodegroup",
        "create",
        "story",
        "ng-b",
        "--node-count",
        "1",
    ]);
    cli.wait_status(
        &["coe", "nodegroup", "show", "story", "ng-b"],
        STEP_TIMEOUT,
        "CREATE_COMPLETE",
    );
    let patches = capi.patches_sent(&stack);
    let a = {
        let (bin, endpoint, port) = (cli.bin.clone(), cli.endpoint.clone(), cli.port);
        std::thread::spawn(move || {
            Cli {
                bin,
                endpoint,
                port,
            }
            .ok(&[
                "coe",
                "cluster",
                "resize",
                "story",
                "2",
                "--nodegroup",
                "default-worker",
            ])
        })
    };
    cli.ok(&[
        "coe",
        "cluster",
        "resize",
        "story",
        "2",
        "--nodegroup",
        "ng-b",
    ]);
    a.join().expect("the other resize");
    for ng in ["default-worker", "ng-b"] {
        let v = cli.wait_status(
            &["coe", "nodegroup", "show", "story", ng],
            STEP_TIMEOUT,
            "UPDATE_COMPLETE",
        );
        assert_eq!(v["node_count"], 2, "{ng}: {v}");
    }
    assert_eq!(capi.patches_sent(&stack), patches + 2);
    assert_eq!(
        capi.machines(&stack, false).len(),
        4,
        "2 + 2 worker Machines"
    );

    // Nodegroup delete: gone once its MachineDeployment and Machines are.
    cli.ok(&["coe", "nodegroup", "delete", "story", "ng-b"]);
    let deadline = Instant::now() + STEP_TIMEOUT;
    loop {
        let (code, out, err) =
            cli.run(&["coe", "nodegroup", "show", "story", "ng-b", "-f", "json"]);
        if code != 0 {
            assert!(err.contains("could not be found"), "{out}{err}");
            break;
        }
        assert!(Instant::now() < deadline, "ng-b never went: {out}");
    }
    assert_eq!(
        capi.machines(&stack, false).len(),
        2,
        "only default-worker's Machines"
    );

    // Upgrade to a template with a newer kube_tag: complete when the Machines run it.
    cli.template("capi-v1.31", "v1.31.0");
    let out = cli.ok(&["coe", "cluster", "upgrade", "story", "capi-v1.31"]);
    assert!(out.contains("has been accepted"), "{out}");
    let c = cli.wait_status(
        &["coe", "cluster", "show", "story"],
        STEP_TIMEOUT,
        "UPDATE_COMPLETE",
    );
    assert_eq!(c["coe_version"], "v1.31.0", "{c}");
    for m in capi.list(
        &capi.res.machine,
        &format!("cluster.x-k8s.io/cluster-name={stack}"),
    ) {
        assert_eq!(m.pointer("/spec/version"), Some(&json!("v1.31.0")), "{m}");
    }

    // Issue 29: the API server is away for 20 s when a resize is accepted. The driver's
    // failures to reach it are retried at stored times with backoff (not five tries at the
    // poll interval, which gave up after 10 s), so the resize completes once it is back,
    // with one patch.
    let patches = capi.patches_sent(&stack);
    capi.script(&["apiserver-stop"]);
    struct Start<'a>(&'a Capi);
    impl Drop for Start<'_> {
        fn drop(&mut self) {
            self.0.script(&["apiserver-start"]);
        }
    }
    let back = Start(&capi);
    let out = cli.ok(&["coe", "cluster", "resize", "story", "1"]);
    assert!(out.contains("has been accepted"), "{out}");
    // The outage itself is what is tested: 20 s in which the driver cannot reach the API
    // server (there is no condition to wait on).
    let outage = Instant::now();
    while outage.elapsed() < Duration::from_secs(20) {
        std::thread::park_timeout(Duration::from_secs(20) - outage.elapsed());
    }
    let during = cli.json(&["coe", "nodegroup", "show", "story", "default-worker"]);
    assert_eq!(during["status"], "UPDATE_IN_PROGRESS", "{during}");
    drop(back);
    let ng = cli.wait_status(
        &["coe", "nodegroup", "show", "story", "default-worker"],
        STEP_TIMEOUT,
        "UPDATE_COMPLETE",
    );
    assert_eq!(ng["node_count"], 1);
    assert_eq!(capi.patches_sent(&stack), patches + 1, "exactly one patch");

    // Delete: the row goes only with the Cluster object, and after the Secrets the create
    // wrote beside it (the control plane's CAs) are deleted, as magnum-cluster-api does.
    cli.delete_cluster("story");
    assert!(
        capi.get(&capi.res.cluster, &stack).is_none(),
        "the Cluster object is gone"
    );
    for suffix in ["ca", "etcd", "proxy", "sa"] {
        assert!(
            capi.secret(&format!("{stack}-{suffix}")).is_none(),
            "{stack}-{suffix} is deleted with the cluster"
        );
    }
}

/// A size the KCP webhook refuses (even, let past our own check by
/// `allow_even_control_plane`) ends UPDATE_FAILED with the webhook's message; with the
/// infrastructure provider stopped mid-scale, nothing moves and the resize ends
/// UPDATE_FAILED at the deadline. Both restore the previous count, as Magnum does, and
/// (issue 29) set the Cluster object back to it: after the refused size the next worker
/// resize ends UPDATE_COMPLETE; a process killed after the roll-back is recorded, or after
/// it is sent, ends the same way after its restart (one roll-back patch); and once the
/// provider is back the KCP converges to the count the API shows.
#[test]
#[ignore = "needs scripts/test.sh"]
fn refused_and_stalled_control_plane_resizes_end_update_failed_with_the_reason() {
    let _controllers = controllers();
    let capi = Capi::connect();
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write_config(
        &capi,
        dir.path(),
        &Options {
            progress_deadline_seconds: Some(60),
            allow_even_control_plane: true,
            ..Options::default()
        },
    );
    let url = database_url(dir.path());
    let mut server = Server::start(&url, dir.path(), &["--config", &cfg]);
    let mut cli = Cli::new(&server);
    cli.template("capi", "v1.30.4");
    let stack = cli.cluster("failing", "capi");

    // 1 → 2: the KCP webhook refuses an even size with stacked etcd.
    let ng = cli.resize_master("failing", 2, "UPDATE_FAILED");
    let reason = ng["status_reason"].as_str().unwrap_or_default().to_string();
    assert!(
        reason.contains("cannot be an even number when etcd is stacked"),
        "{reason}"
    );
    assert_eq!(ng["node_count"], 1, "the previous count is restored");
    let c = cli.json(&["coe", "cluster", "show", "failing"]);
    assert_eq!(c["status"], "UPDATE_FAILED");
    assert_eq!(c["status_reason"], json!(reason));
    assert_eq!(c["master_count"], 1);

    // Issue 29: the Cluster is asked for 1 again (one roll-back patch), so the topology
    // controller reconciles again and the next resize is not wedged behind the refusal.
    let replicas = |n: i64| {
        move |c: &Value| c.pointer("/spec/topology/controlPlane/replicas") == Some(&json!(n))
    };
    capi.wait_cluster_object(&stack, "controlPlane.replicas back at 1", replicas(1));
    assert_eq!(capi.patches_sent(&stack), 2, "the resize and its roll-back");
    let resize_workers = |cli: &Cli, n: &str| {
        let out = cli.ok(&["coe", "cluster", "resize", "failing", n]);
        assert!(out.contains("has been accepted"), "{out}");
        cli.wait_status(
            &["coe", "nodegroup", "show", "failing", "default-worker"],
            STEP_TIMEOUT,
            "UPDATE_COMPLETE",
        )
    };
    assert_eq!(resize_workers(&cli, "2")["node_count"], 2);

    // Killed after the roll-back is recorded and before it is sent, then after it is sent:
    // each ends as above after a restart, with exactly one roll-back patch.
    for (point, workers) in [("rollback-recorded", "1"), ("rollback-sent", "2")] {
        drop(server);
        let armed = [(magnum_rs::failpoint::ENV, point)];
        let mut dying = Server::start_with_env(&url, dir.path(), &["--config", &cfg], &armed);
        let before = capi.patches_sent(&stack);
        let (code, body) = http(
            dying.port,
            "POST",
            "/v1/clusters/failing/actions/resize",
            Some(&json!({"node_count": 2, "nodegroup": "default-master"})),
        );
        assert_eq!(code, 202, "{body}");
        let deadline = Instant::now() + STEP_TIMEOUT;
        while dying.child.try_wait().expect("wait").is_none() {
            assert!(Instant::now() < deadline, "{point} was never reached");
            std::thread::park_timeout(POLL);
        }
        let asked = capi
            .get(&capi.res.cluster, &stack)
            .and_then(|c| c.pointer("/spec/topology/controlPlane/replicas").cloned());
        let sent = if point == "rollback-recorded" { 1 } else { 2 };
        assert_eq!(
            asked,
            Some(json!(if point == "rollback-recorded" { 2 } else { 1 })),
            "{point}"
        );
        assert_eq!(capi.patches_sent(&stack), before + sent, "{point}");
        server = Server::start(&url, dir.path(), &["--config", &cfg]);
        cli = Cli::new(&server);
        capi.wait_cluster_object(&stack, "controlPlane.replicas back at 1", replicas(1));
        let ng = master(&cli, "failing");
        assert_eq!(ng["status"], "UPDATE_FAILED", "{point}: {ng}");
        assert_eq!(ng["node_count"], 1, "{point}");
        let resized = resize_workers(&cli, workers);
        assert_eq!(resized["node_count"].to_string(), workers, "{point}");
        assert_eq!(
            capi.patches_sent(&stack),
            before + 3,
            "{point}: the resize, one roll-back, the worker resize"
        );
    }

    // The infrastructure provider stops; 1 → 3 makes no progress within the deadline.
    struct Restart<'a>(&'a Capi);
    impl Drop for Restart<'_> {
        fn drop(&mut self) {
            self.0.script(&["provider", "start", "capd"]);
        }
    }
    capi.script(&["provider", "stop", "capd"]);
    let restart = Restart(&capi);
    let ng = cli.resize_master("failing", 3, "UPDATE_FAILED");
    let reason = ng["status_reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("Cluster API made no progress on the control plane within 60 seconds"),
        "{reason}"
    );
    assert_eq!(ng["node_count"], 1, "the previous count is restored");
    assert_eq!(master(&cli, "failing")["status"], "UPDATE_FAILED");
    capi.wait_cluster_object(&stack, "controlPlane.replicas back at 1", replicas(1));
    drop(restart);
    // Issue 29: once the provider is back, the control plane converges to what the API
    // shows, not to the 3 that failed.
    let deadline = Instant::now() + STEP_TIMEOUT;
    loop {
        let kcp = capi
            .list(
                &capi.res.control_plane,
                &format!("cluster.x-k8s.io/cluster-name={stack}"),
            )
            .pop()
            .expect("the KubeadmControlPlane");
        let at = |p: &str| kcp.pointer(p).and_then(Value::as_i64);
        if at("/spec/replicas") == Some(1)
            && at("/status/replicas") == Some(1)
            && at("/status/readyReplicas") == Some(1)
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the KCP never converged to 1: {kcp}"
        );
        std::thread::park_timeout(POLL);
    }
    let c = cli.json(&["coe", "cluster", "show", "failing"]);
    assert_eq!(c["master_count"], 1);
    assert_eq!(master(&cli, "failing")["node_count"], 1);

    cli.delete_cluster("failing");
    assert!(capi.get(&capi.res.cluster, &stack).is_none());
}

/// Faults while a control-plane scale is in flight — SIGKILL of magnum-rs after the patch,
/// the death of the Lease holder of two replicas, a kube-apiserver restart — each end
/// UPDATE_COMPLETE from the stored wait, with exactly one patch sent.
#[test]
#[ignore = "needs scripts/test.sh"]
fn faults_during_an_in_flight_scale_end_update_complete_with_one_patch() {
    let _controllers = controllers();
    let capi = Capi::connect();
    let dir = tempfile::tempdir().expect("tempdir");
    let url = database_url(dir.path());
    let lease = "magnum-rs-e2e-faults";
    let cfg = write_config(
        &capi,
        dir.path(),
        &Options {
            lease: Some(lease),
            ..Options::default()
        },
    );
    let start = |host: &str| {
        Server::start_with_env(&url, dir.path(), &["--config", &cfg], &[("HOSTNAME", host)])
    };
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(capi.client.clone(), capi.ns());
    let _ = capi.rt.block_on(leases.delete(lease, &Default::default()));
    let holder = || {
        capi.rt
            .block_on(leases.get_opt(lease))
            .ok()
            .flatten()
            .and_then(|l| l.spec)
            .and_then(|s| s.holder_identity)
            .unwrap_or_default()
    };
    let wait_holder = |who: &str| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !holder().starts_with(who) {
            assert!(
                Instant::now() < deadline,
                "{who} never took the Lease: {}",
                holder()
            );
            std::thread::park_timeout(Duration::from_millis(100));
        }
    };
    let mut a = start("replica-a");
    wait_holder("replica-a");
    let cli = Cli::new(&a);
    cli.template("capi", "v1.30.4");
    let stack = cli.cluster("faults", "capi");
    let replicas = |n: i64| {
        move |c: &Value| c.pointer("/spec/topology/controlPlane/replicas") == Some(&json!(n))
    };
    let resize = |port: u16, n: i64| {
        let (code, body) = http(
            port,
            "POST",
            "/v1/clusters/faults/actions/resize",
            Some(&json!({"node_count": n, "nodegroup": "default-master"})),
        );
        assert_eq!(code, 202, "{body}");
    };

    // 1. SIGKILL after the patch went out, then a restart on the same database.
    let p0 = capi.patches_sent(&stack);
    resize(a.port, 3);
    capi.wait_cluster_object(&stack, "controlPlane.replicas 3", replicas(3));
    a.child.kill().expect("SIGKILL");
    let _ = a.child.wait();
    let _ = capi.rt.block_on(leases.delete(lease, &Default::default()));
    let a = start("replica-a");
    let cli = Cli::new(&a);
    let ng = cli.wait_status(
        &["coe", "nodegroup", "show", "faults", "default-master"],
        STEP_TIMEOUT,
        "UPDATE_COMPLETE",
    );
    assert_eq!(ng["node_count"], 3);
    assert_eq!(capi.patches_sent(&stack), p0 + 1, "exactly one patch");

    // 2. Two replicas; the Lease holder dies mid-scale; the other finishes.
    wait_holder("replica-a");
    let mut a = a;
    let b = start("replica-b");
    let p1 = capi.patches_sent(&stack);
    resize(b.port, 1);
    capi.wait_cluster_object(&stack, "controlPlane.replicas 1", replicas(1));
    a.child.kill().expect("SIGKILL the leader");
    let _ = a.child.wait();
    wait_holder("replica-b");
    let cli = Cli::new(&b);
    let ng = cli.wait_status(
        &["coe", "nodegroup", "show", "faults", "default-master"],
        STEP_TIMEOUT,
        "UPDATE_COMPLETE",
    );
    assert_eq!(ng["node_count"], 1);
    assert_eq!(capi.patches_sent(&stack), p1 + 1, "exactly one patch");

    // 3. The kube-apiserver restarts mid-scale: watches resume or relist.
    let p2 = capi.patches_sent(&stack);
    resize(b.port, 3);
    capi.wait_cluster_object(&stack, "controlPlane.replicas 3", replicas(3));
    capi.script(&["apiserver-restart"]);
    let ng = cli.wait_status(
        &["coe", "nodegroup", "show", "faults", "default-master"],
        STEP_TIMEOUT,
        "UPDATE_COMPLETE",
    );
    assert_eq!(ng["node_count"], 3);
    assert_eq!(capi.patches_sent(&stack), p2 + 1, "exactly one patch");
    let c = cli.json(&["coe", "cluster", "show", "faults"]);
    assert_eq!(c["status"], "UPDATE_COMPLETE");
    assert_eq!(c["master_count"], 3);

    cli.delete_cluster("faults");
    let _ = capi.rt.block_on(leases.delete(lease, &Default::default()));
}
