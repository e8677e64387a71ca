//! Prometheus metrics (`GET /metrics`), on `prometheus-client`. One process-wide registry:
//! request counters and latencies by route template, the operations queue (read from the
//! database at scrape time), kube request errors and the Cluster API reconcile lag.

use std::sync::OnceLock;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

/// The `Content-Type` of what [`encode`] writes (Prometheus text format 0.0.4).
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HttpLabels {
    method: String,
    route: String,
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KubeErrorLabels {
    call: String,
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WatchLabels {
    management_cluster: String,
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WriteLabels {
    write: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TriggerLabels {
    trigger: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LimitLabels {
    limit: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PhaseLabels {
    phase: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: String,
}

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

struct Metrics {
    registry: Registry,
    http_requests: Family<HttpLabels, Counter>,
    http_duration: HistogramFamily<HttpLabels>,
    queue_depth: Family<StateLabels, Gauge>,
    queue_age: Family<StateLabels, Gauge<f64, std::sync::atomic::AtomicU64>>,
    kube_errors: Family<KubeErrorLabels, Counter>,
    reconcile_lag: HistogramFamily<OutcomeLabels>,
    watch_synced: Family<WatchLabels, Gauge>,
    watch_objects: Family<WatchLabels, Gauge>,
    reconcile_passes: Family<TriggerLabels, Counter>,
    reconcile_writes: Family<WriteLabels, Counter>,
    connections_refused: Family<LimitLabels, Counter>,
    request_timeouts: Family<PhaseLabels, Counter>,
}

fn latency_histogram() -> Histogram {
    // 1 ms … ~16 s
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

fn lag_histogram() -> Histogram {
    // 1 s … ~4.5 h
    Histogram::new(exponential_buckets(1.0, 2.0, 15))
}

fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| {
        let mut registry = Registry::with_prefix("magnum_rs");
        let m = Metrics {
            registry: Registry::default(),
            http_requests: Family::default(),
            http_duration: Family::new_with_constructor(latency_histogram),
            queue_depth: Family::default(),
            queue_age: Family::default(),
            kube_errors: Family::default(),
            reconcile_lag: Family::new_with_constructor(lag_histogram),
            watch_synced: Family::default(),
            watch_objects: Family::default(),
            reconcile_passes: Family::default(),
            reconcile_writes: Family::default(),
            connections_refused: Family::default(),
            request_timeouts: Family::default(),
        };
        registry.register(
            "http_requests",
            "HTTP requests answered, by method, route template and status",
            m.http_requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "Time to answer an HTTP request, by method, route template and status",
            m.http_duration.clone(),
        );
        registry.register(
            "operations_queue_depth",
            "Operations recorded but not finished, by state (pending, running, waiting)",
            m.queue_depth.clone(),
        );
        registry.register(
            "operations_oldest_age_seconds",
            "Age of the oldest unfinished operation, by state (0 when there is none)",
            m.queue_age.clone(),
        );
        registry.register(
            "kube_request_errors",
            "Failed calls to a management cluster, by call (request, watch, lease) and HTTP code (or unreachable)",
            m.kube_errors.clone(),
        );
        registry.register(
            "reconcile_lag_seconds",
            "Time from a driver's change to a management cluster until Cluster API reports the target reached (or the operation fails)",
            m.reconcile_lag.clone(),
        );
        registry.register(
            "watch_synced",
            "Whether the watch cache of one kind on a management cluster holds a complete list (1) or is (re)listing (0)",
            m.watch_synced.clone(),
        );
        registry.register(
            "watch_cached_objects",
            "Objects in the watch cache of one kind on a management cluster",
            m.watch_objects.clone(),
        );
        registry.register(
            "reconcile_passes",
            "Looks of the reconciler, by trigger (start, relist, change, gone)",
            m.reconcile_passes.clone(),
        );
        registry.register(
            "reconcile_writes",
            "Database writes of the reconciler, by what it wrote (progress, reason, facts, finish, fail; one transaction each)",
            m.reconcile_writes.clone(),
        );
        registry.register(
            "http_connections_refused",
            "New connections closed at once, by the limit reached ([api] max_connections, max_connections_per_peer)",
            m.connections_refused.clone(),
        );
        registry.register(
            "http_request_timeouts",
            "Requests cut off by a deadline, by phase (body: [api] body_read_timeout, answered 408; request: [api] request_timeout, answered 503)",
            m.request_timeouts.clone(),
        );
        Metrics { registry, ..m }
    })
}

/// The `method` label: the standard methods by name, any other (a client may send any
/// token) as `other`, so that invented methods cannot grow the registry.
fn method_label(method: &str) -> &'static str {
    const KNOWN: [&str; 9] = [
        "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT",
    ];
    KNOWN
        .iter()
        .find(|m| **m == method)
        .copied()
        .unwrap_or("other")
}

/// Records one answered HTTP request. Every label comes from a bounded set: the route is a
/// template (or `unmatched`), the status a number, the method [`method_label`].
pub fn record_request(method: &str, route: &str, status: u16, elapsed: Duration) {
    let labels = HttpLabels {
        method: method_label(method).to_string(),
        route: route.to_string(),
        status: status.to_string(),
    };
    let m = metrics();
    m.http_requests.get_or_create(&labels).inc();
    m.http_duration
        .get_or_create(&labels)
        .observe(elapsed.as_secs_f64());
}

/// Counts a connection closed at a connection limit (`limit`: the setting's name).
pub fn record_refused_connection(limit: &'static str) {
    metrics()
        .connections_refused
        .get_or_create(&LimitLabels {
            limit: limit.to_string(),
        })
        .inc();
}

/// Counts a request cut off by a deadline (`phase`: body, request).
pub fn record_request_timeout(phase: &'static str) {
    metrics()
        .request_timeouts
        .get_or_create(&PhaseLabels {
            phase: phase.to_string(),
        })
        .inc();
}

/// Sets the operations queue gauges for one state (called at scrape time).
pub fn set_queue(state: &str, depth: i64, oldest_age: Duration) {
    let labels = StateLabels {
        state: state.to_string(),
    };
    let m = metrics();
    m.queue_depth.get_or_create(&labels).set(depth);
    m.queue_age
        .get_or_create(&labels)
        .set(oldest_age.as_secs_f64());
}

/// Counts a failed call to a management cluster; `code` is the HTTP status or `unreachable`.
pub fn kube_error(call: &str, code: &str) {
    metrics()
        .kube_errors
        .get_or_create(&KubeErrorLabels {
            call: call.to_string(),
            code: code.to_string(),
        })
        .inc();
}

/// Observes how long Cluster API took to carry out a change (`outcome`: complete, failed).
pub fn reconcile_lag(outcome: &str, lag: Duration) {
    metrics()
        .reconcile_lag
        .get_or_create(&OutcomeLabels {
            outcome: outcome.to_string(),
        })
        .observe(lag.as_secs_f64());
}

/// Sets the state of one watch cache: complete or not, and how many objects it holds.
pub fn watch_cache(management_cluster: &str, kind: &str, synced: bool, objects: usize) {
    let labels = WatchLabels {
        management_cluster: management_cluster.to_string(),
        kind: kind.to_string(),
    };
    let m = metrics();
    m.watch_synced.get_or_create(&labels).set(i64::from(synced));
    m.watch_objects
        .get_or_create(&labels)
        .set(i64::try_from(objects).unwrap_or(i64::MAX));
}

/// Counts one look of the reconciler (`trigger`: start, relist, change, gone).
pub fn reconcile_pass(trigger: &'static str) {
    metrics()
        .reconcile_passes
        .get_or_create(&TriggerLabels {
            trigger: trigger.to_string(),
        })
        .inc();
}

/// Counts one database write of the reconciler (`write`: progress, reason, facts, finish,
/// fail).
pub fn reconcile_write(write: &'static str) {
    metrics()
        .reconcile_writes
        .get_or_create(&WriteLabels {
            write: write.to_string(),
        })
        .inc();
}

/// The registry in the Prometheus text format.
pub fn encode() -> String {
    let mut out = String::new();
    if let Err(e) =
        prometheus_client::encoding::prometheus_text::encode(&mut out, &metrics().registry)
    {
        tracing::warn!(error = %e, "cannot encode the metrics");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::method_label;

    #[test]
    fn invented_methods_share_one_label() {
        assert_eq!(method_label("PATCH"), "PATCH");
        assert_eq!(method_label("BREW"), "other");
        assert_eq!(method_label("get"), "other");
    }
}
