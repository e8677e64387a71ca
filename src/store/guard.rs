//! What a write depends on, checked under the rows' locks in the transaction that writes it
//! (issue 28). A handler reads rows to decide; by the time it writes, another request may have
//! deleted them, changed their status, or (on SQLite, before ids stopped being reused) put
//! another project's row under the same id. So every write names its rows by uuid and states
//! its conditions as [`Guard`]s; [`check`] locks those rows and evaluates the conditions
//! inside the writing transaction, and a refusal writes nothing.
//!
//! Locks are always taken in one order, whatever order the guards were given in: the
//! project (for a quota), then templates, then clusters, then nodegroups, each set by uuid.
//! Two transactions that lock the same rows therefore never wait for each other in a cycle.
//! The conditions are then checked in the order the caller gave them, which is the order
//! of its refusals (Magnum's check order).
//!
//! On SQLite every write transaction begins `IMMEDIATE` (it holds the database's write lock
//! from its first statement), so the reads below need no locking clause. On MySQL/MariaDB
//! they are locking reads (`FOR UPDATE`; `LOCK IN SHARE MODE` for a template a create only
//! needs to exist). The counts (a quota, a template's users) are plain reads taken after
//! every lock is held, so InnoDB's read view is created after the last competing writer
//! committed.

use std::collections::{BTreeMap, BTreeSet};

use super::{stmt, Conn, Dialect};
use crate::model::Tenancy;

/// A status rule: whether a row in this status allows the write.
pub type StatusRule = fn(&str) -> bool;

/// One condition of a write.
#[derive(Clone, Debug)]
pub enum Guard {
    /// The cluster exists and the caller's tenancy sees it.
    Cluster { uuid: String, tenancy: Tenancy },
    /// The cluster's status is one the rule allows (a gone cluster refuses as gone).
    ClusterStatus { uuid: String, allowed: StatusRule },
    /// The nodegroup exists and belongs to the cluster.
    NodeGroup { uuid: String, cluster_uuid: String },
    /// The nodegroup's status is one the rule allows (a gone nodegroup refuses as gone).
    NodeGroupStatus { uuid: String, allowed: StatusRule },
    /// The template exists (a cluster create on it).
    Template { uuid: String },
    /// No cluster uses the template, and no upgrade that has not ended moves one to it (its
    /// delete; a PATCH only an unused template allows).
    TemplateUnused { uuid: String },
    /// The project owns fewer than `limit` clusters (a cluster create).
    ClusterQuota { project_id: String, limit: i64 },
}

impl Guard {
    pub fn cluster(uuid: &str, tenancy: Tenancy) -> Self {
        Guard::Cluster {
            uuid: uuid.to_string(),
            tenancy,
        }
    }

    pub fn cluster_status(uuid: &str, allowed: StatusRule) -> Self {
        Guard::ClusterStatus {
            uuid: uuid.to_string(),
            allowed,
        }
    }

    pub fn nodegroup(uuid: &str, cluster_uuid: &str) -> Self {
        Guard::NodeGroup {
            uuid: uuid.to_string(),
            cluster_uuid: cluster_uuid.to_string(),
        }
    }

    pub fn nodegroup_status(uuid: &str, allowed: StatusRule) -> Self {
        Guard::NodeGroupStatus {
            uuid: uuid.to_string(),
            allowed,
        }
    }

    pub fn template(uuid: &str) -> Self {
        Guard::Template {
            uuid: uuid.to_string(),
        }
    }

    pub fn template_unused(uuid: &str) -> Self {
        Guard::TemplateUnused {
            uuid: uuid.to_string(),
        }
    }

    pub fn cluster_quota(project_id: &str, limit: i64) -> Self {
        Guard::ClusterQuota {
            project_id: project_id.to_string(),
            limit,
        }
    }
}

/// Why a guarded write wrote nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    ClusterGone,
    /// The cluster's status when the write was tried.
    ClusterStatus(String),
    NodeGroupGone,
    /// The nodegroup's status when the write was tried.
    NodeGroupStatus(String),
    TemplateGone,
    TemplateInUse,
    /// The project already owns `limit` clusters or more.
    QuotaReached {
        limit: i64,
    },
    /// An operation's transition found it in another state: another writer ended it first.
    OperationMoved,
}

