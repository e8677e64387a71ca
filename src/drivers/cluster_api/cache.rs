//! The driver's view of one management cluster: kube-runtime reflector stores of the
//! Clusters, KubeadmControlPlanes, MachineDeployments and Machines of its namespace, kept by
//! one watch per kind (no per-cluster requests). Each change names the workload cluster it
//! belongs to, so that the reconciler looks at that cluster only; a (re)list ends with
//! [`Change::All`], because deletions during a gap show only as absence.
//!
//! Sized for thousands of clusters on one management cluster (bench/kube):
//! - objects are parsed into [`SlimObject`]: only the fields the driver reads are kept;
//! - an index from workload cluster to object names ([`Index`]), kept from the same events,
//!   makes [`StackCache::view`] read one cluster's objects instead of scanning the stores.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::StreamExt as _;
use kube::api::{Api, ApiResource};
use kube::runtime::reflector::{self, store::Writer, ObjectRef, Store};
use kube::runtime::utils::Backoff;
use kube::runtime::{watcher, WatchStreamExt as _};
use kube::ResourceExt as _;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::progress::StackView;
use super::slim::SlimObject;
use super::topology::Resources;
use crate::drivers::Change;

/// Object names by workload cluster (and each name's cluster), for one kind.
#[derive(Debug, Default)]
struct Index {
    by_stack: HashMap<String, BTreeSet<String>>,
    stack_of: HashMap<String, Option<String>>,
}

impl Index {
    fn insert(&mut self, name: &str, stack: Option<&str>) {
        self.remove(name);
        if let Some(s) = stack {
            self.by_stack
                .entry(s.to_string())
                .or_default()
                .insert(name.to_string());
        }
        self.stack_of
            .insert(name.to_string(), stack.map(str::to_string));
    }

    fn remove(&mut self, name: &str) {
        if let Some(Some(s)) = self.stack_of.remove(name) {
            if let Some(set) = self.by_stack.get_mut(&s) {
                set.remove(name);
                if set.is_empty() {
                    self.by_stack.remove(&s);
                }
            }
        }
    }

    fn names(&self, stack: &str) -> Vec<String> {
        self.by_stack
            .get(stack)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn len(&self) -> usize {
        self.stack_of.len()
    }
}

/// Delays between a watch's attempts to reconnect: 0.5 s, doubling up to 5 s, back to 0.5 s
/// after a success. kube-runtime's default grows to 30 s; after a kube-apiserver restart
/// with 5,000 clusters that left the fleet unwatched for 36 s (bench/kube). Four watches
/// retrying every 5 s are no burden to an API server that is coming up.
#[derive(Debug)]
struct Reconnect {
    next: Duration,
}

const RECONNECT_MIN: Duration = Duration::from_millis(500);
const RECONNECT_MAX: Duration = Duration::from_secs(5);

impl Default for Reconnect {
    fn default() -> Self {
        Reconnect {
            next: RECONNECT_MIN,
        }
    }
}

impl Iterator for Reconnect {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let d = self.next;
        self.next = (self.next * 2).min(RECONNECT_MAX);
        Some(d)
    }
}

impl Backoff for Reconnect {
    fn reset(&mut self) {
        self.next = RECONNECT_MIN;
    }
}

/// One kind's store, its index and whether its first list has been seen.
#[derive(Clone)]
struct Kind {
    store: Store<SlimObject>,
    index: Arc<RwLock<Index>>,
    resource: ApiResource,
    synced: Arc<AtomicBool>,
}

impl Kind {
    fn get(&self, namespace: &str, name: &str) -> Option<Value> {
        self.store
            .get(&ObjectRef::new_with(name, self.resource.clone()).within(namespace))
            .and_then(|o| o.to_value())
    }

