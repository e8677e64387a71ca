//! Adoption of work another conductor began (`operations::adoption`): a cluster whose rows
//! say a change is under way, written as Magnum's conductor and magnum-cluster-api write
//! them (no operation of ours), gets waiting operations when the conductor role starts, and
//! the reconciler ends them from the backend's status. A second start adopts nothing more,
//! and a cluster whose status moved on since the plan was made is not adopted.

use crate::common;

use std::sync::{Arc, Mutex};

use axum::http::StatusCode;

use common::scripted_driver::ScriptedDriver;
use common::{spawn_app_with, As};
use magnum_rs::config::Config;
use magnum_rs::drivers::{DriverRegistry, Verdict};
use magnum_rs::operation::{OpKind, OpState, Wait};
use magnum_rs::operations::adoption::{adopt_in_flight, plan};
use magnum_rs::store::adoption::NotAdopted;

/// What Magnum's conductor and magnum-cluster-api leave for a resize of the nodegroup
/// `ng` to `count`: the count written, the cluster and the nodegroup `UPDATE_IN_PROGRESS`.
async fn resize_begun_elsewhere(app: &common::TestApp, cluster: &str, ng: &str, count: i64) {
    let mut side = app.state.store.side_connection().await.expect("connection");
    sqlx::query(
        "UPDATE cluster SET status = 'UPDATE_IN_PROGRESS', stack_id = 'kube-adopt' WHERE uuid = ?",
    )
    .bind(cluster.to_string())
    .execute(&mut side)
    .await
    .expect("cluster");
    sqlx::query(
        "UPDATE nodegroup SET status = 'UPDATE_IN_PROGRESS', node_count = ? WHERE uuid = ?",
    )
    .bind(count)
    .bind(ng.to_string())
    .execute(&mut side)
    .await
    .expect("nodegroup");
}

/// What the driver was asked to observe: the kind and the target count.
type Looked = (OpKind, Option<i64>);

#[tokio::test]
async fn a_resize_another_conductor_began_is_adopted_once_and_ends_complete_from_the_backend() {
    let seen: Arc<Mutex<Vec<Looked>>> = Arc::default();
    let s = Arc::clone(&seen);
    let driver = ScriptedDriver::new("adopting", "adopt-os").observe(move |op| {
        s.lock().unwrap().push((op.kind, op.target_count));
        match op.kind {
            OpKind::Resize if op.target_count == Some(3) => Verdict::Complete,
            _ => Verdict::Unknown,
        }
    });
    let mut registry = DriverRegistry::default();
    registry.register(Arc::new(driver), &[]);
    let app = spawn_app_with(Config::default(), Some(registry)).await;
    app.template("adopt", "adopt-os", &As::member()).await;
    let uuid = app.cluster("adopted", "adopt", 1, 1, &As::member()).await;
    while app.run_operations().await > 0 {}
    let ngs = app
        .get(&format!("/v1/clusters/{uuid}/nodegroups"), &As::member())
        .await;
    let worker = ngs.body["nodegroups"]
        .as_array()
        .expect("nodegroups")
        .iter()
        .find(|n| n["name"] == "default-worker")
        .expect("worker")["uuid"]
        .as_str()
        .expect("uuid")
        .to_string();
    resize_begun_elsewhere(&app, &uuid, &worker, 3).await;

    let conductor = &app.state.conductor;
    adopt_in_flight(conductor).await;
    adopt_in_flight(conductor).await;
    let waiting = app
        .state
        .store
        .waiting_operations(Some(&uuid))
        .await
        .expect("waiting");
    assert_eq!(waiting.len(), 1, "adopted once: {waiting:?}");
    let op = &waiting[0];
    assert_eq!(op.kind(), OpKind::Resize);
    assert_eq!(op.state, OpState::Waiting);
    assert_eq!(op.nodegroup_uuid.as_deref(), Some(worker.as_str()));
    assert_eq!((op.old_count, op.new_count), (None, Some(3)));
    assert_eq!(op.wait_object.as_deref(), Some("kube-adopt"));
    assert!(op.deadline_at.is_some(), "a deadline, as for our own waits");

    magnum_rs::operations::reconcile::reconcile_op(conductor, op)
        .await
        .expect("reconciled");
    assert_eq!(
        seen.lock().unwrap().last(),
        Some(&(OpKind::Resize, Some(3)))
    );
    let c = app
        .get(&format!("/v1/clusters/{uuid}"), &As::member())
        .await;
    assert_eq!(c.status, StatusCode::OK);
    assert_eq!(c.body["status"], "UPDATE_COMPLETE", "{}", c.body);
    assert_eq!(c.body["node_count"], 3);
    let n = app
        .get(
            &format!("/v1/clusters/{uuid}/nodegroups/{worker}"),
            &As::member(),
        )
        .await;
    assert_eq!(n.body["status"], "UPDATE_COMPLETE", "{}", n.body);
    assert_eq!(n.body["node_count"], 3);
    // Ended: a next start of the role has nothing to adopt.
    adopt_in_flight(conductor).await;
    assert!(app
        .state
        .store
        .waiting_operations(Some(&uuid))
        .await
        .expect("waiting")
        .is_empty());
}

#[tokio::test]
async fn a_cluster_whose_status_moved_on_since_the_plan_is_not_adopted() {
    let mut registry = DriverRegistry::default();
    registry.register(Arc::new(ScriptedDriver::new("still", "still-os")), &[]);
    let app = spawn_app_with(Config::default(), Some(registry)).await;
    app.template("still", "still-os", &As::member()).await;
    let uuid = app.cluster("moved", "still", 1, 1, &As::member()).await;
    while app.run_operations().await > 0 {}
    let store = &app.state.store;
    let cluster = store
        .cluster_by_uuid(&uuid)
        .await
        .expect("read")
        .expect("row");
    assert_eq!(cluster.status.as_deref(), Some("CREATE_COMPLETE"));
    let nodegroups = store
        .nodegroups_of_clusters(std::slice::from_ref(&uuid))
        .await
        .expect("nodegroups");
    // A plan made while the cluster was being deleted elsewhere.
    let deleting = magnum_rs::model::Cluster {
        status: Some("DELETE_IN_PROGRESS".into()),
        ..cluster
    };
    let ops = plan(&deleting, &nodegroups);
    assert_eq!(ops.len(), 1);
    let wait = Wait {
        object: "kube-moved".into(),
        generation: None,
        deadline_seconds: 60,
    };
    let r = store
        .adopt(&uuid, "DELETE_IN_PROGRESS", &ops, &wait)
        .await
        .expect("store");
    assert_eq!(r, Err(NotAdopted::StatusChanged));
    let ops_after = store.operations_of_cluster(&uuid).await.expect("ops");
    assert!(
        ops_after.iter().all(|o| o.kind() == OpKind::CreateCluster),
        "nothing recorded: {ops_after:?}"
    );
}
