//! A failed resize sets the backend back (issue 29), played in-process by a driver whose
//! backend takes any count but one it then refuses (as the KCP webhook refuses an even
//! control plane after the Cluster took it): the failure restores the count in the database
//! and records, in the same transaction, a roll-back that sets the backend back to it; the
//! roll-back runs like a resize, leaves the failure's status and reason in place, and does
//! not block the next resize. When the backend refuses the roll-back too, the API shows the
//! count the backend is asked for.

use crate::common;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use serde_json::json;
use sqlx::Row as _;

use common::scripted_driver::ScriptedDriver;
use common::{spawn_app_with, As, TestApp};
use magnum_rs::config::Config;
use magnum_rs::drivers::{DriverError, DriverRegistry, InFlight, Progress, Verdict, WaitOn};

const REFUSED: i64 = 4;
const WEBHOOK: &str = "admission webhook denied the request: replicas cannot be 4";

/// The backend of one worker nodegroup: the count its spec asks for, and the counts the
/// driver was asked to set, in order.
#[derive(Default)]
struct Backend {
    asked: AtomicI64,
    calls: Mutex<Vec<i64>>,
}

impl Backend {
    /// Takes any count but, when `refuse_back_to` is set, a change back to that count from
    /// the refused one (its API server rejects it).
    fn resize(&self, n: i64, refuse_back_to: Option<i64>) -> Result<Progress, DriverError> {
        self.calls.lock().expect("lock").push(n);
        if refuse_back_to == Some(n) && self.asked.load(Ordering::SeqCst) == REFUSED {
            return Err(DriverError::rejected(
                "the API server refused the change back",
            ));
        }
        self.asked.store(n, Ordering::SeqCst);
        Ok(Progress::Waiting(WaitOn {
            object: "backend".into(),
            generation: Some(n),
        }))
    }

    /// Reaches whatever its spec asks for, but the refused count.
    fn observe(&self, op: &InFlight<'_>) -> Verdict {
        let asked = self.asked.load(Ordering::SeqCst);
        if asked == REFUSED {
            return Verdict::Failed {
                reason: WEBHOOK.into(),
            };
        }
        match op.target_count {
            Some(n) if n == asked => Verdict::Complete,
            _ => Verdict::InProgress {
                reason: Some("scaling".into()),
                marker: "m".into(),
            },
        }
    }
}

/// An app whose driver plays `b` (refusing a change back to `refuse_back_to`), and a cluster
/// with 3 workers on it.
async fn app_on(b: Arc<Backend>, refuse_back_to: Option<i64>) -> (TestApp, String) {
    let (created, resized, observed, asked) = (
        Arc::clone(&b),
        Arc::clone(&b),
        Arc::clone(&b),
        Arc::clone(&b),
    );
    let driver = ScriptedDriver::new("back", "back-os")
        .on_create(move |ngs| {
            let workers = ngs
                .iter()
                .find(|n| !n.is_master())
                .map_or(1, |n| n.node_count);
            created.asked.store(workers, Ordering::SeqCst);
        })
        .resize(move |r| resized.resize(r.node_count, refuse_back_to))
        .observe(move |op| observed.observe(op))
        .asked_count(move || Some(asked.asked.load(Ordering::SeqCst)));
    let mut registry = DriverRegistry::default();
    registry.register(Arc::new(driver), &[]);
    let app = spawn_app_with(Config::default(), Some(registry)).await;
    app.template("back", "back-os", &As::member()).await;
    let uuid = app.cluster("back", "back", 1, 3, &As::member()).await;
    (app, uuid)
}

