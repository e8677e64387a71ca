//! Property tests over every parser a client can reach, bounded in cases so that they run in
//! CI in seconds: the JSON bodies of creates, updates and actions, JSON-patch documents,
//! Python literals, query strings, microversion headers and policy rules. No input panics,
//! and every refusal through the API is a 4xx in Magnum's envelope (never a 5xx).

use crate::common;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use http_body_util::BodyExt as _;
use proptest::prelude::*;
use serde_json::{json, Map, Value};
use tower::ServiceExt as _;

/// Cases per property: enough to walk the parsers' branches, few enough for CI.
fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 192,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Keys the parsers know (so that random bodies reach deep branches) and a few they do not.
const KEYS: &[&str] = &[
    "name",
    "cluster_template_id",
    "node_count",
    "master_count",
    "docker_volume_size",
    "labels",
    "create_timeout",
    "keypair",
    "flavor_id",
    "master_flavor_id",
    "status",
    "status_reason",
    "health_status",
    "health_status_reason",
    "faults",
    "merge_labels",
    "labels_added",
    "uuid",
    "discovery_url",
    "floating_ip_enabled",
    "master_lb_enabled",
    "nodes_to_remove",
    "nodegroup",
    "cluster_template",
    "max_batch_size",
    "role",
    "min_node_count",
    "max_node_count",
    "node_labels",
    "node_taints",
    "image_id",
    "coe",
    "network_driver",
    "dns_nameserver",
    "docker_storage_driver",
    "public",
    "hidden",
    "project_id",
    "resource",
    "hard_limit",
    "op",
    "path",
    "value",
    "from",
    "colour",
];

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<u64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "\\PC{0,12}".prop_map(Value::String),
        prop::sample::select(vec![
            "1", "-1", "0", "true", "None", "{}", "[]", "1e9", "k8s"
        ])
        .prop_map(|s| Value::String(s.into())),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..4).prop_map(|kv| {
                Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            }),
        ]
    })
}

/// An object of known keys with random values.
fn body_object() -> impl Strategy<Value = Value> {
    prop::collection::vec((prop::sample::select(KEYS), json_value()), 0..6).prop_map(|kv| {
        Value::Object(
            kv.into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect::<Map<_, _>>(),
        )
    })
}

/// A JSON-patch-like document: operations with known and unknown ops and paths.
fn patch_doc() -> impl Strategy<Value = Value> {
    let op = (
        prop::sample::select(vec![
            "replace", "add", "remove", "move", "copy", "test", "x", "",
        ]),
        prop::sample::select(vec![
            "/node_count",
            "/labels",
            "/labels/a",
            "/name",
            "/health_status",
            "/health_status_reason",
            "/min_node_count",
            "/max_node_count",
            "/uuid",
            "/",
            "",
            "node_count",
            "/labels/~1",
            "/node_labels",
            "/public",
            "/hidden",
        ]),
        json_value(),
    )
        .prop_map(|(op, path, value)| json!({"op": op, "path": path, "value": value}));
    prop_oneof![
        prop::collection::vec(op, 0..4).prop_map(Value::Array),
        json_value(),
    ]
}

/// Raw bytes for a body: valid JSON of the shapes above, or text that is not JSON.
fn raw_body(shape: impl Strategy<Value = Value>) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => shape.prop_map(|v| v.to_string().into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..64),
        1 => "\\PC{0,40}".prop_map(String::into_bytes),
    ]
}

struct Fuzzed {
    rt: tokio::runtime::Runtime,
    app: common::TestApp,
    cluster: String,
}

fn fixture() -> Fuzzed {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (app, cluster) = rt.block_on(async {
        let app = common::spawn_app().await;
        let f = app.standard_fixture().await;
        (app, f.k8s)
    });
    Fuzzed { rt, app, cluster }
}

/// Sends one request and checks the property: a 2xx, or a 4xx in the envelope.
fn check(f: &Fuzzed, method: Method, path: &str, version: Option<&str>, body: &[u8]) {
    let status = f.rt.block_on(async {
        let mut req = Request::builder()
            .method(method.clone())
            .uri(path)
            .header("host", "localhost")
            .header("accept", "application/json")
            .header("content-type", "application/json")
            .header("x-user-id", "u-member")
            .header("x-project-id", common::PROJECT)
            .header("x-roles", "reader,member");
        if let Some(v) = version {
            req = req.header("openstack-api-version", v);
        }
        let resp = f
            .app
            .router
            .clone()
            .oneshot(req.body(Body::from(body.to_vec())).expect("request"))
            .await
            .expect("response");
        let status = resp.status();
        let bytes = resp.into_body().collect().await.expect("body").to_bytes();
        if status.is_client_error() && status != StatusCode::NOT_ACCEPTABLE {
            let v: Value = serde_json::from_slice(&bytes).unwrap_or_else(|_| {
                panic!("{method} {path}: {status} not in the envelope: {bytes:?}")
            });
            assert!(
                v["errors"][0]["status"] == json!(status.as_u16()),
                "{method} {path}: {status} envelope {v}"
            );
        }
        status
    });
    assert!(
        !status.is_server_error(),
        "{method} {path} {version:?} body {:?}: {status}",
        String::from_utf8_lossy(body)
    );
}

