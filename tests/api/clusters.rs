//! `/v1/clusters`: shapes, lookups, tenancy, create validation, PATCH, DELETE and
//! pagination as Magnum's `ClustersController` answers them (reference §4.3–4.5, §7;
//! oracle blocks 4–10, 27–31, 53–55, 60, 65).

use crate::common;

use std::collections::BTreeSet;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use common::*;
use magnum_rs::model::Tenancy;
use magnum_rs::store::{ClusterSet, NodeGroupSet, Page, SortDir, SortKey, Table};

const SUMMARY: &[&str] = &[
    "uuid",
    "name",
    "cluster_template_id",
    "keypair",
    "docker_volume_size",
    "labels",
    "node_count",
    "status",
    "master_flavor_id",
    "flavor_id",
    "create_timeout",
    "master_count",
    "health_status",
    "links",
    "merge_labels",
];
const DETAIL_EXTRA: &[&str] = &[
    "api_address",
    "coe_version",
    "container_version",
    "created_at",
    "updated_at",
    "discovery_url",
    "fixed_network",
    "fixed_subnet",
    "floating_ip_enabled",
    "master_lb_enabled",
    "health_status_reason",
    "labels_added",
    "labels_overridden",
    "labels_skipped",
    "master_addresses",
    "node_addresses",
    "project_id",
    "user_id",
    "status_reason",
];

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

fn summary_keys(id_key: &str) -> BTreeSet<String> {
    SUMMARY
        .iter()
        .chain([id_key].iter())
        .map(|s| s.to_string())
        .collect()
}

fn detail_keys(id_key: &str) -> BTreeSet<String> {
    let mut k = summary_keys(id_key);
    k.extend(DETAIL_EXTRA.iter().map(|s| s.to_string()));
    k
}

