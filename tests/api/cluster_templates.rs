//! `/v1/clustertemplates` as Magnum's `ClusterTemplatesController` answers it (reference
//! §4.8, §7; oracle blocks 11–12).

use crate::common;

use std::collections::BTreeSet;

use axum::http::StatusCode;
use serde_json::{json, Value};

use common::*;

const FIELDS: &[&str] = &[
    "uuid",
    "name",
    "coe",
    "image_id",
    "flavor_id",
    "master_flavor_id",
    "dns_nameserver",
    "keypair_id",
    "external_network_id",
    "fixed_network",
    "fixed_subnet",
    "network_driver",
    "apiserver_port",
    "docker_volume_size",
    "cluster_distro",
    "links",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "volume_driver",
    "registry_enabled",
    "labels",
    "tls_disabled",
    "public",
    "server_type",
    "insecure_registry",
    "docker_storage_driver",
    "master_lb_enabled",
    "floating_ip_enabled",
    "project_id",
    "user_id",
    "hidden",
    "tags",
    "driver",
    "created_at",
    "updated_at",
];

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

fn full_keys() -> BTreeSet<String> {
    FIELDS.iter().map(|s| s.to_string()).collect()
}

fn names(body: &Value) -> Vec<String> {
    body["clustertemplates"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| c["name"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn minimal(name: &str) -> Value {
    json!({"name": name, "coe": "kubernetes", "image_id": "ubuntu-2204-kube", "cluster_distro": "ubuntu"})
}

// --- create -------------------------------------------------------------------------------

#[tokio::test]
async fn template_create_is_201_with_location_and_the_full_object() {
    let app = spawn_app().await;
    let r = app
        .post("/v1/clustertemplates", &As::member(), minimal("t1"))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(keys(&r.body), full_keys());
    let uuid = r.body["uuid"].as_str().unwrap_or_default().to_string();
    assert!(uuid::Uuid::parse_str(&uuid).is_ok());
    assert_eq!(
        r.headers.get("location").and_then(|v| v.to_str().ok()),
        Some(format!("http://localhost/v1/clustertemplates/{uuid}").as_str())
    );
    let b = &r.body;
    assert_eq!(b["name"], "t1");
    assert_eq!(b["coe"], "kubernetes");
    assert_eq!(b["image_id"], "ubuntu-2204-kube");
    assert_eq!(b["cluster_distro"], "ubuntu");
    assert_eq!(b["project_id"], PROJECT);
    assert_eq!(b["user_id"], "u-demo");
    // WSME defaults and the explicit empty labels.
    assert_eq!(b["labels"], json!({}));
    assert_eq!(b["registry_enabled"], false);
    assert_eq!(b["tls_disabled"], false);
    assert_eq!(b["public"], false);
    assert_eq!(b["hidden"], false);
    assert_eq!(b["server_type"], "vm");
    assert_eq!(b["master_lb_enabled"], false);
    assert_eq!(b["floating_ip_enabled"], true);
    assert_eq!(b["keypair_id"], Value::Null);
    assert_eq!(
        b["network_driver"], "flannel",
        "the kubernetes default is stored"
    );
    assert_eq!(b["tags"], Value::Null);
    assert_eq!(b["driver"], "cluster-api", "resolved from the triple");
    assert!(b["created_at"].is_string());
    assert_eq!(b["updated_at"], Value::Null);
    assert_eq!(
        b["links"],
        json!([
            {"href": format!("http://localhost/v1/clustertemplates/{uuid}"), "rel": "self"},
            {"href": format!("http://localhost/clustertemplates/{uuid}"), "rel": "bookmark"},
        ])
    );
    let shown = app
        .get(&format!("/v1/clustertemplates/{uuid}"), &As::member())
        .await;
    assert_eq!(shown.body, r.body);
}

#[tokio::test]
async fn template_create_honours_a_client_uuid() {
    let app = spawn_app().await;
    let mut body = minimal("t1");
    body["uuid"] = json!("0b3c7f2e-6a51-4d7e-9f0a-1c2d3e4f5a6b");
    let r = app.post("/v1/clustertemplates", &As::member(), body).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["uuid"], "0b3c7f2e-6a51-4d7e-9f0a-1c2d3e4f5a6b");
    let r = app
        .get(
            "/v1/clustertemplates/0b3c7f2e-6a51-4d7e-9f0a-1c2d3e4f5a6b",
            &As::member(),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["name"], "t1");
}

#[tokio::test]
async fn template_create_with_a_malformed_uuid_is_400_invalid_uuid() {
    let app = spawn_app().await;
    let mut body = minimal("t1");
    body["uuid"] = json!("notauuid");
    let r = app.post("/v1/clustertemplates", &As::member(), body).await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Expected a uuid but received notauuid.",
    );
}

#[tokio::test]
async fn template_without_a_name_gets_a_generated_one() {
    let app = spawn_app().await;
    let r = app
        .post(
            "/v1/clustertemplates",
            &As::member(),
            json!({"coe": "kubernetes", "image_id": "img", "cluster_distro": "ubuntu"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let name = r.body["name"].as_str().unwrap_or_default();
    assert!(name.ends_with("-template"), "{name}");
}

#[tokio::test]
async fn template_body_validation_texts() {
    let app = spawn_app().await;
    let r = app
        .post(
            "/v1/clustertemplates",
            &As::member(),
            json!({"name": "t", "coe": "kubernetes"}),
        )
        .await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Invalid input for field/attribute image_id. Value: 'None'. Mandatory field missing.",
    );
    // WSME ignores `mandatory` on an Enum: a missing coe meets the COE validator.
    let r = app
        .post(
            "/v1/clustertemplates",
            &As::member(),
            json!({"name": "t", "image_id": "img"}),
        )
        .await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Requested COE type Unset is not supported.",
    );
    // server_type is a WSME Enum too: checked with the body, before the COE validator.
    let mut body = minimal("t");
    body["server_type"] = json!("pc");
    let r = app.post("/v1/clustertemplates", &As::member(), body).await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Invalid input for field/attribute server_type. Value: 'pc'. Value should be one of: vm, bm",
    );
    let mut body = minimal("t");
    body["coe"] = json!("swarm");
    let r = app.post("/v1/clustertemplates", &As::member(), body).await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Invalid input for field/attribute coe. Value: 'swarm'. Value should be one of: kubernetes",
    );
    let mut body = minimal("t");
    body["apiserver_port"] = json!(80);
    let r = app.post("/v1/clustertemplates", &As::member(), body).await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Invalid input for field/attribute apiserver_port. Value: '80'. Value should be greater or equal to 1024",
    );
    let mut body = minimal("t");
    body["network_driver"] = json!("weave");
    let r = app.post("/v1/clustertemplates", &As::member(), body).await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Network driver type weave is not supported, expecting a flannel/calico/cilium/unspecified network driver.",
    );
    let mut body = minimal("t");
    body["volume_driver"] = json!("rexray");
    let r = app.post("/v1/clustertemplates", &As::member(), body).await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Volume driver type rexray is not supported, expecting a cinder/unspecified volume driver.",
    );
    let mut body = minimal("t");
    body["foo"] = json!("bar");
    let r = app.post("/v1/clustertemplates", &As::member(), body).await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Unknown attribute for argument cluster_template: foo",
    );
    let mut body = minimal("t");
    body["project_id"] = json!("p");
    let r = app.post("/v1/clustertemplates", &As::member(), body).await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Invalid input for field/attribute project_id. Value: 'p'. Cannot set read only field.",
    );
    let r = app.get("/v1/clustertemplates", &As::member()).await;
    assert_eq!(r.body, json!({"clustertemplates": []}));
}

