//! Version discovery, microversion negotiation, routing quirks and the transport basics of
//! Magnum's v1 API (reference §1, §2, §3, §4.1–4.2; oracle blocks 1–3, 19–26, 56–58).

use crate::common;

use axum::body::Body;
use axum::http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::BodyExt as _;
use serde_json::{json, Value};
use tower::ServiceExt as _;

use common::*;

const SVC: &str = "container-infrastructure-management";

/// A request built by hand: only the headers given (no JSON `Accept` unless asked for).
async fn raw(
    app: &TestApp,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, HeaderMap, Value) {
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .header("x-user-id", "u-demo")
        .header("x-project-id", PROJECT)
        .header("x-roles", "reader,member");
    if !headers.iter().any(|(k, _)| *k == "host") {
        req = req.header("host", "localhost");
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = app
        .router
        .clone()
        .oneshot(req.body(Body::empty()).expect("request"))
        .await
        .expect("response");
    let status = resp.status();
    let headers = resp.headers().clone();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).expect("JSON body")
    };
    (status, headers, body)
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// The four headers `v1.Controller._route` sets, with the resolved version.
fn assert_version_headers(h: &HeaderMap, version: &str) {
    assert_eq!(
        header(h, "openstack-api-minimum-version"),
        Some(format!("{SVC} 1.1").as_str())
    );
    assert_eq!(
        header(h, "openstack-api-maximum-version"),
        Some(format!("{SVC} 1.14").as_str())
    );
    assert_eq!(
        header(h, "openstack-api-version"),
        Some(format!("{SVC} {version}").as_str())
    );
    assert_eq!(header(h, "vary"), Some("OpenStack-API-Version"));
}

fn assert_no_version_headers(h: &HeaderMap) {
    for name in [
        "openstack-api-minimum-version",
        "openstack-api-maximum-version",
        "openstack-api-version",
        "vary",
    ] {
        assert!(h.get(name).is_none(), "unexpected header {name}: {h:?}");
    }
}

fn assert_request_id(h: &HeaderMap) {
    let id = header(h, "x-openstack-request-id").expect("x-openstack-request-id");
    let uuid = id.strip_prefix("req-").expect("req- prefix");
    assert!(uuid::Uuid::parse_str(uuid).is_ok(), "not req-<uuid>: {id}");
}

/// A pecan/webob error body (`code` ""; title/detail blank without a JSON Accept).
fn webob(status: u16, title: &str, detail: &str) -> Value {
    json!({"errors": [{
        "request_id": "", "code": "", "status": status, "title": title, "detail": detail, "links": [],
    }]})
}

fn microversion_406(description: Option<&str>) -> Value {
    let mut e = json!({
        "code": "magnum.microversion-unsupported",
        "title": "Requested microversion is unsupported",
        "links": [{"rel": "help", "href": "http://docs.openstack.org/api-guide/compute/microversions.html"}],
        "max_version": "1.14",
        "min_version": "1.1",
    });
    if let Some(d) = description {
        e["description"] = d.into();
    }
    json!({ "errors": [e] })
}

#[tokio::test]
async fn root_lists_v1_with_version_range_and_no_version_headers() {
    let app = spawn_app().await;
    let r = app.send(Method::GET, "/", &As::member(), None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        r.body,
        json!({
            "name": "OpenStack Magnum API",
            "description": "Magnum is an OpenStack project which aims to provide container cluster management.",
            "versions": [{
                "id": "v1", "status": "CURRENT", "min_version": "1.1", "max_version": "1.14",
                "links": [{"href": "http://localhost/v1/", "rel": "self"}],
            }],
        })
    );
    assert_eq!(header(&r.headers, "content-type"), Some("application/json"));
    assert_no_version_headers(&r.headers);
    assert_request_id(&r.headers);
}

