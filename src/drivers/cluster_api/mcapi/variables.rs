//! The 39 variables of magnum-cluster-api 0.38.2's ClusterClass, from the same Magnum rows
//! and by the same rules (`resources.py` `Cluster.get_object`): labels with their defaults,
//! template and cluster fields, and what was looked up in the cloud ([`Facts`]). Every
//! variable of that class is required, so all 39 are always written, in mcapi's order.

use base64::Engine as _;
use serde_json::{json, Value};

use super::labels::{LabelError, Labels};
use crate::model::{Cluster, ClusterTemplate};

/// The operating systems mcapi's class knows (a prefix of the template's `cluster_distro`).
pub const OPERATING_SYSTEMS: [&str; 4] = ["ubuntu", "debian", "flatcar", "rockylinux"];

/// mcapi's pause image (`images.PAUSE`), named in the containerd configuration.
const PAUSE: &str = "registry.k8s.io/pause:3.9";

const API_SERVER_TLS_CIPHER_SUITES: &str = "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,\
TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,\
TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305,\
TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305";

const KUBELET_TLS_CIPHER_SUITES: &str = "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,\
TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305";

/// What mcapi looks up for a cluster's variables, in the cloud (as the requesting user)
/// and in the management cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    /// Nova's name of the cluster's `master_flavor_id` (a name or an id).
    pub control_plane_flavor: String,
    /// Nova's name of the cluster's `flavor_id`.
    pub worker_flavor: String,
    /// Glance's id of the master nodegroup's image, and its `hw_disk_bus` property.
    pub image_id: String,
    pub hw_disk_bus: Option<String>,
    /// Neutron's ids of the template's external network and the cluster's fixed network
    /// and subnet (ids pass through; none: empty).
    pub external_network_id: String,
    pub fixed_network_id: String,
    pub fixed_subnet_id: String,
    /// Cinder's default volume type's name.
    pub default_volume_type: String,
    /// The id of the control plane's server group `<stack>`.
    pub server_group_id: String,
    /// What an OpenStackCluster that exists already holds immutable (an adopted cluster).
    pub existing: ExistingOpenStackCluster,
}

/// The fields of an existing OpenStackCluster that CAPO holds immutable, which mcapi keeps
/// (`resolve_immutable_fields`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExistingOpenStackCluster {
    /// `spec.apiServerLoadBalancer.provider`, `.flavor`, `.availabilityZone`.
    pub lb_provider: Option<String>,
    pub lb_flavor: Option<String>,
    pub lb_availability_zone: Option<String>,
    /// `spec.disableAPIServerFloatingIP`, when the spec has the field.
    pub disable_api_server_floating_ip: Option<bool>,
}

/// Magnum's settings mcapi reads (`[cinder]`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// `[cinder] default_boot_volume_size`.
    pub default_boot_volume_size: i64,
    /// `[cinder] default_boot_volume_type`; none: Cinder's default type.
    pub default_boot_volume_type: Option<String>,
}

fn var(name: &str, value: Value) -> Value {
    json!({"name": name, "value": value})
}

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// Python's `str.format` of an optional template field (`None` prints as `None`).
fn py(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("None")
}

/// `utils.generate_systemd_proxy_config`.
pub fn systemd_proxy_config(t: &ClusterTemplate) -> String {
    if t.http_proxy.is_none() && t.https_proxy.is_none() {
        return String::new();
    }
    let (http, https, no) = (py(&t.http_proxy), py(&t.https_proxy), py(&t.no_proxy));
    format!(
        "[Service]\nEnvironment=\"http_proxy={http}\"\nEnvironment=\"HTTP_PROXY={http}\"\n\
         Environment=\"https_proxy={https}\"\nEnvironment=\"HTTPS_PROXY={https}\"\n\
         Environment=\"no_proxy={no}\"\nEnvironment=\"NO_PROXY={no}\"\n"
    )
}

/// `utils.generate_apt_proxy_config`.
pub fn apt_proxy_config(t: &ClusterTemplate) -> String {
    if t.http_proxy.is_none() && t.https_proxy.is_none() {
        return String::new();
    }
    format!(
        "Acquire::http::Proxy \"{}\";\nAcquire::https::Proxy \"{}\";\n",
        py(&t.http_proxy),
        py(&t.https_proxy)
    )
}

