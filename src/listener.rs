//! The HTTP listener: HTTP/1.1 connections with a deadline for request headers (which
//! also ends idle keep-alive connections), a cap on open connections, and graceful
//! shutdown. All of it happens before authentication, so a client that opens sockets and
//! sends nothing, or a few bytes at a time, cannot take the service away from others.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::config::ApiConfig;

/// What one connection may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// A request's headers must have arrived this long after the connection opened or the
    /// previous response was sent; otherwise the connection is closed. This is the
    /// keep-alive idle timeout too.
    pub header_read_timeout: Duration,
    /// Connections open at once; a new one beyond this is closed at once.
    pub max_connections: usize,
}

impl ConnectionLimits {
    pub fn of(api: &ApiConfig) -> Self {
        ConnectionLimits {
            header_read_timeout: Duration::from_secs(api.header_read_timeout.max(1)),
            max_connections: api.max_connections.max(1),
        }
    }
}

/// Accepts connections until `shutdown` resolves, then lets the open ones finish their
/// requests (idle ones close at once) and returns.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) {
    let open = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => stream,
                Err(e) => {
                    accept_failed(&e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(permit) = Arc::clone(&open).try_acquire_owned() else {
            crate::telemetry::metrics::record_refused_connection();
            tracing::warn!(
                max_connections = limits.max_connections,
                "connection limit reached: closing a new connection"
            );
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let conn = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            // Errors here are the client's: a reset, a malformed request, a header timeout.
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
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
