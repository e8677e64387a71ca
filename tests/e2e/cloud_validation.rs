//! Magnum's checks of what templates and clusters name (`attr_validator`), made by
//! magnum-rs with `--auth keystone` against the real Glance 33, Nova API 34 and Neutron 29
//! behind the real Keystone 30 (`scripts/keystone.sh`, `scripts/openstack.sh`): the
//! requesting user's token and the catalog Keystone validated it with find the services.
//! Each refusal answers Magnum's code and text and writes nothing.
//!
//! Needs `MAGNUM_RS_TEST_KEYSTONE` and `MAGNUM_RS_TEST_OPENSTACK` (scripts/test.sh); takes
//! the Keystone tests' turn (one magnum-rs on the catalog's port).

use serde_json::{json, Value};

use crate::keystone_auth::{call, magnum, Keystone, TURN};

/// A Glance image demo owns, made for the test (no data: Glance keeps it `queued`).
pub(crate) async fn glance_image(
    ks: &Keystone,
    token: &str,
    name: &str,
    properties: Value,
) -> String {
    let glance = endpoint_url(ks, token, "image").await;
    let mut body = json!({"name": name, "disk_format": "raw", "container_format": "bare"});
    if let (Some(b), Some(p)) = (body.as_object_mut(), properties.as_object()) {
        b.extend(p.clone());
    }
    let resp = reqwest::Client::new()
        .post(format!("{glance}/v2/images"))
        .header("X-Auth-Token", token)
        .json(&body)
        .send()
        .await
        .expect("glance answers");
    assert_eq!(resp.status().as_u16(), 201, "image {name}");
    let v: Value = resp.json().await.expect("image json");
    v["id"].as_str().expect("id").to_string()
}

/// The public endpoint of `service_type` in the catalog of `token`.
pub(crate) async fn endpoint_url(ks: &Keystone, token: &str, service_type: &str) -> String {
    let resp = reqwest::Client::new()
        .get(format!("{}/auth/tokens", ks.url))
        .header("X-Auth-Token", token)
        .header("X-Subject-Token", token)
        .send()
        .await
        .expect("keystone answers");
    let v: Value = resp.json().await.expect("token json");
    v["token"]["catalog"]
        .as_array()
        .expect("catalog")
        .iter()
        .filter(|s| s["type"] == service_type)
        .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
        .find(|e| e["interface"] == "public")
        .and_then(|e| {
            e["url"]
                .as_str()
                .map(|u| u.trim_end_matches('/').to_string())
        })
        .unwrap_or_else(|| {
            panic!("a public {service_type} endpoint in the catalog: run scripts/openstack.sh")
        })
}

