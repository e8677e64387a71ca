//! `magnum_rs_operation`: durable records of accepted operations, written in the same
//! transaction as the state change they belong to, and handed to the driver by the
//! operations worker. Also the transactional [`Batch`] those writes go through.

use chrono::NaiveDateTime;

use super::changes::{cluster_columns, nodegroup_columns, ClusterSet, NodeGroupSet};
use super::nodegroups::insert_nodegroup_on;
pub use super::op_payload::OpPayload;
use super::schema::{stored, ClusterCol, NodeGroupCol};
use super::{now, stmt, update_columns, Bind, Conn, Store};
use crate::model::NodeGroup;

/// What an operation asks the driver to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    CreateCluster,
    DeleteCluster,
    Resize,
    Upgrade,
    CreateNodeGroup,
    UpdateNodeGroup,
    DeleteNodeGroup,
}

impl OpKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OpKind::CreateCluster => "create_cluster",
            OpKind::DeleteCluster => "delete_cluster",
            OpKind::Resize => "resize",
            OpKind::Upgrade => "upgrade",
            OpKind::CreateNodeGroup => "create_nodegroup",
            OpKind::UpdateNodeGroup => "update_nodegroup",
            OpKind::DeleteNodeGroup => "delete_nodegroup",
        }
    }
}

/// Where an operation is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpState {
    Pending,
    Running,
    /// Handed to the driver, which started it; ends when the backend's status says so, or
    /// at its deadline (what it waits for is in the operation's `wait_*` columns).
    Waiting,
    Done,
    Failed,
    /// A later operation on the same nodegroup replaced this one before it ran.
    Superseded,
}

impl OpState {
    pub fn as_str(self) -> &'static str {
        match self {
            OpState::Pending => "pending",
            OpState::Running => "running",
            OpState::Waiting => "waiting",
            OpState::Done => "done",
            OpState::Failed => "failed",
            OpState::Superseded => "superseded",
        }
    }

    pub fn parse(s: &str) -> Option<OpState> {
        [
            OpState::Pending,
            OpState::Running,
            OpState::Waiting,
            OpState::Done,
            OpState::Failed,
            OpState::Superseded,
        ]
        .into_iter()
        .find(|state| state.as_str() == s)
    }
}

/// An operation to record.
#[derive(Clone, Debug)]
pub struct NewOperation {
    pub cluster_uuid: String,
    pub nodegroup_id: Option<i64>,
    pub old_count: Option<i64>,
    pub new_count: Option<i64>,
    /// What to do (its kind) and the facts it needs.
    pub payload: OpPayload,
}

/// A resize to accept ([`Store::accept_resize`]).
#[derive(Debug)]
pub struct AcceptResize {
    pub cluster_id: i64,
    pub nodegroup_id: i64,
    /// The count the caller read.
    pub seen: i64,
    pub new_count: i64,
    pub op: NewOperation,
    /// The cluster statuses a resize may start from (the conductor's rule).
    pub allowed: fn(&str) -> bool,
    /// Other columns of the cluster written with the resize (a PATCH's health fields).
    pub cluster_changes: Vec<ClusterSet>,
}

/// Why [`Store::accept_resize`] wrote nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResizeRefused {
    ClusterGone,
    NodeGroupGone,
    /// The cluster's status when the resize was tried.
    ClusterStatus(String),
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

/// A recorded operation.
#[derive(Clone, Debug)]
pub struct Operation {
    pub id: i64,
    pub cluster_uuid: String,
    pub nodegroup_id: Option<i64>,
    pub old_count: Option<i64>,
    pub new_count: Option<i64>,
    pub payload: OpPayload,
    pub state: OpState,
    pub attempts: i64,
    /// While waiting: the object and generation the driver's change produced.
    pub wait_object: Option<String>,
    pub wait_generation: Option<i64>,
    /// While waiting: when it started, when it fails unless progress is seen, and the
    /// last progress marker.
    pub started_at: Option<String>,
    pub deadline_at: Option<String>,
    pub progress: Option<String>,
}

impl Operation {
    pub fn kind(&self) -> OpKind {
        self.payload.kind()
    }
}

