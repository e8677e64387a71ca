//! `GET /` and `GET /v1` (`magnum/api/controllers/root.py`, `v1/__init__.py`).

use axum::http::HeaderMap;
use axum::Json;
use serde_json::{json, Value};

use super::microversion::{MAX, MIN};
use super::query::base_url;
use super::routes::Routes;

pub fn root_routes() -> Routes {
    Routes::default().get("/", root)
}

pub fn v1_routes() -> Routes {
    Routes::default().get("/v1", v1)
}

/// Mirrors `RootController.index`: version discovery.
async fn root(headers: HeaderMap) -> Json<Value> {
    let base = base_url(&headers);
    Json(json!({
        "name": "OpenStack Magnum API",
        "description": "Magnum is an OpenStack project which aims to provide container cluster management.",
        "versions": [{
            "id": "v1",
            "status": "CURRENT",
            "min_version": MIN.to_string(),
            "max_version": MAX.to_string(),
            "links": [{"href": format!("{base}/v1/"), "rel": "self"}],
        }],
    }))
}

fn pair(base: &str, res: &str) -> Value {
    json!([
        {"href": format!("{base}/v1/{res}/"), "rel": "self"},
        {"href": format!("{base}/{res}/"), "rel": "bookmark"},
    ])
}

/// Mirrors `v1.V1.convert`: the v1 resource index.
async fn v1(headers: HeaderMap) -> Json<Value> {
    let base = base_url(&headers);
    let mut doc = json!({
        "id": "v1",
        "links": [
            {"href": format!("{base}/v1/"), "rel": "self"},
            {"href": "http://docs.openstack.org/developer/magnum/dev/api-spec-v1.html", "rel": "describedby", "type": "text/html"},
        ],
        "media_types": [{"base": "application/json", "type": "application/vnd.openstack.magnum.v1+json"}],
        "nodegroups": [
            {"href": format!("{base}/v1/clusters/{{cluster_id}}/nodegroups"), "rel": "self"},
            {"href": format!("{base}/clusters/{{cluster_id}}/nodegroups"), "rel": "bookmark"},
        ],
    });
    for res in [
        "clustertemplates",
        "clusters",
        "quotas",
        "certificates",
        "mservices",
        "stats",
        "federations",
        "credentials",
    ] {
        doc[res] = pair(&base, res);
    }
    Json(doc)
}