#[tokio::test]
async fn unknown_driver_name_is_400_cluster_driver_not_supported() {
    let app = spawn_app().await;
    let mut body = minimal("t");
    body["driver"] = json!("x");
    let r = app.post("/v1/clustertemplates", &As::member(), body).await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Cluster driver (x) not supported.",
    );
}

#[tokio::test]
async fn unknown_distro_is_400_cluster_type_not_supported() {
    let app = spawn_app().await;
    let mut body = minimal("t");
    body["cluster_distro"] = json!("foo");
    let r = app.post("/v1/clustertemplates", &As::member(), body).await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Cluster type (vm, foo, kubernetes) not supported.",
    );
    let mut body = minimal("t");
    body["server_type"] = json!("bm");
    let r = app.post("/v1/clustertemplates", &As::member(), body).await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Cluster type (bm, ubuntu, kubernetes) not supported.",
    );
}

#[tokio::test]
async fn driver_is_resolved_by_name_alias_triple_or_default() {
    let app = spawn_app().await;
    let mut alias = minimal("alias");
    alias["driver"] = json!("k8s_cluster_api_ubuntu");
    let r = app.post("/v1/clustertemplates", &As::member(), alias).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["driver"], "k8s_cluster_api_ubuntu");
    let mut fcos = minimal("fcos");
    fcos["cluster_distro"] = json!("fedora-coreos");
    let r = app.post("/v1/clustertemplates", &As::member(), fcos).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["driver"], "k8s_fedora_coreos_v1");
    // Without Glance a template may carry no distro: the configured default driver.
    let r = app
        .post(
            "/v1/clustertemplates",
            &As::member(),
            json!({"name": "nodistro", "coe": "kubernetes", "image_id": "img"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["driver"], "cluster-api");
    assert_eq!(r.body["cluster_distro"], Value::Null);
}

#[tokio::test]
async fn reader_cannot_create_a_template_403() {
    let app = spawn_app().await;
    let r = app
        .post("/v1/clustertemplates", &As::reader(), minimal("t"))
        .await;
    assert_envelope(
        &r,
        StatusCode::FORBIDDEN,
        "Policy doesn't allow clustertemplate:create to be performed.",
    );
}

#[tokio::test]
async fn public_or_hidden_flag_needs_admin_403() {
    let app = spawn_app().await;
    let text = "Not authorized to set public or hidden flag for cluster template.";
    for flag in ["public", "hidden"] {
        let mut body = minimal("t");
        body[flag] = json!(true);
        let r = app
            .post("/v1/clustertemplates", &As::member(), body.clone())
            .await;
        assert_envelope(&r, StatusCode::FORBIDDEN, text);
        body["name"] = json!(format!("admin-{flag}"));
        let r = app.post("/v1/clustertemplates", &As::admin(), body).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        assert_eq!(r.body[flag], true);
    }
    app.template("mine", "ubuntu", &As::member()).await;
    let r = app
        .patch(
            "/v1/clustertemplates/mine",
            &As::member(),
            json!([{"op": "replace", "path": "/public", "value": "True"}]),
        )
        .await;
    assert_envelope(&r, StatusCode::FORBIDDEN, text);
    let r = app.get("/v1/clustertemplates/mine", &As::member()).await;
    assert_eq!(r.body["public"], false);
}

/// tempest's publish tests send `"value": true` (a JSON boolean): Magnum's patch type takes
/// it (a Python bool is an int) and the template's own field types judge it.
#[tokio::test]
async fn patch_with_a_json_boolean_publishes_for_admins_only() {
    let app = spawn_app().await;
    app.template("mine", "ubuntu", &As::member()).await;
    let publish = json!([{"path": "/public", "value": true, "op": "replace"}]);
    let r = app
        .patch("/v1/clustertemplates/mine", &As::member(), publish.clone())
        .await;
    assert_envelope(
        &r,
        StatusCode::FORBIDDEN,
        "Not authorized to set public or hidden flag for cluster template.",
    );
    let r = app
        .patch(
            "/v1/clustertemplates/mine",
            &As::member(),
            json!([{"path": "/name", "value": true, "op": "replace"}]),
        )
        .await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "Invalid input for field/attribute name. Value: 'True'. Value should be string",
    );
    let r = app
        .patch("/v1/clustertemplates/mine", &As::admin(), publish)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["public"], true);
    let r = app.get("/v1/clustertemplates/mine", &As::member()).await;
    assert_eq!(r.body["public"], true);
    assert_eq!(r.body["name"], "mine");
}

