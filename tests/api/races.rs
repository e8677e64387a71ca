//! Requests that race on the same rows (issue 28), each pair as an attacker or a busy
//! automation client sends them: a cluster delete against resize, upgrade, nodegroup create
//! and nodegroup delete; a nodegroup delete against a resize; a template delete against
//! cluster creates; a burst of creates against a quota; a project's new rows after another
//! project deleted its newest. The requests run in parallel tasks and the operations worker
//! runs beside them (as the conductor does), round after round. After each round the
//! database's invariants ([`common::invariants`]) hold, and what each answer promised is
//! true of the rows: an accepted delete is never overwritten, a refused request wrote
//! nothing, no write landed on another project's rows.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::http::StatusCode;
use serde_json::{json, Value};
use sqlx::Row as _;

use crate::common::{self, invariants, As, TestApp, OTHER_PROJECT, PROJECT};
use magnum_rs::config::Config;

/// The app, shared by the tasks of a round.
async fn app_with_quota(max_clusters: i64) -> Arc<TestApp> {
    let mut config = Config::default();
    config.quotas.max_clusters_per_project = max_clusters;
    Arc::new(common::spawn_app_with(config, None).await)
}

/// Runs the operations worker in a loop until `stop` is set, then once more: the conductor
/// working beside the requests.
fn worker_beside(app: &Arc<TestApp>, stop: &Arc<AtomicBool>) -> tokio::task::JoinHandle<()> {
    let app = Arc::clone(app);
    let stop = Arc::clone(stop);
    tokio::spawn(async move {
        while !stop.load(Ordering::SeqCst) {
            app.run_operations().await;
            tokio::task::yield_now().await;
        }
        app.run_operations().await;
    })
}

/// Sends a request from a task of its own.
fn spawn_send(
    app: &Arc<TestApp>,
    method: &'static str,
    path: String,
    who: As,
    body: Option<Value>,
) -> tokio::task::JoinHandle<(StatusCode, Value)> {
    let app = Arc::clone(app);
    tokio::spawn(async move {
        let r = match (method, body) {
            ("POST", Some(b)) => app.post(&path, &who, b).await,
            ("PATCH", Some(b)) => app.patch(&path, &who, b).await,
            ("DELETE", _) => app.delete(&path, &who).await,
            _ => app.get(&path, &who).await,
        };
        (r.status, r.body)
    })
}

async fn side(app: &TestApp) -> sqlx::AnyConnection {
    app.state
        .store
        .side_connection()
        .await
        .expect("side connection")
}

/// The cluster's status in the database (`None`: no row).
async fn cluster_status(app: &TestApp, uuid: &str) -> Option<String> {
    let row = sqlx::query("SELECT status FROM cluster WHERE uuid = ?")
        .bind(uuid.to_string())
        .fetch_optional(&mut side(app).await)
        .await
        .expect("status");
    row.map(|r| r.try_get::<String, _>(0).unwrap_or_default())
}

async fn count(app: &TestApp, sql: &str, arg: &str) -> i64 {
    sqlx::query_scalar::<_, i64>(sql)
        .bind(arg.to_string())
        .fetch_one(&mut side(app).await)
        .await
        .expect("count")
}

/// Operations of the cluster that ended failed.
async fn failed_operations(app: &TestApp, cluster: &str) -> i64 {
    count(
        app,
        "SELECT COUNT(*) FROM magnum_rs_operation WHERE cluster_uuid = ? AND state = 'failed'",
        cluster,
    )
    .await
}

