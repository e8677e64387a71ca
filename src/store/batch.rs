//! Writes that land together or not at all: a [`Batch`] of steps, each naming its rows by
//! uuid, behind the [`Guard`]s they depend on, committed in one transaction by
//! [`Store::commit`]. Handlers and the operations worker write through it; a refusal
//! ([`Refused`]) writes nothing.

use super::changes::{cluster_columns, nodegroup_columns, ClusterSet, NodeGroupSet};
use super::cluster_credentials::{
    clear_token_on, delete_credential_on, insert_token_on, KeptToken,
};
use super::clusters::insert_cluster_on;
use super::guard::{self, Guard, Refused};
use super::nodegroups::insert_nodegroup_on;
use super::operation_rows::{insert_operation, transition_on};
use super::schema::{ClusterCol, NodeGroupCol, TemplateCol};
use super::x509keypairs::{delete_certificates_on, insert_certificates_on, NewCertificates};
use super::{now, stmt, update_columns, update_columns_where, Bind, Dialect, Store};
use crate::model::{Cluster, NodeGroup, Status};
use crate::operation::{NewOperation, OpState};

/// Writes that must land together, with at most one operation record, and the conditions
/// they depend on.
#[derive(Clone, Debug, Default)]
pub struct Batch {
    guards: Vec<Guard>,
    steps: Vec<Step>,
}

#[derive(Clone, Debug)]
enum Step {
    UpdateCluster {
        uuid: String,
        changes: Vec<(ClusterCol, Bind)>,
        unless_deleting: bool,
    },
    UpdateNodeGroup {
        uuid: String,
        changes: Vec<(NodeGroupCol, Bind)>,
        unless_deleting: bool,
    },
    /// The cluster's status once its last open operation ends: written only when no
    /// operation of the cluster but `except` is pending, running or waiting (read under the
    /// cluster's lock, so two operations ending at once cannot both leave it in progress).
    SettleCluster {
        uuid: String,
        status: Status,
        except: i64,
        /// Only a cluster left `*_IN_PROGRESS` (a roll-back must not hide a failure).
        only_in_progress: bool,
    },
    /// A resize's new count; the count it replaces becomes the `old_count` of the batch's
    /// operation.
    SetCount {
        nodegroup_uuid: String,
        count: i64,
    },
    InsertCluster(Box<Cluster>),
    InsertNodeGroup(Box<NodeGroup>),
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
        nodegroup_uuid: String,
        failed_count: i64,
        old_count: i64,
        /// Recorded when the count was restored: the backend set back to it.
        roll_back: Option<NewOperation>,
    },
    DeleteNodeGroup(String),
    /// Columns of a template (its PATCH: only those the patch changed).
    UpdateTemplate {
        uuid: String,
        changes: Vec<(TemplateCol, Bind)>,
    },
    DeleteCluster(String),
    DeleteTemplate(String),
    /// A cluster's certificates and its refs to them (once).
    InsertCertificates(Box<NewCertificates>),
    /// The create request's token, kept until the cluster's credential is made.
    KeepToken(Box<KeptToken>),
    /// That token cleared (a create that ended without using it).
    ClearToken(String),
}

/// What a committed batch read under its locks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Committed {
    /// The count a [`Batch::set_count`] replaced (a NULL count reads 1, as Magnum's default).
    pub old_count: Option<i64>,
    /// A [`Batch::restore_count_and_roll_back`] restored the count and recorded its roll-back.
    pub rolled_back: bool,
}

impl Batch {
    /// A condition the writes depend on, checked under the rows' locks before any is made.
    pub fn guard(mut self, g: Guard) -> Self {
        self.guards.push(g);
        self
    }

    /// Stores a cluster's certificates and names them in its refs, unless it has a CA
    /// already.
    pub fn certificates(mut self, new: NewCertificates) -> Self {
        self.steps.push(Step::InsertCertificates(Box::new(new)));
        self
    }

    /// Writes `changes` to the cluster `uuid`.
    pub fn cluster(self, uuid: &str, changes: impl IntoIterator<Item = ClusterSet>) -> Self {
        self.update_cluster(uuid, changes, false)
    }

