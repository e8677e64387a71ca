//! `GET /v1/mservices`: Magnum's `magnum_service` rows with their computed state, and the
//! serve process reporting itself there while it does the conductor's work.

use crate::common;

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use common::As;
use serde_json::json;

async fn insert_service(
    app: &common::TestApp,
    host: &str,
    seen_secs_ago: Option<i64>,
    disabled: bool,
    forced_down: bool,
) {
    let t = |secs: i64| {
        (chrono::Utc::now() - chrono::Duration::seconds(secs))
            .format("%Y-%m-%d %H:%M:%S")
            .to_string()
    };
    sqlx::query(
        "INSERT INTO magnum_service (created_at, updated_at, report_count, host, `binary`, \
         disabled, disabled_reason, last_seen_up, forced_down) VALUES (?, ?, 4, ?, \
         'magnum-conductor', ?, ?, ?, ?)",
    )
    .bind(t(86_400))
    .bind(t(seen_secs_ago.unwrap_or(86_400)))
    .bind(host.to_string())
    .bind(disabled)
    .bind(disabled.then(|| "maintenance".to_string()))
    .bind(seen_secs_ago.map(t))
    .bind(forced_down)
    .execute(&mut app.state.store.side_connection().await.expect("connection"))
    .await
    .expect("insert magnum_service");
}

#[tokio::test]
async fn services_list_in_magnums_shape_with_their_state() {
    let app = common::spawn_app().await;
    insert_service(&app, "conductor-a", Some(5), false, false).await;
    insert_service(&app, "conductor-b", Some(3600), true, false).await;
    insert_service(&app, "conductor-c", Some(5), false, true).await;
    let r = app.get("/v1/mservices", &As::admin()).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let list = r.body["mservices"].as_array().expect("mservices");
    assert_eq!(list.len(), 3);
    let keys: Vec<&str> = list[0]
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "host",
            "binary",
            "state",
            "id",
            "report_count",
            "disabled",
            "disabled_reason",
            "created_at",
            "updated_at"
        ]
    );
    let states: Vec<(&str, &str, bool)> = list
        .iter()
        .map(|s| {
            (
                s["host"].as_str().unwrap_or_default(),
                s["state"].as_str().unwrap_or_default(),
                s["disabled"].as_bool().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            ("conductor-a", "up", false),
            ("conductor-b", "down", true),
            ("conductor-c", "down", false)
        ]
    );
    assert_eq!(list[0]["binary"], "magnum-conductor");
    assert_eq!(list[0]["report_count"], 4);
    assert_eq!(list[1]["disabled_reason"], "maintenance");
    assert!(list[0]["created_at"]
        .as_str()
        .is_some_and(|t| t.ends_with("+00:00")));
}

#[tokio::test]
async fn services_are_for_admins_only() {
    let app = common::spawn_app().await;
    for who in [As::member(), As::reader()] {
        let r = app.get("/v1/mservices", &who).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN);
        assert_eq!(
            r.detail(),
            "Policy doesn't allow magnum-service:get_all to be performed."
        );
    }
}

#[tokio::test]
async fn an_empty_table_lists_no_services_and_arguments_are_refused() {
    let app = common::spawn_app().await;
    let r = app.get("/v1/mservices", &As::admin()).await;
    assert_eq!(r.body, json!({"mservices": []}));
    let r = app.get("/v1/mservices?limit=1", &As::admin()).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.detail(), "Unknown argument: \"limit\"");
    let r = app.post("/v1/mservices", &As::admin(), json!({})).await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn a_report_creates_the_row_once_and_then_counts_up() {
    let app = common::spawn_app().await;
    let store = &app.state.store;
    store
        .report_service_up("host-1", "magnum-conductor")
        .await
        .expect("first report");
    store
        .report_service_up("host-1", "magnum-conductor")
        .await
        .expect("second report");
    let rows = store.list_services().await.expect("list");
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].report_count, 2);
    assert!(rows[0].last_seen_up.is_some());
    assert!(!rows[0].disabled);
}

/// The real binary: the conductor role registers this host and keeps reporting.
#[test]
fn the_serving_process_registers_itself_and_keeps_reporting() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let db = rt.block_on(common::fresh_database());
    let dir = tempfile::tempdir().expect("dir");
    let config = dir.path().join("magnum-rs.toml");
    std::fs::write(
        &config,
        "[service]\nhost = \"conductor-under-test\"\nreport_interval = 1\n\n\
         [noauth]\nroles = [\"admin\"]\n",
    )
    .expect("config");
    let config_arg = config.display().to_string();
    let mut server = common::server::Server::start(&db.url, dir.path(), &["--config", &config_arg]);
    let store = rt
        .block_on(magnum_rs::store::Store::connect(&db.url))
        .expect("connect");
    let count = |store: &magnum_rs::store::Store| {
        rt.block_on(store.list_services())
            .expect("list")
            .into_iter()
            .find(|s| s.host.as_deref() == Some("conductor-under-test"))
            .map(|s| s.report_count)
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let first = loop {
        if let Some(n) = count(&store) {
            break n;
        }
        assert!(
            Instant::now() < deadline,
            "no magnum_service row: {}",
            server.log_text()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while count(&store).unwrap_or(0) <= first {
        assert!(
            Instant::now() < deadline,
            "no second report: {}",
            server.log_text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (status, body) = common::server::http_get(server.port, "/v1/mservices").expect("answer");
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).expect("json");
    assert_eq!(v["mservices"][0]["host"], "conductor-under-test");
    assert_eq!(v["mservices"][0]["binary"], "magnum-conductor");
    assert_eq!(v["mservices"][0]["state"], "up");
    let _ = server.child.kill();
}
