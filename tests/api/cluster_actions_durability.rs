//! Issue 3: an accepted resize survives the process that accepted it.
//!
//! The real binary is started three times on one database (SQLite in a temp dir, or a
//! fresh MariaDB database when `MAGNUM_RS_TEST_MYSQL_URL` is set) with the record-only
//! drivers journaling their calls:
//!
//! 1. with the worker: a template and a cluster are created and the cluster completes;
//!    the process is stopped with SIGTERM;
//! 2. with `--no-worker`: a control-plane resize to 3 is accepted (202), then the process is
//!    killed (SIGKILL) before any driver saw it;
//! 3. with the worker again: the recorded resize is handed to the driver exactly once and
//!    the master nodegroup ends at 3 nodes, `UPDATE_COMPLETE`.

use crate::common;

use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::raw_http::send;
use serde_json::{json, Value};

const PROJECT: &str = common::PROJECT;
const STARTUP: Duration = Duration::from_secs(60);
const SETTLE: Duration = Duration::from_secs(30);
const POLL: Duration = Duration::from_millis(50);

// ---------------------------------------------------------------------------------------
// Requests (common::raw_http, one per connection).
// ---------------------------------------------------------------------------------------

struct Response {
    status: u16,
    body: Value,
}

fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> std::io::Result<Response> {
    let mut headers = vec![
        ("Accept", "application/json"),
        ("X-Project-Id", PROJECT),
        ("X-User-Id", "u-demo"),
        ("X-Roles", "reader,member"),
        ("OpenStack-API-Version", "container-infra latest"),
    ];
    let payload = body.map(Value::to_string);
    if payload.is_some() {
        headers.push(("Content-Type", "application/json"));
    }
    let r = send(
        &addr.to_string(),
        &addr.to_string(),
        method,
        path,
        &headers,
        payload.as_deref(),
        Duration::from_secs(30),
    )?;
    Ok(Response {
        status: r.status,
        body: r.json(),
    })
}

// ---------------------------------------------------------------------------------------
// The server process.
// ---------------------------------------------------------------------------------------

struct Server {
    child: Option<Child>,
    addr: SocketAddr,
    log: PathBuf,
}

fn free_port() -> u16 {
    let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind an ephemeral port");
    l.local_addr().expect("local addr").port()
}

impl Server {
    /// Starts `magnum-rs serve` on a free loopback port and waits until `GET /` answers.
    fn start(dir: &Path, database_url: &str, journal: &Path, worker: bool, run: &str) -> Server {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()));
        let config = dir.join(format!("magnum-rs-{run}.toml"));
        let toml = format!(
            "bind = {bind}\ndatabase_url = {db}\n\n[drivers]\njournal = {journal}\n",
            bind = toml_str(&addr.to_string()),
            db = toml_str(database_url),
            journal = toml_str(&journal.display().to_string()),
        );
        std::fs::write(&config, toml).expect("write config");
        let log = dir.join(format!("server-{run}.log"));
        let out = File::create(&log).expect("log file");
        let err = out.try_clone().expect("log file");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_magnum-rs"));
        cmd.arg("--config").arg(&config).arg("serve");
        if !worker {
            cmd.arg("--no-worker");
        }
        for var in [
            "MAGNUM_RS_CONFIG",
            "MAGNUM_RS_BIND",
            "MAGNUM_RS_DATABASE_URL",
            "MAGNUM_RS_AUTH",
            "MAGNUM_RS_POLICY_FILE",
        ] {
            cmd.env_remove(var);
        }
        let child = cmd
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .spawn()
            .expect("start magnum-rs");
        let mut server = Server {
            child: Some(child),
            addr,
            log,
        };
        server.wait_ready();
        server
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + STARTUP;
        loop {
            if let Ok(r) = request(self.addr, "GET", "/", None) {
                if r.status == 200 {
                    return;
                }
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!(
                    "magnum-rs exited during start-up ({status}):\n{}",
                    self.logs()
                );
            }
            assert!(
                Instant::now() < deadline,
                "magnum-rs not ready within {STARTUP:?}:\n{}",
                self.logs()
            );
            std::thread::sleep(POLL);
        }
    }

    fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Response {
        request(self.addr, method, path, body.as_ref())
            .unwrap_or_else(|e| panic!("{method} {path}: {e}\n{}", self.logs()))
    }

    /// Polls `path` until `done` holds for its body.
    fn wait_for(&self, path: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + SETTLE;
        loop {
            let r = self.call("GET", path, None);
            if r.status == 200 && done(&r.body) {
                return r.body;
            }
            assert!(
                Instant::now() < deadline,
                "{what} not reached within {SETTLE:?}; last answer {} {}\n{}",
                r.status,
                r.body,
                self.logs()
            );
            std::thread::sleep(POLL);
        }
    }

    /// SIGTERM, then waits for the graceful exit.
    fn terminate(mut self) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        let signalled = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status()
            .expect("run kill");
        assert!(signalled.success(), "kill -TERM failed");
        let deadline = Instant::now() + SETTLE;
        loop {
            if let Some(status) = child.try_wait().expect("wait") {
                return status;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "magnum-rs did not stop on SIGTERM within {SETTLE:?}:\n{}",
                    self.logs()
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// SIGKILL: the process gets no chance to finish anything.
    fn kill(mut self) {
        let mut child = self.child.take().expect("running");
        child.kill().expect("SIGKILL");
        child.wait().expect("reap");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A TOML basic string.
fn toml_str(s: &str) -> String {
    serde_json::to_string(s).expect("string")
}

fn journal_lines(journal: &Path) -> Vec<Value> {
    std::fs::read_to_string(journal)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("journal line {l:?}: {e}")))
        .collect()
}

fn calls_of<'a>(lines: &'a [Value], call: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["call"] == call).collect()
}