    /// Writes `changes` to the cluster `uuid` unless it is being deleted (an outcome of
    /// other work must not overwrite `DELETE_IN_PROGRESS`).
    pub fn cluster_unless_deleting(
        self,
        uuid: &str,
        changes: impl IntoIterator<Item = ClusterSet>,
    ) -> Self {
        self.update_cluster(uuid, changes, true)
    }

    /// Writes `changes` to the nodegroup `uuid`.
    pub fn nodegroup(self, uuid: &str, changes: impl IntoIterator<Item = NodeGroupSet>) -> Self {
        self.update_nodegroup(uuid, changes, false)
    }

    /// Writes `changes` to the nodegroup `uuid` unless it is being deleted.
    pub fn nodegroup_unless_deleting(
        self,
        uuid: &str,
        changes: impl IntoIterator<Item = NodeGroupSet>,
    ) -> Self {
        self.update_nodegroup(uuid, changes, true)
    }

    fn update_cluster(
        mut self,
        uuid: &str,
        changes: impl IntoIterator<Item = ClusterSet>,
        unless_deleting: bool,
    ) -> Self {
        let changes: Vec<ClusterSet> = changes.into_iter().collect();
        self.steps.push(Step::UpdateCluster {
            uuid: uuid.to_string(),
            changes: cluster_columns(&changes),
            unless_deleting,
        });
        self
    }

    fn update_nodegroup(
        mut self,
        uuid: &str,
        changes: impl IntoIterator<Item = NodeGroupSet>,
        unless_deleting: bool,
    ) -> Self {
        let changes: Vec<NodeGroupSet> = changes.into_iter().collect();
        self.steps.push(Step::UpdateNodeGroup {
            uuid: uuid.to_string(),
            changes: nodegroup_columns(&changes),
            unless_deleting,
        });
        self
    }

    /// `status` (with an empty reason) on the cluster `uuid` if operation `except` is the
    /// last of its open operations, and the cluster is not being deleted. The batch needs a
    /// [`Guard::Cluster`] on it (its lock makes the count true until the commit).
    pub fn settle_cluster(mut self, uuid: &str, status: Status, except: i64) -> Self {
        self.steps.push(Step::SettleCluster {
            uuid: uuid.to_string(),
            status,
            except,
            only_in_progress: false,
        });
        self
    }

    /// [`Batch::settle_cluster`], only for a cluster that other work left `*_IN_PROGRESS`
    /// (a failure it shows stays).
    pub fn settle_cluster_in_progress(mut self, uuid: &str, status: Status, except: i64) -> Self {
        self.steps.push(Step::SettleCluster {
            uuid: uuid.to_string(),
            status,
            except,
            only_in_progress: true,
        });
        self
    }

    /// A resize's new count of the nodegroup `uuid`; the replaced count (as a guard locked it,
    /// before this batch's steps, or read then) becomes the `old_count` of the batch's
    /// operation (and of [`Committed`]).
    pub fn set_count(mut self, nodegroup_uuid: &str, count: i64) -> Self {
        self.steps.push(Step::SetCount {
            nodegroup_uuid: nodegroup_uuid.to_string(),
            count,
        });
        self
    }

    pub fn insert_cluster(mut self, c: Cluster) -> Self {
        self.steps.push(Step::InsertCluster(Box::new(c)));
        self
    }

    /// Keeps the create request's token until the worker has made the cluster's
    /// application credential with it ([`super::cluster_credentials`]).
    pub fn keep_token_for_credential(mut self, kept: KeptToken) -> Self {
        self.steps.push(Step::KeepToken(Box::new(kept)));
        self
    }

