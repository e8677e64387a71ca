//! The totals of `GET /v1/stats` (`get_cluster_stats` in `magnum/db/sqlalchemy/api.py`).

use super::{Dialect, Store};

impl Store {
    /// The cluster and node totals of `GET /v1/stats` (`get_cluster_stats`): clusters of the
    /// project (or all), and the sum of `nodegroup.node_count` over the project's nodegroups.
    pub async fn cluster_stats(&self, project_id: Option<&str>) -> Result<(i64, i64), sqlx::Error> {
        // A sum that cannot fail: SQLite's SUM raises "integer overflow" beyond 64 bits (rows
        // written before values were range-checked), its TOTAL is a float that the CAST
        // saturates; MySQL's SUM is a DECIMAL, saturated by its CAST.
        let sum = match self.dialect() {
            Dialect::Sqlite => "CAST(TOTAL(node_count) AS INTEGER)",
            Dialect::Mysql => "CAST(SUM(node_count) AS SIGNED)",
        };
        let (clusters, nodes): (i64, Option<i64>) = match project_id {
            Some(p) => {
                let c = sqlx::query_scalar("SELECT COUNT(*) FROM cluster WHERE project_id = ?")
                    .bind(p.to_string())
                    .fetch_one(&mut self.conn().await?)
                    .await?;
                let n = sqlx::query_scalar(&format!(
                    "SELECT {sum} FROM nodegroup WHERE project_id = ?"
                ))
                .bind(p.to_string())
                .fetch_one(&mut self.conn().await?)
                .await?;
                (c, n)
            }
            None => {
                let c = sqlx::query_scalar("SELECT COUNT(*) FROM cluster")
                    .fetch_one(&mut self.conn().await?)
                    .await?;
                let n = sqlx::query_scalar(&format!("SELECT {sum} FROM nodegroup"))
                    .fetch_one(&mut self.conn().await?)
                    .await?;
                (c, n)
            }
        };
        Ok((clusters, nodes.unwrap_or(0)))
    }
}
