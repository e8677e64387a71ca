//! Shared test harness: a fresh database per test (SQLite by default, MariaDB when
//! `MAGNUM_RS_TEST_MYSQL_URL` is set, e.g. `mysql://magnum:magnum@127.0.0.1:13306`), the
//! real application router driven with `oneshot`, and helpers to seed data through the API.

#![allow(dead_code)]

pub mod capi_env;
pub mod cli;
pub mod invariants;
pub mod raw_http;
pub mod scripted_driver;
pub mod server;

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt as _;
use serde_json::{json, Value};
use tower::ServiceExt as _;

use magnum_rs::config::Config;
use magnum_rs::drivers::DriverRegistry;
use magnum_rs::operations::OperationsHandle;
use magnum_rs::policy::Policy;
use magnum_rs::state::AppState;
use magnum_rs::store::Store;

pub const PROJECT: &str = "aaaaaaaaaaaa4aaaaaaaaaaaaaaaaaaa";
pub const OTHER_PROJECT: &str = "99999999999949999999999999999999";
pub const LATEST: &str = "container-infra latest";

/// One test's database.
pub struct TestDb {
    pub url: String,
    pub _dir: Option<tempfile::TempDir>,
}

/// A fresh, empty database of the kind the environment asks for.
pub async fn fresh_database() -> TestDb {
    match std::env::var("MAGNUM_RS_TEST_MYSQL_URL") {
        Ok(base) if !base.is_empty() => {
            let name = format!("mrs_{}", uuid::Uuid::new_v4().simple());
            let admin = Store::connect(&format!("{base}/mysql"))
                .await
                .expect("connect to MariaDB");
            sqlx::query(&format!("CREATE DATABASE {name} CHARACTER SET utf8mb4"))
                .execute(&mut admin.side_connection().await.expect("connection"))
                .await
                .expect("create test database");
            admin.close().await;
            TestDb {
                url: format!("{base}/{name}"),
                _dir: None,
            }
        }
        _ => {
            let dir = tempfile::tempdir().expect("temp dir");
            let url = format!("sqlite://{}", dir.path().join("test.db").display());
            TestDb {
                url,
                _dir: Some(dir),
            }
        }
    }
}

pub struct TestApp {
    pub state: AppState,
    pub router: Router,
    pub db: TestDb,
}

/// Who sends a request.
#[derive(Clone, Debug)]
pub struct As {
    pub project: Option<String>,
    pub user: String,
    pub roles: String,
}

impl As {
    pub fn member() -> Self {
        As {
            project: Some(PROJECT.into()),
            user: "u-demo".into(),
            roles: "reader,member".into(),
        }
    }

    pub fn reader() -> Self {
        As {
            roles: "reader".into(),
            user: "u-reader".into(),
            ..As::member()
        }
    }

    pub fn admin() -> Self {
        As {
            roles: "admin,member,reader".into(),
            user: "u-admin".into(),
            project: Some("adminadminadmin4adminadminadmin0".into()),
        }
    }

    pub fn other() -> Self {
        As {
            project: Some(OTHER_PROJECT.into()),
            user: "u-other".into(),
            roles: "reader,member".into(),
        }
    }
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
}

/// The reply is Magnum's WSME error envelope for `status` and `detail` (code `client` or
/// `server`, the title cut at the first period), with the version headers controllers set.
pub fn assert_envelope(r: &Reply, status: StatusCode, detail: &str) {
    assert_eq!(r.status, status, "{}", r.body);
    let title = detail.split('.').next().unwrap_or_default();
    let code = if status.is_server_error() {
        "server"
    } else {
        "client"
    };
    assert_eq!(
        r.body,
        json!({"errors": [{
            "request_id": "", "code": code, "status": status.as_u16(),
            "title": title, "detail": detail, "links": [],
        }]})
    );
    assert!(
        r.headers.get("openstack-api-version").is_some(),
        "controller errors carry the version headers"
    );
}

impl Reply {
    /// The `detail` of the first error.
    pub fn detail(&self) -> &str {
        self.body["errors"][0]["detail"]
            .as_str()
            .unwrap_or_default()
    }
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(Config::default(), None).await
}

/// An app on a fresh database; `registry` replaces the configured drivers.
pub async fn spawn_app_with(mut config: Config, registry: Option<DriverRegistry>) -> TestApp {
    let db = fresh_database().await;
    config.database_url = db.url.clone();
    let store = Store::connect(&db.url).await.expect("connect");
    store.migrate().await.expect("migrate");
    let drivers = match registry {
        Some(r) => r,
        None => magnum_rs::build_drivers(&config).await.expect("drivers"),
    };
    let state = AppState::new(
        config,
        store,
        Policy::magnum_defaults(),
        drivers,
        OperationsHandle::default(),
    );
    let router = magnum_rs::app(state.clone());
    TestApp { state, router, db }
}