/// What an operation handed to the driver waits for, written when it starts waiting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wait {
    pub object: String,
    pub generation: Option<i64>,
    /// Seconds until the deadline (moved on every observed progress).
    pub deadline_seconds: u64,
}

/// A stored time `seconds` from now, in the format [`now`] writes.
pub fn from_now(seconds: u64) -> String {
    (chrono::Utc::now() + chrono::Duration::seconds(seconds.min(i64::MAX as u64 / 2) as i64))
        .format("%Y-%m-%d %H:%M:%S%.6f")
        .to_string()
}

/// Writes that must land together, with at most one operation record.
#[derive(Debug, Default)]
pub struct Batch {
    steps: Vec<Step>,
}

#[derive(Debug)]
enum Step {
    UpdateCluster {
        id: i64,
        changes: Vec<(ClusterCol, Bind)>,
    },
    UpdateNodeGroup {
        id: i64,
        changes: Vec<(NodeGroupCol, Bind)>,
    },
    InsertNodeGroup(Box<NodeGroup>),
    /// Records an operation; a `None` nodegroup id refers to the nodegroup inserted by
    /// the batch.
    Operation(NewOperation),
    /// Moves an operation from one state to another; the batch is rolled back when the
    /// operation is no longer in the `from` state.
    Transition {
        id: i64,
        from: OpState,
        to: OpState,
        error: Option<String>,
    },
    RestoreCount {
        nodegroup_id: i64,
        failed_count: i64,
        old_count: i64,
    },
    DeleteNodeGroup(i64),
    DeleteCluster(String),
}

impl Batch {
    /// Writes `changes` to the cluster with row id `id`.
    pub fn cluster(mut self, id: i64, changes: impl IntoIterator<Item = ClusterSet>) -> Self {
        let changes: Vec<ClusterSet> = changes.into_iter().collect();
        self.steps.push(Step::UpdateCluster {
            id,
            changes: cluster_columns(&changes),
        });
        self
    }

    /// Writes `changes` to the nodegroup with row id `id`.
    pub fn nodegroup(mut self, id: i64, changes: impl IntoIterator<Item = NodeGroupSet>) -> Self {
        let changes: Vec<NodeGroupSet> = changes.into_iter().collect();
        self.steps.push(Step::UpdateNodeGroup {
            id,
            changes: nodegroup_columns(&changes),
        });
        self
    }

    pub fn insert_nodegroup(mut self, ng: NodeGroup) -> Self {
        self.steps.push(Step::InsertNodeGroup(Box::new(ng)));
        self
    }

    pub fn operation(mut self, op: NewOperation) -> Self {
        self.steps.push(Step::Operation(op));
        self
    }

    pub fn transition(mut self, id: i64, from: OpState, to: OpState) -> Self {
        self.steps.push(Step::Transition {
            id,
            from,
            to,
            error: None,
        });
        self
    }

    /// A transition that records why (a failure's reason).
    pub fn transition_failed(mut self, id: i64, from: OpState, reason: &str) -> Self {
        self.steps.push(Step::Transition {
            id,
            from,
            to: OpState::Failed,
            error: Some(reason.to_string()),
        });
        self
    }

    /// Restores a nodegroup's count after a failed resize, unless a later resize has already
    /// written another count (as [`Store::restore_count`], inside the batch).
    pub fn restore_count(mut self, nodegroup_id: i64, failed_count: i64, old_count: i64) -> Self {
        self.steps.push(Step::RestoreCount {
            nodegroup_id,
            failed_count,
            old_count,
        });
        self
    }

    /// Deletes a cluster's row and its nodegroups' (a finished cluster delete).
    pub fn delete_cluster(mut self, uuid: &str) -> Self {
        self.steps.push(Step::DeleteCluster(uuid.to_string()));
        self
    }

    /// Deletes a nodegroup row (a finished nodegroup delete).
    pub fn delete_nodegroup(mut self, id: i64) -> Self {
        self.steps.push(Step::DeleteNodeGroup(id));
        self
    }
}

/// What [`Store::claim_operations`] took: how many ended superseded, which now run.
#[derive(Debug, Default)]
pub struct Claim {
    pub superseded: u64,
    pub running: Vec<i64>,
}

