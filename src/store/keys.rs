//! How a row is found: each variant is one column a lookup may match, with a value of its
//! type, so callers choose the column by meaning and never spell it.

use super::schema::{ClusterCol, NodeGroupCol, TemplateCol};
use super::Bind;

/// Finds clusters by one column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterBy<'a> {
    Uuid(&'a str),
    Name(&'a str),
    /// The backend's name for the cluster (the reconciler maps watch events back so).
    StackId(&'a str),
}

/// Finds cluster templates by one column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TemplateBy<'a> {
    Uuid(&'a str),
    Name(&'a str),
}

/// Finds a nodegroup of a cluster by one column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeGroupBy<'a> {
    Id(i64),
    Uuid(&'a str),
    Name(&'a str),
}

impl ClusterBy<'_> {
    pub(crate) fn column(self) -> ClusterCol {
        match self {
            ClusterBy::Uuid(_) => ClusterCol::Uuid,
            ClusterBy::Name(_) => ClusterCol::Name,
            ClusterBy::StackId(_) => ClusterCol::StackId,
        }
    }

    pub(crate) fn bind(self) -> Bind {
        match self {
            ClusterBy::Uuid(v) | ClusterBy::Name(v) | ClusterBy::StackId(v) => Bind::text(v),
        }
    }
}

impl TemplateBy<'_> {
    pub(crate) fn column(self) -> TemplateCol {
        match self {
            TemplateBy::Uuid(_) => TemplateCol::Uuid,
            TemplateBy::Name(_) => TemplateCol::Name,
        }
    }

    pub(crate) fn bind(self) -> Bind {
        match self {
            TemplateBy::Uuid(v) | TemplateBy::Name(v) => Bind::text(v),
        }
    }
}

impl NodeGroupBy<'_> {
    pub(crate) fn column(self) -> NodeGroupCol {
        match self {
            NodeGroupBy::Id(_) => NodeGroupCol::Id,
            NodeGroupBy::Uuid(_) => NodeGroupCol::Uuid,
            NodeGroupBy::Name(_) => NodeGroupCol::Name,
        }
    }

    pub(crate) fn bind(self) -> Bind {
        match self {
            NodeGroupBy::Id(v) => Bind::Int(Some(v)),
            NodeGroupBy::Uuid(v) | NodeGroupBy::Name(v) => Bind::text(v),
        }
    }
}
