//! The totals of `GET /v1/stats` (`get_cluster_stats` in `magnum/db/sqlalchemy/api.py`).

use super::{stmt, Dialect, Store};

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
                let c = stmt("SELECT COUNT(*) FROM cluster WHERE project_id = ?")
                    .bind(p)
                    .scalar(&mut self.conn().await?)
                    .await?;
                let n = stmt(format!("SELECT {sum} FROM nodegroup WHERE project_id = ?"))
                    .bind(p)
                    .scalar(&mut self.conn().await?)
                    .await?;
                (c, n)
            }
            None => {
                let c = stmt("SELECT COUNT(*) FROM cluster")
                    .scalar(&mut self.conn().await?)
                    .await?;
                let n = stmt(format!("SELECT {sum} FROM nodegroup"))
                    .scalar(&mut self.conn().await?)
                    .await?;
                (c, n)
            }
        };
        Ok((clusters, nodes.unwrap_or(0)))
    }
}