fn names(body: &Value, key: &str) -> Vec<String> {
    body[key]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| c["name"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

async fn cluster_row(app: &TestApp, uuid: &str) -> magnum_rs::model::Cluster {
    app.state
        .store
        .cluster_by_uuid(uuid)
        .await
        .expect("db")
        .expect("cluster row")
}

async fn nodegroup_rows(app: &TestApp, uuid: &str) -> Vec<magnum_rs::model::NodeGroup> {
    app.state
        .store
        .nodegroups_of_clusters(&[uuid.to_string()])
        .await
        .expect("db")
}

async fn ng_uuid(app: &TestApp, cluster: &str, name: &str) -> String {
    nodegroup_rows(app, cluster)
        .await
        .into_iter()
        .find(|n| n.name == name)
        .map(|n| n.uuid)
        .expect("nodegroup row")
}

/// Adds a worker nodegroup to cluster `k8s` as its member, and lets the operations worker
/// create it.
async fn add_nodegroup(app: &TestApp, name: &str, node_count: i64) {
    let r = app
        .post(
            "/v1/clusters/k8s/nodegroups",
            &As::member(),
            json!({"name": name, "node_count": node_count}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    app.run_operations().await;
}

fn at(v: &str) -> String {
    format!("container-infra {v}")
}

// --- shapes -------------------------------------------------------------------------------

#[tokio::test]
async fn cluster_list_summary_has_exactly_magnums_keys_with_cluster_id_from_1_13() {
    let app = spawn_app().await;
    let f = app.standard_fixture().await;
    let r = app.get("/v1/clusters", &As::member()).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(keys(&r.body), BTreeSet::from(["clusters".to_string()]));
    let items = r.body["clusters"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 2);
    for c in &items {
        assert_eq!(keys(c), summary_keys("cluster_id"), "{c}");
        assert_eq!(c["merge_labels"], false);
    }
    let k8s = &items[0];
    assert_eq!(k8s["uuid"], f.k8s.as_str());
    assert_eq!(k8s["name"], "k8s");
    assert_eq!(k8s["node_count"], 2);
    assert_eq!(k8s["master_count"], 1);
    assert_eq!(k8s["status"], "CREATE_COMPLETE");
    assert_eq!(k8s["keypair"], "default");
    assert_eq!(k8s["flavor_id"], "m1.medium");
    assert_eq!(k8s["master_flavor_id"], "m1.large");
    assert_eq!(k8s["create_timeout"], 60);
    assert_eq!(k8s["docker_volume_size"], Value::Null);
    assert_eq!(k8s["labels"], json!({"kube_tag": "v1.30.4"}));
    let stack = cluster_row(&app, &f.k8s).await.stack_id;
    assert!(stack.is_some());
    assert_eq!(k8s["cluster_id"], json!(stack));
    assert_eq!(
        k8s["links"],
        json!([
            {"href": format!("http://localhost/v1/clusters/{}", f.k8s), "rel": "self"},
            {"href": format!("http://localhost/clusters/{}", f.k8s), "rel": "bookmark"},
        ])
    );
    assert_eq!(items[1]["name"], "legacy");
}

#[tokio::test]
async fn cluster_list_summary_shows_stack_id_below_1_13() {
    let app = spawn_app().await;
    let f = app.standard_fixture().await;
    let stack = cluster_row(&app, &f.k8s).await.stack_id;
    for v in [None, Some(at("1.9")), Some(at("1.12"))] {
        let r = app
            .send(
                Method::GET,
                "/v1/clusters",
                &As::member(),
                v.as_deref(),
                None,
            )
            .await;
        assert_eq!(r.status, StatusCode::OK);
        let c = &r.body["clusters"][0];
        assert_eq!(keys(c), summary_keys("stack_id"), "{v:?}");
        assert_eq!(c["stack_id"], json!(stack));
    }
    let r = app
        .send(
            Method::GET,
            "/v1/clusters",
            &As::member(),
            Some(&at("1.13")),
            None,
        )
        .await;
    assert_eq!(keys(&r.body["clusters"][0]), summary_keys("cluster_id"));
}

#[tokio::test]
async fn cluster_detail_list_items_have_every_field() {
    let app = spawn_app().await;
    let f = app.standard_fixture().await;
    let r = app.get("/v1/clusters/detail", &As::member()).await;
    assert_eq!(r.status, StatusCode::OK);
    let items = r.body["clusters"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 2);
    for c in &items {
        assert_eq!(keys(c), detail_keys("cluster_id"), "{c}");
    }
    let c = &items[0];
    assert_eq!(c["uuid"], f.k8s.as_str());
    assert_eq!(c["project_id"], PROJECT);
    assert_eq!(c["user_id"], "u-demo");
    assert_eq!(c["master_lb_enabled"], true);
    assert_eq!(c["floating_ip_enabled"], true);
    assert_eq!(c["health_status_reason"], json!({}));
    assert_eq!(c["labels_added"], json!({}));
    assert_eq!(c["labels_overridden"], json!({}));
    assert_eq!(c["labels_skipped"], json!({}));
    assert!(c["api_address"].is_string());

    let r = app
        .send(
            Method::GET,
            "/v1/clusters/detail",
            &As::member(),
            Some(&at("1.12")),
            None,
        )
        .await;
    assert_eq!(keys(&r.body["clusters"][0]), detail_keys("stack_id"));
}

#[tokio::test]
async fn cluster_show_is_the_detail_object_without_faults_when_healthy() {
    let app = spawn_app().await;
    let f = app.standard_fixture().await;
    let r = app
        .get(&format!("/v1/clusters/{}", f.k8s), &As::member())
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(keys(&r.body), detail_keys("cluster_id"));
    let listed = app.get("/v1/clusters/detail", &As::member()).await;
    assert_eq!(r.body, listed.body["clusters"][0]);
    let r = app
        .send(
            Method::GET,
            "/v1/clusters/k8s",
            &As::member(),
            Some(&at("1.12")),
            None,
        )
        .await;
    assert_eq!(keys(&r.body), detail_keys("stack_id"));
}

#[tokio::test]
async fn cluster_show_adds_faults_of_failed_nodegroups_when_the_cluster_failed() {
    let app = spawn_app().await;
    let f = app.standard_fixture().await;
    let store = &app.state.store;
    let c = cluster_row(&app, &f.k8s).await;
    store
        .update_cluster(
            &c.uuid,
            &[
                ClusterSet::Status("UPDATE_FAILED".into()),
                ClusterSet::StatusReason(Some("worker failed".into())),
            ],
        )
        .await
        .expect("db");
    let worker = ng_uuid(&app, &f.k8s, "default-worker").await;
    store
        .update_nodegroup(
            &worker,
            &[
                NodeGroupSet::Status("UPDATE_FAILED".into()),
                NodeGroupSet::StatusReason(Some("no capacity".into())),
            ],
        )
        .await
        .expect("db");

    let r = app.get("/v1/clusters/k8s", &As::member()).await;
    assert_eq!(r.status, StatusCode::OK);
    let mut expected = detail_keys("cluster_id");
    expected.insert("faults".into());
    assert_eq!(keys(&r.body), expected);
    assert_eq!(r.body["faults"], json!({"default-worker": "no capacity"}));
    assert_eq!(r.body["status"], "UPDATE_FAILED");
    assert_eq!(r.body["status_reason"], "worker failed");

    // Lists never carry faults.
    let list = app.get("/v1/clusters/detail", &As::member()).await;
    assert!(list.body["clusters"][0].get("faults").is_none());

    // A failed cluster whose nodegroups are fine shows an empty faults dict; a cluster
    // status outside the failed set shows none even with a failed nodegroup.
    store
        .update_nodegroup(&worker, &[NodeGroupSet::Status("UPDATE_COMPLETE".into())])
        .await
        .expect("db");
    let r = app.get("/v1/clusters/k8s", &As::member()).await;
    assert_eq!(r.body["faults"], json!({}));
    store
        .update_nodegroup(&worker, &[NodeGroupSet::Status("UPDATE_FAILED".into())])
        .await
        .expect("db");
    store
        .update_cluster(&c.uuid, &[ClusterSet::Status("UPDATE_IN_PROGRESS".into())])
        .await
        .expect("db");
    let r = app.get("/v1/clusters/k8s", &As::member()).await;
    assert!(r.body.get("faults").is_none(), "{}", r.body);
}

#[tokio::test]
async fn cluster_counts_and_addresses_are_computed_from_nodegroups() {
    let app = spawn_app().await;
    let f = app.standard_fixture().await;
    add_nodegroup(&app, "extra", 3).await;
    let store = &app.state.store;
    let addr = |a: &[&str]| a.iter().map(|s| json!(s)).collect::<Vec<Value>>();
    for (ng, count, addresses) in [
        (
            "default-master",
            3,
            addr(&["10.0.0.10", "10.0.0.11", "10.0.0.12"]),
        ),
        ("default-worker", 2, addr(&["10.0.0.20", "10.0.0.21"])),
        ("extra", 3, addr(&["10.0.0.30"])),
    ] {
        let id = ng_uuid(&app, &f.k8s, ng).await;
        store
            .update_nodegroup(
                &id,
                &[
                    NodeGroupSet::NodeCount(count),
                    NodeGroupSet::NodeAddresses(addresses),
                ],
            )
            .await
            .expect("db");
    }
    let r = app.get("/v1/clusters/k8s", &As::member()).await;
    assert_eq!(r.body["node_count"], 5, "all non-master nodegroups");
    assert_eq!(r.body["master_count"], 3);
    assert_eq!(
        r.body["node_addresses"],
        json!(["10.0.0.20", "10.0.0.21", "10.0.0.30"])
    );
    assert_eq!(
        r.body["master_addresses"],
        json!(["10.0.0.10", "10.0.0.11", "10.0.0.12"])
    );
    let list = app.get("/v1/clusters", &As::member()).await;
    assert_eq!(list.body["clusters"][0]["node_count"], 5);
    assert_eq!(list.body["clusters"][0]["master_count"], 3);
}

/// The summary list computes the counts in SQL; they are the detail's (computed in Rust
/// from the nodegroup rows) for rows Magnum's database may hold: a NULL `node_count`
/// (counts 1), a NULL `role` (not a master), and a cluster without nodegroups (0 and 0).
#[tokio::test]
async fn summary_list_counts_equal_the_detail_counts_for_odd_nodegroup_rows() {
    let app = spawn_app().await;
    let f = app.standard_fixture().await;
    add_nodegroup(&app, "extra", 4).await;
    let store = &app.state.store;
    let extra = ng_uuid(&app, &f.k8s, "extra").await;
    let worker = ng_uuid(&app, &f.k8s, "default-worker").await;
    let mut side = store.side_connection().await.expect("connection");
    sqlx::query("UPDATE nodegroup SET role = NULL WHERE uuid = ?")
        .bind(extra)
        .execute(&mut side)
        .await
        .expect("null role");
    sqlx::query("UPDATE nodegroup SET node_count = NULL WHERE uuid = ?")
        .bind(worker)
        .execute(&mut side)
        .await
        .expect("null count");
    let bare = app.cluster("bare", "capi", 1, 1, &As::member()).await;
    sqlx::query("DELETE FROM nodegroup WHERE cluster_id = ?")
        .bind(bare.clone())
        .execute(&mut side)
        .await
        .expect("no nodegroups");
    let list = app.get("/v1/clusters", &As::member()).await;
    let detail = app.get("/v1/clusters/detail", &As::member()).await;
    let pick = |body: &Value, uuid: &str| {
        body["clusters"]
            .as_array()
            .expect("clusters")
            .iter()
            .find(|c| c["uuid"] == uuid)
            .map(|c| (c["node_count"].clone(), c["master_count"].clone()))
            .expect("listed")
    };
    let k8s = f.k8s.clone();
    assert_eq!(
        pick(&list.body, &k8s),
        (json!(5), json!(1)),
        "{}",
        list.body
    );
    assert_eq!(pick(&list.body, &k8s), pick(&detail.body, &k8s));
    assert_eq!(
        pick(&list.body, &bare),
        (json!(0), json!(0)),
        "{}",
        list.body
    );
    assert_eq!(pick(&list.body, &bare), pick(&detail.body, &bare));
}

// --- lookups and tenancy ------------------------------------------------------------------

#[tokio::test]
async fn cluster_is_found_by_uuid_or_by_name() {
    let app = spawn_app().await;
    let f = app.standard_fixture().await;
    let by_uuid = app
        .get(&format!("/v1/clusters/{}", f.k8s), &As::member())
        .await;
    let by_name = app.get("/v1/clusters/k8s", &As::member()).await;
    assert_eq!(by_uuid.status, StatusCode::OK);
    assert_eq!(by_uuid.body, by_name.body);
    assert_eq!(by_name.body["uuid"], f.k8s.as_str());
}

#[tokio::test]
async fn missing_cluster_is_404_echoing_the_identifier() {
    let app = spawn_app().await;
    app.standard_fixture().await;
    let r = app.get("/v1/clusters/nothere", &As::member()).await;
    assert_envelope(
        &r,
        StatusCode::NOT_FOUND,
        "Cluster nothere could not be found.",
    );
    let u = "a1a1a1a1-0000-4000-8000-0000000000ff";
    let r = app.get(&format!("/v1/clusters/{u}"), &As::member()).await;
    assert_envelope(
        &r,
        StatusCode::NOT_FOUND,
        &format!("Cluster {u} could not be found."),
    );
    let r = app.delete("/v1/clusters/nothere", &As::member()).await;
    assert_envelope(
        &r,
        StatusCode::NOT_FOUND,
        "Cluster nothere could not be found.",
    );
    let r = app
        .patch(
            "/v1/clusters/nothere",
            &As::member(),
            json!([{"op": "replace", "path": "/node_count", "value": 3}]),
        )
        .await;
    assert_envelope(
        &r,
        StatusCode::NOT_FOUND,
        "Cluster nothere could not be found.",
    );
}

#[tokio::test]
async fn uuid_like_identifier_is_looked_up_only_by_uuid_never_as_a_name() {
    let app = spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    // A name that matches the name pattern and also looks like a UUID.
    let name = "abcdef01-0000-4000-8000-000000000001";
    app.cluster(name, "capi", 1, 1, &As::member()).await;
    let r = app
        .get(&format!("/v1/clusters/{name}"), &As::member())
        .await;
    assert_envelope(
        &r,
        StatusCode::NOT_FOUND,
        &format!("Cluster {name} could not be found."),
    );
    let list = app.get("/v1/clusters", &As::member()).await;
    assert_eq!(names(&list.body, "clusters"), vec![name.to_string()]);
    // A braced UUID is UUID-like too, and compares unequal to the stored uuid.
    let uuid = list.body["clusters"][0]["uuid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let braced = format!("{{{uuid}}}");
    let r = app
        .get(&format!("/v1/clusters/{braced}"), &As::member())
        .await;
    assert_envelope(
        &r,
        StatusCode::NOT_FOUND,
        &format!("Cluster {braced} could not be found."),
    );
}

#[tokio::test]
async fn ambiguous_cluster_name_is_409_multiple_clusters() {
    let app = spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    let a = app.cluster("dup", "capi", 1, 1, &As::member()).await;
    app.cluster("dup", "capi", 1, 1, &As::member()).await;
    let text = "Multiple clusters exist with same name. Please use the cluster uuid instead.";
    let r = app.get("/v1/clusters/dup", &As::member()).await;
    assert_envelope(&r, StatusCode::CONFLICT, text);
    let r = app
        .patch(
            "/v1/clusters/dup",
            &As::member(),
            json!([{"op": "replace", "path": "/node_count", "value": 2}]),
        )
        .await;
    assert_envelope(&r, StatusCode::CONFLICT, text);
    let r = app.delete("/v1/clusters/dup", &As::member()).await;
    assert_envelope(&r, StatusCode::CONFLICT, text);
    // The uuid still works.
    let r = app.get(&format!("/v1/clusters/{a}"), &As::member()).await;
    assert_eq!(r.status, StatusCode::OK);
}

#[tokio::test]
async fn same_name_in_another_project_is_not_ambiguous() {
    let app = spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    app.template("capi", "ubuntu", &As::other()).await;
    let mine = app.cluster("shared", "capi", 1, 1, &As::member()).await;
    app.cluster("shared", "capi", 1, 1, &As::other()).await;
    let r = app.get("/v1/clusters/shared", &As::member()).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["uuid"], mine.as_str());
}

#[tokio::test]
async fn cluster_of_another_project_is_404_not_403() {
    let app = spawn_app().await;
    let f = app.standard_fixture().await;
    let text = format!("Cluster {} could not be found.", f.foreign);
    let r = app
        .get(&format!("/v1/clusters/{}", f.foreign), &As::member())
        .await;
    assert_envelope(&r, StatusCode::NOT_FOUND, &text);
    let r = app.get("/v1/clusters/foreign", &As::member()).await;
    assert_envelope(
        &r,
        StatusCode::NOT_FOUND,
        "Cluster foreign could not be found.",
    );
    let r = app
        .patch(
            &format!("/v1/clusters/{}", f.foreign),
            &As::member(),
            json!([{"op": "replace", "path": "/node_count", "value": 2}]),
        )
        .await;
    assert_envelope(&r, StatusCode::NOT_FOUND, &text);
    let r = app
        .delete(&format!("/v1/clusters/{}", f.foreign), &As::member())
        .await;
    assert_envelope(&r, StatusCode::NOT_FOUND, &text);

    let mine = app.get("/v1/clusters", &As::member()).await;
    assert_eq!(names(&mine.body, "clusters"), vec!["k8s", "legacy"]);
    let theirs = app.get("/v1/clusters", &As::other()).await;
    assert_eq!(names(&theirs.body, "clusters"), vec!["foreign"]);
    // Nothing changed for the owner.
    let r = app.get("/v1/clusters/foreign", &As::other()).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["status"], "CREATE_COMPLETE");
}

#[tokio::test]
async fn admin_sees_clusters_of_all_projects() {
    let app = spawn_app().await;
    let f = app.standard_fixture().await;
    let r = app.get("/v1/clusters", &As::admin()).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(names(&r.body, "clusters"), vec!["k8s", "legacy", "foreign"]);
    let r = app.get("/v1/clusters/detail", &As::admin()).await;
    assert_eq!(r.body["clusters"].as_array().map(Vec::len), Some(3));
    let r = app
        .get(&format!("/v1/clusters/{}", f.foreign), &As::admin())
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["project_id"], OTHER_PROJECT);
}

#[tokio::test]
async fn all_tenants_query_argument_is_400_unknown_argument_even_for_admin() {
    let app = spawn_app().await;
    for who in [As::member(), As::admin()] {
        let r = app.get("/v1/clusters?all_tenants=1", &who).await;
        assert_envelope(
            &r,
            StatusCode::BAD_REQUEST,
            "Unknown argument: \"all_tenants\"",
        );
        let r = app.get("/v1/clusters/detail?project_id=x", &who).await;
        assert_envelope(
            &r,
            StatusCode::BAD_REQUEST,
            "Unknown argument: \"project_id\"",
        );
    }
}

#[tokio::test]
async fn member_role_alone_cannot_list_clusters() {
    // Roles are matched literally: `member` without `reader` fails the reader rule.
    let app = spawn_app().await;
    let who = As {
        roles: "member".into(),
        ..As::member()
    };
    let r = app.get("/v1/clusters", &who).await;
    assert_envelope(
        &r,
        StatusCode::FORBIDDEN,
        "Policy doesn't allow cluster:get_all to be performed.",
    );
}

// --- create -------------------------------------------------------------------------------

fn create_body(template: &str) -> Value {
    json!({"name": "new", "cluster_template_id": template, "master_count": 1, "node_count": 1})
}

#[tokio::test]
async fn reader_cannot_create_a_cluster_403() {
    let app = spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    let r = app
        .post("/v1/clusters", &As::reader(), create_body("capi"))
        .await;
    assert_envelope(
        &r,
        StatusCode::FORBIDDEN,
        "Policy doesn't allow cluster:create to be performed.",
    );
    let r = app.get("/v1/clusters", &As::member()).await;
    assert_eq!(r.body, json!({"clusters": []}));
}

#[tokio::test]
async fn member_creates_a_cluster_202_with_only_its_new_uuid() {
    let app = spawn_app().await;
    let t = app.template("capi", "ubuntu", &As::member()).await;
    let r = app
        .post(
            "/v1/clusters",
            &As::member(),
            json!({
                "name": "new", "cluster_template_id": "capi", "master_count": 3,
                "node_count": 4, "uuid": "a1a1a1a1-0000-4000-8000-000000000001",
            }),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(keys(&r.body), BTreeSet::from(["uuid".to_string()]));
    let uuid = r.body["uuid"].as_str().unwrap_or_default().to_string();
    // A client-supplied uuid is ignored for clusters.
    assert_ne!(uuid, "a1a1a1a1-0000-4000-8000-000000000001");
    assert!(uuid::Uuid::parse_str(&uuid).is_ok());

    let r = app
        .get(&format!("/v1/clusters/{uuid}"), &As::member())
        .await;
    assert_eq!(r.body["status"], "CREATE_IN_PROGRESS");
    assert_eq!(r.body["cluster_template_id"], t["uuid"]);
    app.run_operations().await;
    let r = app.get("/v1/clusters/new", &As::member()).await;
    assert_eq!(r.body["status"], "CREATE_COMPLETE");
    assert_eq!(r.body["master_count"], 3);
    assert_eq!(r.body["node_count"], 4);
    assert_eq!(r.body["keypair"], "default", "from the template");
    assert_eq!(r.body["labels"], json!({"kube_tag": "v1.30.4"}));
    let ngs = nodegroup_rows(&app, &uuid).await;
    let summary: Vec<(String, Option<String>, i64, Option<bool>)> = ngs
        .iter()
        .map(|n| (n.name.clone(), n.role.clone(), n.node_count, n.is_default))
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                "default-master".into(),
                Some("master".into()),
                3,
                Some(true)
            ),
            (
                "default-worker".into(),
                Some("worker".into()),
                4,
                Some(true)
            ),
        ]
    );
}

