//! `quotas` rows: Magnum's per-project hard limits (`magnum/db/sqlalchemy/api.py`, the
//! `*_quota*` functions).

use sqlx::any::AnyRow;

use super::columns::R;
use super::sort_key::Table;
use super::{bind_all, now, Bind, Page, Store};

/// One row of `quotas`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Quota {
    pub id: i64,
    pub project_id: Option<String>,
    pub resource: Option<String>,
    pub hard_limit: i64,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
}

const SELECT: &str = "SELECT t.id AS id, t.project_id AS project_id, t.resource AS resource, \
     t.hard_limit AS hard_limit, CAST(t.created_at AS CHAR) AS created_at, \
     CAST(t.updated_at AS CHAR) AS updated_at FROM quotas t";

fn quota_from_row(row: &AnyRow) -> Result<Quota, sqlx::Error> {
    let r = R(row);
    Ok(Quota {
        id: r.int("id")?.unwrap_or_default(),
        project_id: r.text("project_id")?,
        resource: r.text("resource")?,
        hard_limit: r.int("hard_limit")?.unwrap_or_default(),
        created_at: r.time("created_at")?,
        updated_at: r.time("updated_at")?,
    })
}

/// Why a quota could not be written.
#[derive(Debug, thiserror::Error)]
pub enum QuotaWriteError {
    /// The (project, resource) pair already has a row.
    #[error("quota already exists")]
    Exists,
    /// No row for the (project, resource) pair.
    #[error("quota not found")]
    Missing,
    #[error(transparent)]
    Sql(#[from] sqlx::Error),
}

impl Store {
    /// A page of quotas, optionally of one project only.
    pub async fn list_quotas(
        &self,
        project_id: Option<&str>,
        page: &Page,
    ) -> Result<Vec<Quota>, sqlx::Error> {
        let mut sql = format!("{SELECT} WHERE 1 = 1");
        let mut binds = Vec::new();
        if let Some(p) = project_id {
            sql.push_str(" AND t.project_id = ?");
            binds.push(Bind::text(p));
        }
        page.apply(Table::Quota, &mut sql, &mut binds);
        let rows = bind_all(sqlx::query(&sql), &binds)
            .fetch_all(&mut self.conn().await?)
            .await?;
        rows.iter().map(quota_from_row).collect()
    }

    pub async fn quota_by_id(&self, id: i64) -> Result<Option<Quota>, sqlx::Error> {
        let row = sqlx::query(&format!("{SELECT} WHERE t.id = ?"))
            .bind(id)
            .fetch_optional(&mut self.conn().await?)
            .await?;
        row.as_ref().map(quota_from_row).transpose()
    }

    /// The row of a (project, resource) pair, if any.
    pub async fn quota_of(
        &self,
        project_id: &str,
        resource: &str,
    ) -> Result<Option<Quota>, sqlx::Error> {
        let row = sqlx::query(&format!(
            "{SELECT} WHERE t.project_id = ? AND t.resource = ?"
        ))
        .bind(project_id.to_string())
        .bind(resource.to_string())
        .fetch_optional(&mut self.conn().await?)
        .await?;
        row.as_ref().map(quota_from_row).transpose()
    }

    /// Inserts a quota; the unique (project_id, resource) key refuses a second one.
    pub async fn insert_quota(
        &self,
        project_id: &str,
        resource: &str,
        hard_limit: i64,
    ) -> Result<Quota, QuotaWriteError> {
        let inserted = sqlx::query(
            "INSERT INTO quotas (created_at, project_id, resource, hard_limit) \
             VALUES (?, ?, ?, ?)",
        )
        .bind(now())
        .bind(project_id.to_string())
        .bind(resource.to_string())
        .bind(hard_limit)
        .execute(&mut self.conn().await?)
        .await;
        match inserted {
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                return Err(QuotaWriteError::Exists)
            }
            other => other?,
        };
        self.quota_of(project_id, resource)
            .await?
            .ok_or(QuotaWriteError::Missing)
    }

    /// Sets the hard limit of an existing (project, resource) row.
    pub async fn update_quota(
        &self,
        project_id: &str,
        resource: &str,
        hard_limit: i64,
    ) -> Result<Quota, QuotaWriteError> {
        let done = sqlx::query(
            "UPDATE quotas SET hard_limit = ?, updated_at = ? \
             WHERE project_id = ? AND resource = ?",
        )
        .bind(hard_limit)
        .bind(now())
        .bind(project_id.to_string())
        .bind(resource.to_string())
        .execute(&mut self.conn().await?)
        .await?;
        if done.rows_affected() == 0 {
            return Err(QuotaWriteError::Missing);
        }
        self.quota_of(project_id, resource)
            .await?
            .ok_or(QuotaWriteError::Missing)
    }

    /// Removes the row of a (project, resource) pair.
    pub async fn delete_quota(
        &self,
        project_id: &str,
        resource: &str,
    ) -> Result<(), QuotaWriteError> {
        let done = sqlx::query("DELETE FROM quotas WHERE project_id = ? AND resource = ?")
            .bind(project_id.to_string())
            .bind(resource.to_string())
            .execute(&mut self.conn().await?)
            .await?;
        if done.rows_affected() == 0 {
            return Err(QuotaWriteError::Missing);
        }
        Ok(())
    }
}
