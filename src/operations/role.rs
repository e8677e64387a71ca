//! The conductor role of a replica: what runs while it may drive the backends (the
//! operations worker, the drivers' watchers and reconciler, the service report), and when.
//! Without leader election it runs from start to stop; with it, only while this replica
//! holds the lease, and a graceful stop gives the lease up.

use super::Conductor;

/// Runs what Magnum's conductor does (the operations worker and the drivers' watchers,
/// after adopting work another conductor began) until `stop` turns true.
async fn conduct(state: Conductor, stop: tokio::sync::watch::Receiver<bool>) {
    // Before the controllers list: what they reconcile first includes the adopted work.
    super::adoption::adopt_in_flight(&state).await;
    let watchers = super::start_controllers(&state);
    let heartbeat = tokio::spawn(crate::mservice::heartbeat(
        state.store.clone(),
        state.config.service.clone(),
        stop.clone(),
    ));
    super::run_worker(state, stop).await;
    let _ = heartbeat.await;
    for w in watchers {
        w.abort();
    }
}

/// Runs the conductor role: always, or only while this replica leads when a driver asks
/// for leader election; on a graceful stop the leadership is given up.
pub async fn run(state: Conductor, shutdown: tokio::sync::watch::Receiver<bool>) {
    let leadership = state.drivers.drivers().iter().find_map(|d| d.leadership());
    let Some(leading) = leadership else {
        conduct(state, shutdown).await;
        return;
    };
    lead_while_elected(state.clone(), leading, shutdown).await;
    // A graceful stop gives the Lease up, so the next replica leads at its next round.
    for d in state.drivers.drivers() {
        d.step_down().await;
    }
}

/// Runs the conductor's work while this replica holds the leadership, until `shutdown`.
async fn lead_while_elected(
    state: Conductor,
    mut leading: tokio::sync::watch::Receiver<bool>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        while !*leading.borrow() {
            tokio::select! {
                r = leading.changed() => if r.is_err() { return },
                _ = shutdown.changed() => return,
            }
        }
        tracing::info!("leading: running the operations worker and the watchers");
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(conduct(state.clone(), stop_rx));
        loop {
            tokio::select! {
                r = leading.changed() => if r.is_err() || !*leading.borrow() { break },
                _ = shutdown.changed() => {
                    let _ = stop_tx.send(true);
                    let _ = task.await;
                    return;
                }
            }
        }
        tracing::warn!("lost leadership: stopping the operations worker and the watchers");
        let _ = stop_tx.send(true);
        let _ = task.await;
    }
}