#[tokio::test]
async fn cluster_without_a_name_gets_a_generated_one() {
    let app = spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    let r = app
        .post(
            "/v1/clusters",
            &As::member(),
            json!({"cluster_template_id": "capi"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let uuid = r.body["uuid"].as_str().unwrap_or_default();
    let r = app
        .get(&format!("/v1/clusters/{uuid}"), &As::member())
        .await;
    let name = r.body["name"].as_str().unwrap_or_default();
    assert!(name.ends_with("-cluster"), "{name}");
    assert_eq!(r.body["node_count"], 1, "default node_count");
    assert_eq!(r.body["master_count"], 1, "default master_count");
}

#[tokio::test]
async fn cluster_labels_replace_or_merge_with_template_labels() {
    let app = spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    let r = app
        .post(
            "/v1/clusters",
            &As::member(),
            json!({"name": "replaced", "cluster_template_id": "capi", "labels": {"a": "b", "n": 1}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let r = app
        .post(
            "/v1/clusters",
            &As::member(),
            json!({"name": "merged", "cluster_template_id": "capi", "merge_labels": true,
                   "labels": {"a": "b", "kube_tag": "v1.31.0"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let r = app.get("/v1/clusters/replaced", &As::member()).await;
    assert_eq!(r.body["labels"], json!({"a": "b", "n": "1"}));
    assert_eq!(r.body["labels_added"], json!({"a": "b", "n": "1"}));
    assert_eq!(r.body["labels_skipped"], json!({"kube_tag": "v1.30.4"}));
    assert_eq!(r.body["labels_overridden"], json!({}));
    assert_eq!(r.body["merge_labels"], false, "never echoed");
    let r = app.get("/v1/clusters/merged", &As::member()).await;
    assert_eq!(r.body["labels"], json!({"a": "b", "kube_tag": "v1.31.0"}));
    assert_eq!(r.body["labels_added"], json!({"a": "b"}));
    assert_eq!(r.body["labels_overridden"], json!({"kube_tag": "v1.30.4"}));
    assert_eq!(r.body["labels_skipped"], json!({}));
}

#[tokio::test]
async fn create_without_cluster_template_id_is_400_mandatory_field_missing() {
    let app = spawn_app().await;
    let r = app
        .post("/v1/clusters", &As::member(), json!({"name": "x"}))
        .await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Invalid input for field/attribute cluster_template_id. Value: 'None'. Mandatory field missing.",
    );
}

#[tokio::test]
async fn create_with_a_name_not_matching_the_pattern_is_400() {
    let app = spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    for bad in ["1bad", "bad name", "-x", "x/y"] {
        let r = app
            .post(
                "/v1/clusters",
                &As::member(),
                json!({"name": bad, "cluster_template_id": "capi"}),
            )
            .await;
        assert_envelope(
            &r,
            StatusCode::BAD_REQUEST,
            &format!(
                "Invalid input for field/attribute name. Value: '{bad}'. Value should match the pattern ^[a-zA-Z][a-zA-Z0-9_.-]*$"
            ),
        );
    }
    let r = app
        .post(
            "/v1/clusters",
            &As::member(),
            json!({"name": "", "cluster_template_id": "capi"}),
        )
        .await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Invalid input for field/attribute name. Value: ''. Value should have a minimum character requirement of 1",
    );
    let r = app
        .post(
            "/v1/clusters",
            &As::member(),
            json!({"name": "ok", "cluster_template_id": "capi", "node_count": -1}),
        )
        .await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Invalid input for field/attribute node_count. Value: '-1'. Value should be greater or equal to 0",
    );
    let r = app
        .post(
            "/v1/clusters",
            &As::member(),
            json!({"name": "ok", "cluster_template_id": "capi", "master_count": 0}),
        )
        .await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Invalid input for field/attribute master_count. Value: '0'. Value should be greater or equal to 1",
    );
}

#[tokio::test]
async fn create_attribute_types_are_checked_like_wsme() {
    let app = spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    // `serde_json` sorts object keys, so the echoed bodies below are in key order.
    let cases = [
        (
            json!({"cluster_template_id": "capi", "labels": "x", "name": "new"}),
            "Invalid input for field/attribute cluster. Value: '{'cluster_template_id': 'capi', 'labels': 'x', 'name': 'new'}'. Value not a valid dict: x",
        ),
        (
            json!({"cluster_template_id": "capi", "labels": {"a": {"b": 1}}}),
            "Invalid input for field/attribute labels. Value: '{'a': {'b': 1}}'. Wrong type. Expected '(<class 'str'>, <class 'int'>, <class 'bool'>, <class 'float'>)', got '<class 'dict'>'",
        ),
        (
            json!({"cluster_template_id": "capi", "name": 5}),
            "Invalid input for field/attribute name. Value: '5'. Value should be string",
        ),
        (
            json!({"cluster_template_id": 5}),
            "Invalid input for field/attribute cluster_template_id. Value: '5'. Wrong type. Expected '<class 'str'>', got '<class 'int'>'",
        ),
        (
            json!({"cluster_template_id": "capi", "node_count": "abc"}),
            // `IntegerType` converts inside `fromjson` of the whole body (observed on Magnum 23).
            "Invalid input for field/attribute cluster. Value: '{'cluster_template_id': 'capi', 'node_count': 'abc'}'. invalid literal for int() with base 10: 'abc'",
        ),
        (
            json!({"cluster_template_id": "capi", "uuid": "notauuid"}),
            "Expected a uuid but received notauuid.",
        ),
    ];
    for (body, text) in cases {
        let r = app.post("/v1/clusters", &As::member(), body).await;
        assert_envelope(&r, StatusCode::BAD_REQUEST, text);
    }
    let r = app.get("/v1/clusters", &As::member()).await;
    assert_eq!(r.body, json!({"clusters": []}));
}

#[tokio::test]
async fn boolean_attributes_use_strict_bool_from_string() {
    let app = spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    let acceptable = "acceptable values are: '0', '1', 'f', 'false', 'n', 'no', 'off', 'on', 't', 'true', 'y', 'yes'";
    for (value, shown) in [
        (json!("maybe"), "maybe"),
        (json!(2), "2"),
        (json!(1.0), "1.0"),
    ] {
        let r = app
            .post(
                "/v1/clusters",
                &As::member(),
                json!({"cluster_template_id": "capi", "master_lb_enabled": value}),
            )
            .await;
        assert_envelope(
            &r,
            StatusCode::BAD_REQUEST,
            &format!("Unrecognized value '{shown}', {acceptable}"),
        );
    }
    for (value, expected) in [
        (json!("Yes"), true),
        (json!(0), false),
        (json!("off"), false),
    ] {
        let r = app
            .post(
                "/v1/clusters",
                &As::member(),
                json!({"name": "b", "cluster_template_id": "capi", "floating_ip_enabled": value}),
            )
            .await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
        let uuid = r.body["uuid"].as_str().unwrap_or_default();
        let c = app
            .get(&format!("/v1/clusters/{uuid}"), &As::member())
            .await;
        assert_eq!(c.body["floating_ip_enabled"], expected);
    }
}

#[tokio::test]
async fn even_master_count_is_400_before_policy_even_for_a_reader() {
    let app = spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    app.template("heat", "fedora-coreos", &As::member()).await;
    for (who, template) in [
        (As::reader(), "capi"),
        (As::member(), "capi"),
        (As::member(), "heat"),
    ] {
        let mut body = create_body(template);
        body["master_count"] = json!(2);
        let r = app.post("/v1/clusters", &who, body).await;
        assert_envelope(
            &r,
            StatusCode::BAD_REQUEST,
            "master nodegroup size of 2 is invalid, size cannot be an even number.",
        );
    }
    // With a valid size the reader meets the policy.
    let mut body = create_body("capi");
    body["master_count"] = json!(3);
    let r = app.post("/v1/clusters", &As::reader(), body).await;
    assert_envelope(
        &r,
        StatusCode::FORBIDDEN,
        "Policy doesn't allow cluster:create to be performed.",
    );
}

#[tokio::test]
async fn master_count_above_1_needs_master_lb_enabled() {
    let app = spawn_app().await;
    let r = app
        .post(
            "/v1/clustertemplates",
            &As::member(),
            json!({"name": "nolb", "coe": "kubernetes", "image_id": "img", "cluster_distro": "ubuntu",
                   "flavor_id": "m1.medium", "master_lb_enabled": false}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let mut body = create_body("nolb");
    body["master_count"] = json!(3);
    let r = app.post("/v1/clusters", &As::member(), body.clone()).await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "master_count must be 1 when master_lb_enabled is False",
    );
    // The cluster's own master_lb_enabled overrides the template's.
    body["master_lb_enabled"] = json!(true);
    let r = app.post("/v1/clusters", &As::member(), body).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
}

#[tokio::test]
async fn unknown_template_is_404_from_1_10_and_400_below() {
    let app = spawn_app().await;
    let text = "ClusterTemplate nope could not be found.";
    let r = app
        .post("/v1/clusters", &As::member(), create_body("nope"))
        .await;
    assert_envelope(&r, StatusCode::NOT_FOUND, text);
    for v in ["1.10", "1.14"] {
        let r = app
            .send(
                Method::POST,
                "/v1/clusters",
                &As::member(),
                Some(&at(v)),
                Some(&create_body("nope").to_string()),
            )
            .await;
        assert_envelope(&r, StatusCode::NOT_FOUND, text);
    }
    for v in [None, Some(at("1.9"))] {
        let r = app
            .send(
                Method::POST,
                "/v1/clusters",
                &As::member(),
                v.as_deref(),
                Some(&create_body("nope").to_string()),
            )
            .await;
        assert_envelope(&r, StatusCode::BAD_REQUEST, text);
    }
}

#[tokio::test]
async fn template_of_another_project_is_not_found_for_create() {
    let app = spawn_app().await;
    app.template("capi-other", "ubuntu", &As::other()).await;
    let r = app
        .post("/v1/clusters", &As::member(), create_body("capi-other"))
        .await;
    assert_envelope(
        &r,
        StatusCode::NOT_FOUND,
        "ClusterTemplate capi-other could not be found.",
    );
}

#[tokio::test]
async fn zero_node_count_is_refused_on_create_below_1_10() {
    let app = spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    let mut body = create_body("capi");
    body["node_count"] = json!(0);
    let r = app
        .send(
            Method::POST,
            "/v1/clusters",
            &As::member(),
            Some(&at("1.9")),
            Some(&body.to_string()),
        )
        .await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Resizing a nodegroup to zero is not supported in the provided microversion.",
    );
    let r = app.post("/v1/clusters", &As::member(), body).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    app.run_operations().await;
    let r = app.get("/v1/clusters/new", &As::member()).await;
    assert_eq!(r.body["node_count"], 0);
}

#[tokio::test]
async fn unknown_attribute_in_a_cluster_body_is_400() {
    let app = spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    let mut body = create_body("capi");
    body["foo"] = json!(1);
    let r = app.post("/v1/clusters", &As::member(), body).await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Unknown attribute for argument cluster: foo",
    );
}

#[tokio::test]
async fn read_only_attribute_in_a_cluster_body_is_400() {
    let app = spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    for (field, value, shown) in [
        ("api_address", json!("https://x"), "https://x"),
        ("stack_id", json!("s"), "s"),
        ("cluster_id", json!("s"), "s"),
        ("project_id", json!("p"), "p"),
    ] {
        let mut body = create_body("capi");
        body[field] = value;
        let r = app.post("/v1/clusters", &As::member(), body).await;
        assert_envelope(
            &r,
            StatusCode::BAD_REQUEST,
            &format!(
                "Invalid input for field/attribute {field}. Value: '{shown}'. Cannot set read only field."
            ),
        );
    }
}

#[tokio::test]
async fn malformed_or_missing_cluster_body_is_400() {
    let app = spawn_app().await;
    let r = app
        .send(
            Method::POST,
            "/v1/clusters",
            &As::member(),
            Some(LATEST),
            Some("{"),
        )
        .await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Request is not in valid JSON format",
    );
    let r = app
        .send(
            Method::POST,
            "/v1/clusters",
            &As::member(),
            Some(LATEST),
            Some(""),
        )
        .await;
    assert_envelope(&r, StatusCode::BAD_REQUEST, "Missing argument: \"cluster\"");
}

#[tokio::test]
async fn the_21st_cluster_of_a_project_exceeds_the_quota_403() {
    let app = spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    for i in 0..20 {
        let r = app
            .post(
                "/v1/clusters",
                &As::member(),
                json!({"name": format!("c{i}"), "cluster_template_id": "capi"}),
            )
            .await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{i}: {}", r.body);
    }
    let r = app
        .post("/v1/clusters", &As::member(), create_body("capi"))
        .await;
    assert_envelope(
        &r,
        StatusCode::FORBIDDEN,
        "Resource limit exceeded: You have reached the maximum clusters per project, 20. You may delete a cluster to make room for a new one.",
    );
    // Another project has its own quota.
    app.template("capi", "ubuntu", &As::other()).await;
    let r = app
        .post("/v1/clusters", &As::other(), create_body("capi"))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
}

// --- PATCH --------------------------------------------------------------------------------

#[tokio::test]
async fn patch_node_count_resizes_the_default_worker_only() {
    let app = spawn_app().await;
    let f = app.standard_fixture().await;
    let r = app
        .post(
            "/v1/clusters/k8s/nodegroups",
            &As::member(),
            json!({"name": "extra", "node_count": 2}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    app.run_operations().await;
    let r = app
        .patch(
            "/v1/clusters/k8s",
            &As::member(),
            json!([{"op": "replace", "path": "/node_count", "value": 5}]),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(r.body, json!({"uuid": f.k8s}));
    app.run_operations().await;
    let worker = app.nodegroup("k8s", "default-worker").await;
    assert_eq!(worker["node_count"], 5);
    let extra = app.nodegroup("k8s", "extra").await;
    assert_eq!(extra["node_count"], 2);
    let master = app.nodegroup("k8s", "default-master").await;
    assert_eq!(master["node_count"], 1);
    let r = app.get("/v1/clusters/k8s", &As::member()).await;
    assert_eq!(r.body["node_count"], 7);
    assert_eq!(r.body["master_count"], 1);
    assert_eq!(r.body["status"], "UPDATE_COMPLETE");
}

#[tokio::test]
async fn patch_name_is_400_cannot_change_cluster_property() {
    let app = spawn_app().await;
    app.standard_fixture().await;
    let r = app
        .patch(
            "/v1/clusters/k8s",
            &As::member(),
            json!([{"op": "replace", "path": "/name", "value": "renamed"}]),
        )
        .await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "cannot change cluster property(ies) name.",
    );
    let r = app
        .patch(
            "/v1/clusters/k8s",
            &As::member(),
            json!([{"op": "replace", "path": "/master_count", "value": 3}]),
        )
        .await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "cannot change cluster property(ies) master_count.",
    );
    let r = app.get("/v1/clusters/k8s", &As::member()).await;
    assert_eq!(r.body["name"], "k8s");
    assert_eq!(r.body["master_count"], 1);
}

#[tokio::test]
async fn patch_internal_attributes_is_400() {
    let app = spawn_app().await;
    app.standard_fixture().await;
    for path in [
        "/uuid",
        "/api_address",
        "/stack_id",
        "/cluster_id",
        "/project_id",
    ] {
        let r = app
            .patch(
                "/v1/clusters/k8s",
                &As::member(),
                json!([{"op": "replace", "path": path, "value": "x"}]),
            )
            .await;
        assert_envelope(
            &r,
            StatusCode::BAD_REQUEST,
            &format!("'{path}' is an internal attribute and can not be updated"),
        );
    }
    let r = app
        .patch(
            "/v1/clusters/k8s",
            &As::member(),
            json!([{"op": "remove", "path": "/cluster_template_id"}]),
        )
        .await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "'/cluster_template_id' is a mandatory attribute and can not be removed",
    );
}

#[tokio::test]
async fn patch_rollback_query_argument_exists_from_1_3() {
    let app = spawn_app().await;
    app.standard_fixture().await;
    let body = json!([{"op": "replace", "path": "/node_count", "value": 3}]).to_string();
    let r = app
        .send(
            Method::PATCH,
            "/v1/clusters/k8s?rollback=True",
            &As::member(),
            Some(&at("1.2")),
            Some(&body),
        )
        .await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Unknown argument: \"rollback\"",
    );
    let r = app
        .send(
            Method::PATCH,
            "/v1/clusters/k8s?rollback=maybe",
            &As::member(),
            Some(LATEST),
            Some(&body),
        )
        .await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Invalid input for field/attribute rollback. Value: 'maybe'. unable to convert to boolean. Error: Unrecognized value 'maybe', acceptable values are: '0', '1', 'f', 'false', 'n', 'no', 'off', 'on', 't', 'true', 'y', 'yes'",
    );
    let r = app
        .send(
            Method::PATCH,
            "/v1/clusters/k8s?rollback=True",
            &As::member(),
            Some(&at("1.3")),
            Some(&body),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    app.run_operations().await;
    assert_eq!(
        app.nodegroup("k8s", "default-worker").await["node_count"],
        3
    );
}

#[tokio::test]
async fn patch_and_delete_look_the_cluster_up_before_the_policy_check() {
    let app = spawn_app().await;
    app.standard_fixture().await;
    let r = app.delete("/v1/clusters/nothere", &As::reader()).await;
    assert_envelope(
        &r,
        StatusCode::NOT_FOUND,
        "Cluster nothere could not be found.",
    );
    let r = app
        .patch(
            "/v1/clusters/nothere",
            &As::reader(),
            json!([{"op": "replace", "path": "/node_count", "value": 3}]),
        )
        .await;
    assert_envelope(
        &r,
        StatusCode::NOT_FOUND,
        "Cluster nothere could not be found.",
    );
    // The patch document itself is validated before anything else.
    let r = app
        .patch(
            "/v1/clusters/nothere",
            &As::reader(),
            json!([{"op": "replace", "path": "/uuid", "value": "x"}]),
        )
        .await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "'/uuid' is an internal attribute and can not be updated",
    );
}

#[tokio::test]
async fn patch_health_status_is_applied_at_once() {
    let app = spawn_app().await;
    app.standard_fixture().await;
    let r = app
        .patch(
            "/v1/clusters/k8s",
            &As::member(),
            json!([
                {"op": "replace", "path": "/health_status", "value": "UNHEALTHY"},
                {"op": "replace", "path": "/health_status_reason", "value": "{'api': 'down'}"},
            ]),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let r = app.get("/v1/clusters/k8s", &As::member()).await;
    assert_eq!(r.body["health_status"], "UNHEALTHY");
    assert_eq!(r.body["health_status_reason"], json!({"api": "down"}));
}

#[tokio::test]
async fn reader_cannot_patch_or_delete_a_cluster() {
    let app = spawn_app().await;
    app.standard_fixture().await;
    let r = app
        .patch(
            "/v1/clusters/k8s",
            &As::reader(),
            json!([{"op": "replace", "path": "/node_count", "value": 3}]),
        )
        .await;
    assert_envelope(
        &r,
        StatusCode::FORBIDDEN,
        "Policy doesn't allow cluster:update to be performed.",
    );
    let r = app.delete("/v1/clusters/k8s", &As::reader()).await;
    assert_envelope(
        &r,
        StatusCode::FORBIDDEN,
        "Policy doesn't allow cluster:delete to be performed.",
    );
    let r = app.get("/v1/clusters/k8s", &As::reader()).await;
    assert_eq!(r.body["status"], "CREATE_COMPLETE");
    assert_eq!(r.body["node_count"], 2);
}

// --- DELETE -------------------------------------------------------------------------------

#[tokio::test]
async fn delete_is_204_then_the_cluster_is_gone_after_the_operation() {
    let app = spawn_app().await;
    let f = app.standard_fixture().await;
    let r = app.delete("/v1/clusters/k8s", &As::member()).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(r.body, Value::Null);
    let r = app.get("/v1/clusters/k8s", &As::member()).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["status"], "DELETE_IN_PROGRESS");
    app.run_operations().await;
    let r = app.get("/v1/clusters/k8s", &As::member()).await;
    assert_envelope(&r, StatusCode::NOT_FOUND, "Cluster k8s could not be found.");
    assert!(nodegroup_rows(&app, &f.k8s).await.is_empty());
    let r = app.get("/v1/clusters", &As::member()).await;
    assert_eq!(names(&r.body, "clusters"), vec!["legacy"]);
}

#[tokio::test]
async fn detail_under_a_cluster_is_404_with_the_unformatted_resource_text() {
    let app = spawn_app().await;
    let f = app.standard_fixture().await;
    let r = app
        .get(&format!("/v1/clusters/{}/detail", f.k8s), &As::member())
        .await;
    assert_envelope(
        &r,
        StatusCode::NOT_FOUND,
        "The %(name)s resource %(id)s could not be found.",
    );
}

#[tokio::test]
async fn detail_under_a_cluster_name_is_400_for_the_marker() {
    // WSME binds the path segment to `detail`'s `marker` (a uuid) before anything else.
    let app = spawn_app().await;
    app.standard_fixture().await;
    let r = app.get("/v1/clusters/k8s/detail", &As::member()).await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Invalid input for field/attribute marker. Value: 'k8s'. unable to convert to uuid. \
         Error: Expected a uuid but received k8s.",
    );
}

// --- pagination ---------------------------------------------------------------------------

/// Follows a `next` link the way python-magnumclient does (scheme and host stripped).
fn path_of(next: &Value) -> String {
    next.as_str()
        .unwrap_or_default()
        .trim_start_matches("http://localhost")
        .to_string()
}

#[tokio::test]
async fn cluster_list_with_limit_has_next_link_with_the_last_uuid() {
    let app = spawn_app().await;
    let f = app.standard_fixture().await;
    let r = app.get("/v1/clusters?limit=1", &As::member()).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(names(&r.body, "clusters"), vec!["k8s"]);
    assert_eq!(
        r.body["next"],
        format!(
            "http://localhost/v1/clusters?sort_key=id&sort_dir=asc&limit=1&marker={}",
            f.k8s
        )
    );
    let r = app.get(&path_of(&r.body["next"]), &As::member()).await;
    assert_eq!(names(&r.body, "clusters"), vec!["legacy"]);
    // A full page always has a next link, even when nothing follows.
    assert_eq!(
        r.body["next"],
        format!(
            "http://localhost/v1/clusters?sort_key=id&sort_dir=asc&limit=1&marker={}",
            f.legacy
        )
    );
    let r = app.get(&path_of(&r.body["next"]), &As::member()).await;
    assert_eq!(r.body, json!({"clusters": []}));
}

#[tokio::test]
async fn implicit_max_limit_caps_pages_and_yields_a_next_link() {
    let mut config = magnum_rs::config::Config::default();
    config.api.max_limit = 2;
    let app = spawn_app_with(config, None).await;
    app.template("capi", "ubuntu", &As::member()).await;
    let mut uuids = Vec::new();
    for name in ["a", "b", "c"] {
        let r = app
            .post(
                "/v1/clusters",
                &As::member(),
                json!({"name": name, "cluster_template_id": "capi"}),
            )
            .await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
        uuids.push(r.body["uuid"].as_str().unwrap_or_default().to_string());
    }
    for path in ["/v1/clusters", "/v1/clusters?limit=5"] {
        let r = app.get(path, &As::member()).await;
        assert_eq!(names(&r.body, "clusters"), vec!["a", "b"], "{path}");
        assert_eq!(
            r.body["next"],
            format!(
                "http://localhost/v1/clusters?sort_key=id&sort_dir=asc&limit=2&marker={}",
                uuids[1]
            ),
            "{path}"
        );
    }
    let r = app
        .get(&format!("/v1/clusters?marker={}", uuids[1]), &As::member())
        .await;
    assert_eq!(names(&r.body, "clusters"), vec!["c"]);
    assert!(r.body.get("next").is_none());
}

#[tokio::test]
async fn no_next_link_when_the_page_is_shorter_than_the_limit() {
    let app = spawn_app().await;
    app.standard_fixture().await;
    let r = app.get("/v1/clusters?limit=3", &As::member()).await;
    assert_eq!(names(&r.body, "clusters"), vec!["k8s", "legacy"]);
    assert!(r.body.get("next").is_none());
    let r = app.get("/v1/clusters", &As::member()).await;
    assert!(r.body.get("next").is_none());
}

#[tokio::test]
async fn detail_next_link_carries_sort_key_and_direction() {
    let app = spawn_app().await;
    let f = app.standard_fixture().await;
    let r = app
        .get(
            "/v1/clusters/detail?sort_key=name&sort_dir=desc&limit=1",
            &As::member(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(names(&r.body, "clusters"), vec!["legacy"]);
    assert_eq!(
        r.body["next"],
        format!(
            "http://localhost/v1/clusters/detail?sort_key=name&sort_dir=desc&limit=1&marker={}",
            f.legacy
        )
    );
    let r = app.get(&path_of(&r.body["next"]), &As::member()).await;
    assert_eq!(names(&r.body, "clusters"), vec!["k8s"]);
}

/// Walks every page from `first`, one cluster a page, by following `next`.
async fn walk(app: &TestApp, first: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut path = first.to_string();
    for _ in 0..20 {
        let r = app.get(&path, &As::member()).await;
        assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.body);
        out.extend(names(&r.body, "clusters"));
        match r.body.get("next") {
            Some(n) => path = path_of(n),
            None => return out,
        }
        if r.body["clusters"].as_array().is_some_and(Vec::is_empty) {
            return out;
        }
    }
    panic!("pagination does not end");
}

#[tokio::test]
async fn paging_by_a_non_unique_or_null_column_visits_every_cluster_once() {
    let app = spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    for (name, url) in [
        ("b", None),
        ("a", Some("http://u2")),
        ("c", None),
        ("a", Some("http://u1")),
    ] {
        let mut body = json!({"name": name, "cluster_template_id": "capi"});
        if let Some(u) = url {
            body["discovery_url"] = json!(u);
        }
        let r = app.post("/v1/clusters", &As::member(), body).await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    }
    // Ties are broken by id in the same direction; NULLs sort first ascending.
    let ids = |key: &str, dir: &str| format!("/v1/clusters?sort_key={key}&sort_dir={dir}");
    for (key, dir, expected) in [
        ("name", "asc", vec!["a", "a", "b", "c"]),
        ("name", "desc", vec!["c", "b", "a", "a"]),
        ("discovery_url", "asc", vec!["b", "c", "a", "a"]),
        ("discovery_url", "desc", vec!["a", "a", "c", "b"]),
        ("id", "desc", vec!["a", "c", "a", "b"]),
    ] {
        let full = app.get(&ids(key, dir), &As::member()).await;
        assert_eq!(names(&full.body, "clusters"), expected, "{key} {dir}");
        let paged = walk(&app, &format!("{}&limit=1", ids(key, dir))).await;
        assert_eq!(paged, expected, "{key} {dir} paged");
        // The uuids are visited in the same order too.
        let mut uuids = Vec::new();
        let mut path = format!("{}&limit=1", ids(key, dir));
        loop {
            let r = app.get(&path, &As::member()).await;
            let Some(c) = r.body["clusters"].get(0) else {
                break;
            };
            uuids.push(c["uuid"].clone());
            path = path_of(&r.body["next"]);
        }
        let full_uuids: Vec<Value> = full.body["clusters"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| c["uuid"].clone())
            .collect();
        assert_eq!(uuids, full_uuids, "{key} {dir}");
    }
}

#[tokio::test]
async fn sort_dir_desc_reverses_the_list() {
    let app = spawn_app().await;
    app.standard_fixture().await;
    let r = app.get("/v1/clusters?sort_dir=desc", &As::member()).await;
    assert_eq!(names(&r.body, "clusters"), vec!["legacy", "k8s"]);
    let r = app.get("/v1/clusters?sort_key=name", &As::member()).await;
    assert_eq!(names(&r.body, "clusters"), vec!["k8s", "legacy"]);
}

#[tokio::test]
async fn limit_must_be_a_positive_integer() {
    let app = spawn_app().await;
    for q in ["limit=0", "limit=-1"] {
        let r = app.get(&format!("/v1/clusters?{q}"), &As::member()).await;
        assert_envelope(&r, StatusCode::BAD_REQUEST, "Limit must be positive");
    }
    let r = app.get("/v1/clusters?limit=abc", &As::member()).await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Invalid input for field/attribute limit. Value: 'abc'. unable to convert to int. Error: invalid literal for int() with base 10: 'abc'",
    );
}

#[tokio::test]
async fn invalid_sort_direction_is_400() {
    let app = spawn_app().await;
    let r = app.get("/v1/clusters?sort_dir=up", &As::member()).await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Invalid sort direction: up. Acceptable values are 'asc' or 'desc'",
    );
}

