//! `cluster` rows, created together with their default nodegroups.

use super::changes::{cluster_columns, ClusterSet};
use super::keys::ClusterBy;
use super::nodegroups::insert_nodegroup_on;
use super::operations::{insert_operation, NewOperation};
use std::sync::LazyLock;

use super::page::tenancy_filter;
use super::schema::{
    from_row_by_position, json_map, select_from, ClusterCol, ClusterRow, Column as _,
};
use super::sort_key::Table;
use super::{insert_row, now, stmt, update_columns, Bind, Dialect, Page, Store};
use crate::model::{Cluster, ClusterSummary, NodeGroup, Tenancy};

/// Declares what the summary list reads of a cluster: the columns (by position, in this
/// order), then the two counts [`summary_select`] computes.
macro_rules! summary_row {
    ($($field:ident: $ty:ty => $variant:ident,)*) => {
        struct SummaryRow {
            $($field: $ty,)*
            master_count: i64,
            node_count: i64,
        }

        from_row_by_position!(SummaryRow { $($field: $ty,)* master_count: i64, node_count: i64, });

        const SUMMARY_COLUMNS: &[ClusterCol] = &[$(ClusterCol::$variant,)*];
    };
}

summary_row! {
    uuid: Option<String> => Uuid,
    name: Option<String> => Name,
    cluster_template_id: Option<String> => ClusterTemplateId,
    keypair: Option<String> => Keypair,
    docker_volume_size: Option<i64> => DockerVolumeSize,
    labels: Option<String> => Labels,
    master_flavor_id: Option<String> => MasterFlavorId,
    flavor_id: Option<String> => FlavorId,
    create_timeout: Option<i64> => CreateTimeout,
    stack_id: Option<String> => StackId,
    status: Option<String> => Status,
    health_status: Option<String> => HealthStatus,
}

impl From<SummaryRow> for ClusterSummary {
    fn from(r: SummaryRow) -> Self {
        ClusterSummary {
            uuid: r.uuid.unwrap_or_default(),
            name: r.name,
            cluster_template_id: r.cluster_template_id,
            keypair: r.keypair,
            docker_volume_size: r.docker_volume_size,
            labels: json_map(r.labels.as_deref()),
            master_flavor_id: r.master_flavor_id,
            flavor_id: r.flavor_id,
            create_timeout: r.create_timeout,
            stack_id: r.stack_id,
            status: r.status,
            health_status: r.health_status,
            master_count: r.master_count,
            node_count: r.node_count,
        }
    }
}

/// `SELECT <summary columns>, <master count>, <node count> FROM cluster t`, built once per
/// dialect. The counts are the sums of [`ClusterCounts::from_nodegroups`], per row, by the
/// database: a master is a nodegroup whose role is exactly `master` (byte for byte, as
/// Python's `==`: MariaDB's `=` would ignore case and trailing spaces), a NULL role is a
/// worker, a NULL `node_count` counts 1, no nodegroups count 0. Each sum is an index lookup
/// on `uniq_nodegroup0cluster_id0name`, in the page's own statement: no second round trip,
/// no nodegroup rows handed to the process.
///
/// [`ClusterCounts::from_nodegroups`]: crate::model::ClusterCounts::from_nodegroups
fn summary_select(dialect: Dialect) -> &'static str {
    fn build(dialect: Dialect) -> String {
        let cols = SUMMARY_COLUMNS
            .iter()
            .map(|c| format!("t.{}", c.name()))
            .collect::<Vec<_>>()
            .join(", ");
        // SQLite's TOTAL never fails on overflow (SUM does); MariaDB's SUM is a DECIMAL.
        let (sum, is_master, is_worker) = match dialect {
            Dialect::Sqlite => (
                "CAST(TOTAL(COALESCE(n.node_count, 1)) AS INTEGER)",
                "n.role = 'master'",
                "n.role IS NOT 'master'",
            ),
            Dialect::Mysql => (
                "CAST(COALESCE(SUM(COALESCE(n.node_count, 1)), 0) AS SIGNED)",
                "BINARY n.role = 'master'",
                "NOT (BINARY n.role <=> 'master')",
            ),
        };
        let count = |role: &str| {
            format!("(SELECT {sum} FROM nodegroup n WHERE n.cluster_id = t.uuid AND {role})")
        };
        format!(
            "SELECT {cols}, {}, {} FROM cluster t",
            count(is_master),
            count(is_worker)
        )
    }
    static SQLITE: LazyLock<String> = LazyLock::new(|| build(Dialect::Sqlite));
    static MYSQL: LazyLock<String> = LazyLock::new(|| build(Dialect::Mysql));
    match dialect {
        Dialect::Sqlite => &SQLITE,
        Dialect::Mysql => &MYSQL,
    }
}

