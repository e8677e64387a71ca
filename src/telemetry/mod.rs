//! What operators watch: Prometheus metrics ([`metrics`]), the request log and its request
//! ids ([`requests`]), and the log format ([`logging`]).

pub mod logging;
pub mod metrics;
pub mod requests;
