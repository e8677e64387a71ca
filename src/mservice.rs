//! This process as a row of Magnum's `magnum_service` table: while it does the conductor's
//! work it reports itself up periodically (Magnum's `update_magnum_service` task), so that
//! `GET /v1/mservices` and `openstack coe service list` show it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::store::services::MagnumService;
use crate::store::Store;

/// The binary name Magnum's conductor registers; magnum-rs's conductor role takes its place.
pub const CONDUCTOR_BINARY: &str = "magnum-conductor";

/// `[service]`: Magnum's `[DEFAULT] host` and `service_down_time`, and how often to report.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct ServiceConfig {
    /// The `host` of this process's row; the machine's host name when unset.
    pub host: Option<String>,
    /// Seconds without a report after which a service shows `down` (Magnum: 180).
    pub service_down_time: u64,
    /// Seconds between two reports (Magnum reports at most every `periodic_interval_max`,
    /// 60 s).
    pub report_interval: u64,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            host: None,
            service_down_time: 180,
            report_interval: 10,
        }
    }
}

impl ServiceConfig {
    /// The host name this process reports under.
    pub fn host_name(&self) -> String {
        match &self.host {
            Some(h) if !h.is_empty() => h.clone(),
            _ => hostname::get()
                .ok()
                .and_then(|h| h.into_string().ok())
                .filter(|h| !h.is_empty())
                .unwrap_or_else(|| "localhost".into()),
        }
    }
}

/// Reports the conductor up now and then every `report_interval` until `stop` turns true.
/// A failed report is logged and retried at the next tick.
pub async fn heartbeat(
    store: Store,
    config: ServiceConfig,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let host = config.host_name();
    let mut tick = tokio::time::interval(Duration::from_secs(config.report_interval.max(1)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {
                if let Err(e) = store.report_service_up(&host, CONDUCTOR_BINARY).await {
                    tracing::warn!(error = %e, "cannot report the conductor up in magnum_service");
                }
            }
            r = stop.changed() => if r.is_err() || *stop.borrow() { return },
        }
    }
}

/// Magnum's `ServiceGroup.service_is_up`: forced down, or no report within
/// `service_down_time` seconds of `now` (either direction), is down.
pub fn is_up(s: &MagnumService, service_down_time: u64, now: chrono::NaiveDateTime) -> bool {
    if s.forced_down {
        return false;
    }
    let last = [&s.last_seen_up, &s.updated_at, &s.created_at]
        .into_iter()
        .flatten()
        .find_map(|t| parse_db_time(t));
    match last {
        Some(t) => (now - t).num_seconds().unsigned_abs() <= service_down_time,
        None => false,
    }
}

/// A database timestamp (`YYYY-MM-DD HH:MM:SS[.ffffff]`, UTC).
fn parse_db_time(t: &str) -> Option<chrono::NaiveDateTime> {
    chrono::NaiveDateTime::parse_from_str(t.trim(), "%Y-%m-%d %H:%M:%S%.f").ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(
        last_seen_up: Option<&str>,
        updated_at: Option<&str>,
        created_at: &str,
    ) -> MagnumService {
        MagnumService {
            id: 1,
            host: Some("h".into()),
            binary: Some(CONDUCTOR_BINARY.into()),
            report_count: 1,
            disabled: false,
            disabled_reason: None,
            forced_down: false,
            last_seen_up: last_seen_up.map(str::to_string),
            created_at: Some(created_at.into()),
            updated_at: updated_at.map(str::to_string),
        }
    }

    fn at(t: &str) -> chrono::NaiveDateTime {
        parse_db_time(t).expect("time")
    }

    #[test]
    fn a_service_reported_within_service_down_time_is_up() {
        let s = service(Some("2026-01-01 10:00:00.5"), None, "2026-01-01 09:00:00");
        assert!(is_up(&s, 180, at("2026-01-01 10:03:00")));
        assert!(!is_up(&s, 180, at("2026-01-01 10:03:02")));
    }

    #[test]
    fn without_last_seen_up_the_update_then_creation_time_counts() {
        let s = service(None, Some("2026-01-01 10:00:00"), "2026-01-01 09:00:00");
        assert!(is_up(&s, 60, at("2026-01-01 10:01:00")));
        let s = service(None, None, "2026-01-01 09:00:00");
        assert!(!is_up(&s, 60, at("2026-01-01 10:01:00")));
    }

    #[test]
    fn a_forced_down_service_is_down() {
        let mut s = service(Some("2026-01-01 10:00:00"), None, "2026-01-01 09:00:00");
        s.forced_down = true;
        assert!(!is_up(&s, 180, at("2026-01-01 10:00:01")));
    }
}
