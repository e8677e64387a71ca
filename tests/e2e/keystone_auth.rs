//! `--auth keystone` against a real Keystone (keystone 30 from PyPI, fernet tokens, started by
//! `scripts/keystone.sh` with projects demo/alt, users demo/alt/reader/admin and the
//! `magnum` service user, magnum-rs registered as `container-infra` in the catalog) and the
//! real `openstack` CLI with password auth (catalog lookup, no `--os-endpoint`). The
//! catalog also names the real Glance, Nova and Neutron (`scripts/openstack.sh`), where
//! magnum-rs looks up the images, flavors and networks the templates name.
//!
//! `scripts/test.sh` starts Keystone and sets `MAGNUM_RS_TEST_KEYSTONE` (its state
//! directory); the catalog's container-infra endpoint names a fixed port, so these tests
//! take turns (one lock) and each starts magnum-rs on that port. Without the variable they
//! fail rather than pass.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::server::Server;
use serde_json::{json, Value};

/// One magnum-rs at a time on the catalog's port; also serialises Keystone restarts.
pub(crate) static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

pub(crate) struct Keystone {
    base: PathBuf,
    pub(crate) url: String,
    magnum_port: u16,
}

impl Keystone {
    pub(crate) fn from_env() -> Keystone {
        let base = std::env::var("MAGNUM_RS_TEST_KEYSTONE").unwrap_or_else(|_| {
            panic!("MAGNUM_RS_TEST_KEYSTONE is not set: run scripts/test.sh, which starts a real Keystone")
        });
        let base = PathBuf::from(base);
        let env = std::fs::read_to_string(base.join("env")).expect("keystone env file");
        let get = |key: &str| {
            env.lines()
                .find_map(|l| l.strip_prefix(&format!("{key}=")))
                .unwrap_or_else(|| panic!("{key} missing from the keystone env file"))
                .to_string()
        };
        let magnum_url = get("MAGNUM_URL");
        let magnum_port = magnum_url
            .trim_start_matches("http://127.0.0.1:")
            .split('/')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("MAGNUM_URL names a loopback port");
        Keystone {
            url: get("KEYSTONE_URL"),
            base,
            magnum_port,
        }
    }

    fn script() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/keystone.sh")
    }

    fn stop(&self) {
        let ok = Command::new(Keystone::script())
            .arg("stop")
            .arg(&self.base)
            .status()
            .expect("keystone.sh stop");
        assert!(ok.success());
    }

    /// Starts Keystone again on the same state; new tokens live `expiration` seconds.
    fn resume(&self, expiration: Option<u32>) {
        let mut cmd = Command::new(Keystone::script());
        cmd.arg("resume").arg(&self.base);
        if let Some(s) = expiration {
            cmd.arg(s.to_string());
        }
        let ok = cmd.status().expect("keystone.sh resume");
        assert!(ok.success());
    }

    /// A project-scoped token of `user` (password `<user>-secret`).
    pub(crate) async fn token(&self, user: &str, project: &str) -> String {
        let scope = json!({"project": {"name": project, "domain": {"name": "Default"}}});
        self.issue(user, Some(scope)).await
    }

    async fn issue(&self, user: &str, scope: Option<Value>) -> String {
        let mut auth = json!({"identity": {"methods": ["password"], "password": {"user": {
            "name": user, "domain": {"name": "Default"}, "password": format!("{user}-secret")}}}});
        if let Some(s) = scope {
            auth["scope"] = s;
        }
        let resp = reqwest::Client::new()
            .post(format!("{}/auth/tokens", self.url))
            .json(&json!({ "auth": auth }))
            .send()
            .await
            .expect("keystone answers");
        assert_eq!(resp.status().as_u16(), 201, "token for {user}");
        resp.headers()["x-subject-token"]
            .to_str()
            .expect("token")
            .to_string()
    }

    /// Revokes a token with its own authority (a user may revoke their tokens).
    async fn revoke(&self, token: &str) {
        let resp = reqwest::Client::new()
            .delete(format!("{}/auth/tokens", self.url))
            .header("X-Auth-Token", token)
            .header("X-Subject-Token", token)
            .send()
            .await
            .expect("keystone answers");
        assert_eq!(resp.status().as_u16(), 204);
    }
}

pub(crate) struct Magnum {
    pub(crate) server: Server,
    dir: tempfile::TempDir,
    pub(crate) db: common::TestDb,
    args: Vec<String>,
}