// --- read ---------------------------------------------------------------------------------

#[tokio::test]
async fn template_list_and_detail_return_identical_full_objects() {
    let app = spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    app.template("heat", "fedora-coreos", &As::member()).await;
    let list = app.get("/v1/clustertemplates", &As::member()).await;
    let detail = app.get("/v1/clustertemplates/detail", &As::member()).await;
    assert_eq!(list.status, StatusCode::OK);
    assert_eq!(detail.status, StatusCode::OK);
    assert_eq!(list.body, detail.body);
    assert_eq!(
        keys(&list.body),
        BTreeSet::from(["clustertemplates".into()])
    );
    assert_eq!(names(&list.body), vec!["capi", "heat"]);
    for t in list.body["clustertemplates"]
        .as_array()
        .into_iter()
        .flatten()
    {
        assert_eq!(keys(t), full_keys());
        let one = app
            .get(
                &format!(
                    "/v1/clustertemplates/{}",
                    t["uuid"].as_str().unwrap_or_default()
                ),
                &As::member(),
            )
            .await;
        assert_eq!(&one.body, t);
    }
}

#[tokio::test]
async fn template_list_paginates_with_next_links() {
    let app = spawn_app().await;
    let a = app.template("a", "ubuntu", &As::member()).await;
    app.template("b", "ubuntu", &As::member()).await;
    let r = app.get("/v1/clustertemplates?limit=1", &As::member()).await;
    assert_eq!(names(&r.body), vec!["a"]);
    assert_eq!(
        r.body["next"],
        format!(
            "http://localhost/v1/clustertemplates?sort_key=id&sort_dir=asc&limit=1&marker={}",
            a["uuid"].as_str().unwrap_or_default()
        )
    );
    let r = app
        .get(
            &format!(
                "/v1/clustertemplates/detail?limit=5&marker={}",
                a["uuid"].as_str().unwrap_or_default()
            ),
            &As::member(),
        )
        .await;
    assert_eq!(names(&r.body), vec!["b"]);
    assert!(r.body.get("next").is_none());
    let r = app
        .get("/v1/clustertemplates?sort_key=nothere", &As::member())
        .await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        "The sort_key value \"nothere\" is an invalid field for sorting",
    );
}

