//! Column lists of Magnum's tables and the decoding of `Any` rows into model types.

use std::sync::LazyLock;

use serde_json::{Map, Value};
use sqlx::any::{AnyRow, AnyTypeInfoKind};
use sqlx::{Decode, Row, ValueRef as _};

use crate::model::{Cluster, ClusterTemplate, NodeGroup};

/// How a column is read back through the `Any` driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Text,
    Int,
    /// BOOLEAN / TINYINT(1): cast to an integer.
    Bool,
    /// DATETIME: cast to a string.
    Time,
}

pub const TEMPLATE_COLUMNS: &[(&str, Kind)] = &[
    ("id", Kind::Int),
    ("uuid", Kind::Text),
    ("project_id", Kind::Text),
    ("user_id", Kind::Text),
    ("name", Kind::Text),
    ("image_id", Kind::Text),
    ("flavor_id", Kind::Text),
    ("master_flavor_id", Kind::Text),
    ("keypair_id", Kind::Text),
    ("external_network_id", Kind::Text),
    ("fixed_network", Kind::Text),
    ("fixed_subnet", Kind::Text),
    ("network_driver", Kind::Text),
    ("volume_driver", Kind::Text),
    ("dns_nameserver", Kind::Text),
    ("apiserver_port", Kind::Int),
    ("docker_volume_size", Kind::Int),
    ("docker_storage_driver", Kind::Text),
    ("cluster_distro", Kind::Text),
    ("coe", Kind::Text),
    ("http_proxy", Kind::Text),
    ("https_proxy", Kind::Text),
    ("no_proxy", Kind::Text),
    ("registry_enabled", Kind::Bool),
    ("labels", Kind::Text),
    ("tls_disabled", Kind::Bool),
    ("public", Kind::Bool),
    ("server_type", Kind::Text),
    ("insecure_registry", Kind::Text),
    ("master_lb_enabled", Kind::Bool),
    ("floating_ip_enabled", Kind::Bool),
    ("hidden", Kind::Bool),
    ("tags", Kind::Text),
    ("driver", Kind::Text),
    ("created_at", Kind::Time),
    ("updated_at", Kind::Time),
];

pub const CLUSTER_COLUMNS: &[(&str, Kind)] = &[
    ("id", Kind::Int),
    ("uuid", Kind::Text),
    ("project_id", Kind::Text),
    ("user_id", Kind::Text),
    ("name", Kind::Text),
    ("cluster_template_id", Kind::Text),
    ("keypair", Kind::Text),
    ("docker_volume_size", Kind::Int),
    ("labels", Kind::Text),
    ("master_flavor_id", Kind::Text),
    ("flavor_id", Kind::Text),
    ("stack_id", Kind::Text),
    ("api_address", Kind::Text),
    ("status", Kind::Text),
    ("status_reason", Kind::Text),
    ("health_status", Kind::Text),
    ("health_status_reason", Kind::Text),
    ("create_timeout", Kind::Int),
    ("discovery_url", Kind::Text),
    ("coe_version", Kind::Text),
    ("container_version", Kind::Text),
    ("fixed_network", Kind::Text),
    ("fixed_subnet", Kind::Text),
    ("floating_ip_enabled", Kind::Bool),
    ("master_lb_enabled", Kind::Bool),
    ("created_at", Kind::Time),
    ("updated_at", Kind::Time),
];

pub const NODEGROUP_COLUMNS: &[(&str, Kind)] = &[
    ("id", Kind::Int),
    ("uuid", Kind::Text),
    ("name", Kind::Text),
    ("cluster_id", Kind::Text),
    ("project_id", Kind::Text),
    ("docker_volume_size", Kind::Int),
    ("labels", Kind::Text),
    ("flavor_id", Kind::Text),
    ("image_id", Kind::Text),
    ("node_addresses", Kind::Text),
    ("node_count", Kind::Int),
    ("max_node_count", Kind::Int),
    ("min_node_count", Kind::Int),
    ("role", Kind::Text),
    ("is_default", Kind::Bool),
    ("stack_id", Kind::Text),
    ("status", Kind::Text),
    ("status_reason", Kind::Text),
    ("version", Kind::Text),
    ("node_labels", Kind::Text),
    ("node_taints", Kind::Text),
    ("created_at", Kind::Time),
    ("updated_at", Kind::Time),
];

/// The select list of `template` aliased `t`, built once.
pub fn template_select() -> &'static str {
    static S: LazyLock<String> = LazyLock::new(|| select_list(TEMPLATE_COLUMNS, "t."));
    &S
}

