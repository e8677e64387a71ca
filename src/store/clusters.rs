//! `cluster` rows, created together with their default nodegroups.

use super::changes::{cluster_columns, ClusterSet};
use super::columns::{cluster_from_row, cluster_select, CLUSTER_COLUMNS};
use super::keys::ClusterBy;
use super::nodegroups::insert_nodegroup_on;
use super::operations::{insert_operation, NewOperation};
use super::sort_key::Table;
use super::{bind_all, now, update_columns, Bind, Page, Store};
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
        let binds = vec![
            Bind::text(&c.uuid),
            Bind::Text(c.project_id.clone()),
            Bind::Text(c.user_id.clone()),
            Bind::Text(c.name.clone()),
            Bind::Text(c.cluster_template_id.clone()),
            Bind::Text(c.keypair.clone()),
            Bind::Int(c.docker_volume_size),
            Bind::json_map(&c.labels),
            Bind::Text(c.master_flavor_id.clone()),
            Bind::Text(c.flavor_id.clone()),
            Bind::Text(c.stack_id.clone()),
            Bind::Text(c.api_address.clone()),
            Bind::Text(c.status.clone()),
            Bind::Text(c.status_reason.clone()),
            Bind::Text(c.health_status.clone()),
            Bind::json_map(&c.health_status_reason),
            Bind::Int(c.create_timeout),
            Bind::Text(c.discovery_url.clone()),
            Bind::Text(c.coe_version.clone()),
            Bind::Text(c.container_version.clone()),
            Bind::Text(c.fixed_network.clone()),
            Bind::Text(c.fixed_subnet.clone()),
            Bind::Bool(c.floating_ip_enabled),
            Bind::Bool(c.master_lb_enabled),
            Bind::Text(Some(created.clone())),
        ];
        let cols: Vec<&str> = CLUSTER_COLUMNS
            .iter()
            .map(|(c, _)| *c)
            .filter(|c| *c != "id" && *c != "updated_at")
            .collect();
        let sql = format!(
            "INSERT INTO cluster ({}) VALUES ({})",
            cols.join(", "),
            vec!["?"; cols.len()].join(", ")
        );
        let mut tx = self.begin().await?;
        bind_all(sqlx::query(&sql), &binds)
            .execute(&mut *tx)
            .await?;
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
