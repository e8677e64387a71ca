//! Issue 3: cluster actions (resize, upgrade) decided by the cluster's driver.
//!
//! The first two sections port Magnum's own cases
//! (`magnum/tests/unit/api/controllers/v1/test_cluster_actions.py`) under their names; the
//! rest pin the control-plane resize, Magnum's check order (§5 of the API reference), the
//! exact texts the reference Magnum 23 answered with (oracle blocks 32–44), the operations
//! worker's outcome and concurrent resizes.

use crate::common;

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use serde_json::{json, Value};

use common::scripted_driver::ScriptedDriver;
use common::{spawn_app, spawn_app_with, As, Reply, TestApp, LATEST};
use magnum_rs::config::Config;
use magnum_rs::drivers::record_only::{Call, RecordOnlyDriver};
use magnum_rs::drivers::{BaseDriverAllows, ClusterApiAllows, DriverError, DriverRegistry};
use magnum_rs::operations::OperationsHandle;
use magnum_rs::policy::Policy;
use magnum_rs::state::AppState;
use magnum_rs::store::operations::{OpKind, OpState};
use magnum_rs::store::{ClusterSet, NodeGroupSet, Store};

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// `POST /v1/clusters/{cluster}/actions/resize` with `version` as the header value.
async fn resize(
    app: &TestApp,
    cluster: &str,
    who: &As,
    version: Option<&str>,
    body: Value,
) -> Reply {
    app.send(
        Method::POST,
        &format!("/v1/clusters/{cluster}/actions/resize"),
        who,
        version,
        Some(&body.to_string()),
    )
    .await
}

/// `POST /v1/clusters/{cluster}/actions/upgrade` with `version` as the header value.
async fn upgrade(
    app: &TestApp,
    cluster: &str,
    who: &As,
    version: Option<&str>,
    body: Value,
) -> Reply {
    app.send(
        Method::POST,
        &format!("/v1/clusters/{cluster}/actions/upgrade"),
        who,
        version,
        Some(&body.to_string()),
    )
    .await
}

/// A WSME-handled error: Magnum's envelope with code `client`, the title cut at the first
/// `.` of the detail, and exactly `detail`.
#[track_caller]
fn assert_client_error(r: &Reply, status: StatusCode, detail: &str) {
    assert_eq!(r.status, status, "body: {}", r.body);
    let e = &r.body["errors"][0];
    assert_eq!(e["detail"], detail, "body: {}", r.body);
    let title = detail.split('.').next().unwrap_or_default();
    assert_eq!(e["title"], title, "body: {}", r.body);
    assert_eq!(e["code"], "client", "body: {}", r.body);
    assert_eq!(e["status"], status.as_u16(), "body: {}", r.body);
    assert_eq!(e["request_id"], "", "body: {}", r.body);
    assert_eq!(r.body["errors"].as_array().map(Vec::len), Some(1));
}

/// A 202 carrying the cluster's uuid, as Magnum answers an accepted action.
#[track_caller]
fn assert_accepted(r: &Reply, cluster_uuid: &str) {
    assert_eq!(r.status, StatusCode::ACCEPTED, "body: {}", r.body);
    assert_eq!(r.body, json!({"uuid": cluster_uuid}));
}

async fn cluster_doc(app: &TestApp, cluster: &str) -> Value {
    let r = app
        .get(&format!("/v1/clusters/{cluster}"), &As::member())
        .await;
    assert_eq!(r.status, StatusCode::OK, "cluster show: {}", r.body);
    r.body
}

fn ng_id(ng: &Value) -> i64 {
    ng["id"].as_i64().expect("nodegroup id")
}

fn ng_uuid(ng: &Value) -> String {
    ng["uuid"].as_str().expect("nodegroup uuid").to_string()
}

async fn set_cluster_status(app: &TestApp, cluster_uuid: &str, status: &str) {
    let c = app
        .state
        .store
        .cluster_by_uuid(cluster_uuid)
        .await
        .expect("read cluster")
        .expect("cluster exists");
    app.state
        .store
        .update_cluster(&c.uuid, &[ClusterSet::Status(status.into())])
        .await
        .expect("set status");
}

async fn set_bounds(app: &TestApp, ng: &Value, min: Option<i64>, max: Option<i64>) {
    app.state
        .store
        .update_nodegroup(
            &ng_uuid(ng),
            &[
                NodeGroupSet::MinNodeCount(min.unwrap_or_default()),
                NodeGroupSet::MaxNodeCount(max),
            ],
        )
        .await
        .expect("set bounds");
}

/// The record-only drivers `build_drivers` makes from the default configuration, kept so a
/// test can read what each was asked to do.
struct Recorders {
    capi: Arc<RecordOnlyDriver>,
    base: Arc<RecordOnlyDriver>,
}

fn recording_registry(config: &Config) -> (DriverRegistry, Recorders) {
    let d = &config.drivers;
    let base = Arc::new(RecordOnlyDriver::new(
        &d.base.name,
        d.base.provides.clone(),
        Box::new(BaseDriverAllows),
    ));
    let capi = Arc::new(RecordOnlyDriver::new(
        &d.cluster_api.name,
        d.cluster_api.provides.clone(),
        Box::new(ClusterApiAllows),
    ));
    let mut registry = DriverRegistry::default();
    registry.register(base.clone(), &[]);
    registry.register(capi.clone(), &d.cluster_api.aliases);
    (registry, Recorders { capi, base })
}

async fn spawn_recording_app() -> (TestApp, Recorders) {
    let config = Config::default();
    let (registry, rec) = recording_registry(&config);
    (spawn_app_with(config, Some(registry)).await, rec)
}

