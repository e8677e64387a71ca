//! The driver's view of one management cluster: kube-runtime reflector stores of the
//! Clusters, KubeadmControlPlanes, MachineDeployments and Machines of its namespace, kept by
//! one watch per kind (no per-cluster requests). Each watch also yields the objects whose
//! change the controller ([`super::controller`]) must look at: every change after the first
//! list, and on a relist only what differs from what was held before (an object whose
//! resourceVersion changed, or one that is gone), so that neither a start nor a relist
//! makes the conductor read the store once per cluster of the fleet.
//!
//! Sized for thousands of clusters on one management cluster (bench/kube):
//! - objects are parsed into [`SlimObject`]: only the fields the driver reads are kept;
//! - an index from workload cluster to object names ([`Index`]), kept from the same events,
//!   makes [`StackCache::view`] read one cluster's objects instead of scanning the stores.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeSet, HashMap};
use std::hash::{Hash as _, Hasher as _};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::StreamExt as _;
use kube::api::{Api, ApiResource};
use kube::runtime::reflector::{self, store::Writer, ObjectRef, Store};
use kube::runtime::utils::Backoff;
use kube::runtime::{watcher, WatchStreamExt as _};
use kube::ResourceExt as _;
use tokio::sync::watch;

use super::progress::StackView;
use super::slim::{Labels, SlimObject};
use super::topology::Resources;

/// Object names by workload cluster (and each name's cluster and a hash of its
/// resourceVersion), for one kind.
#[derive(Debug, Default)]
struct Index {
    by_stack: HashMap<String, BTreeSet<String>>,
    stack_of: HashMap<String, (Option<String>, u64)>,
}

fn version_hash(o: &SlimObject) -> u64 {
    let mut h = DefaultHasher::new();
    o.metadata.resource_version.hash(&mut h);
    h.finish()
}

impl Index {
    fn insert(&mut self, name: &str, stack: Option<&str>, version: u64) {
        self.remove(name);
        if let Some(s) = stack {
            self.by_stack
                .entry(s.to_string())
                .or_default()
                .insert(name.to_string());
        }
        self.stack_of
            .insert(name.to_string(), (stack.map(str::to_string), version));
    }

    fn remove(&mut self, name: &str) {
        if let Some((Some(s), _)) = self.stack_of.remove(name) {
            if let Some(set) = self.by_stack.get_mut(&s) {
                set.remove(name);
                if set.is_empty() {
                    self.by_stack.remove(&s);
                }
            }
        }
    }