const OP_INSERT: &str = "INSERT INTO magnum_rs_operation \
    (kind, cluster_uuid, nodegroup_id, old_count, new_count, payload, state, attempts, created_at) \
    VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?)";

pub(crate) async fn insert_operation(
    conn: &mut Conn,
    op: &NewOperation,
) -> Result<(), sqlx::Error> {
    let binds = vec![
        Bind::text(op.payload.kind().as_str()),
        Bind::text(&op.cluster_uuid),
        Bind::Int(op.nodegroup_id),
        Bind::Int(op.old_count),
        Bind::Int(op.new_count),
        Bind::Text(Some(op.payload.to_stored())),
        Bind::text(OpState::Pending.as_str()),
        Bind::text(now()),
    ];
    stmt(OP_INSERT).bind_all(binds).execute(conn).await?;
    Ok(())
}

/// A row of `magnum_rs_operation` as [`OP_COLUMNS`] reads it.
#[derive(sqlx::FromRow)]
struct OperationRow {
    id: i64,
    kind: String,
    cluster_uuid: String,
    nodegroup_id: Option<i64>,
    old_count: Option<i64>,
    new_count: Option<i64>,
    payload: Option<String>,
    state: String,
    attempts: i64,
    wait_object: Option<String>,
    wait_generation: Option<i64>,
    started_at: Option<NaiveDateTime>,
    deadline_at: Option<NaiveDateTime>,
    progress: Option<String>,
}

impl TryFrom<OperationRow> for Operation {
    type Error = sqlx::Error;

    fn try_from(r: OperationRow) -> Result<Self, sqlx::Error> {
        Ok(Operation {
            id: r.id,
            cluster_uuid: r.cluster_uuid,
            nodegroup_id: r.nodegroup_id,
            old_count: r.old_count,
            new_count: r.new_count,
            payload: OpPayload::from_stored(&r.kind, r.payload.as_deref())
                .map_err(|e| sqlx::Error::Decode(e.into()))?,
            state: OpState::parse(&r.state).ok_or_else(|| {
                sqlx::Error::Decode(format!("unknown operation state {}", r.state).into())
            })?,
            attempts: r.attempts,
            wait_object: r.wait_object,
            wait_generation: r.wait_generation,
            started_at: r.started_at.as_ref().map(stored),
            deadline_at: r.deadline_at.as_ref().map(stored),
            progress: r.progress,
        })
    }
}

/// The operations `sql` selects ([`OP_COLUMNS`]).
async fn operations(
    sql: String,
    binds: Vec<Bind>,
    conn: &mut Conn,
) -> Result<Vec<Operation>, sqlx::Error> {
    let rows: Vec<OperationRow> = stmt(sql).bind_all(binds).fetch_all(conn).await?;
    rows.into_iter().map(Operation::try_from).collect()
}

async fn transition_on(
    conn: &mut Conn,
    id: i64,
    from: OpState,
    to: OpState,
    error: Option<&str>,
) -> Result<bool, sqlx::Error> {
    let r = stmt(
        "UPDATE magnum_rs_operation SET state = ?, last_error = ?, attempts = attempts + ?, \
         updated_at = ? WHERE id = ? AND state = ?",
    )
    .bind(to.as_str())
    .bind(error.map(str::to_string))
    .bind(i64::from(to == OpState::Running))
    .bind(now())
    .bind(id)
    .bind(from.as_str())
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}

const OP_COLUMNS: &str =
    "id, kind, cluster_uuid, nodegroup_id, old_count, new_count, payload, state, attempts, \
     wait_object, wait_generation, started_at, deadline_at, progress";

