//! The ClusterAPI driver against a **real kube-apiserver** (built from Go source, etcd from
//! `etcd-bin-vendored`, Cluster API CRDs installed; `scripts/kube.sh`). No CAPI controllers
//! run: these narrow cases play them by writing objects and `status` through `/status`
//! (a workload CA Secret of our own; a create nobody works on). Everything the real
//! controllers do is tested in tests/serial/capi_e2e.rs.
//! `scripts/test.sh` starts the server and sets `MAGNUM_RS_TEST_KUBECONFIG`; without it these
//! tests fail rather than pass silently.

use crate::common;

use std::time::{Duration, Instant};

use common::server::{http, Server};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use magnum_rs::drivers::cluster_api::topology::Resources;
use serde_json::{json, Value};

struct Kube {
    client: kube::Client,
    ns: String,
    res: Resources,
    kubeconfig: String,
}

impl Kube {
    async fn connect() -> Kube {
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
            "magnum-test-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        let nss: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
        let body: k8s_openapi::api::core::v1::Namespace =
            serde_json::from_value(json!({"metadata": {"name": ns}})).expect("namespace");
        nss.create(&PostParams::default(), &body)
            .await
            .expect("create namespace");
        Kube {
            client,
            ns,
            res: Resources::at("v1beta2"),
            kubeconfig,
        }
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

    async fn merge(&self, ar: &kube::api::ApiResource, name: &str, patch: Value) -> Value {
        let o = self
            .api(ar)
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("patch");
        serde_json::to_value(o).expect("json")
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

    /// Plays the KCP controller: spec replicas, then status counters all at `n`.
    async fn control_plane_at(&self, stack: &str, n: i64) {
        let name = format!("{stack}-control-plane");
        let o = self
            .merge(
                &self.res.control_plane,
                &name,
                json!({"spec": {"replicas": n}}),
            )
            .await;
        let generation = o
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        self.status(&self.res.control_plane, &name, json!({"observedGeneration": generation, "replicas": n,
            "readyReplicas": n, "availableReplicas": n, "upToDateReplicas": n, "version": "v1.30.4"}))
            .await;
    }

    /// Plays the MachineDeployment controller for nodegroup `ng`.
    async fn workers_at(&self, stack: &str, ng: &str, n: i64) {
        let name = format!("{stack}-{ng}");
        let o = self
            .merge(
                &self.res.machine_deployment,
                &name,
                json!({"spec": {"replicas": n}}),
            )
            .await;
        let generation = o
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        self.status(
            &self.res.machine_deployment,
            &name,
            json!({"observedGeneration": generation, "replicas": n,
            "readyReplicas": n, "availableReplicas": n, "upToDateReplicas": n}),
        )
        .await;
    }

    /// What the topology controller would create for a new cluster: the KCP and one MD per
    /// worker entry, with the labels Cluster API puts on them.
    async fn materialize(&self, stack: &str) {
        // The infrastructure provider publishes the control-plane endpoint.
        let c = self
            .merge(
                &self.res.cluster,
                stack,
                json!({"spec": {"controlPlaneEndpoint": {"host": "203.0.113.10", "port": 6443}}}),
            )
            .await;
        let cp = c
            .pointer("/spec/topology/controlPlane/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(1);
        self.create(&self.res.control_plane, json!({
            "apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane",
            "metadata": {"name": format!("{stack}-control-plane"), "namespace": self.ns,
                         "labels": {"cluster.x-k8s.io/cluster-name": stack}},
            "spec": {"replicas": cp, "version": "v1.30.4",
                     "machineTemplate": {"spec": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io",
                                                                         "kind": "OpenStackMachineTemplate", "name": "cp"}}}},
        })).await;
        self.control_plane_at(stack, cp).await;
        self.status(
            &self.res.cluster,
            stack,
            json!({"conditions": [{"type": "ControlPlaneAvailable", "status": "True",
            "reason": "Available", "message": "", "lastTransitionTime": "2026-12-02T00:00:00Z"}]}),
        )
        .await;
        for md in c
            .pointer("/spec/topology/workers/machineDeployments")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
        {
            let ng = md["name"].as_str().unwrap_or_default().to_string();
            self.create_md(stack, &ng, md["replicas"].as_i64().unwrap_or(1))
                .await;
        }
    }

    async fn create_md(&self, stack: &str, ng: &str, n: i64) {
        self.create(&self.res.machine_deployment, json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
            "metadata": {"name": format!("{stack}-{ng}"), "namespace": self.ns,
                         "labels": {"cluster.x-k8s.io/cluster-name": stack, "topology.cluster.x-k8s.io/deployment-name": ng}},
            "spec": {"clusterName": stack, "replicas": n,
                     "selector": {"matchLabels": {"topology.cluster.x-k8s.io/deployment-name": ng}},
                     "template": {"metadata": {"labels": {"topology.cluster.x-k8s.io/deployment-name": ng}},
                                  "spec": {"clusterName": stack,
                                           "bootstrap": {"configRef": {"apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfigTemplate", "name": "w"}},
                                           "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "OpenStackMachineTemplate", "name": "w"}}}},
        })).await;
        self.workers_at(stack, ng, n).await;
    }
}

/// The server's database: MariaDB when the suite runs on it, else a SQLite file in `dir`.
async fn database_url(dir: &std::path::Path) -> String {
    match std::env::var("MAGNUM_RS_TEST_MYSQL_URL") {
        Ok(base) if !base.is_empty() => common::fresh_database().await.url,
        _ => format!("sqlite://{}", dir.join("capi.db").display()),
    }
}

async fn start_server(kube: &Kube, dir: &std::path::Path, url: &str) -> Server {
    let config = dir.join("magnum-rs.toml");
    std::fs::write(
        &config,
        format!(
            "[drivers.cluster_api]\nnamespace = \"{}\"\nprogress_deadline_seconds = 600\n\
             [[drivers.cluster_api.management_clusters]]\nname = \"test\"\nkubeconfig = \"{}\"\n",
            kube.ns, kube.kubeconfig
        ),
    )
    .expect("config");
    let cfg = config.display().to_string();
    Server::start(url, dir, &["--config", &cfg])
}

/// Polls `GET path` until `check` holds (bounded; the server's watchers work meanwhile).
fn wait_for(port: u16, path: &str, what: &str, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, body) = http(port, "GET", path, None);
        if check(&body) {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; last: {body}"
        );
        std::thread::park_timeout(Duration::from_millis(100));
    }
}

