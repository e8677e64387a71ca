//! `magnum_rs_operation`: durable records of accepted operations, written in the same
//! transaction as the state change they belong to (a [`super::batch::Batch`]), and handed to
//! the driver by the operations worker. An operation names its cluster and nodegroup by
//! uuid, which is never reused.

use chrono::NaiveDateTime;

use super::batch::Batch;
use super::changes::{ClusterSet, NodeGroupSet};
pub use super::guard::Refused as ResizeRefused;
use super::guard::{Guard, StatusRule};
use super::operation_rows::{operations, transition_on, OP_COLUMNS};
use super::{now, stmt, stored_time, Bind, Store};
use crate::model::{status, Status, Tenancy};
pub use crate::operation::{NewOperation, OpKind, OpPayload, OpState, Operation, Wait};

/// A resize to accept ([`Store::accept_resize`]), of rows the caller was shown.
#[derive(Debug)]
pub struct AcceptResize {
    pub cluster_uuid: String,
    /// The tenancy the caller found the cluster in.
    pub tenancy: Tenancy,
    pub nodegroup_uuid: String,
    pub new_count: i64,
    pub op: NewOperation,
    /// The cluster statuses a resize may start from (the conductor's rule).
    pub allowed: StatusRule,
    /// Other columns of the cluster written with the resize (a PATCH's health fields).
    pub cluster_changes: Vec<ClusterSet>,
}

/// How many operations are in one unfinished state, and how old the oldest is.
#[derive(Clone, Debug)]
pub struct QueueState {
    pub state: &'static str,
    pub count: i64,
    pub oldest_age: std::time::Duration,
}

/// What [`Store::open_operations`] reads per state.
#[derive(sqlx::FromRow)]
struct QueueRow {
    n: i64,
    oldest: Option<NaiveDateTime>,
}

/// A stored time `seconds` from now, in the format [`now`] writes.
pub fn from_now(seconds: u64) -> String {
    let seconds = chrono::Duration::seconds(seconds.min(i64::MAX as u64 / 2) as i64);
    stored_time((chrono::Utc::now() + seconds).naive_utc())
}

/// What [`Store::claim_operations`] took: how many ended superseded, which now run.
#[derive(Debug, Default)]
pub struct Claim {
    pub superseded: u64,
    pub running: Vec<i64>,
}

impl Store {
    /// Accepts a resize of rows the caller was shown: in one transaction, under the rows'
    /// locks, the nodegroup still belongs to the cluster and is not being deleted, the
    /// cluster is still there in the caller's tenancy and in a status `allowed` accepts;
    /// then the new count, the `UPDATE_IN_PROGRESS` statuses, the cluster's other changes
    /// and the operation record (with the count it replaced) are written. Returns that
    /// previous count, or why nothing was written (so a resize racing a delete never gets a
    /// 202). Concurrent resizes of one nodegroup serialise on its lock, and operation ids
    /// follow the order in which counts were written.
    pub async fn accept_resize(
        &self,
        resize: AcceptResize,
    ) -> Result<Result<i64, ResizeRefused>, sqlx::Error> {
        let AcceptResize {
            cluster_uuid,
            tenancy,
            nodegroup_uuid,
            new_count,
            mut op,
            allowed,
            cluster_changes,
        } = resize;
        let in_progress = Status::UpdateInProgress;
        op.nodegroup_uuid = Some(nodegroup_uuid.clone());
        op.new_count = Some(new_count);
        let mut cluster_set = cluster_changes;
        cluster_set.push(ClusterSet::Status(in_progress.into()));
        let batch = Batch::default()
            .guard(Guard::nodegroup(&nodegroup_uuid, &cluster_uuid))
            .guard(Guard::cluster(&cluster_uuid, tenancy))
            .guard(Guard::nodegroup_status(
                &nodegroup_uuid,
                status::not_deleting,
            ))
            .guard(Guard::cluster_status(&cluster_uuid, allowed))
            .set_count(&nodegroup_uuid, new_count)
            .nodegroup(&nodegroup_uuid, [NodeGroupSet::Status(in_progress.into())])
            .cluster(&cluster_uuid, cluster_set)
            .operation(op);
        Ok(self.commit(batch).await?.map(|c| c.old_count.unwrap_or(1)))
    }

    /// The unfinished operations per state (pending, running): how many, and the age of the
    /// oldest (for the metrics).
    pub async fn open_operations(&self) -> Result<Vec<QueueState>, sqlx::Error> {
        let mut out = Vec::new();
        for state in [OpState::Pending, OpState::Running, OpState::Waiting] {
            let row: QueueRow = stmt(
                "SELECT COUNT(*) AS n, MIN(created_at) AS oldest \
                 FROM magnum_rs_operation WHERE state = ?",
            )
            .bind(state.as_str())
            .fetch_one(&mut self.conn().await?)
            .await?;
            let count = row.n;
            let oldest_age = row
                .oldest
                .map(|t| {
                    (chrono::Utc::now().naive_utc() - t)
                        .to_std()
                        .unwrap_or_default()
                })
                .unwrap_or_default();
            out.push(QueueState {
                state: state.as_str(),
                count,
                oldest_age,
            });
        }
        Ok(out)
    }