/// `{select} WHERE t.<by> = ?`, within the tenancy, the first `limit` rows by `id`: the
/// statement of a cluster lookup, whatever it reads of the row.
fn lookup(select: &str, by: ClusterBy<'_>, tenancy: &Tenancy, limit: u8) -> (String, Vec<Bind>) {
    let mut binds = vec![by.bind()];
    let mut sql = format!("{select} WHERE t.{} = ?", by.column().name());
    sql.push_str(&tenancy_filter("t", tenancy, &mut binds));
    sql.push_str(&format!(" ORDER BY t.id LIMIT {limit}"));
    (sql, binds)
}

/// The columns an insert writes (every column but `id` and `updated_at`), named.
fn cluster_values(c: &Cluster, created_at: &str) -> Vec<(ClusterCol, Bind)> {
    vec![
        (ClusterCol::Uuid, Bind::text(&c.uuid)),
        (ClusterCol::ProjectId, Bind::Text(c.project_id.clone())),
        (ClusterCol::UserId, Bind::Text(c.user_id.clone())),
        (ClusterCol::Name, Bind::Text(c.name.clone())),
        (
            ClusterCol::ClusterTemplateId,
            Bind::Text(c.cluster_template_id.clone()),
        ),
        (ClusterCol::Keypair, Bind::Text(c.keypair.clone())),
        (
            ClusterCol::DockerVolumeSize,
            Bind::Int(c.docker_volume_size),
        ),
        (ClusterCol::Labels, Bind::json_map(&c.labels)),
        (
            ClusterCol::MasterFlavorId,
            Bind::Text(c.master_flavor_id.clone()),
        ),
        (ClusterCol::FlavorId, Bind::Text(c.flavor_id.clone())),
        (ClusterCol::StackId, Bind::Text(c.stack_id.clone())),
        (ClusterCol::ApiAddress, Bind::Text(c.api_address.clone())),
        (ClusterCol::Status, Bind::Text(c.status.clone())),
        (
            ClusterCol::StatusReason,
            Bind::Text(c.status_reason.clone()),
        ),
        (
            ClusterCol::HealthStatus,
            Bind::Text(c.health_status.clone()),
        ),
        (
            ClusterCol::HealthStatusReason,
            Bind::json_map(&c.health_status_reason),
        ),
        (ClusterCol::CreateTimeout, Bind::Int(c.create_timeout)),
        (
            ClusterCol::DiscoveryUrl,
            Bind::Text(c.discovery_url.clone()),
        ),
        (ClusterCol::CoeVersion, Bind::Text(c.coe_version.clone())),
        (
            ClusterCol::ContainerVersion,
            Bind::Text(c.container_version.clone()),
        ),
        (
            ClusterCol::FixedNetwork,
            Bind::Text(c.fixed_network.clone()),
        ),
        (ClusterCol::FixedSubnet, Bind::Text(c.fixed_subnet.clone())),
        (
            ClusterCol::FloatingIpEnabled,
            Bind::Bool(c.floating_ip_enabled),
        ),
        (ClusterCol::MasterLbEnabled, Bind::Bool(c.master_lb_enabled)),
        (ClusterCol::CreatedAt, Bind::text(created_at)),
    ]
}

impl Store {
    pub async fn list_clusters(
        &self,
        tenancy: &Tenancy,
        page: &Page,
    ) -> Result<Vec<Cluster>, sqlx::Error> {
        let mut binds = Vec::new();
        let mut sql = format!("{} WHERE 1 = 1", select_from::<ClusterCol>());
        sql.push_str(&tenancy_filter("t", tenancy, &mut binds));
        page.apply(Table::Cluster, &mut sql, &mut binds);
        let rows: Vec<ClusterRow> = stmt(sql)
            .bind_all(binds)
            .fetch_all(&mut self.conn().await?)
            .await?;
        Ok(rows.into_iter().map(Cluster::from).collect())
    }

