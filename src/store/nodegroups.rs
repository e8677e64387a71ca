//! `nodegroup` rows.

use std::collections::HashMap;

use serde_json::Value;
use sqlx::{AnyConnection, Row as _};

use super::changes::{nodegroup_columns, NodeGroupSet};
use super::columns::{nodegroup_from_row, nodegroup_select, text_at};
use super::keys::NodeGroupBy;
use super::sort_key::Table;
use super::{bind_all, insert_row, now, update_columns, Bind, Page, Store};
use crate::model::{ClusterCounts, NodeGroup, ROLE_MASTER};

/// Filters for a nodegroup list or lookup within one cluster.
#[derive(Clone, Debug, Default)]
pub struct NodeGroupFilter {
    /// Only this project's rows (non-admins).
    pub project_id: Option<String>,
    pub role: Option<String>,
}

impl NodeGroupFilter {
    fn apply(&self, sql: &mut String, binds: &mut Vec<Bind>) {
        if let Some(p) = &self.project_id {
            sql.push_str(" AND t.project_id = ?");
            binds.push(Bind::text(p));
        }
        if let Some(r) = &self.role {
            sql.push_str(" AND t.role = ?");
            binds.push(Bind::text(r));
        }
    }
}

/// The columns an insert writes (every column but `id` and `updated_at`), named.
fn nodegroup_values(ng: &NodeGroup, created_at: &str) -> Vec<(&'static str, Bind)> {
    vec![
        ("uuid", Bind::text(&ng.uuid)),
        ("name", Bind::text(&ng.name)),
        ("cluster_id", Bind::text(&ng.cluster_id)),
        ("project_id", Bind::text(&ng.project_id)),
        ("docker_volume_size", Bind::Int(ng.docker_volume_size)),
        ("labels", Bind::json_map(&ng.labels)),
        ("flavor_id", Bind::Text(ng.flavor_id.clone())),
        ("image_id", Bind::Text(ng.image_id.clone())),
        ("node_addresses", Bind::json_list(&ng.node_addresses)),
        ("node_count", Bind::Int(Some(ng.node_count))),
        ("max_node_count", Bind::Int(ng.max_node_count)),
        ("min_node_count", Bind::Int(Some(ng.min_node_count))),
        ("role", Bind::Text(ng.role.clone())),
        ("is_default", Bind::Bool(ng.is_default)),
        ("stack_id", Bind::Text(ng.stack_id.clone())),
        ("status", Bind::Text(ng.status.clone())),
        ("status_reason", Bind::Text(ng.status_reason.clone())),
        ("version", Bind::Text(ng.version.clone())),
        ("node_labels", Bind::json_map(&ng.node_labels)),
        ("node_taints", Bind::json_list(&ng.node_taints)),
        ("created_at", Bind::text(created_at)),
    ]
}

pub(crate) async fn insert_nodegroup_on(
    conn: &mut AnyConnection,
    ng: &NodeGroup,
    created_at: &str,
) -> Result<(), sqlx::Error> {
    insert_row(conn, "nodegroup", nodegroup_values(ng, created_at)).await?;
    Ok(())
}

