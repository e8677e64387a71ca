//! `nodegroup` rows.

use std::collections::HashMap;

use super::changes::{nodegroup_columns, NodeGroupSet};
use super::keys::NodeGroupBy;
use super::schema::{json_list, select_from, Column as _, NodeGroupCol, NodeGroupRow};
use super::sort_key::Table;
use super::{insert_row, stmt, update_columns, Bind, Conn, Page, Store};
use crate::model::{ClusterCounts, NodeGroup, ROLE_MASTER};

/// Filters for a nodegroup list or lookup within one cluster.
#[derive(Clone, Debug, Default)]
pub struct NodeGroupFilter {
    /// Only this project's rows (non-admins).
    pub project_id: Option<String>,
    pub role: Option<String>,
}

/// What the computed counts read of a nodegroup: `cluster_id`, `role`, `node_count` and
/// `node_addresses` (by position).
type CountsRow = (Option<String>, Option<String>, Option<i64>, Option<String>);

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
fn nodegroup_values(ng: &NodeGroup, created_at: &str) -> Vec<(NodeGroupCol, Bind)> {
    vec![
        (NodeGroupCol::Uuid, Bind::text(&ng.uuid)),
        (NodeGroupCol::Name, Bind::text(&ng.name)),
        (NodeGroupCol::ClusterId, Bind::text(&ng.cluster_id)),
        (NodeGroupCol::ProjectId, Bind::text(&ng.project_id)),
        (
            NodeGroupCol::DockerVolumeSize,
            Bind::Int(ng.docker_volume_size),
        ),
        (NodeGroupCol::Labels, Bind::json_map(&ng.labels)),
        (NodeGroupCol::FlavorId, Bind::Text(ng.flavor_id.clone())),
        (NodeGroupCol::ImageId, Bind::Text(ng.image_id.clone())),
        (
            NodeGroupCol::NodeAddresses,
            Bind::json_list(&ng.node_addresses),
        ),
        (NodeGroupCol::NodeCount, Bind::Int(Some(ng.node_count))),
        (NodeGroupCol::MaxNodeCount, Bind::Int(ng.max_node_count)),
        (
            NodeGroupCol::MinNodeCount,
            Bind::Int(Some(ng.min_node_count)),
        ),
        (NodeGroupCol::Role, Bind::Text(ng.role.clone())),
        (NodeGroupCol::IsDefault, Bind::Bool(ng.is_default)),
        (NodeGroupCol::StackId, Bind::Text(ng.stack_id.clone())),
        (NodeGroupCol::Status, Bind::Text(ng.status.clone())),
        (
            NodeGroupCol::StatusReason,
            Bind::Text(ng.status_reason.clone()),
        ),
        (NodeGroupCol::Version, Bind::Text(ng.version.clone())),
        (NodeGroupCol::NodeLabels, Bind::json_map(&ng.node_labels)),
        (NodeGroupCol::NodeTaints, Bind::json_list(&ng.node_taints)),
        (NodeGroupCol::CreatedAt, Bind::text(created_at)),
    ]
}