/// The environment every magnum-rs of these tests gets: the service user's password.
const SERVICE_PASSWORD: (&str, &str) = ("MAGNUM_RS_KEYSTONE_PASSWORD", "magnum-secret");

/// magnum-rs with keystone auth on the catalog's port, a token cache of `cache_secs`, and
/// `extra` configuration (TOML appended).
pub(crate) async fn magnum(
    ks: &Keystone,
    cache_secs: u64,
    extra_toml: &str,
    args: &[&str],
) -> Magnum {
    magnum_with_env(ks, cache_secs, extra_toml, args, &[]).await
}

/// [`magnum`] with extra environment variables (failpoints).
pub(crate) async fn magnum_with_env(
    ks: &Keystone,
    cache_secs: u64,
    extra_toml: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Magnum {
    magnum_on(
        ks,
        cache_secs,
        extra_toml,
        args,
        env,
        common::fresh_database().await,
    )
}

/// [`magnum_with_env`] on the database `db` (a Magnum database it takes over).
pub(crate) fn magnum_on(
    ks: &Keystone,
    cache_secs: u64,
    extra_toml: &str,
    args: &[&str],
    env: &[(&str, &str)],
    db: common::TestDb,
) -> Magnum {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = dir.path().join("magnum-rs.toml");
    std::fs::write(
        &cfg,
        format!(
            "{extra_toml}\n[keystone_authtoken]\nauth_url = \"{}\"\ntoken_cache_time = {cache_secs}\n",
            ks.url
        ),
    )
    .expect("config");
    let cfg = cfg.to_string_lossy().into_owned();
    let mut all: Vec<String> = ["--auth", "keystone", "--config", cfg.as_str()]
        .map(String::from)
        .to_vec();
    all.extend(args.iter().map(|a| a.to_string()));
    let server = start(ks.magnum_port, &db.url, dir.path(), &all, env);
    Magnum {
        server,
        dir,
        db,
        args: all,
    }
}

fn start(port: u16, db: &str, dir: &Path, args: &[String], env: &[(&str, &str)]) -> Server {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut env = env.to_vec();
    env.push(SERVICE_PASSWORD);
    Server::start_at(port, db, dir, &args, &env)
}

impl Magnum {
    /// Starts the same magnum-rs again (same port, database and configuration) once the
    /// last one has ended, with `env` this time.
    pub(crate) fn restart(&mut self, env: &[(&str, &str)]) {
        let port = self.server.port;
        self.server = start(port, &self.db.url, self.dir.path(), &self.args, env);
    }
}

pub(crate) struct Reply {
    pub(crate) status: u16,
    headers: reqwest::header::HeaderMap,
    pub(crate) body: Value,
}

pub(crate) async fn call(
    port: u16,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> Reply {
    let client = reqwest::Client::new();
    let url = format!("http://127.0.0.1:{port}{path}");
    let mut req = client
        .request(method.parse().expect("method"), url)
        .header("OpenStack-API-Version", "container-infra latest")
        .header("Accept", "application/json");
    if let Some(t) = token {
        req = req.header("X-Auth-Token", t);
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.expect("magnum-rs answers");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let text = resp.text().await.expect("body");
    Reply {
        status,
        headers,
        body: serde_json::from_str(&text).unwrap_or(Value::Null),
    }
}

fn assert_keystone_401(r: &Reply, ks: &Keystone, case: &str) {
    assert_eq!(r.status, 401, "{case}: {}", r.body);
    assert_eq!(
        r.body,
        json!({"error": {"code": 401, "title": "Unauthorized",
            "message": "The request you have made requires authentication."}}),
        "{case}"
    );
    assert_eq!(
        r.headers["www-authenticate"].to_str().expect("header"),
        format!("Keystone uri=\"{}\"", ks.url),
        "{case}"
    );
}

/// Polls `GET path` until it answers `want` (bounded by `within`); returns how long it took.
async fn wait_for_status(
    port: u16,
    path: &str,
    token: &str,
    want: u16,
    within: Duration,
) -> Duration {
    let start = Instant::now();
    loop {
        let r = call(port, "GET", path, Some(token), None).await;
        if r.status == want {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < within,
            "{path} still answers {} (not {want}) after {within:?}: {}",
            r.status,
            r.body
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Polls a cluster until the operations worker has finished creating it (bounded).
async fn wait_created(port: u16, token: &str, cluster: &str) {
    let start = Instant::now();
    loop {
        let r = call(
            port,
            "GET",
            &format!("/v1/clusters/{cluster}"),
            Some(token),
            None,
        )
        .await;
        if r.body["status"] == "CREATE_COMPLETE" {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "cluster {cluster} not created: {}",
            r.body
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The real `openstack` CLI with password auth through the test Keystone's clouds.yaml.
pub(crate) struct Cli {
    bin: String,
    clouds: PathBuf,
}

impl Cli {
    pub(crate) fn new(ks: &Keystone) -> Cli {
        Cli {
            bin: std::env::var("MAGNUM_RS_OPENSTACK").unwrap_or_else(|_| {
                panic!("MAGNUM_RS_OPENSTACK is not set: run scripts/test.sh, which installs the openstack CLI")
            }),
            clouds: ks.base.join("clouds.yaml"),
        }
    }

    /// `openstack --os-cloud ks-<who> ARGS` (password auth, catalog lookup).
    pub(crate) fn run(&self, who: &str, args: &[&str]) -> (i32, String, String) {
        let out = Command::new(&self.bin)
            .env("OS_CLIENT_CONFIG_FILE", &self.clouds)
            .args(["--os-cloud", &format!("ks-{who}")])
            .args(args)
            .output()
            .expect("run openstack");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    pub(crate) fn ok(&self, who: &str, args: &[&str]) -> String {
        let (code, out, err) = self.run(who, args);
        assert_eq!(code, 0, "openstack as {who} {args:?}: {out}{err}");
        out
    }
}

#[tokio::test]
#[ignore = "needs scripts/test.sh"]
async fn cli_with_password_auth_lists_resizes_and_keeps_projects_apart() {
    let _turn = TURN.lock().await;
    let ks = Keystone::from_env();
    let m = magnum(&ks, 30, "", &[]).await;
    let cli = Cli::new(&ks);

    // demo creates a template and a cluster in project demo; alt one in project alt.
    for who in ["demo", "alt"] {
        cli.ok(
            who,
            &[
                "coe",
                "cluster",
                "template",
                "create",
                "k8s-template",
                "--coe",
                "kubernetes",
                "--image",
                "fedora-coreos",
                "--flavor",
                "m1.small",
                "--master-flavor",
                "m1.small",
                "--external-network",
                "public",
                "--labels",
                "kube_tag=v1.30.4",
            ],
        );
        cli.ok(
            who,
            &[
                "coe",
                "cluster",
                "create",
                &format!("{who}-cluster"),
                "--cluster-template",
                "k8s-template",
                "--master-count",
                "1",
                "--node-count",
                "2",
            ],
        );
    }

    let demo_list = cli.ok(
        "demo",
        &["coe", "cluster", "list", "-f", "value", "-c", "name"],
    );
    assert_eq!(demo_list.trim(), "demo-cluster");
    let nodegroups = cli.ok(
        "demo",
        &[
            "coe",
            "nodegroup",
            "list",
            "demo-cluster",
            "-f",
            "value",
            "-c",
            "name",
            "-c",
            "node_count",
        ],
    );
    assert!(nodegroups.contains("default-master 1"), "{nodegroups}");
    assert!(nodegroups.contains("default-worker 2"), "{nodegroups}");

    let resized = cli.ok("demo", &["coe", "cluster", "resize", "demo-cluster", "3"]);
    assert!(
        resized.contains("Request to resize cluster demo-cluster has been accepted."),
        "{resized}"
    );
    let count = cli.ok(
        "demo",
        &[
            "coe",
            "nodegroup",
            "show",
            "demo-cluster",
            "default-worker",
            "-f",
            "value",
            "-c",
            "node_count",
        ],
    );
    assert_eq!(count.trim(), "3");

    // alt cannot see demo's cluster, by name or by uuid.
    let uuid = cli.ok(
        "demo",
        &[
            "coe",
            "cluster",
            "show",
            "demo-cluster",
            "-f",
            "value",
            "-c",
            "uuid",
        ],
    );
    let (code, _, err) = cli.run("alt", &["coe", "cluster", "show", uuid.trim()]);
    assert_eq!(code, 1);
    assert!(
        err.contains(&format!(
            "Cluster {} could not be found (HTTP 404)",
            uuid.trim()
        )),
        "{err}"
    );
    let alt_list = cli.ok(
        "alt",
        &["coe", "cluster", "list", "-f", "value", "-c", "name"],
    );
    assert_eq!(alt_list.trim(), "alt-cluster");

    // reader (reader on demo) sees the cluster but may not resize it.
    let reader_list = cli.ok(
        "reader",
        &["coe", "cluster", "list", "-f", "value", "-c", "name"],
    );
    assert_eq!(reader_list.trim(), "demo-cluster");
    let (code, _, err) = cli.run("reader", &["coe", "cluster", "resize", "demo-cluster", "5"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("Policy doesn't allow cluster:resize to be performed (HTTP 403)"),
        "{err}"
    );

    // admin (project admin) lists every project's clusters.
    let admin_list = cli.ok(
        "admin",
        &["coe", "cluster", "list", "-f", "value", "-c", "name"],
    );
    let mut names: Vec<&str> = admin_list.lines().collect();
    names.sort_unstable();
    assert_eq!(names, ["alt-cluster", "demo-cluster"]);
    drop(m);
}

#[tokio::test]
#[ignore = "needs scripts/test.sh"]
async fn garbage_missing_revoked_unscoped_and_spoofed_tokens() {
    let _turn = TURN.lock().await;
    let ks = Keystone::from_env();
    let cache_secs = 2;
    let m = magnum(&ks, cache_secs, "", &[]).await;
    let port = m.server.port;

    // The version documents stay public.
    for path in ["/", "/v1", "/v1/"] {
        assert_eq!(
            call(port, "GET", path, None, None).await.status,
            200,
            "{path}"
        );
    }
    let r = call(port, "GET", "/v1/clusters", None, None).await;
    assert_keystone_401(&r, &ks, "no token");
    assert!(r.headers.contains_key("x-openstack-request-id"));
    let r = call(port, "GET", "/v1/clusters", Some("garbage"), None).await;
    assert_keystone_401(&r, &ks, "garbage token");
    let r = call(
        port,
        "GET",
        "/clusters",
        Some("gAAAAABrEBsvG4VY0_33GJ"),
        None,
    )
    .await;
    assert_keystone_401(&r, &ks, "fernet-looking token, unversioned path");

    // Unscoped: admin has no default project, so a password login without scope is
    // unscoped. keystonemiddleware would pass it on; magnum-rs refuses it.
    let unscoped = ks.issue("admin", None).await;
    let r = call(port, "GET", "/v1/clusters", Some(&unscoped), None).await;
    assert_keystone_401(&r, &ks, "unscoped token");

    // Identity headers sent by the client are ignored: demo stays demo.
    let demo = ks.token("demo", "demo").await;
    let resp = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/v1/clustertemplates"))
        .header("X-Auth-Token", &demo)
        .header("X-Roles", "admin")
        .header("X-Project-Id", "someone-else")
        .header("OpenStack-API-Version", "container-infra latest")
        .json(
            &json!({"name": "t", "coe": "kubernetes", "image_id": "fedora-coreos", "public": true}),
        )
        .send()
        .await
        .expect("answer");
    assert_eq!(
        resp.status().as_u16(),
        403,
        "a member may not publish a template"
    );
    let body: Value = resp.json().await.expect("json");
    assert_eq!(
        body["errors"][0]["detail"],
        "Not authorized to set public or hidden flag for cluster template."
    );

    // A system-scoped admin token is refused by Magnum's project-scoped rules (403).
    let system = ks
        .issue("admin", Some(json!({"system": {"all": true}})))
        .await;
    let r = call(port, "GET", "/v1/clusters", Some(&system), None).await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(
        r.body["errors"][0]["detail"],
        "Policy doesn't allow cluster:get_all to be performed."
    );

    // Revoked: valid (and cached) first, refused within the cache time after revocation.
    assert_eq!(
        call(port, "GET", "/v1/clusters", Some(&demo), None)
            .await
            .status,
        200
    );
    ks.revoke(&demo).await;
    let took = wait_for_status(
        port,
        "/v1/clusters",
        &demo,
        401,
        Duration::from_secs(cache_secs + 5),
    )
    .await;
    assert!(
        took <= Duration::from_secs(cache_secs + 1),
        "revocation took {took:?}, cache time {cache_secs}s"
    );
    let r = call(port, "GET", "/v1/clusters", Some(&demo), None).await;
    assert_keystone_401(&r, &ks, "revoked token");
}

#[tokio::test]
#[ignore = "needs scripts/test.sh"]
async fn expired_tokens_get_401() {
    let _turn = TURN.lock().await;
    let ks = Keystone::from_env();
    // Tokens issued from now on live 6 seconds.
    ks.resume(Some(6));
    let m = magnum(&ks, 30, "", &[]).await;
    let port = m.server.port;
    let short = ks.token("demo", "demo").await;
    let first = call(port, "GET", "/v1/clusters", Some(&short), None).await;
    ks.resume(None);
    assert_eq!(first.status, 200, "{}", first.body);
    // The cache (30 s) never outlives the token's own expiry.
    wait_for_status(port, "/v1/clusters", &short, 401, Duration::from_secs(20)).await;
    let r = call(port, "GET", "/v1/clusters", Some(&short), None).await;
    assert_keystone_401(&r, &ks, "expired token");
}

#[tokio::test]
#[ignore = "needs scripts/test.sh"]
async fn keystone_down_is_a_503_and_requests_succeed_once_it_is_back() {
    let _turn = TURN.lock().await;
    let ks = Keystone::from_env();
    let m = magnum(&ks, 30, "", &[]).await;
    let port = m.server.port;
    // Warm up: magnum-rs holds a service token; this user token is not validated yet.
    let warm = ks.token("demo", "demo").await;
    assert_eq!(
        call(port, "GET", "/v1/clusters", Some(&warm), None)
            .await
            .status,
        200
    );
    let fresh = ks.token("demo", "demo").await;

    ks.stop();
    let down = call(port, "GET", "/v1/clusters", Some(&fresh), None).await;
    ks.resume(None);
    assert_eq!(down.status, 503, "{}", down.body);
    let e = &down.body["errors"][0];
    assert_eq!(e["status"], 503);
    assert!(
        e["detail"]
            .as_str()
            .is_some_and(|d| d.contains("Keystone is unreachable")),
        "{down:?}",
        down = down.body
    );
    let log = m.server.log_text();
    assert!(!log.contains(&fresh), "a token reached the log");
    assert!(
        !log.contains("magnum-secret"),
        "the service password reached the log"
    );

    let back = call(port, "GET", "/v1/clusters", Some(&fresh), None).await;
    assert_eq!(back.status, 200, "{}", back.body);
}

#[tokio::test]
#[ignore = "needs scripts/test.sh"]
async fn policy_yaml_letting_readers_resize_turns_the_readers_403_into_202() {
    let _turn = TURN.lock().await;
    let ks = Keystone::from_env();
    let demo = ks.token("demo", "demo").await;
    let reader = ks.token("reader", "demo").await;
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "\"cluster:resize\": \"role:reader and project_id:%(project_id)s\"\n",
    )
    .expect("policy file");

    let mut outcomes = Vec::new();
    for override_file in [None, Some(policy.to_string_lossy().into_owned())] {
        let args: Vec<&str> = match &override_file {
            Some(p) => vec!["--policy-file", p.as_str()],
            None => vec![],
        };
        let m = magnum(&ks, 30, "", &args).await;
        let port = m.server.port;
        let t = call(
            port,
            "POST",
            "/v1/clustertemplates",
            Some(&demo),
            Some(
                json!({"name": "k8s", "coe": "kubernetes", "image_id": "fedora-coreos",
                "flavor_id": "m1.small", "master_flavor_id": "m1.small"}),
            ),
        )
        .await;
        assert_eq!(t.status, 201, "{}", t.body);
        let c = call(
            port,
            "POST",
            "/v1/clusters",
            Some(&demo),
            Some(json!({"name": "k8s", "cluster_template_id": "k8s", "node_count": 1})),
        )
        .await;
        assert_eq!(c.status, 202, "{}", c.body);
        let uuid = c.body["uuid"].as_str().expect("uuid").to_string();
        wait_created(port, &demo, &uuid).await;
        let r = call(
            port,
            "POST",
            &format!("/v1/clusters/{uuid}/actions/resize"),
            Some(&reader),
            Some(json!({"node_count": 2})),
        )
        .await;
        outcomes.push((r.status, r.body["errors"][0]["detail"].clone()));
    }
    assert_eq!(
        outcomes,
        vec![
            (
                403,
                json!("Policy doesn't allow cluster:resize to be performed.")
            ),
            (202, Value::Null)
        ]
    );
}