impl Store {
    /// Runs a batch in one transaction. False (and nothing written) when a transition found
    /// its operation in another state.
    pub async fn commit(&self, batch: Batch) -> Result<bool, sqlx::Error> {
        let mut tx = self.begin().await?;
        let created = now();
        let mut inserted_ng: Option<i64> = None;
        for step in batch.steps {
            match step {
                Step::UpdateCluster { id, changes } => {
                    update_columns(&mut tx, id, changes).await?;
                }
                Step::UpdateNodeGroup { id, changes } => {
                    update_columns(&mut tx, id, changes).await?;
                }
                Step::InsertNodeGroup(ng) => {
                    insert_nodegroup_on(&mut tx, &ng, &created).await?;
                    let id: i64 = stmt("SELECT id FROM nodegroup WHERE uuid = ?")
                        .bind(&ng.uuid)
                        .scalar(&mut tx)
                        .await?;
                    inserted_ng = Some(id);
                }
                Step::Operation(mut op) => {
                    if op.nodegroup_id.is_none() {
                        op.nodegroup_id = inserted_ng;
                    }
                    insert_operation(&mut tx, &op).await?;
                }
                Step::RestoreCount {
                    nodegroup_id,
                    failed_count,
                    old_count,
                } => {
                    stmt(
                        "UPDATE nodegroup SET node_count = ?, updated_at = ? \
                         WHERE id = ? AND node_count = ?",
                    )
                    .bind(old_count)
                    .bind(created.clone())
                    .bind(nodegroup_id)
                    .bind(failed_count)
                    .execute(&mut tx)
                    .await?;
                }
                Step::DeleteCluster(uuid) => {
                    stmt("DELETE FROM nodegroup WHERE cluster_id = ?")
                        .bind(uuid.clone())
                        .execute(&mut tx)
                        .await?;
                    stmt("DELETE FROM cluster WHERE uuid = ?")
                        .bind(uuid)
                        .execute(&mut tx)
                        .await?;
                }
                Step::DeleteNodeGroup(id) => {
                    stmt("DELETE FROM nodegroup WHERE id = ?")
                        .bind(id)
                        .execute(&mut tx)
                        .await?;
                }
                Step::Transition {
                    id,
                    from,
                    to,
                    error,
                } => {
                    if !transition_on(&mut tx, id, from, to, error.as_deref()).await? {
                        tx.rollback().await?;
                        return Ok(false);
                    }
                }
            }
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Accepts a resize: in one transaction, sets the new count and `UPDATE_IN_PROGRESS` on
    /// nodegroup and cluster (with `cluster_changes` beside them), and records the operation
    /// with the count it replaced. Returns that previous count, or why nothing was written:
    /// the nodegroup or the cluster is gone, or the cluster's status (read under its row
    /// lock) is not one `allowed` accepts, so a resize racing a delete never gets a 202.
    ///
    /// `seen` is the count the caller read before. The first write is conditional on it
    /// (`… AND node_count = seen`): the row lock it takes (InnoDB; SQLite's database write
    /// lock) and its check against the latest committed row make `seen` the replaced count
    /// when it matches, without a separate read. When another resize got there first, the
    /// row is locked, read and written again. Either way concurrent resizes of one nodegroup
    /// serialize on the lock, and operation ids follow the order in which counts were written.
    /// Rows are locked nodegroup first, then cluster, as a delete does.
    pub async fn accept_resize(
        &self,
        resize: AcceptResize,
    ) -> Result<Result<i64, ResizeRefused>, sqlx::Error> {
        let AcceptResize {
            cluster_id,
            nodegroup_id,
            seen,
            new_count,
            mut op,
            allowed,
            cluster_changes,
        } = resize;
        let in_progress = crate::model::status::UPDATE_IN_PROGRESS;
        let mut tx = self.begin().await?;
        let written_at = now();
        let matched = stmt(
            "UPDATE nodegroup SET node_count = ?, status = ?, updated_at = ? \
             WHERE id = ? AND node_count = ?",
        )
        .bind(new_count)
        .bind(in_progress)
        .bind(written_at.clone())
        .bind(nodegroup_id)
        .bind(seen)
        .execute(&mut tx)
        .await?
        .rows_affected()
            == 1;
        let old = if matched {
            seen
        } else {
            // Another count was written since the caller's read (or the row is gone): lock,
            // read, write.
            stmt("UPDATE nodegroup SET updated_at = updated_at WHERE id = ?")
                .bind(nodegroup_id)
                .execute(&mut tx)
                .await?;
            let old: Option<Option<i64>> = stmt("SELECT node_count FROM nodegroup WHERE id = ?")
                .bind(nodegroup_id)
                .scalar_optional(&mut tx)
                .await?;
            let Some(old) = old else {
                tx.rollback().await?;
                return Ok(Err(ResizeRefused::NodeGroupGone));
            };
            update_columns(
                &mut tx,
                nodegroup_id,
                vec![
                    (NodeGroupCol::NodeCount, Bind::Int(Some(new_count))),
                    (NodeGroupCol::Status, Bind::text(in_progress)),
                    (NodeGroupCol::UpdatedAt, Bind::text(written_at.clone())),
                ],
            )
            .await?;
            old.unwrap_or(1)
        };
        stmt("UPDATE cluster SET updated_at = updated_at WHERE id = ?")
            .bind(cluster_id)
            .execute(&mut tx)
            .await?;
        let current: Option<Option<String>> = stmt("SELECT status FROM cluster WHERE id = ?")
            .bind(cluster_id)
            .scalar_optional(&mut tx)
            .await?;
        let refused = match &current {
            None => Some(ResizeRefused::ClusterGone),
            Some(s) if !allowed(s.as_deref().unwrap_or_default()) => {
                Some(ResizeRefused::ClusterStatus(s.clone().unwrap_or_default()))
            }
            Some(_) => None,
        };
        if let Some(refused) = refused {
            tx.rollback().await?;
            return Ok(Err(refused));
        }
        let mut changes = cluster_columns(&cluster_changes);
        changes.push((ClusterCol::Status, Bind::text(in_progress)));
        changes.push((ClusterCol::UpdatedAt, Bind::text(written_at)));
        update_columns(&mut tx, cluster_id, changes).await?;
        op.old_count = Some(old);
        op.nodegroup_id = Some(nodegroup_id);
        op.new_count = Some(new_count);
        insert_operation(&mut tx, &op).await?;
        tx.commit().await?;
        Ok(Ok(old))
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

    /// Pending operations, oldest first.
    pub async fn pending_operations(&self, limit: i64) -> Result<Vec<Operation>, sqlx::Error> {
        let sql = format!(
            "SELECT {OP_COLUMNS} FROM magnum_rs_operation WHERE state = ? ORDER BY id LIMIT ?"
        );
        let binds = vec![
            Bind::text(OpState::Pending.as_str()),
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

    /// Marks earlier pending resizes of a nodegroup superseded by operation `latest`.
    pub async fn supersede_resizes(
        &self,
        nodegroup_id: i64,
        latest: i64,
    ) -> Result<u64, sqlx::Error> {
        let r = stmt(
            "UPDATE magnum_rs_operation SET state = ?, updated_at = ? \
             WHERE nodegroup_id = ? AND kind = 'resize' AND state = ? AND id < ?",
        )
        .bind(OpState::Superseded.as_str())
        .bind(now())
        .bind(nodegroup_id)
        .bind(OpState::Pending.as_str())
        .bind(latest)
        .execute(&mut self.conn().await?)
        .await?;
        Ok(r.rows_affected())
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
        if moved && op.kind() == OpKind::Resize {
            if let Some(ng) = op.nodegroup_id {
                stmt(
                    "UPDATE magnum_rs_operation SET state = ?, updated_at = ? \
                     WHERE nodegroup_id = ? AND kind = 'resize' AND state = ? AND id < ?",
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

    /// Waiting operations whose deadline has passed (an indexed range read).
    pub async fn expired_operations(&self) -> Result<Vec<Operation>, sqlx::Error> {
        let sql = format!(
            "SELECT {OP_COLUMNS} FROM magnum_rs_operation WHERE state = ? AND deadline_at <= ? \
             ORDER BY id"
        );
        let binds = vec![Bind::text(OpState::Waiting.as_str()), Bind::text(now())];
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

    /// Restores a nodegroup's count after a failed resize, unless a later resize has already
    /// written another count.
    pub async fn restore_count(
        &self,
        nodegroup_id: i64,
        failed_count: i64,
        old_count: i64,
    ) -> Result<bool, sqlx::Error> {
        let r = stmt(
            "UPDATE nodegroup SET node_count = ?, updated_at = ? WHERE id = ? AND node_count = ?",
        )
        .bind(old_count)
        .bind(now())
        .bind(nodegroup_id)
        .bind(failed_count)
        .execute(&mut self.conn().await?)
        .await?;
        Ok(r.rows_affected() == 1)
    }
}