#[tokio::test]
async fn root_ignores_even_a_malformed_version_header() {
    // Version negotiation belongs to the v1 controller only.
    let app = spawn_app().await;
    let r = app
        .send(
            Method::GET,
            "/",
            &As::member(),
            Some("container-infra 1.x"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["versions"][0]["id"], "v1");
    assert_no_version_headers(&r.headers);
}

fn v1_index() -> Value {
    let pair = |res: &str| {
        json!([
            {"href": format!("http://localhost/v1/{res}/"), "rel": "self"},
            {"href": format!("http://localhost/{res}/"), "rel": "bookmark"},
        ])
    };
    json!({
        "id": "v1",
        "media_types": [{"base": "application/json", "type": "application/vnd.openstack.magnum.v1+json"}],
        "links": [
            {"href": "http://localhost/v1/", "rel": "self"},
            {"href": "http://docs.openstack.org/developer/magnum/dev/api-spec-v1.html", "rel": "describedby", "type": "text/html"},
        ],
        "clustertemplates": pair("clustertemplates"),
        "clusters": pair("clusters"),
        "quotas": pair("quotas"),
        "certificates": pair("certificates"),
        "mservices": pair("mservices"),
        "stats": pair("stats"),
        "federations": pair("federations"),
        "nodegroups": [
            {"href": "http://localhost/v1/clusters/{cluster_id}/nodegroups", "rel": "self"},
            {"href": "http://localhost/clusters/{cluster_id}/nodegroups", "rel": "bookmark"},
        ],
        "credentials": pair("credentials"),
    })
}

#[tokio::test]
async fn v1_index_lists_resources_with_version_headers_at_1_1() {
    let app = spawn_app().await;
    let r = app
        .send(Method::GET, "/v1", &As::member(), None, None)
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body, v1_index());
    assert_version_headers(&r.headers, "1.1");
    assert_request_id(&r.headers);
}

#[tokio::test]
async fn v1_index_with_trailing_slash_is_the_same_document() {
    let app = spawn_app().await;
    let r = app
        .send(Method::GET, "/v1/", &As::member(), None, None)
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body, v1_index());
    assert_version_headers(&r.headers, "1.1");
}

#[tokio::test]
async fn absent_version_header_resolves_to_1_1() {
    let app = spawn_app().await;
    let r = app
        .send(Method::GET, "/v1/clusters", &As::member(), None, None)
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body, json!({"clusters": []}));
    assert_version_headers(&r.headers, "1.1");
}

#[tokio::test]
async fn latest_resolves_to_1_14_whatever_its_case() {
    let app = spawn_app().await;
    for v in [
        "container-infra latest",
        "container-infra LATEST",
        "container-infra Latest",
    ] {
        let r = app
            .send(Method::GET, "/v1/clusters", &As::member(), Some(v), None)
            .await;
        assert_eq!(r.status, StatusCode::OK, "{v}");
        assert_version_headers(&r.headers, "1.14");
    }
}

