//! `cluster_template` rows.

use super::columns::{template_from_row, template_select, text_at};
use super::keys::TemplateBy;
use super::sort_key::Table;
use super::{bind_all, insert_row, now, update_columns, Bind, Page, Store};
use crate::model::{ClusterTemplate, DriverSelector, Tenancy};

/// Which templates a caller sees: its own (or all, for an admin with `all_tenants`), public
/// non-hidden ones, and public hidden ones when admin.
#[derive(Clone, Debug)]
pub struct TemplateScope {
    pub tenancy: Tenancy,
    pub is_admin: bool,
}

impl TemplateScope {
    fn filter(&self, binds: &mut Vec<Bind>) -> String {
        let own = match &self.tenancy {
            Tenancy::All => return String::new(),
            Tenancy::Project(p) => {
                binds.push(Bind::text(p));
                "t.project_id = ?"
            }
            Tenancy::User(u) => {
                binds.push(Bind::text(u));
                "t.user_id = ?"
            }
        };
        let public = if self.is_admin {
            "t.public = 1"
        } else {
            "(t.public = 1 AND (t.hidden = 0 OR t.hidden IS NULL))"
        };
        format!(" AND ({own} OR {public})")
    }
}

impl Store {
    pub async fn list_templates(
        &self,
        scope: &TemplateScope,
        page: &Page,
    ) -> Result<Vec<ClusterTemplate>, sqlx::Error> {
        let mut binds = Vec::new();
        let mut sql = format!(
            "SELECT {} FROM cluster_template t WHERE 1 = 1",
            template_select()
        );
        sql.push_str(&scope.filter(&mut binds));
        page.apply(Table::ClusterTemplate, &mut sql, &mut binds);
        let rows = bind_all(sqlx::query(&sql), &binds)
            .fetch_all(&mut self.conn().await?)
            .await?;
        rows.iter().map(template_from_row).collect()
    }

    /// Templates that `by` matches, visible in `scope` (at most two: enough to tell "one"
    /// from "ambiguous").
    pub async fn find_templates(
        &self,
        scope: &TemplateScope,
        by: TemplateBy<'_>,
    ) -> Result<Vec<ClusterTemplate>, sqlx::Error> {
        let mut binds = vec![by.bind()];
        let mut sql = format!(
            "SELECT {} FROM cluster_template t WHERE t.{} = ?",
            template_select(),
            by.column()
        );
        sql.push_str(&scope.filter(&mut binds));
        sql.push_str(" ORDER BY t.id LIMIT 2");
        let rows = bind_all(sqlx::query(&sql), &binds)
            .fetch_all(&mut self.conn().await?)
            .await?;
        rows.iter().map(template_from_row).collect()
    }

    /// A template by uuid regardless of project (drivers and clusters refer to templates
    /// they may not own, e.g. public ones).
    pub async fn template_by_uuid(
        &self,
        uuid: &str,
    ) -> Result<Option<ClusterTemplate>, sqlx::Error> {
        let sql = format!(
            "SELECT {} FROM cluster_template t WHERE t.uuid = ?",
            template_select()
        );
        let row = sqlx::query(&sql)
            .bind(uuid.to_string())
            .fetch_optional(&mut self.conn().await?)
            .await?;
        row.as_ref().map(template_from_row).transpose()
    }

    /// What of a template chooses its driver, for paths that need nothing else of it
    /// (resize, credentials, the worker's operations other than a cluster create).
    pub async fn template_for_driver(
        &self,
        uuid: &str,
    ) -> Result<Option<DriverSelector>, sqlx::Error> {
        let row = sqlx::query(
            "SELECT t.uuid AS uuid, t.coe AS coe, t.cluster_distro AS cluster_distro, \
             t.server_type AS server_type, t.driver AS driver \
             FROM cluster_template t WHERE t.uuid = ?",
        )
        .bind(uuid.to_string())
        .fetch_optional(&mut self.conn().await?)
        .await?;
        let Some(row) = row else { return Ok(None) };
        Ok(Some(DriverSelector {
            uuid: text_at(&row, 0)?.unwrap_or_default(),
            coe: text_at(&row, 1)?,
            cluster_distro: text_at(&row, 2)?,
            server_type: text_at(&row, 3)?,
            driver: text_at(&row, 4)?,
        }))
    }

    /// Only the labels of a template (what a cluster's detail view needs of it): `None`
    /// when the template is missing or its labels are not a JSON object.
    pub async fn template_labels(
        &self,
        uuid: &str,
    ) -> Result<Option<serde_json::Map<String, serde_json::Value>>, sqlx::Error> {
        let row = sqlx::query("SELECT t.labels AS labels FROM cluster_template t WHERE t.uuid = ?")
            .bind(uuid.to_string())
            .fetch_optional(&mut self.conn().await?)
            .await?;
        let Some(row) = row else { return Ok(None) };
        Ok(match text_at(&row, 0)?.map(|t| serde_json::from_str(&t)) {
            Some(Ok(serde_json::Value::Object(m))) => Some(m),
            _ => None,
        })
    }

