//! Exact requests of the ClusterAPI driver, pinned with a tower-test mock API server:
//! verb, path, content type and body of every call.

use axum::body::Bytes;
use axum::http::{Request, Response};
use http_body_util::BodyExt as _;
use kube::client::Body;
use serde_json::{json, Value};

use super::client::ManagementCluster;
use super::driver::KubeClusterApiDriver;
use crate::drivers::cluster_api::ClusterApiConfig;
use crate::drivers::{Lifecycle, Progress, ResizeRequest};
use crate::model::{Cluster, NodeGroup};

type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

fn driver() -> (KubeClusterApiDriver, Handle) {
    let (svc, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = kube::Client::new(svc, "default");
    let mc = ManagementCluster {
        name: "default".into(),
        client,
        namespace: "magnum-system".into(),
    };
    (
        KubeClusterApiDriver::new(&ClusterApiConfig::default(), vec![mc]),
        handle,
    )
}

fn cluster() -> Cluster {
    Cluster {
        uuid: "a1a1a1a1-0000-4000-8000-000000000001".into(),
        stack_id: Some("kube-abcde".into()),
        ..Cluster::default()
    }
}

fn nodegroup(name: &str, role: &str) -> NodeGroup {
    NodeGroup {
        name: name.into(),
        role: Some(role.into()),
        ..NodeGroup::default()
    }
}

/// One expected request: method, path (with query), content type, body.
async fn expect(
    handle: &mut Handle,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: Option<Value>,
    reply: Value,
) {
    let (req, send) =
        tokio::time::timeout(std::time::Duration::from_secs(5), handle.next_request())
            .await
            .expect("the driver sent no further request")
            .expect("request");
    assert_eq!(req.method().as_str(), method);
    assert_eq!(req.uri().path_and_query().map(|p| p.as_str()), Some(path));
    let ct = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    assert_eq!(ct.as_deref(), content_type);
    let bytes: Bytes = req.into_body().collect().await.expect("body").to_bytes();
    if let Some(want) = body {
        let got: Value = serde_json::from_slice(&bytes).expect("json body");
        assert_eq!(got, want);
    }
    send.send_response(
        Response::builder()
            .status(status_of(&reply))
            .body(Body::from(serde_json::to_vec(&reply).expect("json")))
            .expect("response"),
    );
}

/// The HTTP status of a reply: a `Status` object's `code`, else 200.
fn status_of(reply: &Value) -> u16 {
    match reply["kind"].as_str() {
        Some("Status") => reply["code"]
            .as_u64()
            .and_then(|c| u16::try_from(c).ok())
            .unwrap_or(500),
        _ => 200,
    }
}

fn cluster_object() -> Value {
    json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
           "metadata": {"name": "kube-abcde", "namespace": "magnum-system"},
           "spec": {"topology": {"classRef": {"name": "c"}, "version": "v1.30.4",
                    "controlPlane": {"replicas": 1},
                    "workers": {"machineDeployments": [{"class": "default-worker", "name": "default-worker", "replicas": 2}]}}}})
}

const CLUSTER_PATH: &str =
    "/apis/cluster.x-k8s.io/v1beta2/namespaces/magnum-system/clusters/kube-abcde";

#[tokio::test]
async fn control_plane_resize_merge_patches_only_the_replicas() {
    let (d, mut handle) = driver();
    let server = tokio::spawn(async move {
        expect(
            &mut handle,
            "GET",
            CLUSTER_PATH,
            None,
            None,
            cluster_object(),
        )
        .await;
        let mut patched = cluster_object();
        patched["metadata"]["generation"] = json!(2);
        expect(
            &mut handle,
            "PATCH",
            &format!("{CLUSTER_PATH}?"),
            Some("application/merge-patch+json"),
            Some(json!({"spec": {"topology": {"controlPlane": {"replicas": 3}}}})),
            patched,
        )
        .await;
    });
    let req = ResizeRequest {
        node_count: 3,
        nodes_to_remove: vec![],
    };
    let p = d
        .resize(&cluster(), &nodegroup("default-master", "master"), &req)
        .await
        .expect("resize");
    match p {
        Progress::Waiting(w) => assert_eq!(w.generation, Some(2)),
        other => panic!("expected a wait on generation 2, got {other:?}"),
    }
    server.await.expect("scenario");
}

#[tokio::test]
async fn worker_resize_reads_then_json_patches_the_named_entry() {
    let (d, mut handle) = driver();
    let server = tokio::spawn(async move {
        expect(
            &mut handle,
            "GET",
            CLUSTER_PATH,
            None,
            None,
            cluster_object(),
        )
        .await;
        expect(
            &mut handle,
            "PATCH",
            &format!("{CLUSTER_PATH}?"),
            Some("application/json-patch+json"),
            Some(json!([
                {"op": "test", "path": "/spec/topology/workers/machineDeployments/0/name", "value": "default-worker"},
                {"op": "replace", "path": "/spec/topology/workers/machineDeployments/0/replicas", "value": 5},
            ])),
            cluster_object(),
        )
        .await;
    });
    let req = ResizeRequest {
        node_count: 5,
        nodes_to_remove: vec![],
    };
    d.resize(&cluster(), &nodegroup("default-worker", "worker"), &req)
        .await
        .expect("resize");
    server.await.expect("scenario");
}

