//! Retries of passing driver failures are durable (issue 29): a resize whose management
//! cluster cannot be reached goes back to pending with its next try stored (`not_before`,
//! exponential backoff with jitter) and the first failure of the run (`retry_since`); a new
//! process on the same database keeps that schedule; the retries end at the driver's
//! progress deadline, counted from the first failure, with the last reason. Time passing is
//! played by moving the stored times back, so nothing here sleeps.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use serde_json::json;
use sqlx::Row as _;

use common::scripted_driver::ScriptedDriver;
use common::{spawn_app_with, As, TestApp};
use magnum_rs::config::Config;
use magnum_rs::drivers::{DriverError, DriverRegistry, Progress};
use magnum_rs::operations::OperationsHandle;
use magnum_rs::policy::Policy;
use magnum_rs::state::AppState;
use magnum_rs::store::Store;

fn registry(driver: Arc<ScriptedDriver>) -> DriverRegistry {
    let mut registry = DriverRegistry::default();
    registry.register(driver, &[]);
    registry
}

/// A driver whose management cluster is unreachable for its first `failures` resize calls,
/// with a progress deadline of 60 s; and the count of its resize calls.
fn unreachable_for(failures: usize) -> (Arc<ScriptedDriver>, Arc<AtomicUsize>) {
    let resizes = Arc::new(AtomicUsize::new(0));
    let calls = Arc::clone(&resizes);
    let driver = ScriptedDriver::new("unreachable", "flaky-os")
        .progress_deadline(Duration::from_secs(60))
        .resize(move |_| {
            if calls.fetch_add(1, Ordering::SeqCst) < failures {
                Err(DriverError::transient(
                    "management cluster unreachable: connection refused",
                ))
            } else {
                Ok(Progress::Complete)
            }
        });
    (Arc::new(driver), resizes)
}

