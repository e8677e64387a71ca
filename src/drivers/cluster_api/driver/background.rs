//! The ClusterAPI driver's background work: a controller per management cluster (its watch
//! caches and reconciles), the verdicts and facts read from the caches (no request is
//! sent), the Lease among replicas, and the reachability `/readyz` reports.

use std::time::Duration;

use async_trait::async_trait;
use kube::api::ListParams;
use tokio::task::JoinHandle;

use super::{ng_ref, KubeClusterApiDriver};
use crate::drivers::cluster_api::client::count_kube_error;
use crate::drivers::cluster_api::progress::{self, Awaited};
use crate::drivers::cluster_api::{controller, leader, status};
use crate::drivers::{
    Background, Facts, InFlight, ManagementStatus, NodeGroupRef, StackReconciler, Verdict,
};
use crate::model::Cluster;

#[async_trait]
impl Background for KubeClusterApiDriver {
    fn leadership(&self) -> Option<tokio::sync::watch::Receiver<bool>> {
        let cfg = self.election.clone()?;
        let mc = self.management.first()?;
        let mut slot = self.leadership.lock().ok()?;
        let election =
            slot.get_or_insert_with(|| std::sync::Arc::new(leader::run(mc.client.clone(), cfg)));
        Some(election.leading.clone())
    }

    async fn step_down(&self) {
        let election = self.leadership.lock().ok().and_then(|slot| slot.clone());
        if let Some(e) = election {
            e.step_down().await;
        }
    }

    async fn management_status(&self) -> Vec<ManagementStatus> {
        let leader = match &self.election {
            None => true,
            Some(_) => self
                .leadership
                .lock()
                .ok()
                .and_then(|slot| slot.as_ref().map(|e| *e.leading.borrow()))
                .unwrap_or(false),
        };
        let mut out = Vec::new();
        for mc in &self.management {
            // A call the driver itself makes (and its Role allows): the answer shows both
            // that the API server is reachable and that the credentials still work.
            let probe = self
                .api(mc, &self.resources.cluster)
                .list(&ListParams::default().limit(1))
                .await;
            if let Err(e) = &probe {
                count_kube_error("request", e);
            }
            out.push(ManagementStatus {
                name: mc.name.clone(),
                connected: probe.is_ok(),
                leader,
            });
        }
        out
    }

    fn run_controllers(
        &self,
        reconciler: std::sync::Arc<dyn StackReconciler>,
    ) -> Vec<JoinHandle<()>> {
        let mut handles = Vec::new();
        let mut running = Vec::new();
        for mc in &self.management {
            let (r, tasks) = controller::start(
                &mc.client,
                &mc.namespace,
                &self.resources,
                &mc.name,
                std::sync::Arc::clone(&reconciler),
            );
            running.push(r);
            handles.extend(tasks);
        }
        if let Ok(mut slot) = self.running.lock() {
            *slot = running;
        }
        handles
    }

    fn look_again(&self, cluster: &Cluster) -> bool {
        let stack = cluster.stack_id.as_deref().filter(|s| !s.is_empty());
        match (self.running_for(cluster), stack) {
            (Some(r), Some(stack)) => {
                r.look_at(stack);
                true
            }
            _ => false,
        }
    }

    fn observe(&self, op: &InFlight<'_>) -> Verdict {
        let Some(cache) = self.synced_cache(op.cluster) else {
            return Verdict::Unknown;
        };
        let Some(stack) = op.cluster.stack_id.as_deref().filter(|s| !s.is_empty()) else {
            return Verdict::Unknown;
        };
        let view = cache.view(stack);
        let control_plane_count = op
            .nodegroups
            .iter()
            .find(|n| n.is_master() && n.is_default())
            .map_or(1, |n| n.node_count);
        let workers = op
            .nodegroups
            .iter()
            .filter(|n| !n.is_master())
            .map(|n| (n.name.as_str(), n.node_count))
            .collect();
        progress::verdict(
            &view,
            &Awaited {
                kind: op.kind,
                nodegroup: op.nodegroup.map(ng_ref),
                control_plane_count,
                workers,
                target_count: op.target_count,
                target_version: op.target_version,
                generation: op.generation,
            },
        )
    }

    fn facts(&self, cluster: &Cluster) -> Option<Facts> {
        let cache = self.synced_cache(cluster)?;
        let stack = cluster.stack_id.as_deref().filter(|s| !s.is_empty())?;
        let view = cache.view(stack);
        let api_address = view.cluster.as_deref().and_then(status::api_address);
        let coe_version = view
            .control_plane
            .as_ref()
            .and_then(|k| k.status.version.clone());
        let mut groups = vec![NodeGroupRef::ControlPlane];
        groups.extend(
            view.deployments
                .iter()
                .filter_map(|d| d.labels.deployment_name.clone().map(NodeGroupRef::Worker)),
        );
        let addresses = groups
            .into_iter()
            .map(|g| {
                let mut a: Vec<String> = view
                    .machines_of(&g)
                    .flat_map(status::machine_addresses)
                    .collect();
                a.sort();
                (g, a)
            })
            .collect();
        Some(Facts {
            api_address,
            coe_version,
            addresses,
        })
    }

    fn progress_deadline(&self) -> Duration {
        self.deadline
    }
}