/// `utils.generate_containerd_config`: the sandbox image from the registry the
/// `container_infra_prefix` label names (`image_utils.get_image`).
pub fn containerd_config(container_infra_prefix: &str) -> String {
    let sandbox = if container_infra_prefix.is_empty() {
        PAUSE.to_string()
    } else {
        PAUSE.replacen("registry.k8s.io", container_infra_prefix, 1)
    };
    format!(
        "# Use config version 2 to enable new configuration fields.\n\
         # Config file is parsed as version 1 by default.\n\
         version = 2\n\
         \n\
         imports = [\"/etc/containerd/conf.d/*.toml\"]\n\
         \n\
         [plugins]\n\
         [plugins.\"io.containerd.grpc.v1.cri\"]\n    sandbox_image = \"{sandbox}\"\n\
         [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n    \
         runtime_type = \"io.containerd.runc.v2\"\n\
         [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n    \
         SystemdCgroup = true\n"
    )
}

/// `utils.get_operating_system`: the known system `cluster_distro` starts with.
pub fn operating_system(t: &ClusterTemplate) -> Option<&'static str> {
    let distro = t.cluster_distro.as_deref().unwrap_or_default();
    OPERATING_SYSTEMS
        .into_iter()
        .find(|os| distro.starts_with(os))
}