#[tokio::test]
async fn sort_key_node_count_is_not_a_column_400() {
    let app = spawn_app().await;
    app.standard_fixture().await;
    for k in ["node_count", "master_count", "nothere"] {
        let r = app
            .get(&format!("/v1/clusters?sort_key={k}"), &As::member())
            .await;
        assert_envelope(
            &r,
            StatusCode::BAD_REQUEST,
            &format!("The sort_key value \"{k}\" is an invalid field for sorting"),
        );
    }
}

#[tokio::test]
async fn marker_must_be_a_uuid_and_visible() {
    let app = spawn_app().await;
    let f = app.standard_fixture().await;
    let r = app.get("/v1/clusters?marker=notauuid", &As::member()).await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Invalid input for field/attribute marker. Value: 'notauuid'. unable to convert to uuid. Error: Expected a uuid but received notauuid.",
    );
    let u = "a1a1a1a1-0000-4000-8000-0000000000ff";
    let r = app
        .get(&format!("/v1/clusters?marker={u}"), &As::member())
        .await;
    assert_envelope(
        &r,
        StatusCode::NOT_FOUND,
        &format!("Cluster {u} could not be found."),
    );
    let r = app
        .get(&format!("/v1/clusters?marker={}", f.foreign), &As::member())
        .await;
    assert_envelope(
        &r,
        StatusCode::NOT_FOUND,
        &format!("Cluster {} could not be found.", f.foreign),
    );
}