    fn of_stack(&self, namespace: &str, stack: &str) -> Vec<Value> {
        let names = self
            .index
            .read()
            .map(|i| i.names(stack))
            .unwrap_or_default();
        names
            .iter()
            .filter_map(|n| self.get(namespace, n))
            .collect()
    }
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
        let ns = &self.namespace;
        let cluster = self.clusters.get(ns, stack);
        // The Cluster names its control plane; before the topology controller wrote the
        // reference, the label finds it.
        let control_plane = cluster
            .as_ref()
            .and_then(|c| {
                c.pointer("/spec/controlPlaneRef/name")
                    .and_then(Value::as_str)
            })
            .and_then(|n| self.control_planes.get(ns, n))
            .or_else(|| self.control_planes.of_stack(ns, stack).into_iter().next());
        StackView {
            cluster,
            control_plane,
            deployments: self.deployments.of_stack(ns, stack),
            machines: self.machines.of_stack(ns, stack),
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
        let writer: Writer<SlimObject> = Writer::new(ar.clone());
        let k = Kind {
            store: writer.as_reader(),
            index: Arc::default(),
            resource: ar.clone(),
            synced: Arc::new(AtomicBool::new(false)),
        };
        let api: Api<SlimObject> = Api::namespaced_with(client.clone(), namespace, ar);
        let synced = Arc::clone(&k.synced);
        let index = Arc::clone(&k.index);
        let changes = changes.clone();
        let mc = management.to_string();
        let plural = ar.plural.clone();
        handles.push(tokio::spawn(async move {
            let stack_of = move |o: &SlimObject| {
                if is_cluster {
                    Some(o.name_any())
                } else {
                    o.labels.cluster_name.clone()
                }
            };
            let stream = watcher(api, watcher::Config::default()).backoff(Reconnect::default());
            let mut stream = reflector::reflector(writer, stream).boxed();
            // A (re)list builds a new index; it replaces the live one when the list is
            // complete, as the store does.
            let mut listing: Option<Index> = None;
            let set_gauge = |index: &Arc<RwLock<Index>>| {
                let n = index.read().map(|i| i.len()).unwrap_or(0);
                crate::telemetry::metrics::watch_cache(&mc, &plural, true, n);
            };
            while let Some(event) = stream.next().await {
                match event {
                    Ok(watcher::Event::Init) => listing = Some(Index::default()),
                    Ok(watcher::Event::InitApply(o)) => {
                        if let Some(l) = listing.as_mut() {
                            l.insert(&o.name_any(), stack_of(&o).as_deref());
                        }
                    }
                    Ok(watcher::Event::InitDone) => {
                        if let (Some(l), Ok(mut live)) = (listing.take(), index.write()) {
                            *live = l;
                        }
                        synced.store(true, Ordering::Release);
                        set_gauge(&index);
                        tracing::debug!(management_cluster = %mc, kind = %plural, "listed");
                        let _ = changes.send(Change::All);
                    }
                    Ok(watcher::Event::Apply(o)) => {
                        let stack = stack_of(&o);
                        if let Ok(mut i) = index.write() {
                            i.insert(&o.name_any(), stack.as_deref());
                        }
                        set_gauge(&index);
                        if let Some(stack) = stack {
                            let _ = changes.send(Change::Stack(stack));
                        }
                    }
                    Ok(watcher::Event::Delete(o)) => {
                        if let Ok(mut i) = index.write() {
                            i.remove(&o.name_any());
                        }
                        set_gauge(&index);
                        if let Some(stack) = stack_of(&o) {
                            let _ = changes.send(Change::Stack(stack));
                        }
                    }
                    Err(e) => {
                        super::client::count_watch_error(&e);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconnect_delays_double_up_to_five_seconds_and_reset() {
        let mut r = Reconnect::default();
        let first: Vec<u64> = (0..6)
            .filter_map(|_| r.next())
            .map(|d| d.as_millis() as u64)
            .collect();
        assert_eq!(first, vec![500, 1000, 2000, 4000, 5000, 5000]);
        r.reset();
        assert_eq!(r.next(), Some(Duration::from_millis(500)));
    }

    #[test]
    fn index_follows_inserts_moves_and_deletes() {
        let mut i = Index::default();
        i.insert("m1", Some("a"));
        i.insert("m2", Some("a"));
        i.insert("m3", Some("b"));
        i.insert("x", None);
        assert_eq!(i.names("a"), vec!["m1", "m2"]);
        assert_eq!(i.len(), 4);
        // a label change moves the object
        i.insert("m2", Some("b"));
        assert_eq!(i.names("a"), vec!["m1"]);
        assert_eq!(i.names("b"), vec!["m2", "m3"]);
        i.remove("m1");
        assert!(i.names("a").is_empty());
        assert!(!i.by_stack.contains_key("a"));
        assert_eq!(i.len(), 3);
    }
}