#[tokio::test]
async fn each_service_alias_is_accepted_and_answered_as_container_infrastructure_management() {
    let app = spawn_app().await;
    for (alias, v) in [
        ("container-infrastructure-management", "1.9"),
        ("container-infrastructure", "1.12"),
        ("container-infra", "1.13"),
    ] {
        let r = app
            .send(
                Method::GET,
                "/v1/clusters",
                &As::member(),
                Some(&format!("{alias} {v}")),
                None,
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{alias}");
        assert_version_headers(&r.headers, v);
    }
}

#[tokio::test]
async fn leading_zeros_and_extra_whitespace_parse_like_python_int() {
    let app = spawn_app().await;
    for v in ["container-infra 1.09", "  container-infra   1.9  "] {
        let r = app
            .send(Method::GET, "/v1/clusters", &As::member(), Some(v), None)
            .await;
        assert_eq!(r.status, StatusCode::OK, "{v}");
        assert_version_headers(&r.headers, "1.9");
    }
}

#[tokio::test]
async fn compute_latest_is_accepted_because_latest_skips_the_service_check() {
    let app = spawn_app().await;
    let r = app
        .send(
            Method::GET,
            "/v1/clusters",
            &As::member(),
            Some("compute latest"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_version_headers(&r.headers, "1.14");
}

#[tokio::test]
async fn malformed_version_value_is_406_invalid_value_without_version_headers() {
    let app = spawn_app().await;
    for v in [
        "container-infra 1.x",
        "container-infra 1.2.3",
        "container-infra 1",
        "container-infra x",
    ] {
        let r = app
            .send(Method::GET, "/v1/clusters", &As::member(), Some(v), None)
            .await;
        assert_eq!(r.status, StatusCode::NOT_ACCEPTABLE, "{v}");
        assert_eq!(
            r.body,
            webob(
                406,
                "Not Acceptable",
                "Invalid value for OpenStack-API-Version header"
            ),
            "{v}"
        );
        assert_no_version_headers(&r.headers);
        assert_request_id(&r.headers);
    }
}

#[tokio::test]
async fn unknown_service_or_token_count_is_406_invalid_service_type() {
    let app = spawn_app().await;
    // The service match is exact and case-sensitive; anything but two tokens is refused
    // as a service-type problem too.
    for v in [
        "foo 1.2",
        "Container-Infra 1.2",
        "container-infra",
        "container-infra 1.2 extra",
        "",
    ] {
        let r = app
            .send(Method::GET, "/v1/clusters", &As::member(), Some(v), None)
            .await;
        assert_eq!(r.status, StatusCode::NOT_ACCEPTABLE, "{v:?}");
        assert_eq!(
            r.body,
            webob(
                406,
                "Not Acceptable",
                "Invalid service type for OpenStack-API-Version header"
            ),
            "{v:?}"
        );
        assert_no_version_headers(&r.headers);
    }
}

#[tokio::test]
async fn malformed_version_without_json_accept_blanks_title_and_detail() {
    let app = spawn_app().await;
    for v in ["container-infra 1.x", "foo 1.2"] {
        let (status, h, body) = raw(
            &app,
            Method::GET,
            "/v1/clusters",
            &[("accept", "*/*"), ("openstack-api-version", v)],
        )
        .await;
        assert_eq!(status, StatusCode::NOT_ACCEPTABLE);
        assert_eq!(body, webob(406, "", ""), "{v}");
        assert_eq!(header(&h, "content-type"), Some("application/json"));
        assert_no_version_headers(&h);
        assert_request_id(&h);
    }
    // No Accept header at all behaves the same.
    let (status, _, body) = raw(
        &app,
        Method::GET,
        "/v1/clusters",
        &[("openstack-api-version", "container-infra 1.x")],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_ACCEPTABLE);
    assert_eq!(body, webob(406, "", ""));
}

#[tokio::test]
async fn out_of_range_minor_is_406_microversion_unsupported_echoing_the_requested_version() {
    let app = spawn_app().await;
    let r = app
        .send(
            Method::GET,
            "/v1/clusters",
            &As::member(),
            Some("container-infra 1.99"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_ACCEPTABLE);
    assert_eq!(
        r.body,
        microversion_406(Some(
            "Version 1.99 was requested but the minor version is not supported by this service. \
             The supported version range is: [container-infrastructure-management 1.1, \
             container-infrastructure-management 1.14]."
        ))
    );
    assert_version_headers(&r.headers, "1.99");
    assert_request_id(&r.headers);
}

#[tokio::test]
async fn below_minimum_1_0_is_406_microversion_unsupported() {
    let app = spawn_app().await;
    let r = app
        .send(
            Method::GET,
            "/v1/clusters",
            &As::member(),
            Some("container-infra 1.0"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_ACCEPTABLE);
    assert_eq!(
        r.body,
        microversion_406(Some(
            "Version 1.0 was requested but the minor version is not supported by this service. \
             The supported version range is: [container-infrastructure-management 1.1, \
             container-infrastructure-management 1.14]."
        ))
    );
    assert_version_headers(&r.headers, "1.0");
}

#[tokio::test]
async fn out_of_range_without_json_accept_omits_description() {
    let app = spawn_app().await;
    let (status, h, body) = raw(
        &app,
        Method::GET,
        "/v1/clusters",
        &[
            ("accept", "*/*"),
            ("openstack-api-version", "container-infra 1.99"),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_ACCEPTABLE);
    assert_eq!(body, microversion_406(None));
    assert_version_headers(&h, "1.99");
}

#[tokio::test]
async fn major_2_is_406_mutually_exclusive_versions() {
    let app = spawn_app().await;
    let r = app
        .send(
            Method::GET,
            "/v1/clusters",
            &As::member(),
            Some("container-infra 2.0"),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_ACCEPTABLE);
    // Sic: no space after "service." in Magnum's text.
    assert_eq!(
        r.body,
        microversion_406(Some(
            "Mutually exclusive versions requested. Version 2.0 requested but not supported by \
             this service.The supported version range is: [container-infrastructure-management \
             1.1, container-infrastructure-management 1.14]."
        ))
    );
    assert_version_headers(&r.headers, "2.0");
}

#[tokio::test]
async fn unknown_path_is_404_webob_without_version_headers() {
    let app = spawn_app().await;
    let r = app.get("/v1/nothere", &As::member()).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.body, webob(404, "Not Found", ""));
    assert_no_version_headers(&r.headers);
    assert_request_id(&r.headers);

    let (status, h, body) = raw(
        &app,
        Method::GET,
        "/v1/nothere",
        &[("accept", "*/*"), ("openstack-api-version", LATEST)],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body, webob(404, "", ""));
    assert_no_version_headers(&h);
    assert_request_id(&h);
}

#[tokio::test]
async fn unknown_path_without_v1_prefix_is_404_too() {
    let app = spawn_app().await;
    let r = app.get("/nothere", &As::member()).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.body, webob(404, "Not Found", ""));
    assert_no_version_headers(&r.headers);
}

#[tokio::test]
async fn put_on_a_cluster_is_405_webob_without_version_headers() {
    let app = spawn_app().await;
    let r = app
        .send(
            Method::PUT,
            "/v1/clusters/k8s",
            &As::member(),
            Some(LATEST),
            Some(r#"{"name":"x"}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(r.body, webob(405, "Method Not Allowed", ""));
    assert_no_version_headers(&r.headers);
    assert_request_id(&r.headers);

    let (status, h, body) = raw(
        &app,
        Method::PUT,
        "/v1/clusters/k8s",
        &[("accept", "*/*"), ("openstack-api-version", LATEST)],
    )
    .await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(body, webob(405, "", ""));
    assert_no_version_headers(&h);
}

#[tokio::test]
async fn delete_on_the_cluster_collection_is_400_missing_argument_with_version_headers() {
    let app = spawn_app().await;
    let r = app.delete("/v1/clusters", &As::member()).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        r.body,
        json!({"errors": [{
            "request_id": "", "code": "client", "status": 400,
            "title": "Missing argument: \"cluster_ident\"",
            "detail": "Missing argument: \"cluster_ident\"", "links": [],
        }]})
    );
    assert_version_headers(&r.headers, "1.14");
}

#[tokio::test]
async fn controller_errors_carry_version_headers_and_the_same_body_without_json_accept() {
    let app = spawn_app().await;
    let expected = json!({"errors": [{
        "request_id": "", "code": "client", "status": 404,
        "title": "Cluster nothere could not be found",
        "detail": "Cluster nothere could not be found.", "links": [],
    }]});
    let r = app.get("/v1/clusters/nothere", &As::member()).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(r.body, expected);
    assert_version_headers(&r.headers, "1.14");
    assert_eq!(header(&r.headers, "content-type"), Some("application/json"));

    let (status, h, body) = raw(
        &app,
        Method::GET,
        "/v1/clusters/nothere",
        &[
            ("accept", "*/*"),
            ("openstack-api-version", "container-infra 1.9"),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body, expected);
    assert_version_headers(&h, "1.9");
}

#[tokio::test]
async fn every_response_carries_a_fresh_request_id() {
    let app = spawn_app().await;
    let mut seen = std::collections::HashSet::new();
    let cases: Vec<(Method, &str, Option<&str>, StatusCode)> = vec![
        (Method::GET, "/", None, StatusCode::OK),
        (Method::GET, "/v1", None, StatusCode::OK),
        (Method::GET, "/v1/clusters", Some(LATEST), StatusCode::OK),
        (
            Method::GET,
            "/v1/clusters?limit=0",
            Some(LATEST),
            StatusCode::BAD_REQUEST,
        ),
        (
            Method::GET,
            "/v1/clusters/nothere",
            Some(LATEST),
            StatusCode::NOT_FOUND,
        ),
        (
            Method::GET,
            "/v1/nothere",
            Some(LATEST),
            StatusCode::NOT_FOUND,
        ),
        (
            Method::PUT,
            "/v1/clusters/x",
            Some(LATEST),
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        (
            Method::GET,
            "/v1/clusters",
            Some("container-infra 1.x"),
            StatusCode::NOT_ACCEPTABLE,
        ),
        (
            Method::GET,
            "/v1/clusters",
            Some("container-infra 1.99"),
            StatusCode::NOT_ACCEPTABLE,
        ),
        (
            Method::GET,
            "/v1/clusters/x/nodegroups",
            Some("container-infra 1.8"),
            StatusCode::NOT_ACCEPTABLE,
        ),
    ];
    for (m, path, v, expected) in cases {
        let r = app.send(m, path, &As::member(), v, None).await;
        assert_eq!(r.status, expected, "{path} {v:?}");
        assert_request_id(&r.headers);
        let id = header(&r.headers, "x-openstack-request-id")
            .unwrap_or_default()
            .to_string();
        assert!(seen.insert(id), "request id reused");
    }
}

#[tokio::test]
async fn clusters_without_v1_prefix_is_routed_to_v1() {
    let app = spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    app.cluster("k8s", "capi", 1, 2, &As::member()).await;
    let prefixed = app.get("/v1/clusters", &As::member()).await;
    let bare = app.get("/clusters", &As::member()).await;
    assert_eq!(bare.status, StatusCode::OK);
    assert_eq!(bare.body, prefixed.body);
    assert_eq!(bare.body["clusters"][0]["name"], "k8s");
    assert_version_headers(&bare.headers, "1.14");

    let one = app.get("/clusters/k8s", &As::member()).await;
    assert_eq!(one.status, StatusCode::OK);
    assert_eq!(one.body["name"], "k8s");
    let templates = app.get("/clustertemplates", &As::member()).await;
    assert_eq!(templates.status, StatusCode::OK);
    assert_eq!(templates.body["clustertemplates"][0]["name"], "capi");
}

#[tokio::test]
async fn trailing_slash_on_collections_and_items_is_accepted() {
    let app = spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    let uuid = app.cluster("k8s", "capi", 1, 2, &As::member()).await;
    app.cluster("k8s-b", "capi", 1, 1, &As::member()).await;
    let r = app.get("/v1/clusters/?limit=1", &As::member()).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["clusters"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        r.body["next"],
        format!("http://localhost/v1/clusters?sort_key=id&sort_dir=asc&limit=1&marker={uuid}")
    );
    let r = app.get("/v1/clusters/k8s/", &As::member()).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["uuid"], uuid.as_str());
    // The CLI creates nodegroups through the collection with a trailing slash.
    let r = app
        .post(
            "/v1/clusters/k8s/nodegroups/",
            &As::member(),
            json!({"name": "ng-a"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let r = app.get("/clusters/k8s/nodegroups/", &As::member()).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["nodegroups"].as_array().map(Vec::len), Some(3));
}

#[tokio::test]
async fn links_follow_the_host_header() {
    let app = spawn_app().await;
    let (status, _, body) = raw(
        &app,
        Method::GET,
        "/",
        &[
            ("accept", "application/json"),
            ("host", "magnum.example:9511"),
        ],
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body["versions"][0]["links"][0]["href"],
        "http://magnum.example:9511/v1/"
    );
}
