//! Differences from Magnum 23 that clients and suites from outside the project found, each
//! asserted with the answer the real Magnum 23 API gave to the same request
//! (`scripts/magnum-api.sh`; the same requests are conformance cases in
//! `tests/conformance/cases.toml`).

use crate::common;

use axum::http::{Method, StatusCode};
use common::{As, Reply};
use serde_json::json;

fn assert_refused(r: &Reply, status: StatusCode, detail: &str) {
    assert_eq!(r.status, status, "{}", r.body);
    assert_eq!(r.detail(), detail, "{}", r.body);
}

fn template(extra: serde_json::Value) -> serde_json::Value {
    let mut t =
        json!({"name": "t", "coe": "kubernetes", "image_id": "img", "cluster_distro": "ubuntu"});
    for (k, v) in extra.as_object().expect("object") {
        t[k] = v.clone();
    }
    t
}

#[tokio::test]
async fn dns_nameserver_must_be_one_address_or_a_comma_separated_list() {
    let app = common::spawn_app().await;
    for dns in ["1.1.2", "", "8.8.8.8, 1.1", "a.b.c.d"] {
        let r = app
            .post(
                "/v1/clustertemplates",
                &As::member(),
                template(json!({"dns_nameserver": dns})),
            )
            .await;
        assert_refused(
            &r,
            StatusCode::BAD_REQUEST,
            &format!(
                "Expected a single dns address or comma separated dns list, but received {dns}."
            ),
        );
    }
    let r = app
        .post(
            "/v1/clustertemplates",
            &As::member(),
            template(json!({"dns_nameserver": "8.8.8.8, 1.1.1.1"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["dns_nameserver"], "8.8.8.8, 1.1.1.1");
}

#[tokio::test]
async fn devicemapper_needs_a_docker_volume_of_three_gigabytes() {
    let app = common::spawn_app().await;
    for (size, shown) in [(json!(1), "1"), (serde_json::Value::Null, "None")] {
        let mut extra = json!({"docker_storage_driver": "devicemapper"});
        if !size.is_null() {
            extra["docker_volume_size"] = size;
        }
        let r = app
            .post("/v1/clustertemplates", &As::member(), template(extra))
            .await;
        assert_refused(
            &r,
            StatusCode::BAD_REQUEST,
            &format!("docker volume size {shown} GB is not valid, expecting minimum value 3GB for devicemapper storage driver."),
        );
    }
    let r = app
        .post(
            "/v1/clustertemplates",
            &As::member(),
            template(json!({"name": "dm", "docker_storage_driver": "devicemapper", "docker_volume_size": 3})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    // A cluster's own volume size counts first.
    let r = app
        .post(
            "/v1/clusters",
            &As::member(),
            json!({"name": "c", "cluster_template_id": "dm", "docker_volume_size": 2}),
        )
        .await;
    assert_refused(
        &r,
        StatusCode::BAD_REQUEST,
        "docker volume size 2 GB is not valid, expecting minimum value 3GB for devicemapper storage driver.",
    );
}

#[tokio::test]
async fn network_drivers_beyond_kubernetes_allowed_network_drivers_are_refused() {
    let app = common::spawn_app().await;
    let r = app
        .post(
            "/v1/clustertemplates",
            &As::member(),
            template(json!({"network_driver": "cilium"})),
        )
        .await;
    assert_refused(
        &r,
        StatusCode::BAD_REQUEST,
        "Network driver type cilium is not allowed, expecting a flannel/calico/unspecified network driver. ",
    );
    let r = app
        .post(
            "/v1/clustertemplates",
            &As::member(),
            template(json!({"network_driver": "bogus"})),
        )
        .await;
    assert_refused(
        &r,
        StatusCode::BAD_REQUEST,
        "Network driver type bogus is not supported, expecting a flannel/calico/cilium/unspecified network driver.",
    );
    let mut config = magnum_rs::config::Config::default();
    config.cluster_template.kubernetes_allowed_network_drivers = vec!["all".into()];
    let app = common::spawn_app_with(config, None).await;
    let r = app
        .post(
            "/v1/clustertemplates",
            &As::member(),
            template(json!({"network_driver": "cilium"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
}

#[tokio::test]
async fn quotas_are_updated_with_the_ids_in_the_body() {
    let app = common::spawn_app().await;
    let r = app
        .patch(
            "/v1/quotas",
            &As::admin(),
            json!({"project_id": common::OTHER_PROJECT, "resource": "Cluster", "hard_limit": 20}),
        )
        .await;
    assert_refused(
        &r,
        StatusCode::NOT_FOUND,
        &format!(
            "Quota could not be found: project_id {} resource Cluster.",
            common::OTHER_PROJECT
        ),
    );
    let r = app
        .post(
            "/v1/quotas",
            &As::admin(),
            json!({"project_id": common::OTHER_PROJECT, "resource": "Cluster", "hard_limit": 5}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let r = app
        .patch(
            "/v1/quotas",
            &As::admin(),
            json!({"project_id": common::OTHER_PROJECT, "resource": "Cluster", "hard_limit": 20}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(r.body["hard_limit"], 20);
    let r = app
        .patch(
            &format!("/v1/quotas/{}", common::OTHER_PROJECT),
            &As::admin(),
            json!({"resource": "Cluster", "hard_limit": 7}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(r.body["hard_limit"], 7);
    let r = app
        .patch("/v1/quotas", &As::admin(), json!({"hard_limit": 7}))
        .await;
    assert_refused(
        &r,
        StatusCode::BAD_REQUEST,
        "Missing argument: \"project_id\"",
    );
}

#[tokio::test]
async fn creating_a_master_nodegroup_is_refused_before_any_autoscaling_rule() {
    let app = common::spawn_app().await;
    let f = app.standard_fixture().await;
    let r = app
        .post(
            &format!("/v1/clusters/{}/nodegroups", f.k8s),
            &As::member(),
            json!({"name": "m2", "role": "master", "min_node_count": 1}),
        )
        .await;
    assert_refused(
        &r,
        StatusCode::BAD_REQUEST,
        "Creating master nodegroups is currently not supported.",
    );
}

#[tokio::test]
async fn patch_errors_quote_each_operation_in_magnums_key_order() {
    let app = common::spawn_app().await;
    let f = app.standard_fixture().await;
    let r = app
        .send(
            Method::PATCH,
            &format!("/v1/clusters/{}", f.k8s),
            &As::member(),
            Some(common::LATEST),
            Some(r#"[{"op": "remove", "path": "/labels/nothere"}]"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert!(
        r.detail()
            .starts_with("Couldn't apply patch '[{'path': '/labels/nothere', 'op': 'remove'}]'."),
        "{}",
        r.detail()
    );
}

#[tokio::test]
async fn a_patch_value_that_is_no_python_literal_gets_pythons_reason() {
    let app = common::spawn_app().await;
    let f = app.standard_fixture().await;
    let r = app
        .send(
            Method::PATCH,
            &format!("/v1/clusters/{}", f.k8s),
            &As::member(),
            Some(common::LATEST),
            Some(r#"[{"op": "replace", "path": "/labels", "value": "{'a': "}]"#),
        )
        .await;
    assert_refused(
        &r,
        StatusCode::BAD_REQUEST,
        r#"Couldn't apply patch '[{'path': '/labels', 'op': 'replace', 'value': "{'a': "}]'. Reason: '{' was never closed (<unknown>, line 1)"#,
    );
}

#[tokio::test]
async fn template_and_nodegroup_patch_answers_carry_updated_at_from_before_the_update() {
    let app = common::spawn_app().await;
    let f = app.standard_fixture().await;
    let before = app.get("/v1/clustertemplates/capi", &As::member()).await;
    let r = app
        .patch(
            "/v1/clustertemplates/capi",
            &As::member(),
            json!([{"op": "replace", "path": "/tags", "value": "x"}]),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["tags"], "x");
    assert_eq!(r.body["updated_at"], before.body["updated_at"]);
    let after = app.get("/v1/clustertemplates/capi", &As::member()).await;
    assert_ne!(after.body["updated_at"], before.body["updated_at"]);

    let path = format!("/v1/clusters/{}/nodegroups/default-worker", f.k8s);
    let before = app.get(&path, &As::member()).await;
    let r = app
        .patch(
            &path,
            &As::member(),
            json!([{"op": "replace", "path": "/max_node_count", "value": 9}]),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(r.body["max_node_count"], 9);
    assert_eq!(r.body["updated_at"], before.body["updated_at"]);
}

#[tokio::test]
async fn method_not_allowed_lists_the_methods_of_magnums_controller() {
    let app = common::spawn_app().await;
    let f = app.standard_fixture().await;
    for (path, allow) in [
        (
            format!("/v1/clusters/{}", f.k8s),
            "DELETE, GET, PATCH, POST",
        ),
        (
            "/v1/clustertemplates".to_string(),
            "DELETE, GET, PATCH, POST",
        ),
        (
            "/v1/quotas/p/Cluster".to_string(),
            "DELETE, GET, PATCH, POST",
        ),
        ("/v1/stats".to_string(), "GET"),
        ("/v1/certificates".to_string(), "GET, PATCH, POST"),
        ("/v1".to_string(), "GET"),
        (format!("/v1/clusters/{}/actions/resize", f.k8s), ""),
    ] {
        let r = app
            .send(
                Method::PUT,
                &path,
                &As::member(),
                Some(common::LATEST),
                Some("{}"),
            )
            .await;
        assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED, "{path}");
        assert_eq!(
            r.headers.get("allow").and_then(|v| v.to_str().ok()),
            Some(allow),
            "{path}"
        );
    }
}

#[tokio::test]
async fn an_explicit_null_create_timeout_is_stored_as_null() {
    let app = common::spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    let r = app
        .post(
            "/v1/clusters",
            &As::member(),
            json!({"name": "n", "cluster_template_id": "capi", "create_timeout": null}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let shown = app.get("/v1/clusters/n", &As::member()).await;
    assert_eq!(shown.body["create_timeout"], serde_json::Value::Null);
    let r = app
        .post(
            "/v1/clusters",
            &As::member(),
            json!({"name": "d", "cluster_template_id": "capi"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let shown = app.get("/v1/clusters/d", &As::member()).await;
    assert_eq!(shown.body["create_timeout"], 60);
}

#[tokio::test]
async fn credential_rotation_is_gated_at_1_12_and_refused_by_drivers_without_credentials() {
    let app = common::spawn_app().await;
    let f = app.standard_fixture().await;
    let path = format!("/v1/credentials/{}", f.k8s);
    let r = app
        .send(
            Method::PATCH,
            &path,
            &As::member(),
            Some("container-infra 1.11"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_ACCEPTABLE, "{}", r.body);
    let r = app
        .send(
            Method::PATCH,
            &path,
            &As::reader(),
            Some(common::LATEST),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    let r = app
        .send(
            Method::PATCH,
            &path,
            &As::member(),
            Some(common::LATEST),
            None,
        )
        .await;
    assert_refused(
        &r,
        StatusCode::BAD_REQUEST,
        "Credential rotation is not supported by driver.",
    );
    let r = app
        .send(
            Method::PATCH,
            "/v1/credentials/nothere",
            &As::member(),
            Some(common::LATEST),
            None,
        )
        .await;
    assert_refused(
        &r,
        StatusCode::NOT_FOUND,
        "Cluster nothere could not be found.",
    );
}

#[tokio::test]
async fn credentials_patch_without_a_cluster_is_gated_at_1_12_then_misses_the_cluster_ident() {
    let app = common::spawn_app().await;
    let r = app
        .send(
            Method::PATCH,
            "/v1/credentials",
            &As::member(),
            Some("container-infra 1.11"),
            None,
        )
        .await;
    assert_refused(
        &r,
        StatusCode::NOT_ACCEPTABLE,
        "Version 1.11 was requested but the requested API patch is not supported for this version.",
    );
    let r = app
        .send(
            Method::PATCH,
            "/v1/credentials",
            &As::member(),
            Some(common::LATEST),
            None,
        )
        .await;
    common::assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Missing argument: \"cluster_ident\"",
    );
}

#[tokio::test]
async fn coe_version_is_the_templates_kube_tag_once_created_without_a_management_cluster() {
    let app = common::spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    let uuid = app.cluster("v", "capi", 1, 1, &As::member()).await;
    let shown = app
        .get(&format!("/v1/clusters/{uuid}"), &As::member())
        .await;
    assert_eq!(shown.body["status"], "CREATE_COMPLETE", "{}", shown.body);
    assert_eq!(shown.body["coe_version"], "v1.30.4", "{}", shown.body);
}
