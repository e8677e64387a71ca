//! `cluster` rows, created together with their default nodegroups.

use super::changes::{cluster_columns, ClusterSet};
use super::keys::ClusterBy;
use std::collections::HashMap;
use std::sync::LazyLock;

use super::page::tenancy_filter;
use super::schema::{
    from_row_by_position, json_map, select_from, ClusterCol, ClusterRow, Column as _,
};
use super::sort_key::Table;
use super::{insert_row, stmt, update_columns, Bind, Dialect, Page, Store};
use crate::model::{Cluster, ClusterCounts, ClusterSummary, Tenancy};

/// Declares what the summary list reads of a cluster: the columns (by position, in this
/// order) and then the two computed counts.
macro_rules! summary_row {
    ($($field:ident: $ty:ty => $variant:ident,)*) => {
        struct SummaryRow {
            $($field: $ty,)*
        }

        from_row_by_position!(SummaryRow { $($field: $ty,)* });

        const SUMMARY_COLUMNS: &[ClusterCol] = &[$(ClusterCol::$variant,)*];
    };
}

summary_row! {
    id: i64 => Id,
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

impl SummaryRow {
    /// The summary, with the counts of its nodegroups (none: 0 and 0).
    fn with_counts(self, counts: &HashMap<i64, ClusterCounts>) -> ClusterSummary {
        let (master_count, node_count) = counts
            .get(&self.id)
            .map_or((0, 0), |c| (c.master_count, c.node_count));
        ClusterSummary {
            uuid: self.uuid.unwrap_or_default(),
            name: self.name,
            cluster_template_id: self.cluster_template_id,
            keypair: self.keypair,
            docker_volume_size: self.docker_volume_size,
            labels: json_map(self.labels.as_deref()),
            master_flavor_id: self.master_flavor_id,
            flavor_id: self.flavor_id,
            create_timeout: self.create_timeout,
            stack_id: self.stack_id,
            status: self.status,
            health_status: self.health_status,
            master_count,
            node_count,
        }
    }
}

/// `SELECT <summary columns> FROM cluster t`, built once.
fn summary_select() -> &'static str {
    static S: LazyLock<String> = LazyLock::new(|| {
        let cols = SUMMARY_COLUMNS
            .iter()
            .map(|c| format!("t.{}", c.name()))
            .collect::<Vec<_>>()
            .join(", ");
        format!("SELECT {cols} FROM cluster t")
    });
    &S
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

/// `SUM(expr)` over a group as an integer, 0 for no rows or only NULLs. SQLite's `TOTAL`
/// never fails on overflow (`SUM` does); MariaDB's `SUM` of integers is a DECIMAL.
fn integer_sum(dialect: Dialect, expr: &str) -> String {
    match dialect {
        Dialect::Sqlite => format!("CAST(TOTAL({expr}) AS INTEGER)"),
        Dialect::Mysql => format!("CAST(COALESCE(SUM({expr}), 0) AS SIGNED)"),
    }
}

/// Inserts a cluster row (in a [`super::Batch`], with its nodegroups and operation).
pub(crate) async fn insert_cluster_on(
    conn: &mut super::Conn,
    c: &Cluster,
    created_at: &str,
) -> Result<(), sqlx::Error> {
    insert_row(conn, cluster_values(c, created_at)).await?;
    Ok(())
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

    /// A page of the summary list: the columns it shows, and the counts computed from the
    /// clusters' nodegroups (two statements).
    pub async fn list_cluster_summaries(
        &self,
        tenancy: &Tenancy,
        page: &Page,
    ) -> Result<Vec<ClusterSummary>, sqlx::Error> {
        let mut binds = Vec::new();
        let mut sql = format!("{} WHERE 1 = 1", summary_select());
        sql.push_str(&tenancy_filter("t", tenancy, &mut binds));
        page.apply(Table::Cluster, &mut sql, &mut binds);
        let rows: Vec<SummaryRow> = stmt(sql)
            .bind_all(binds)
            .fetch_all(&mut self.conn().await?)
            .await?;
        let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
        let counts = self.summed_counts(&ids).await?;
        Ok(rows.into_iter().map(|r| r.with_counts(&counts)).collect())
    }

    /// [`ClusterCounts`] without addresses of the clusters with these `id`s, summed per
    /// cluster by the database: the same sums as [`ClusterCounts::from_nodegroups`]. A master
    /// is a nodegroup whose role is exactly `master` (byte for byte, as Python's `==`:
    /// MariaDB's `=` would ignore case and trailing spaces), a NULL role is a worker, a NULL
    /// `node_count` counts 1; a cluster without nodegroups is absent.
    ///
    /// Fifty rows come back for a page instead of every nodegroup (decoding those had been
    /// half the server's CPU for a page). The clusters are found by primary key and their
    /// nodegroups by `uniq_nodegroup0cluster_id0name`, grouped in primary-key order: on
    /// MariaDB that is cheaper than fifty 36-character ranges on the nodegroup index.
    async fn summed_counts(
        &self,
        cluster_ids: &[i64],
    ) -> Result<HashMap<i64, ClusterCounts>, sqlx::Error> {
        if cluster_ids.is_empty() {
            return Ok(HashMap::new());
        }
        let dialect = self.dialect();
        let is_master = match dialect {
            Dialect::Sqlite => "n.role = 'master'",
            Dialect::Mysql => "BINARY n.role = 'master'",
        };
        let sql = format!(
            "SELECT c.id, {}, {} \
             FROM cluster c JOIN nodegroup n ON n.cluster_id = c.uuid \
             WHERE c.id IN ({}) GROUP BY c.id",
            integer_sum(
                dialect,
                &format!("CASE WHEN {is_master} THEN COALESCE(n.node_count, 1) END")
            ),
            integer_sum(
                dialect,
                &format!("CASE WHEN {is_master} THEN NULL ELSE COALESCE(n.node_count, 1) END")
            ),
            vec!["?"; cluster_ids.len()].join(", ")
        );
        let rows: Vec<(i64, i64, i64)> = stmt(sql)
            .bind_all(cluster_ids.iter().map(|id| Bind::Int(Some(*id))))
            .fetch_all(&mut self.conn().await?)
            .await?;
        Ok(rows
            .into_iter()
            .map(|(id, master_count, node_count)| {
                let counts = ClusterCounts {
                    master_count,
                    node_count,
                    ..ClusterCounts::default()
                };
                (id, counts)
            })
            .collect())
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

    /// Writes `changes` to the cluster `uuid` on their own (no guard: a report of the
    /// backend's, or a test's setup). A request's writes go through a guarded
    /// [`super::Batch`].
    pub async fn update_cluster(
        &self,
        uuid: &str,
        changes: &[ClusterSet],
    ) -> Result<(), sqlx::Error> {
        let changes = cluster_columns(changes);
        update_columns(&mut self.conn().await?, uuid, changes).await?;
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
