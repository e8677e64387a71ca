//! `magnum_service` rows: one per (host, binary) doing the conductor's work, with Magnum's
//! heartbeat columns (`report_count`, `last_seen_up`).

use sqlx::any::AnyRow;

use super::columns::R;
use super::{now, Store};

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

const SELECT: &str = "SELECT t.id AS id, t.host AS host, t.`binary` AS service_binary, \
     t.report_count AS report_count, CAST(t.disabled AS SIGNED) AS disabled, \
     t.disabled_reason AS disabled_reason, CAST(t.forced_down AS SIGNED) AS forced_down, \
     CAST(t.last_seen_up AS CHAR) AS last_seen_up, CAST(t.created_at AS CHAR) AS created_at, \
     CAST(t.updated_at AS CHAR) AS updated_at FROM magnum_service t";

fn service_from_row(row: &AnyRow) -> Result<MagnumService, sqlx::Error> {
    let r = R(row);
    Ok(MagnumService {
        id: r.int("id")?.unwrap_or_default(),
        host: r.text("host")?,
        binary: r.text("service_binary")?,
        report_count: r.int("report_count")?.unwrap_or_default(),
        disabled: r.boolean("disabled")?.unwrap_or(false),
        disabled_reason: r.text("disabled_reason")?,
        forced_down: r.boolean("forced_down")?.unwrap_or(false),
        last_seen_up: r.text("last_seen_up")?,
        created_at: r.text("created_at")?,
        updated_at: r.text("updated_at")?,
    })
}

impl Store {
    /// Every service row, by id.
    pub async fn list_services(&self) -> Result<Vec<MagnumService>, sqlx::Error> {
        let rows = sqlx::query(&format!("{SELECT} ORDER BY t.id ASC"))
            .fetch_all(&mut self.conn().await?)
            .await?;
        rows.iter().map(service_from_row).collect()
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
        let inserted = sqlx::query(
            "INSERT INTO magnum_service (created_at, updated_at, report_count, host, `binary`, \
             disabled, disabled_reason, last_seen_up, forced_down) \
             VALUES (?, ?, 1, ?, ?, ?, NULL, ?, ?)",
        )
        .bind(t.clone())
        .bind(t.clone())
        .bind(host.to_string())
        .bind(binary.to_string())
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
        let done = sqlx::query(
            "UPDATE magnum_service SET report_count = report_count + 1, last_seen_up = ?, \
             updated_at = ? WHERE host = ? AND `binary` = ?",
        )
        .bind(t.clone())
        .bind(t)
        .bind(host.to_string())
        .bind(binary.to_string())
        .execute(&mut self.conn().await?)
        .await?;
        Ok(done.rows_affected() > 0)
    }
}