#[tokio::test]
async fn template_is_shown_by_name_or_uuid_and_missing_is_404() {
    let app = spawn_app().await;
    let t = app.template("capi", "ubuntu", &As::member()).await;
    let by_name = app.get("/v1/clustertemplates/capi", &As::member()).await;
    let by_uuid = app
        .get(
            &format!(
                "/v1/clustertemplates/{}",
                t["uuid"].as_str().unwrap_or_default()
            ),
            &As::member(),
        )
        .await;
    assert_eq!(by_name.status, StatusCode::OK);
    assert_eq!(by_name.body, by_uuid.body);
    assert_eq!(by_name.body, t);
    let r = app.get("/v1/clustertemplates/nope", &As::member()).await;
    assert_envelope(
        &r,
        StatusCode::NOT_FOUND,
        "ClusterTemplate nope could not be found.",
    );
}

#[tokio::test]
async fn ambiguous_template_name_is_409() {
    let app = spawn_app().await;
    app.template("dup", "ubuntu", &As::member()).await;
    app.template("dup", "ubuntu", &As::member()).await;
    let r = app.get("/v1/clustertemplates/dup", &As::member()).await;
    assert_envelope(
        &r,
        StatusCode::CONFLICT,
        "Multiple ClusterTemplates exist with same name. Please use the ClusterTemplate uuid instead.",
    );
}

