//! The operator endpoints of the real binary: `/healthz`, `/readyz`, `/metrics` and the JSON
//! request log.
//!
//! `readyz_turns_unready_while_the_database_is_down` stops and starts a MariaDB server of its
//! own (never the shared one): `scripts/test.sh` starts a second instance and sets
//! `MAGNUM_RS_TEST_READYZ_MYSQL_URL` (its URL, no database), `MAGNUM_RS_TEST_READYZ_DB_STOP`
//! and `MAGNUM_RS_TEST_READYZ_DB_START` (shell commands that stop and start it). Without them
//! the test fails.

use crate::common;

use std::time::{Duration, Instant};

use common::raw_http::send;
use common::server::{http, http_get, Server};
use serde_json::Value;

/// A GET with extra headers; returns status, the response headers (lower-cased) and body.
fn get_with(port: u16, path: &str, headers: &[(&str, &str)]) -> (u16, String, String) {
    let mut all = vec![("Accept", "application/json")];
    all.extend_from_slice(headers);
    let r = send(
        &format!("127.0.0.1:{port}"),
        "127.0.0.1",
        "GET",
        path,
        &all,
        None,
        Duration::from_secs(10),
    )
    .unwrap_or_else(|e| panic!("GET {path}: {e}"));
    (r.status, r.head.clone(), r.text())
}

fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test]
async fn metrics_count_requests_by_route_template_and_show_the_queue() {
    let dir = tempfile::tempdir().expect("dir");
    let db = common::fresh_database().await;
    let server = Server::start(&db.url, dir.path(), &[]);
    let p = server.port;
    let missing = uuid::Uuid::new_v4().to_string();
    for _ in 0..3 {
        assert_eq!(
            http(p, "GET", &format!("/v1/clusters/{missing}"), None).0,
            404
        );
    }
    assert_eq!(http(p, "GET", "/clustertemplates", None).0, 200);
    assert_eq!(http(p, "GET", "/v1/no-such-thing/at/all", None).0, 404);
    assert_eq!(http_get(p, "/healthz").map(|r| r.0), Some(200));

    let (code, head, text) = get_with(p, "/metrics", &[]);
    assert_eq!(code, 200);
    assert!(
        head.contains("content-type: text/plain; version=0.0.4"),
        "{head}"
    );
    let get = |route: &str, status: u16| {
        sample(
            &text,
            &format!(
                "magnum_rs_http_requests_total{{method=\"GET\",route=\"{route}\",status=\"{status}\"}}"
            ),
        )
    };
    assert_eq!(get("/v1/clusters/{ident}", 404), Some(3.0), "{text}");
    // `/clustertemplates` is Magnum's alias of `/v1/clustertemplates`: one template.
    assert_eq!(get("/v1/clustertemplates", 200), Some(1.0), "{text}");
    assert_eq!(get("unmatched", 404), Some(1.0), "{text}");
    assert_eq!(get("/healthz", 200), Some(1.0), "{text}");
    assert!(
        !text.contains(&missing),
        "raw paths must not become labels: {text}"
    );
    assert_eq!(
        sample(
            &text,
            "magnum_rs_http_request_duration_seconds_count{method=\"GET\",route=\"/v1/clusters/{ident}\",status=\"404\"}"
        ),
        Some(3.0),
        "{text}"
    );
    assert!(
        text.contains("magnum_rs_http_request_duration_seconds_bucket{le=\"0.001\",method=\"GET\",route=\"/v1/clusters/{ident}\",status=\"404\"}")
            || text.contains("magnum_rs_http_request_duration_seconds_bucket{method=\"GET\",route=\"/v1/clusters/{ident}\",status=\"404\",le=\"0.001\"}"),
        "{text}"
    );
    for state in ["pending", "running"] {
        assert_eq!(
            sample(
                &text,
                &format!("magnum_rs_operations_queue_depth{{state=\"{state}\"}}")
            ),
            Some(0.0),
            "{text}"
        );
        assert!(
            sample(
                &text,
                &format!("magnum_rs_operations_oldest_age_seconds{{state=\"{state}\"}}")
            )
            .is_some(),
            "{text}"
        );
    }
    // Kube request errors and the reconcile lag have series once a management cluster is
    // used: tests/e2e/deploy_rbac.rs checks them.
}

