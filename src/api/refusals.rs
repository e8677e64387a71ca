//! The API's answer to a write the store refused under its row locks ([`Refused`]): the rows
//! a handler read changed before it wrote (a delete or another request raced it). Each
//! refusal answers as the check the handler made before would have, with what the caller
//! named.

use crate::error::ApiError;
use crate::store::Refused;

/// What a refused write was doing to what, in the caller's own words.
#[derive(Clone, Copy, Debug)]
pub struct Refusing<'a> {
    /// The action: "Resizing", "Updating", "Upgrading", "Creating", "Deleting".
    pub verb: &'a str,
    /// What the action is done to: a cluster (resize, update, upgrade) or a nodegroup.
    pub on: Subject,
    /// The cluster, nodegroup and template identifiers as the caller gave or was shown them.
    pub cluster: &'a str,
    pub nodegroup: &'a str,
    pub template: &'a str,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subject {
    Cluster,
    NodeGroup,
}

impl Refusing<'_> {
    /// The error of a refusal, in the texts of the checks a handler makes before writing.
    pub fn error(&self, refused: Refused) -> ApiError {
        let verb = self.verb;
        match refused {
            Refused::ClusterGone => ApiError::ClusterNotFound(self.cluster.into()),
            Refused::NodeGroupGone => ApiError::NodeGroupNotFound(self.nodegroup.into()),
            Refused::TemplateGone => ApiError::ClusterTemplateNotFound(self.template.into()),
            Refused::TemplateInUse => ApiError::ClusterTemplateReferenced(self.template.into()),
            Refused::ClusterStatus(s) => ApiError::NotSupported(match self.on {
                Subject::Cluster => format!("{verb} a cluster when status is \"{s}\""),
                Subject::NodeGroup => format!("{verb} a nodegroup when cluster status is \"{s}\""),
            }),
            Refused::NodeGroupStatus(s) => {
                ApiError::NotSupported(format!("{verb} a nodegroup when status is \"{s}\""))
            }
            Refused::QuotaReached { limit } => ApiError::cluster_quota_reached(limit),
            // A request records operations; it never moves one.
            Refused::OperationMoved => {
                ApiError::Internal(anyhow::anyhow!("a request's write moved an operation"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resizing() -> Refusing<'static> {
        Refusing {
            verb: "Resizing",
            on: Subject::Cluster,
            cluster: "k8s",
            nodegroup: "default-worker",
            template: "",
        }
    }

    /// The texts the checks made before the write already answer with.
    #[test]
    fn refusals_answer_as_the_checks_before_the_write() {
        let r = resizing();
        assert_eq!(
            r.error(Refused::ClusterGone).to_string(),
            "Cluster k8s could not be found."
        );
        assert_eq!(
            r.error(Refused::NodeGroupGone).to_string(),
            "Nodegroup default-worker could not be found."
        );
        assert_eq!(
            r.error(Refused::ClusterStatus("DELETE_IN_PROGRESS".into()))
                .to_string(),
            "Resizing a cluster when status is \"DELETE_IN_PROGRESS\" is not supported."
        );
        let creating = Refusing {
            verb: "Creating",
            on: Subject::NodeGroup,
            ..r
        };
        assert_eq!(
            creating
                .error(Refused::ClusterStatus("DELETE_IN_PROGRESS".into()))
                .to_string(),
            "Creating a nodegroup when cluster status is \"DELETE_IN_PROGRESS\" is not supported."
        );
    }
}
