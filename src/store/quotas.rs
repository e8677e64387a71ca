//! `quotas` rows: Magnum's per-project hard limits (`magnum/db/sqlalchemy/api.py`, the
//! `*_quota*` functions).

use super::schema::{isoformat, select_from, QuotaCol, QuotaRow};
use super::sort_key::Table;
use super::{now, stmt, Bind, Page, Store};

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

impl From<QuotaRow> for Quota {
    fn from(r: QuotaRow) -> Self {
        Quota {
            id: r.id,
            project_id: r.project_id,
            resource: r.resource,
            hard_limit: r.hard_limit.unwrap_or_default(),
            created_at: r.created_at.as_ref().map(isoformat),
            updated_at: r.updated_at.as_ref().map(isoformat),
        }
    }
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
        let mut sql = format!("{} WHERE 1 = 1", select_from::<QuotaCol>());
        let mut binds = Vec::new();
        if let Some(p) = project_id {
            sql.push_str(" AND t.project_id = ?");
            binds.push(Bind::text(p));
        }
        page.apply(Table::Quota, &mut sql, &mut binds);
        let rows: Vec<QuotaRow> = stmt(sql)
            .bind_all(binds)
            .fetch_all(&mut self.conn().await?)
            .await?;
        Ok(rows.into_iter().map(Quota::from).collect())
    }

    pub async fn quota_by_id(&self, id: i64) -> Result<Option<Quota>, sqlx::Error> {
        let row: Option<QuotaRow> = stmt(format!("{} WHERE t.id = ?", select_from::<QuotaCol>()))
            .bind(id)
            .fetch_optional(&mut self.conn().await?)
            .await?;
        Ok(row.map(Quota::from))
    }

    /// The row of a (project, resource) pair, if any.
    pub async fn quota_of(
        &self,
        project_id: &str,
        resource: &str,
    ) -> Result<Option<Quota>, sqlx::Error> {
        let row: Option<QuotaRow> = stmt(format!(
            "{} WHERE t.project_id = ? AND t.resource = ?",
            select_from::<QuotaCol>()
        ))
        .bind(project_id)
        .bind(resource)
        .fetch_optional(&mut self.conn().await?)
        .await?;
        Ok(row.map(Quota::from))
    }

    /// Inserts a quota; the unique (project_id, resource) key refuses a second one.
    pub async fn insert_quota(
        &self,
        project_id: &str,
        resource: &str,
        hard_limit: i64,
    ) -> Result<Quota, QuotaWriteError> {
        let inserted = stmt(
            "INSERT INTO quotas (created_at, project_id, resource, hard_limit) \
             VALUES (?, ?, ?, ?)",
        )
        .bind(now())
        .bind(project_id)
        .bind(resource)
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
        let done = stmt(
            "UPDATE quotas SET hard_limit = ?, updated_at = ? \
             WHERE project_id = ? AND resource = ?",
        )
        .bind(hard_limit)
        .bind(now())
        .bind(project_id)
        .bind(resource)
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
        let done = stmt("DELETE FROM quotas WHERE project_id = ? AND resource = ?")
            .bind(project_id)
            .bind(resource)
            .execute(&mut self.conn().await?)
            .await?;
        if done.rows_affected() == 0 {
            return Err(QuotaWriteError::Missing);
        }
        Ok(())
    }
}
