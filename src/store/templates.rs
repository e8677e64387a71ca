//! `cluster_template` rows.

use super::columns::{template_from_row, template_select, text_at, TEMPLATE_COLUMNS};
use super::keys::TemplateBy;
use super::sort_key::Table;
use super::{bind_all, now, update_columns, Bind, Page, Store};
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
        let created = now();
        let binds = template_binds(t, Some(created));
        let cols: Vec<&str> = TEMPLATE_COLUMNS
            .iter()
            .map(|(c, _)| *c)
            .filter(|c| *c != "id" && *c != "updated_at")
            .collect();
        let sql = format!(
            "INSERT INTO cluster_template ({}) VALUES ({})",
            cols.join(", "),
            vec!["?"; cols.len()].join(", ")
        );
        bind_all(sqlx::query(&sql), &binds)
            .execute(&mut self.conn().await?)
            .await?;
        self.template_by_uuid(&t.uuid)
            .await?
            .ok_or(sqlx::Error::RowNotFound)
    }

    /// Writes every mutable column of `t` (PATCH applies to a copy read in the same request).
    pub async fn update_template(&self, t: &ClusterTemplate) -> Result<(), sqlx::Error> {
        let binds = template_binds(t, None);
        let cols = TEMPLATE_COLUMNS
            .iter()
            .map(|(c, _)| *c)
            .filter(|c| !matches!(*c, "id" | "created_at" | "updated_at"));
        let changes: Vec<(&str, Bind)> = cols.zip(binds).collect();
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
fn template_binds(t: &ClusterTemplate, created_at: Option<String>) -> Vec<Bind> {
    let mut b = vec![
        Bind::text(&t.uuid),
        Bind::Text(t.project_id.clone()),
        Bind::Text(t.user_id.clone()),
        Bind::Text(t.name.clone()),
        Bind::Text(t.image_id.clone()),
        Bind::Text(t.flavor_id.clone()),
        Bind::Text(t.master_flavor_id.clone()),
        Bind::Text(t.keypair_id.clone()),
        Bind::Text(t.external_network_id.clone()),
        Bind::Text(t.fixed_network.clone()),
        Bind::Text(t.fixed_subnet.clone()),
        Bind::Text(t.network_driver.clone()),
        Bind::Text(t.volume_driver.clone()),
        Bind::Text(t.dns_nameserver.clone()),
        Bind::Int(t.apiserver_port),
        Bind::Int(t.docker_volume_size),
        Bind::Text(t.docker_storage_driver.clone()),
        Bind::Text(t.cluster_distro.clone()),
        Bind::Text(t.coe.clone()),
        Bind::Text(t.http_proxy.clone()),
        Bind::Text(t.https_proxy.clone()),
        Bind::Text(t.no_proxy.clone()),
        Bind::Bool(t.registry_enabled),
        Bind::json_map(&t.labels),
        Bind::Bool(t.tls_disabled),
        Bind::Bool(t.public),
        Bind::Text(t.server_type.clone()),
        Bind::Text(t.insecure_registry.clone()),
        Bind::Bool(t.master_lb_enabled),
        Bind::Bool(t.floating_ip_enabled),
        Bind::Bool(t.hidden),
        Bind::Text(t.tags.clone()),
        Bind::Text(t.driver.clone()),
    ];
    if let Some(c) = created_at {
        b.push(Bind::Text(Some(c)));
    }
    b
}