#[tokio::test]
async fn template_of_another_project_is_404_and_not_listed() {
    let app = spawn_app().await;
    let t = app.template("theirs", "ubuntu", &As::other()).await;
    let uuid = t["uuid"].as_str().unwrap_or_default();
    let r = app
        .get(&format!("/v1/clustertemplates/{uuid}"), &As::member())
        .await;
    assert_envelope(
        &r,
        StatusCode::NOT_FOUND,
        &format!("ClusterTemplate {uuid} could not be found."),
    );
    let r = app.get("/v1/clustertemplates", &As::member()).await;
    assert_eq!(r.body, json!({"clustertemplates": []}));
    let r = app
        .patch(
            &format!("/v1/clustertemplates/{uuid}"),
            &As::member(),
            json!([{"op": "replace", "path": "/name", "value": "mine"}]),
        )
        .await;
    assert_envelope(
        &r,
        StatusCode::NOT_FOUND,
        &format!("ClusterTemplate {uuid} could not be found."),
    );
    let r = app
        .delete(&format!("/v1/clustertemplates/{uuid}"), &As::member())
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let r = app.get("/v1/clustertemplates", &As::admin()).await;
    assert_eq!(names(&r.body), vec!["theirs"]);
}

#[tokio::test]
async fn public_template_is_visible_to_every_project_but_hidden_one_only_to_admins() {
    let app = spawn_app().await;
    let mut public = minimal("shared");
    public["public"] = json!(true);
    let r = app.post("/v1/clustertemplates", &As::admin(), public).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let mut hidden = minimal("secret");
    hidden["public"] = json!(true);
    hidden["hidden"] = json!(true);
    let r = app.post("/v1/clustertemplates", &As::admin(), hidden).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let hidden_uuid = r.body["uuid"].as_str().unwrap_or_default().to_string();

    let r = app.get("/v1/clustertemplates", &As::member()).await;
    assert_eq!(names(&r.body), vec!["shared"]);
    let r = app.get("/v1/clustertemplates/shared", &As::member()).await;
    assert_eq!(r.status, StatusCode::OK);
    let r = app
        .get(
            &format!("/v1/clustertemplates/{hidden_uuid}"),
            &As::member(),
        )
        .await;
    assert_envelope(
        &r,
        StatusCode::NOT_FOUND,
        &format!("ClusterTemplate {hidden_uuid} could not be found."),
    );
    let r = app.get("/v1/clustertemplates", &As::admin()).await;
    assert_eq!(names(&r.body), vec!["shared", "secret"]);
    let r = app
        .get(&format!("/v1/clustertemplates/{hidden_uuid}"), &As::admin())
        .await;
    assert_eq!(r.status, StatusCode::OK);
}

// --- PATCH --------------------------------------------------------------------------------

