//! `cluster_template` rows.

use super::keys::TemplateBy;
use super::schema::{json_map, select_from, Column as _, TemplateCol, TemplateRow};
use super::sort_key::Table;
use super::{insert_row, now, stmt, Batch, Bind, Guard, Page, Refused, Store};
use crate::model::{ClusterTemplate, DriverSelector, Tenancy};

/// Which templates a caller sees: its own (or all, for an admin with `all_tenants`), public
/// non-hidden ones, and public hidden ones when admin.
#[derive(Clone, Debug)]
pub struct TemplateScope {
    pub tenancy: Tenancy,
    pub is_admin: bool,
}

/// What of a template chooses its driver.
#[derive(sqlx::FromRow)]
struct SelectorRow {
    uuid: Option<String>,
    coe: Option<String>,
    cluster_distro: Option<String>,
    server_type: Option<String>,
    driver: Option<String>,
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
        let mut sql = format!("{} WHERE 1 = 1", select_from::<TemplateCol>());
        sql.push_str(&scope.filter(&mut binds));
        page.apply(Table::ClusterTemplate, &mut sql, &mut binds);
        let rows: Vec<TemplateRow> = stmt(sql)
            .bind_all(binds)
            .fetch_all(&mut self.conn().await?)
            .await?;
        Ok(rows.into_iter().map(ClusterTemplate::from).collect())
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
            "{} WHERE t.{} = ?",
            select_from::<TemplateCol>(),
            by.column().name()
        );
        sql.push_str(&scope.filter(&mut binds));
        sql.push_str(" ORDER BY t.id LIMIT 2");
        let rows: Vec<TemplateRow> = stmt(sql)
            .bind_all(binds)
            .fetch_all(&mut self.conn().await?)
            .await?;
        Ok(rows.into_iter().map(ClusterTemplate::from).collect())
    }

    /// A template by uuid regardless of project (drivers and clusters refer to templates
    /// they may not own, e.g. public ones).
    pub async fn template_by_uuid(
        &self,
        uuid: &str,
    ) -> Result<Option<ClusterTemplate>, sqlx::Error> {
        let row: Option<TemplateRow> =
            stmt(format!("{} WHERE t.uuid = ?", select_from::<TemplateCol>()))
                .bind(uuid)
                .fetch_optional(&mut self.conn().await?)
                .await?;
        Ok(row.map(ClusterTemplate::from))
    }

    /// What of a template chooses its driver, for paths that need nothing else of it
    /// (resize, credentials, the worker's operations other than a cluster create).
    pub async fn template_for_driver(
        &self,
        uuid: &str,
    ) -> Result<Option<DriverSelector>, sqlx::Error> {
        let row: Option<SelectorRow> = stmt(
            "SELECT t.uuid, t.coe, t.cluster_distro, t.server_type, t.driver \
             FROM cluster_template t WHERE t.uuid = ?",
        )
        .bind(uuid)
        .fetch_optional(&mut self.conn().await?)
        .await?;
        Ok(row.map(|r| DriverSelector {
            uuid: r.uuid.unwrap_or_default(),
            coe: r.coe,
            cluster_distro: r.cluster_distro,
            server_type: r.server_type,
            driver: r.driver,
        }))
    }

    /// Only the labels of a template (what a cluster's detail view needs of it): `None`
    /// when the template is missing or its labels are not a JSON object.
    pub async fn template_labels(
        &self,
        uuid: &str,
    ) -> Result<Option<serde_json::Map<String, serde_json::Value>>, sqlx::Error> {
        let labels: Option<Option<String>> =
            stmt("SELECT t.labels FROM cluster_template t WHERE t.uuid = ?")
                .bind(uuid)
                .scalar_optional(&mut self.conn().await?)
                .await?;
        Ok(json_map(labels.flatten().as_deref()))
    }

    pub async fn insert_template(
        &self,
        t: &ClusterTemplate,
    ) -> Result<ClusterTemplate, sqlx::Error> {
        let mut values = template_values(t);
        values.push((TemplateCol::CreatedAt, Bind::text(now())));
        insert_row(&mut self.conn().await?, values).await?;
        self.template_by_uuid(&t.uuid)
            .await?
            .ok_or(sqlx::Error::RowNotFound)
    }

    /// Writes every mutable column of `t` (PATCH applies to a copy read in the same request).
    /// A template's PATCH: the columns of `t` that differ from `before` (the row the patch
    /// was made from), so a concurrent PATCH of other fields is not undone, as Magnum's
    /// `save()` writes only what changed. One transaction under the template's lock:
    /// refused when the template is gone, or, with `unused`, when a cluster uses it (a
    /// cluster create takes the same lock, so one that raced the check counts here).
    pub async fn patch_template(
        &self,
        before: &ClusterTemplate,
        t: &ClusterTemplate,
        unused: bool,
    ) -> Result<Result<(), Refused>, sqlx::Error> {
        let changes: Vec<(TemplateCol, Bind)> = template_values(t)
            .into_iter()
            .zip(template_values(before))
            .filter(|((_, now), (_, was))| now != was)
            .map(|(now, _)| now)
            .collect();
        let mut batch = Batch::default().guard(Guard::template(&t.uuid));
        if unused {
            batch = batch.guard(Guard::template_unused(&t.uuid));
        }
        if !changes.is_empty() {
            batch = batch.update_template(&t.uuid, changes);
        }
        Ok(self.commit(batch).await?.map(|_| ()))
    }

    /// How many clusters (of any project) use the template.
    pub async fn clusters_using_template(&self, uuid: &str) -> Result<i64, sqlx::Error> {
        let n: i64 = stmt("SELECT COUNT(*) FROM cluster WHERE cluster_template_id = ?")
            .bind(uuid)
            .scalar(&mut self.conn().await?)
            .await?;
        Ok(n)
    }
}

