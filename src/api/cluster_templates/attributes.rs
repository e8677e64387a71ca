//! The writable attributes of the `ClusterTemplate` API type, read and type-checked as WSME
//! does, from a POST body or from a template's dictionary after a JSON patch.

use super::validate::validate_dns;
use crate::api::body::Body;
use crate::api::bounds::{column_width, FieldBounds};
use crate::error::{ApiError, ApiResult};
use crate::model::ClusterTemplate;

/// Reads and validates a template's fields from a body or a patched dictionary.
pub(super) fn read_attrs(b: &Body, into: &mut ClusterTemplate) -> ApiResult<()> {
    b.uuid("uuid")?;
    let s = |name: &str| b.string(name, 1, 255);
    into.name = s("name")?;
    into.coe = s("coe")?;
    if let Some(coe) = &into.coe {
        if coe != "kubernetes" {
            return Err(ApiError::invalid_input(
                "coe",
                coe,
                "Value should be one of: kubernetes",
            ));
        }
    }
    into.image_id = s("image_id")?;
    into.flavor_id = s("flavor_id")?;
    into.master_flavor_id = s("master_flavor_id")?;
    into.dns_nameserver = b.text("dns_nameserver")?;
    if let Some(dns) = &into.dns_nameserver {
        validate_dns(dns)?;
    }
    into.keypair_id = s("keypair_id")?;
    into.external_network_id = s("external_network_id")?;
    into.fixed_network = s("fixed_network")?;
    into.fixed_subnet = s("fixed_subnet")?;
    into.network_driver = s("network_driver")?;
    into.apiserver_port = b.int("apiserver_port", Some(1024))?;
    if let Some(p) = into.apiserver_port {
        if p > 65535 {
            return Err(ApiError::invalid_input(
                "apiserver_port",
                p.to_string(),
                "Value should be lower or equal to 65535",
            ));
        }
    }
    into.docker_volume_size = b.int("docker_volume_size", Some(1))?;
    into.cluster_distro = s("cluster_distro")?;
    into.http_proxy = s("http_proxy")?;
    into.https_proxy = s("https_proxy")?;
    into.no_proxy = s("no_proxy")?;
    into.volume_driver = s("volume_driver")?;
    into.registry_enabled = Some(b.boolean("registry_enabled")?.unwrap_or(false));
    into.labels = b.labels("labels")?;
    into.tls_disabled = Some(b.boolean("tls_disabled")?.unwrap_or(false));
    into.public = Some(b.boolean("public")?.unwrap_or(false));
    into.server_type = Some(s("server_type")?.unwrap_or_else(|| "vm".into()));
    if let Some(st) = into.server_type.as_deref() {
        // `wtypes.Enum(wtypes.text, 'vm', 'bm')` (a set: Python prints it in hash order).
        if !["vm", "bm"].contains(&st) {
            return Err(ApiError::invalid_input(
                "server_type",
                st,
                "Value should be one of: vm, bm",
            ));
        }
    }
    into.insecure_registry = s("insecure_registry")?;
    into.docker_storage_driver = s("docker_storage_driver")?;
    into.master_lb_enabled = Some(b.boolean("master_lb_enabled")?.unwrap_or(false));
    into.floating_ip_enabled = Some(b.boolean("floating_ip_enabled")?.unwrap_or(true));
    into.hidden = Some(b.boolean("hidden")?.unwrap_or(false));
    into.tags = b.string("tags", 0, 255)?;
    into.driver = s("driver")?;
    Ok(())
}

/// magnum-rs's size bounds on what `t` stores that differs from `before` (everything, on a
/// create): its `labels` (`[api] max_labels_size`) and `dns_nameserver` (the width of its
/// column, which `types.dns_list` does not check). Run after WSME's checks (`read_attrs`).
pub(super) fn check_bounds(
    t: &ClusterTemplate,
    before: Option<&ClusterTemplate>,
    bounds: FieldBounds,
) -> ApiResult<()> {
    if let Some(labels) = t
        .labels
        .as_ref()
        .filter(|_| before.is_none_or(|b| b.labels != t.labels))
    {
        bounds.labels(labels)?;
    }
    let dns_changed = before.is_none_or(|b| b.dns_nameserver != t.dns_nameserver);
    if let Some(dns) = t.dns_nameserver.as_deref().filter(|_| dns_changed) {
        column_width("dns_nameserver", dns)?;
    }
    Ok(())
}