    pub async fn insert_template(
        &self,
        t: &ClusterTemplate,
    ) -> Result<ClusterTemplate, sqlx::Error> {
        let mut values = template_values(t);
        values.push(("created_at", Bind::text(now())));
        insert_row(&mut self.conn().await?, "cluster_template", values).await?;
        self.template_by_uuid(&t.uuid)
            .await?
            .ok_or(sqlx::Error::RowNotFound)
    }

    /// Writes every mutable column of `t` (PATCH applies to a copy read in the same request).
    pub async fn update_template(&self, t: &ClusterTemplate) -> Result<(), sqlx::Error> {
        let changes = template_values(t);
        update_columns(&mut self.conn().await?, "cluster_template", t.id, &changes).await?;
        Ok(())
    }

    pub async fn delete_template(&self, id: i64) -> Result<(), sqlx::Error> {
        sqlx::query("DELETE FROM cluster_template WHERE id = ?")
            .bind(id)
            .execute(&mut self.conn().await?)
            .await?;
        Ok(())
    }

    /// How many clusters (of any project) use the template.
    pub async fn clusters_using_template(&self, uuid: &str) -> Result<i64, sqlx::Error> {
        let n: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM cluster WHERE cluster_template_id = ?")
                .bind(uuid.to_string())
                .fetch_one(&mut self.conn().await?)
                .await?;
        Ok(n)
    }
}

/// Binds in `TEMPLATE_COLUMNS` order, without `id`/`updated_at`; with `created_at` when given.
/// The columns of a template that an insert or a PATCH writes (every column but `id`,
/// `created_at` and `updated_at`), named.
fn template_values(t: &ClusterTemplate) -> Vec<(&'static str, Bind)> {
    vec![
        ("uuid", Bind::text(&t.uuid)),
        ("project_id", Bind::Text(t.project_id.clone())),
        ("user_id", Bind::Text(t.user_id.clone())),
        ("name", Bind::Text(t.name.clone())),
        ("image_id", Bind::Text(t.image_id.clone())),
        ("flavor_id", Bind::Text(t.flavor_id.clone())),
        ("master_flavor_id", Bind::Text(t.master_flavor_id.clone())),
        ("keypair_id", Bind::Text(t.keypair_id.clone())),
        (
            "external_network_id",
            Bind::Text(t.external_network_id.clone()),
        ),
        ("fixed_network", Bind::Text(t.fixed_network.clone())),
        ("fixed_subnet", Bind::Text(t.fixed_subnet.clone())),
        ("network_driver", Bind::Text(t.network_driver.clone())),
        ("volume_driver", Bind::Text(t.volume_driver.clone())),
        ("dns_nameserver", Bind::Text(t.dns_nameserver.clone())),
        ("apiserver_port", Bind::Int(t.apiserver_port)),
        ("docker_volume_size", Bind::Int(t.docker_volume_size)),
        (
            "docker_storage_driver",
            Bind::Text(t.docker_storage_driver.clone()),
        ),
        ("cluster_distro", Bind::Text(t.cluster_distro.clone())),
        ("coe", Bind::Text(t.coe.clone())),
        ("http_proxy", Bind::Text(t.http_proxy.clone())),
        ("https_proxy", Bind::Text(t.https_proxy.clone())),
        ("no_proxy", Bind::Text(t.no_proxy.clone())),
        ("registry_enabled", Bind::Bool(t.registry_enabled)),
        ("labels", Bind::json_map(&t.labels)),
        ("tls_disabled", Bind::Bool(t.tls_disabled)),
        ("public", Bind::Bool(t.public)),
        ("server_type", Bind::Text(t.server_type.clone())),
        ("insecure_registry", Bind::Text(t.insecure_registry.clone())),
        ("master_lb_enabled", Bind::Bool(t.master_lb_enabled)),
        ("floating_ip_enabled", Bind::Bool(t.floating_ip_enabled)),
        ("hidden", Bind::Bool(t.hidden)),
        ("tags", Bind::Text(t.tags.clone())),
        ("driver", Bind::Text(t.driver.clone())),
    ]
}

#[cfg(test)]
mod tests {
    use super::super::columns::TEMPLATE_COLUMNS;
    use super::*;

    /// Each written value is named, and the names are the table's columns read back.
    #[test]
    fn template_values_name_every_column_the_reads_know() {
        let written: Vec<&str> = template_values(&ClusterTemplate::default())
            .iter()
            .map(|(c, _)| *c)
            .collect();
        let known: Vec<&str> = TEMPLATE_COLUMNS
            .iter()
            .map(|(c, _)| *c)
            .filter(|c| !["id", "created_at", "updated_at"].contains(c))
            .collect();
        assert_eq!(written, known);
    }
}
