//! The size bounds on what a request can store where Magnum bounds nothing (issue 28,
//! docs/compatibility.md `diff:field-size-limit`, `diff:column-width`,
//! `diff:min-node-count-label`): each free-form field is stored at exactly its bound and
//! refused one byte over it with 400 in Magnum's envelope, writing nothing; and the
//! `min_node_count` label reaches the default worker only as a count its column can hold.

use crate::common;

use axum::http::StatusCode;
use serde_json::{json, Map, Value};

use common::{assert_envelope, As, Reply, TestApp};
use magnum_rs::config::Config;

/// `[api] max_labels_size` and `[api] max_field_size` as shipped.
fn defaults() -> (usize, usize) {
    let api = Config::default().api;
    (api.max_labels_size, api.max_field_size)
}

/// The length of `v`'s compact JSON, which is what the store writes.
fn json_len(v: &Value) -> usize {
    serde_json::to_string(v).map(|s| s.len()).unwrap_or(0)
}

/// `shape(pad)` with `pad` long enough for exactly `size` bytes of JSON.
fn sized(size: usize, shape: impl Fn(&str) -> Value) -> Value {
    let base = json_len(&shape(""));
    assert!(size >= base, "{size} < {base}");
    let v = shape(&"x".repeat(size - base));
    assert_eq!(json_len(&v), size);
    v
}

/// Builds a field's value around a pad (see [`sized`]).
type Shape = dyn Fn(&str) -> Value;

fn big_dict(pad: &str) -> Value {
    json!({ "big": pad })
}

/// A 400 refusing `field` for its size, in the envelope, whose echo of the value is cut.
#[track_caller]
fn assert_too_large(r: &Reply, field: &str, max: usize, size: usize) {
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{field}: {}", r.body);
    let detail = r.detail().to_string();
    assert_envelope(r, StatusCode::BAD_REQUEST, &detail);
    let frame = format!("Invalid input for field/attribute {field}. Value: '");
    assert!(detail.starts_with(&frame), "{detail}");
    let reason = format!("'. Value should be at most {max} bytes long as JSON, not {size}");
    assert!(detail.ends_with(&reason), "{detail}");
    assert!(detail.len() < 300, "the value is echoed whole: {detail}");
}

async fn count(app: &TestApp, path: &str, key: &str) -> usize {
    let r = app.get(path, &As::member()).await;
    assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.body);
    r.body[key].as_array().map_or(0, Vec::len)
}

async fn rows(app: &TestApp, table: &str) -> i64 {
    sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
        .fetch_one(&mut app.state.store.side_connection().await.expect("connection"))
        .await
        .expect("count")
}

async fn show(app: &TestApp, path: &str) -> Value {
    let r = app.get(path, &As::member()).await;
    assert_eq!(r.status, StatusCode::OK, "{path}: {}", r.body);
    r.body
}

fn template_body(name: &str, labels: &Value) -> Value {
    json!({"name": name, "coe": "kubernetes", "image_id": "ubuntu-2204-kube",
           "cluster_distro": "ubuntu", "master_lb_enabled": true, "labels": labels})
}

/// A dict or list as the CLI sends it in a JSON patch: a Python literal.
fn literal(v: &Value) -> Value {
    json!(v.to_string().replace('"', "'"))
}

fn replace(path: &str, value: Value) -> Value {
    json!([{"op": "replace", "path": path, "value": value}])
}

#[tokio::test]
async fn template_labels_at_the_bound_are_stored_and_one_byte_more_is_refused_storing_nothing() {
    let app = common::spawn_app().await;
    let (max, _) = defaults();
    let shape = |p: &str| json!({"kube_tag": "v1.30.4", "big": p});
    let at = sized(max, shape);
    let r = app
        .post(
            "/v1/clustertemplates",
            &As::member(),
            template_body("at", &at),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(show(&app, "/v1/clustertemplates/at").await["labels"], at);

    let r = app
        .post(
            "/v1/clustertemplates",
            &As::member(),
            template_body("over", &sized(max + 1, shape)),
        )
        .await;
    let shown = "{'kube_tag': 'v1.30.4', 'big': '";
    let echo = format!("{shown}{}...", "x".repeat(100 - shown.len()));
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        &format!(
            "Invalid input for field/attribute labels. Value: '{echo}'. Value should be at most \
             {max} bytes long as JSON, not {}",
            max + 1
        ),
    );
    assert_eq!(
        count(&app, "/v1/clustertemplates", "clustertemplates").await,
        1
    );
}