/// The page's statement finds the marker itself; an unknown or foreign marker is still a
/// 404 under every sort key and on both lists, and Magnum looks the marker up before it
/// checks the sort key.
#[tokio::test]
async fn an_invisible_marker_is_404_under_any_sort_and_before_a_bad_sort_key() {
    let app = spawn_app().await;
    let f = app.standard_fixture().await;
    let unknown = "a1a1a1a1-0000-4000-8000-0000000000ff".to_string();
    for marker in [&unknown, &f.foreign] {
        for list in ["/v1/clusters", "/v1/clusters/detail"] {
            for query in [
                "sort_key=name",
                "sort_key=name&sort_dir=desc",
                "sort_key=id&sort_dir=desc",
                "sort_key=nonesuch",
            ] {
                let path = format!("{list}?{query}&marker={marker}");
                let r = app.get(&path, &As::member()).await;
                assert_envelope(
                    &r,
                    StatusCode::NOT_FOUND,
                    &format!("Cluster {marker} could not be found."),
                );
            }
        }
    }
    // A visible marker with a bad sort key: the sort key's 400.
    let r = app
        .get(
            &format!("/v1/clusters?sort_key=nonesuch&marker={}", f.k8s),
            &As::member(),
        )
        .await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "The sort_key value \"nonesuch\" is an invalid field for sorting",
    );
}