/// A locked cluster row: what the guards read of it.
struct ClusterRow {
    status: Option<String>,
    project_id: Option<String>,
    user_id: Option<String>,
}

/// A locked nodegroup row.
struct NodeGroupRow {
    cluster_id: String,
    status: Option<String>,
    node_count: Option<i64>,
}

/// What the locking reads found (`None`: no such row); the steps that follow read what they
/// need of the locked rows from here instead of reading them again.
#[derive(Default)]
pub(crate) struct Locked {
    clusters: BTreeMap<String, Option<ClusterRow>>,
    nodegroups: BTreeMap<String, Option<NodeGroupRow>>,
    templates: BTreeMap<String, bool>,
    template_users: BTreeMap<String, i64>,
    project_clusters: BTreeMap<String, i64>,
}

/// The projects whose lock rows `guards` need (to be made before the transaction).
pub(crate) fn quota_projects(guards: &[Guard]) -> BTreeSet<String> {
    guards
        .iter()
        .filter_map(|g| match g {
            Guard::ClusterQuota { project_id, .. } => Some(project_id.clone()),
            _ => None,
        })
        .collect()
}

/// Makes the lock rows of `projects` (MySQL/MariaDB; outside any transaction, so a new row
/// takes no gap lock that concurrent creates could deadlock on).
pub(crate) async fn ensure_project_rows(
    conn: &mut Conn,
    projects: &BTreeSet<String>,
) -> Result<(), sqlx::Error> {
    for p in projects {
        stmt("INSERT IGNORE INTO magnum_rs_project_lock (project_id) VALUES (?)")
            .bind(p.as_str())
            .execute(conn)
            .await?;
    }
    Ok(())
}

/// The clause that makes a read lock its rows.
fn lock_clause(dialect: Dialect, exclusive: bool) -> &'static str {
    match (dialect, exclusive) {
        (Dialect::Sqlite, _) => "",
        (Dialect::Mysql, true) => " FOR UPDATE",
        (Dialect::Mysql, false) => " LOCK IN SHARE MODE",
    }
}

impl Locked {
    /// The count of a nodegroup a guard locked: `None` when no guard named it, `Some(None)`
    /// for a NULL count.
    pub(crate) fn node_count(&self, uuid: &str) -> Option<Option<i64>> {
        self.nodegroups
            .get(uuid)
            .and_then(Option::as_ref)
            .map(|r| r.node_count)
    }
}

/// Locks the rows `guards` name and checks them, in the transaction on `conn`; what was
/// read under the locks, when every guard holds.
pub(crate) async fn check(
    conn: &mut Conn,
    dialect: Dialect,
    guards: &[Guard],
) -> Result<Result<Locked, Refused>, sqlx::Error> {
    if guards.is_empty() {
        return Ok(Ok(Locked::default()));
    }
    let locked = lock(conn, dialect, guards).await?;
    for g in guards {
        if let Err(refused) = evaluate(g, &locked) {
            return Ok(Err(refused));
        }
    }
    Ok(Ok(locked))
}

