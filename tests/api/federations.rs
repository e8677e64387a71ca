//! `/v1/federations` with Magnum 23's routes, policies, check order, texts and shapes
//! (`magnum/api/controllers/v1/federation.py`), recorded in Magnum's `federation` table
//! (Magnum's conductor drops the writes: `diff:federations-recorded`).

use crate::common;

use axum::http::StatusCode;
use common::{As, TestApp};
use serde_json::{json, Value};

const DNS: &str = "example.com.";

async fn fixture() -> (TestApp, common::Fixture) {
    let app = common::spawn_app().await;
    let f = app.standard_fixture().await;
    (app, f)
}

async fn create(app: &TestApp, name: &str, host: &str, members: &[&str]) -> String {
    let r = app
        .post(
            "/v1/federations",
            &As::member(),
            json!({"name": name, "hostcluster_id": host, "member_ids": members,
                   "properties": {"dns-zone": DNS}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(r.body.as_object().map(|m| m.len()), Some(1), "{}", r.body);
    r.body["uuid"].as_str().expect("uuid").to_string()
}

async fn rows(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT COUNT(*) FROM federation")
        .fetch_one(&mut app.state.store.side_connection().await.expect("connection"))
        .await
        .expect("count")
}

async fn members(app: &TestApp, ident: &str) -> Value {
    let r = app
        .get(&format!("/v1/federations/{ident}"), &As::member())
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.body["member_ids"].clone()
}

#[tokio::test]
async fn a_created_federation_is_shown_listed_and_detailed_in_magnums_shapes() {
    let (app, f) = fixture().await;
    let uuid = create(&app, "fed", &f.k8s, &[&f.k8s]).await;
    let show = app.get("/v1/federations/fed", &As::member()).await;
    assert_eq!(show.status, StatusCode::OK, "{}", show.body);
    let mut keys: Vec<&str> = show
        .body
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "created_at",
            "hostcluster_id",
            "links",
            "member_ids",
            "name",
            "properties",
            "status",
            "status_reason",
            "updated_at",
            "uuid"
        ]
    );
    assert_eq!(show.body["uuid"], uuid.as_str());
    assert_eq!(show.body["status"], "CREATE_COMPLETE");
    assert_eq!(show.body["member_ids"], json!([f.k8s]));
    assert_eq!(show.body["properties"], json!({"dns-zone": DNS}));
    assert_eq!(show.body["links"][0]["rel"], "self");
    let list = app.get("/v1/federations", &As::reader()).await;
    assert_eq!(list.status, StatusCode::OK);
    let item = &list.body["federations"][0];
    assert!(item.get("status_reason").is_none() && item.get("created_at").is_none());
    assert_eq!(item["name"], "fed");
    let detail = app.get("/v1/federations/detail", &As::member()).await;
    assert!(detail.body["federations"][0].get("created_at").is_some());
}

#[tokio::test]
async fn create_checks_hostcluster_then_properties_in_magnums_order_and_stores_nothing() {
    let (app, f) = fixture().await;
    let cases = [
        (
            json!({"properties": {"dns-zone": DNS}}),
            StatusCode::BAD_REQUEST,
            "No hostcluster specified. Please specify a hostcluster_id.".to_string(),
        ),
        (
            json!({"hostcluster_id": "nothere"}),
            StatusCode::NOT_FOUND,
            "Cluster nothere could not be found.".into(),
        ),
        (
            json!({"hostcluster_id": f.foreign}),
            StatusCode::NOT_FOUND,
            format!("Cluster {} could not be found.", f.foreign),
        ),
        (
            json!({"hostcluster_id": "k8s"}),
            StatusCode::BAD_REQUEST,
            "Please specify a `properties` dict for the federation.".into(),
        ),
        (
            json!({"hostcluster_id": "k8s", "properties": {"zone": "x"}}),
            StatusCode::BAD_REQUEST,
            "No DNS zone specified. Please specify a `dns-zone`.".into(),
        ),
        (
            json!({"name": "1fed", "hostcluster_id": "k8s"}),
            StatusCode::BAD_REQUEST,
            "Invalid input for field/attribute name. Value: '1fed'. Value should match the pattern ^[a-zA-Z][a-zA-Z0-9_.-]*$"
                .into(),
        ),
        (
            json!({"colour": "red"}),
            StatusCode::BAD_REQUEST,
            "Unknown attribute for argument federation: colour".into(),
        ),
    ];
    for (body, status, detail) in cases {
        let r = app
            .post("/v1/federations", &As::member(), body.clone())
            .await;
        assert_eq!(r.status, status, "{body}: {}", r.body);
        assert_eq!(r.detail(), detail, "{body}");
    }
    let r = app
        .post(
            "/v1/federations",
            &As::reader(),
            json!({"hostcluster_id": "k8s", "properties": {"dns-zone": DNS}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert_eq!(rows(&app).await, 0);
}

#[tokio::test]
async fn join_and_unjoin_change_the_members_and_refuse_as_magnum_does() {
    let (app, f) = fixture().await;
    create(&app, "fed", &f.k8s, &[&f.k8s]).await;
    let patch = |op: &str, value: &str| json!([{"op": op, "path": "/member_ids", "value": value}]);
    let r = app
        .patch(
            "/v1/federations/fed",
            &As::member(),
            patch("add", &f.legacy),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(members(&app, "fed").await, json!([f.k8s, f.legacy]));
    let again = app
        .patch("/v1/federations/fed", &As::member(), patch("add", &f.k8s))
        .await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(
        again.detail(),
        format!(
            "A cluster with UUID {} is already a member of the federation fed.",
            f.k8s
        )
    );
    let foreign = app
        .patch(
            "/v1/federations/fed",
            &As::member(),
            patch("add", &f.foreign),
        )
        .await;
    assert_eq!(foreign.status, StatusCode::NOT_FOUND);
    let r = app
        .patch(
            "/v1/federations/fed",
            &As::member(),
            patch("remove", &f.k8s),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(members(&app, "fed").await, json!([f.legacy]));
    let not_member = app
        .patch(
            "/v1/federations/fed",
            &As::member(),
            patch("remove", &f.k8s),
        )
        .await;
    assert_eq!(not_member.status, StatusCode::NOT_FOUND);
    assert_eq!(
        not_member.detail(),
        format!("Cluster {} is not a member of the federation fed.", f.k8s)
    );
    let shown = app.get("/v1/federations/fed", &As::member()).await;
    assert_eq!(shown.body["status"], "UPDATE_COMPLETE");
}

#[tokio::test]
async fn only_members_and_properties_may_change() {
    let (app, f) = fixture().await;
    create(&app, "fed", &f.k8s, &[]).await;
    let r = app
        .patch(
            "/v1/federations/fed",
            &As::member(),
            json!([{"op": "replace", "path": "/name", "value": "renamed"},
                   {"op": "replace", "path": "/hostcluster_id", "value": "legacy"}]),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_eq!(
        r.detail(),
        "cannot change federation property(ies) hostcluster_id, name."
    );
    let r = app
        .patch(
            "/v1/federations/fed",
            &As::member(),
            json!([{"op": "replace", "path": "/properties/dns-zone", "value": "other."}]),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let shown = app.get("/v1/federations/fed", &As::member()).await;
    assert_eq!(shown.body["properties"], json!({"dns-zone": "other."}));
    assert_eq!(shown.body["name"], "fed");
}

#[tokio::test]
async fn federations_are_seen_by_their_project_only_admins_included() {
    let (app, f) = fixture().await;
    let uuid = create(&app, "fed", &f.k8s, &[]).await;
    for who in [As::other(), As::admin()] {
        let r = app.get(&format!("/v1/federations/{uuid}"), &who).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
        assert_eq!(r.detail(), format!("Federation {uuid} could not be found."));
        let list = app.get("/v1/federations", &who).await;
        assert_eq!(list.body["federations"], json!([]));
        let del = app.delete(&format!("/v1/federations/{uuid}"), &who).await;
        assert_eq!(del.status, StatusCode::NOT_FOUND);
    }
    assert_eq!(rows(&app).await, 1);
}

#[tokio::test]
async fn delete_removes_the_federation_and_readers_may_not() {
    let (app, f) = fixture().await;
    create(&app, "fed", &f.k8s, &[]).await;
    let r = app.delete("/v1/federations/fed", &As::reader()).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = app.delete("/v1/federations/fed", &As::member()).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(rows(&app).await, 0);
    let r = app.delete("/v1/federations/fed", &As::member()).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.detail(), "Federation fed could not be found.");
}

#[tokio::test]
async fn concurrent_joins_lose_no_member() {
    let (app, f) = fixture().await;
    create(&app, "fed", &f.k8s, &[]).await;
    let mut extra = Vec::new();
    for i in 0..6 {
        extra.push(
            app.cluster(&format!("m{i}"), "capi", 1, 1, &As::member())
                .await,
        );
    }
    let member = As::member();
    let replies = futures::future::join_all(extra.iter().map(|c| {
        app.patch(
            "/v1/federations/fed",
            &member,
            json!([{"op": "add", "path": "/member_ids", "value": c}]),
        )
    }))
    .await;
    for r in &replies {
        assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    }
    let mut got: Vec<String> = members(&app, "fed")
        .await
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    got.sort();
    extra.sort();
    assert_eq!(got, extra);
}

#[tokio::test]
async fn collection_and_member_routes_answer_as_pecan_routes_them() {
    let (app, f) = fixture().await;
    create(&app, "fed", &f.k8s, &[]).await;
    let r = app.delete("/v1/federations", &As::member()).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.detail(), "Missing argument: \"federation_ident\"");
    let r = app
        .post("/v1/federations/fed", &As::member(), json!({}))
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(
        r.detail().contains("unable to convert to Federation"),
        "{}",
        r.body
    );
    let r = app.get("/v1/federations/fed/detail", &As::member()).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let r = app
        .get("/v1/federations?sort_key=colour", &As::member())
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.detail(),
        "The sort_key value \"colour\" is an invalid field for sorting"
    );
}