/// Binds in `TEMPLATE_COLUMNS` order, without `id`/`updated_at`; with `created_at` when given.
/// The columns of a template that an insert or a PATCH writes (every column but `id`,
/// `created_at` and `updated_at`), named.
fn template_values(t: &ClusterTemplate) -> Vec<(TemplateCol, Bind)> {
    vec![
        (TemplateCol::Uuid, Bind::text(&t.uuid)),
        (TemplateCol::ProjectId, Bind::Text(t.project_id.clone())),
        (TemplateCol::UserId, Bind::Text(t.user_id.clone())),
        (TemplateCol::Name, Bind::Text(t.name.clone())),
        (TemplateCol::ImageId, Bind::Text(t.image_id.clone())),
        (TemplateCol::FlavorId, Bind::Text(t.flavor_id.clone())),
        (
            TemplateCol::MasterFlavorId,
            Bind::Text(t.master_flavor_id.clone()),
        ),
        (TemplateCol::KeypairId, Bind::Text(t.keypair_id.clone())),
        (
            TemplateCol::ExternalNetworkId,
            Bind::Text(t.external_network_id.clone()),
        ),
        (
            TemplateCol::FixedNetwork,
            Bind::Text(t.fixed_network.clone()),
        ),
        (TemplateCol::FixedSubnet, Bind::Text(t.fixed_subnet.clone())),
        (
            TemplateCol::NetworkDriver,
            Bind::Text(t.network_driver.clone()),
        ),
        (
            TemplateCol::VolumeDriver,
            Bind::Text(t.volume_driver.clone()),
        ),
        (
            TemplateCol::DnsNameserver,
            Bind::Text(t.dns_nameserver.clone()),
        ),
        (TemplateCol::ApiserverPort, Bind::Int(t.apiserver_port)),
        (
            TemplateCol::DockerVolumeSize,
            Bind::Int(t.docker_volume_size),
        ),
        (
            TemplateCol::DockerStorageDriver,
            Bind::Text(t.docker_storage_driver.clone()),
        ),
        (
            TemplateCol::ClusterDistro,
            Bind::Text(t.cluster_distro.clone()),
        ),
        (TemplateCol::Coe, Bind::Text(t.coe.clone())),
        (TemplateCol::HttpProxy, Bind::Text(t.http_proxy.clone())),
        (TemplateCol::HttpsProxy, Bind::Text(t.https_proxy.clone())),
        (TemplateCol::NoProxy, Bind::Text(t.no_proxy.clone())),
        (TemplateCol::RegistryEnabled, Bind::Bool(t.registry_enabled)),
        (TemplateCol::Labels, Bind::json_map(&t.labels)),
        (TemplateCol::TlsDisabled, Bind::Bool(t.tls_disabled)),
        (TemplateCol::Public, Bind::Bool(t.public)),
        (TemplateCol::ServerType, Bind::Text(t.server_type.clone())),
        (
            TemplateCol::InsecureRegistry,
            Bind::Text(t.insecure_registry.clone()),
        ),
        (
            TemplateCol::MasterLbEnabled,
            Bind::Bool(t.master_lb_enabled),
        ),
        (
            TemplateCol::FloatingIpEnabled,
            Bind::Bool(t.floating_ip_enabled),
        ),
        (TemplateCol::Hidden, Bind::Bool(t.hidden)),
        (TemplateCol::Tags, Bind::Text(t.tags.clone())),
        (TemplateCol::Driver, Bind::Text(t.driver.clone())),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each written value is named, and the names are the table's columns read back.
    #[test]
    fn template_values_name_every_column_the_reads_know() {
        let written: Vec<TemplateCol> = template_values(&ClusterTemplate::default())
            .iter()
            .map(|(c, _)| *c)
            .collect();
        let known: Vec<TemplateCol> = TemplateCol::ALL
            .iter()
            .copied()
            .filter(|c| {
                ![
                    TemplateCol::Id,
                    TemplateCol::CreatedAt,
                    TemplateCol::UpdatedAt,
                ]
                .contains(c)
            })
            .collect();
        assert_eq!(written, known);
    }
}
