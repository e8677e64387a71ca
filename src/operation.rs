//! What an operation is, as data (no I/O): its kind, its state, what it asks the driver to
//! do ([`OpPayload`]), what it waits for. The store reads and writes these
//! ([`crate::store::operations`]); the API records them; the operations worker runs them.

use chrono::NaiveDateTime;

pub use payload::OpPayload;

mod payload;

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
    /// A failed resize's roll-back: the backend set back to the restored count.
    Rollback,
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
            OpKind::Rollback => "rollback",
        }
    }

    /// Whether the operation sets a nodegroup's count on the backend (a resize or a
    /// roll-back): of several of one nodegroup, the newest is the one that counts.
    pub fn sets_count(self) -> bool {
        matches!(self, OpKind::Resize | OpKind::Rollback)
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
    pub nodegroup_uuid: Option<String>,
    pub old_count: Option<i64>,
    pub new_count: Option<i64>,
    /// What to do (its kind) and the facts it needs.
    pub payload: OpPayload,
}

/// A recorded operation.
#[derive(Clone, Debug)]
pub struct Operation {
    pub id: i64,
    pub cluster_uuid: String,
    pub nodegroup_uuid: Option<String>,
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
    pub started_at: Option<NaiveDateTime>,
    pub deadline_at: Option<NaiveDateTime>,
    pub progress: Option<String>,
    /// The first of the passing driver failures in a row (retries end at the driver's
    /// progress deadline from here).
    pub retry_since: Option<NaiveDateTime>,
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
