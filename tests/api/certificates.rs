//! `/v1/certificates` check order, texts and policies (the record-only drivers, which hold
//! no CA: Magnum's "not supported" answers). Signing with a real CA through the ClusterAPI
//! driver is covered in `tests/e2e/capi_driver.rs`.

use crate::common;

use axum::http::{Method, StatusCode};
use common::As;
use serde_json::json;

#[tokio::test]
async fn an_unknown_cluster_is_404_for_get_and_patch_and_400_for_post() {
    let app = common::spawn_app().await;
    let r = app.get("/v1/certificates/nothere", &As::member()).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.detail(), "Cluster nothere could not be found.");
    let r = app
        .patch("/v1/certificates/nothere", &As::member(), json!({}))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = app
        .post(
            "/v1/certificates",
            &As::member(),
            json!({"cluster_uuid": "nothere", "csr": ""}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.detail(), "Cluster nothere could not be found.");
    let r = app
        .post("/v1/certificates", &As::member(), json!({"csr": "x"}))
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.detail(), "Cluster Unset could not be found.");
}

#[tokio::test]
async fn another_projects_cluster_is_not_found_even_for_an_admin() {
    let app = common::spawn_app().await;
    let f = app.standard_fixture().await;
    let r = app
        .get(&format!("/v1/certificates/{}", f.foreign), &As::member())
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = app
        .get(&format!("/v1/certificates/{}", f.k8s), &As::admin())
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn bad_bodies_get_wsmes_texts() {
    let app = common::spawn_app().await;
    app.standard_fixture().await;
    let cases = [
        (
            json!({"cluster_uuid": "k8s", "csr": "x", "bogus": 1}),
            "Unknown attribute for argument certificate: bogus",
        ),
        (
            json!({"cluster_uuid": "k8s", "csr": ""}),
            "Invalid input for field/attribute csr. Value: ''. Value should have a minimum character requirement of 1",
        ),
        (
            json!({"cluster_uuid": "k8s", "csr": "x", "pem": 5}),
            "Invalid input for field/attribute pem. Value: '5'. Value should be string",
        ),
    ];
    for (body, text) in cases {
        let r = app
            .post("/v1/certificates", &As::member(), body.clone())
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(r.detail(), text, "{body}");
    }
    let r = app
        .patch("/v1/certificates/k8s", &As::member(), json!({"x": 1}))
        .await;
    assert_eq!(r.detail(), "Unknown argument: \"x\"");
    let r = app.get("/v1/certificates/k8s?foo=1", &As::member()).await;
    assert_eq!(r.detail(), "Unknown argument: \"foo\"");
    let r = app.get("/v1/certificates", &As::member()).await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn policies_are_magnums_user_rules_for_read_and_sign_and_member_for_rotate() {
    let app = common::spawn_app().await;
    app.standard_fixture().await;
    let r = app
        .post(
            "/v1/certificates",
            &As::reader(),
            json!({"cluster_uuid": "k8s", "csr": "x"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(
        r.detail(),
        "Policy doesn't allow certificate:create to be performed."
    );
    let r = app
        .send(
            Method::PATCH,
            "/v1/certificates/k8s",
            &As::reader(),
            None,
            None,
        )
        .await;
    assert_eq!(
        r.detail(),
        "Policy doesn't allow certificate:rotate_ca to be performed."
    );
    let nobody = As {
        roles: String::new(),
        ..As::member()
    };
    let r = app.get("/v1/certificates/k8s", &nobody).await;
    assert_eq!(
        r.detail(),
        "Policy doesn't allow certificate:get to be performed."
    );
    // Magnum's `*_user` rules: a reader of the project who is also the cluster's user
    // passes (the record-only driver then holds no CA); another reader does not.
    let r = app.get("/v1/certificates/k8s", &As::reader()).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let owner_reader = As {
        user: As::member().user,
        ..As::reader()
    };
    let r = app.get("/v1/certificates/k8s", &owner_reader).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    let other_member = As {
        user: "u-someone-else".into(),
        ..As::member()
    };
    let r = app
        .post(
            "/v1/certificates",
            &other_member,
            json!({"cluster_uuid": "k8s", "csr": "x"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    // Rotation is `admin_or_project_member`: any member of the project.
    let r = app
        .send(
            Method::PATCH,
            "/v1/certificates/k8s",
            &other_member,
            None,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_driver_without_a_ca_answers_magnums_not_supported() {
    let app = common::spawn_app().await;
    app.standard_fixture().await;
    let r = app.get("/v1/certificates/k8s", &As::member()).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.detail(),
        "'get_ca_certificate' is not supported by this driver."
    );
    let r = app
        .post(
            "/v1/certificates",
            &As::member(),
            json!({"cluster_uuid": "k8s", "csr": "x"}),
        )
        .await;
    assert_eq!(
        r.detail(),
        "'sign_certificate' is not supported by this driver."
    );
    let r = app
        .send(
            Method::PATCH,
            "/v1/certificates/legacy",
            &As::member(),
            None,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.detail(),
        "'rotate_ca_certificate' is not supported by this driver."
    );
}

#[tokio::test]
async fn rotation_checks_tls_then_the_cluster_status_first() {
    let app = common::spawn_app().await;
    let r = app
        .post(
            "/v1/clustertemplates",
            &As::member(),
            json!({"name": "notls", "coe": "kubernetes", "image_id": "img", "cluster_distro": "ubuntu",
                   "tls_disabled": true, "master_lb_enabled": true}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    app.cluster("plain", "notls", 1, 1, &As::member()).await;
    let r = app
        .send(
            Method::PATCH,
            "/v1/certificates/plain",
            &As::member(),
            None,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.detail(),
        "Rotating the CA certificate on a non-TLS cluster is not supported"
    );

    app.template("capi", "ubuntu", &As::member()).await;
    let r = app
        .post(
            "/v1/clusters",
            &As::member(),
            json!({"name": "busy", "cluster_template_id": "capi", "master_count": 1, "node_count": 1}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    // Not run by a worker yet: still CREATE_IN_PROGRESS.
    let r = app
        .send(
            Method::PATCH,
            "/v1/certificates/busy",
            &As::member(),
            None,
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.detail(),
        "Updating a cluster when status is \"CREATE_IN_PROGRESS\" is not supported."
    );
}