/// The worker list moved between the read and the patch (an entry added before the named
/// one): the API server refuses the patch's test with 422, and the driver builds it again
/// from a fresh read instead of replacing another entry's replicas.
#[tokio::test]
async fn worker_patch_refused_by_its_test_is_built_again_from_a_fresh_read() {
    let (d, mut handle) = driver();
    let server = tokio::spawn(async move {
        expect(
            &mut handle,
            "GET",
            CLUSTER_PATH,
            None,
            None,
            cluster_object(),
        )
        .await;
        expect(
            &mut handle,
            "PATCH",
            &format!("{CLUSTER_PATH}?"),
            Some("application/json-patch+json"),
            Some(json!([
                {"op": "test", "path": "/spec/topology/workers/machineDeployments/0/name", "value": "default-worker"},
                {"op": "replace", "path": "/spec/topology/workers/machineDeployments/0/replicas", "value": 5},
            ])),
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 422,
                   "reason": "Invalid",
                   "message": "the server rejected our request due to an error in our request: test operation failed"}),
        )
        .await;
        let mut moved = cluster_object();
        moved["spec"]["topology"]["workers"]["machineDeployments"] = json!([
            {"class": "default-worker", "name": "big", "replicas": 1},
            {"class": "default-worker", "name": "default-worker", "replicas": 2},
        ]);
        expect(&mut handle, "GET", CLUSTER_PATH, None, None, moved.clone()).await;
        let mut patched = moved;
        patched["metadata"]["generation"] = json!(7);
        expect(
            &mut handle,
            "PATCH",
            &format!("{CLUSTER_PATH}?"),
            Some("application/json-patch+json"),
            Some(json!([
                {"op": "test", "path": "/spec/topology/workers/machineDeployments/1/name", "value": "default-worker"},
                {"op": "replace", "path": "/spec/topology/workers/machineDeployments/1/replicas", "value": 5},
            ])),
            patched,
        )
        .await;
    });
    let req = ResizeRequest {
        node_count: 5,
        nodes_to_remove: vec![],
    };
    let p = d
        .resize(&cluster(), &nodegroup("default-worker", "worker"), &req)
        .await
        .expect("resize");
    match p {
        Progress::Waiting(w) => assert_eq!(w.generation, Some(7)),
        other => panic!("expected a wait on generation 7, got {other:?}"),
    }
    server.await.expect("scenario");
}

#[tokio::test]
async fn control_plane_scale_down_annotates_the_named_machine_first() {
    let (d, mut handle) = driver();
    let server = tokio::spawn(async move {
        control_plane_of_three_read(&mut handle).await;
        expect_cp_2_marked(&mut handle, json!("yes")).await;
        expect_control_plane_to_one(&mut handle, cluster_object()).await;
    });
    let req = ResizeRequest {
        node_count: 1,
        nodes_to_remove: vec!["node-2".into()],
    };
    d.resize(&cluster(), &nodegroup("default-master", "master"), &req)
        .await
        .expect("resize");
    server.await.expect("scenario");
}

const CP_MACHINES_PATH: &str = "/apis/cluster.x-k8s.io/v1beta2/namespaces/magnum-system/machines?&labelSelector=cluster.x-k8s.io%2Fcluster-name%3Dkube-abcde%2Ccluster.x-k8s.io%2Fcontrol-plane";

fn control_plane_machines() -> Value {
    json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineList", "metadata": {},
           "items": [
             {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "metadata": {"name": "kube-abcde-cp-1"},
              "status": {"nodeRef": {"name": "node-1"}}},
             {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "metadata": {"name": "kube-abcde-cp-2"},
              "status": {"nodeRef": {"name": "node-2"}}}]})
}

/// A scale-down's reads: the Cluster at 3 control-plane replicas, then its control plane's
/// Machines (node-1, node-2).
async fn control_plane_of_three_read(handle: &mut Handle) {
    let mut three = cluster_object();
    three["spec"]["topology"]["controlPlane"]["replicas"] = json!(3);
    expect(handle, "GET", CLUSTER_PATH, None, None, three).await;
    expect(
        handle,
        "GET",
        CP_MACHINES_PATH,
        None,
        None,
        control_plane_machines(),
    )
    .await;
}

/// The merge patch that sets (a value) or takes off (null) Machine kube-abcde-cp-2's
/// `cluster.x-k8s.io/delete-machine` annotation.
async fn expect_cp_2_marked(handle: &mut Handle, mark: Value) {
    expect(
        handle,
        "PATCH",
        "/apis/cluster.x-k8s.io/v1beta2/namespaces/magnum-system/machines/kube-abcde-cp-2?",
        Some("application/merge-patch+json"),
        Some(json!({"metadata": {"annotations": {"cluster.x-k8s.io/delete-machine": mark}}})),
        json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
               "metadata": {"name": "kube-abcde-cp-2"}}),
    )
    .await;
}