async fn resize(app: &TestApp, uuid: &str, n: i64) {
    let r = app
        .post(
            &format!("/v1/clusters/{uuid}/actions/resize"),
            &As::member(),
            json!({"node_count": n}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
}

/// Runs the worker until nothing is left to run (a failure records a roll-back).
async fn drain(app: &TestApp) {
    while app.run_operations().await > 0 {}
}

async fn operations(app: &TestApp) -> Vec<(String, String)> {
    let mut conn = app.state.store.side_connection().await.expect("side");
    sqlx::query("SELECT kind, state FROM magnum_rs_operation ORDER BY id")
        .fetch_all(&mut conn)
        .await
        .expect("operations")
        .into_iter()
        .map(|r| (r.try_get(0).expect("kind"), r.try_get(1).expect("state")))
        .collect()
}

#[tokio::test]
async fn a_refused_size_is_rolled_back_and_the_next_resize_completes() {
    let b = Arc::new(Backend::default());
    let (app, uuid) = app_on(Arc::clone(&b), None).await;

    resize(&app, &uuid, REFUSED).await;
    drain(&app).await;
    let ng = app.nodegroup(&uuid, "default-worker").await;
    assert_eq!(ng["status"], "UPDATE_FAILED");
    assert_eq!(ng["node_count"], 3, "the previous count is restored");
    assert_eq!(ng["status_reason"], WEBHOOK, "the failure's reason stays");
    assert_eq!(
        b.asked.load(Ordering::SeqCst),
        3,
        "the backend is asked for what the API shows"
    );
    assert_eq!(*b.calls.lock().expect("lock"), vec![REFUSED, 3]);
    let ops = operations(&app).await;
    assert_eq!(
        ops[ops.len() - 2..],
        [
            ("resize".into(), "failed".into()),
            ("rollback".into(), "done".into())
        ]
    );
    let c = app
        .get(&format!("/v1/clusters/{uuid}"), &As::member())
        .await;
    assert_eq!(c.body["status"], "UPDATE_FAILED");

    // The failed resize blocks nothing.
    resize(&app, &uuid, 2).await;
    drain(&app).await;
    let ng = app.nodegroup(&uuid, "default-worker").await;
    assert_eq!(ng["status"], "UPDATE_COMPLETE");
    assert_eq!(ng["node_count"], 2);
    assert_eq!(b.asked.load(Ordering::SeqCst), 2);
}

/// The roll-back refused by the backend's API server: still failed, with both reasons, and
/// the count the backend is asked for (the failed one), not the restored one it never took.
#[tokio::test]
async fn a_refused_roll_back_shows_the_count_the_backend_is_asked_for() {
    let b = Arc::new(Backend::default());
    let (app, uuid) = app_on(Arc::clone(&b), Some(3)).await;
    resize(&app, &uuid, REFUSED).await;
    drain(&app).await;
    let ng = app.nodegroup(&uuid, "default-worker").await;
    assert_eq!(ng["status"], "UPDATE_FAILED");
    assert_eq!(ng["node_count"], REFUSED, "what the backend asks for");
    let reason = ng["status_reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with(WEBHOOK), "{reason}");
    assert!(
        reason.contains("the roll-back to 3 did not complete: the API server refused"),
        "{reason}"
    );
    let ops = operations(&app).await;
    assert_eq!(ops.last(), Some(&("rollback".into(), "failed".into())));
    assert_eq!(b.asked.load(Ordering::SeqCst), REFUSED);
}

/// A resize sent while the roll-back waits supersedes it: the newest count is the one the
/// backend moves to.
#[tokio::test]
async fn a_new_resize_supersedes_a_pending_roll_back() {
    let b = Arc::new(Backend::default());
    let (app, uuid) = app_on(Arc::clone(&b), None).await;
    resize(&app, &uuid, REFUSED).await;
    // The failure and its roll-back recorded, the roll-back not run yet.
    app.run_operations().await;
    let ops = operations(&app).await;
    assert_eq!(ops.last(), Some(&("rollback".into(), "pending".into())));
    resize(&app, &uuid, 5).await;
    drain(&app).await;
    let ops = operations(&app).await;
    assert_eq!(
        ops[ops.len() - 2..],
        [
            ("rollback".into(), "superseded".into()),
            ("resize".into(), "done".into())
        ]
    );
    assert_eq!(*b.calls.lock().expect("lock"), vec![REFUSED, 5]);
    let ng = app.nodegroup(&uuid, "default-worker").await;
    assert_eq!(
        (ng["status"].clone(), ng["node_count"].clone()),
        (json!("UPDATE_COMPLETE"), json!(5))
    );
}
