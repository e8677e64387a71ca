//! `/v1/certificates` check order, texts and policies, and the CAs Magnum's conductor makes
//! for every cluster at create time (served and signed with from `x509keypair`; a cluster
//! without them gets Magnum's "not supported" answers). Signing with Cluster API's CA
//! through the ClusterAPI driver is covered in `tests/e2e/capi_driver.rs`.

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
    // passes (and gets the CA); another reader does not.
    let r = app.get("/v1/certificates/k8s", &As::reader()).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let owner_reader = As {
        user: As::member().user,
        ..As::reader()
    };
    let r = app.get("/v1/certificates/k8s", &owner_reader).await;
    assert_eq!(r.status, StatusCode::OK);
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

/// A cluster created before magnum-rs kept Magnum's CAs (no `ca_cert_ref`) on a driver
/// that holds none itself: Magnum's base driver's answers.
#[tokio::test]
async fn a_cluster_without_stored_cas_answers_magnums_not_supported() {
    let app = common::spawn_app().await;
    app.standard_fixture().await;
    forget_cas(&app, "k8s").await;
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

/// Clears a cluster's certificate refs, as a cluster created before magnum-rs made them.
async fn forget_cas(app: &common::TestApp, name: &str) {
    sqlx::query(
        "UPDATE cluster SET ca_cert_ref = NULL, etcd_ca_cert_ref = NULL, \
         front_proxy_ca_cert_ref = NULL, magnum_cert_ref = NULL WHERE name = ?",
    )
    .bind(name)
    .execute(&mut app.state.store.side_connection().await.expect("connection"))
    .await
    .expect("update");
}

fn certificate(pem: &str) -> Vec<u8> {
    x509_parser::pem::parse_x509_pem(pem.as_bytes())
        .expect("pem")
        .1
        .contents
}

/// Every cluster gets the CAs Magnum's conductor makes at create time, whatever its
/// driver; `GET` serves each kind and `POST` signs with the cluster CA (what Terraform's
/// provider and openstacksdk do for every cluster).
#[tokio::test]
async fn every_cluster_gets_magnums_cas_at_create_and_serves_and_signs_with_them() {
    use x509_parser::prelude::{FromDer as _, X509Certificate};
    let app = common::spawn_app().await;
    app.standard_fixture().await;
    let mut pems = Vec::new();
    for query in [
        "",
        "?ca_cert_type=kubernetes",
        "?ca_cert_type=etcd",
        "?ca_cert_type=front_proxy",
        "?ca_cert_type=front-proxy",
    ] {
        let r = app
            .get(&format!("/v1/certificates/legacy{query}"), &As::member())
            .await;
        assert_eq!(r.status, StatusCode::OK, "{query}: {}", r.body);
        let pem = r.body["pem"].as_str().unwrap_or_default().to_string();
        let der = certificate(&pem);
        let (_, ca) = X509Certificate::from_der(&der).expect("x509");
        assert_eq!(ca.subject().to_string(), "CN=legacy", "{query}");
        assert!(ca.is_ca(), "{query}");
        pems.push(pem);
    }
    assert_eq!(pems[0], pems[1]);
    assert_eq!(pems[3], pems[4]);
    assert_ne!(pems[0], pems[2]);
    assert_ne!(pems[0], pems[3]);
    assert_ne!(pems[2], pems[3]);

    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "kubelet");
    let csr = params
        .serialize_request(&key)
        .expect("csr")
        .pem()
        .expect("pem");
    let r = app
        .post(
            "/v1/certificates",
            &As::member(),
            json!({"cluster_uuid": "legacy", "csr": csr}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let der = certificate(r.body["pem"].as_str().unwrap_or_default());
    let (_, signed) = X509Certificate::from_der(&der).expect("x509");
    let ca_der = certificate(&pems[0]);
    let (_, ca) = X509Certificate::from_der(&ca_der).expect("ca");
    assert_eq!(signed.subject().to_string(), "CN=kubelet");
    assert_eq!(signed.issuer().to_string(), "CN=legacy");
    assert!(signed.verify_signature(Some(ca.public_key())).is_ok());
    // A request that is not a CSR: Magnum's InvalidCsr.
    let r = app
        .post(
            "/v1/certificates",
            &As::member(),
            json!({"cluster_uuid": "legacy", "csr": "not a csr"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(r.detail(), "Received invalid csr not a csr.");
}

/// A deleted cluster's certificates go with it.
#[tokio::test]
async fn a_deleted_clusters_certificates_are_deleted() {
    use magnum_rs::store::x509keypairs::CertKind;
    let app = common::spawn_app().await;
    let f = app.standard_fixture().await;
    let store = &app.state.store;
    let ca = store
        .cluster_certificate(&f.legacy, CertKind::Ca)
        .await
        .expect("db")
        .expect("stored");
    let r = app.delete("/v1/clusters/legacy", &As::member()).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    app.run_operations().await;
    let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM x509keypair WHERE uuid = ?")
        .bind(&ca.uuid)
        .fetch_one(&mut store.side_connection().await.expect("connection"))
        .await
        .expect("count");
    assert_eq!(left, 0);
    // The other clusters keep theirs: 2 clusters of 4 certificates each.
    let all: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM x509keypair")
        .fetch_one(&mut store.side_connection().await.expect("connection"))
        .await
        .expect("count");
    assert_eq!(all, 8);
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

/// A cluster deleted before the worker reaches its create gets no certificates: the delete
/// that follows would remove them at once (four RSA keys, about 0.35 s of CPU, spared).
#[tokio::test]
async fn a_cluster_deleted_before_its_create_runs_gets_no_certificates() {
    use magnum_rs::operations::certificates::{ensure_for_create, Made};
    let app = common::spawn_app().await;
    let t = app.template("t", "fedora-coreos", &As::member()).await;
    let r = app
        .post(
            "/v1/clusters",
            &As::member(),
            json!({"name": "brief", "cluster_template_id": t["uuid"], "node_count": 1}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let uuid = r.body["uuid"].as_str().expect("uuid").to_string();
    let r = app.delete("/v1/clusters/brief", &As::member()).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
    let store = &app.state.store;
    let cluster = store
        .cluster_by_uuid(&uuid)
        .await
        .expect("db")
        .expect("row");
    let made = ensure_for_create(&app.state.conductor, &cluster)
        .await
        .expect("db");
    assert_eq!(made, Made::Deleting);
    let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM x509keypair")
        .fetch_one(&mut store.side_connection().await.expect("connection"))
        .await
        .expect("count");
    assert_eq!(rows, 0);
    app.run_operations().await;
    let r = app.get("/v1/clusters/brief", &As::member()).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
}
