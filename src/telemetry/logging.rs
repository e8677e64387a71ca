//! The log subscriber: human-readable text (the default) or one JSON object per line, with
//! the request span's fields (request id, method, route template, project id) on every line
//! logged while a request is answered.

use serde::{Deserialize, Serialize};
use tracing_subscriber::EnvFilter;

/// `[log] format` / `--log-format`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// `[log]` of the configuration.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    pub format: LogFormat,
}

/// Installs the global subscriber; `RUST_LOG` overrides the default levels.
pub fn init(format: LogFormat) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("magnum_rs=info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .init(),
    }
}