    /// Clears the token a failed create kept for its credential: nothing kept outlives
    /// its use.
    pub fn clear_credential_token(mut self, cluster_uuid: &str) -> Self {
        self.steps.push(Step::ClearToken(cluster_uuid.to_string()));
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
    /// written another count.
    pub fn restore_count(
        mut self,
        nodegroup_uuid: &str,
        failed_count: i64,
        old_count: i64,
    ) -> Self {
        self.steps.push(Step::RestoreCount {
            nodegroup_uuid: nodegroup_uuid.to_string(),
            failed_count,
            old_count,
            roll_back: None,
        });
        self
    }

    /// [`Batch::restore_count`], and when the count was restored, `roll_back` recorded in
    /// the same transaction: the operation that sets the backend back to it. Recorded before
    /// it is sent, so a process that dies in between sends it after its restart.
    pub fn restore_count_and_roll_back(
        mut self,
        nodegroup_uuid: &str,
        failed_count: i64,
        old_count: i64,
        roll_back: NewOperation,
    ) -> Self {
        self.steps.push(Step::RestoreCount {
            nodegroup_uuid: nodegroup_uuid.to_string(),
            failed_count,
            old_count,
            roll_back: Some(roll_back),
        });
        self
    }

    /// Deletes a cluster's row and its nodegroups' (a finished cluster delete).
    pub fn delete_cluster(mut self, uuid: &str) -> Self {
        self.steps.push(Step::DeleteCluster(uuid.to_string()));
        self
    }

    /// Deletes a nodegroup row (a finished nodegroup delete).
    pub fn delete_nodegroup(mut self, uuid: &str) -> Self {
        self.steps.push(Step::DeleteNodeGroup(uuid.to_string()));
        self
    }

    /// Writes columns of the template `uuid` (the store's template PATCH builds them).
    pub(crate) fn update_template(mut self, uuid: &str, changes: Vec<(TemplateCol, Bind)>) -> Self {
        self.steps.push(Step::UpdateTemplate {
            uuid: uuid.to_string(),
            changes,
        });
        self
    }

    pub fn delete_template(mut self, uuid: &str) -> Self {
        self.steps.push(Step::DeleteTemplate(uuid.to_string()));
        self
    }
}

/// The condition of a write that must not overwrite a delete in progress.
const NOT_DELETING: &str = "(status IS NULL OR status <> 'DELETE_IN_PROGRESS')";

/// The condition of a settle that must not hide a failure either.
const IN_PROGRESS_NOT_DELETING: &str =
    "(status LIKE '%IN_PROGRESS' AND status <> 'DELETE_IN_PROGRESS')";

/// Whether an error is InnoDB's deadlock verdict (SQLSTATE 40001): the transaction was
/// rolled back and may simply run again.
fn is_deadlock(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.code().as_deref() == Some("40001"))
}

/// How often a batch that InnoDB chose as a deadlock's victim runs again.
const DEADLOCK_RETRIES: u32 = 3;

impl Store {
    /// Runs a batch in one transaction: its guards under the rows' locks, then its steps.
    /// `Err(Refused)` (and nothing written) when a guard does not hold or a transition found
    /// its operation in another state.
    pub async fn commit(&self, batch: Batch) -> Result<Result<Committed, Refused>, sqlx::Error> {
        if self.dialect() == Dialect::Mysql {
            let projects = guard::quota_projects(&batch.guards);
            if !projects.is_empty() {
                guard::ensure_project_rows(&mut self.conn().await?, &projects).await?;
            }
        }
        let mut retries = 0;
        loop {
            match self.commit_once(&batch).await {
                Err(e) if is_deadlock(&e) && retries < DEADLOCK_RETRIES => {
                    retries += 1;
                    tracing::debug!(retries, "deadlock: the batch runs again");
                }
                other => return other,
            }
        }
    }