/// Magnum's `role == 'master'` is Python's: a role that differs in case or by a trailing
/// space is a worker, in the summary list (summed by the database, where MariaDB's `=`
/// would ignore both) as in the detail.
#[tokio::test]
async fn summary_list_counts_only_the_exact_master_role_as_masters() {
    let app = spawn_app().await;
    let f = app.standard_fixture().await;
    add_nodegroup(&app, "upper", 4).await;
    add_nodegroup(&app, "padded", 6).await;
    let mut side = app.state.store.side_connection().await.expect("connection");
    for (name, role) in [("upper", "Master"), ("padded", "master ")] {
        let id = ng_uuid(&app, &f.k8s, name).await;
        sqlx::query("UPDATE nodegroup SET role = ? WHERE uuid = ?")
            .bind(role)
            .bind(id)
            .execute(&mut side)
            .await
            .expect("role");
    }
    let list = app.get("/v1/clusters", &As::member()).await;
    let detail = app.get("/v1/clusters/detail", &As::member()).await;
    for body in [&list.body, &detail.body] {
        let k8s = body["clusters"]
            .as_array()
            .expect("clusters")
            .iter()
            .find(|c| c["uuid"] == f.k8s.as_str())
            .expect("listed");
        assert_eq!(
            (&k8s["master_count"], &k8s["node_count"]),
            (&json!(1), &json!(2 + 4 + 6)),
            "{body}"
        );
    }
}