#[tokio::test]
async fn a_template_patch_over_the_labels_bound_changes_nothing() {
    let app = common::spawn_app().await;
    let (max, _) = defaults();
    app.template("capi", "ubuntu", &As::member()).await;
    let at = sized(max, big_dict);
    let r = app
        .patch(
            "/v1/clustertemplates/capi",
            &As::member(),
            replace("/labels", literal(&at)),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);

    // The CLI's form (a Python literal), and one more label added to labels at the bound.
    let over = sized(max + 1, big_dict);
    let r = app
        .patch(
            "/v1/clustertemplates/capi",
            &As::member(),
            replace("/labels", literal(&over)),
        )
        .await;
    assert_too_large(&r, "labels", max, max + 1);
    let r = app
        .patch(
            "/v1/clustertemplates/capi",
            &As::member(),
            json!([{"op": "add", "path": "/labels/a", "value": "b"}]),
        )
        .await;
    assert_too_large(&r, "labels", max, max + ",\"a\":\"b\"".len());
    assert_eq!(show(&app, "/v1/clustertemplates/capi").await["labels"], at);
}

#[tokio::test]
async fn labels_stored_beyond_the_bound_earlier_are_copied_and_kept_not_refused() {
    // A bound lower than what the database holds (MySQL's TEXT takes 65,535 bytes at most,
    // the shipped bound), as an operator may set it after larger labels were stored.
    let max = 1024;
    let mut config = magnum_rs::config::Config::default();
    config.api.max_labels_size = max;
    let app = common::spawn_app_with(config, None).await;
    let uuid = app.template("capi", "ubuntu", &As::member()).await["uuid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // As a database made by Magnum (or with a larger bound) may hold them.
    let store = &app.state.store;
    let mut t = store
        .template_by_uuid(&uuid)
        .await
        .expect("read")
        .expect("row");
    let before = t.clone();
    let legacy = sized(max + 100, big_dict);
    t.labels = legacy.as_object().cloned();
    store
        .patch_template(&before, &t, false)
        .await
        .expect("write")
        .expect("template there");

    let r = app
        .patch(
            "/v1/clustertemplates/capi",
            &As::member(),
            replace("/name", json!("kept")),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "a PATCH of the name: {}", r.body);
    app.cluster("copies", "kept", 1, 1, &As::member()).await;
    assert_eq!(show(&app, "/v1/clusters/copies").await["labels"], legacy);
}

#[tokio::test]
async fn cluster_labels_are_bounded_as_given_and_after_the_merge_with_the_templates() {
    let app = common::spawn_app().await;
    let (max, _) = defaults();
    app.template("capi", "ubuntu", &As::member()).await;
    let at = sized(max, big_dict);
    let body = |name: &str, labels: &Value, merge: bool| {
        json!({"name": name, "cluster_template_id": "capi", "labels": labels,
               "merge_labels": merge})
    };
    let r = app
        .post("/v1/clusters", &As::member(), body("at", &at, false))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    app.run_operations().await;
    assert_eq!(show(&app, "/v1/clusters/at").await["labels"], at);
    let worker = show(&app, "/v1/clusters/at/nodegroups/default-worker").await;
    assert_eq!(worker["labels"], at, "the default nodegroups copy them");

    let over = sized(max + 1, big_dict);
    let r = app
        .post("/v1/clusters", &As::member(), body("over", &over, false))
        .await;
    assert_too_large(&r, "labels", max, max + 1);
    let r = app
        .post("/v1/clusters", &As::member(), body("merged", &at, true))
        .await;
    let merged = max + ",\"kube_tag\":\"v1.30.4\"".len();
    assert_too_large(&r, "labels", max, merged);
    assert_eq!(count(&app, "/v1/clusters", "clusters").await, 1);
    assert_eq!(rows(&app, "nodegroup").await, 2, "only the first cluster's");
}

#[tokio::test]
async fn nodegroup_labels_node_labels_and_taints_are_stored_at_their_bounds_and_refused_over() {
    let app = common::spawn_app().await;
    app.standard_fixture().await;
    let (labels_max, field_max) = defaults();
    let taint = |p: &str| json!([{"key": "k", "value": p, "effect": "NoSchedule"}]);
    let cases: [(&str, usize, &Shape); 3] = [
        ("labels", labels_max, &big_dict),
        ("node_labels", field_max, &big_dict),
        ("node_taints", field_max, &taint),
    ];
    let path = "/v1/clusters/k8s/nodegroups";
    for (field, max, shape) in cases {
        let before = count(&app, path, "nodegroups").await;
        let at = sized(max, shape);
        let r = app
            .post(
                path,
                &As::member(),
                json!({"name": format!("at-{field}"), field: at}),
            )
            .await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{field}: {}", r.body);
        let shown = show(&app, &format!("{path}/at-{field}")).await;
        assert_eq!(shown[field], at, "{field}");

        let over = sized(max + 1, shape);
        let r = app
            .post(
                path,
                &As::member(),
                json!({"name": format!("over-{field}"), field: over}),
            )
            .await;
        assert_too_large(&r, field, max, max + 1);
        assert_eq!(count(&app, path, "nodegroups").await, before + 1, "{field}");
    }

    // Labels at the bound laid over the cluster's are over it.
    let r = app
        .post(
            path,
            &As::member(),
            json!({"name": "merged", "labels": sized(labels_max, big_dict), "merge_labels": true}),
        )
        .await;
    assert_too_large(
        &r,
        "labels",
        labels_max,
        labels_max + ",\"kube_tag\":\"v1.30.4\"".len(),
    );
    let r = app.get(&format!("{path}/merged"), &As::member()).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.body);
}