// ---------------------------------------------------------------------------------------
// The test.
// ---------------------------------------------------------------------------------------

#[test]
fn an_accepted_control_plane_resize_survives_a_killed_process_and_reaches_the_driver_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    // SQLite file, or a fresh MariaDB database, the way the shared harness makes them.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let db = rt.block_on(common::fresh_database());
    drop(rt);
    let journal = dir.path().join("journal.jsonl");

    // 1. With the worker: template and cluster, created to completion; then SIGTERM.
    let first = Server::start(dir.path(), &db.url, &journal, true, "1-create");
    let r = first.call(
        "POST",
        "/v1/clustertemplates",
        Some(json!({
            "name": "capi", "coe": "kubernetes", "image_id": "ubuntu-2204-kube",
            "cluster_distro": "ubuntu", "flavor_id": "m1.medium", "master_flavor_id": "m1.large",
            "keypair_id": "default", "master_lb_enabled": true,
        })),
    );
    assert_eq!(r.status, 201, "template create: {}", r.body);
    let r = first.call(
        "POST",
        "/v1/clusters",
        Some(json!({"name": "k8s", "cluster_template_id": "capi", "master_count": 1, "node_count": 1})),
    );
    assert_eq!(r.status, 202, "cluster create: {}", r.body);
    let uuid = r.body["uuid"].as_str().expect("cluster uuid").to_string();
    first.wait_for("/v1/clusters/k8s", "CREATE_COMPLETE", |c| {
        c["status"] == "CREATE_COMPLETE"
    });
    let stopped = first.terminate();
    assert!(
        stopped.success(),
        "SIGTERM ends magnum-rs cleanly: {stopped}"
    );
    assert_eq!(
        calls_of(&journal_lines(&journal), "create_cluster").len(),
        1
    );

    // 2. Without the worker: the resize is accepted and recorded, then the process dies.
    let second = Server::start(dir.path(), &db.url, &journal, false, "2-accept");
    let r = second.call(
        "POST",
        "/v1/clusters/k8s/actions/resize",
        Some(json!({"node_count": 3, "nodegroup": "default-master"})),
    );
    assert_eq!(r.status, 202, "resize: {}", r.body);
    assert_eq!(r.body, json!({"uuid": uuid}));
    let r = second.call("GET", "/v1/clusters/k8s/nodegroups/default-master", None);
    assert_eq!(r.status, 200, "nodegroup show: {}", r.body);
    assert_eq!(r.body["node_count"], 3);
    assert_eq!(r.body["status"], "UPDATE_IN_PROGRESS");
    assert!(
        calls_of(&journal_lines(&journal), "resize").is_empty(),
        "no driver ran the resize yet"
    );
    second.kill();

    // 3. With the worker again: the recorded resize runs, once.
    let third = Server::start(dir.path(), &db.url, &journal, true, "3-resume");
    let master = third.wait_for(
        "/v1/clusters/k8s/nodegroups/default-master",
        "default-master at 3 nodes, UPDATE_COMPLETE",
        |ng| ng["node_count"] == 3 && ng["status"] == "UPDATE_COMPLETE",
    );
    assert_eq!(master["node_count"], 3);
    let cluster = third.wait_for("/v1/clusters/k8s", "cluster UPDATE_COMPLETE", |c| {
        c["status"] == "UPDATE_COMPLETE"
    });
    assert_eq!(cluster["master_count"], 3);
    assert_eq!(cluster["node_count"], 1);
    let stopped = third.terminate();
    assert!(
        stopped.success(),
        "SIGTERM ends magnum-rs cleanly: {stopped}"
    );

    let lines = journal_lines(&journal);
    let resizes = calls_of(&lines, "resize");
    assert_eq!(
        resizes,
        vec![&json!({
            "call": "resize", "cluster": uuid, "nodegroup": "default-master",
            "node_count": 3, "nodes_to_remove": [],
        })],
        "journal: {lines:?}"
    );
    assert_eq!(
        calls_of(&lines, "create_cluster").len(),
        1,
        "journal: {lines:?}"
    );
}