fn resize_calls(calls: &[Call], nodegroup: &str) -> Vec<(i64, Vec<String>)> {
    calls
        .iter()
        .filter_map(|c| match c {
            Call::Resize {
                nodegroup: ng,
                node_count,
                nodes_to_remove,
                ..
            } if ng == nodegroup => Some((*node_count, nodes_to_remove.clone())),
            _ => None,
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Magnum's TestClusterResize, ported. Magnum's fixture cluster has 3 workers and its
// driver is the base driver (no control-plane resize): here that is a `fedora-coreos`
// template (`legacy` in the standard fixture).
// ---------------------------------------------------------------------------------------

/// `cluster_example_A` of Magnum's `TestClusterResize.setUp`: 1 master, 3 workers, base driver.
async fn resize_fixture(app: &TestApp) -> String {
    app.template("heat", "fedora-coreos", &As::member()).await;
    app.cluster("cluster_example_A", "heat", 1, 3, &As::member())
        .await
}

#[tokio::test]
async fn test_resize() {
    let app = spawn_app().await;
    let uuid = resize_fixture(&app).await;
    let before = cluster_doc(&app, &uuid).await;
    let r = resize(
        &app,
        &uuid,
        &As::member(),
        Some("container-infra 1.7"),
        json!({"node_count": 6}),
    )
    .await;
    assert_accepted(&r, &uuid);
    let c = cluster_doc(&app, &uuid).await;
    assert_eq!(c["node_count"], 6);
    assert_eq!(c["uuid"], uuid.as_str());
    assert_eq!(c["cluster_template_id"], before["cluster_template_id"]);
}

#[tokio::test]
async fn test_resize_with_nodegroup() {
    let app = spawn_app().await;
    let uuid = resize_fixture(&app).await;
    let worker = app.nodegroup(&uuid, "default-worker").await;
    // The API is fine with max_node_count None.
    assert_eq!(worker["max_node_count"], Value::Null);
    let r = resize(
        &app,
        &uuid,
        &As::member(),
        Some("container-infra 1.9"),
        json!({"node_count": 6, "nodegroup": ng_uuid(&worker)}),
    )
    .await;
    assert_accepted(&r, &uuid);
    let c = cluster_doc(&app, &uuid).await;
    assert_eq!(c["node_count"], 6);
    assert_eq!(c["uuid"], uuid.as_str());
}

#[tokio::test]
async fn test_resize_with_master_nodegroup_even_unsupported() {
    let app = spawn_app().await;
    let uuid = resize_fixture(&app).await;
    let master = app.nodegroup(&uuid, "default-master").await;
    let r = resize(
        &app,
        &uuid,
        &As::member(),
        Some("container-infra 1.9"),
        json!({"node_count": 4, "nodegroup": ng_uuid(&master)}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::BAD_REQUEST,
        "Resizing the master nodegroup is not supported by this driver.",
    );
}

#[tokio::test]
async fn test_resize_with_master_nodegroup_odd_unsupported() {
    let app = spawn_app().await;
    let uuid = resize_fixture(&app).await;
    let master = app.nodegroup(&uuid, "default-master").await;
    let r = resize(
        &app,
        &uuid,
        &As::member(),
        Some("container-infra 1.9"),
        json!({"node_count": 3, "nodegroup": ng_uuid(&master)}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::BAD_REQUEST,
        "Resizing the master nodegroup is not supported by this driver.",
    );
    assert_eq!(
        app.nodegroup(&uuid, "default-master").await["node_count"],
        1
    );
}

#[tokio::test]
async fn test_resize_with_node_count_greater_than_max() {
    let app = spawn_app().await;
    let uuid = resize_fixture(&app).await;
    let worker = app.nodegroup(&uuid, "default-worker").await;
    set_bounds(&app, &worker, Some(0), Some(5)).await;
    let r = resize(
        &app,
        &uuid,
        &As::member(),
        Some("container-infra 1.9"),
        json!({"node_count": 6, "nodegroup": ng_uuid(&worker)}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::BAD_REQUEST,
        "Resizing default-worker outside the allowed range: min_node_count = 0, max_node_count = 5",
    );
}

#[tokio::test]
async fn test_resize_with_node_count_less_than_min() {
    let app = spawn_app().await;
    let uuid = resize_fixture(&app).await;
    let worker = app.nodegroup(&uuid, "default-worker").await;
    set_bounds(&app, &worker, Some(4), None).await;
    let r = resize(
        &app,
        &uuid,
        &As::member(),
        Some("container-infra 1.9"),
        json!({"node_count": 3, "nodegroup": ng_uuid(&worker)}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::BAD_REQUEST,
        "Resizing default-worker outside the allowed range: min_node_count = 4, max_node_count = None",
    );
}

#[tokio::test]
async fn test_resize_with_zero_node_count_fail() {
    let app = spawn_app().await;
    let uuid = resize_fixture(&app).await;
    let worker = app.nodegroup(&uuid, "default-worker").await;
    set_bounds(&app, &worker, Some(0), None).await;
    let r = resize(
        &app,
        &uuid,
        &As::member(),
        Some("container-infra 1.9"),
        json!({"node_count": 0, "nodegroup": ng_uuid(&worker)}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::BAD_REQUEST,
        "Resizing a nodegroup to zero is not supported in the provided microversion.",
    );
}

#[tokio::test]
async fn test_resize_with_zero_node_count() {
    let app = spawn_app().await;
    let uuid = resize_fixture(&app).await;
    let worker = app.nodegroup(&uuid, "default-worker").await;
    set_bounds(&app, &worker, Some(0), None).await;
    let r = resize(
        &app,
        &uuid,
        &As::member(),
        Some("container-infra 1.10"),
        json!({"node_count": 0, "nodegroup": ng_uuid(&worker)}),
    )
    .await;
    assert_accepted(&r, &uuid);
    assert_eq!(
        app.nodegroup(&uuid, "default-worker").await["node_count"],
        0
    );
}

// ---------------------------------------------------------------------------------------
// Magnum's TestClusterUpgrade, ported: templates `test_1` and `test_2`, a cluster on
// `test_1` and a non-default nodegroup `test_ng`.
// ---------------------------------------------------------------------------------------

struct UpgradeFixture {
    cluster: String,
    test_1: String,
    test_2: String,
    test_ng: String,
}

async fn upgrade_fixture(app: &TestApp) -> UpgradeFixture {
    let test_1 = app.template("test_1", "ubuntu", &As::member()).await["uuid"]
        .as_str()
        .expect("uuid")
        .to_string();
    let test_2 = app.template("test_2", "ubuntu", &As::member()).await["uuid"]
        .as_str()
        .expect("uuid")
        .to_string();
    let cluster = app
        .cluster("cluster_example_A", "test_1", 1, 1, &As::member())
        .await;
    let r = app
        .post(
            &format!("/v1/clusters/{cluster}/nodegroups"),
            &As::member(),
            json!({"name": "test_ng"}),
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::ACCEPTED,
        "nodegroup create: {}",
        r.body
    );
    app.run_operations().await;
    let ng = app.nodegroup(&cluster, "test_ng").await;
    assert_eq!(ng["is_default"], false);
    UpgradeFixture {
        cluster,
        test_1,
        test_2,
        test_ng: ng_uuid(&ng),
    }
}

#[tokio::test]
async fn test_upgrade() {
    let (app, rec) = spawn_recording_app().await;
    let f = upgrade_fixture(&app).await;
    let r = upgrade(
        &app,
        &f.cluster,
        &As::member(),
        Some("container-infra 1.8"),
        json!({"cluster_template": "test_2"}),
    )
    .await;
    assert_accepted(&r, &f.cluster);
    assert_eq!(
        cluster_doc(&app, &f.cluster).await["status"],
        "UPDATE_IN_PROGRESS"
    );
    app.run_operations().await;
    let c = cluster_doc(&app, &f.cluster).await;
    assert_eq!(c["status"], "UPDATE_COMPLETE");
    // The default worker moved, so the cluster is on the new template.
    assert_eq!(c["cluster_template_id"], f.test_2.as_str());
    let upgrades: Vec<Call> = rec
        .capi
        .calls()
        .into_iter()
        .filter(|c| matches!(c, Call::Upgrade { .. }))
        .collect();
    assert_eq!(
        upgrades,
        vec![Call::Upgrade {
            cluster: f.cluster.clone(),
            nodegroup: "default-worker".into(),
            template: f.test_2.clone(),
        }],
        "the driver is handed the template to upgrade to"
    );
}

/// An accepted upgrade moves its cluster to the new template: until it ends, that template
/// is in use and its delete is refused (it would leave the upgrade nothing to move to).
#[tokio::test]
async fn an_upgrades_target_template_cannot_be_deleted_before_the_upgrade_ends() {
    let (app, _rec) = spawn_recording_app().await;
    let f = upgrade_fixture(&app).await;
    let r = upgrade(
        &app,
        &f.cluster,
        &As::member(),
        Some("container-infra 1.8"),
        json!({"cluster_template": "test_2"}),
    )
    .await;
    assert_accepted(&r, &f.cluster);
    let r = app
        .delete("/v1/clustertemplates/test_2", &As::member())
        .await;
    common::assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        &format!(
            "ClusterTemplate {} is referenced by one or multiple clusters.",
            f.test_2
        ),
    );
    app.run_operations().await;
    let c = cluster_doc(&app, &f.cluster).await;
    assert_eq!(c["status"], "UPDATE_COMPLETE", "{c}");
    assert_eq!(c["cluster_template_id"], f.test_2.as_str());
    // The old template is free once the cluster left it.
    let r = app
        .delete("/v1/clustertemplates/test_1", &As::member())
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
}

#[tokio::test]
async fn test_upgrade_cluster_as_admin() {
    let app = spawn_app().await;
    let _f = upgrade_fixture(&app).await;
    app.template("other-template", "ubuntu", &As::other()).await;
    let foreign = app
        .cluster("foreign", "other-template", 1, 1, &As::other())
        .await;
    let r = upgrade(
        &app,
        &foreign,
        &As::admin(),
        Some("container-infra 1.8"),
        json!({"cluster_template": "test_2"}),
    )
    .await;
    assert_accepted(&r, &foreign);
}

#[tokio::test]
async fn test_upgrade_default_worker() {
    let app = spawn_app().await;
    let f = upgrade_fixture(&app).await;
    let worker = app.nodegroup(&f.cluster, "default-worker").await;
    let r = upgrade(
        &app,
        &f.cluster,
        &As::member(),
        Some("container-infra 1.9"),
        json!({"cluster_template": "test_2", "nodegroup": ng_uuid(&worker)}),
    )
    .await;
    assert_accepted(&r, &f.cluster);
}

#[tokio::test]
async fn test_upgrade_default_master() {
    let app = spawn_app().await;
    let f = upgrade_fixture(&app).await;
    let master = app.nodegroup(&f.cluster, "default-master").await;
    let r = upgrade(
        &app,
        &f.cluster,
        &As::member(),
        Some("container-infra 1.9"),
        json!({"cluster_template": "test_2", "nodegroup": ng_uuid(&master)}),
    )
    .await;
    assert_accepted(&r, &f.cluster);
}

#[tokio::test]
async fn test_upgrade_non_default_ng() {
    let app = spawn_app().await;
    let f = upgrade_fixture(&app).await;
    let r = upgrade(
        &app,
        &f.cluster,
        &As::member(),
        Some("container-infra 1.9"),
        json!({"cluster_template": "test_1", "nodegroup": f.test_ng}),
    )
    .await;
    assert_accepted(&r, &f.cluster);
}

#[tokio::test]
async fn test_upgrade_cluster_not_found() {
    let app = spawn_app().await;
    let _f = upgrade_fixture(&app).await;
    let r = upgrade(
        &app,
        "not_there",
        &As::member(),
        Some("container-infra 1.8"),
        json!({"cluster_template": "test_2"}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::NOT_FOUND,
        "Cluster not_there could not be found.",
    );
}

#[tokio::test]
async fn test_upgrade_ct_not_found() {
    let app = spawn_app().await;
    let f = upgrade_fixture(&app).await;
    let r = upgrade(
        &app,
        &f.cluster,
        &As::member(),
        Some("container-infra 1.8"),
        json!({"cluster_template": "not_there"}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::NOT_FOUND,
        "ClusterTemplate not_there could not be found.",
    );
}

#[tokio::test]
async fn test_upgrade_ng_not_found() {
    let app = spawn_app().await;
    let f = upgrade_fixture(&app).await;
    let r = upgrade(
        &app,
        &f.cluster,
        &As::member(),
        Some("container-infra 1.9"),
        json!({"cluster_template": "test_2", "nodegroup": "not_there"}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::NOT_FOUND,
        "Nodegroup not_there could not be found.",
    );
}

/// Not in Magnum (its ClusterAPI driver fails later, in Cluster API's
/// `TopologyReconciled`): an upgrade to a template with another external network is a 400
/// before anything is written, naming both values.
#[tokio::test]
async fn an_upgrade_to_a_template_with_another_external_network_is_refused_and_changes_nothing() {
    let (app, rec) = spawn_recording_app().await;
    let f = upgrade_fixture(&app).await;
    let r = app
        .post(
            "/v1/clustertemplates",
            &As::member(),
            json!({"name": "other-network", "coe": "kubernetes", "image_id": "ubuntu-2204-kube",
                   "cluster_distro": "ubuntu", "external_network_id": "public2",
                   "labels": {"kube_tag": "v1.31.1"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let before = cluster_doc(&app, &f.cluster).await;
    let r = upgrade(
        &app,
        &f.cluster,
        &As::member(),
        Some("container-infra 1.8"),
        json!({"cluster_template": "other-network"}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::BAD_REQUEST,
        "The cluster template's external_network_id cannot change on an upgrade (\"\" to \
         \"public2\"): Cluster API's OpenStackCluster holds the external network immutable",
    );
    app.run_operations().await;
    assert_eq!(
        cluster_doc(&app, &f.cluster).await,
        before,
        "nothing changed"
    );
    assert!(
        !rec.capi
            .calls()
            .iter()
            .any(|c| matches!(c, Call::Upgrade { .. })),
        "the driver was not asked"
    );
}

#[tokio::test]
async fn test_upgrade_non_default_ng_invalid_ct() {
    let app = spawn_app().await;
    let f = upgrade_fixture(&app).await;
    let r = upgrade(
        &app,
        &f.cluster,
        &As::member(),
        Some("container-infra 1.9"),
        json!({"cluster_template": "test_2", "nodegroup": f.test_ng}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::CONFLICT,
        "Cluster Template is not valid for upgrade: Nodegroup test_ng can be upgraded only to match cluster's template (test_1).",
    );
    assert_eq!(
        app.nodegroup(&f.cluster, "test_ng").await["status"],
        "CREATE_COMPLETE"
    );
    assert_eq!(
        cluster_doc(&app, &f.cluster).await["cluster_template_id"],
        f.test_1.as_str()
    );
}

// ---------------------------------------------------------------------------------------
// Control-plane resize through the driver's capability.
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn master_resize_to_three_is_accepted_by_the_cluster_api_driver_and_applied() {
    let (app, rec) = spawn_recording_app().await;
    let fx = app.standard_fixture().await;
    let r = resize(
        &app,
        "k8s",
        &As::member(),
        Some(LATEST),
        json!({"node_count": 3, "nodegroup": "default-master"}),
    )
    .await;
    assert_accepted(&r, &fx.k8s);
    let pending = app.nodegroup("k8s", "default-master").await;
    assert_eq!(pending["node_count"], 3);
    assert_eq!(pending["status"], "UPDATE_IN_PROGRESS");
    assert_eq!(
        cluster_doc(&app, "k8s").await["status"],
        "UPDATE_IN_PROGRESS"
    );
    app.run_operations().await;
    let master = app.nodegroup("k8s", "default-master").await;
    assert_eq!(master["node_count"], 3);
    assert_eq!(master["status"], "UPDATE_COMPLETE");
    let c = cluster_doc(&app, "k8s").await;
    assert_eq!(c["master_count"], 3);
    assert_eq!(c["node_count"], 2, "the workers are untouched");
    assert_eq!(c["status"], "UPDATE_COMPLETE");
    assert_eq!(
        resize_calls(&rec.capi.calls(), "default-master"),
        vec![(3, vec![])]
    );
    assert!(resize_calls(&rec.base.calls(), "default-master").is_empty());
}

#[tokio::test]
async fn master_resize_to_an_even_or_zero_size_is_refused_by_the_cluster_api_driver() {
    let app = spawn_app().await;
    app.standard_fixture().await;
    for n in [2, 4, 0] {
        let r = resize(
            &app,
            "k8s",
            &As::member(),
            Some(LATEST),
            json!({"node_count": n, "nodegroup": "default-master"}),
        )
        .await;
        assert_client_error(
            &r,
            StatusCode::BAD_REQUEST,
            &format!("master nodegroup size of {n} is invalid, size cannot be an even number."),
        );
    }
    let master = app.nodegroup("k8s", "default-master").await;
    assert_eq!(master["node_count"], 1);
    assert_eq!(master["status"], "CREATE_COMPLETE");
}

#[tokio::test]
async fn master_resize_is_refused_by_the_base_driver() {
    let app = spawn_app().await;
    app.standard_fixture().await;
    let r = resize(
        &app,
        "legacy",
        &As::member(),
        Some(LATEST),
        json!({"node_count": 3, "nodegroup": "default-master"}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::BAD_REQUEST,
        "Resizing the master nodegroup is not supported by this driver.",
    );
    assert_eq!(
        app.nodegroup("legacy", "default-master").await["node_count"],
        1
    );
}

#[tokio::test]
async fn master_min_and_max_are_ignored_by_resize() {
    let app = spawn_app().await;
    let fx = app.standard_fixture().await;
    let master = app.nodegroup("k8s", "default-master").await;
    // PATCHing the control plane's bounds is refused for the ClusterAPI driver, so they are
    // set in the database, as a Magnum-written row could carry them.
    set_bounds(&app, &master, Some(3), Some(3)).await;
    let r = resize(
        &app,
        "k8s",
        &As::member(),
        Some(LATEST),
        json!({"node_count": 7, "nodegroup": "default-master"}),
    )
    .await;
    assert_accepted(&r, &fx.k8s);
    app.run_operations().await;
    assert_eq!(cluster_doc(&app, "k8s").await["master_count"], 7);
}

#[tokio::test]
async fn worker_resize_outside_its_bounds_is_refused_with_magnums_text() {
    let app = spawn_app().await;
    let fx = app.standard_fixture().await;
    let worker = app.nodegroup("k8s", "default-worker").await;
    set_bounds(&app, &worker, Some(1), Some(5)).await;
    let r = resize(
        &app,
        "k8s",
        &As::member(),
        Some(LATEST),
        json!({"node_count": 7, "nodegroup": "default-worker"}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::BAD_REQUEST,
        "Resizing default-worker outside the allowed range: min_node_count = 1, max_node_count = 5",
    );
    let r = resize(
        &app,
        "k8s",
        &As::member(),
        Some(LATEST),
        json!({"node_count": 0}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::BAD_REQUEST,
        "Resizing default-worker outside the allowed range: min_node_count = 1, max_node_count = 5",
    );
    set_bounds(&app, &worker, Some(3), None).await;
    let r = resize(
        &app,
        "k8s",
        &As::member(),
        Some(LATEST),
        json!({"node_count": 2}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::BAD_REQUEST,
        "Resizing default-worker outside the allowed range: min_node_count = 3, max_node_count = None",
    );
    // Within the bounds (inclusive) it is accepted.
    let r = resize(
        &app,
        "k8s",
        &As::member(),
        Some(LATEST),
        json!({"node_count": 3}),
    )
    .await;
    assert_accepted(&r, &fx.k8s);
}

#[tokio::test]
async fn worker_max_node_count_zero_means_no_maximum() {
    let app = spawn_app().await;
    let fx = app.standard_fixture().await;
    let worker = app.nodegroup("k8s", "default-worker").await;
    set_bounds(&app, &worker, Some(0), Some(0)).await;
    let r = resize(
        &app,
        "k8s",
        &As::member(),
        Some(LATEST),
        json!({"node_count": 9}),
    )
    .await;
    assert_accepted(&r, &fx.k8s);
}

#[tokio::test]
async fn resize_without_a_version_header_is_not_acceptable() {
    let app = spawn_app().await;
    app.standard_fixture().await;
    let r = resize(
        &app,
        "k8s",
        &As::member(),
        None,
        json!({"node_count": 3, "nodegroup": "default-master"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::NOT_ACCEPTABLE, "body: {}", r.body);
    assert_eq!(
        r.body,
        json!({"errors": [{"request_id": "", "code": "", "status": 406, "title": "Not Acceptable",
            "detail": "Version 1.1 was requested but the requested API resize is not supported for this version.",
            "links": []}]})
    );
    assert!(
        r.headers.get("openstack-api-version").is_none(),
        "no version headers on this 406"
    );
    let r = resize(
        &app,
        "k8s",
        &As::member(),
        Some("container-infra 1.6"),
        json!({"node_count": 3}),
    )
    .await;
    assert_eq!(r.status, StatusCode::NOT_ACCEPTABLE);
    assert_eq!(
        r.detail(),
        "Version 1.6 was requested but the requested API resize is not supported for this version."
    );
    assert_eq!(
        app.nodegroup("k8s", "default-master").await["node_count"],
        1
    );
}

#[tokio::test]
async fn resize_to_zero_is_refused_before_1_10_and_accepted_from_1_10() {
    let app = spawn_app().await;
    let fx = app.standard_fixture().await;
    let r = resize(
        &app,
        "k8s",
        &As::member(),
        Some("container-infra 1.9"),
        json!({"node_count": 0}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::BAD_REQUEST,
        "Resizing a nodegroup to zero is not supported in the provided microversion.",
    );
    // The zero check runs before the lookup: even a missing cluster gets it.
    let r = resize(
        &app,
        "nothere",
        &As::member(),
        Some("container-infra 1.7"),
        json!({"node_count": 0}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::BAD_REQUEST,
        "Resizing a nodegroup to zero is not supported in the provided microversion.",
    );
    let r = resize(
        &app,
        "k8s",
        &As::member(),
        Some("container-infra 1.10"),
        json!({"node_count": 0}),
    )
    .await;
    assert_accepted(&r, &fx.k8s);
    app.run_operations().await;
    assert_eq!(
        app.nodegroup("k8s", "default-worker").await["node_count"],
        0
    );
    assert_eq!(cluster_doc(&app, "k8s").await["node_count"], 0);
}

#[tokio::test]
async fn resize_by_a_reader_is_forbidden() {
    let app = spawn_app().await;
    app.standard_fixture().await;
    let r = resize(
        &app,
        "k8s",
        &As::reader(),
        Some(LATEST),
        json!({"node_count": 3, "nodegroup": "default-master"}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::FORBIDDEN,
        "Policy doesn't allow cluster:resize to be performed.",
    );
    assert_eq!(
        app.nodegroup("k8s", "default-master").await["node_count"],
        1
    );
}

#[tokio::test]
async fn resize_of_an_unknown_nodegroup_is_not_found() {
    let app = spawn_app().await;
    app.standard_fixture().await;
    let r = resize(
        &app,
        "k8s",
        &As::member(),
        Some(LATEST),
        json!({"node_count": 3, "nodegroup": "nothere"}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::NOT_FOUND,
        "Nodegroup nothere could not be found.",
    );
}

#[tokio::test]
async fn resize_of_another_clusters_nodegroup_is_not_found() {
    let app = spawn_app().await;
    app.standard_fixture().await;
    let legacy_worker = ng_uuid(&app.nodegroup("legacy", "default-worker").await);
    let r = resize(
        &app,
        "k8s",
        &As::member(),
        Some(LATEST),
        json!({"node_count": 3, "nodegroup": legacy_worker}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::NOT_FOUND,
        &format!("Nodegroup {legacy_worker} could not be found."),
    );
    assert_eq!(
        app.nodegroup("legacy", "default-worker").await["node_count"],
        1
    );
}

#[tokio::test]
async fn resize_of_another_projects_cluster_is_not_found() {
    let app = spawn_app().await;
    let fx = app.standard_fixture().await;
    let r = resize(
        &app,
        &fx.foreign,
        &As::member(),
        Some(LATEST),
        json!({"node_count": 3}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::NOT_FOUND,
        &format!("Cluster {} could not be found.", fx.foreign),
    );
    let r = resize(
        &app,
        "foreign",
        &As::member(),
        Some(LATEST),
        json!({"node_count": 3}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::NOT_FOUND,
        "Cluster foreign could not be found.",
    );
}

#[tokio::test]
async fn admin_resizing_another_projects_cluster_gets_not_found() {
    let app = spawn_app().await;
    let fx = app.standard_fixture().await;
    // Resize never sets all_tenants, not even for admins.
    let r = resize(
        &app,
        &fx.k8s,
        &As::admin(),
        Some(LATEST),
        json!({"node_count": 3}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::NOT_FOUND,
        &format!("Cluster {} could not be found.", fx.k8s),
    );
    assert_eq!(
        app.nodegroup("k8s", "default-worker").await["node_count"],
        2
    );
}

#[tokio::test]
async fn resize_with_nodes_to_remove_not_a_list_is_refused() {
    let app = spawn_app().await;
    app.standard_fixture().await;
    let r = app
        .send(
            Method::POST,
            "/v1/clusters/k8s/actions/resize",
            &As::member(),
            Some(LATEST),
            Some(r#"{"node_count": 1, "nodes_to_remove": "x"}"#),
        )
        .await;
    assert_client_error(
        &r,
        StatusCode::BAD_REQUEST,
        "Invalid input for field/attribute cluster_resize_req. Value: '{'node_count': 1, 'nodes_to_remove': 'x'}'. Value not a valid list: x",
    );
}

/// Oracle block 38: WSME echoes the body in the order the client sent it.
#[tokio::test]
async fn resize_with_nodes_to_remove_not_a_list_echoes_the_body_in_request_order() {
    let app = spawn_app().await;
    app.standard_fixture().await;
    let r = app
        .send(
            Method::POST,
            "/v1/clusters/k8s/actions/resize",
            &As::member(),
            Some(LATEST),
            Some(r#"{"nodes_to_remove": "x", "node_count": 1}"#),
        )
        .await;
    assert_client_error(
        &r,
        StatusCode::BAD_REQUEST,
        "Invalid input for field/attribute cluster_resize_req. Value: '{'nodes_to_remove': 'x', 'node_count': 1}'. Value not a valid list: x",
    );
}

#[tokio::test]
async fn resize_body_errors_carry_magnums_texts() {
    let app = spawn_app().await;
    app.standard_fixture().await;
    let cases: [(&str, &str); 5] = [
        ("{}", "Invalid input for field/attribute node_count. Value: 'None'. Mandatory field missing."),
        (r#"{"node_count": -1}"#, "Invalid input for field/attribute node_count. Value: '-1'. Value should be greater or equal to 0"),
        (r#"{"node_count":1,"foo":1}"#, "Unknown attribute for argument cluster_resize_req: foo"),
        ("{", "Request is not in valid JSON format"),
        ("", "Missing argument: \"cluster_resize_req\""),
    ];
    for (body, detail) in cases {
        let r = app
            .send(
                Method::POST,
                "/v1/clusters/k8s/actions/resize",
                &As::member(),
                Some(LATEST),
                Some(body),
            )
            .await;
        assert_client_error(&r, StatusCode::BAD_REQUEST, detail);
    }
}

#[tokio::test]
async fn nodes_to_remove_reach_the_cluster_api_driver() {
    let (app, rec) = spawn_recording_app().await;
    let fx = app.standard_fixture().await;
    let r = resize(
        &app,
        "k8s",
        &As::member(),
        Some(LATEST),
        json!({"node_count": 1, "nodes_to_remove": ["k8s-worker-a", "k8s-worker-b"], "nodegroup": "default-worker"}),
    )
    .await;
    assert_accepted(&r, &fx.k8s);
    let r = resize(
        &app,
        "k8s",
        &As::member(),
        Some(LATEST),
        json!({"node_count": 3, "nodes_to_remove": ["k8s-master-0"], "nodegroup": "default-master"}),
    )
    .await;
    assert_accepted(&r, &fx.k8s);
    app.run_operations().await;
    let calls = rec.capi.calls();
    assert_eq!(
        resize_calls(&calls, "default-worker"),
        vec![(
            1,
            vec!["k8s-worker-a".to_string(), "k8s-worker-b".to_string()]
        )]
    );
    assert_eq!(
        resize_calls(&calls, "default-master"),
        vec![(3, vec!["k8s-master-0".to_string()])]
    );
    assert!(calls.iter().all(|c| match c {
        Call::Resize { cluster, .. } => cluster == &fx.k8s,
        _ => true,
    }));
}

#[tokio::test]
async fn nodes_to_remove_are_dropped_for_a_driver_that_cannot_honour_them() {
    let (app, rec) = spawn_recording_app().await;
    let fx = app.standard_fixture().await;
    let r = resize(
        &app,
        "legacy",
        &As::member(),
        Some(LATEST),
        json!({"node_count": 2, "nodes_to_remove": ["n1"]}),
    )
    .await;
    assert_accepted(&r, &fx.legacy);
    app.run_operations().await;
    assert_eq!(
        resize_calls(&rec.base.calls(), "default-worker"),
        vec![(2, vec![])]
    );
    assert!(resize_calls(&rec.capi.calls(), "default-worker").is_empty());
}

#[tokio::test]
async fn resize_while_the_cluster_is_being_created_is_refused() {
    let app = spawn_app().await;
    let fx = app.standard_fixture().await;
    set_cluster_status(&app, &fx.k8s, "CREATE_IN_PROGRESS").await;
    let r = resize(
        &app,
        "k8s",
        &As::member(),
        Some(LATEST),
        json!({"node_count": 5}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::BAD_REQUEST,
        "Resizing a cluster when status is \"CREATE_IN_PROGRESS\" is not supported.",
    );
    let r = resize(
        &app,
        "k8s",
        &As::member(),
        Some(LATEST),
        json!({"node_count": 3, "nodegroup": "default-master"}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::BAD_REQUEST,
        "Resizing a cluster when status is \"CREATE_IN_PROGRESS\" is not supported.",
    );
    assert_eq!(
        app.nodegroup("k8s", "default-worker").await["node_count"],
        2
    );
    assert_eq!(
        cluster_doc(&app, "k8s").await["status"],
        "CREATE_IN_PROGRESS"
    );
    let ops = app
        .state
        .store
        .operations_of_cluster(&fx.k8s)
        .await
        .expect("operations");
    assert!(
        ops.iter().all(|o| o.kind() != OpKind::Resize),
        "nothing recorded: {ops:?}"
    );
}

#[tokio::test]
async fn resize_after_a_failed_update_is_accepted() {
    let app = spawn_app().await;
    let fx = app.standard_fixture().await;
    set_cluster_status(&app, &fx.k8s, "UPDATE_FAILED").await;
    let r = resize(
        &app,
        "k8s",
        &As::member(),
        Some(LATEST),
        json!({"node_count": 4}),
    )
    .await;
    assert_accepted(&r, &fx.k8s);
    app.run_operations().await;
    let c = cluster_doc(&app, "k8s").await;
    assert_eq!(c["status"], "UPDATE_COMPLETE");
    assert_eq!(c["node_count"], 4);
}

// ---------------------------------------------------------------------------------------
// Upgrade rules beyond Magnum's unit tests.
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn upgrade_at_1_7_is_not_supported() {
    let app = spawn_app().await;
    app.standard_fixture().await;
    let r = upgrade(
        &app,
        "k8s",
        &As::member(),
        Some("container-infra 1.7"),
        json!({"cluster_template": "capi"}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::BAD_REQUEST,
        "Cluster upgrade is not supported in the provided microversion.",
    );
    // Even for a cluster that does not exist: the check comes before any lookup.
    let r = upgrade(
        &app,
        "nothere",
        &As::member(),
        Some("container-infra 1.7"),
        json!({"cluster_template": "capi"}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::BAD_REQUEST,
        "Cluster upgrade is not supported in the provided microversion.",
    );
    let r = upgrade(
        &app,
        "k8s",
        &As::member(),
        Some("container-infra 1.6"),
        json!({"cluster_template": "capi"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::NOT_ACCEPTABLE);
    assert_eq!(
        r.detail(),
        // Magnum's pecan lookup names `resize` for the upgrade route too (observed).
        "Version 1.6 was requested but the requested API resize is not supported for this version."
    );
}

#[tokio::test]
async fn upgrade_at_1_8_is_accepted() {
    let app = spawn_app().await;
    let fx = app.standard_fixture().await;
    let r = upgrade(
        &app,
        "k8s",
        &As::member(),
        Some("container-infra 1.8"),
        json!({"cluster_template": "capi"}),
    )
    .await;
    assert_accepted(&r, &fx.k8s);
    app.run_operations().await;
    assert_eq!(cluster_doc(&app, "k8s").await["status"], "UPDATE_COMPLETE");
}

#[tokio::test]
async fn upgrade_to_an_unknown_template_is_not_found() {
    let app = spawn_app().await;
    app.standard_fixture().await;
    let r = upgrade(
        &app,
        "k8s",
        &As::member(),
        Some(LATEST),
        json!({"cluster_template": "nothere"}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::NOT_FOUND,
        "ClusterTemplate nothere could not be found.",
    );
    assert_eq!(cluster_doc(&app, "k8s").await["status"], "CREATE_COMPLETE");
}

#[tokio::test]
async fn upgrade_of_a_non_default_nodegroup_to_another_template_conflicts() {
    let app = spawn_app().await;
    app.standard_fixture().await;
    let r = app
        .post(
            "/v1/clusters/k8s/nodegroups",
            &As::member(),
            json!({"name": "extra"}),
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::ACCEPTED,
        "nodegroup create: {}",
        r.body
    );
    app.run_operations().await;
    let r = upgrade(
        &app,
        "k8s",
        &As::member(),
        Some(LATEST),
        json!({"cluster_template": "heat", "nodegroup": "extra"}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::CONFLICT,
        "Cluster Template is not valid for upgrade: Nodegroup extra can be upgraded only to match cluster's template (capi).",
    );
}

#[tokio::test]
async fn upgrade_while_an_update_is_in_progress_is_refused() {
    let app = spawn_app().await;
    let fx = app.standard_fixture().await;
    set_cluster_status(&app, &fx.k8s, "UPDATE_IN_PROGRESS").await;
    let r = upgrade(
        &app,
        "k8s",
        &As::member(),
        Some(LATEST),
        json!({"cluster_template": "capi"}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::BAD_REQUEST,
        "Upgrading a cluster when status is \"UPDATE_IN_PROGRESS\" is not supported.",
    );
    let ops = app
        .state
        .store
        .operations_of_cluster(&fx.k8s)
        .await
        .expect("operations");
    assert!(
        ops.iter().all(|o| o.kind() != OpKind::Upgrade),
        "nothing recorded: {ops:?}"
    );
}

/// The API refuses the delete of an upgrade's target template while the upgrade is open
/// (`an_upgrades_target_template_cannot_be_deleted_before_the_upgrade_ends`); a row gone
/// behind the API (another service on the database) fails the upgrade with Magnum's text.
#[tokio::test]
async fn upgrade_to_a_template_deleted_behind_the_api_before_the_worker_runs_fails_the_cluster() {
    let (app, rec) = spawn_recording_app().await;
    let f = upgrade_fixture(&app).await;
    let r = upgrade(
        &app,
        &f.cluster,
        &As::member(),
        Some(LATEST),
        json!({"cluster_template": "test_2"}),
    )
    .await;
    assert_accepted(&r, &f.cluster);
    let mut side = app.state.store.side_connection().await.expect("connection");
    sqlx::query("DELETE FROM cluster_template WHERE uuid = ?")
        .bind(f.test_2.clone())
        .execute(&mut side)
        .await
        .expect("template row deleted");
    app.run_operations().await;
    let reason = format!("ClusterTemplate {} could not be found.", f.test_2);
    let c = cluster_doc(&app, &f.cluster).await;
    assert_eq!(c["status"], "UPDATE_FAILED");
    assert_eq!(c["status_reason"], reason.as_str());
    assert_eq!(c["cluster_template_id"], f.test_1.as_str());
    assert_eq!(c["faults"], json!({"default-worker": reason}));
    assert!(rec
        .capi
        .calls()
        .iter()
        .all(|c| !matches!(c, Call::Upgrade { .. })));
}

/// Magnum answers 500 (`Cannot convert Unset to primitive`, oracle block 44); magnum-rs
/// treats the template as mandatory.
#[tokio::test]
async fn upgrade_without_a_cluster_template_is_a_bad_request() {
    let app = spawn_app().await;
    app.standard_fixture().await;
    let r = upgrade(
        &app,
        "k8s",
        &As::member(),
        Some(LATEST),
        json!({"max_batch_size": 1}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::BAD_REQUEST,
        "Invalid input for field/attribute cluster_template. Value: 'None'. Mandatory field missing.",
    );
}

#[tokio::test]
async fn upgrade_by_a_reader_is_forbidden() {
    let app = spawn_app().await;
    app.standard_fixture().await;
    let r = upgrade(
        &app,
        "k8s",
        &As::reader(),
        Some(LATEST),
        json!({"cluster_template": "capi"}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::FORBIDDEN,
        "Policy doesn't allow cluster:upgrade to be performed.",
    );
}

// ---------------------------------------------------------------------------------------
// Driver resolution: the template's `driver` name first, then the triple.
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn a_template_naming_a_cluster_api_alias_resolves_to_the_cluster_api_driver() {
    let (app, rec) = spawn_recording_app().await;
    // The distro alone would pick the base driver; the name wins.
    let r = app
        .post(
            "/v1/clustertemplates",
            &As::member(),
            json!({
                "name": "aliased", "coe": "kubernetes", "image_id": "ubuntu-2204-kube",
                "cluster_distro": "fedora-coreos", "driver": "k8s_cluster_api_ubuntu",
                "flavor_id": "m1.medium", "master_flavor_id": "m1.large",
                "keypair_id": "default", "master_lb_enabled": true,
            }),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "template create: {}", r.body);
    assert_eq!(r.body["driver"], "k8s_cluster_api_ubuntu");
    let uuid = app.cluster("aliased", "aliased", 1, 1, &As::member()).await;
    let r = resize(
        &app,
        "aliased",
        &As::member(),
        Some(LATEST),
        json!({"node_count": 3, "nodegroup": "default-master"}),
    )
    .await;
    assert_accepted(&r, &uuid);
    app.run_operations().await;
    assert_eq!(cluster_doc(&app, "aliased").await["master_count"], 3);
    assert_eq!(
        resize_calls(&rec.capi.calls(), "default-master"),
        vec![(3, vec![])]
    );
    assert!(
        rec.base.calls().is_empty(),
        "the base driver was never asked: {:?}",
        rec.base.calls()
    );
}

#[tokio::test]
async fn a_template_naming_an_unknown_driver_cannot_resize_its_control_plane() {
    let app = spawn_app().await;
    let fx = app.standard_fixture().await;
    let c = app
        .state
        .store
        .cluster_by_uuid(&fx.k8s)
        .await
        .expect("read")
        .expect("cluster");
    let template_uuid = c.cluster_template_id.expect("template id");
    let mut t = app
        .state
        .store
        .template_by_uuid(&template_uuid)
        .await
        .expect("read")
        .expect("template");
    let before = t.clone();
    t.driver = Some("nope".into());
    app.state
        .store
        .patch_template(&before, &t, false)
        .await
        .expect("update template")
        .expect("template there");
    let r = resize(
        &app,
        "k8s",
        &As::member(),
        Some(LATEST),
        json!({"node_count": 3, "nodegroup": "default-master"}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::BAD_REQUEST,
        "Cluster driver (nope) not supported.",
    );
    assert_eq!(
        app.nodegroup("k8s", "default-master").await["node_count"],
        1
    );
    // magnum-rs resolves the driver for every resize (Magnum only for the master, leaving
    // a worker resize to fail in the conductor): a worker resize gets the same 400.
    let r = resize(
        &app,
        "k8s",
        &As::member(),
        Some(LATEST),
        json!({"node_count": 3}),
    )
    .await;
    assert_client_error(
        &r,
        StatusCode::BAD_REQUEST,
        "Cluster driver (nope) not supported.",
    );
    assert_eq!(
        app.nodegroup("k8s", "default-worker").await["node_count"],
        2
    );
}

// ---------------------------------------------------------------------------------------
// A driver that fails the resize: Magnum's conductor outcome.
// ---------------------------------------------------------------------------------------

const QUOTA_REASON: &str = "quota exceeded in the backend";

#[tokio::test]
async fn a_resize_the_driver_rejects_fails_the_cluster_and_restores_the_count() {
    let config = Config::default();
    let (mut registry, _rec) = recording_registry(&config);
    // Creates clusters, refuses every resize.
    let quota_exceeded = ScriptedDriver::new("quota-exceeded", "quota-os")
        .resize(|_| Err(DriverError::Rejected(QUOTA_REASON.into())));
    registry.register(Arc::new(quota_exceeded), &[]);
    let app = spawn_app_with(config, Some(registry)).await;
    let t = app.template("quota", "quota-os", &As::member()).await;
    assert_eq!(t["driver"], "quota-exceeded");
    let uuid = app.cluster("quota", "quota", 1, 2, &As::member()).await;
    assert_eq!(cluster_doc(&app, &uuid).await["status"], "CREATE_COMPLETE");

    let r = resize(
        &app,
        &uuid,
        &As::member(),
        Some(LATEST),
        json!({"node_count": 5}),
    )
    .await;
    assert_accepted(&r, &uuid);
    assert_eq!(
        app.nodegroup(&uuid, "default-worker").await["node_count"],
        5
    );
    app.run_operations().await;

    let c = cluster_doc(&app, &uuid).await;
    assert_eq!(c["status"], "UPDATE_FAILED");
    assert_eq!(c["status_reason"], QUOTA_REASON);
    assert_eq!(c["node_count"], 2);
    assert_eq!(c["faults"], json!({"default-worker": QUOTA_REASON}));
    let worker = app.nodegroup(&uuid, "default-worker").await;
    assert_eq!(worker["status"], "UPDATE_FAILED");
    assert_eq!(worker["status_reason"], QUOTA_REASON);
    assert_eq!(worker["node_count"], 2);
    let master = app.nodegroup(&uuid, "default-master").await;
    assert_eq!(master["status"], "CREATE_COMPLETE");
    let ops = app
        .state
        .store
        .operations_of_cluster(&uuid)
        .await
        .expect("operations");
    let last = ops.last().expect("an operation");
    assert_eq!(last.kind(), OpKind::Resize);
    assert_eq!(last.state, OpState::Failed);

    // The failed cluster is still resizable (UPDATE_FAILED), and fails the same way.
    let r = resize(
        &app,
        &uuid,
        &As::member(),
        Some(LATEST),
        json!({"node_count": 1}),
    )
    .await;
    assert_accepted(&r, &uuid);
    app.run_operations().await;
    assert_eq!(
        app.nodegroup(&uuid, "default-worker").await["node_count"],
        2
    );
}

#[tokio::test]
async fn a_resize_whose_driver_is_gone_when_it_runs_fails_the_cluster_instead_of_hanging() {
    let app = spawn_app().await;
    let fx = app.standard_fixture().await;
    let r = resize(
        &app,
        "k8s",
        &As::member(),
        Some(LATEST),
        json!({"node_count": 4}),
    )
    .await;
    assert_accepted(&r, &fx.k8s);
    // The worker of a process configured without the ClusterAPI driver picks it up.
    let mut config = Config {
        database_url: app.db.url.clone(),
        ..Config::default()
    };
    config.drivers.disabled = vec![config.drivers.cluster_api.name.clone()];
    let registry = magnum_rs::build_drivers(&config).await.expect("drivers");
    let store = Store::connect(&app.db.url).await.expect("connect");
    let other = AppState::new(
        config,
        store,
        Policy::magnum_defaults(),
        registry,
        OperationsHandle::default(),
    );
    magnum_rs::operations::run_pending(&other.conductor)
        .await
        .expect("operations");

    let reason = "Cluster driver (cluster-api) not supported.";
    let c = cluster_doc(&app, "k8s").await;
    assert_eq!(c["status"], "UPDATE_FAILED");
    assert_eq!(c["status_reason"], reason);
    assert_eq!(c["faults"], json!({"default-worker": reason}));
    let worker = app.nodegroup("k8s", "default-worker").await;
    assert_eq!(worker["status"], "UPDATE_FAILED");
    assert_eq!(worker["status_reason"], reason);
    assert_eq!(worker["node_count"], 2, "the previous count is back");
}

/// Pins the worker rule that a failed load must not fail the cluster for a nodegroup
/// delete whose nodegroup is already gone (two DELETEs accepted before the worker ran).
#[tokio::test]
async fn a_repeated_nodegroup_delete_completes_instead_of_failing_the_cluster() {
    let app = spawn_app().await;
    app.standard_fixture().await;
    let r = app
        .post(
            "/v1/clusters/k8s/nodegroups",
            &As::member(),
            json!({"name": "extra"}),
        )
        .await;
    assert_eq!(
        r.status,
        StatusCode::ACCEPTED,
        "nodegroup create: {}",
        r.body
    );
    app.run_operations().await;
    for _ in 0..2 {
        let r = app
            .delete("/v1/clusters/k8s/nodegroups/extra", &As::member())
            .await;
        assert_eq!(
            r.status,
            StatusCode::NO_CONTENT,
            "nodegroup delete: {}",
            r.body
        );
    }
    app.run_operations().await;
    let c = cluster_doc(&app, "k8s").await;
    assert_eq!(c["status"], "UPDATE_COMPLETE", "cluster: {c}");
    assert_eq!(c["status_reason"], Value::Null);
    let r = app
        .get("/v1/clusters/k8s/nodegroups/extra", &As::member())
        .await;
    assert_client_error(
        &r,
        StatusCode::NOT_FOUND,
        "Nodegroup extra could not be found.",
    );
}

// ---------------------------------------------------------------------------------------
// Concurrent resizes of one nodegroup.
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn concurrent_resizes_of_one_nodegroup_end_at_the_newest_accepted_count() {
    let (app, rec) = spawn_recording_app().await;
    let fx = app.standard_fixture().await;
    let worker_id = ng_id(&app.nodegroup("k8s", "default-worker").await);
    let worker_uuid = ng_uuid(&app.nodegroup("k8s", "default-worker").await);
    let app = Arc::new(app);
    // 1..=50 in a scrambled order (17 is coprime with 50).
    let counts: Vec<i64> = (0..50).map(|i| (i * 17) % 50 + 1).collect();
    let mut set = tokio::task::JoinSet::new();
    for n in counts.clone() {
        let app = Arc::clone(&app);
        set.spawn(async move {
            let r = resize(
                &app,
                "k8s",
                &As::member(),
                Some(LATEST),
                json!({"node_count": n, "nodegroup": "default-worker"}),
            )
            .await;
            (n, r.status, r.body)
        });
    }
    let mut answered = Vec::new();
    while let Some(done) = set.join_next().await {
        let (n, status, body) = done.expect("task");
        assert_eq!(status, StatusCode::ACCEPTED, "resize to {n}: {body}");
        assert_eq!(body, json!({"uuid": fx.k8s}));
        answered.push(n);
    }
    answered.sort_unstable();
    assert_eq!(answered, (1..=50).collect::<Vec<i64>>());

    // Every accepted resize left a record; the newest one carries the count in the row.
    let ops = app
        .state
        .store
        .operations_of_cluster(&fx.k8s)
        .await
        .expect("operations");
    let resizes: Vec<_> = ops
        .iter()
        .filter(|o| {
            o.kind() == OpKind::Resize && o.nodegroup_uuid.as_deref() == Some(worker_uuid.as_str())
        })
        .collect();
    assert_eq!(resizes.len(), 50);
    let newest = resizes.iter().max_by_key(|o| o.id).expect("newest");
    let newest_count = newest.new_count.expect("count");
    let row = app
        .state
        .store
        .nodegroup_by_id(worker_id)
        .await
        .expect("read")
        .expect("row");
    assert_eq!(
        row.node_count, newest_count,
        "row count = newest operation's count"
    );
    // Each record's previous count is the count of the record before it: the writes were
    // serialised in id order.
    let mut sorted = resizes.clone();
    sorted.sort_by_key(|o| o.id);
    for pair in sorted.windows(2) {
        assert_eq!(
            pair[1].old_count, pair[0].new_count,
            "ops {} then {}",
            pair[0].id, pair[1].id
        );
    }
    assert_eq!(sorted[0].old_count, Some(2));

    app.run_operations().await;
    let row = app
        .state
        .store
        .nodegroup_by_id(worker_id)
        .await
        .expect("read")
        .expect("row");
    assert_eq!(row.node_count, newest_count);
    assert_eq!(row.status.as_deref(), Some("UPDATE_COMPLETE"));
    let shown = app.nodegroup("k8s", "default-worker").await;
    assert_eq!(shown["node_count"], newest_count);
    assert_eq!(cluster_doc(&app, "k8s").await["status"], "UPDATE_COMPLETE");

    // Only the newest reached the driver; the others were superseded before running.
    let calls = resize_calls(&rec.capi.calls(), "default-worker");
    assert!(calls.len() < 50, "{} driver calls", calls.len());
    assert_eq!(calls.last().map(|c| c.0), Some(newest_count));
    assert_eq!(calls, vec![(newest_count, vec![])]);
    let ops = app
        .state
        .store
        .operations_of_cluster(&fx.k8s)
        .await
        .expect("operations");
    let states: Vec<(i64, OpState)> = ops
        .iter()
        .filter(|o| o.kind() == OpKind::Resize)
        .map(|o| (o.id, o.state))
        .collect();
    for (id, state) in &states {
        let expected = if *id == newest.id {
            OpState::Done
        } else {
            OpState::Superseded
        };
        assert_eq!(*state, expected, "operation {id}");
    }
}
