//! `/v1/quotas` with Magnum's shapes, texts and check order, stored in Magnum's `quotas`
//! table, and the cluster quota that cluster create enforces from it.

use crate::common;

use axum::http::{Method, StatusCode};
use common::{As, OTHER_PROJECT, PROJECT};
use serde_json::{json, Value};

async fn quota_rows(app: &common::TestApp) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM quotas")
        .fetch_one(&mut app.state.store.side_connection().await.expect("connection"))
        .await
        .expect("count")
}

async fn create(app: &common::TestApp, project: &str, limit: i64) -> Value {
    let r = app
        .post(
            "/v1/quotas",
            &As::admin(),
            json!({"project_id": project, "resource": "Cluster", "hard_limit": limit}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    r.body
}

#[tokio::test]
async fn an_admin_creates_a_quota_in_magnums_shape() {
    let app = common::spawn_app().await;
    let q = create(&app, PROJECT, 3).await;
    let keys: Vec<&str> = q
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "id",
            "hard_limit",
            "project_id",
            "resource",
            "created_at",
            "updated_at"
        ]
    );
    assert_eq!(q["hard_limit"], 3);
    assert_eq!(q["project_id"], PROJECT);
    assert_eq!(q["resource"], "Cluster");
    assert_eq!(q["updated_at"], Value::Null);
    assert!(q["id"].as_i64().is_some_and(|id| id >= 1));
}

