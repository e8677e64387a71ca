//! `GET /v1/stats`: the caller's project for members, any project (or all) for admins, as
//! Magnum's `StatsController`.

use crate::common;

use axum::http::{Method, StatusCode};
use common::{As, OTHER_PROJECT, PROJECT};
use serde_json::json;

#[tokio::test]
async fn stats_count_the_members_own_clusters_and_nodes() {
    let app = common::spawn_app().await;
    app.standard_fixture().await;
    let r = app.get("/v1/stats", &As::member()).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    // k8s: 1 master + 2 workers, legacy: 1 + 1.
    assert_eq!(r.body, json!({"clusters": 2, "nodes": 5}));
    let r = app.get("/v1/stats", &As::reader()).await;
    assert_eq!(r.body, json!({"clusters": 2, "nodes": 5}));
    let r = app
        .get(
            &format!("/v1/stats?project_id={PROJECT}&type=cluster"),
            &As::member(),
        )
        .await;
    assert_eq!(r.body, json!({"clusters": 2, "nodes": 5}));
}

#[tokio::test]
async fn stats_answer_at_the_oldest_microversion_too() {
    let app = common::spawn_app().await;
    let r = app
        .send(Method::GET, "/v1/stats", &As::member(), None, None)
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body, json!({"clusters": 0, "nodes": 0}));
}

#[tokio::test]
async fn a_member_asking_for_another_projects_stats_is_not_authorized() {
    let app = common::spawn_app().await;
    let r = app
        .get(
            &format!("/v1/stats?project_id={OTHER_PROJECT}"),
            &As::member(),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(r.detail(), "Not authorized.");
    assert_eq!(r.body["errors"][0]["title"], "Not authorized");
}

#[tokio::test]
async fn an_admin_sees_every_project_or_the_one_asked_for() {
    let app = common::spawn_app().await;
    app.standard_fixture().await;
    let r = app.get("/v1/stats", &As::admin()).await;
    assert_eq!(r.body, json!({"clusters": 3, "nodes": 7}));
    let r = app
        .get(
            &format!("/v1/stats?project_id={OTHER_PROJECT}"),
            &As::admin(),
        )
        .await;
    assert_eq!(r.body, json!({"clusters": 1, "nodes": 2}));
    let r = app.get("/v1/stats?project_id=nobody", &As::admin()).await;
    assert_eq!(r.body, json!({"clusters": 0, "nodes": 0}));
}

#[tokio::test]
async fn an_unknown_stats_type_is_refused_with_magnums_text() {
    let app = common::spawn_app().await;
    let r = app.get("/v1/stats?type=nodes", &As::member()).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.detail(),
        "Invalid stats type. Allowed values are 'cluster'"
    );
    // Magnum lower-cases the type before comparing.
    let r = app.get("/v1/stats?type=CLUSTER", &As::member()).await;
    assert_eq!(r.status, StatusCode::OK);
}

#[tokio::test]
async fn an_unknown_query_argument_is_refused() {
    let app = common::spawn_app().await;
    let r = app.get("/v1/stats?all_tenants=1", &As::member()).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.detail(), "Unknown argument: \"all_tenants\"");
}

#[tokio::test]
async fn stats_need_a_role_in_the_project() {
    let app = common::spawn_app().await;
    let nobody = As {
        roles: "".into(),
        ..As::member()
    };
    let r = app.get("/v1/stats", &nobody).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(
        r.detail(),
        "Policy doesn't allow stats:get_all to be performed."
    );
}

#[tokio::test]
async fn stats_take_no_other_method() {
    let app = common::spawn_app().await;
    let r = app.post("/v1/stats", &As::admin(), json!({})).await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
}
