//! How a template row becomes Magnum's JSON (`ClusterTemplate.convert_with_links`): every
//! field, in lists and details alike.

use serde_json::{json, Map, Value};

use crate::model::ClusterTemplate;

/// The API dictionary of a template (every field, `null` where unset), without links.
pub fn template_doc(t: &ClusterTemplate) -> Map<String, Value> {
    let v = json!({
        "uuid": t.uuid,
        "name": t.name,
        "coe": t.coe,
        "image_id": t.image_id,
        "flavor_id": t.flavor_id,
        "master_flavor_id": t.master_flavor_id,
        "dns_nameserver": t.dns_nameserver,
        "keypair_id": t.keypair_id,
        "external_network_id": t.external_network_id,
        "fixed_network": t.fixed_network,
        "fixed_subnet": t.fixed_subnet,
        "network_driver": t.network_driver,
        "apiserver_port": t.apiserver_port,
        "docker_volume_size": t.docker_volume_size,
        "cluster_distro": t.cluster_distro,
        "http_proxy": t.http_proxy,
        "https_proxy": t.https_proxy,
        "no_proxy": t.no_proxy,
        "volume_driver": t.volume_driver,
        "registry_enabled": t.registry_enabled,
        "labels": t.labels,
        "tls_disabled": t.tls_disabled,
        "public": t.public,
        "server_type": t.server_type,
        "insecure_registry": t.insecure_registry,
        "docker_storage_driver": t.docker_storage_driver,
        "master_lb_enabled": t.master_lb_enabled,
        "floating_ip_enabled": t.floating_ip_enabled,
        "project_id": t.project_id,
        "user_id": t.user_id,
        "hidden": t.hidden,
        "tags": t.tags,
        "driver": t.driver,
        "created_at": t.created_at,
        "updated_at": t.updated_at,
    });
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// [`template_doc`] with its `self` and `bookmark` links.
pub(super) fn render(t: &ClusterTemplate, base: &str) -> Value {
    let mut doc = template_doc(t);
    doc.insert(
        "links".into(),
        json!([
            {"href": format!("{base}/v1/clustertemplates/{}", t.uuid), "rel": "self"},
            {"href": format!("{base}/clustertemplates/{}", t.uuid), "rel": "bookmark"},
        ]),
    );
    Value::Object(doc)
}