#[tokio::test]
async fn a_second_quota_for_the_same_project_is_a_conflict() {
    let app = common::spawn_app().await;
    create(&app, PROJECT, 3).await;
    let r = app
        .post(
            "/v1/quotas",
            &As::admin(),
            json!({"project_id": PROJECT, "hard_limit": 9}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    assert_eq!(
        r.detail(),
        format!("Quota for project {PROJECT} already exists for resource Cluster.")
    );
    assert_eq!(quota_rows(&app).await, 1);
}

#[tokio::test]
async fn create_defaults_the_limit_to_one_and_needs_a_project() {
    let app = common::spawn_app().await;
    let r = app
        .post(
            "/v1/quotas",
            &As::admin(),
            json!({"project_id": "p-default"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    assert_eq!(r.body["hard_limit"], 1);
    let r = app
        .post(
            "/v1/quotas",
            &As::admin(),
            json!({"resource": "Cluster", "hard_limit": 2}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.detail(), "Must provide a valid project ID.");
    assert_eq!(quota_rows(&app).await, 1);
}

#[tokio::test]
async fn bad_quota_bodies_get_wsmes_texts_and_change_nothing() {
    let app = common::spawn_app().await;
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"project_id": "p", "resource": "Foo"}),
            "Invalid input for field/attribute resource. Value: 'Foo'. Value should be one of: Cluster",
        ),
        (
            json!({"project_id": "p", "hard_limit": -1}),
            "Invalid input for field/attribute hard_limit. Value: '-1'. Value should be greater or equal to 0",
        ),
        (
            json!({"project_id": "p", "hard_limit": "x"}),
            "Invalid input for field/attribute quota. Value: '{'project_id': 'p', 'hard_limit': 'x'}'. invalid literal for int() with base 10: 'x'",
        ),
        (
            json!({"project_id": ""}),
            "Invalid input for field/attribute project_id. Value: ''. Value should have a minimum character requirement of 1",
        ),
        (
            json!({"project_id": 5}),
            "Invalid input for field/attribute project_id. Value: '5'. Value should be string",
        ),
        (
            json!({"project_id": "p", "bogus": 5}),
            "Unknown attribute for argument quota: bogus",
        ),
    ];
    for (body, text) in cases {
        let r = app.post("/v1/quotas", &As::admin(), body.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(r.detail(), text, "{body}");
    }
    let r = app
        .send(Method::POST, "/v1/quotas", &As::admin(), None, Some(""))
        .await;
    assert_eq!(r.detail(), "Missing argument: \"quota\"");
    // Magnum answers 500 to a JSON list; magnum-rs 400.
    let r = app
        .send(Method::POST, "/v1/quotas", &As::admin(), None, Some("[]"))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(quota_rows(&app).await, 0);
}

#[tokio::test]
async fn quota_writes_are_for_admins_only() {
    let app = common::spawn_app().await;
    create(&app, PROJECT, 3).await;
    for who in [As::member(), As::reader()] {
        let r = app
            .post(
                "/v1/quotas",
                &who,
                json!({"project_id": PROJECT, "hard_limit": 50}),
            )
            .await;
        assert_eq!(r.status, StatusCode::FORBIDDEN);
        assert_eq!(
            r.detail(),
            "Policy doesn't allow quota:create to be performed."
        );
        let r = app
            .patch(
                &format!("/v1/quotas/{PROJECT}/Cluster"),
                &who,
                json!({"hard_limit": 50}),
            )
            .await;
        assert_eq!(
            r.detail(),
            "Policy doesn't allow quota:update to be performed."
        );
        let r = app
            .delete(&format!("/v1/quotas/{PROJECT}/Cluster"), &who)
            .await;
        assert_eq!(
            r.detail(),
            "Policy doesn't allow quota:delete to be performed."
        );
        let r = app.get("/v1/quotas", &who).await;
        assert_eq!(
            r.detail(),
            "Policy doesn't allow quota:get_all to be performed."
        );
    }
    let r = app
        .get(&format!("/v1/quotas/{PROJECT}/Cluster"), &As::admin())
        .await;
    assert_eq!(r.body["hard_limit"], 3);
}

#[tokio::test]
async fn show_gives_the_row_or_the_configured_default() {
    let app = common::spawn_app().await;
    let r = app
        .get(&format!("/v1/quotas/{PROJECT}/Cluster"), &As::member())
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.body,
        json!({"hard_limit": 20, "project_id": PROJECT, "resource": "Cluster"})
    );
    let made = create(&app, PROJECT, 4).await;
    let r = app
        .get(&format!("/v1/quotas/{PROJECT}/Cluster"), &As::reader())
        .await;
    assert_eq!(r.body, made);
    // Magnum's default answer names resource `Cluster` whatever the path asked for.
    let r = app
        .get(&format!("/v1/quotas/{PROJECT}/Foo"), &As::member())
        .await;
    assert_eq!(
        r.body,
        json!({"hard_limit": 20, "project_id": PROJECT, "resource": "Cluster"})
    );
}

#[tokio::test]
async fn a_member_cannot_see_another_projects_quota() {
    let app = common::spawn_app().await;
    let r = app
        .get(
            &format!("/v1/quotas/{OTHER_PROJECT}/Cluster"),
            &As::member(),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(r.detail(), "Not authorized.");
    let r = app
        .get(&format!("/v1/quotas/{OTHER_PROJECT}/Cluster"), &As::admin())
        .await;
    assert_eq!(r.status, StatusCode::OK);
}

#[tokio::test]
async fn a_path_without_resource_is_a_missing_argument() {
    let app = common::spawn_app().await;
    let r = app
        .get(&format!("/v1/quotas/{PROJECT}"), &As::admin())
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.detail(), "Missing argument: \"resource\"");
    let r = app.delete("/v1/quotas", &As::admin()).await;
    assert_eq!(r.detail(), "Missing argument: \"project_id\"");
}

#[tokio::test]
async fn the_list_is_the_callers_project_unless_an_admin_asks_for_all() {
    let app = common::spawn_app().await;
    create(&app, PROJECT, 3).await;
    create(&app, OTHER_PROJECT, 5).await;
    create(&app, "adminadminadmin4adminadminadmin0", 7).await;
    let r = app.get("/v1/quotas", &As::admin()).await;
    assert_eq!(r.status, StatusCode::OK);
    let own: Vec<&Value> = r.body["quotas"].as_array().expect("list").iter().collect();
    assert_eq!(own.len(), 1);
    assert_eq!(own[0]["hard_limit"], 7);
    let r = app.get("/v1/quotas?all_tenants=True", &As::admin()).await;
    assert_eq!(r.body["quotas"].as_array().map(Vec::len), Some(3));
    assert!(r.body.get("next").is_none());
    let r = app.get("/v1/quotas?all_tenants=maybe", &As::admin()).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn the_list_pages_by_integer_marker_with_magnums_next_link() {
    let app = common::spawn_app().await;
    let a = create(&app, "p-a", 1).await;
    let b = create(&app, "p-b", 2).await;
    create(&app, "p-c", 3).await;
    let r = app
        .get("/v1/quotas?all_tenants=1&limit=1", &As::admin())
        .await;
    assert_eq!(r.body["quotas"][0], a);
    assert_eq!(
        r.body["next"],
        format!(
            "http://localhost/v1/quotas?sort_key=id&sort_dir=asc&limit=1&marker={}",
            a["id"]
        )
    );
    let r = app
        .get(
            &format!("/v1/quotas?all_tenants=1&limit=1&marker={}", a["id"]),
            &As::admin(),
        )
        .await;
    assert_eq!(r.body["quotas"][0], b);
    let r = app
        .get(
            "/v1/quotas?all_tenants=1&sort_key=hard_limit&sort_dir=desc",
            &As::admin(),
        )
        .await;
    let limits: Vec<i64> = r.body["quotas"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|q| q["hard_limit"].as_i64())
        .collect();
    assert_eq!(limits, [3, 2, 1]);
}

#[tokio::test]
async fn bad_list_arguments_get_magnums_texts() {
    let app = common::spawn_app().await;
    let cases = [
        ("marker=abc", StatusCode::BAD_REQUEST, "Invalid input for field/attribute marker. Value: 'abc'. unable to convert to int. Error: invalid literal for int() with base 10: 'abc'"),
        ("marker=999", StatusCode::NOT_FOUND, "Quota could not be found: quota id 999 ."),
        ("sort_key=bogus", StatusCode::BAD_REQUEST, "The sort_key value \"bogus\" is an invalid field for sorting"),
        ("sort_dir=up", StatusCode::BAD_REQUEST, "Invalid sort direction: up. Acceptable values are 'asc' or 'desc'"),
        ("limit=0", StatusCode::BAD_REQUEST, "Limit must be positive"),
        ("project_id=x", StatusCode::BAD_REQUEST, "Unknown argument: \"project_id\""),
    ];
    for (q, status, text) in cases {
        let r = app.get(&format!("/v1/quotas?{q}"), &As::admin()).await;
        assert_eq!((r.status, r.detail()), (status, text), "{q}");
    }
}

#[tokio::test]
async fn update_sets_the_limit_with_magnums_quirks() {
    let app = common::spawn_app().await;
    create(&app, PROJECT, 3).await;
    let path = format!("/v1/quotas/{PROJECT}/Cluster");
    let r = app
        .patch(
            &path,
            &As::admin(),
            json!({"hard_limit": 8, "project_id": "ignored"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(r.body["hard_limit"], 8);
    assert_eq!(r.body["project_id"], PROJECT);
    assert!(r.body["updated_at"].is_string());
    // An empty body sets the attribute default, 1, as Magnum does.
    let r = app.patch(&path, &As::admin(), json!({})).await;
    assert_eq!(r.body["hard_limit"], 1);
}

#[tokio::test]
async fn update_of_a_missing_quota_or_with_a_bad_body_changes_nothing() {
    let app = common::spawn_app().await;
    create(&app, PROJECT, 3).await;
    let r = app
        .patch(
            "/v1/quotas/nobody/Cluster",
            &As::admin(),
            json!({"hard_limit": 8}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(
        r.detail(),
        "Quota could not be found: project_id nobody resource Cluster."
    );
    let path = format!("/v1/quotas/{PROJECT}/Cluster");
    let r = app
        .patch(&path, &As::admin(), json!({"hard_limit": "x"}))
        .await;
    assert_eq!(
        r.detail(),
        "Invalid input for field/attribute quotapatch. Value: '{'hard_limit': 'x'}'. invalid literal for int() with base 10: 'x'"
    );
    let r = app
        .patch(&path, &As::admin(), json!({"hard_limit": -2}))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    // Magnum answers 500 to a JSON patch list here; magnum-rs 400.
    let r = app
        .patch(
            &path,
            &As::admin(),
            json!([{"op": "replace", "path": "/hard_limit", "value": 9}]),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = app.get(&path, &As::admin()).await;
    assert_eq!(r.body["hard_limit"], 3);
}

#[tokio::test]
async fn delete_removes_the_row_and_then_is_not_found() {
    let app = common::spawn_app().await;
    create(&app, PROJECT, 3).await;
    let path = format!("/v1/quotas/{PROJECT}/Cluster");
    let r = app.delete(&path, &As::admin()).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(r.body, Value::Null);
    let r = app.delete(&path, &As::admin()).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(
        r.detail(),
        format!("Quota could not be found: project_id {PROJECT} resource Cluster.")
    );
    assert_eq!(quota_rows(&app).await, 0);
}

async fn try_cluster(app: &common::TestApp, name: &str) -> common::Reply {
    app.post(
        "/v1/clusters",
        &As::member(),
        json!({"name": name, "cluster_template_id": "capi", "master_count": 1, "node_count": 1}),
    )
    .await
}

#[tokio::test]
async fn cluster_create_enforces_the_projects_quota_row_first() {
    let app = common::spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    create(&app, PROJECT, 1).await;
    assert_eq!(
        try_cluster(&app, "first").await.status,
        StatusCode::ACCEPTED
    );
    let r = try_cluster(&app, "second").await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(
        r.detail(),
        "Resource limit exceeded: You have reached the maximum clusters per project, 1. You may delete a cluster to make room for a new one."
    );
    let r = app.get("/v1/clusters", &As::member()).await;
    assert_eq!(r.body["clusters"].as_array().map(Vec::len), Some(1));
    // Raising the row lets the project create again; another project is not limited by it.
    app.patch(
        &format!("/v1/quotas/{PROJECT}/Cluster"),
        &As::admin(),
        json!({"hard_limit": 2}),
    )
    .await;
    assert_eq!(
        try_cluster(&app, "second").await.status,
        StatusCode::ACCEPTED
    );
}

#[tokio::test]
async fn cluster_create_falls_back_to_the_configured_default() {
    let mut config = magnum_rs::config::Config::default();
    config.quotas.max_clusters_per_project = 1;
    let app = common::spawn_app_with(config, None).await;
    app.template("capi", "ubuntu", &As::member()).await;
    assert_eq!(
        try_cluster(&app, "first").await.status,
        StatusCode::ACCEPTED
    );
    let r = try_cluster(&app, "second").await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert!(r.detail().contains("maximum clusters per project, 1."));
    // A row above the default wins over it.
    create(&app, PROJECT, 5).await;
    assert_eq!(
        try_cluster(&app, "second").await.status,
        StatusCode::ACCEPTED
    );
    // A zero row forbids any cluster.
    app.patch(
        &format!("/v1/quotas/{PROJECT}/Cluster"),
        &As::admin(),
        json!({"hard_limit": 0}),
    )
    .await;
    let r = try_cluster(&app, "third").await;
    assert!(r.detail().contains("maximum clusters per project, 0."));
}

#[tokio::test]
async fn quotas_have_no_microversion_gate_as_in_magnum() {
    let app = common::spawn_app().await;
    let r = app
        .send(
            Method::POST,
            "/v1/quotas",
            &As::admin(),
            Some("container-infra 1.1"),
            Some(&json!({"project_id": PROJECT, "hard_limit": 2}).to_string()),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let r = app
        .send(
            Method::GET,
            &format!("/v1/quotas/{PROJECT}/Cluster"),
            &As::member(),
            None,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["hard_limit"], 2);
}
