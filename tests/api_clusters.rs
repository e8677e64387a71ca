mod common;
use common::*;

#[tokio::test]
async fn explore() {
    let app = spawn_app().await;
    let f = app.standard_fixture().await;
    for p in [
        "/v1/clusters",
        "/v1/clusters/detail",
        "/v1/clusters/k8s",
        &format!("/v1/clusters/{}/nodegroups", f.k8s),
        "/v1/clusters/k8s/nodegroups/default-worker",
        "/v1/clustertemplates",
    ] {
        let r = app.get(p, &As::member()).await;
        println!(
            "=== {p} {}\n{:?}\n{}",
            r.status,
            r.headers,
            serde_json::to_string_pretty(&r.body).unwrap()
        );
    }
    let r = app
        .send(
            axum::http::Method::PUT,
            "/v1/clusters/k8s",
            &As::member(),
            Some(LATEST),
            Some("{}"),
        )
        .await;
    println!("=== PUT {}\n{:?}\n{}", r.status, r.headers, r.body);
}