/// The locking reads, in the one lock order, then the counts.
async fn lock(conn: &mut Conn, dialect: Dialect, guards: &[Guard]) -> Result<Locked, sqlx::Error> {
    let mut projects = BTreeSet::new();
    // uuid -> whether a delete needs it exclusively
    let mut templates: BTreeMap<&str, bool> = BTreeMap::new();
    let mut clusters = BTreeSet::new();
    let mut nodegroups = BTreeSet::new();
    for g in guards {
        match g {
            Guard::Cluster { uuid, .. } | Guard::ClusterStatus { uuid, .. } => {
                clusters.insert(uuid.as_str());
            }
            Guard::NodeGroup { uuid, .. } | Guard::NodeGroupStatus { uuid, .. } => {
                nodegroups.insert(uuid.as_str());
            }
            Guard::Template { uuid } => {
                templates.entry(uuid.as_str()).or_insert(false);
            }
            Guard::TemplateUnused { uuid } => {
                templates.insert(uuid.as_str(), true);
            }
            Guard::ClusterQuota { project_id, .. } => {
                projects.insert(project_id.as_str());
            }
        }
    }
    let mut locked = Locked::default();
    if dialect == Dialect::Mysql {
        for p in &projects {
            stmt(
                "SELECT project_id FROM magnum_rs_project_lock WHERE project_id = ? FOR UPDATE"
                    .to_string(),
            )
            .bind(*p)
            .scalar_optional::<String>(conn)
            .await?;
        }
    }
    for (uuid, exclusive) in &templates {
        let found: Option<i64> = stmt(format!(
            "SELECT id FROM cluster_template WHERE uuid = ?{}",
            lock_clause(dialect, *exclusive)
        ))
        .bind(*uuid)
        .scalar_optional(conn)
        .await?;
        locked.templates.insert(uuid.to_string(), found.is_some());
    }
    for uuid in &clusters {
        let row: Option<(Option<String>, Option<String>, Option<String>)> = stmt(format!(
            "SELECT status, project_id, user_id FROM cluster WHERE uuid = ?{}",
            lock_clause(dialect, true)
        ))
        .bind(*uuid)
        .fetch_optional(conn)
        .await?;
        let row = row.map(|(status, project_id, user_id)| ClusterRow {
            status,
            project_id,
            user_id,
        });
        locked.clusters.insert(uuid.to_string(), row);
    }
    for uuid in &nodegroups {
        let row: Option<(String, Option<String>, Option<i64>)> = stmt(format!(
            "SELECT cluster_id, status, node_count FROM nodegroup WHERE uuid = ?{}",
            lock_clause(dialect, true)
        ))
        .bind(*uuid)
        .fetch_optional(conn)
        .await?;
        let row = row.map(|(cluster_id, status, node_count)| NodeGroupRow {
            cluster_id,
            status,
            node_count,
        });
        locked.nodegroups.insert(uuid.to_string(), row);
    }
    for (uuid, exclusive) in &templates {
        if *exclusive {
            let n: i64 = stmt("SELECT COUNT(*) FROM cluster WHERE cluster_template_id = ?")
                .bind(*uuid)
                .scalar(conn)
                .await?;
            // An accepted upgrade that has not ended moves its cluster to the template:
            // it uses it too (its payload names it, as serde_json writes it).
            let upgrades: i64 = stmt(
                "SELECT COUNT(*) FROM magnum_rs_operation WHERE kind = 'upgrade' \
                 AND state IN ('pending', 'running', 'waiting') AND payload LIKE ?",
            )
            .bind(format!("%\"cluster_template\":\"{uuid}\"%"))
            .scalar(conn)
            .await?;
            locked.template_users.insert(uuid.to_string(), n + upgrades);
        }
    }
    for p in &projects {
        let n: i64 = stmt("SELECT COUNT(*) FROM cluster WHERE project_id = ?")
            .bind(*p)
            .scalar(conn)
            .await?;
        locked.project_clusters.insert(p.to_string(), n);
    }
    Ok(locked)
}

/// Whether the tenancy sees a cluster row (`_add_tenant_filters`).
fn visible(tenancy: &Tenancy, row: &ClusterRow) -> bool {
    match tenancy {
        Tenancy::All => true,
        Tenancy::Project(p) => row.project_id.as_deref() == Some(p.as_str()),
        Tenancy::User(u) => row.user_id.as_deref() == Some(u.as_str()),
    }
}

