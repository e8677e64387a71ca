//! Typed changes to the rows handlers and the worker write: each variant names one column
//! of Magnum's table and carries a value of that column's type. Only the store turns them
//! into SQL (column names and binds), so no caller spells a table or a column.

use serde_json::{Map, Value};

use super::schema::{ClusterCol, NodeGroupCol};
use super::Bind;
use crate::model::Status;

/// A change to one column of `cluster`.
#[derive(Clone, Debug, PartialEq)]
pub enum ClusterSet {
    Status(String),
    StatusReason(Option<String>),
    HealthStatus(Option<String>),
    /// A JSON dict column: `{}` when `None`, as Magnum's JSONEncodedDict writes it.
    HealthStatusReason(Option<Map<String, Value>>),
    StackId(Option<String>),
    ApiAddress(Option<String>),
    CoeVersion(Option<String>),
    ClusterTemplateId(String),
}

/// A change to one column of `nodegroup`.
#[derive(Clone, Debug, PartialEq)]
pub enum NodeGroupSet {
    Status(String),
    StackId(Option<String>),
    StatusReason(Option<String>),
    Version(Option<String>),
    /// A count written outside a resize (a resize goes through `Store::accept_resize`).
    NodeCount(i64),
    MinNodeCount(i64),
    MaxNodeCount(Option<i64>),
    NodeLabels(Option<Map<String, Value>>),
    NodeTaints(Option<Vec<Value>>),
    /// A JSON list column: `[]` when empty, as Magnum's JSONEncodedList writes it.
    NodeAddresses(Vec<Value>),
}

impl ClusterSet {
    /// `status` with an empty `status_reason`, the pair every state change writes.
    pub fn status(status: Status) -> [ClusterSet; 2] {
        [
            ClusterSet::Status(status.into()),
            ClusterSet::StatusReason(None),
        ]
    }

    /// A `*_FAILED` status with its reason.
    pub fn failed(status: Status, reason: &str) -> [ClusterSet; 2] {
        [
            ClusterSet::Status(status.into()),
            ClusterSet::StatusReason(Some(reason.to_string())),
        ]
    }

    pub(crate) fn column(&self) -> ClusterCol {
        match self {
            ClusterSet::Status(_) => ClusterCol::Status,
            ClusterSet::StatusReason(_) => ClusterCol::StatusReason,
            ClusterSet::HealthStatus(_) => ClusterCol::HealthStatus,
            ClusterSet::HealthStatusReason(_) => ClusterCol::HealthStatusReason,
            ClusterSet::StackId(_) => ClusterCol::StackId,
            ClusterSet::ApiAddress(_) => ClusterCol::ApiAddress,
            ClusterSet::CoeVersion(_) => ClusterCol::CoeVersion,
            ClusterSet::ClusterTemplateId(_) => ClusterCol::ClusterTemplateId,
        }
    }

    pub(crate) fn bind(&self) -> Bind {
        match self {
            ClusterSet::Status(s) | ClusterSet::ClusterTemplateId(s) => Bind::text(s),
            ClusterSet::StatusReason(s)
            | ClusterSet::HealthStatus(s)
            | ClusterSet::StackId(s)
            | ClusterSet::ApiAddress(s)
            | ClusterSet::CoeVersion(s) => Bind::Text(s.clone()),
            ClusterSet::HealthStatusReason(m) => Bind::json_map(m),
        }
    }
}

impl NodeGroupSet {
    /// `status` with an empty `status_reason`.
    pub fn status(status: Status) -> [NodeGroupSet; 2] {
        [
            NodeGroupSet::Status(status.into()),
            NodeGroupSet::StatusReason(None),
        ]
    }

    /// A `*_FAILED` status with its reason.
    pub fn failed(status: Status, reason: &str) -> [NodeGroupSet; 2] {
        [
            NodeGroupSet::Status(status.into()),
            NodeGroupSet::StatusReason(Some(reason.to_string())),
        ]
    }