    /// Whether `name` is held at this resourceVersion.
    fn holds(&self, name: &str, version: u64) -> bool {
        self.stack_of.get(name).is_some_and(|(_, v)| *v == version)
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
    fn get(&self, namespace: &str, name: &str) -> Option<Arc<SlimObject>> {
        self.store
            .get(&ObjectRef::new_with(name, self.resource.clone()).within(namespace))
    }

    fn of_stack(&self, namespace: &str, stack: &str) -> Vec<Arc<SlimObject>> {
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
            .and_then(|c| c.spec.control_plane_ref.as_ref()?.name.as_deref())
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

/// What one kind's watch yields to the controller: objects to look at (their cluster is
/// the one to reconcile), as kube-runtime's trigger streams take them.
pub type Triggers = futures::stream::BoxStream<'static, Result<SlimObject, watcher::Error>>;

/// The four watches of one management cluster, not yet polled: the view they keep, one
/// trigger stream per kind (Cluster, KubeadmControlPlane, MachineDeployment, Machine), and
/// how many kinds have completed their first list.
pub struct Watches {
    pub cache: StackCache,
    pub clusters: Triggers,
    pub control_planes: Triggers,
    pub deployments: Triggers,
    pub machines: Triggers,
    pub kinds_listed: watch::Receiver<usize>,
}

impl StackCache {
    /// The reflector store of the Clusters (the controller's own objects).
    pub fn cluster_store(&self) -> Store<SlimObject> {
        self.clusters.store.clone()
    }
}

/// Builds the four watches of one management cluster.
pub fn watch_all(
    client: &kube::Client,
    namespace: &str,
    resources: &Resources,
    management: &str,
) -> Watches {
    let (listed_tx, kinds_listed) = watch::channel(0usize);
    let listed_tx = Arc::new(listed_tx);
    let kind = |ar: &ApiResource, is_cluster: bool| {
        let writer: Writer<SlimObject> = Writer::new(ar.clone());
        let k = Kind {
            store: writer.as_reader(),
            index: Arc::default(),
            resource: ar.clone(),
            synced: Arc::new(AtomicBool::new(false)),
        };
        let api: Api<SlimObject> = Api::namespaced_with(client.clone(), namespace, ar);
        let mut follow = Follow {
            synced: Arc::clone(&k.synced),
            index: Arc::clone(&k.index),
            listing: None,
            changed: Vec::new(),
            is_cluster,
            namespace: namespace.to_string(),
            management: management.to_string(),
            plural: ar.plural.clone(),
            listed: Arc::clone(&listed_tx),
        };
        let stream = watcher(api, watcher::Config::default()).backoff(Reconnect::default());
        let triggers = reflector::reflector(writer, stream)
            .flat_map(move |event| futures::stream::iter(follow.event(event)))
            .map(Ok)
            .boxed();
        (k, triggers)
    };
    let (clusters, cluster_triggers) = kind(&resources.cluster, true);
    let (control_planes, cp_triggers) = kind(&resources.control_plane, false);
    let (deployments, md_triggers) = kind(&resources.machine_deployment, false);
    let (machines, machine_triggers) = kind(&resources.machine, false);
    Watches {
        cache: StackCache {
            namespace: namespace.to_string(),
            clusters,
            control_planes,
            deployments,
            machines,
        },
        clusters: cluster_triggers,
        control_planes: cp_triggers,
        deployments: md_triggers,
        machines: machine_triggers,
        kinds_listed,
    }
}

/// One kind's watch events turned into its index, its gauge and its triggers.
struct Follow {
    synced: Arc<AtomicBool>,
    index: Arc<RwLock<Index>>,
    /// The index a (re)list builds; it replaces the live one when the list is complete, as
    /// the store does.
    listing: Option<Index>,
    /// What a relist found changed, triggered when it is complete: until then the store
    /// still holds what it held before the relist (kube-runtime swaps it in at the end).
    changed: Vec<SlimObject>,
    is_cluster: bool,
    namespace: String,
    management: String,
    plural: String,
    listed: Arc<watch::Sender<usize>>,
}

impl Follow {
    fn stack_of(&self, o: &SlimObject) -> Option<String> {
        if self.is_cluster {
            Some(o.name_any())
        } else {
            o.labels.cluster_name.clone()
        }
    }

    /// An object that stands for `name` of `stack` when only its absence was seen.
    fn gone(&self, name: &str, stack: &str) -> SlimObject {
        let mut o = SlimObject::default();
        o.metadata.name = Some(name.to_string());
        o.metadata.namespace = Some(self.namespace.clone());
        o.labels = Labels {
            cluster_name: Some(stack.to_string()),
            ..Labels::default()
        };
        o
    }

    fn set_gauge(&self) {
        let n = self.index.read().map(|i| i.len()).unwrap_or(0);
        crate::telemetry::metrics::watch_cache(&self.management, &self.plural, true, n);
    }

    /// What an event changes; returns the objects whose cluster is to be looked at.
    fn event(
        &mut self,
        event: Result<watcher::Event<SlimObject>, watcher::Error>,
    ) -> Vec<SlimObject> {
        let was_synced = self.synced.load(Ordering::Acquire);
        match event {
            Ok(watcher::Event::Init) => {
                self.listing = Some(Index::default());
                self.changed.clear();
                Vec::new()
            }
            Ok(watcher::Event::InitApply(o)) => {
                let (name, version, stack) = (o.name_any(), version_hash(&o), self.stack_of(&o));
                if let Some(l) = self.listing.as_mut() {
                    l.insert(&name, stack.as_deref(), version);
                }
                // The first list is looked at through what waits in the store (the
                // controller's start); a relist only through what changed in the gap, once
                // it is complete.
                let unchanged = self.index.read().is_ok_and(|i| i.holds(&name, version));
                if was_synced && !unchanged && stack.is_some() {
                    self.changed.push(o);
                }
                Vec::new()
            }
            Ok(watcher::Event::InitDone) => {
                let mut gone = Vec::new();
                if let (Some(l), Ok(mut live)) = (self.listing.take(), self.index.write()) {
                    if was_synced {
                        for (name, (stack, _)) in &live.stack_of {
                            if let (Some(stack), false) = (stack, l.stack_of.contains_key(name)) {
                                gone.push((name.clone(), stack.clone()));
                            }
                        }
                    }
                    *live = l;
                }
                self.synced.store(true, Ordering::Release);
                self.set_gauge();
                // Every complete list counts, the first of a new leader's watches too.
                crate::telemetry::metrics::reconcile_pass("relist");
                if !was_synced {
                    self.listed.send_modify(|n| *n += 1);
                }
                tracing::debug!(management_cluster = %self.management, kind = %self.plural, "listed");
                let mut triggers = std::mem::take(&mut self.changed);
                triggers.extend(gone.iter().map(|(name, stack)| self.gone(name, stack)));
                triggers
            }
            Ok(watcher::Event::Apply(o)) => {
                let stack = self.stack_of(&o);
                if let Ok(mut i) = self.index.write() {
                    i.insert(&o.name_any(), stack.as_deref(), version_hash(&o));
                }
                self.set_gauge();
                stack.map(|_| o).into_iter().collect()
            }
            Ok(watcher::Event::Delete(o)) => {
                if let Ok(mut i) = self.index.write() {
                    i.remove(&o.name_any());
                }
                self.set_gauge();
                self.stack_of(&o).map(|_| o).into_iter().collect()
            }
            Err(e) => {
                super::client::count_watch_error(&e);
                tracing::warn!(management_cluster = %self.management, kind = %self.plural,
                    error = %e, "watch error; retrying");
                Vec::new()
            }
        }
    }
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

    fn machine(name: &str, stack: &str, version: &str) -> SlimObject {
        let mut o = SlimObject::default();
        o.metadata.name = Some(name.into());
        o.metadata.resource_version = Some(version.into());
        o.labels.cluster_name = Some(stack.into());
        o
    }

    fn names(triggers: &[SlimObject]) -> Vec<(String, Option<String>)> {
        triggers
            .iter()
            .map(|o| (o.name_any(), o.labels.cluster_name.clone()))
            .collect()
    }

    #[test]
    fn the_first_list_triggers_nothing_and_a_relist_what_changed_or_went_once_complete() {
        let (listed_tx, listed) = watch::channel(0usize);
        let mut f = Follow {
            synced: Arc::new(AtomicBool::new(false)),
            index: Arc::default(),
            listing: None,
            changed: Vec::new(),
            is_cluster: false,
            namespace: "ns".into(),
            management: "mc".into(),
            plural: "machines".into(),
            listed: Arc::new(listed_tx),
        };
        let mut ev = |e: watcher::Event<SlimObject>| f.event(Ok(e));
        // The first list: looked at through the store at the controller's start.
        assert!(ev(watcher::Event::Init).is_empty());
        assert!(ev(watcher::Event::InitApply(machine("m1", "a", "1"))).is_empty());
        assert!(ev(watcher::Event::InitApply(machine("m2", "b", "1"))).is_empty());
        assert!(ev(watcher::Event::InitApply(machine("m3", "c", "1"))).is_empty());
        assert!(ev(watcher::Event::InitDone).is_empty());
        assert_eq!(*listed.borrow(), 1);
        // A change after the list.
        assert_eq!(
            names(&ev(watcher::Event::Apply(machine("m1", "a", "2")))),
            vec![("m1".to_string(), Some("a".to_string()))]
        );
        // A relist: m1 unchanged, m2 changed in the gap, m3 gone; nothing until it is
        // complete (the store swaps the list in then).
        assert!(ev(watcher::Event::Init).is_empty());
        assert!(ev(watcher::Event::InitApply(machine("m1", "a", "2"))).is_empty());
        assert!(ev(watcher::Event::InitApply(machine("m2", "b", "5"))).is_empty());
        assert_eq!(
            names(&ev(watcher::Event::InitDone)),
            vec![
                ("m2".to_string(), Some("b".to_string())),
                ("m3".to_string(), Some("c".to_string()))
            ]
        );
        assert_eq!(*listed.borrow(), 1, "a relist is not a first list");
    }

    #[test]
    fn index_follows_inserts_moves_and_deletes() {
        let mut i = Index::default();
        i.insert("m1", Some("a"), 1);
        i.insert("m2", Some("a"), 1);
        i.insert("m3", Some("b"), 1);
        i.insert("x", None, 1);
        assert_eq!(i.names("a"), vec!["m1", "m2"]);
        assert_eq!(i.len(), 4);
        // a label change moves the object
        i.insert("m2", Some("b"), 2);
        assert!(i.holds("m2", 2) && !i.holds("m2", 1));
        assert_eq!(i.names("a"), vec!["m1"]);
        assert_eq!(i.names("b"), vec!["m2", "m3"]);
        i.remove("m1");
        assert!(i.names("a").is_empty());
        assert!(!i.by_stack.contains_key("a"));
        assert_eq!(i.len(), 3);
    }
}
