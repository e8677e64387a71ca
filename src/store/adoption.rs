//! Clusters whose status says a change is under way although no operation of ours follows
//! it (work another conductor began: Magnum with magnum-cluster-api, before magnum-rs took
//! its database over), and the one transaction that adopts one of them: its waiting
//! operations recorded under the cluster's lock, only while its status is still the one the
//! plan was made from and nothing of ours has started on it since.

use super::guard::{self, Guard};
use super::operation_rows::insert_waiting;
use super::{stmt, Bind, Store};
use crate::model::Tenancy;
use crate::operation::{NewOperation, OpState, Wait};

/// The statuses of a change under way.
const IN_PROGRESS: [&str; 3] = [
    "CREATE_IN_PROGRESS",
    "UPDATE_IN_PROGRESS",
    "DELETE_IN_PROGRESS",
];

/// Why [`Store::adopt`] wrote nothing.
#[derive(Debug, PartialEq, Eq)]
pub enum NotAdopted {
    ClusterGone,
    /// The status moved on since the plan was made (another request, or the other conductor).
    StatusChanged,
    /// An operation of ours follows the cluster now.
    Followed,
}

impl Store {
    /// The uuids of clusters in a `*_IN_PROGRESS` status, with a backend cluster
    /// (`stack_id`), that no pending, running or waiting operation follows; oldest first.
    pub async fn unfollowed_in_progress(&self) -> Result<Vec<String>, sqlx::Error> {
        let marks = vec!["?"; IN_PROGRESS.len()].join(", ");
        let sql = format!(
            "SELECT c.uuid FROM cluster c WHERE c.status IN ({marks}) \
             AND c.stack_id IS NOT NULL AND c.stack_id <> '' \
             AND NOT EXISTS (SELECT 1 FROM magnum_rs_operation o WHERE o.cluster_uuid = c.uuid \
             AND o.state IN (?, ?, ?)) ORDER BY c.id"
        );
        let binds = IN_PROGRESS.iter().map(|s| Bind::text(*s)).chain(
            [OpState::Pending, OpState::Running, OpState::Waiting]
                .iter()
                .map(|s| Bind::text(s.as_str())),
        );
        let rows: Vec<(String,)> = stmt(sql)
            .bind_all(binds)
            .fetch_all(&mut self.conn().await?)
            .await?;
        Ok(rows.into_iter().map(|(uuid,)| uuid).collect())
    }

    /// Records `ops`, each already waiting on `wait`, for the cluster `uuid`: in one
    /// transaction, under the cluster's lock, only while its status is still `status` and
    /// no operation of ours is open on it. Nothing is written otherwise.
    pub async fn adopt(
        &self,
        uuid: &str,
        status: &str,
        ops: &[NewOperation],
        wait: &Wait,
    ) -> Result<Result<(), NotAdopted>, sqlx::Error> {
        let mut tx = self.begin().await?;
        let guards = [Guard::cluster(uuid, Tenancy::All)];
        if guard::check(&mut tx, self.dialect(), &guards)
            .await?
            .is_err()
        {
            tx.rollback().await?;
            return Ok(Err(NotAdopted::ClusterGone));
        }
        let now: Option<(Option<String>,)> = stmt("SELECT status FROM cluster WHERE uuid = ?")
            .bind(uuid.to_string())
            .fetch_optional(&mut tx)
            .await?;
        if now.and_then(|(s,)| s).as_deref() != Some(status) {
            tx.rollback().await?;
            return Ok(Err(NotAdopted::StatusChanged));
        }
        let open: Option<i64> = stmt(
            "SELECT id FROM magnum_rs_operation WHERE cluster_uuid = ? \
             AND state IN ('pending', 'running', 'waiting') LIMIT 1",
        )
        .bind(uuid.to_string())
        .scalar_optional(&mut tx)
        .await?;
        if open.is_some() {
            tx.rollback().await?;
            return Ok(Err(NotAdopted::Followed));
        }
        for op in ops {
            insert_waiting(&mut tx, op, wait).await?;
        }
        tx.commit().await?;
        Ok(Ok(()))
    }
}