    async fn commit_once(&self, batch: &Batch) -> Result<Result<Committed, Refused>, sqlx::Error> {
        let mut tx = self.begin().await?;
        let locked = match guard::check(&mut tx, self.dialect(), &batch.guards).await? {
            Ok(locked) => locked,
            Err(refused) => {
                tx.rollback().await?;
                return Ok(Err(refused));
            }
        };
        let written = now();
        let mut committed = Committed::default();
        for step in &batch.steps {
            match step {
                Step::UpdateCluster {
                    uuid,
                    changes,
                    unless_deleting,
                } => {
                    let only = unless_deleting.then_some(NOT_DELETING);
                    update_columns_where(&mut tx, uuid, changes.clone(), only).await?;
                }
                Step::UpdateNodeGroup {
                    uuid,
                    changes,
                    unless_deleting,
                } => {
                    let only = unless_deleting.then_some(NOT_DELETING);
                    update_columns_where(&mut tx, uuid, changes.clone(), only).await?;
                }
                Step::SettleCluster {
                    uuid,
                    status,
                    except,
                    only_in_progress,
                } => {
                    let others: Option<i64> = stmt(
                        "SELECT id FROM magnum_rs_operation WHERE cluster_uuid = ? \
                         AND state IN ('pending', 'running', 'waiting') AND id <> ? LIMIT 1",
                    )
                    .bind(uuid.as_str())
                    .bind(*except)
                    .scalar_optional(&mut tx)
                    .await?;
                    if others.is_none() {
                        let changes = cluster_columns(&ClusterSet::status(*status));
                        let only = if *only_in_progress {
                            IN_PROGRESS_NOT_DELETING
                        } else {
                            NOT_DELETING
                        };
                        update_columns_where(&mut tx, uuid, changes, Some(only)).await?;
                    }
                }
                Step::SetCount {
                    nodegroup_uuid,
                    count,
                } => {
                    // Read under a guard's lock already, or read now.
                    let old = match locked.node_count(nodegroup_uuid) {
                        Some(count) => Some(count),
                        None => {
                            stmt("SELECT node_count FROM nodegroup WHERE uuid = ?")
                                .bind(nodegroup_uuid.as_str())
                                .scalar_optional(&mut tx)
                                .await?
                        }
                    };
                    let Some(old) = old else {
                        tx.rollback().await?;
                        return Ok(Err(Refused::NodeGroupGone));
                    };
                    committed.old_count = Some(old.unwrap_or(1));
                    update_columns(
                        &mut tx,
                        nodegroup_uuid,
                        vec![(NodeGroupCol::NodeCount, Bind::Int(Some(*count)))],
                    )
                    .await?;
                }
                Step::InsertCluster(c) => insert_cluster_on(&mut tx, c, &written).await?,
                Step::KeepToken(kept) => insert_token_on(&mut tx, kept, &written).await?,
                Step::ClearToken(uuid) => clear_token_on(&mut tx, uuid).await?,
                Step::InsertCertificates(new) => {
                    insert_certificates_on(&mut tx, new, &written).await?;
                }
                Step::InsertNodeGroup(ng) => insert_nodegroup_on(&mut tx, ng, &written).await?,
                Step::Operation(op) => {
                    let mut op = op.clone();
                    if committed.old_count.is_some() {
                        op.old_count = committed.old_count;
                    }
                    insert_operation(&mut tx, &op).await?;
                }
                Step::RestoreCount {
                    nodegroup_uuid,
                    failed_count,
                    old_count,
                    roll_back,
                } => {
                    let restored = stmt(
                        "UPDATE nodegroup SET node_count = ?, updated_at = ? \
                         WHERE uuid = ? AND node_count = ?",
                    )
                    .bind(*old_count)
                    .bind(written.clone())
                    .bind(nodegroup_uuid.as_str())
                    .bind(*failed_count)
                    .execute(&mut tx)
                    .await?
                    .rows_affected()
                        == 1;
                    if let (true, Some(op)) = (restored, roll_back) {
                        insert_operation(&mut tx, op).await?;
                        committed.rolled_back = true;
                    }
                }
                Step::DeleteCluster(uuid) => {
                    delete_certificates_on(&mut tx, uuid).await?;
                    delete_credential_on(&mut tx, uuid).await?;
                    stmt("DELETE FROM nodegroup WHERE cluster_id = ?")
                        .bind(uuid.as_str())
                        .execute(&mut tx)
                        .await?;
                    stmt("DELETE FROM cluster WHERE uuid = ?")
                        .bind(uuid.as_str())
                        .execute(&mut tx)
                        .await?;
                }
                Step::DeleteNodeGroup(uuid) => {
                    stmt("DELETE FROM nodegroup WHERE uuid = ?")
                        .bind(uuid.as_str())
                        .execute(&mut tx)
                        .await?;
                }
                Step::UpdateTemplate { uuid, changes } => {
                    update_columns(&mut tx, uuid, changes.clone()).await?;
                }
                Step::DeleteTemplate(uuid) => {
                    stmt("DELETE FROM cluster_template WHERE uuid = ?")
                        .bind(uuid.as_str())
                        .execute(&mut tx)
                        .await?;
                }
                Step::Transition {
                    id,
                    from,
                    to,
                    error,
                } => {
                    if !transition_on(&mut tx, *id, *from, *to, error.as_deref()).await? {
                        tx.rollback().await?;
                        return Ok(Err(Refused::OperationMoved));
                    }
                }
            }
        }
        tx.commit().await?;
        Ok(Ok(committed))
    }
}