#[tokio::test]
async fn operator_endpoints_need_no_identity_even_with_keystone_style_headers_absent() {
    // Bound to loopback with noauth; the probes answer without any identity header and
    // without Magnum's microversion headers (they are not Magnum routes).
    let dir = tempfile::tempdir().expect("dir");
    let db = common::fresh_database().await;
    let server = Server::start(&db.url, dir.path(), &[]);
    for path in ["/healthz", "/readyz", "/metrics"] {
        let (code, head, _) = get_with(server.port, path, &[]);
        assert_eq!(code, 200, "{path}");
        assert!(!head.contains("openstack-api-version"), "{path}: {head}");
        assert!(
            head.contains("x-openstack-request-id: req-"),
            "{path}: {head}"
        );
    }
    let (_, _, body) = get_with(server.port, "/readyz", &[]);
    let v: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(v["status"], "ready");
    assert_eq!(v["database"], "ok");
    assert_eq!(v["management_clusters"], serde_json::json!([]));
}

#[tokio::test]
async fn json_log_lines_carry_request_id_route_project_and_duration_but_no_token() {
    let dir = tempfile::tempdir().expect("dir");
    let db = common::fresh_database().await;
    let server = Server::start(&db.url, dir.path(), &["--log-format", "json"]);
    let token = "gAAAAAB-secret-token-never-logged";
    let (code, head, _) = get_with(
        server.port,
        &format!("/v1/clusters/{}", uuid::Uuid::new_v4()),
        &[
            ("X-Auth-Token", token),
            ("X-Project-Id", "p-logged"),
            ("X-Roles", "member"),
            ("OpenStack-API-Version", "container-infra latest"),
        ],
    );
    assert_eq!(code, 404);
    let id = head
        .lines()
        .find_map(|l| l.strip_prefix("x-openstack-request-id: "))
        .expect("request id header")
        .trim()
        .to_string();
    let deadline = Instant::now() + Duration::from_secs(10);
    let line = loop {
        let log = server.log_text();
        let found = log
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|v| v["span"]["request_id"] == id.as_str());
        if let Some(v) = found {
            assert!(!log.contains(token), "a token reached the log: {log}");
            for l in log.lines() {
                assert!(
                    serde_json::from_str::<Value>(l).is_ok(),
                    "not a JSON line: {l}"
                );
            }
            break v;
        }
        assert!(Instant::now() < deadline, "no log line for {id}: {log}");
        std::thread::park_timeout(Duration::from_millis(50));
    };
    assert_eq!(line["message"], "request answered", "{line}");
    assert_eq!(line["status"], 404, "{line}");
    assert!(line["duration_ms"].as_f64().is_some(), "{line}");
    assert_eq!(line["span"]["route"], "/v1/clusters/{ident}", "{line}");
    assert_eq!(line["span"]["project_id"], "p-logged", "{line}");
    assert_eq!(line["span"]["method"], "GET", "{line}");
}

fn required(var: &str) -> String {
    std::env::var(var)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            panic!(
                "{var} is not set: run scripts/test.sh, which starts a dedicated MariaDB for the \
             readiness test (never the shared one)"
            )
        })
}

fn run_shell(command: &str) {
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .status()
        .expect("run shell command");
    assert!(status.success(), "`{command}` failed: {status}");
}

fn readyz(port: u16) -> (u16, Value) {
    let (code, _, body) = get_with(port, "/readyz", &[]);
    (code, serde_json::from_str(&body).unwrap_or(Value::Null))
}

fn wait_readyz(port: u16, want: u16, what: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (code, body) = readyz(port);
        if code == want {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}; last: {code} {body}"
        );
        std::thread::park_timeout(Duration::from_millis(100));
    }
}

/// Starts the dedicated server again even when an assertion fails midway.
struct RestartOnDrop(String);

impl Drop for RestartOnDrop {
    fn drop(&mut self) {
        let _ = std::process::Command::new("sh")
            .arg("-c")
            .arg(&self.0)
            .status();
    }
}

