//! The HTTP listener: HTTP/1.1 connections with a deadline for request headers (which
//! also ends idle keep-alive connections), deadlines for each request's body and answer
//! ([`deadline`]), a cap on open connections and one per peer ([`peers`]), and a graceful
//! shutdown that lasts at most `shutdown_timeout`. All of it happens before
//! authentication, so a client that opens sockets and sends nothing, or a few bytes at a
//! time, cannot take the service away from others, nor keep the process from stopping.

pub mod deadline;
pub mod peers;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;

use crate::config::ApiConfig;
use deadline::Deadlines;
use peers::{Peer, PeerSlot, PeerSlots};

/// What one connection may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// A request's headers must have arrived this long after the connection opened or the
    /// previous response was sent; otherwise the connection is closed. This is the
    /// keep-alive idle timeout too.
    pub header_read_timeout: Duration,
    /// Connections open at once; a new one beyond this is closed at once.
    pub max_connections: usize,
    /// Connections open at once from one peer ([`Peer`]); a new one beyond this is closed
    /// at once.
    pub max_connections_per_peer: usize,
    /// A request's body and answer deadlines.
    pub deadlines: Deadlines,
    /// After shutdown begins, how long open connections get to finish their requests.
    pub shutdown_timeout: Duration,
}

impl ConnectionLimits {
    pub fn of(api: &ApiConfig) -> Self {
        let secs = |s: u64| Duration::from_secs(s.max(1));
        ConnectionLimits {
            header_read_timeout: secs(api.header_read_timeout),
            max_connections: api.max_connections.max(1),
            max_connections_per_peer: api.max_connections_per_peer.max(1),
            deadlines: Deadlines {
                body: secs(api.body_read_timeout),
                request: secs(api.request_timeout),
            },
            shutdown_timeout: Duration::from_secs(api.shutdown_timeout),
        }
    }
}

/// What a connection holds while it is open: its place under both caps.
struct Admission {
    _global: OwnedSemaphorePermit,
    _peer: PeerSlot,
}

/// Accepts connections until `shutdown` resolves, then lets the open ones finish their
/// requests (idle ones close at once) for at most `limits.shutdown_timeout`, closes what is
/// left, and returns.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) {
    let open = Arc::new(Semaphore::new(limits.max_connections));
    let peers = PeerSlots::new(limits.max_connections_per_peer);
    let graceful = GracefulShutdown::new();
    let mut connections = JoinSet::new();
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let deadlines = limits.deadlines;
    let service = tower::service_fn(move |req| deadline::answer(app.clone(), deadlines, req));
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    accept_failed(&e).await;
                    continue;
                }
            },
            // Finished connections are collected as they end, so the set stays small.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            () = &mut shutdown => break,
        };
        let Some(admission) = admit(&open, &peers, peer, &limits) else {
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let io = TokioIo::new(stream);
        let conn =
            graceful.watch(http.serve_connection(io, TowerToHyperService::new(service.clone())));
        connections.spawn(async move {
            // Errors here are the client's: a reset, a malformed request, a header timeout.
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            drop(admission);
        });
    }
    drop(listener);
    let draining = connections.len();
    if tokio::time::timeout(limits.shutdown_timeout, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            open = connections.len(),
            shutdown_timeout_s = limits.shutdown_timeout.as_secs(),
            "requests still in flight at the shutdown deadline: closing their connections"
        );
    } else if draining > 0 {
        tracing::info!(connections = draining, "open connections finished");
    }
    // Aborts what the deadline left running; dropping a connection closes its socket.
    connections.shutdown().await;
}

/// A place for a new connection from `peer` under both caps, or `None` (counted and
/// logged) when either is full.
fn admit(
    open: &Arc<Semaphore>,
    peers: &Arc<PeerSlots>,
    peer: SocketAddr,
    limits: &ConnectionLimits,
) -> Option<Admission> {
    let who = Peer::of(peer.ip());
    let Some(peer_slot) = peers.try_take(who) else {
        crate::telemetry::metrics::record_refused_connection("max_connections_per_peer");
        // Debug only: one client's flood would otherwise flood the log.
        tracing::debug!(
            peer = %who,
            max_connections_per_peer = limits.max_connections_per_peer,
            "per-peer connection limit reached: closing a new connection"
        );
        return None;
    };
    let Ok(global) = Arc::clone(open).try_acquire_owned() else {
        crate::telemetry::metrics::record_refused_connection("max_connections");
        tracing::warn!(
            max_connections = limits.max_connections,
            "connection limit reached: closing a new connection"
        );
        return None;
    };
    Some(Admission {
        _global: global,
        _peer: peer_slot,
    })
}

/// An `accept` that failed. Per-connection errors (the peer reset before we took it) are
/// skipped; others (out of file descriptors) are logged and retried after a short pause, so
/// that the loop does not spin while nothing can be accepted.
async fn accept_failed(e: &std::io::Error) {
    use std::io::ErrorKind::*;
    if matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | ConnectionRefused
    ) {
        return;
    }
    tracing::warn!(error = %e, "cannot accept a connection");
    tokio::time::sleep(Duration::from_millis(100)).await;
}