#[tokio::test]
async fn template_patch_is_200_with_the_full_updated_object() {
    let app = spawn_app().await;
    let t = app.template("capi", "ubuntu", &As::member()).await;
    let r = app
        .patch(
            "/v1/clustertemplates/capi",
            &As::member(),
            json!([
                {"op": "replace", "path": "/name", "value": "renamed"},
                {"op": "replace", "path": "/flavor_id", "value": "m1.xlarge"},
                {"op": "replace", "path": "/labels", "value": "{'kube_tag': 'v1.31.0', 'x': 'y'}"},
                {"op": "remove", "path": "/keypair_id"},
            ]),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(keys(&r.body), full_keys());
    assert_eq!(r.body["uuid"], t["uuid"]);
    assert_eq!(r.body["name"], "renamed");
    assert_eq!(r.body["flavor_id"], "m1.xlarge");
    assert_eq!(r.body["labels"], json!({"kube_tag": "v1.31.0", "x": "y"}));
    assert_eq!(r.body["keypair_id"], Value::Null);
    // As Magnum's answer: the `updated_at` from before the update (null for a new template).
    assert_eq!(r.body["updated_at"], t["updated_at"]);
    let shown = app.get("/v1/clustertemplates/renamed", &As::member()).await;
    assert!(shown.body["updated_at"].is_string());
    let mut answered = r.body.clone();
    answered["updated_at"] = shown.body["updated_at"].clone();
    assert_eq!(shown.body, answered);
}

#[tokio::test]
async fn template_non_removable_attributes_cannot_be_removed() {
    let app = spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    for path in [
        "/network_driver",
        "/external_network_id",
        "/tls_disabled",
        "/public",
        "/server_type",
        "/coe",
        "/registry_enabled",
        "/cluster_distro",
        "/hidden",
        "/image_id",
    ] {
        let r = app
            .patch(
                "/v1/clustertemplates/capi",
                &As::member(),
                json!([{"op": "remove", "path": path}]),
            )
            .await;
        assert_envelope(
            &r,
            StatusCode::BAD_REQUEST,
            &format!("'{path}' is a mandatory attribute and can not be removed"),
        );
    }
    let r = app.get("/v1/clustertemplates/capi", &As::member()).await;
    assert_eq!(r.body["image_id"], "ubuntu-2204-kube");
}

#[tokio::test]
async fn template_internal_attributes_cannot_be_patched() {
    let app = spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    for path in [
        "/uuid",
        "/project_id",
        "/user_id",
        "/created_at",
        "/id",
        "/links",
    ] {
        let r = app
            .patch(
                "/v1/clustertemplates/capi",
                &As::member(),
                json!([{"op": "replace", "path": path, "value": "x"}]),
            )
            .await;
        assert_envelope(
            &r,
            StatusCode::BAD_REQUEST,
            &format!("'{path}' is an internal attribute and can not be updated"),
        );
    }
}

#[tokio::test]
async fn reader_cannot_patch_or_delete_a_template() {
    let app = spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    let r = app
        .patch(
            "/v1/clustertemplates/capi",
            &As::reader(),
            json!([{"op": "replace", "path": "/name", "value": "x"}]),
        )
        .await;
    assert_envelope(
        &r,
        StatusCode::FORBIDDEN,
        "Policy doesn't allow clustertemplate:update to be performed.",
    );
    let r = app.delete("/v1/clustertemplates/capi", &As::reader()).await;
    assert_envelope(
        &r,
        StatusCode::FORBIDDEN,
        "Policy doesn't allow clustertemplate:delete to be performed.",
    );
}

#[tokio::test]
async fn referenced_template_may_only_be_renamed_or_published() {
    let app = spawn_app().await;
    let t = app.template("capi", "ubuntu", &As::member()).await;
    let uuid = t["uuid"].as_str().unwrap_or_default().to_string();
    app.cluster("k8s", "capi", 1, 1, &As::member()).await;
    let text = format!("ClusterTemplate {uuid} is referenced by one or multiple clusters.");
    let r = app
        .patch(
            "/v1/clustertemplates/capi",
            &As::member(),
            json!([{"op": "replace", "path": "/flavor_id", "value": "m1.xlarge"}]),
        )
        .await;
    assert_envelope(&r, StatusCode::BAD_REQUEST, &text);
    let r = app
        .patch(
            "/v1/clustertemplates/capi",
            &As::member(),
            json!([
                {"op": "replace", "path": "/name", "value": "renamed"},
                {"op": "replace", "path": "/tags", "value": "a,b"},
            ]),
        )
        .await;
    assert_envelope(&r, StatusCode::BAD_REQUEST, &text);
    let r = app.get("/v1/clustertemplates/capi", &As::member()).await;
    assert_eq!(r.body["flavor_id"], "m1.medium");
    assert_eq!(r.body["tags"], Value::Null);

    let r = app
        .patch(
            "/v1/clustertemplates/capi",
            &As::member(),
            json!([{"op": "replace", "path": "/name", "value": "renamed"}]),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["name"], "renamed");
    let r = app
        .patch(
            "/v1/clustertemplates/renamed",
            &As::member(),
            json!([{"op": "replace", "path": "/tags", "value": "a,b"}]),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["tags"], "a,b");
    let r = app
        .patch(
            &format!("/v1/clustertemplates/{uuid}"),
            &As::admin(),
            json!([{"op": "replace", "path": "/public", "value": "true"}]),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["public"], true);
}

// --- DELETE -------------------------------------------------------------------------------

#[tokio::test]
async fn template_delete_is_204_and_then_gone() {
    let app = spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    let r = app.delete("/v1/clustertemplates/capi", &As::member()).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert_eq!(r.body, Value::Null);
    let r = app.get("/v1/clustertemplates/capi", &As::member()).await;
    assert_envelope(
        &r,
        StatusCode::NOT_FOUND,
        "ClusterTemplate capi could not be found.",
    );
}

#[tokio::test]
async fn deleting_a_referenced_template_is_400_naming_its_uuid() {
    let app = spawn_app().await;
    let t = app.template("capi", "ubuntu", &As::member()).await;
    let uuid = t["uuid"].as_str().unwrap_or_default().to_string();
    app.cluster("k8s", "capi", 1, 1, &As::member()).await;
    let text = format!("ClusterTemplate {uuid} is referenced by one or multiple clusters.");
    let r = app.delete("/v1/clustertemplates/capi", &As::member()).await;
    assert_envelope(&r, StatusCode::BAD_REQUEST, &text);
    let r = app
        .delete(&format!("/v1/clustertemplates/{uuid}"), &As::member())
        .await;
    assert_envelope(&r, StatusCode::BAD_REQUEST, &text);
    // Once the cluster is gone the template can go.
    let r = app.delete("/v1/clusters/k8s", &As::member()).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    app.run_operations().await;
    let r = app.delete("/v1/clustertemplates/capi", &As::member()).await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.body);
}

