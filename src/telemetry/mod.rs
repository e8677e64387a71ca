//! What operators watch: Prometheus metrics ([`metrics`]) and who may scrape them
//! ([`access`]), the request log and its request ids ([`requests`]), and the log format
//! ([`logging`]).

pub mod access;
pub mod logging;
pub mod metrics;
pub mod requests;