pub(crate) async fn insert_nodegroup_on(
    conn: &mut Conn,
    ng: &NodeGroup,
    created_at: &str,
) -> Result<(), sqlx::Error> {
    insert_row(conn, nodegroup_values(ng, created_at)).await?;
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
            "{} WHERE t.cluster_id IN ({}) ORDER BY t.id",
            select_from::<NodeGroupCol>(),
            vec!["?"; cluster_uuids.len()].join(", ")
        );
        let rows: Vec<NodeGroupRow> = stmt(sql)
            .bind_all(cluster_uuids.iter().map(Bind::text))
            .fetch_all(&mut self.conn().await?)
            .await?;
        Ok(rows.into_iter().map(NodeGroup::from).collect())
    }

    /// The computed counts of each of the given clusters (by uuid; clusters without
    /// nodegroups are absent), as [`ClusterCounts::from_nodegroups`] computes them from the
    /// full rows, but reading only the columns they need: `role`, `node_count` and
    /// `node_addresses` (listed in nodegroup order). The summary list, which shows no
    /// addresses, has the database sum the counts instead.
    pub async fn counts_of_clusters(
        &self,
        cluster_uuids: &[String],
    ) -> Result<HashMap<String, ClusterCounts>, sqlx::Error> {
        let mut counts: HashMap<String, ClusterCounts> = HashMap::new();
        if cluster_uuids.is_empty() {
            return Ok(counts);
        }
        let sql = format!(
            "SELECT t.cluster_id, t.role, t.node_count, t.node_addresses \
             FROM nodegroup t WHERE t.cluster_id IN ({}) ORDER BY t.id",
            vec!["?"; cluster_uuids.len()].join(", ")
        );
        let rows: Vec<CountsRow> = stmt(sql)
            .bind_all(cluster_uuids.iter().map(Bind::text))
            .fetch_all(&mut self.conn().await?)
            .await?;
        for (cluster_id, role, node_count, node_addresses) in rows {
            let is_master = role.as_deref() == Some(ROLE_MASTER);
            let node_count = node_count.unwrap_or(1);
            let addrs = json_list(node_addresses.as_deref()).unwrap_or_default();
            let c = counts.entry(cluster_id.unwrap_or_default()).or_default();
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
        let mut sql = format!("{} WHERE t.cluster_id = ?", select_from::<NodeGroupCol>());
        filter.apply(&mut sql, &mut binds);
        page.apply(Table::NodeGroup, &mut sql, &mut binds);
        let rows: Vec<NodeGroupRow> = stmt(sql)
            .bind_all(binds)
            .fetch_all(&mut self.conn().await?)
            .await?;
        Ok(rows.into_iter().map(NodeGroup::from).collect())
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
            "{} WHERE t.cluster_id = ? AND t.{} = ?",
            select_from::<NodeGroupCol>(),
            by.column().name()
        );
        filter.apply(&mut sql, &mut binds);
        sql.push_str(" ORDER BY t.id LIMIT 1");
        let row: Option<NodeGroupRow> = stmt(sql)
            .bind_all(binds)
            .fetch_optional(&mut self.conn().await?)
            .await?;
        Ok(row.map(NodeGroup::from))
    }

    /// The nodegroup `uuid` (an operation's, which names it by uuid).
    pub async fn nodegroup_by_uuid(&self, uuid: &str) -> Result<Option<NodeGroup>, sqlx::Error> {
        let row: Option<NodeGroupRow> = stmt(format!(
            "{} WHERE t.uuid = ?",
            select_from::<NodeGroupCol>()
        ))
        .bind(uuid)
        .fetch_optional(&mut self.conn().await?)
        .await?;
        Ok(row.map(NodeGroup::from))
    }

    pub async fn nodegroup_by_id(&self, id: i64) -> Result<Option<NodeGroup>, sqlx::Error> {
        let row: Option<NodeGroupRow> =
            stmt(format!("{} WHERE t.id = ?", select_from::<NodeGroupCol>()))
                .bind(id)
                .fetch_optional(&mut self.conn().await?)
                .await?;
        Ok(row.map(NodeGroup::from))
    }

    /// Writes `changes` to the nodegroup `uuid` on their own (no guard: a report of the
    /// backend's, or a test's setup). A request's writes go through a guarded
    /// [`super::Batch`].
    pub async fn update_nodegroup(
        &self,
        uuid: &str,
        changes: &[NodeGroupSet],
    ) -> Result<(), sqlx::Error> {
        let changes = nodegroup_columns(changes);
        update_columns(&mut self.conn().await?, uuid, changes).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each written value is named, and the names are the table's columns read back.
    #[test]
    fn nodegroup_values_name_every_column_the_reads_know() {
        let written: Vec<NodeGroupCol> = nodegroup_values(&NodeGroup::default(), "now")
            .iter()
            .map(|(c, _)| *c)
            .collect();
        let known: Vec<NodeGroupCol> = NodeGroupCol::ALL
            .iter()
            .copied()
            .filter(|c| ![NodeGroupCol::Id, NodeGroupCol::UpdatedAt].contains(c))
            .collect();
        assert_eq!(written, known);
    }
}
