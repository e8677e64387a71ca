//! An operator `policy.yaml` overrides single rules of Magnum's defaults.

use crate::common;

use axum::http::StatusCode;
use common::As;
use magnum_rs::operations::OperationsHandle;
use magnum_rs::policy::Policy;
use magnum_rs::state::AppState;
use serde_json::json;

#[tokio::test]
async fn policy_yaml_letting_readers_resize_turns_403_into_202() {
    let app = common::spawn_app().await;
    let f = app.standard_fixture().await;
    let path = format!("/v1/clusters/{}/actions/resize", f.k8s);

    let denied = app
        .post(&path, &As::reader(), json!({"node_count": 3}))
        .await;
    assert_eq!(denied.status, StatusCode::FORBIDDEN);
    assert_eq!(
        denied.detail(),
        "Policy doesn't allow cluster:resize to be performed."
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("policy.yaml");
    std::fs::write(
        &file,
        "\"cluster:resize\": \"role:reader and project_id:%(project_id)s\"\n",
    )
    .expect("write");
    let policy = Policy::with_overrides_file(&file).expect("policy file");
    let store = app.state.store.clone();
    let drivers = magnum_rs::build_drivers(&app.state.config)
        .await
        .expect("drivers");
    let state = AppState::new(
        app.state.config.clone(),
        store,
        policy,
        drivers,
        OperationsHandle::default(),
    );
    let overridden = common::TestApp {
        router: magnum_rs::app(state.clone()),
        state,
        db: common::TestDb {
            url: app.db.url.clone(),
            _dir: None,
        },
    };
    let allowed = overridden
        .post(&path, &As::reader(), json!({"node_count": 3}))
        .await;
    assert_eq!(allowed.status, StatusCode::ACCEPTED, "{}", allowed.body);
    // Other rules keep their defaults: a reader still cannot create clusters.
    let create = overridden
        .post(
            "/v1/clusters",
            &As::reader(),
            json!({"cluster_template_id": "capi"}),
        )
        .await;
    assert_eq!(create.status, StatusCode::FORBIDDEN);
}