fn evaluate(g: &Guard, locked: &Locked) -> Result<(), Refused> {
    let cluster = |uuid: &str| locked.clusters.get(uuid).and_then(Option::as_ref);
    let nodegroup = |uuid: &str| locked.nodegroups.get(uuid).and_then(Option::as_ref);
    match g {
        Guard::Cluster { uuid, tenancy } => match cluster(uuid) {
            Some(row) if visible(tenancy, row) => Ok(()),
            _ => Err(Refused::ClusterGone),
        },
        Guard::ClusterStatus { uuid, allowed } => {
            let row = cluster(uuid).ok_or(Refused::ClusterGone)?;
            let status = row.status.clone().unwrap_or_default();
            if allowed(&status) {
                Ok(())
            } else {
                Err(Refused::ClusterStatus(status))
            }
        }
        Guard::NodeGroup { uuid, cluster_uuid } => match nodegroup(uuid) {
            Some(row) if row.cluster_id == *cluster_uuid => Ok(()),
            _ => Err(Refused::NodeGroupGone),
        },
        Guard::NodeGroupStatus { uuid, allowed } => {
            let row = nodegroup(uuid).ok_or(Refused::NodeGroupGone)?;
            let status = row.status.clone().unwrap_or_default();
            if allowed(&status) {
                Ok(())
            } else {
                Err(Refused::NodeGroupStatus(status))
            }
        }
        Guard::Template { uuid } => match locked.templates.get(uuid) {
            Some(true) => Ok(()),
            _ => Err(Refused::TemplateGone),
        },
        Guard::TemplateUnused { uuid } => match locked.template_users.get(uuid) {
            Some(0) | None => Ok(()),
            Some(_) => Err(Refused::TemplateInUse),
        },
        Guard::ClusterQuota { project_id, limit } => {
            let n = locked
                .project_clusters
                .get(project_id)
                .copied()
                .unwrap_or(0);
            if n >= *limit {
                Err(Refused::QuotaReached { limit: *limit })
            } else {
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn locked_with_cluster(status: &str, project: &str) -> Locked {
        let mut l = Locked::default();
        l.clusters.insert(
            "c".into(),
            Some(ClusterRow {
                status: Some(status.into()),
                project_id: Some(project.into()),
                user_id: Some("u".into()),
            }),
        );
        l.nodegroups.insert(
            "n".into(),
            Some(NodeGroupRow {
                cluster_id: "c".into(),
                status: Some("DELETE_IN_PROGRESS".into()),
                node_count: Some(2),
            }),
        );
        l
    }

    /// Another project's cluster is as good as gone: a write never crosses tenancy.
    #[test]
    fn a_cluster_of_another_project_refuses_as_gone() {
        let l = locked_with_cluster("CREATE_COMPLETE", "p1");
        let mine = Guard::cluster("c", Tenancy::Project("p1".into()));
        let theirs = Guard::cluster("c", Tenancy::Project("p2".into()));
        assert_eq!(evaluate(&mine, &l), Ok(()));
        assert_eq!(evaluate(&theirs, &l), Err(Refused::ClusterGone));
        assert_eq!(evaluate(&Guard::cluster("c", Tenancy::All), &l), Ok(()));
    }

    /// A nodegroup of another cluster refuses as gone; statuses are read from the lock.
    #[test]
    fn nodegroup_guards_check_cluster_and_status() {
        let l = locked_with_cluster("UPDATE_COMPLETE", "p1");
        assert_eq!(evaluate(&Guard::nodegroup("n", "c"), &l), Ok(()));
        assert_eq!(
            evaluate(&Guard::nodegroup("n", "other"), &l),
            Err(Refused::NodeGroupGone)
        );
        let not_deleting: StatusRule = |s| s != "DELETE_IN_PROGRESS";
        assert_eq!(
            evaluate(&Guard::nodegroup_status("n", not_deleting), &l),
            Err(Refused::NodeGroupStatus("DELETE_IN_PROGRESS".into()))
        );
        assert_eq!(
            evaluate(&Guard::nodegroup_status("gone", not_deleting), &l),
            Err(Refused::NodeGroupGone)
        );
    }

    #[test]
    fn a_quota_refuses_at_its_limit() {
        let mut l = Locked::default();
        l.project_clusters.insert("p".into(), 5);
        assert_eq!(evaluate(&Guard::cluster_quota("p", 6), &l), Ok(()));
        assert_eq!(
            evaluate(&Guard::cluster_quota("p", 5), &l),
            Err(Refused::QuotaReached { limit: 5 })
        );
    }
}