/// The select list of `cluster` aliased `t`, built once.
pub fn cluster_select() -> &'static str {
    static S: LazyLock<String> = LazyLock::new(|| select_list(CLUSTER_COLUMNS, "t."));
    &S
}

/// The select list of `nodegroup` aliased `t`, built once.
pub fn nodegroup_select() -> &'static str {
    static S: LazyLock<String> = LazyLock::new(|| select_list(NODEGROUP_COLUMNS, "t."));
    &S
}

/// The select list for a table, with an optional alias prefix (`c.`).
fn select_list(cols: &[(&str, Kind)], alias: &str) -> String {
    cols.iter()
        .map(|(c, k)| match k {
            Kind::Text | Kind::Int => format!("{alias}{c} AS {c}"),
            Kind::Bool => format!("CAST({alias}{c} AS SIGNED) AS {c}"),
            Kind::Time => format!("CAST({alias}{c} AS CHAR) AS {c}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Typed access to one row; every getter tolerates the representations both drivers give.
pub(super) struct R<'a>(pub(super) &'a AnyRow);

impl R<'_> {
    pub(super) fn text(&self, col: &str) -> Result<Option<String>, sqlx::Error> {
        text_at(self.0, col)
    }

    pub(super) fn int(&self, col: &str) -> Result<Option<i64>, sqlx::Error> {
        self.0.try_get::<Option<i64>, _>(col)
    }

    pub(super) fn boolean(&self, col: &str) -> Result<Option<bool>, sqlx::Error> {
        Ok(self.int(col)?.map(|v| v != 0))
    }

    /// DATETIME as Python's `isoformat()` of an aware UTC datetime.
    pub(super) fn time(&self, col: &str) -> Result<Option<String>, sqlx::Error> {
        Ok(self.text(col)?.map(|t| iso8601(&t)))
    }

    pub(super) fn json_map(&self, col: &str) -> Result<Option<Map<String, Value>>, sqlx::Error> {
        Ok(self
            .text(col)?
            .and_then(|t| match serde_json::from_str(&t) {
                Ok(Value::Object(m)) => Some(m),
                _ => None,
            }))
    }

    pub(super) fn json_list(&self, col: &str) -> Result<Option<Vec<Value>>, sqlx::Error> {
        Ok(self
            .text(col)?
            .and_then(|t| match serde_json::from_str(&t) {
                Ok(Value::Array(a)) => Some(a),
                _ => None,
            }))
    }
}

/// A text column of `row`, by name or position. MySQL hands TEXT columns to the `Any`
/// driver as BLOBs and VARCHARs as text, SQLite always as text: the value's own kind decides
/// how it is read (no failed decode first, no copy before the final `String`).
pub fn text_at<I: sqlx::ColumnIndex<AnyRow>>(
    row: &AnyRow,
    col: I,
) -> Result<Option<String>, sqlx::Error> {
    let value = row.try_get_raw(col)?;
    if value.is_null() {
        return Ok(None);
    }
    let kind = value.type_info().kind();
    let decoded = if kind == AnyTypeInfoKind::Blob {
        <&[u8] as Decode<sqlx::Any>>::decode(value).map(|b| String::from_utf8_lossy(b).into_owned())
    } else {
        <&str as Decode<sqlx::Any>>::decode(value).map(str::to_owned)
    };
    decoded.map(Some).map_err(sqlx::Error::Decode)
}

/// `2026-12-02 13:12:43.591691` → `2026-12-02T13:12:43.591691+00:00`; trailing zero
/// microseconds are dropped, as Python does.
pub fn iso8601(db: &str) -> String {
    let t = db.trim().replacen(' ', "T", 1);
    let t = match t.split_once('.') {
        Some((head, frac)) if frac.chars().all(|c| c == '0') => head.to_string(),
        _ => t,
    };
    format!("{t}+00:00")
}

pub fn template_from_row(row: &AnyRow) -> Result<ClusterTemplate, sqlx::Error> {
    let r = R(row);
    Ok(ClusterTemplate {
        id: r.int("id")?.unwrap_or_default(),
        uuid: r.text("uuid")?.unwrap_or_default(),
        project_id: r.text("project_id")?,
        user_id: r.text("user_id")?,
        name: r.text("name")?,
        image_id: r.text("image_id")?,
        flavor_id: r.text("flavor_id")?,
        master_flavor_id: r.text("master_flavor_id")?,
        keypair_id: r.text("keypair_id")?,
        external_network_id: r.text("external_network_id")?,
        fixed_network: r.text("fixed_network")?,
        fixed_subnet: r.text("fixed_subnet")?,
        network_driver: r.text("network_driver")?,
        volume_driver: r.text("volume_driver")?,
        dns_nameserver: r.text("dns_nameserver")?,
        apiserver_port: r.int("apiserver_port")?,
        docker_volume_size: r.int("docker_volume_size")?,
        docker_storage_driver: r.text("docker_storage_driver")?,
        cluster_distro: r.text("cluster_distro")?,
        coe: r.text("coe")?,
        http_proxy: r.text("http_proxy")?,
        https_proxy: r.text("https_proxy")?,
        no_proxy: r.text("no_proxy")?,
        registry_enabled: r.boolean("registry_enabled")?,
        labels: r.json_map("labels")?,
        tls_disabled: r.boolean("tls_disabled")?,
        public: r.boolean("public")?,
        server_type: r.text("server_type")?,
        insecure_registry: r.text("insecure_registry")?,
        master_lb_enabled: r.boolean("master_lb_enabled")?,
        floating_ip_enabled: r.boolean("floating_ip_enabled")?,
        hidden: r.boolean("hidden")?,
        tags: r.text("tags")?,
        driver: r.text("driver")?,
        created_at: r.time("created_at")?,
        updated_at: r.time("updated_at")?,
    })
}

pub fn cluster_from_row(row: &AnyRow) -> Result<Cluster, sqlx::Error> {
    let r = R(row);
    Ok(Cluster {
        id: r.int("id")?.unwrap_or_default(),
        uuid: r.text("uuid")?.unwrap_or_default(),
        project_id: r.text("project_id")?,
        user_id: r.text("user_id")?,
        name: r.text("name")?,
        cluster_template_id: r.text("cluster_template_id")?,
        keypair: r.text("keypair")?,
        docker_volume_size: r.int("docker_volume_size")?,
        labels: r.json_map("labels")?,
        master_flavor_id: r.text("master_flavor_id")?,
        flavor_id: r.text("flavor_id")?,
        stack_id: r.text("stack_id")?,
        api_address: r.text("api_address")?,
        status: r.text("status")?,
        status_reason: r.text("status_reason")?,
        health_status: r.text("health_status")?,
        health_status_reason: r.json_map("health_status_reason")?,
        create_timeout: r.int("create_timeout")?,
        discovery_url: r.text("discovery_url")?,
        coe_version: r.text("coe_version")?,
        container_version: r.text("container_version")?,
        fixed_network: r.text("fixed_network")?,
        fixed_subnet: r.text("fixed_subnet")?,
        floating_ip_enabled: r.boolean("floating_ip_enabled")?,
        master_lb_enabled: r.boolean("master_lb_enabled")?,
        created_at: r.time("created_at")?,
        updated_at: r.time("updated_at")?,
    })
}

pub fn nodegroup_from_row(row: &AnyRow) -> Result<NodeGroup, sqlx::Error> {
    let r = R(row);
    Ok(NodeGroup {
        id: r.int("id")?.unwrap_or_default(),
        uuid: r.text("uuid")?.unwrap_or_default(),
        name: r.text("name")?.unwrap_or_default(),
        cluster_id: r.text("cluster_id")?.unwrap_or_default(),
        project_id: r.text("project_id")?.unwrap_or_default(),
        docker_volume_size: r.int("docker_volume_size")?,
        labels: r.json_map("labels")?,
        flavor_id: r.text("flavor_id")?,
        image_id: r.text("image_id")?,
        node_addresses: r.json_list("node_addresses")?,
        node_count: r.int("node_count")?.unwrap_or(1),
        max_node_count: r.int("max_node_count")?,
        min_node_count: r.int("min_node_count")?.unwrap_or(0),
        role: r.text("role")?,
        is_default: r.boolean("is_default")?,
        stack_id: r.text("stack_id")?,
        status: r.text("status")?,
        status_reason: r.text("status_reason")?,
        version: r.text("version")?,
        node_labels: r.json_map("node_labels")?,
        node_taints: r.json_list("node_taints")?,
        created_at: r.time("created_at")?,
        updated_at: r.time("updated_at")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_render_like_python_isoformat() {
        assert_eq!(
            iso8601("2026-12-02 13:12:43.591691"),
            "2026-12-02T13:12:43.591691+00:00"
        );
        assert_eq!(iso8601("2026-12-02 13:17:02"), "2026-12-02T13:17:02+00:00");
        assert_eq!(
            iso8601("2026-12-02 13:17:02.000000"),
            "2026-12-02T13:17:02+00:00"
        );
    }
}
