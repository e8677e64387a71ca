//! The driver's view of one management cluster: kube-runtime reflector stores of the
//! Clusters, KubeadmControlPlanes, MachineDeployments and Machines of its namespace, kept by
//! one watch per kind (no per-cluster requests). Each change names the workload cluster it
//! belongs to, so that the reconciler looks at that cluster only; a (re)list ends with
//! [`Change::All`], because deletions during a gap show only as absence.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures::StreamExt as _;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::reflector::{self, store::Writer, ObjectRef, Store};
use kube::runtime::{watcher, WatchStreamExt as _};
use kube::ResourceExt as _;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::progress::StackView;
use super::topology::{Resources, CLUSTER_NAME_LABEL};
use crate::drivers::Change;

/// One kind's store and whether its first list has been seen.
#[derive(Clone)]
struct Kind {
    store: Store<DynamicObject>,
    resource: ApiResource,
    synced: Arc<AtomicBool>,
}

/// The four stores of one management cluster.
#[derive(Clone)]
pub struct StackCache {
    namespace: String,
    clusters: Kind,
    control_planes: Kind,
    deployments: Kind,
    machines: Kind,
}

fn to_value(o: &DynamicObject) -> Option<Value> {
    serde_json::to_value(o).ok()
}

impl StackCache {
    /// Whether every store holds a complete list (until then nothing is concluded from
    /// absence).
    pub fn synced(&self) -> bool {
        [
            &self.clusters,
            &self.control_planes,
            &self.deployments,
            &self.machines,
        ]
        .iter()
        .all(|k| k.synced.load(Ordering::Acquire))
    }

    /// Everything of one workload cluster.
    pub fn view(&self, stack: &str) -> StackView {
        let get = |k: &Kind, name: &str| {
            k.store
                .get(&ObjectRef::new_with(name, k.resource.clone()).within(&self.namespace))
                .and_then(|o| to_value(&o))
        };
        let of_stack = |k: &Kind| -> Vec<Value> {
            k.store
                .state_filter(|o| {
                    o.labels().get(CLUSTER_NAME_LABEL).map(String::as_str) == Some(stack)
                })
                .iter()
                .filter_map(|o| to_value(o))
                .collect()
        };
        let cluster = get(&self.clusters, stack);
        // The Cluster names its control plane; before the topology controller wrote the
        // reference, the label finds it.
        let control_plane = cluster
            .as_ref()
            .and_then(|c| {
                c.pointer("/spec/controlPlaneRef/name")
                    .and_then(Value::as_str)
            })
            .and_then(|n| get(&self.control_planes, n))
            .or_else(|| of_stack(&self.control_planes).into_iter().next());
        StackView {
            cluster,
            control_plane,
            deployments: of_stack(&self.deployments),
            machines: of_stack(&self.machines),
        }
    }
}

/// Starts the four watches of one management cluster; changes go to `changes`.
pub fn start(
    client: &kube::Client,
    namespace: &str,
    resources: &Resources,
    management: &str,
    changes: mpsc::UnboundedSender<Change>,
) -> (StackCache, Vec<JoinHandle<()>>) {
    let mut handles = Vec::new();
    let mut kind = |ar: &ApiResource, is_cluster: bool| {
        let writer: Writer<DynamicObject> = Writer::new(ar.clone());
        let k = Kind {
            store: writer.as_reader(),
            resource: ar.clone(),
            synced: Arc::new(AtomicBool::new(false)),
        };
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, ar);
        let synced = Arc::clone(&k.synced);
        let changes = changes.clone();
        let mc = management.to_string();
        let plural = ar.plural.clone();
        handles.push(tokio::spawn(async move {
            // managedFields are never read: not kept (a large part of each object).
            let stream = watcher(api, watcher::Config::default())
                .default_backoff()
                .modify(|o| o.managed_fields_mut().clear());
            let mut stream = reflector::reflector(writer, stream).boxed();
            while let Some(event) = stream.next().await {
                match event {
                    Ok(watcher::Event::Apply(o) | watcher::Event::Delete(o)) => {
                        let stack = if is_cluster {
                            Some(o.name_any())
                        } else {
                            o.labels().get(CLUSTER_NAME_LABEL).cloned()
                        };
                        if let Some(stack) = stack {
                            let _ = changes.send(Change::Stack(stack));
                        }
                    }
                    Ok(watcher::Event::InitDone) => {
                        synced.store(true, Ordering::Release);
                        tracing::debug!(management_cluster = %mc, kind = %plural, "listed");
                        let _ = changes.send(Change::All);
                    }
                    Ok(_) => {}
                    Err(e) => {
                        super::kube_driver::count_watch_error(&e);
                        tracing::warn!(management_cluster = %mc, kind = %plural, error = %e,
                            "watch error; retrying");
                    }
                }
                if changes.is_closed() {
                    break;
                }
            }
        }));
        k
    };
    let cache = StackCache {
        namespace: namespace.to_string(),
        clusters: kind(&resources.cluster, true),
        control_planes: kind(&resources.control_plane, false),
        deployments: kind(&resources.machine_deployment, false),
        machines: kind(&resources.machine, false),
    };
    (cache, handles)
}