/// A cluster of the member's project, created to completion, with a nodegroup `extra`.
async fn cluster_with_extra(app: &TestApp, name: &str) -> String {
    let uuid = app.cluster(name, "capi", 1, 1, &As::member()).await;
    let r = app
        .post(
            &format!("/v1/clusters/{uuid}/nodegroups"),
            &As::member(),
            json!({"name": "extra", "node_count": 1}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    app.run_operations().await;
    uuid
}

/// Ends a round: the worker stops after a last pass, and everything has settled.
async fn settle(app: &TestApp, stop: &AtomicBool, worker: tokio::task::JoinHandle<()>) {
    stop.store(true, Ordering::SeqCst);
    worker.await.expect("worker");
    app.run_operations().await;
    invariants::assert_hold(&mut side(app).await, true, "settled").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn creates_racing_the_configured_quota_store_exactly_its_headroom() {
    let app = app_with_quota(5).await;
    app.template("capi", "ubuntu", &As::member()).await;
    app.cluster("existing", "capi", 1, 1, &As::member()).await;
    let tasks: Vec<_> = (0..32)
        .map(|i| {
            spawn_send(
                &app,
                "POST",
                "/v1/clusters".into(),
                As::member(),
                Some(json!({"name": format!("q{i}"), "cluster_template_id": "capi"})),
            )
        })
        .collect();
    let mut accepted = 0;
    for t in tasks {
        let (status, body) = t.await.expect("task");
        match status {
            StatusCode::ACCEPTED => accepted += 1,
            StatusCode::FORBIDDEN => assert!(
                body.to_string()
                    .contains("You have reached the maximum clusters per project, 5."),
                "{body}"
            ),
            other => panic!("{other}: {body}"),
        }
    }
    assert_eq!(accepted, 4, "the headroom of 5 with one cluster existing");
    let stored = count(
        &app,
        "SELECT COUNT(*) FROM cluster WHERE project_id = ?",
        PROJECT,
    )
    .await;
    assert_eq!(stored, 5);
    app.run_operations().await;
    invariants::assert_hold(&mut side(&app).await, true, "quota burst").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn creates_racing_a_project_quota_row_store_exactly_its_headroom() {
    let app = app_with_quota(100).await;
    app.template("capi", "ubuntu", &As::member()).await;
    let r = app
        .post(
            "/v1/quotas",
            &As::admin(),
            json!({"project_id": PROJECT, "resource": "Cluster", "hard_limit": 3}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let tasks: Vec<_> = (0..24)
        .map(|i| {
            spawn_send(
                &app,
                "POST",
                "/v1/clusters".into(),
                As::member(),
                Some(json!({"name": format!("q{i}"), "cluster_template_id": "capi"})),
            )
        })
        .collect();
    let mut accepted = 0;
    for t in tasks {
        let (status, body) = t.await.expect("task");
        if status == StatusCode::ACCEPTED {
            accepted += 1;
        } else {
            assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        }
    }
    assert_eq!(accepted, 3);
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM cluster WHERE project_id = ?",
            PROJECT
        )
        .await,
        3
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_template_delete_racing_cluster_creates_leaves_no_cluster_on_a_missing_template() {
    let app = app_with_quota(1000).await;
    for round in 0..6 {
        let name = format!("t{round}");
        let t = app.template(&name, "ubuntu", &As::member()).await;
        let template_uuid = t["uuid"].as_str().expect("uuid").to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let worker = worker_beside(&app, &stop);
        let mut creates = Vec::new();
        for i in 0..8 {
            creates.push(spawn_send(
                &app,
                "POST",
                "/v1/clusters".into(),
                As::member(),
                Some(json!({"name": format!("r{round}c{i}"), "cluster_template_id": name})),
            ));
            if i == 3 {
                // The delete goes out in the middle of the burst.
                creates.push(spawn_send(
                    &app,
                    "DELETE",
                    format!("/v1/clustertemplates/{template_uuid}"),
                    As::member(),
                    None,
                ));
            }
        }
        let mut deleted = false;
        for t in creates {
            let (status, body) = t.await.expect("task");
            match status {
                StatusCode::NO_CONTENT => deleted = true,
                StatusCode::ACCEPTED | StatusCode::NOT_FOUND => {}
                StatusCode::BAD_REQUEST => assert!(
                    body.to_string()
                        .contains("is referenced by one or multiple clusters"),
                    "{body}"
                ),
                other => panic!("round {round}: {other} {body}"),
            }
        }
        invariants::assert_hold(&mut side(&app).await, false, "after the burst").await;
        let on_template = count(
            &app,
            "SELECT COUNT(*) FROM cluster WHERE cluster_template_id = ?",
            &template_uuid,
        )
        .await;
        if deleted {
            assert_eq!(
                on_template, 0,
                "round {round}: clusters on a deleted template"
            );
        }
        settle(&app, &stop, worker).await;
        // Every cluster of the round can be deleted: none is stranded on its template.
        let list = app.get("/v1/clusters", &As::member()).await;
        for c in list.body["clusters"].as_array().expect("clusters") {
            let uuid = c["uuid"].as_str().expect("uuid");
            let r = app
                .delete(&format!("/v1/clusters/{uuid}"), &As::member())
                .await;
            assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
        }
        app.run_operations().await;
        let left = app.get("/v1/clusters", &As::member()).await;
        assert_eq!(left.body["clusters"], json!([]), "round {round}");
    }
}

/// A request sent by a task of its own: method, path and body.
type Request = (&'static str, String, Option<Value>);

/// One round of `others` racing a DELETE of cluster `uuid`, with the worker beside them:
/// each of the others answers as a request on a cluster being deleted may (202, 204, 404,
/// 400: never 5xx, never an overwrite), the DELETE 204; until the cluster is gone it shows
/// the accepted delete; once settled it is gone, the invariants hold and no operation of it
/// failed.
async fn race_a_cluster_delete(app: &Arc<TestApp>, uuid: &str, others: Vec<Request>, round: usize) {
    let stop = Arc::new(AtomicBool::new(false));
    let worker = worker_beside(app, &stop);
    let others: Vec<_> = others
        .into_iter()
        .map(|(method, path, body)| spawn_send(app, method, path, As::member(), body))
        .collect();
    let delete = spawn_send(
        app,
        "DELETE",
        format!("/v1/clusters/{uuid}"),
        As::member(),
        None,
    );
    for t in others {
        let (status, body) = t.await.expect("task");
        assert!(
            matches!(
                status,
                StatusCode::ACCEPTED
                    | StatusCode::NO_CONTENT
                    | StatusCode::NOT_FOUND
                    | StatusCode::BAD_REQUEST
            ),
            "round {round}: {status}: {body}"
        );
    }
    let (deleted, body) = delete.await.expect("task");
    assert_eq!(deleted, StatusCode::NO_CONTENT, "round {round}: {body}");
    // The accepted delete is what the cluster shows until it is gone.
    let shown = cluster_status(app, uuid).await;
    assert!(
        shown.is_none() || shown.as_deref() == Some("DELETE_IN_PROGRESS"),
        "round {round}: {shown:?}"
    );
    settle(app, &stop, worker).await;
    assert_eq!(cluster_status(app, uuid).await, None, "round {round}");
    assert_eq!(failed_operations(app, uuid).await, 0, "round {round}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_nodegroup_create_racing_a_cluster_delete_leaves_no_orphan_and_no_overwrite() {
    let app = app_with_quota(1000).await;
    app.template("capi", "ubuntu", &As::member()).await;
    for round in 0..20 {
        let uuid = app
            .cluster(&format!("c{round}"), "capi", 1, 1, &As::member())
            .await;
        let create = (
            "POST",
            format!("/v1/clusters/{uuid}/nodegroups"),
            Some(json!({"name": "extra"})),
        );
        race_a_cluster_delete(&app, &uuid, vec![create], round).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_upgrade_racing_a_cluster_delete_never_overwrites_the_delete() {
    let app = app_with_quota(1000).await;
    app.template("capi", "ubuntu", &As::member()).await;
    app.template("capi-next", "ubuntu", &As::member()).await;
    for round in 0..8 {
        let uuid = app
            .cluster(&format!("c{round}"), "capi", 1, 1, &As::member())
            .await;
        let upgrade = (
            "POST",
            format!("/v1/clusters/{uuid}/actions/upgrade"),
            Some(json!({"cluster_template": "capi-next"})),
        );
        race_a_cluster_delete(&app, &uuid, vec![upgrade], round).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_resize_racing_a_cluster_delete_never_overwrites_the_delete() {
    let app = app_with_quota(1000).await;
    app.template("capi", "ubuntu", &As::member()).await;
    for round in 0..8 {
        let uuid = app
            .cluster(&format!("c{round}"), "capi", 1, 1, &As::member())
            .await;
        let resizes = (2..5)
            .map(|n| {
                (
                    "POST",
                    format!("/v1/clusters/{uuid}/actions/resize"),
                    Some(json!({"node_count": n})),
                )
            })
            .collect();
        race_a_cluster_delete(&app, &uuid, resizes, round).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_resize_racing_a_nodegroup_delete_leaves_the_cluster_complete() {
    let app = app_with_quota(1000).await;
    app.template("capi", "ubuntu", &As::member()).await;
    for round in 0..10 {
        let uuid = cluster_with_extra(&app, &format!("c{round}")).await;
        let stop = Arc::new(AtomicBool::new(false));
        let worker = worker_beside(&app, &stop);
        let resize = spawn_send(
            &app,
            "POST",
            format!("/v1/clusters/{uuid}/actions/resize"),
            As::member(),
            Some(json!({"node_count": 3, "nodegroup": "extra"})),
        );
        let delete = spawn_send(
            &app,
            "DELETE",
            format!("/v1/clusters/{uuid}/nodegroups/extra"),
            As::member(),
            None,
        );
        let (resized, body) = resize.await.expect("task");
        assert!(
            matches!(
                resized,
                StatusCode::ACCEPTED | StatusCode::NOT_FOUND | StatusCode::BAD_REQUEST
            ),
            "{resized}: {body}"
        );
        let (deleted, body) = delete.await.expect("task");
        assert_eq!(deleted, StatusCode::NO_CONTENT, "{body}");
        settle(&app, &stop, worker).await;
        assert_eq!(
            cluster_status(&app, &uuid).await.as_deref(),
            Some("UPDATE_COMPLETE"),
            "round {round}"
        );
        assert_eq!(failed_operations(&app, &uuid).await, 0, "round {round}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_nodegroup_delete_racing_a_cluster_delete_fails_nothing() {
    let app = app_with_quota(1000).await;
    app.template("capi", "ubuntu", &As::member()).await;
    for round in 0..10 {
        let uuid = cluster_with_extra(&app, &format!("c{round}")).await;
        let ng_delete = (
            "DELETE",
            format!("/v1/clusters/{uuid}/nodegroups/extra"),
            None,
        );
        race_a_cluster_delete(&app, &uuid, vec![ng_delete], round).await;
    }
}

/// A repeated DELETE answers as the first did and records nothing more: no second
/// operation, none left failed, the cluster's status settled.
#[tokio::test]
async fn repeated_deletes_record_one_operation_and_settle() {
    let app = app_with_quota(1000).await;
    app.template("capi", "ubuntu", &As::member()).await;
    let uuid = cluster_with_extra(&app, "twice").await;
    let ops_before = count(
        &app,
        "SELECT COUNT(*) FROM magnum_rs_operation WHERE cluster_uuid = ?",
        &uuid,
    )
    .await;
    for _ in 0..2 {
        let r = app
            .delete(
                &format!("/v1/clusters/{uuid}/nodegroups/extra"),
                &As::member(),
            )
            .await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    }
    app.run_operations().await;
    assert_eq!(
        cluster_status(&app, &uuid).await.as_deref(),
        Some("UPDATE_COMPLETE")
    );
    for _ in 0..2 {
        let r = app
            .delete(&format!("/v1/clusters/{uuid}"), &As::member())
            .await;
        assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    }
    let ops_after = count(
        &app,
        "SELECT COUNT(*) FROM magnum_rs_operation WHERE cluster_uuid = ?",
        &uuid,
    )
    .await;
    assert_eq!(ops_after, ops_before + 2, "one per delete, not per request");
    app.run_operations().await;
    assert_eq!(cluster_status(&app, &uuid).await, None);
    assert_eq!(failed_operations(&app, &uuid).await, 0);
    invariants::assert_hold(&mut side(&app).await, true, "after repeated deletes").await;
}

/// Project A deletes its newest cluster; project B's next cluster never takes its row ids
/// (SQLite reused the largest freed id, so a request of A's that read its rows before the
/// delete wrote B's).
#[tokio::test]
async fn ids_of_a_deleted_cluster_are_never_given_to_another_projects_rows() {
    let app = app_with_quota(1000).await;
    app.template("capi", "ubuntu", &As::member()).await;
    app.template("capi-other", "ubuntu", &As::other()).await;
    let a = app.cluster("a", "capi", 1, 1, &As::member()).await;
    let max_ids = |app: &TestApp| {
        let store = app.state.store.clone();
        async move {
            let mut conn = store.side_connection().await.expect("side");
            let c: i64 = sqlx::query_scalar("SELECT MAX(id) FROM cluster")
                .fetch_one(&mut conn)
                .await
                .expect("max cluster id");
            let n: i64 = sqlx::query_scalar("SELECT MAX(id) FROM nodegroup")
                .fetch_one(&mut conn)
                .await
                .expect("max nodegroup id");
            (c, n)
        }
    };
    let (a_cluster, a_nodegroup) = max_ids(&app).await;
    let r = app
        .delete(&format!("/v1/clusters/{a}"), &As::member())
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    app.run_operations().await;
    let b = app.cluster("b", "capi-other", 1, 1, &As::other()).await;
    let (b_cluster, b_nodegroup) = max_ids(&app).await;
    assert!(b_cluster > a_cluster, "cluster id {b_cluster} reused");
    assert!(
        b_nodegroup > a_nodegroup,
        "nodegroup id {b_nodegroup} reused"
    );
    let row = sqlx::query("SELECT project_id FROM cluster WHERE uuid = ?")
        .bind(b.clone())
        .fetch_one(&mut side(&app).await)
        .await
        .expect("b");
    assert_eq!(row.try_get::<String, _>(0).expect("project"), OTHER_PROJECT);
}

/// The store's half of the cross-project write: a resize built from what project A was shown
/// (its cluster's and nodegroup's uuids) after A's cluster was deleted and B created one is
/// refused, and B's rows are untouched.
#[tokio::test]
async fn a_resize_from_a_stale_view_never_writes_the_next_projects_cluster() {
    use magnum_rs::model::{status, Tenancy};
    use magnum_rs::store::operations::{AcceptResize, NewOperation, OpPayload, ResizeRefused};
    let app = app_with_quota(1000).await;
    app.template("capi", "ubuntu", &As::member()).await;
    app.template("capi-other", "ubuntu", &As::other()).await;
    let a = app.cluster("a", "capi", 1, 1, &As::member()).await;
    let worker = app.nodegroup(&a, "default-worker").await;
    let worker_uuid = worker["uuid"].as_str().expect("uuid").to_string();
    let r = app
        .delete(&format!("/v1/clusters/{a}"), &As::member())
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    app.run_operations().await;
    let b = app.cluster("b", "capi-other", 1, 1, &As::other()).await;
    let refused = app
        .state
        .store
        .accept_resize(AcceptResize {
            cluster_uuid: a.clone(),
            tenancy: Tenancy::Project(PROJECT.into()),
            nodegroup_uuid: worker_uuid.clone(),
            new_count: 7,
            op: NewOperation {
                cluster_uuid: a.clone(),
                nodegroup_uuid: Some(worker_uuid),
                old_count: None,
                new_count: Some(7),
                payload: OpPayload::resize(),
            },
            allowed: status::allows_resize,
            cluster_changes: Vec::new(),
        })
        .await
        .expect("store");
    assert_eq!(refused, Err(ResizeRefused::NodeGroupGone));
    let b_status = cluster_status(&app, &b).await;
    assert_eq!(b_status.as_deref(), Some("CREATE_COMPLETE"));
    let b_worker = count(
        &app,
        "SELECT node_count FROM nodegroup WHERE cluster_id = ? AND role <> 'master'",
        &b,
    )
    .await;
    assert_eq!(b_worker, 1);
    invariants::assert_hold(&mut side(&app).await, true, "after the stale resize").await;
}