// --- nothing changes on refusal -----------------------------------------------------------

async fn snapshot(app: &TestApp) -> String {
    let store = &app.state.store;
    let page = Page {
        limit: 1000,
        sort_key: SortKey::id(Table::Cluster),
        sort_dir: SortDir::Asc,
        marker: None,
    };
    let clusters = store
        .list_clusters(&Tenancy::All, &page)
        .await
        .expect("clusters");
    let uuids: Vec<String> = clusters.iter().map(|c| c.uuid.clone()).collect();
    let ngs = store.nodegroups_of_clusters(&uuids).await.expect("ngs");
    let templates = store
        .list_templates(
            &magnum_rs::store::templates::TemplateScope {
                tenancy: Tenancy::All,
                is_admin: true,
            },
            &page,
        )
        .await
        .expect("templates");
    let pending = store.pending_operations(1000).await.expect("operations");
    format!("{clusters:?}\n{ngs:?}\n{templates:?}\n{}", pending.len())
}

/// One refused request of `bad_input_changes_nothing`.
struct Bad {
    method: Method,
    path: String,
    who: As,
    version: String,
    body: Option<String>,
    status: u16,
}

fn bad(method: Method, path: &str, who: &As, body: Option<Value>, status: u16) -> Bad {
    Bad {
        method,
        path: path.to_string(),
        who: who.clone(),
        version: LATEST.to_string(),
        body: body.map(|b| b.to_string()),
        status,
    }
}