/// `utils.generate_api_cert_san_list`: one `- <san>` line per name.
fn api_server_sans(labels: &Labels<'_>) -> String {
    labels
        .text_or("api_server_cert_sans", "")
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| format!("- {s}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The cluster's 39 variables, in mcapi's order.
pub fn cluster_variables(
    cluster: &Cluster,
    template: &ClusterTemplate,
    facts: &Facts,
    settings: &Settings,
) -> Result<Vec<Value>, LabelError> {
    let l = Labels::of(cluster.labels.as_ref());
    let stack = cluster.stack_id.as_deref().unwrap_or_default();
    let existing = &facts.existing;

    // `resolve_immutable_fields`: what the OpenStackCluster holds, else the labels.
    let mut lb = json!({"enabled": cluster.master_lb_enabled.unwrap_or(false)});
    for (field, held, label) in [
        ("provider", &existing.lb_provider, "octavia_provider"),
        ("flavor", &existing.lb_flavor, "api_server_lb_flavor"),
        (
            "availabilityZone",
            &existing.lb_availability_zone,
            "api_server_lb_availability_zone",
        ),
    ] {
        if let Some(v) = held.clone().or_else(|| l.text(label)) {
            lb[field] = json!(v);
        }
    }
    let floating_ip_disabled = !l.bool_or("master_lb_floating_ip_enabled", true)?;
    let disable_fip = existing
        .disable_api_server_floating_ip
        .unwrap_or(floating_ip_disabled);
    let disable_fip_managed =
        existing.disable_api_server_floating_ip.is_some() || floating_ip_disabled;

    let default_boot_type = settings
        .default_boot_volume_type
        .clone()
        .unwrap_or_else(|| facts.default_volume_type.clone());
    let etcd_volume_size = l.int_or("etcd_volume_size", 0)?;
    let prefix = l.text_or("container_infra_prefix", "");
    let admission = match l.text("admission_control_list").filter(|s| !s.is_empty()) {
        Some(more) => format!("NodeRestriction,{more}"),
        None => "NodeRestriction".to_string(),
    };

    Ok(vec![
        var("apiServerLoadBalancer", lb),
        var(
            "apiServerTLSCipherSuites",
            json!(l.text_or("api_server_tls_cipher_suites", API_SERVER_TLS_CIPHER_SUITES)),
        ),
        var(
            "apiServerFloatingIP",
            json!(l.text_or("api_server_floating_ip", "")),
        ),
        var(
            "openidConnect",
            json!({
                "clientId": l.text_or("oidc_client_id", ""),
                "groupsClaim": l.text_or("oidc_groups_claim", ""),
                "groupsPrefix": l.text_or("oidc_groups_prefix", ""),
                "issuerUrl": l.text_or("oidc_issuer_url", ""),
                "usernameClaim": l.text_or("oidc_username_claim", "sub"),
                "usernamePrefix": l.text_or("oidc_username_prefix", "-"),
            }),
        ),
        var(
            "auditLog",
            json!({
                "enabled": l.bool_or("audit_log_enabled", false)?,
                "maxAge": l.text_or("audit_log_max_age", "30"),
                "maxBackup": l.text_or("audit_log_max_backup", "10"),
                "maxSize": l.text_or("audit_log_max_size", "100"),
            }),
        ),
        var(
            "bootVolume",
            json!({
                "size": l.int_or("boot_volume_size", settings.default_boot_volume_size)?,
                "type": l.text("boot_volume_type").unwrap_or(default_boot_type),
            }),
        ),
        var(
            "bootVolumeAvailabilityZone",
            json!(l
                .text("boot_volume_availability_zone")
                .unwrap_or_else(|| l.text_or("availability_zone", ""))),
        ),
        var(
            "clusterIdentityRefName",
            json!(format!("{stack}-cloud-config")),
        ),
        var(
            "systemdProxyConfig",
            json!(b64(&systemd_proxy_config(template))),
        ),
        var("aptProxyConfig", json!(b64(&apt_proxy_config(template)))),
        var("containerdConfig", json!(b64(&containerd_config(&prefix)))),
        var("controlPlaneFlavor", json!(facts.control_plane_flavor)),
        var("disableAPIServerFloatingIP", json!(disable_fip)),
        var(
            "disableAPIServerFloatingIPManaged",
            json!(disable_fip_managed),
        ),
        var(
            "dnsNameservers",
            json!(template
                .dns_nameserver
                .as_deref()
                .unwrap_or("8.8.8.8")
                .split(',')
                .collect::<Vec<_>>()),
        ),
        var("externalNetworkId", json!(facts.external_network_id)),
        var("fixedNetworkId", json!(facts.fixed_network_id)),
        var("fixedSubnetId", json!(facts.fixed_subnet_id)),
        var("flavor", json!(facts.worker_flavor)),
        var("imageRepository", json!(prefix)),
        var("imageUUID", json!(facts.image_id)),
        var(
            "kubeletTLSCipherSuites",
            json!(l.text_or("kubelet_tls_cipher_suites", KUBELET_TLS_CIPHER_SUITES)),
        ),
        var("apiServerSANs", json!(api_server_sans(&l))),
        var(
            "nodeCidr",
            json!(l.text_or("fixed_subnet_cidr", "10.0.0.0/24")),
        ),
        var(
            "sshKeyName",
            json!(cluster.keypair.clone().unwrap_or_default()),
        ),
        var("operatingSystem", json!(operating_system(template))),
        var(
            "hardwareDiskBus",
            json!(facts.hw_disk_bus.clone().unwrap_or_default()),
        ),
        var(
            "enableDockerVolume",
            json!(cluster.docker_volume_size.is_some()),
        ),
        var(
            "dockerVolumeSize",
            json!(cluster.docker_volume_size.unwrap_or(0)),
        ),
        var(
            "dockerVolumeType",
            json!(l
                .text("docker_volume_type")
                .unwrap_or_else(|| facts.default_volume_type.clone())),
        ),
        var("enableEtcdVolume", json!(etcd_volume_size > 0)),
        var("etcdVolumeSize", json!(etcd_volume_size)),
        var(
            "etcdVolumeType",
            json!(l
                .text("etcd_volume_type")
                .unwrap_or_else(|| facts.default_volume_type.clone())),
        ),
        var(
            "availabilityZone",
            json!(l.text_or("availability_zone", "")),
        ),
        var(
            "enableKeystoneAuth",
            json!(l.bool_or("keystone_auth_enabled", true)?),
        ),
        var(
            "controlPlaneAvailabilityZones",
            json!(l
                .text_or("control_plane_availability_zones", "")
                .split(',')
                .collect::<Vec<_>>()),
        ),
        var("serverGroupId", json!(facts.server_group_id)),
        var(
            "isServerGroupDiffFailureDomain",
            json!(l.bool_or("different_failure_domain", false)?),
        ),
        var("admissionControlList", json!(admission)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(labels: Value) -> Cluster {
        Cluster {
            stack_id: Some("kube-abcde".into()),
            labels: labels.as_object().cloned(),
            keypair: Some("default".into()),
            master_lb_enabled: Some(true),
            ..Cluster::default()
        }
    }

    fn template() -> ClusterTemplate {
        ClusterTemplate {
            cluster_distro: Some("ubuntu-jammy".into()),
            dns_nameserver: Some("1.1.1.1,8.8.8.8".into()),
            ..ClusterTemplate::default()
        }
    }

    fn facts() -> Facts {
        Facts {
            control_plane_flavor: "m1.medium".into(),
            worker_flavor: "m1.small".into(),
            image_id: "img-1".into(),
            hw_disk_bus: Some("scsi".into()),
            external_network_id: "ext-1".into(),
            default_volume_type: "__DEFAULT__".into(),
            server_group_id: "sg-1".into(),
            ..Facts::default()
        }
    }

    fn value<'a>(vars: &'a [Value], name: &str) -> &'a Value {
        &vars
            .iter()
            .find(|v| v["name"] == name)
            .unwrap_or_else(|| panic!("no variable {name}"))["value"]
    }

    #[test]
    fn all_39_variables_are_written_with_mcapis_defaults() {
        let vars = cluster_variables(
            &cluster(json!({})),
            &template(),
            &facts(),
            &Settings::default(),
        )
        .expect("variables");
        assert_eq!(vars.len(), 39);
        let names: std::collections::BTreeSet<&str> =
            vars.iter().filter_map(|v| v["name"].as_str()).collect();
        assert_eq!(names.len(), 39, "no name twice");
        assert_eq!(
            value(&vars, "apiServerLoadBalancer"),
            &json!({"enabled": true})
        );
        assert_eq!(
            value(&vars, "clusterIdentityRefName"),
            "kube-abcde-cloud-config"
        );
        assert_eq!(
            value(&vars, "bootVolume"),
            &json!({"size": 0, "type": "__DEFAULT__"})
        );
        assert_eq!(
            value(&vars, "dnsNameservers"),
            &json!(["1.1.1.1", "8.8.8.8"])
        );
        assert_eq!(value(&vars, "operatingSystem"), "ubuntu");
        assert_eq!(value(&vars, "hardwareDiskBus"), "scsi");
        assert_eq!(value(&vars, "systemdProxyConfig"), "");
        assert_eq!(value(&vars, "enableDockerVolume"), false);
        assert_eq!(value(&vars, "controlPlaneAvailabilityZones"), &json!([""]));
        assert_eq!(value(&vars, "disableAPIServerFloatingIP"), false);
        assert_eq!(value(&vars, "disableAPIServerFloatingIPManaged"), false);
        assert_eq!(value(&vars, "admissionControlList"), "NodeRestriction");
        assert_eq!(value(&vars, "enableKeystoneAuth"), true);
        assert_eq!(value(&vars, "sshKeyName"), "default");
        assert_eq!(value(&vars, "nodeCidr"), "10.0.0.0/24");
        // Python's textwrap.dedent(…).format(…) of mcapi's text, base64 (printed by
        // Python 3.11 from utils.generate_containerd_config's template).
        assert_eq!(
            value(&vars, "containerdConfig"),
            "IyBVc2UgY29uZmlnIHZlcnNpb24gMiB0byBlbmFibGUgbmV3IGNvbmZpZ3VyYXRpb24gZmllbGRzLgojIENv\
             bmZpZyBmaWxlIGlzIHBhcnNlZCBhcyB2ZXJzaW9uIDEgYnkgZGVmYXVsdC4KdmVyc2lvbiA9IDIKCmltcG9y\
             dHMgPSBbIi9ldGMvY29udGFpbmVyZC9jb25mLmQvKi50b21sIl0KCltwbHVnaW5zXQpbcGx1Z2lucy4iaW8u\
             Y29udGFpbmVyZC5ncnBjLnYxLmNyaSJdCiAgICBzYW5kYm94X2ltYWdlID0gInJlZ2lzdHJ5Lms4cy5pby9w\
             YXVzZTozLjkiCltwbHVnaW5zLiJpby5jb250YWluZXJkLmdycGMudjEuY3JpIi5jb250YWluZXJkLnJ1bnRp\
             bWVzLnJ1bmNdCiAgICBydW50aW1lX3R5cGUgPSAiaW8uY29udGFpbmVyZC5ydW5jLnYyIgpbcGx1Z2lucy4i\
             aW8uY29udGFpbmVyZC5ncnBjLnYxLmNyaSIuY29udGFpbmVyZC5ydW50aW1lcy5ydW5jLm9wdGlvbnNdCiAg\
             ICBTeXN0ZW1kQ2dyb3VwID0gdHJ1ZQo="
        );
        assert_eq!(
            value(&vars, "openidConnect")["usernamePrefix"],
            "-",
            "mcapi's default"
        );
    }

    #[test]
    fn labels_override_and_bad_labels_are_refused_not_defaulted() {
        let c = cluster(json!({
            "boot_volume_size": "20", "boot_volume_type": "ssd", "availability_zone": "az1",
            "etcd_volume_size": "5", "container_infra_prefix": "registry.example/k8s",
            "master_lb_floating_ip_enabled": "false", "api_server_cert_sans": "a.example,,b",
            "admission_control_list": "PodSecurity", "octavia_provider": "ovn",
        }));
        let vars =
            cluster_variables(&c, &template(), &facts(), &Settings::default()).expect("variables");
        assert_eq!(
            value(&vars, "bootVolume"),
            &json!({"size": 20, "type": "ssd"})
        );
        assert_eq!(value(&vars, "bootVolumeAvailabilityZone"), "az1");
        assert_eq!(value(&vars, "enableEtcdVolume"), true);
        assert_eq!(value(&vars, "etcdVolumeType"), "__DEFAULT__");
        assert_eq!(value(&vars, "imageRepository"), "registry.example/k8s");
        assert_eq!(value(&vars, "disableAPIServerFloatingIP"), true);
        assert_eq!(value(&vars, "apiServerSANs"), "- a.example\n- b");
        assert_eq!(
            value(&vars, "admissionControlList"),
            "NodeRestriction,PodSecurity"
        );
        assert_eq!(
            value(&vars, "apiServerLoadBalancer"),
            &json!({"enabled": true, "provider": "ovn"})
        );
        let containerd = base64::engine::general_purpose::STANDARD
            .decode(value(&vars, "containerdConfig").as_str().expect("text"))
            .expect("base64");
        assert!(String::from_utf8(containerd)
            .expect("utf-8")
            .contains("sandbox_image = \"registry.example/k8s/pause:3.9\""));

        for (label, text) in [
            ("boot_volume_size", "boot_volume_size must be an integer"),
            ("audit_log_enabled", "Unrecognized value 'big'"),
        ] {
            let c = cluster(json!({ label: "big" }));
            let e = cluster_variables(&c, &template(), &facts(), &Settings::default())
                .expect_err("refused");
            assert!(e.to_string().starts_with(text), "{label}: {e}");
        }
    }

    #[test]
    fn an_adopted_clusters_immutable_fields_are_kept() {
        let f = Facts {
            existing: ExistingOpenStackCluster {
                lb_provider: Some("amphora".into()),
                disable_api_server_floating_ip: Some(false),
                ..ExistingOpenStackCluster::default()
            },
            ..facts()
        };
        let c =
            cluster(json!({"octavia_provider": "ovn", "master_lb_floating_ip_enabled": "false"}));
        let vars = cluster_variables(&c, &template(), &f, &Settings::default()).expect("variables");
        assert_eq!(value(&vars, "apiServerLoadBalancer")["provider"], "amphora");
        assert_eq!(value(&vars, "disableAPIServerFloatingIP"), false);
        assert_eq!(value(&vars, "disableAPIServerFloatingIPManaged"), true);
    }

    #[test]
    fn proxies_are_written_as_mcapi_formats_them() {
        let t = ClusterTemplate {
            http_proxy: Some("http://p:3128".into()),
            no_proxy: Some("localhost".into()),
            ..template()
        };
        assert_eq!(
            systemd_proxy_config(&t),
            "[Service]\nEnvironment=\"http_proxy=http://p:3128\"\n\
             Environment=\"HTTP_PROXY=http://p:3128\"\nEnvironment=\"https_proxy=None\"\n\
             Environment=\"HTTPS_PROXY=None\"\nEnvironment=\"no_proxy=localhost\"\n\
             Environment=\"NO_PROXY=localhost\"\n"
        );
        assert_eq!(
            apt_proxy_config(&t),
            "Acquire::http::Proxy \"http://p:3128\";\nAcquire::https::Proxy \"None\";\n"
        );
        assert_eq!(apt_proxy_config(&template()), "");
    }
}
