//! A cluster delete's clean-up once the backend's cluster is gone (the ClusterAPI driver
//! deletes the Secrets its create wrote, as magnum-cluster-api does), played in-process by a
//! driver whose delete waits, whose backend then shows the cluster gone, and whose clean-up
//! fails until the test lets it pass: the delete stays `DELETE_IN_PROGRESS` with the
//! clean-up's reason and the row stays; the next look cleans up and the row goes.

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use axum::http::StatusCode;

use common::scripted_driver::ScriptedDriver;
use common::{spawn_app_with, As};
use magnum_rs::config::Config;
use magnum_rs::drivers::{DriverError, DriverRegistry, Progress, Verdict, WaitOn};
use magnum_rs::operation::OpKind;

#[tokio::test]
async fn a_delete_whose_clean_up_fails_waits_with_the_reason_and_ends_when_it_passes() {
    let failing = Arc::new(AtomicBool::new(true));
    let calls = Arc::new(AtomicUsize::new(0));
    let (f, c) = (Arc::clone(&failing), Arc::clone(&calls));
    let driver = ScriptedDriver::new("gone", "gone-os")
        .delete(|| {
            Ok(Progress::Waiting(WaitOn {
                object: "backend".into(),
                generation: None,
            }))
        })
        .observe(|op| match op.kind {
            OpKind::DeleteCluster => Verdict::Complete,
            _ => Verdict::Unknown,
        })
        .clean_up(move || {
            c.fetch_add(1, Ordering::SeqCst);
            if f.load(Ordering::SeqCst) {
                Err(DriverError::transient(
                    "Secret kube-x-ca: the API server is away",
                ))
            } else {
                Ok(())
            }
        });
    let mut registry = DriverRegistry::default();
    registry.register(Arc::new(driver), &[]);
    let app = spawn_app_with(Config::default(), Some(registry)).await;
    app.template("gone", "gone-os", &As::member()).await;
    let uuid = app.cluster("gone", "gone", 1, 1, &As::member()).await;

    let r = app
        .delete(&format!("/v1/clusters/{uuid}"), &As::member())
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    while app.run_operations().await > 0 {}
    let c = app
        .get(&format!("/v1/clusters/{uuid}"), &As::member())
        .await;
    assert_eq!(
        c.status,
        StatusCode::OK,
        "the row stays while the clean-up fails"
    );
    assert_eq!(c.body["status"], "DELETE_IN_PROGRESS");
    assert_eq!(
        c.body["status_reason"],
        "cleaning up after the deleted cluster: Secret kube-x-ca: the API server is away"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // The next look (the controller's requeue) cleans up, and the row goes.
    failing.store(false, Ordering::SeqCst);
    let waiting = app
        .state
        .store
        .waiting_operations(Some(&uuid))
        .await
        .expect("waiting");
    assert_eq!(waiting.len(), 1, "the delete still waits");
    magnum_rs::operations::reconcile::reconcile_op(&app.state.conductor, &waiting[0])
        .await
        .expect("reconciled");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let c = app
        .get(&format!("/v1/clusters/{uuid}"), &As::member())
        .await;
    assert_eq!(c.status, StatusCode::NOT_FOUND, "{}", c.body);
}