/// The uuid and the stored row of the template `name`.
async fn template_row(app: &TestApp, name: &str) -> (String, magnum_rs::model::ClusterTemplate) {
    let uuid = app
        .get(&format!("/v1/clustertemplates/{name}"), &As::member())
        .await
        .body["uuid"]
        .as_str()
        .expect("uuid")
        .to_string();
    let row = app
        .state
        .store
        .template_by_uuid(&uuid)
        .await
        .expect("read")
        .expect("row");
    (uuid, row)
}

/// Two PATCHes of one template that read it before either wrote (their interleaving,
/// played in order at the store): each writes only what it changed, so neither undoes the
/// other's field, as Magnum's `save()` of changed fields.
#[tokio::test]
async fn two_patches_made_from_the_same_read_both_land() {
    let app = spawn_app().await;
    app.template("both", "ubuntu", &As::member()).await;
    let store = &app.state.store;
    let (uuid, before) = template_row(&app, "both").await;
    let renamed = magnum_rs::model::ClusterTemplate {
        name: Some("renamed".into()),
        ..before.clone()
    };
    let relabelled = magnum_rs::model::ClusterTemplate {
        labels: json!({"kube_tag": "v1.31.0"}).as_object().cloned(),
        ..before.clone()
    };
    store
        .patch_template(&before, &renamed, false)
        .await
        .expect("store")
        .expect("renamed");
    store
        .patch_template(&before, &relabelled, false)
        .await
        .expect("store")
        .expect("relabelled");
    let shown = app
        .get(&format!("/v1/clustertemplates/{uuid}"), &As::member())
        .await;
    assert_eq!(shown.body["name"], "renamed", "{}", shown.body);
    assert_eq!(
        shown.body["labels"],
        json!({"kube_tag": "v1.31.0"}),
        "{}",
        shown.body
    );
}

/// A PATCH that only an unused template allows, checked against a cluster created after
/// the handler counted none: refused under the template's lock, nothing written.
#[tokio::test]
async fn a_restricted_patch_is_refused_under_the_lock_when_a_cluster_came_first() {
    let app = spawn_app().await;
    app.template("used", "ubuntu", &As::member()).await;
    let store = &app.state.store;
    let (uuid, before) = template_row(&app, "used").await;
    app.cluster("user", "used", 1, 1, &As::member()).await;
    let changed = magnum_rs::model::ClusterTemplate {
        image_id: Some("another-image".into()),
        ..before.clone()
    };
    let r = store
        .patch_template(&before, &changed, true)
        .await
        .expect("store");
    assert_eq!(r, Err(magnum_rs::store::Refused::TemplateInUse));
    let shown = app
        .get(&format!("/v1/clustertemplates/{uuid}"), &As::member())
        .await;
    assert_eq!(
        shown.body["image_id"],
        json!(before.image_id),
        "{}",
        shown.body
    );
}