#[tokio::test]
#[ignore = "needs scripts/test.sh"]
async fn readyz_turns_unready_while_the_database_is_down() {
    let base = required("MAGNUM_RS_TEST_READYZ_MYSQL_URL");
    let stop = required("MAGNUM_RS_TEST_READYZ_DB_STOP");
    let start = required("MAGNUM_RS_TEST_READYZ_DB_START");
    assert!(
        !base.contains(":13306"),
        "the readiness test must not stop the shared MariaDB on 13306"
    );
    run_shell(&start);
    let _restart = RestartOnDrop(start.clone());
    let name = format!("mrs_{}", uuid::Uuid::new_v4().simple());
    {
        let admin = magnum_rs::store::Store::connect(&format!("{base}/mysql"))
            .await
            .expect("connect to the dedicated MariaDB");
        sqlx::query(&format!("CREATE DATABASE {name} CHARACTER SET utf8mb4"))
            .execute(&mut admin.side_connection().await.expect("connection"))
            .await
            .expect("create database");
        admin.close().await;
    }
    let dir = tempfile::tempdir().expect("dir");
    let server = Server::start(&format!("{base}/{name}"), dir.path(), &[]);
    let p = server.port;

    let (code, body) = readyz(p);
    assert_eq!(
        (code, &body["status"]),
        (200, &Value::from("ready")),
        "{body}"
    );

    run_shell(&stop);
    let body = wait_readyz(p, 503, "unready while the database is stopped");
    assert_eq!(body["status"], "unready", "{body}");
    assert_eq!(body["database"], "unreachable", "{body}");
    // The process itself is fine: liveness does not depend on the database.
    assert_eq!(http_get(p, "/healthz").map(|r| r.0), Some(200));

    run_shell(&start);
    let body = wait_readyz(p, 200, "ready again once the database is back");
    assert_eq!(body["database"], "ok", "{body}");
    assert_eq!(http(p, "GET", "/v1/clustertemplates", None).0, 200);
}

#[tokio::test]
async fn metrics_show_pending_operations_and_their_age_while_no_worker_runs() {
    let dir = tempfile::tempdir().expect("dir");
    let db = common::fresh_database().await;
    // `serve --no-worker`: operations stay recorded until a worker runs.
    let p = common::server::free_port();
    let log = dir.path().join("serve.log");
    let out = std::fs::File::create(&log).expect("log");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_magnum-rs"))
        .args([
            "--database-url",
            &db.url,
            "--bind",
            &format!("127.0.0.1:{p}"),
        ])
        .args(["serve", "--no-worker"])
        .current_dir(dir.path())
        .stdout(out.try_clone().expect("log"))
        .stderr(out)
        .spawn()
        .expect("spawn magnum-rs");
    let _server = Server {
        port: p,
        child,
        log,
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while http_get(p, "/healthz").map(|r| r.0) != Some(200) {
        assert!(Instant::now() < deadline, "magnum-rs did not start");
        std::thread::park_timeout(Duration::from_millis(50));
    }
    let (code, body) = http(
        p,
        "POST",
        "/v1/clustertemplates",
        Some(
            &serde_json::json!({"name": "t", "coe": "kubernetes", "image_id": "ubuntu-2204",
                                  "external_network_id": "public"}),
        ),
    );
    assert_eq!(code, 201, "{body}");
    let (code, body) = http(
        p,
        "POST",
        "/v1/clusters",
        Some(&serde_json::json!({"name": "c", "cluster_template_id": "t",
                                  "master_count": 1, "node_count": 1})),
    );
    assert_eq!(code, 202, "{body}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, _, text) = get_with(p, "/metrics", &[]);
        let depth = sample(&text, "magnum_rs_operations_queue_depth{state=\"pending\"}");
        let age = sample(
            &text,
            "magnum_rs_operations_oldest_age_seconds{state=\"pending\"}",
        );
        assert_eq!(depth, Some(1.0), "{text}");
        if age.is_some_and(|a| a > 0.0) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the pending operation never aged: {text}"
        );
        std::thread::park_timeout(Duration::from_millis(200));
    }
}

#[tokio::test]
async fn operator_endpoints_stay_open_when_keystone_guards_the_magnum_routes() {
    let dir = tempfile::tempdir().expect("dir");
    let db = common::fresh_database().await;
    // No Keystone answers on port 9: only routes that never ask it can succeed.
    let server = Server::start_with_env(
        &db.url,
        dir.path(),
        &["--auth", "keystone"],
        &[
            ("MAGNUM_RS_KEYSTONE_PASSWORD", "unused"),
            ("MAGNUM_RS_KEYSTONE_AUTH_URL", "http://127.0.0.1:9/v3"),
        ],
    );
    for path in ["/healthz", "/readyz", "/metrics"] {
        assert_eq!(
            http_get(server.port, path).map(|r| r.0),
            Some(200),
            "{path}"
        );
    }
    assert_eq!(
        http_get(server.port, "/v1/clusters").map(|r| r.0),
        Some(401)
    );
}
