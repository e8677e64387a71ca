//! `cluster` rows, created together with their default nodegroups.

use super::changes::{cluster_columns, ClusterSet};
use super::columns::{cluster_from_row, cluster_select};
use super::keys::ClusterBy;
use super::nodegroups::insert_nodegroup_on;
use super::operations::{insert_operation, NewOperation};
use super::sort_key::Table;
use super::{bind_all, insert_row, now, update_columns, Bind, Page, Store};
use crate::model::{Cluster, NodeGroup, Tenancy};

/// `_add_tenant_filters` for alias `t`.
pub(crate) fn tenancy_filter(tenancy: &Tenancy, binds: &mut Vec<Bind>) -> &'static str {
    match tenancy {
        Tenancy::All => "",
        Tenancy::Project(p) => {
            binds.push(Bind::text(p));
            " AND t.project_id = ?"
        }
        Tenancy::User(u) => {
            binds.push(Bind::text(u));
            " AND t.user_id = ?"
        }
    }
}

/// The columns an insert writes (every column but `id` and `updated_at`), named.
fn cluster_values(c: &Cluster, created_at: &str) -> Vec<(&'static str, Bind)> {
    vec![
        ("uuid", Bind::text(&c.uuid)),
        ("project_id", Bind::Text(c.project_id.clone())),
        ("user_id", Bind::Text(c.user_id.clone())),
        ("name", Bind::Text(c.name.clone())),
        (
            "cluster_template_id",
            Bind::Text(c.cluster_template_id.clone()),
        ),
        ("keypair", Bind::Text(c.keypair.clone())),
        ("docker_volume_size", Bind::Int(c.docker_volume_size)),
        ("labels", Bind::json_map(&c.labels)),
        ("master_flavor_id", Bind::Text(c.master_flavor_id.clone())),
        ("flavor_id", Bind::Text(c.flavor_id.clone())),
        ("stack_id", Bind::Text(c.stack_id.clone())),
        ("api_address", Bind::Text(c.api_address.clone())),
        ("status", Bind::Text(c.status.clone())),
        ("status_reason", Bind::Text(c.status_reason.clone())),
        ("health_status", Bind::Text(c.health_status.clone())),
        (
            "health_status_reason",
            Bind::json_map(&c.health_status_reason),
        ),
        ("create_timeout", Bind::Int(c.create_timeout)),
        ("discovery_url", Bind::Text(c.discovery_url.clone())),
        ("coe_version", Bind::Text(c.coe_version.clone())),
        ("container_version", Bind::Text(c.container_version.clone())),
        ("fixed_network", Bind::Text(c.fixed_network.clone())),
        ("fixed_subnet", Bind::Text(c.fixed_subnet.clone())),
        ("floating_ip_enabled", Bind::Bool(c.floating_ip_enabled)),
        ("master_lb_enabled", Bind::Bool(c.master_lb_enabled)),
        ("created_at", Bind::text(created_at)),
    ]
}

impl Store {
    pub async fn list_clusters(
        &self,
        tenancy: &Tenancy,
        page: &Page,
    ) -> Result<Vec<Cluster>, sqlx::Error> {
        let mut binds = Vec::new();
        let mut sql = format!("SELECT {} FROM cluster t WHERE 1 = 1", cluster_select());
        sql.push_str(tenancy_filter(tenancy, &mut binds));
        page.apply(Table::Cluster, &mut sql, &mut binds);
        let rows = bind_all(sqlx::query(&sql), &binds)
            .fetch_all(&mut self.conn().await?)
            .await?;
        rows.iter().map(cluster_from_row).collect()
    }

    /// Clusters that `by` matches within `tenancy` (at most two: enough to tell "one"
    /// from "ambiguous").
    pub async fn find_clusters(
        &self,
        tenancy: &Tenancy,
        by: ClusterBy<'_>,
    ) -> Result<Vec<Cluster>, sqlx::Error> {
        let mut binds = vec![by.bind()];
        let mut sql = format!(
            "SELECT {} FROM cluster t WHERE t.{} = ?",
            cluster_select(),
            by.column()
        );
        sql.push_str(tenancy_filter(tenancy, &mut binds));
        sql.push_str(" ORDER BY t.id LIMIT 2");
        let rows = bind_all(sqlx::query(&sql), &binds)
            .fetch_all(&mut self.conn().await?)
            .await?;
        rows.iter().map(cluster_from_row).collect()
    }

    pub async fn cluster_by_uuid(&self, uuid: &str) -> Result<Option<Cluster>, sqlx::Error> {
        Ok(self
            .find_clusters(&Tenancy::All, ClusterBy::Uuid(uuid))
            .await?
            .into_iter()
            .next())
    }

    /// Inserts a cluster, its nodegroups and the operation that creates it, in one
    /// transaction.
    pub async fn insert_cluster(
        &self,
        c: &Cluster,
        nodegroups: &[NodeGroup],
        op: Option<&NewOperation>,
    ) -> Result<Cluster, sqlx::Error> {
        let created = now();
        let values = cluster_values(c, &created);
        let mut tx = self.begin().await?;
        insert_row(&mut *tx, "cluster", values).await?;
        for ng in nodegroups {
            insert_nodegroup_on(&mut tx, ng, &created).await?;
        }
        if let Some(op) = op {
            insert_operation(&mut tx, op).await?;
        }
        // Read back on the same connection, before the commit: a second connection asked
        // for while this one is held deadlocks a busy pool (every holder waiting for
        // another), and a read that fails after the commit would answer 500 for a cluster
        // that exists.
        let row = sqlx::query(&format!(
            "SELECT {} FROM cluster t WHERE t.uuid = ?",
            cluster_select()
        ))
        .bind(c.uuid.clone())
        .fetch_one(&mut *tx)
        .await?;
        let stored = cluster_from_row(&row)?;
        tx.commit().await?;
        Ok(stored)
    }

    pub async fn update_cluster(&self, id: i64, changes: &[ClusterSet]) -> Result<(), sqlx::Error> {
        let changes = cluster_columns(changes);
        update_columns(&mut self.conn().await?, "cluster", id, &changes).await?;
        Ok(())
    }

    /// Removes a cluster and its nodegroups.
    pub async fn delete_cluster(&self, uuid: &str) -> Result<(), sqlx::Error> {
        let mut tx = self.begin().await?;
        sqlx::query("DELETE FROM nodegroup WHERE cluster_id = ?")
            .bind(uuid.to_string())
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM cluster WHERE uuid = ?")
            .bind(uuid.to_string())
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Number of clusters of a project (the quota check).
    pub async fn count_project_clusters(&self, project_id: &str) -> Result<i64, sqlx::Error> {
        sqlx::query_scalar("SELECT COUNT(*) FROM cluster WHERE project_id = ?")
            .bind(project_id.to_string())
            .fetch_one(&mut self.conn().await?)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::super::columns::CLUSTER_COLUMNS;
    use super::*;

    /// Each written value is named, and the names are the table's columns read back.
    #[test]
    fn cluster_values_name_every_column_the_reads_know() {
        let written: Vec<&str> = cluster_values(&Cluster::default(), "now")
            .iter()
            .map(|(c, _)| *c)
            .collect();
        let known: Vec<&str> = CLUSTER_COLUMNS
            .iter()
            .map(|(c, _)| *c)
            .filter(|c| !["id", "updated_at"].contains(c))
            .collect();
        assert_eq!(written, known);
    }
}