fn refused(r: &crate::keystone_auth::Reply) -> (u16, String) {
    (
        r.status,
        r.body["errors"][0]["detail"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

#[tokio::test]
#[ignore = "needs scripts/test.sh"]
async fn templates_and_clusters_name_what_glance_nova_and_neutron_have() {
    let _turn = TURN.lock().await;
    std::env::var("MAGNUM_RS_TEST_OPENSTACK").unwrap_or_else(|_| {
        panic!("MAGNUM_RS_TEST_OPENSTACK is not set: run scripts/test.sh, which starts the real OpenStack services")
    });
    let ks = Keystone::from_env();
    let m = magnum(&ks, 30, "", &[]).await;
    let port = m.server.port;
    let demo = ks.token("demo", "demo").await;
    let alt = ks.token("alt", "alt").await;
    let suffix = uuid::Uuid::new_v4().simple().to_string();

    // A template naming everything by name: accepted, and its distro is the image's.
    let good = json!({
        "name": "k8s", "coe": "kubernetes", "image_id": "fedora-coreos",
        "cluster_distro": "ubuntu",
        "flavor_id": "m1.small", "master_flavor_id": "m1.medium",
        "external_network_id": "public", "fixed_network": "private",
        "fixed_subnet": "private-subnet", "public": false,
    });
    let t = call(
        port,
        "POST",
        "/v1/clustertemplates",
        Some(&demo),
        Some(good.clone()),
    )
    .await;
    assert_eq!(t.status, 201, "{}", t.body);
    assert_eq!(
        t.body["cluster_distro"], "fedora-coreos",
        "os_distro of the image"
    );
    assert_eq!(t.body["image_id"], "fedora-coreos");

    // Images the test makes: one without os_distro, two of the same name.
    let bare = format!("bare-{suffix}");
    glance_image(&ks, &demo, &bare, json!({})).await;
    let twin = format!("twin-{suffix}");
    for _ in 0..2 {
        glance_image(&ks, &demo, &twin, json!({"os_distro": "ubuntu"})).await;
    }

    let with = |key: &str, value: &str| {
        let mut b = good.clone();
        b["name"] = json!(format!("bad-{key}"));
        b[key] = json!(value);
        b
    };
    let cases = [
        (
            with("image_id", "no-such-image"),
            400,
            "Image no-such-image could not be found.".to_string(),
        ),
        (
            with("image_id", &bare),
            400,
            format!("Image {bare} doesn't contain os_distro field."),
        ),
        (
            with("image_id", &twin),
            409,
            format!(
                "Multiple images exist with same name '{twin}'. Please use the image ID instead."
            ),
        ),
        (
            with("flavor_id", "m1.huge"),
            400,
            "Unable to find flavor m1.huge.".to_string(),
        ),
        (
            with("master_flavor_id", "m1.huge"),
            400,
            "Unable to find flavor m1.huge.".to_string(),
        ),
        (
            with("external_network_id", "private"),
            400,
            "Unable to find external network private.".to_string(),
        ),
        (
            with("fixed_network", "no-such-net"),
            400,
            "Unable to find fixed network no-such-net.".to_string(),
        ),
        (
            with("fixed_subnet", "no-such-subnet"),
            400,
            "Unable to find fixed subnet no-such-subnet.".to_string(),
        ),
    ];
    for (body, status, detail) in cases {
        let r = call(
            port,
            "POST",
            "/v1/clustertemplates",
            Some(&demo),
            Some(body.clone()),
        )
        .await;
        assert_eq!(refused(&r), (status, detail), "{body}");
    }
    let list = call(port, "GET", "/v1/clustertemplates", Some(&demo), None).await;
    let names: Vec<&str> = list.body["clustertemplates"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["k8s"], "no refused template was stored");

    // A template update is checked the same way and changes nothing when refused.
    let r = call(
        port,
        "PATCH",
        "/v1/clustertemplates/k8s",
        Some(&demo),
        Some(json!([{"op": "replace", "path": "/flavor_id", "value": "m1.huge"}])),
    )
    .await;
    assert_eq!(refused(&r), (400, "Unable to find flavor m1.huge.".into()));
    let r = call(
        port,
        "PATCH",
        "/v1/clustertemplates/k8s",
        Some(&demo),
        Some(json!([{"op": "replace", "path": "/flavor_id", "value": "m1.large"}])),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["flavor_id"], "m1.large");

    // Clusters: overrides are checked, and the keypair is the requesting user's.
    let cluster = |name: &str, extra: Value| {
        let mut b = json!({"name": name, "cluster_template_id": "k8s", "node_count": 1});
        if let (Some(b), Some(e)) = (b.as_object_mut(), extra.as_object()) {
            b.extend(e.clone());
        }
        b
    };
    let r = call(
        port,
        "POST",
        "/v1/clusters",
        Some(&demo),
        Some(cluster("c1", json!({"keypair": "no-such-key"}))),
    )
    .await;
    assert_eq!(
        refused(&r),
        (404, "Unable to find keypair no-such-key.".into())
    );
    let r = call(
        port,
        "POST",
        "/v1/clusters",
        Some(&demo),
        Some(cluster(
            "c1",
            json!({"flavor_id": "m1.huge", "keypair": "default"}),
        )),
    )
    .await;
    assert_eq!(refused(&r), (400, "Unable to find flavor m1.huge.".into()));
    let r = call(
        port,
        "POST",
        "/v1/clusters",
        Some(&demo),
        Some(cluster("c1", json!({"fixed_subnet": "no-such-subnet"}))),
    )
    .await;
    assert_eq!(
        refused(&r),
        (400, "Unable to find fixed subnet no-such-subnet.".into())
    );
    let clusters = call(port, "GET", "/v1/clusters", Some(&demo), None).await;
    assert_eq!(
        clusters.body["clusters"],
        json!([]),
        "no refused cluster was stored"
    );

    let r = call(
        port,
        "POST",
        "/v1/clusters",
        Some(&demo),
        Some(cluster(
            "c1",
            json!({"keypair": "default", "flavor_id": "m1.medium"}),
        )),
    )
    .await;
    assert_eq!(r.status, 202, "{}", r.body);

    // demo's keypair is not alt's.
    let t = call(
        port,
        "POST",
        "/v1/clustertemplates",
        Some(&alt),
        Some(json!({
            "name": "alt-k8s", "coe": "kubernetes", "image_id": "fedora-coreos",
            "flavor_id": "m1.small", "master_flavor_id": "m1.small",
        })),
    )
    .await;
    assert_eq!(t.status, 201, "{}", t.body);
    let r = call(
        port,
        "POST",
        "/v1/clusters",
        Some(&alt),
        Some(json!({
            "name": "a1", "cluster_template_id": "alt-k8s", "node_count": 1, "keypair": "default",
        })),
    )
    .await;
    assert_eq!(refused(&r), (404, "Unable to find keypair default.".into()));

    // Without a flavor, as in Magnum 2025.1 and later, a cluster needs a boot volume size.
    let t = call(
        port,
        "POST",
        "/v1/clustertemplates",
        Some(&alt),
        Some(json!({
            "name": "no-flavor", "coe": "kubernetes", "image_id": "fedora-coreos",
        })),
    )
    .await;
    assert_eq!(t.status, 201, "{}", t.body);
    let r = call(
        port,
        "POST",
        "/v1/clusters",
        Some(&alt),
        Some(json!({
            "name": "a2", "cluster_template_id": "no-flavor", "node_count": 1,
        })),
    )
    .await;
    assert_eq!(refused(&r), (400, "Unable to find flavor None.".into()));
    let r = call(
        port,
        "POST",
        "/v1/clusters",
        Some(&alt),
        Some(json!({
            "name": "a2", "cluster_template_id": "no-flavor", "node_count": 1,
            "labels": {"boot_volume_size": "20"},
        })),
    )
    .await;
    assert_eq!(r.status, 202, "{}", r.body);
}