#[tokio::test]
async fn a_nodegroup_patch_over_the_bound_changes_nothing() {
    let app = common::spawn_app().await;
    app.standard_fixture().await;
    let (_, max) = defaults();
    let path = "/v1/clusters/k8s/nodegroups";
    let r = app
        .post(
            path,
            &As::member(),
            json!({"name": "np", "node_labels": {"a": "b"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    app.run_operations().await;
    let ng = format!("{path}/np");
    let before = show(&app, &ng).await;

    let r = app
        .patch(
            &ng,
            &As::member(),
            replace("/node_labels", literal(&sized(max + 1, big_dict))),
        )
        .await;
    assert_too_large(&r, "node_labels", max, max + 1);
    let taint = |p: &str| json!([{"key": p, "effect": "NoExecute"}]);
    let r = app
        .patch(
            &ng,
            &As::member(),
            replace("/node_taints", literal(&sized(max + 1, taint))),
        )
        .await;
    assert_too_large(&r, "node_taints", max, max + 1);
    let after = show(&app, &ng).await;
    assert_eq!(after["node_labels"], before["node_labels"]);
    assert_eq!(after["node_taints"], before["node_taints"]);
    assert_eq!(
        after["updated_at"], before["updated_at"],
        "the row was written"
    );

    let at = sized(max, big_dict);
    let r = app
        .patch(&ng, &As::member(), replace("/node_labels", literal(&at)))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(show(&app, &ng).await["node_labels"], at);
}

#[tokio::test]
async fn a_health_status_reason_over_the_bound_is_refused_and_the_stored_one_kept() {
    let app = common::spawn_app().await;
    app.standard_fixture().await;
    let (_, max) = defaults();
    let reason = |p: &str| json!({"api": "ok", "k8s-node-0.Ready": p});
    let at = sized(max, reason);
    let r = app
        .patch(
            "/v1/clusters/k8s",
            &As::member(),
            replace("/health_status_reason", literal(&at)),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(
        show(&app, "/v1/clusters/k8s").await["health_status_reason"],
        at
    );

    // magnum-auto-healer's form: a JSON dump with single quotes.
    let over = literal(&sized(max + 1, reason));
    let r = app
        .patch(
            "/v1/clusters/k8s",
            &As::member(),
            json!([
                {"op": "replace", "path": "/health_status", "value": "UNHEALTHY"},
                {"op": "replace", "path": "/health_status_reason", "value": over},
            ]),
        )
        .await;
    assert_too_large(&r, "health_status_reason", max, max + 1);
    let c = show(&app, "/v1/clusters/k8s").await;
    assert_eq!(c["health_status_reason"], at);
    assert_ne!(
        c["health_status"], "UNHEALTHY",
        "nothing of the PATCH is written"
    );
}

#[tokio::test]
async fn federation_properties_and_members_are_bounded_on_create_and_patch() {
    let app = common::spawn_app().await;
    app.standard_fixture().await;
    let (_, max) = defaults();
    let properties = |p: &str| json!({"dns-zone": "example.com.", "notes": p});
    let create = |name: &str, props: &Value, members: &Value| json!({"name": name, "hostcluster_id": "k8s", "properties": props, "member_ids": members});
    let at = sized(max, properties);
    let r = app
        .post(
            "/v1/federations",
            &As::member(),
            create("fed", &at, &json!([])),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    assert_eq!(show(&app, "/v1/federations/fed").await["properties"], at);

    let small = properties("");
    let r = app
        .post(
            "/v1/federations",
            &As::member(),
            create("p", &sized(max + 1, properties), &json!([])),
        )
        .await;
    assert_too_large(&r, "properties", max, max + 1);
    let members = |p: &str| json!([p]);
    let r = app
        .post(
            "/v1/federations",
            &As::member(),
            create("m", &small, &sized(max + 1, members)),
        )
        .await;
    assert_too_large(&r, "member_ids", max, max + 1);
    assert_eq!(rows(&app, "federation").await, 1);

    // A PATCH changes one property (members change only by joining existing clusters).
    let longer = sized(max + 1, properties)["notes"].clone();
    let r = app
        .patch(
            "/v1/federations/fed",
            &As::member(),
            replace("/properties/notes", longer),
        )
        .await;
    assert_too_large(&r, "properties", max, max + 1);
    let fed = show(&app, "/v1/federations/fed").await;
    assert_eq!(fed["properties"], at);
    assert_eq!(fed["member_ids"], json!([]));
}

#[tokio::test]
async fn nodes_to_remove_is_bounded_and_a_refused_resize_records_nothing() {
    let app = common::spawn_app().await;
    let f = app.standard_fixture().await;
    let (_, max) = defaults();
    let resize = format!("/v1/clusters/{}/actions/resize", f.k8s);
    let names = |p: &str| json!(["k8s-default-worker-0", p]);
    let r = app
        .post(
            &resize,
            &As::member(),
            json!({"node_count": 1, "nodes_to_remove": sized(max, names)}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    app.run_operations().await;
    let operations = rows(&app, "magnum_rs_operation").await;

    let r = app
        .post(
            &resize,
            &As::member(),
            json!({"node_count": 2, "nodes_to_remove": sized(max + 1, names)}),
        )
        .await;
    assert_too_large(&r, "nodes_to_remove", max, max + 1);
    assert_eq!(rows(&app, "magnum_rs_operation").await, operations);
    let worker = show(
        &app,
        &format!("/v1/clusters/{}/nodegroups/default-worker", f.k8s),
    )
    .await;
    assert_eq!(worker["node_count"], 1);
}

#[tokio::test]
async fn discovery_url_and_dns_nameserver_are_refused_beyond_their_255_character_columns() {
    let app = common::spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    let width = "Value should have a maximum character requirement of 255";

    // 32 addresses of 7 characters and their commas: 255 characters.
    let dns = vec!["1.1.1.1"; 32].join(",");
    assert_eq!(dns.len(), 255);
    let mut body = template_body("dns", &json!({}));
    body["dns_nameserver"] = json!(dns);
    let r = app
        .post("/v1/clustertemplates", &As::member(), body.clone())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(
        show(&app, "/v1/clustertemplates/dns").await["dns_nameserver"],
        dns
    );
    let longer = format!("{dns}0");
    body["name"] = json!("dns-over");
    body["dns_nameserver"] = json!(longer);
    let r = app.post("/v1/clustertemplates", &As::member(), body).await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        &format!(
            "Invalid input for field/attribute dns_nameserver. Value: '{}...'. {width}",
            &longer[..100]
        ),
    );
    let r = app
        .patch(
            "/v1/clustertemplates/dns",
            &As::member(),
            replace("/dns_nameserver", json!(longer)),
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert_eq!(
        show(&app, "/v1/clustertemplates/dns").await["dns_nameserver"],
        dns
    );
    assert_eq!(
        count(&app, "/v1/clustertemplates", "clustertemplates").await,
        2
    );

    let url = format!("https://discovery.etcd.io/{}", "a".repeat(255 - 26));
    assert_eq!(url.len(), 255);
    for (name, url, status) in [
        ("at", url.clone(), StatusCode::ACCEPTED),
        ("over", format!("{url}a"), StatusCode::BAD_REQUEST),
    ] {
        let r = app
            .post(
                "/v1/clusters",
                &As::member(),
                json!({"name": name, "cluster_template_id": "capi", "discovery_url": url}),
            )
            .await;
        assert_eq!(r.status, status, "{name}: {}", r.body);
    }
    assert_eq!(show(&app, "/v1/clusters/at").await["discovery_url"], url);
    assert_eq!(count(&app, "/v1/clusters", "clusters").await, 1);
}

#[tokio::test]
async fn the_min_node_count_label_becomes_the_default_workers_minimum() {
    let app = common::spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    for (name, label, expected) in [
        ("text", json!("2"), 2),
        ("spaced", json!(" 1 "), 1),
        ("number", json!(3), 3),
        ("largest", json!("2147483647"), 2_147_483_647i64),
    ] {
        let r = app
            .post(
                "/v1/clusters",
                &As::member(),
                json!({"name": name, "cluster_template_id": "capi", "node_count": 3,
                       "labels": {"min_node_count": label}, "merge_labels": true}),
            )
            .await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{name}: {}", r.body);
        let ngs = format!("/v1/clusters/{name}/nodegroups");
        let worker = show(&app, &format!("{ngs}/default-worker")).await;
        assert_eq!(worker["min_node_count"], expected, "{name}");
        let master = show(&app, &format!("{ngs}/default-master")).await;
        assert_eq!(master["min_node_count"], 0, "{name}");
    }
}

#[tokio::test]
async fn a_min_node_count_label_no_32_bit_count_is_refused_at_once_storing_nothing() {
    let app = common::spawn_app().await;
    app.template("capi", "ubuntu", &As::member()).await;
    let frame = "Invalid input for field/attribute min_node_count. Value:";
    for (label, reason) in [
        ("-1", "Value should be greater or equal to 0".to_string()),
        (
            "2147483648",
            "Value should be lower or equal to 2147483647".into(),
        ),
        (
            "two",
            "invalid literal for int() with base 10: 'two'".into(),
        ),
        (
            "1.5",
            "invalid literal for int() with base 10: '1.5'".into(),
        ),
    ] {
        let r = app
            .post(
                "/v1/clusters",
                &As::member(),
                json!({"name": "c", "cluster_template_id": "capi",
                       "labels": {"min_node_count": label}}),
            )
            .await;
        assert_envelope(
            &r,
            StatusCode::BAD_REQUEST,
            &format!("{frame} '{label}'. {reason}"),
        );
    }

    // A template may carry the label, as in Magnum; a cluster made from it may not.
    let mut labels = Map::new();
    labels.insert("min_node_count".into(), json!("-5"));
    let r = app
        .post(
            "/v1/clustertemplates",
            &As::member(),
            template_body("neg", &Value::Object(labels)),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let r = app
        .post(
            "/v1/clusters",
            &As::member(),
            json!({"name": "c", "cluster_template_id": "neg"}),
        )
        .await;
    assert_envelope(
        &r,
        StatusCode::BAD_REQUEST,
        &format!("{frame} '-5'. Value should be greater or equal to 0"),
    );
    assert_eq!(count(&app, "/v1/clusters", "clusters").await, 0);
    assert_eq!(rows(&app, "nodegroup").await, 0);
    assert_eq!(rows(&app, "magnum_rs_operation").await, 0);
}

#[tokio::test]
async fn the_configured_bounds_are_the_ones_enforced() {
    let mut config = Config::default();
    config.api.max_labels_size = 64;
    config.api.max_field_size = 48;
    let app = common::spawn_app_with(config, None).await;
    app.standard_fixture().await;
    let r = app
        .post(
            "/v1/clustertemplates",
            &As::member(),
            template_body("at", &sized(64, big_dict)),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let r = app
        .post(
            "/v1/clustertemplates",
            &As::member(),
            template_body("over", &sized(65, big_dict)),
        )
        .await;
    assert_too_large(&r, "labels", 64, 65);
    let path = "/v1/clusters/k8s/nodegroups";
    let r = app
        .post(
            path,
            &As::member(),
            json!({"name": "at", "node_labels": sized(48, big_dict)}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let r = app
        .post(
            path,
            &As::member(),
            json!({"name": "over", "node_labels": sized(49, big_dict)}),
        )
        .await;
    assert_too_large(&r, "node_labels", 48, 49);
}

#[tokio::test]
async fn real_label_sets_with_certificates_fit_well_within_the_default_bound() {
    let app = common::spawn_app().await;
    let (max, _) = defaults();
    let labels = magnum_cluster_api_labels();
    let size = json_len(&labels);
    assert!(
        size * 4 < max,
        "{size} bytes leave too little room under {max}"
    );
    let r = app
        .post(
            "/v1/clustertemplates",
            &As::member(),
            template_body("real", &labels),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let r = app
        .post(
            "/v1/clusters",
            &As::member(),
            json!({"name": "real", "cluster_template_id": "real", "node_count": 3,
                   "labels": {"kube_tag": "v1.31.1", "min_node_count": "1"}, "merge_labels": true}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
}

/// What a list holds per cluster is a small multiple of the bound, whatever clients stored:
/// the memory a detail list takes is bounded by design (issue 28 measured 1.9 MB of labels a
/// cluster taking 8 parallel lists from 148 MB to 735 MB).
#[tokio::test]
async fn a_detail_list_of_clusters_at_the_bound_holds_a_few_times_the_bound_each() {
    let app = common::spawn_app().await;
    let (max, _) = defaults();
    app.template("capi", "ubuntu", &As::member()).await;
    let clusters = 4;
    for i in 0..clusters {
        let r = app
            .post(
                "/v1/clusters",
                &As::member(),
                json!({"name": format!("c{i}"), "cluster_template_id": "capi",
                       "labels": sized(max, big_dict)}),
            )
            .await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    }
    let list = show(&app, "/v1/clusters/detail").await;
    assert_eq!(list["clusters"].as_array().map(Vec::len), Some(clusters));
    // `labels` and `labels_added` (none of them is the template's): twice the bound.
    let size = json_len(&list);
    assert!(
        size <= clusters * (2 * max + 4096),
        "{size} bytes for {clusters} clusters at {max}"
    );
}

/// magnum-cluster-api's documented labels at long values, with two CA-sized PEM blocks and a
/// Keystone policy document as operators put them in labels.
fn magnum_cluster_api_labels() -> Value {
    const SUITES: &str = "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,\
        TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,\
        TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305,\
        TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305";
    const PLAIN: &[(&str, &str)] = &[
        ("kube_tag", "v1.30.4"),
        ("boot_volume_size", "40"),
        ("boot_volume_type", "ssd-encrypted"),
        ("boot_volume_availability_zone", "az-1"),
        ("etcd_volume_size", "10"),
        ("etcd_volume_type", "ssd-fast"),
        (
            "container_infra_prefix",
            "registry.example.com:5000/magnum/",
        ),
        ("calico_ipv4pool", "10.100.0.0/16"),
        ("service_cluster_ip_range", "10.254.0.0/16"),
        ("audit_log_enabled", "true"),
        ("audit_log_maxage", "30"),
        ("audit_log_maxbackup", "10"),
        ("audit_log_maxsize", "100"),
        ("cloud_provider_tag", "v1.30.0"),
        ("octavia_provider", "ovn"),
        ("octavia_lb_algorithm", "SOURCE_IP_PORT"),
        ("octavia_lb_healthcheck", "True"),
        ("calico_tag", "v3.31.3"),
        ("cilium_hubble_ui_enabled", "false"),
        ("cinder_csi_plugin_tag", "v1.30.0"),
        ("manila_csi_plugin_tag", "v1.30.0"),
        (
            "manila_csi_share_network_id",
            "4b5b0c1e-7b9c-4a52-9f51-8a4d2f3c1e77",
        ),
        (
            "api_server_cert_sans",
            "k8s.example.com,k8s-internal.example.com,192.0.2.10",
        ),
        ("api_server_tls_cipher_suites", SUITES),
        ("kubelet_tls_cipher_suites", SUITES),
        ("auto_healing_enabled", "true"),
        ("auto_scaling_enabled", "true"),
        ("min_node_count", "1"),
        ("max_node_count", "10"),
        ("kubelet_serving_tls_enabled", "false"),
        ("master_lb_floating_ip_enabled", "false"),
        (
            "oidc_issuer_url",
            "https://keycloak.example.com/realms/openstack",
        ),
        ("oidc_client_id", "kubernetes"),
        ("oidc_username_claim", "preferred_username"),
        ("oidc_username_prefix", "oidc:"),
        ("oidc_groups_claim", "groups"),
        ("oidc_groups_prefix", "oidc:"),
        ("fixed_subnet_cidr", "10.0.0.0/24"),
        ("different_failure_domain", "true"),
        ("server_group_policies", "soft-anti-affinity"),
        ("availability_zone", "az-1"),
        ("dns_cluster_domain", "cluster.local"),
        ("keystone_auth_enabled", "true"),
    ];
    let pem = || {
        let body: Vec<String> = (0..27)
            .map(|line| {
                (0..64)
                    .map(|i| char::from(b'A' + ((line * 64 + i) % 26) as u8))
                    .collect()
            })
            .collect();
        format!(
            "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
            body.join("\n")
        )
    };
    let policy: Vec<Value> = (0..24)
        .map(|i| {
            json!({"resource": {"verbs": ["get", "list", "watch"], "resources": [format!("r{i}")],
                                "version": "*", "namespace": "default"},
                   "match": [{"type": "role", "values": ["member", "reader"]}]})
        })
        .collect();
    let mut labels: Map<String, Value> = PLAIN
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    labels.insert(
        "keystone_auth_default_policy".into(),
        json!(Value::Array(policy).to_string()),
    );
    labels.insert("oidc_ca".into(), json!(pem()));
    labels.insert("registry_ca".into(), json!(pem()));
    Value::Object(labels)
}

/// noauth's identity headers (`diff:identity-header-bound`): a project and a user id of 255
/// characters (Magnum's column width) are taken and stored; one more is refused with 400
/// before anything is read or written.
#[tokio::test]
async fn noauth_identity_headers_at_their_bound_are_taken_and_one_more_is_refused() {
    let app = common::spawn_app().await;
    let at = As {
        project: Some("p".repeat(255)),
        user: "u".repeat(255),
        roles: "member".into(),
    };
    let r = app
        .post("/v1/clustertemplates", &at, template_body("at", &json!({})))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    assert_eq!(r.body["project_id"], json!("p".repeat(255)), "{}", r.body);
    assert_eq!(r.body["user_id"], json!("u".repeat(255)), "{}", r.body);
    for (who, header) in [
        (
            As {
                project: Some("p".repeat(256)),
                ..As::member()
            },
            "X-Project-Id",
        ),
        (
            As {
                user: "u".repeat(256),
                ..As::member()
            },
            "X-User-Id",
        ),
        (
            As {
                roles: format!("member,{}", "r".repeat(4096)),
                ..As::member()
            },
            "X-Roles",
        ),
    ] {
        let r = app
            .post(
                "/v1/clustertemplates",
                &who,
                template_body("over", &json!({})),
            )
            .await;
        let max = if header == "X-Roles" { 4096 } else { 255 };
        assert_envelope(
            &r,
            StatusCode::BAD_REQUEST,
            &format!("The {header} header is longer than {max} characters."),
        );
    }
    assert_eq!(rows(&app, "cluster_template").await, 1);
}