/// The merge patch of the control plane's replicas to 1, answered with `reply`.
async fn expect_control_plane_to_one(handle: &mut Handle, reply: Value) {
    expect(
        handle,
        "PATCH",
        &format!("{CLUSTER_PATH}?"),
        Some("application/merge-patch+json"),
        Some(json!({"spec": {"topology": {"controlPlane": {"replicas": 1}}}})),
        reply,
    )
    .await;
}

#[tokio::test]
async fn a_refused_replica_patch_takes_the_delete_machine_annotation_off_again() {
    let (d, mut handle) = driver();
    let server = tokio::spawn(async move {
        control_plane_of_three_read(&mut handle).await;
        expect_cp_2_marked(&mut handle, json!("yes")).await;
        // A webhook refuses the replicas.
        let refusal = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 422,
                             "reason": "Invalid", "message": "admission webhook denied the request"});
        expect_control_plane_to_one(&mut handle, refusal).await;
        expect_cp_2_marked(&mut handle, Value::Null).await;
    });
    let req = ResizeRequest {
        node_count: 1,
        nodes_to_remove: vec!["node-2".into()],
    };
    let err = d
        .resize(&cluster(), &nodegroup("default-master", "master"), &req)
        .await
        .expect_err("the patch was refused");
    assert!(
        err.to_string().contains("admission webhook denied"),
        "{err}"
    );
    server.await.expect("scenario");
}

#[tokio::test]
async fn a_node_to_remove_that_is_no_machine_of_the_nodegroup_marks_none() {
    let (d, mut handle) = driver();
    let server = tokio::spawn(async move {
        control_plane_of_three_read(&mut handle).await;
        handle
    });
    // node-2 exists, node-9 does not: not even node-2 is marked.
    let req = ResizeRequest {
        node_count: 1,
        nodes_to_remove: vec!["node-2".into(), "node-9".into()],
    };
    let err = d
        .resize(&cluster(), &nodegroup("default-master", "master"), &req)
        .await
        .expect_err("refused");
    assert_eq!(
        err.to_string(),
        "node node-9 is not a Machine of this nodegroup"
    );
    let mut handle = server.await.expect("scenario");
    drop(d);
    assert!(
        handle.next_request().await.is_none(),
        "no request after the refusal"
    );
}

#[tokio::test]
async fn repeated_control_plane_resize_sends_no_second_patch() {
    let (d, mut handle) = driver();
    let server = tokio::spawn(async move {
        let mut three = cluster_object();
        three["metadata"]["generation"] = json!(4);
        three["spec"]["topology"]["controlPlane"]["replicas"] = json!(3);
        expect(&mut handle, "GET", CLUSTER_PATH, None, None, three).await;
        // Nothing more until the driver (and so its client) is dropped.
        assert!(
            handle.next_request().await.is_none(),
            "a second request was sent"
        );
    });
    let req = ResizeRequest {
        node_count: 3,
        nodes_to_remove: vec!["node-2".into()],
    };
    let p = d
        .resize(&cluster(), &nodegroup("default-master", "master"), &req)
        .await
        .expect("resize");
    match p {
        Progress::Waiting(w) => assert_eq!(w.generation, Some(4)),
        other => panic!("expected a wait on generation 4, got {other:?}"),
    }
    drop(d);
    server.await.expect("scenario");
}

#[tokio::test]
async fn upgrade_patches_the_new_templates_kube_tag_not_the_clusters_old_copy() {
    let (d, mut handle) = driver();
    let server = tokio::spawn(async move {
        expect(
            &mut handle,
            "GET",
            CLUSTER_PATH,
            None,
            None,
            cluster_object(),
        )
        .await;
        let mut patched = cluster_object();
        patched["metadata"]["generation"] = json!(3);
        expect(
            &mut handle,
            "PATCH",
            &format!("{CLUSTER_PATH}?"),
            Some("application/merge-patch+json"),
            Some(json!({"spec": {"topology": {"version": "v1.31.0"}}})),
            patched,
        )
        .await;
    });
    // Magnum copies the template's labels into the cluster at create: the cluster still says
    // the old kube_tag when it is upgraded to a template with a newer one.
    let mut c = cluster();
    c.labels = json!({"kube_tag": "v1.30.4"}).as_object().cloned();
    let template = crate::model::ClusterTemplate {
        labels: json!({"kube_tag": "v1.31.0"}).as_object().cloned(),
        ..crate::model::ClusterTemplate::default()
    };
    let p = d
        .upgrade(&c, &template, &nodegroup("default-master", "master"), 1)
        .await
        .expect("upgrade");
    match p {
        Progress::Waiting(w) => assert_eq!(w.generation, Some(3)),
        other => panic!("expected a wait on generation 3, got {other:?}"),
    }
    server.await.expect("scenario");
}