impl TestApp {
    /// Sends one request; `version` is the `OpenStack-API-Version` header value, if any.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        who: &As,
        version: Option<&str>,
        body: Option<&str>,
    ) -> Reply {
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header("host", "localhost")
            .header("accept", "application/json")
            .header("x-user-id", &who.user)
            .header("x-roles", &who.roles);
        if let Some(p) = &who.project {
            req = req.header("x-project-id", p);
        }
        if let Some(v) = version {
            req = req.header("openstack-api-version", v);
        }
        let req = match body {
            Some(b) => req
                .header("content-type", "application/json")
                .body(Body::from(b.to_string())),
            None => req.body(Body::empty()),
        }
        .expect("request");
        let resp = self.router.clone().oneshot(req).await.expect("response");
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = resp.into_body().collect().await.expect("body").to_bytes();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()))
        };
        Reply {
            status,
            headers,
            body,
        }
    }

    pub async fn get(&self, path: &str, who: &As) -> Reply {
        self.send(Method::GET, path, who, Some(LATEST), None).await
    }

    pub async fn post(&self, path: &str, who: &As, body: Value) -> Reply {
        self.send(
            Method::POST,
            path,
            who,
            Some(LATEST),
            Some(&body.to_string()),
        )
        .await
    }

    pub async fn patch(&self, path: &str, who: &As, body: Value) -> Reply {
        self.send(
            Method::PATCH,
            path,
            who,
            Some(LATEST),
            Some(&body.to_string()),
        )
        .await
    }

    pub async fn delete(&self, path: &str, who: &As) -> Reply {
        self.send(Method::DELETE, path, who, Some(LATEST), None)
            .await
    }

    /// Runs the operations worker until nothing is pending (Magnum's conductor, in-line).
    pub async fn run_operations(&self) -> usize {
        magnum_rs::operations::run_pending(&self.state.conductor)
            .await
            .expect("operations")
    }

    /// A template through the API (`cluster_distro` picks the driver: `ubuntu` → ClusterAPI,
    /// `fedora-coreos` → the base driver).
    pub async fn template(&self, name: &str, distro: &str, who: &As) -> Value {
        let r = self
            .post(
                "/v1/clustertemplates",
                who,
                json!({
                    "name": name, "coe": "kubernetes", "image_id": "ubuntu-2204-kube",
                    "cluster_distro": distro, "flavor_id": "m1.medium", "master_flavor_id": "m1.large",
                    "keypair_id": "default", "master_lb_enabled": true, "labels": {"kube_tag": "v1.30.4"},
                }),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "template create: {}", r.body);
        r.body
    }

    /// A cluster through the API, created to completion by the worker.
    pub async fn cluster(
        &self,
        name: &str,
        template: &str,
        masters: i64,
        workers: i64,
        who: &As,
    ) -> String {
        let r = self
            .post(
                "/v1/clusters",
                who,
                json!({"name": name, "cluster_template_id": template, "master_count": masters, "node_count": workers}),
            )
            .await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "cluster create: {}", r.body);
        self.run_operations().await;
        r.body["uuid"].as_str().unwrap_or_default().to_string()
    }

    /// The standard fixture: template `capi` (ClusterAPI driver), `heat` (base driver) and
    /// clusters `k8s` (1 master, 2 workers, ClusterAPI) and `legacy` (base driver) of the
    /// member's project, plus `foreign` of another project.
    pub async fn standard_fixture(&self) -> Fixture {
        self.template("capi", "ubuntu", &As::member()).await;
        self.template("heat", "fedora-coreos", &As::member()).await;
        self.template("capi-other", "ubuntu", &As::other()).await;
        let k8s = self.cluster("k8s", "capi", 1, 2, &As::member()).await;
        let legacy = self.cluster("legacy", "heat", 1, 1, &As::member()).await;
        let foreign = self
            .cluster("foreign", "capi-other", 1, 1, &As::other())
            .await;
        Fixture {
            k8s,
            legacy,
            foreign,
        }
    }

    /// A nodegroup of a cluster as the API shows it.
    pub async fn nodegroup(&self, cluster: &str, ng: &str) -> Value {
        let r = self
            .get(
                &format!("/v1/clusters/{cluster}/nodegroups/{ng}"),
                &As::member(),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "nodegroup show: {}", r.body);
        r.body
    }
}

pub struct Fixture {
    pub k8s: String,
    pub legacy: String,
    pub foreign: String,
}