    /// Pending operations that may run now (not waiting for a retry's time), oldest first.
    pub async fn pending_operations(&self, limit: i64) -> Result<Vec<Operation>, sqlx::Error> {
        let sql = format!(
            "SELECT {OP_COLUMNS} FROM magnum_rs_operation WHERE state = ? \
             AND (not_before IS NULL OR not_before <= ?) ORDER BY id LIMIT ?"
        );
        let binds = vec![
            Bind::text(OpState::Pending.as_str()),
            Bind::text(now()),
            Bind::Int(Some(limit)),
        ];
        operations(sql, binds, &mut self.conn().await?).await
    }

    pub async fn operations_of_cluster(
        &self,
        cluster_uuid: &str,
    ) -> Result<Vec<Operation>, sqlx::Error> {
        let sql = format!(
            "SELECT {OP_COLUMNS} FROM magnum_rs_operation WHERE cluster_uuid = ? ORDER BY id"
        );
        operations(sql, vec![Bind::text(cluster_uuid)], &mut self.conn().await?).await
    }

    /// Whether the cluster has pending, running or waiting operations other than `except`
    /// (one indexed probe; the history of finished operations is not read).
    pub async fn has_open_operations(
        &self,
        cluster_uuid: &str,
        except: i64,
    ) -> Result<bool, sqlx::Error> {
        let found: Option<i64> = stmt(
            "SELECT id FROM magnum_rs_operation WHERE cluster_uuid = ? AND state IN (?, ?, ?) AND id <> ? LIMIT 1",
        )
        .bind(cluster_uuid.to_string())
        .bind(OpState::Pending.as_str())
        .bind(OpState::Running.as_str())
        .bind(OpState::Waiting.as_str())
        .bind(except)
        .scalar_optional(&mut self.conn().await?)
        .await?;
        Ok(found.is_some())
    }

    /// Claims pending operations in one transaction: those in `supersede` end superseded,
    /// those in `run` become running. An operation another worker moved first is left alone
    /// and not in the result.
    pub async fn claim_operations(
        &self,
        supersede: &[i64],
        run: &[i64],
    ) -> Result<Claim, sqlx::Error> {
        let mut claim = Claim::default();
        if supersede.is_empty() && run.is_empty() {
            return Ok(claim);
        }
        let mut tx = self.begin().await?;
        if !supersede.is_empty() {
            let marks = vec!["?"; supersede.len()].join(", ");
            let sql = format!(
                "UPDATE magnum_rs_operation SET state = ?, updated_at = ? \
                 WHERE state = ? AND id IN ({marks})"
            );
            claim.superseded = stmt(sql)
                .bind(OpState::Superseded.as_str())
                .bind(now())
                .bind(OpState::Pending.as_str())
                .bind_all(supersede.iter().map(|id| Bind::Int(Some(*id))))
                .execute(&mut tx)
                .await?
                .rows_affected();
        }
        for id in run {
            if transition_on(&mut tx, *id, OpState::Pending, OpState::Running, None).await? {
                claim.running.push(*id);
            }
        }
        tx.commit().await?;
        Ok(claim)
    }

    /// A running operation whose driver call failed for a passing reason goes back to
    /// pending, not to be claimed before `delay` from now; `retry_since` keeps the first
    /// failure of the run. False when another worker moved it first.
    pub async fn retry_later(
        &self,
        id: i64,
        reason: &str,
        delay: std::time::Duration,
        retry_since: NaiveDateTime,
    ) -> Result<bool, sqlx::Error> {
        let at = chrono::Utc::now() + chrono::Duration::from_std(delay).unwrap_or_default();
        let r = stmt(
            "UPDATE magnum_rs_operation SET state = ?, last_error = ?, not_before = ?, \
             retry_since = ?, updated_at = ? WHERE id = ? AND state = ?",
        )
        .bind(OpState::Pending.as_str())
        .bind(reason.to_string())
        .bind(stored_time(at.naive_utc()))
        .bind(stored_time(retry_since))
        .bind(now())
        .bind(id)
        .bind(OpState::Running.as_str())
        .execute(&mut self.conn().await?)
        .await?;
        Ok(r.rows_affected() == 1)
    }

    /// Moves an operation from `from` to `to`; false when another worker moved it first.
    pub async fn transition_operation(
        &self,
        id: i64,
        from: OpState,
        to: OpState,
        error: Option<&str>,
    ) -> Result<bool, sqlx::Error> {
        transition_on(&mut self.conn().await?, id, from, to, error).await
    }