impl Store {
    /// All nodegroups of the given clusters, ordered by id (for the computed counts).
    pub async fn nodegroups_of_clusters(
        &self,
        cluster_uuids: &[String],
    ) -> Result<Vec<NodeGroup>, sqlx::Error> {
        if cluster_uuids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT {} FROM nodegroup t WHERE t.cluster_id IN ({}) ORDER BY t.id",
            nodegroup_select(),
            vec!["?"; cluster_uuids.len()].join(", ")
        );
        let binds: Vec<Bind> = cluster_uuids.iter().map(Bind::text).collect();
        let rows = bind_all(sqlx::query(&sql), &binds)
            .fetch_all(&mut self.conn().await?)
            .await?;
        rows.iter().map(nodegroup_from_row).collect()
    }

    /// The computed counts of each of the given clusters (by uuid; clusters without
    /// nodegroups are absent), as [`ClusterCounts::from_nodegroups`] computes them from the
    /// full rows, but reading only the columns they need: `role` and `node_count`, plus
    /// `node_addresses` when `addresses` is set (the summary list does not show them).
    pub async fn counts_of_clusters(
        &self,
        cluster_uuids: &[String],
        addresses: bool,
    ) -> Result<HashMap<String, ClusterCounts>, sqlx::Error> {
        let mut counts: HashMap<String, ClusterCounts> = HashMap::new();
        if cluster_uuids.is_empty() {
            return Ok(counts);
        }
        let sql = format!(
            "SELECT t.cluster_id AS cluster_id, t.role AS role, t.node_count AS node_count{} \
             FROM nodegroup t WHERE t.cluster_id IN ({}) ORDER BY t.id",
            if addresses {
                ", t.node_addresses AS node_addresses"
            } else {
                ""
            },
            vec!["?"; cluster_uuids.len()].join(", ")
        );
        let binds: Vec<Bind> = cluster_uuids.iter().map(Bind::text).collect();
        let rows = bind_all(sqlx::query(&sql), &binds)
            .fetch_all(&mut self.conn().await?)
            .await?;
        for row in &rows {
            let cluster_id = text_at(row, 0)?.unwrap_or_default();
            let is_master = text_at(row, 1)?.as_deref() == Some(ROLE_MASTER);
            let node_count = row.try_get::<Option<i64>, _>(2)?.unwrap_or(1);
            let addrs = if addresses {
                match text_at(row, 3)?.map(|t| serde_json::from_str::<Value>(&t)) {
                    Some(Ok(Value::Array(a))) => a,
                    _ => Vec::new(),
                }
            } else {
                Vec::new()
            };
            let c = counts.entry(cluster_id).or_default();
            if is_master {
                c.master_count = c.master_count.saturating_add(node_count);
                c.master_addresses.extend(addrs);
            } else {
                c.node_count = c.node_count.saturating_add(node_count);
                c.node_addresses.extend(addrs);
            }
        }
        Ok(counts)
    }

    pub async fn list_nodegroups(
        &self,
        cluster_uuid: &str,
        filter: &NodeGroupFilter,
        page: &Page,
    ) -> Result<Vec<NodeGroup>, sqlx::Error> {
        let mut binds = vec![Bind::text(cluster_uuid)];
        let mut sql = format!(
            "SELECT {} FROM nodegroup t WHERE t.cluster_id = ?",
            nodegroup_select()
        );
        filter.apply(&mut sql, &mut binds);
        page.apply(Table::NodeGroup, &mut sql, &mut binds);
        let rows = bind_all(sqlx::query(&sql), &binds)
            .fetch_all(&mut self.conn().await?)
            .await?;
        rows.iter().map(nodegroup_from_row).collect()
    }

    /// The first nodegroup of a cluster that `by` matches.
    pub async fn find_nodegroup(
        &self,
        cluster_uuid: &str,
        filter: &NodeGroupFilter,
        by: NodeGroupBy<'_>,
    ) -> Result<Option<NodeGroup>, sqlx::Error> {
        let mut binds = vec![Bind::text(cluster_uuid), by.bind()];
        let mut sql = format!(
            "SELECT {} FROM nodegroup t WHERE t.cluster_id = ? AND t.{} = ?",
            nodegroup_select(),
            by.column()
        );
        filter.apply(&mut sql, &mut binds);
        sql.push_str(" ORDER BY t.id LIMIT 1");
        let row = bind_all(sqlx::query(&sql), &binds)
            .fetch_optional(&mut self.conn().await?)
            .await?;
        row.as_ref().map(nodegroup_from_row).transpose()
    }

    pub async fn nodegroup_by_id(&self, id: i64) -> Result<Option<NodeGroup>, sqlx::Error> {
        let sql = format!(
            "SELECT {} FROM nodegroup t WHERE t.id = ?",
            nodegroup_select()
        );
        let row = sqlx::query(&sql)
            .bind(id)
            .fetch_optional(&mut self.conn().await?)
            .await?;
        row.as_ref().map(nodegroup_from_row).transpose()
    }

    pub async fn insert_nodegroup(&self, ng: &NodeGroup) -> Result<NodeGroup, sqlx::Error> {
        // Insert and read back in one transaction on one connection (see insert_cluster).
        let mut tx = self.begin().await?;
        insert_nodegroup_on(&mut tx, ng, &now()).await?;
        let sql = format!(
            "SELECT {} FROM nodegroup t WHERE t.uuid = ?",
            nodegroup_select()
        );
        let row = sqlx::query(&sql)
            .bind(ng.uuid.clone())
            .fetch_one(&mut *tx)
            .await?;
        let stored = nodegroup_from_row(&row)?;
        tx.commit().await?;
        Ok(stored)
    }

    pub async fn update_nodegroup(
        &self,
        id: i64,
        changes: &[NodeGroupSet],
    ) -> Result<(), sqlx::Error> {
        let changes = nodegroup_columns(changes);
        update_columns(&mut self.conn().await?, "nodegroup", id, &changes).await?;
        Ok(())
    }

    pub async fn delete_nodegroup(&self, id: i64) -> Result<(), sqlx::Error> {
        sqlx::query("DELETE FROM nodegroup WHERE id = ?")
            .bind(id)
            .execute(&mut self.conn().await?)
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::columns::NODEGROUP_COLUMNS;
    use super::*;

    /// Each written value is named, and the names are the table's columns read back.
    #[test]
    fn nodegroup_values_name_every_column_the_reads_know() {
        let written: Vec<&str> = nodegroup_values(&NodeGroup::default(), "now")
            .iter()
            .map(|(c, _)| *c)
            .collect();
        let known: Vec<&str> = NODEGROUP_COLUMNS
            .iter()
            .map(|(c, _)| *c)
            .filter(|c| !["id", "updated_at"].contains(c))
            .collect();
        assert_eq!(written, known);
    }
}
