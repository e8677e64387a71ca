//! `magnum_service` rows: one per (host, binary) doing the conductor's work, with Magnum's
//! heartbeat columns (`report_count`, `last_seen_up`).

use chrono::NaiveDateTime;

use super::schema::stored;
use super::{now, stmt, Store};

/// One row of `magnum_service`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MagnumService {
    pub id: i64,
    pub host: Option<String>,
    pub binary: Option<String>,
    pub report_count: i64,
    pub disabled: bool,
    pub disabled_reason: Option<String>,
    pub forced_down: bool,
    /// Raw database timestamps (`YYYY-MM-DD HH:MM:SS[.ffffff]`, UTC).
    pub last_seen_up: Option<String>,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
}

const SELECT: &str = "SELECT t.id, t.host, t.`binary` AS service_binary, t.report_count, \
     t.disabled, t.disabled_reason, t.forced_down, t.last_seen_up, t.created_at, t.updated_at \
     FROM magnum_service t";

/// A row of `magnum_service` as [`SELECT`] reads it.
#[derive(sqlx::FromRow)]
struct ServiceRow {
    id: i64,
    host: Option<String>,
    service_binary: Option<String>,
    report_count: Option<i64>,
    disabled: Option<bool>,
    disabled_reason: Option<String>,
    forced_down: Option<bool>,
    last_seen_up: Option<NaiveDateTime>,
    created_at: Option<NaiveDateTime>,
    updated_at: Option<NaiveDateTime>,
}

impl From<ServiceRow> for MagnumService {
    fn from(r: ServiceRow) -> Self {
        MagnumService {
            id: r.id,
            host: r.host,
            binary: r.service_binary,
            report_count: r.report_count.unwrap_or_default(),
            disabled: r.disabled.unwrap_or(false),
            disabled_reason: r.disabled_reason,
            forced_down: r.forced_down.unwrap_or(false),
            last_seen_up: r.last_seen_up.as_ref().map(stored),
            created_at: r.created_at.as_ref().map(stored),
            updated_at: r.updated_at.as_ref().map(stored),
        }
    }
}

impl Store {
    /// Every service row, by id.
    pub async fn list_services(&self) -> Result<Vec<MagnumService>, sqlx::Error> {
        let rows: Vec<ServiceRow> = stmt(format!("{SELECT} ORDER BY t.id ASC"))
            .fetch_all(&mut self.conn().await?)
            .await?;
        Ok(rows.into_iter().map(MagnumService::from).collect())
    }

    /// Reports `host`/`binary` alive, as Magnum's `update_magnum_service` periodic task does:
    /// the row is created on the first report, then `report_count` goes up by one and
    /// `last_seen_up`/`updated_at` become now (one statement, no read-modify-write).
    pub async fn report_service_up(&self, host: &str, binary: &str) -> Result<(), sqlx::Error> {
        if self.bump_service(host, binary).await? {
            return Ok(());
        }
        // Magnum creates the row with report_count 0 and reports it up right away (1).
        let t = now();
        let inserted = stmt(
            "INSERT INTO magnum_service (created_at, updated_at, report_count, host, `binary`, \
             disabled, disabled_reason, last_seen_up, forced_down) \
             VALUES (?, ?, 1, ?, ?, ?, NULL, ?, ?)",
        )
        .bind(t.clone())
        .bind(t.clone())
        .bind(host)
        .bind(binary)
        .bind(false)
        .bind(t)
        .bind(false)
        .execute(&mut self.conn().await?)
        .await;
        match inserted {
            // Another process with the same host name inserted it first: count this report.
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                self.bump_service(host, binary).await.map(|_| ())
            }
            other => other.map(|_| ()),
        }
    }

    async fn bump_service(&self, host: &str, binary: &str) -> Result<bool, sqlx::Error> {
        let t = now();
        let done = stmt(
            "UPDATE magnum_service SET report_count = report_count + 1, last_seen_up = ?, \
             updated_at = ? WHERE host = ? AND `binary` = ?",
        )
        .bind(t.clone())
        .bind(t)
        .bind(host)
        .bind(binary)
        .execute(&mut self.conn().await?)
        .await?;
        Ok(done.rows_affected() > 0)
    }
}