    pub(crate) fn column(&self) -> NodeGroupCol {
        match self {
            NodeGroupSet::Status(_) => NodeGroupCol::Status,
            NodeGroupSet::StackId(_) => NodeGroupCol::StackId,
            NodeGroupSet::StatusReason(_) => NodeGroupCol::StatusReason,
            NodeGroupSet::Version(_) => NodeGroupCol::Version,
            NodeGroupSet::NodeCount(_) => NodeGroupCol::NodeCount,
            NodeGroupSet::MinNodeCount(_) => NodeGroupCol::MinNodeCount,
            NodeGroupSet::MaxNodeCount(_) => NodeGroupCol::MaxNodeCount,
            NodeGroupSet::NodeLabels(_) => NodeGroupCol::NodeLabels,
            NodeGroupSet::NodeTaints(_) => NodeGroupCol::NodeTaints,
            NodeGroupSet::NodeAddresses(_) => NodeGroupCol::NodeAddresses,
        }
    }

    pub(crate) fn bind(&self) -> Bind {
        match self {
            NodeGroupSet::Status(s) => Bind::text(s),
            NodeGroupSet::StatusReason(s) | NodeGroupSet::StackId(s) | NodeGroupSet::Version(s) => {
                Bind::Text(s.clone())
            }
            NodeGroupSet::NodeCount(n) | NodeGroupSet::MinNodeCount(n) => Bind::Int(Some(*n)),
            NodeGroupSet::MaxNodeCount(n) => Bind::Int(*n),
            NodeGroupSet::NodeLabels(m) => Bind::json(m),
            NodeGroupSet::NodeTaints(t) => Bind::json(t),
            NodeGroupSet::NodeAddresses(a) => Bind::json_list(&Some(a.clone())),
        }
    }
}

/// The `(column, bind)` pairs of a set of changes, for [`super::update_columns`].
pub(crate) fn cluster_columns(changes: &[ClusterSet]) -> Vec<(ClusterCol, Bind)> {
    changes.iter().map(|c| (c.column(), c.bind())).collect()
}

pub(crate) fn nodegroup_columns(changes: &[NodeGroupSet]) -> Vec<(NodeGroupCol, Bind)> {
    changes.iter().map(|c| (c.column(), c.bind())).collect()
}

#[cfg(test)]
mod tests {
    use super::super::schema::Column as _;
    use super::*;

    #[test]
    fn every_change_names_a_column_of_its_table() {
        let cluster = [
            ClusterSet::Status(String::new()),
            ClusterSet::StatusReason(None),
            ClusterSet::HealthStatus(None),
            ClusterSet::HealthStatusReason(None),
            ClusterSet::StackId(None),
            ClusterSet::ApiAddress(None),
            ClusterSet::CoeVersion(None),
            ClusterSet::ClusterTemplateId(String::new()),
        ];
        for c in &cluster {
            assert!(ClusterCol::ALL.contains(&c.column()), "{c:?}");
        }
        let nodegroup = [
            NodeGroupSet::Status(String::new()),
            NodeGroupSet::StackId(None),
            NodeGroupSet::StatusReason(None),
            NodeGroupSet::Version(None),
            NodeGroupSet::NodeCount(0),
            NodeGroupSet::MinNodeCount(0),
            NodeGroupSet::MaxNodeCount(None),
            NodeGroupSet::NodeLabels(None),
            NodeGroupSet::NodeTaints(None),
            NodeGroupSet::NodeAddresses(Vec::new()),
        ];
        for c in &nodegroup {
            assert!(NodeGroupCol::ALL.contains(&c.column()), "{c:?}");
        }
    }

    #[test]
    fn json_columns_are_written_as_magnum_writes_them() {
        assert_eq!(
            ClusterSet::HealthStatusReason(None).bind(),
            Bind::Text(Some("{}".into()))
        );
        assert_eq!(
            NodeGroupSet::NodeAddresses(Vec::new()).bind(),
            Bind::Text(Some("[]".into()))
        );
        assert_eq!(NodeGroupSet::NodeLabels(None).bind(), Bind::Text(None));
    }
}
