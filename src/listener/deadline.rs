//! The deadlines of one request, around the whole application: its body must have arrived
//! `body_read_timeout` after its headers (408, and the connection closes), and its answer
//! must be ready `request_timeout` after them (503). Either cancels the handler, as a
//! client hanging up does (an open transaction rolls back with its connection). Both are
//! totals, not idle timeouts, so a body sent a byte a second is cut off too.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use hyper::body::{Body as _, Frame, Incoming, SizeHint};
use tokio::time::{sleep_until, Instant};
use tower::ServiceExt as _;

use crate::error::ApiError;
use crate::telemetry::metrics;

/// The two deadlines, counted from a request's headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deadlines {
    pub body: Duration,
    pub request: Duration,
}

/// `app`'s answer to `req`, or the answer of the deadline that came first.
pub async fn answer(
    app: Router,
    deadlines: Deadlines,
    req: Request<Incoming>,
) -> Result<Response, Infallible> {
    let started = Instant::now();
    let method = req.method().clone();
    // A request without a body (most GETs) has it all already.
    let arrived = Arc::new(AtomicBool::new(req.body().is_end_stream()));
    let req = req.map(|body| {
        Body::new(Watched {
            inner: body,
            arrived: Arc::clone(&arrived),
        })
    });
    let body_overdue = async {
        sleep_until(started + deadlines.body).await;
        if arrived.load(Ordering::Acquire) {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        biased;
        answered = app.oneshot(req) => answered,
        () = body_overdue => Ok(timed_out(&method, Phase::Body, deadlines.body)),
        () = sleep_until(started + deadlines.request) => {
            Ok(timed_out(&method, Phase::Request, deadlines.request))
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Phase {
    Body,
    Request,
}

fn timed_out(method: &axum::http::Method, phase: Phase, after: Duration) -> Response {
    let secs = after.as_secs();
    let (label, error) = match phase {
        Phase::Body => (
            "body",
            ApiError::Rejected {
                status: StatusCode::REQUEST_TIMEOUT,
                detail: format!("The request body did not arrive within {secs} s."),
            },
        ),
        Phase::Request => (
            "request",
            ApiError::ServiceUnavailable(format!("the request was not answered within {secs} s")),
        ),
    };
    metrics::record_request_timeout(label);
    tracing::warn!(%method, phase = label, timeout_s = secs, "request cut off by its deadline");
    let mut response = error.into_response();
    if matches!(phase, Phase::Body) {
        // The rest of the body may still come: the connection cannot carry another request.
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// A request body that records when it has been read to its end.
struct Watched {
    inner: Incoming,
    arrived: Arc<AtomicBool>,
}

impl hyper::body::Body for Watched {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) || self.inner.is_end_stream() {
            self.arrived.store(true, Ordering::Release);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