#[test]
fn any_create_body_is_answered_without_a_server_error() {
    let f = fixture();
    proptest!(config(), |(body in raw_body(body_object()))| {
        check(&f, Method::POST, "/v1/clusters", Some(common::LATEST), &body);
        check(&f, Method::POST, "/v1/clustertemplates", Some(common::LATEST), &body);
        let ng = format!("/v1/clusters/{}/nodegroups", f.cluster);
        check(&f, Method::POST, &ng, Some(common::LATEST), &body);
        check(&f, Method::POST, "/v1/quotas", Some(common::LATEST), &body);
    });
}

#[test]
fn any_action_body_is_answered_without_a_server_error() {
    let f = fixture();
    proptest!(config(), |(body in raw_body(body_object()))| {
        for action in ["resize", "upgrade"] {
            let path = format!("/v1/clusters/{}/actions/{action}", f.cluster);
            check(&f, Method::POST, &path, Some(common::LATEST), &body);
        }
    });
}

#[test]
fn any_patch_document_is_answered_without_a_server_error() {
    let f = fixture();
    proptest!(config(), |(body in raw_body(patch_doc()))| {
        let cluster = format!("/v1/clusters/{}", f.cluster);
        check(&f, Method::PATCH, &cluster, Some(common::LATEST), &body);
        check(&f, Method::PATCH, "/v1/clustertemplates/capi", Some(common::LATEST), &body);
        let ng = format!("/v1/clusters/{}/nodegroups/default-worker", f.cluster);
        check(&f, Method::PATCH, &ng, Some(common::LATEST), &body);
    });
}

#[test]
fn any_query_string_and_version_header_are_answered_without_a_server_error() {
    let f = fixture();
    let query = prop::collection::vec(
        (
            prop::sample::select(vec![
                "limit",
                "marker",
                "sort_key",
                "sort_dir",
                "all_tenants",
                "project_id",
                "type",
                "role",
                "detail",
                "x",
            ]),
            prop_oneof![
                "\\PC{0,10}",
                Just("-1".to_string()),
                Just("99999999999999999999".to_string())
            ],
        ),
        0..4,
    );
    let version = prop_oneof![
        Just(None),
        "[a-z -]{0,30}[0-9.]{0,6}".prop_map(Some),
        (0u32..3, 0u32..40).prop_map(|(a, b)| Some(format!("container-infra {a}.{b}"))),
    ];
    proptest!(config(), |(q in query, v in version)| {
        let qs: String = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(q.iter().map(|(k, v)| (*k, v.as_str())))
            .finish();
        for base in ["/v1/clusters", "/v1/clustertemplates/detail", "/v1/quotas", "/v1/stats"] {
            check(&f, Method::GET, &format!("{base}?{qs}"), v.as_deref(), b"");
        }
        let ngs = format!("/v1/clusters/{}/nodegroups?{qs}", f.cluster);
        check(&f, Method::GET, &ngs, v.as_deref(), b"");
    });
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn python_literals_never_panic(src in "\\PC{0,40}") {
        let _ = magnum_rs::api::pyliteral::parse(&src);
    }

    #[test]
    fn python_literals_of_dicts_round_trip(map in prop::collection::btree_map("[a-z]{1,6}", "[a-z0-9 ]{0,6}", 0..5)) {
        let src = format!(
            "{{{}}}",
            map.iter().map(|(k, v)| format!("'{k}': '{v}'")).collect::<Vec<_>>().join(", ")
        );
        let parsed = magnum_rs::api::pyliteral::parse(&src);
        let expected = Value::Object(map.iter().map(|(k, v)| (k.clone(), json!(v))).collect());
        prop_assert_eq!(parsed, Some(expected));
    }

    #[test]
    fn policy_rules_never_panic(rule in "[a-z:%()'_ ]{0,40}|\\PC{0,30}") {
        let _ = magnum_rs::policy::rules::parse(&rule);
    }

    #[test]
    fn microversion_headers_never_panic(header in "\\PC{0,40}") {
        let _ = magnum_rs::api::microversion::negotiate(Some(&header));
    }

    #[test]
    fn query_strings_never_panic(raw in "\\PC{0,60}") {
        let _ = magnum_rs::api::query::Query::parse(Some(&raw), &["limit", "marker"]);
    }
}
