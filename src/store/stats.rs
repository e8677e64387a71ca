//! The totals of `GET /v1/stats` (`get_cluster_stats` in `magnum/db/sqlalchemy/api.py`).

use super::Store;

impl Store {
    /// The cluster and node totals of `GET /v1/stats` (`get_cluster_stats`): clusters of the
    /// project (or all), and the sum of `nodegroup.node_count` over the project's nodegroups.
    pub async fn cluster_stats(&self, project_id: Option<&str>) -> Result<(i64, i64), sqlx::Error> {
        let (clusters, nodes): (i64, Option<i64>) = match project_id {
            Some(p) => {
                let c = sqlx::query_scalar("SELECT COUNT(*) FROM cluster WHERE project_id = ?")
                    .bind(p.to_string())
                    .fetch_one(&mut self.conn().await?)
                    .await?;
                let n = sqlx::query_scalar(
                    "SELECT CAST(SUM(node_count) AS SIGNED) FROM nodegroup WHERE project_id = ?",
                )
                .bind(p.to_string())
                .fetch_one(&mut self.conn().await?)
                .await?;
                (c, n)
            }
            None => {
                let c = sqlx::query_scalar("SELECT COUNT(*) FROM cluster")
                    .fetch_one(&mut self.conn().await?)
                    .await?;
                let n = sqlx::query_scalar("SELECT CAST(SUM(node_count) AS SIGNED) FROM nodegroup")
                    .fetch_one(&mut self.conn().await?)
                    .await?;
                (c, n)
            }
        };
        Ok((clusters, nodes.unwrap_or(0)))
    }
}