impl Bad {
    fn at(mut self, v: &str) -> Self {
        self.version = at(v);
        self
    }
}

fn op(path: &str, value: Value) -> Option<Value> {
    Some(json!([{"op": "replace", "path": path, "value": value}]))
}

#[tokio::test]
async fn bad_input_changes_nothing() {
    let app = spawn_app().await;
    let f = app.standard_fixture().await;
    let before = snapshot(&app).await;
    let (m, r) = (As::member(), As::reader());
    let foreign = format!("/v1/clusters/{}", f.foreign);
    let foreign_ngs = format!("/v1/clusters/{}/nodegroups", f.foreign);
    let c = "/v1/clusters";
    let k8s = "/v1/clusters/k8s";
    let t = "/v1/clustertemplates";
    let ngs = "/v1/clusters/k8s/nodegroups";
    let worker = "/v1/clusters/k8s/nodegroups/default-worker";
    let new = |extra: Value| {
        let mut b = json!({"name": "x", "cluster_template_id": "capi"});
        if let (Some(b), Value::Object(e)) = (b.as_object_mut(), extra) {
            b.extend(e);
        }
        Some(b)
    };
    let tpl = |extra: Value| {
        let mut b = json!({"name": "t", "coe": "kubernetes", "image_id": "i"});
        if let (Some(b), Value::Object(e)) = (b.as_object_mut(), extra) {
            b.extend(e);
        }
        Some(b)
    };
    let cases = vec![
        // cluster create
        bad(Method::POST, c, &m, Some(json!({"name": "x"})), 400),
        bad(Method::POST, c, &r, new(json!({})), 403),
        bad(Method::POST, c, &m, new(json!({"master_count": 2})), 400),
        bad(Method::POST, c, &m, new(json!({"foo": 1})), 400),
        bad(Method::POST, c, &m, new(json!({"api_address": "x"})), 400),
        bad(
            Method::POST,
            c,
            &m,
            new(json!({"cluster_template_id": "nope"})),
            404,
        ),
        bad(Method::POST, c, &m, new(json!({"node_count": 0})), 400).at("1.9"),
        bad(Method::POST, c, &m, new(json!({"labels": "x"})), 400),
        bad(
            Method::POST,
            c,
            &m,
            new(json!({"master_lb_enabled": "maybe"})),
            400,
        ),
        // cluster PATCH / DELETE / routing
        bad(Method::PATCH, k8s, &m, op("/name", json!("y")), 400),
        bad(Method::PATCH, k8s, &m, op("/uuid", json!("y")), 400),
        bad(Method::PATCH, k8s, &m, op("/node_count", json!(-1)), 400),
        bad(Method::PATCH, k8s, &r, op("/node_count", json!(5)), 403),
        bad(Method::PATCH, k8s, &m, op("/node_count", json!(0)), 400).at("1.9"),
        bad(
            Method::PATCH,
            &foreign,
            &m,
            op("/node_count", json!(5)),
            404,
        ),
        bad(Method::DELETE, k8s, &r, None, 403),
        bad(Method::DELETE, &foreign, &m, None, 404),
        bad(Method::DELETE, c, &m, None, 400),
        bad(Method::PUT, k8s, &m, Some(json!({"name": "x"})), 405),
        bad(Method::GET, c, &m, None, 406).at("1.99"),
        // templates
        bad(Method::POST, t, &m, tpl(json!({"public": true})), 403),
        bad(Method::POST, t, &m, tpl(json!({"driver": "x"})), 400),
        bad(
            Method::POST,
            t,
            &m,
            tpl(json!({"cluster_distro": "foo"})),
            400,
        ),
        bad(Method::POST, t, &r, tpl(json!({})), 403),
        bad(
            Method::PATCH,
            "/v1/clustertemplates/capi",
            &m,
            Some(json!([{"op": "remove", "path": "/coe"}])),
            400,
        ),
        bad(
            Method::PATCH,
            "/v1/clustertemplates/capi",
            &m,
            op("/public", json!("true")),
            403,
        ),
        bad(
            Method::PATCH,
            "/v1/clustertemplates/capi",
            &m,
            op("/flavor_id", json!("f")),
            400,
        ),
        bad(Method::DELETE, "/v1/clustertemplates/capi", &m, None, 400),
        // nodegroups
        bad(Method::POST, ngs, &m, Some(json!({"name": "n"})), 406).at("1.8"),
        bad(Method::POST, ngs, &r, Some(json!({"name": "n"})), 403),
        bad(
            Method::POST,
            ngs,
            &m,
            Some(json!({"name": "default-worker"})),
            409,
        ),
        bad(
            Method::POST,
            ngs,
            &m,
            Some(json!({"name": "n", "min_node_count": 3})),
            409,
        ),
        bad(
            Method::POST,
            ngs,
            &m,
            Some(json!({"name": "n", "role": "master"})),
            400,
        ),
        bad(Method::POST, ngs, &m, Some(json!({"node_count": 1})), 400),
        bad(
            Method::POST,
            ngs,
            &m,
            Some(json!({"name": "n", "node_labels": {"kubernetes.io/x": "y"}})),
            409,
        ),
        bad(
            Method::POST,
            &foreign_ngs,
            &m,
            Some(json!({"name": "n"})),
            404,
        ),
        bad(Method::PATCH, worker, &m, op("/node_count", json!(5)), 400),
        bad(
            Method::PATCH,
            worker,
            &m,
            op("/min_node_count", json!(3)),
            409,
        ),
        bad(
            Method::PATCH,
            worker,
            &m,
            op("/node_taints", json!("[{'key': 'k', 'effect': 'No'}]")),
            409,
        ),
        bad(
            Method::PATCH,
            worker,
            &m,
            op("/node_labels", json!({"a": "b"})),
            400,
        ),
        bad(
            Method::PATCH,
            worker,
            &r,
            op("/max_node_count", json!(5)),
            403,
        ),
        bad(Method::DELETE, worker, &m, None, 400),
        bad(
            Method::DELETE,
            "/v1/clusters/k8s/nodegroups/default-master",
            &r,
            None,
            403,
        ),
    ];
    for b in cases {
        let reply = app
            .send(
                b.method.clone(),
                &b.path,
                &b.who,
                Some(&b.version),
                b.body.as_deref(),
            )
            .await;
        assert_eq!(
            reply.status.as_u16(),
            b.status,
            "{} {} {:?}: {}",
            b.method,
            b.path,
            b.body,
            reply.body
        );
    }
    assert_eq!(app.run_operations().await, 0, "no operation was recorded");
    assert_eq!(snapshot(&app).await, before);
}

#[tokio::test]
async fn member_posts_collection_deletes_and_unknown_actions_answer_as_magnum() {
    let app = spawn_app().await;
    app.standard_fixture().await;
    // pecan passes the path segment as the body argument; WSME cannot build the type.
    let r = app.post("/v1/clusters/k8s", &As::member(), json!({})).await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Invalid input for field/attribute cluster. Value: 'k8s'. unable to convert to Cluster. \
         Error: Cluster.__init__() takes 1 positional argument but 2 were given",
    );
    let r = app
        .post("/v1/clustertemplates/capi", &As::member(), json!({}))
        .await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Invalid input for field/attribute cluster_template. Value: 'capi'. unable to convert \
         to ClusterTemplate. Error: ClusterTemplate.__init__() takes 1 positional argument but \
         2 were given",
    );
    let r = app.delete("/v1/clustertemplates", &As::member()).await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Missing argument: \"cluster_template_ident\"",
    );
    let r = app
        .post("/v1/clusters/k8s/actions/explode", &As::member(), json!({}))
        .await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
}