/// An app with the flaky driver, a cluster of it, and a resize of its worker to 4 accepted.
async fn resized(driver: Arc<ScriptedDriver>) -> (TestApp, String) {
    let app = spawn_app_with(Config::default(), Some(registry(driver))).await;
    app.template("flaky", "flaky-os", &As::member()).await;
    let uuid = app.cluster("flaky", "flaky", 1, 2, &As::member()).await;
    let r = app
        .post(
            &format!("/v1/clusters/{uuid}/actions/resize"),
            &As::member(),
            json!({"node_count": 4}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    (app, uuid)
}

/// The resize operation's row: state, attempts, whether its next try is in the future,
/// whether its run of failures is recorded, its last error.
async fn resize_row(app: &TestApp) -> (String, i64, bool, bool, Option<String>) {
    let mut conn = app.state.store.side_connection().await.expect("side");
    let now = chrono::Utc::now()
        .naive_utc()
        .format("%Y-%m-%d %H:%M:%S%.6f")
        .to_string();
    let row = sqlx::query(
        "SELECT state, attempts, \
         CASE WHEN not_before > ? THEN 1 ELSE 0 END, \
         CASE WHEN retry_since IS NULL THEN 0 ELSE 1 END, last_error \
         FROM magnum_rs_operation WHERE kind = 'resize'",
    )
    .bind(now)
    .fetch_one(&mut conn)
    .await
    .expect("resize row");
    (
        row.try_get(0).expect("state"),
        row.try_get(1).expect("attempts"),
        row.try_get::<i64, _>(2).expect("later") == 1,
        row.try_get::<i64, _>(3).expect("since") == 1,
        // TEXT: a string, or bytes through the Any driver on MariaDB.
        row.try_get::<String, _>(4).ok().or_else(|| {
            row.try_get::<Vec<u8>, _>(4)
                .ok()
                .map(|b| String::from_utf8_lossy(&b).into_owned())
        }),
    )
}

/// Time passes for the stored schedule: the next try is due now.
async fn make_due(app: &TestApp) {
    let mut conn = app.state.store.side_connection().await.expect("side");
    sqlx::query("UPDATE magnum_rs_operation SET not_before = '2000-01-01 00:00:00'")
        .execute(&mut conn)
        .await
        .expect("due");
}

async fn worker_status(app: &TestApp, uuid: &str) -> (String, i64) {
    let ng = app.nodegroup(uuid, "default-worker").await;
    (
        ng["status"].as_str().unwrap_or_default().to_string(),
        ng["node_count"].as_i64().unwrap_or_default(),
    )
}

#[tokio::test]
async fn a_passing_failure_is_retried_at_its_stored_time_and_the_resize_completes() {
    let (driver, resizes) = unreachable_for(2);
    let (app, uuid) = resized(driver).await;

    app.run_operations().await;
    let (state, attempts, later, since, error) = resize_row(&app).await;
    assert_eq!(state, "pending");
    assert_eq!(attempts, 1);
    assert!(later, "the next try is stored in the future");
    assert!(since, "the first failure of the run is stored");
    assert!(
        error.as_deref().unwrap_or_default().contains("unreachable"),
        "{error:?}"
    );
    // Not due yet: the worker leaves it alone.
    app.run_operations().await;
    assert_eq!(resizes.load(Ordering::SeqCst), 1);
    assert_eq!(
        worker_status(&app, &uuid).await,
        ("UPDATE_IN_PROGRESS".into(), 4)
    );

    make_due(&app).await;
    app.run_operations().await;
    assert_eq!(resizes.load(Ordering::SeqCst), 2);
    assert_eq!(resize_row(&app).await.0, "pending");
    make_due(&app).await;
    app.run_operations().await;
    assert_eq!(resizes.load(Ordering::SeqCst), 3);
    assert_eq!(resize_row(&app).await.0, "done");
    assert_eq!(
        worker_status(&app, &uuid).await,
        ("UPDATE_COMPLETE".into(), 4)
    );
}

/// A new process on the same database (a restart, another leader) keeps the schedule: the
/// retry is not run before its time, and is run then.
#[tokio::test]
async fn a_restart_keeps_the_retry_schedule() {
    let (first, first_resizes) = unreachable_for(1);
    let (app, uuid) = resized(first).await;
    app.run_operations().await;
    assert_eq!(first_resizes.load(Ordering::SeqCst), 1);

    let (second, second_resizes) = unreachable_for(0);
    let config = Config {
        database_url: app.db.url.clone(),
        ..Config::default()
    };
    let store = Store::connect(&app.db.url).await.expect("connect");
    let restarted = AppState::new(
        config,
        store,
        Policy::magnum_defaults(),
        registry(second),
        OperationsHandle::default(),
    );
    magnum_rs::operations::run_pending(&restarted.conductor)
        .await
        .expect("pass");
    assert_eq!(
        second_resizes.load(Ordering::SeqCst),
        0,
        "ran before its time"
    );
    make_due(&app).await;
    magnum_rs::operations::run_pending(&restarted.conductor)
        .await
        .expect("pass");
    assert_eq!(second_resizes.load(Ordering::SeqCst), 1);
    assert_eq!(
        worker_status(&app, &uuid).await,
        ("UPDATE_COMPLETE".into(), 4)
    );
}

/// Failing for longer than the driver's progress deadline (from the first failure of the
/// run) ends the retries: UPDATE_FAILED with the last reason, the previous count back.
#[tokio::test]
async fn retries_end_at_the_progress_deadline_with_the_last_reason() {
    let (driver, _) = unreachable_for(usize::MAX);
    let (app, uuid) = resized(driver).await;
    app.run_operations().await;
    assert_eq!(resize_row(&app).await.0, "pending");
    let mut conn = app.state.store.side_connection().await.expect("side");
    sqlx::query(
        "UPDATE magnum_rs_operation SET retry_since = '2000-01-01 00:00:00', \
         not_before = '2000-01-01 00:00:00'",
    )
    .execute(&mut conn)
    .await
    .expect("long ago");
    app.run_operations().await;
    let (state, _, _, _, error) = resize_row(&app).await;
    assert_eq!(state, "failed");
    let error = error.unwrap_or_default();
    assert!(error.contains("management cluster unreachable"), "{error}");
    assert!(error.contains("retried for"), "{error}");
    assert_eq!(
        worker_status(&app, &uuid).await,
        ("UPDATE_FAILED".into(), 2)
    );
}