    /// A running operation the driver started now waits, with what it waits for: one
    /// transaction, which also supersedes older waiting resizes of the same nodegroup (the
    /// newest count is the one the backend moves to). False when it was no longer running.
    pub async fn start_waiting(&self, op: &Operation, wait: &Wait) -> Result<bool, sqlx::Error> {
        let mut tx = self.begin().await?;
        let at = now();
        let moved = stmt(
            "UPDATE magnum_rs_operation SET state = ?, wait_object = ?, wait_generation = ?, \
             started_at = ?, deadline_at = ?, progress = NULL, progress_at = ?, updated_at = ? \
             WHERE id = ? AND state = ?",
        )
        .bind(OpState::Waiting.as_str())
        .bind(wait.object.clone())
        .bind(wait.generation)
        .bind(at.clone())
        .bind(from_now(wait.deadline_seconds))
        .bind(at.clone())
        .bind(at.clone())
        .bind(op.id)
        .bind(OpState::Running.as_str())
        .execute(&mut tx)
        .await?
        .rows_affected()
            == 1;
        if moved && op.kind().sets_count() {
            if let Some(ng) = &op.nodegroup_uuid {
                stmt(
                    "UPDATE magnum_rs_operation SET state = ?, updated_at = ? \
                     WHERE nodegroup_uuid = ? AND kind IN ('resize', 'rollback') \
                     AND state = ? AND id < ?",
                )
                .bind(OpState::Superseded.as_str())
                .bind(at)
                .bind(ng)
                .bind(OpState::Waiting.as_str())
                .bind(op.id)
                .execute(&mut tx)
                .await?;
            }
        }
        tx.commit().await?;
        Ok(moved)
    }

    /// Waiting operations: of one cluster, or all of them (`None`), oldest first.
    pub async fn waiting_operations(
        &self,
        cluster_uuid: Option<&str>,
    ) -> Result<Vec<Operation>, sqlx::Error> {
        let filter = if cluster_uuid.is_some() {
            " AND cluster_uuid = ?"
        } else {
            ""
        };
        let sql = format!(
            "SELECT {OP_COLUMNS} FROM magnum_rs_operation WHERE state = ?{filter} ORDER BY id"
        );
        let mut binds = vec![Bind::text(OpState::Waiting.as_str())];
        binds.extend(cluster_uuid.map(Bind::text));
        operations(sql, binds, &mut self.conn().await?).await
    }

    /// Records progress of a waiting operation: the new marker, and the deadline moved.
    pub async fn note_progress(
        &self,
        id: i64,
        marker: &str,
        deadline_seconds: u64,
    ) -> Result<bool, sqlx::Error> {
        let at = now();
        let r = stmt(
            "UPDATE magnum_rs_operation SET progress = ?, progress_at = ?, deadline_at = ?, \
             updated_at = ? WHERE id = ? AND state = ?",
        )
        .bind(marker.to_string())
        .bind(at.clone())
        .bind(from_now(deadline_seconds))
        .bind(at)
        .bind(id)
        .bind(OpState::Waiting.as_str())
        .execute(&mut self.conn().await?)
        .await?;
        Ok(r.rows_affected() == 1)
    }

    /// Deletes finished operations (done, failed, superseded) beyond the newest `keep`.
    /// Returns how many went. Two statements: MySQL cannot delete from a table its own
    /// subquery reads.
    pub async fn prune_finished(&self, keep: u64) -> Result<u64, sqlx::Error> {
        const FINISHED: &str = "state IN ('done', 'failed', 'superseded')";
        let mut conn = self.conn().await?;
        let newest_dropped: Option<i64> = stmt(format!(
            "SELECT id FROM magnum_rs_operation WHERE {FINISHED} ORDER BY id DESC LIMIT 1 OFFSET ?"
        ))
        .bind(i64::try_from(keep).unwrap_or(i64::MAX))
        .scalar_optional(&mut conn)
        .await?;
        let Some(below) = newest_dropped else {
            return Ok(0);
        };
        let r = stmt(format!(
            "DELETE FROM magnum_rs_operation WHERE {FINISHED} AND id <= ?"
        ))
        .bind(below)
        .execute(&mut conn)
        .await?;
        Ok(r.rows_affected())
    }

    /// After a restart: operations a dead worker had claimed run again (drivers apply
    /// desired state, so running one twice has the effect of running it once). Waiting
    /// operations stay waiting: the reconciler ends them from the backend's status.
    pub async fn requeue_running(&self) -> Result<u64, sqlx::Error> {
        let r = stmt("UPDATE magnum_rs_operation SET state = ? WHERE state = ?")
            .bind(OpState::Pending.as_str())
            .bind(OpState::Running.as_str())
            .execute(&mut self.conn().await?)
            .await?;
        Ok(r.rows_affected())
    }
}