async fn wait_object(
    kube: &Kube,
    ar: &kube::api::ApiResource,
    name: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(o) = kube.api(ar).get(name).await {
            let v = serde_json::to_value(o).expect("json");
            if check(&v) {
                return v;
            }
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::task::yield_now().await;
    }
}

fn openstack(server: &Server, args: &[&str]) -> (i32, String, String) {
    let bin = std::env::var("MAGNUM_RS_OPENSTACK")
        .unwrap_or_else(|_| panic!("MAGNUM_RS_OPENSTACK is not set: run scripts/test.sh"));
    let out = std::process::Command::new(bin)
        .args([
            "--os-auth-type",
            "none",
            "--os-endpoint",
            &server.endpoint(),
        ])
        .args(args)
        // `coe cluster config` reads $SHELL to choose between `export` and `setenv`
        // (magnumclient's utils.config_cluster does `os.environ['SHELL']`); a user's
        // terminal always sets it, a CI runner need not.
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

/// Creates template and cluster through the API as the noauth default identity would (the
/// CLI sends no identity headers), and plays the topology controller until CREATE_COMPLETE.
async fn cluster_on_capi(kube: &Kube, server: &Server) -> (String, String) {
    let cli = |args: &[&str]| {
        let (code, out, err) = openstack(server, args);
        assert_eq!(code, 0, "openstack {args:?}: {out}{err}");
        out
    };
    cli(&[
        "coe",
        "cluster",
        "template",
        "create",
        "capi",
        "--coe",
        "kubernetes",
        "--image",
        "ubuntu-2204",
        "--external-network",
        "public",
        "--master-lb-enabled",
        "--labels",
        "kube_tag=v1.30.4,capi_cluster_class=magnum-v0.38.1",
    ]);
    cli(&[
        "coe",
        "cluster",
        "create",
        "k8s",
        "--cluster-template",
        "capi",
        "--master-count",
        "1",
        "--node-count",
        "2",
    ]);
    let shown = wait_for_cli(
        server,
        &["coe", "cluster", "show", "k8s", "-f", "json"],
        "stack id",
        |v| {
            v["cluster_id"]
                .as_str()
                .is_some_and(|s| s.starts_with("kube-"))
        },
    );
    let stack = shown["cluster_id"].as_str().unwrap_or_default().to_string();
    let uuid = shown["uuid"].as_str().unwrap_or_default().to_string();
    let c = wait_object(
        kube,
        &kube.res.cluster,
        &stack,
        "the Cluster object",
        |_| true,
    )
    .await;
    assert_eq!(
        c.pointer("/spec/topology/controlPlane/replicas"),
        Some(&json!(1)),
        "{c}"
    );
    assert_eq!(c.pointer("/spec/topology/version"), Some(&json!("v1.30.4")));
    assert_eq!(
        c.pointer("/spec/topology/classRef/name"),
        Some(&json!("magnum-v0.38.1"))
    );
    assert_eq!(
        c.pointer("/metadata/labels/cluster-uuid"),
        Some(&json!(uuid))
    );
    kube.materialize(&stack).await;
    wait_for_cli(
        server,
        &["coe", "cluster", "show", "k8s", "-f", "json"],
        "CREATE_COMPLETE",
        |v| v["status"] == "CREATE_COMPLETE",
    );
    (stack, uuid)
}

fn wait_for_cli(
    server: &Server,
    args: &[&str],
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (code, out, _) = openstack(server, args);
        let v: Value = serde_json::from_str(&out).unwrap_or(Value::Null);
        if code == 0 && check(&v) {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; last: {out}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs scripts/test.sh"]
async fn no_progress_within_the_deadline_is_update_failed_with_a_reason() {
    create_without_progress_fails_at_the_deadline(&[]).await;
}

/// The Cluster's watch event reaches the controller before the create's operation is stored
/// as waiting (as it often does on MariaDB): the controller's look then finds nothing
/// waiting, so the deadline is scheduled only by the look the worker asks for once the
/// operation waits, under the backend cluster's name the create has just stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs scripts/test.sh"]
async fn a_create_seen_by_the_controller_before_it_waits_still_fails_at_its_deadline() {
    create_without_progress_fails_at_the_deadline(&[(
        "MAGNUM_RS_TEST_FAILPOINTS",
        "before-waiting",
    )])
    .await;
}

async fn create_without_progress_fails_at_the_deadline(env: &[(&str, &str)]) {
    let kube = Kube::connect().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("magnum-rs.toml");
    std::fs::write(
        &config,
        format!(
            "[drivers.cluster_api]\nnamespace = \"{}\"\nprogress_deadline_seconds = 2\n\
             [[drivers.cluster_api.management_clusters]]\nname = \"test\"\nkubeconfig = \"{}\"\n",
            kube.ns, kube.kubeconfig
        ),
    )
    .expect("config");
    let url = database_url(dir.path()).await;
    let cfg = config.display().to_string();
    let server = Server::start_with_env(&url, dir.path(), &["--config", &cfg], env);
    let port = server.port;
    let (code, _) = http(
        port,
        "POST",
        "/v1/clustertemplates",
        Some(&json!({"name": "capi", "coe": "kubernetes",
        "image_id": "img", "cluster_distro": "ubuntu", "labels": {"kube_tag": "v1.30.4"}})),
    );
    assert_eq!(code, 201);
    let (code, _) = http(
        port,
        "POST",
        "/v1/clusters",
        Some(&json!({"name": "k8s", "cluster_template_id": "capi"})),
    );
    assert_eq!(code, 202);
    // Nobody plays the controller: the create makes no progress.
    let c = wait_for(port, "/v1/clusters/k8s", "CREATE_FAILED", |v| {
        v["status"] == "CREATE_FAILED"
    });
    let reason = c["status_reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("Cluster API made no progress on"),
        "{reason}"
    );
    assert!(reason.contains("within 2 seconds"), "{reason}");
}

/// Decodes a kubeconfig's base64 `*-data` field (k8s-openapi's `ByteString` is base64).
fn kubeconfig_data(v: &serde_yaml_ng::Value, path: &[&str]) -> String {
    let mut cur = v;
    for key in path {
        cur = match key.parse::<usize>() {
            Ok(i) => &cur[i],
            Err(_) => &cur[*key],
        };
    }
    let b64 = cur.as_str().unwrap_or_else(|| panic!("{path:?} missing"));
    let bytes: k8s_openapi::ByteString = serde_json::from_value(json!(b64)).expect("base64");
    String::from_utf8(bytes.0).expect("utf-8")
}

fn pem_der(pem: &str) -> Vec<u8> {
    x509_parser::pem::parse_x509_pem(pem.as_bytes())
        .expect("pem")
        .1
        .contents
}

/// `openstack coe cluster config --use-certificate` on a ClusterAPI cluster: the create wrote
/// the CAs Magnum's conductor made into the Secrets Cluster API's kubeadm control plane reads
/// (`<stack>-ca`, `-etcd`, `-proxy`, `-sa`), so the kubeconfig carries that CA and a client
/// certificate (the CLI's own key and CSR) signed by it. A cluster without stored CAs (made
/// before magnum-rs kept them) is answered from the Secret: not available (409) until it
/// exists. Rotation is refused as magnum-cluster-api refuses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs scripts/test.sh"]
async fn cluster_config_writes_a_kubeconfig_signed_by_magnums_ca_in_cluster_apis_secret() {
    use x509_parser::prelude::{FromDer as _, X509Certificate};

    let kube = Kube::connect().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let url = database_url(dir.path()).await;
    let server = start_server(&kube, dir.path(), &url).await;
    let (stack, uuid) = cluster_on_capi(&kube, &server).await;
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(kube.client.clone(), &kube.ns);
    let secret_crt = |name: String| {
        let secrets = secrets.clone();
        async move {
            let s = secrets.get(&name).await.expect("CA Secret");
            assert_eq!(s.type_.as_deref(), Some("cluster.x-k8s.io/secret"));
            assert!(s.metadata.owner_references.unwrap_or_default().is_empty());
            let data = s.data.unwrap_or_default();
            assert!(
                String::from_utf8_lossy(&data["tls.key"].0).contains("BEGIN PRIVATE KEY"),
                "an opened PKCS#8 key"
            );
            String::from_utf8(data["tls.crt"].0.clone()).expect("utf-8")
        }
    };
    for (ca_cert_type, suffix) in [
        ("kubernetes", "ca"),
        ("etcd", "etcd"),
        ("front-proxy", "proxy"),
    ] {
        let (code, body) = http(
            server.port,
            "GET",
            &format!("/v1/certificates/{uuid}?ca_cert_type={ca_cert_type}"),
            None,
        );
        assert_eq!(code, 200, "{body}");
        assert_eq!(
            body["pem"],
            json!(secret_crt(format!("{stack}-{suffix}")).await)
        );
    }
    secret_crt(format!("{stack}-sa")).await;

    let out_dir = dir.path().join("kubeconfig");
    std::fs::create_dir_all(&out_dir).expect("dir");
    let out_arg = out_dir.display().to_string();
    let (code, out, err) = openstack(
        &server,
        &[
            "coe",
            "cluster",
            "config",
            "k8s",
            "--dir",
            &out_arg,
            "--use-certificate",
            "--force",
        ],
    );
    assert_eq!(code, 0, "cluster config: {out}{err}");
    let text = std::fs::read_to_string(out_dir.join("config")).expect("kubeconfig written");
    let cfg: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).expect("yaml");
    assert_eq!(
        cfg["clusters"][0]["cluster"]["server"],
        "https://203.0.113.10:6443"
    );

    // The CA in the kubeconfig is the one in the kube-apiserver's Secret.
    let held = secrets.get(&format!("{stack}-ca")).await.expect("secret");
    let held_crt = held
        .data
        .and_then(|d| d.get("tls.crt").cloned())
        .map(|b| String::from_utf8(b.0).expect("utf-8"))
        .expect("tls.crt");
    let ca_in_config = kubeconfig_data(
        &cfg,
        &["clusters", "0", "cluster", "certificate-authority-data"],
    );
    assert_eq!(ca_in_config.trim(), held_crt.trim());

    // The client certificate verifies against that CA.
    let client = kubeconfig_data(&cfg, &["users", "0", "user", "client-certificate-data"]);
    let ca_der = pem_der(&held_crt);
    let (_, ca) = X509Certificate::from_der(&ca_der).expect("CA certificate");
    let client_der = pem_der(&client);
    let (_, cert) = X509Certificate::from_der(&client_der).expect("client certificate");
    cert.verify_signature(Some(ca.public_key()))
        .expect("the client certificate is signed by the cluster CA");
    assert_eq!(cert.issuer(), ca.subject());
    assert_eq!(cert.subject().to_string(), "CN=admin, O=system:masters");
    assert!(cert.validity().is_valid());
    assert!(
        kubeconfig_data(&cfg, &["users", "0", "user", "client-key-data"]).contains("PRIVATE KEY")
    );

    // Magnum's shapes: GET is the CA with links, POST echoes the request with the signed pem.
    let (code, shown) = http(
        server.port,
        "GET",
        &format!("/v1/certificates/{uuid}"),
        None,
    );
    assert_eq!(code, 200);
    assert_eq!(
        shown,
        json!({"cluster_uuid": uuid, "pem": held_crt,
               "links": [{"href": format!("http://127.0.0.1/v1/certificates/{uuid}"), "rel": "self"},
                         {"href": format!("http://127.0.0.1/certificates/{uuid}"), "rel": "bookmark"}]})
    );
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::default();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "kubelet-client");
    let csr = params
        .serialize_request(&key)
        .expect("csr")
        .pem()
        .expect("pem");
    let (code, signed) = http(
        server.port,
        "POST",
        "/v1/certificates",
        Some(&json!({"cluster_uuid": "k8s", "csr": csr})),
    );
    assert_eq!(code, 201, "{signed}");
    let keys: Vec<&str> = signed
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["cluster_uuid", "csr", "pem", "links"]);
    assert_eq!(signed["cluster_uuid"], json!(uuid));
    assert_eq!(signed["csr"], json!(csr));
    let (code, bad) = http(
        server.port,
        "POST",
        "/v1/certificates",
        Some(&json!({"cluster_uuid": "k8s", "csr": "not a csr"})),
    );
    assert_eq!(code, 400);
    assert_eq!(
        bad["errors"][0]["detail"],
        "Received invalid csr not a csr."
    );

    // The CLI's CA view is the same certificate.
    let (code, out, err) = openstack(&server, &["coe", "ca", "show", "k8s"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.trim(), held_crt.trim());

    // Rotation is refused.
    let (code, body) = http(
        server.port,
        "PATCH",
        &format!("/v1/certificates/{uuid}"),
        None,
    );
    assert_eq!(code, 400, "{body}");
    assert_eq!(
        body["errors"][0]["detail"],
        "'rotate_ca_certificate' is not supported by this driver."
    );

    // A cluster without stored CAs: Cluster API's Secret answers, 409 until it exists.
    let store = magnum_rs::store::Store::connect(&url).await.expect("store");
    sqlx::query("UPDATE cluster SET ca_cert_ref = NULL, etcd_ca_cert_ref = NULL WHERE uuid = ?")
        .bind(&uuid)
        .execute(&mut store.side_connection().await.expect("connection"))
        .await
        .expect("forget the stored CAs");
    secrets
        .delete(&format!("{stack}-etcd"), &Default::default())
        .await
        .expect("delete the etcd CA Secret");
    let (code, body) = http(
        server.port,
        "GET",
        &format!("/v1/certificates/{uuid}?ca_cert_type=etcd"),
        None,
    );
    assert_eq!(code, 409, "{body}");
    assert_eq!(
        body["errors"][0]["detail"],
        format!("The CA certificate of cluster {uuid} is not available yet")
    );
    let ca_crt = include_str!("../fixtures/capi-ca/tls.crt");
    let ca_key = include_str!("../fixtures/capi-ca/tls.key");
    let secret: k8s_openapi::api::core::v1::Secret = serde_json::from_value(json!({
        "metadata": {"name": format!("{stack}-etcd"), "labels": {"cluster.x-k8s.io/cluster-name": stack}},
        "type": "cluster.x-k8s.io/secret",
        "stringData": {"tls.crt": ca_crt, "tls.key": ca_key},
    }))
    .expect("secret");
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .expect("create CA secret");
    let (code, body) = http(
        server.port,
        "GET",
        &format!("/v1/certificates/{uuid}?ca_cert_type=etcd"),
        None,
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["pem"], json!(ca_crt));
    let (code, body) = http(
        server.port,
        "GET",
        &format!("/v1/certificates/{uuid}"),
        None,
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["pem"], json!(secret_crt(format!("{stack}-ca")).await));
}
