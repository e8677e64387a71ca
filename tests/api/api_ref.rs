//! `api-ref/` documents exactly the routes magnum-rs serves. The served routes come from the
//! route tables the routers are built from (`api::route_table`, `health::route_table`), and
//! the first test proves those tables are the real router's: each entry, sent through
//! `magnum_rs::app`, is matched by that very route template.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::http::Request;
use magnum_rs::api::routes::Route;
use magnum_rs::telemetry::requests::RouteInfo;
use tower::ServiceExt as _;

const SOURCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/api-ref/source");

fn served() -> Vec<Route> {
    let mut all = magnum_rs::api::route_table();
    all.extend(magnum_rs::health::route_table());
    all
}

/// `/v1/clusters/{ident}` and `/v1/clusters/{cluster_ident}` are the same route.
fn shape(path: &str) -> String {
    let mut out = String::new();
    let mut in_param = false;
    for c in path.chars() {
        match c {
            '{' => {
                in_param = true;
                out.push_str("{}");
            }
            '}' => in_param = false,
            _ if in_param => {}
            _ => out.push(c),
        }
    }
    out
}

/// One `.. rest_method::` of the api-ref and the section it opens.
struct Documented {
    method: String,
    path: String,
    file: PathBuf,
    section: String,
}

/// The `.inc` files index.rst includes, in order.
fn included() -> Vec<PathBuf> {
    let index = std::fs::read_to_string(Path::new(SOURCE).join("index.rst")).expect("index.rst");
    index
        .lines()
        .filter_map(|l| l.trim().strip_prefix(".. include:: "))
        .map(|f| Path::new(SOURCE).join(f.trim()))
        .collect()
}

fn documented() -> Vec<Documented> {
    let mut out = Vec::new();
    for file in included() {
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let Some(rest) = line.trim().strip_prefix(".. rest_method::") else {
                continue;
            };
            let mut parts = rest.split_whitespace();
            let (Some(method), Some(path)) = (parts.next(), parts.next()) else {
                panic!("{}: malformed rest_method: {line}", file.display());
            };
            // The section: up to the next section title (a line of `=` under a title).
            let end = (i + 1..lines.len())
                .find(|&j| {
                    j + 1 < lines.len()
                        && !lines[j].trim().is_empty()
                        && lines[j + 1].starts_with("===")
                })
                .unwrap_or(lines.len());
            out.push(Documented {
                method: method.to_string(),
                path: path.to_string(),
                file: file.clone(),
                section: lines[i..end].join("\n"),
            });
        }
    }
    out
}

/// A concrete path for a template: every `{placeholder}` becomes `x`.
fn fill_placeholders(template: &str) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        out.push('x');
        rest = rest[open..]
            .find('}')
            .map_or("", |close| &rest[open + close + 1..]);
    }
    out.push_str(rest);
    out
}

#[tokio::test]
async fn route_tables_are_what_the_real_router_matches() {
    let app = common::spawn_app().await;
    for route in served() {
        let path = fill_placeholders(route.path);
        // An `ANY` route answers every method; POST is the one clients send to actions.
        let method = if route.method == "ANY" {
            "POST"
        } else {
            route.method
        };
        let req = Request::builder()
            .method(method)
            .uri(&path)
            .header("OpenStack-API-Version", "container-infra latest")
            .body(Body::empty())
            .expect("request");
        let resp = app.router.clone().oneshot(req).await.expect("response");
        match resp.extensions().get::<RouteInfo>() {
            // A Magnum route: the router reports the template it matched.
            Some(info) => assert_eq!(
                info.route.as_deref(),
                Some(route.path),
                "{} {path} was not matched by its own table entry",
                route.method
            ),
            // An operator route (outside the Magnum router): answered, not a 404/405.
            None => assert!(
                resp.status().is_success(),
                "{} {path}: {}",
                route.method,
                resp.status()
            ),
        }
    }
    // And something not in the tables is not matched.
    let req = Request::builder()
        .uri("/v1/nothing-here")
        .body(Body::empty())
        .expect("request");
    let resp = app.router.clone().oneshot(req).await.expect("response");
    assert_eq!(
        resp.extensions()
            .get::<RouteInfo>()
            .and_then(|i| i.route.clone()),
        None
    );
}

#[test]
fn every_served_route_is_documented_and_every_documented_route_is_served() {
    let table = served();
    let served: BTreeSet<(String, String)> = table
        .iter()
        .map(|r| (r.method.to_string(), shape(r.path)))
        .collect();
    let docs: BTreeSet<(String, String)> = documented()
        .iter()
        .map(|d| (d.method.clone(), shape(&d.path)))
        .collect();
    let undocumented: Vec<_> = served.difference(&docs).collect();
    let unserved: Vec<_> = docs.difference(&served).collect();
    assert!(
        undocumented.is_empty() && unserved.is_empty(),
        "served but not in api-ref/: {undocumented:?}\nin api-ref/ but not served: {unserved:?}"
    );
    assert_eq!(served.len(), table.len(), "a route is listed twice");
}

/// `name: value` pairs of a flat YAML mapping's top-level keys.
fn yaml_keys(file: &str) -> BTreeMap<String, serde_yaml_ng::Value> {
    let text = std::fs::read_to_string(Path::new(SOURCE).join(file)).expect(file);
    serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"))
}

#[test]
fn every_documented_route_has_its_microversions_status_codes_and_known_parameters() {
    let params = yaml_keys("parameters.yaml");
    let statuses: BTreeSet<String> = yaml_keys("status.yaml").into_keys().collect();
    for p in params.values() {
        for key in ["description", "in", "required", "type"] {
            assert!(p.get(key).is_some(), "parameters.yaml: {p:?} lacks {key}");
        }
    }
    for d in documented() {
        let at = format!("{} {} ({})", d.method, d.path, d.file.display());
        assert!(
            d.section.contains("\nMicroversions: "),
            "{at}: no `Microversions:` line"
        );
        assert!(
            d.section.contains(".. rest_status_code::"),
            "{at}: no response codes"
        );
        let mut in_codes = false;
        let mut in_params = false;
        for line in d.section.lines() {
            let t = line.trim();
            if t.starts_with(".. rest_status_code::") {
                (in_codes, in_params) = (true, false);
            } else if t.starts_with(".. rest_parameters::") {
                (in_codes, in_params) = (false, true);
            } else if t.starts_with("..") || (!line.starts_with(' ') && !t.is_empty()) {
                (in_codes, in_params) = (false, false);
            } else if let Some(item) = t.strip_prefix("- ") {
                if in_codes {
                    assert!(
                        statuses.contains(item),
                        "{at}: status {item} not in status.yaml"
                    );
                }
                if in_params {
                    let (_, key) = item.split_once(": ").unwrap_or((item, item));
                    assert!(
                        params.contains_key(key.trim()),
                        "{at}: parameter {key} not in parameters.yaml"
                    );
                }
            }
            if let Some(sample) = t.strip_prefix(".. literalinclude:: ") {
                let text = std::fs::read_to_string(Path::new(SOURCE).join(sample))
                    .unwrap_or_else(|e| panic!("{at}: {sample}: {e}"));
                serde_json::from_str::<serde_json::Value>(&text)
                    .unwrap_or_else(|e| panic!("{at}: {sample} is not JSON: {e}"));
            }
        }
    }
}