    /// A page of the summary list: the columns it shows and the counts, in one statement.
    pub async fn list_cluster_summaries(
        &self,
        tenancy: &Tenancy,
        page: &Page,
    ) -> Result<Vec<ClusterSummary>, sqlx::Error> {
        let mut binds = Vec::new();
        let mut sql = format!("{} WHERE 1 = 1", summary_select(self.dialect()));
        sql.push_str(&tenancy_filter("t", tenancy, &mut binds));
        page.apply(Table::Cluster, &mut sql, &mut binds);
        let rows: Vec<SummaryRow> = stmt(sql)
            .bind_all(binds)
            .fetch_all(&mut self.conn().await?)
            .await?;
        Ok(rows.into_iter().map(ClusterSummary::from).collect())
    }

    /// Clusters that `by` matches within `tenancy` (at most two: enough to tell "one"
    /// from "ambiguous").
    pub async fn find_clusters(
        &self,
        tenancy: &Tenancy,
        by: ClusterBy<'_>,
    ) -> Result<Vec<Cluster>, sqlx::Error> {
        let (sql, binds) = lookup(select_from::<ClusterCol>(), by, tenancy, 2);
        let rows: Vec<ClusterRow> = stmt(sql)
            .bind_all(binds)
            .fetch_all(&mut self.conn().await?)
            .await?;
        Ok(rows.into_iter().map(Cluster::from).collect())
    }

    /// The `id` of the cluster a list's `marker` names (`find_clusters` by uuid, first by
    /// `id`), without reading the rest of its row.
    pub async fn cluster_marker_id(
        &self,
        tenancy: &Tenancy,
        uuid: &str,
    ) -> Result<Option<i64>, sqlx::Error> {
        let select = format!("SELECT t.id FROM {} t", ClusterCol::TABLE);
        let (sql, binds) = lookup(&select, ClusterBy::Uuid(uuid), tenancy, 1);
        stmt(sql)
            .bind_all(binds)
            .scalar_optional(&mut self.conn().await?)
            .await
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
        insert_row(&mut tx, values).await?;
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
        let row: ClusterRow = stmt(format!("{} WHERE t.uuid = ?", select_from::<ClusterCol>()))
            .bind(&c.uuid)
            .fetch_one(&mut tx)
            .await?;
        let stored = Cluster::from(row);
        tx.commit().await?;
        Ok(stored)
    }

    pub async fn update_cluster(&self, id: i64, changes: &[ClusterSet]) -> Result<(), sqlx::Error> {
        let changes = cluster_columns(changes);
        update_columns(&mut self.conn().await?, id, changes).await?;
        Ok(())
    }

    /// Removes a cluster and its nodegroups.
    pub async fn delete_cluster(&self, uuid: &str) -> Result<(), sqlx::Error> {
        let mut tx = self.begin().await?;
        stmt("DELETE FROM nodegroup WHERE cluster_id = ?")
            .bind(uuid)
            .execute(&mut tx)
            .await?;
        stmt("DELETE FROM cluster WHERE uuid = ?")
            .bind(uuid)
            .execute(&mut tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Number of clusters of a project (the quota check).
    pub async fn count_project_clusters(&self, project_id: &str) -> Result<i64, sqlx::Error> {
        stmt("SELECT COUNT(*) FROM cluster WHERE project_id = ?")
            .bind(project_id)
            .scalar(&mut self.conn().await?)
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each written value is named, and the names are the table's columns read back.
    #[test]
    fn cluster_values_name_every_column_the_reads_know() {
        let written: Vec<ClusterCol> = cluster_values(&Cluster::default(), "now")
            .iter()
            .map(|(c, _)| *c)
            .collect();
        let known: Vec<ClusterCol> = ClusterCol::ALL
            .iter()
            .copied()
            .filter(|c| ![ClusterCol::Id, ClusterCol::UpdatedAt].contains(c))
            .collect();
        assert_eq!(written, known);
    }
}
