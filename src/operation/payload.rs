//! What an operation asks the driver to do, with the facts each kind needs: the typed
//! `payload` of `magnum_rs_operation`. Stored as JSON tagged by `kind` (the row's `kind`
//! column says the same); rows written before the tag existed are read by the column.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::OpKind;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind")]
pub enum OpPayload {
    #[serde(rename = "create_cluster")]
    CreateCluster {
        /// Minutes, as the client gave it (`None`: Magnum's `null`).
        #[serde(default)]
        create_timeout: Option<i64>,
    },
    #[serde(rename = "delete_cluster")]
    DeleteCluster,
    #[serde(rename = "resize")]
    Resize {
        #[serde(default)]
        nodes_to_remove: Vec<String>,
    },
    #[serde(rename = "upgrade")]
    Upgrade {
        /// The uuid of the template to move to.
        cluster_template: String,
        #[serde(default = "one")]
        max_batch_size: i64,
    },
    #[serde(rename = "create_nodegroup")]
    CreateNodeGroup,
    #[serde(rename = "update_nodegroup")]
    UpdateNodeGroup,
    #[serde(rename = "delete_nodegroup")]
    DeleteNodeGroup,
    /// Sets the backend back to the count the database restored after a resize failed
    /// (issue 29): the operation's `new_count` is that count.
    #[serde(rename = "rollback")]
    Rollback {
        /// The failed resize this undoes.
        failed: i64,
        /// The count the failed resize had asked the backend for.
        from_count: i64,
        /// Why it failed (the nodegroup's reason, kept while the roll-back runs).
        reason: String,
    },
}

fn one() -> i64 {
    1
}

impl OpPayload {
    pub fn kind(&self) -> OpKind {
        match self {
            OpPayload::CreateCluster { .. } => OpKind::CreateCluster,
            OpPayload::DeleteCluster => OpKind::DeleteCluster,
            OpPayload::Resize { .. } => OpKind::Resize,
            OpPayload::Upgrade { .. } => OpKind::Upgrade,
            OpPayload::CreateNodeGroup => OpKind::CreateNodeGroup,
            OpPayload::UpdateNodeGroup => OpKind::UpdateNodeGroup,
            OpPayload::DeleteNodeGroup => OpKind::DeleteNodeGroup,
            OpPayload::Rollback { .. } => OpKind::Rollback,
        }
    }

    /// A resize that names no node to remove.
    pub fn resize() -> OpPayload {
        OpPayload::Resize {
            nodes_to_remove: Vec::new(),
        }
    }

    /// The upgrade's target template.
    pub fn upgrade_template(&self) -> Option<&str> {
        match self {
            OpPayload::Upgrade {
                cluster_template, ..
            } => Some(cluster_template),
            _ => None,
        }
    }

    /// The stored text.
    pub fn to_stored(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".into())
    }

    /// Reads a stored payload of the row's `kind` (`None` or `null`: nothing but the kind).
    pub fn from_stored(kind: &str, stored: Option<&str>) -> Result<OpPayload, String> {
        let mut fields = match stored.map(serde_json::from_str::<Value>).transpose() {
            Ok(Some(Value::Object(m))) => m,
            Ok(None | Some(Value::Null)) => serde_json::Map::new(),
            Ok(Some(other)) => return Err(format!("operation payload is not an object: {other}")),
            Err(e) => return Err(format!("operation payload is not JSON: {e}")),
        };
        fields.insert("kind".into(), kind.into());
        serde_json::from_value(Value::Object(fields))
            .map_err(|e| format!("operation payload of kind {kind}: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_payload_reads_back_as_written() {
        for p in [
            OpPayload::CreateCluster {
                create_timeout: Some(60),
            },
            OpPayload::CreateCluster {
                create_timeout: None,
            },
            OpPayload::DeleteCluster,
            OpPayload::Resize {
                nodes_to_remove: vec!["m-1".into()],
            },
            OpPayload::Upgrade {
                cluster_template: "t".into(),
                max_batch_size: 2,
            },
            OpPayload::CreateNodeGroup,
            OpPayload::UpdateNodeGroup,
            OpPayload::DeleteNodeGroup,
        ] {
            let kind = p.kind().as_str();
            assert_eq!(
                OpPayload::from_stored(kind, Some(&p.to_stored())),
                Ok(p.clone())
            );
        }
    }

    #[test]
    fn rows_written_without_the_tag_are_read_by_their_kind_column() {
        assert_eq!(
            OpPayload::from_stored("resize", Some(r#"{"nodes_to_remove": ["a"]}"#)),
            Ok(OpPayload::Resize {
                nodes_to_remove: vec!["a".into()]
            })
        );
        assert_eq!(
            OpPayload::from_stored(
                "upgrade",
                Some(r#"{"cluster_template": "t", "max_batch_size": 3}"#)
            ),
            Ok(OpPayload::Upgrade {
                cluster_template: "t".into(),
                max_batch_size: 3
            })
        );
        assert_eq!(
            OpPayload::from_stored("delete_nodegroup", Some("null")),
            Ok(OpPayload::DeleteNodeGroup)
        );
        assert_eq!(
            OpPayload::from_stored("delete_cluster", None),
            Ok(OpPayload::DeleteCluster)
        );
    }

    #[test]
    fn an_unknown_kind_or_a_broken_payload_is_an_error_not_a_default() {
        assert!(OpPayload::from_stored("explode", None).is_err());
        assert!(OpPayload::from_stored("upgrade", Some("{}")).is_err());
        assert!(OpPayload::from_stored("resize", Some("[1]")).is_err());
        assert!(OpPayload::from_stored("resize", Some("{")).is_err());
    }
}
