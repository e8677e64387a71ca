//! Magnum's tables as magnum-rs reads them, each described once by [`table!`]: the row type
//! the drivers decode natively (`FromRow`: `bool` for BOOLEAN/TINYINT(1), `NaiveDateTime`
//! for DATETIME, `String` for text, MySQL's TEXT included) and a typed identifier per
//! column, from which the select lists, the sort keys, the typed changes and the inserts
//! all take their names.

use std::sync::LazyLock;

use chrono::{NaiveDateTime, Timelike as _};
use serde_json::{Map, Value};

use crate::model::{Cluster, ClusterTemplate, NodeGroup};

/// A column of one of Magnum's tables, by meaning.
pub(crate) trait Column: Copy + PartialEq + std::fmt::Debug + 'static {
    /// The table's name in Magnum's schema.
    const TABLE: &'static str;
    /// Every column the row type reads, in the schema's order.
    const ALL: &'static [Self];
    /// The column's name, as the schema spells it.
    fn name(self) -> &'static str;

    /// The column of this table called `name`, if any.
    fn named(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|c| c.name() == name)
    }
}

/// `FromRow` by position: the fields in declaration order are the statement's columns in
/// order (no lookup of each column by name).
macro_rules! from_row_by_position {
    ($row:ident { $($field:ident: $ty:ty,)* }) => {
        impl<'r, R: sqlx::Row> sqlx::FromRow<'r, R> for $row
        where
            usize: sqlx::ColumnIndex<R>,
            $($ty: sqlx::Decode<'r, R::Database> + sqlx::Type<R::Database>,)*
        {
            fn from_row(row: &'r R) -> Result<Self, sqlx::Error> {
                let mut at = 0usize..;
                Ok($row {
                    $($field: row.try_get(at.next().unwrap_or_default())?,)*
                })
            }
        }
    };
}
pub(crate) use from_row_by_position;

/// Declares a table: its row type (fields named as the columns) and its column enum. The
/// row is decoded by position, in the order of [`Column::ALL`], which is the order of
/// [`select_from`]'s list.
macro_rules! table {
    (
        $(#[$doc:meta])*
        $row:ident, $col:ident = $table:literal {
            $($field:ident: $ty:ty => $variant:ident,)*
        }
    ) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub(crate) struct $row {
            $(pub(crate) $field: $ty,)*
        }

        from_row_by_position!($row { $($field: $ty,)* });

        #[doc = concat!("A column of `", $table, "`.")]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub(crate) enum $col {
            $($variant,)*
        }

        impl Column for $col {
            const TABLE: &'static str = $table;
            const ALL: &'static [$col] = &[$($col::$variant,)*];
            fn name(self) -> &'static str {
                match self {
                    $($col::$variant => stringify!($field),)*
                }
            }
        }
    };
}

table! {
    /// A row of `cluster_template`.
    TemplateRow, TemplateCol = "cluster_template" {
        id: i64 => Id,
        uuid: Option<String> => Uuid,
        project_id: Option<String> => ProjectId,
        user_id: Option<String> => UserId,
        name: Option<String> => Name,
        image_id: Option<String> => ImageId,
        flavor_id: Option<String> => FlavorId,
        master_flavor_id: Option<String> => MasterFlavorId,
        keypair_id: Option<String> => KeypairId,
        external_network_id: Option<String> => ExternalNetworkId,
        fixed_network: Option<String> => FixedNetwork,
        fixed_subnet: Option<String> => FixedSubnet,
        network_driver: Option<String> => NetworkDriver,
        volume_driver: Option<String> => VolumeDriver,
        dns_nameserver: Option<String> => DnsNameserver,
        apiserver_port: Option<i64> => ApiserverPort,
        docker_volume_size: Option<i64> => DockerVolumeSize,
        docker_storage_driver: Option<String> => DockerStorageDriver,
        cluster_distro: Option<String> => ClusterDistro,
        coe: Option<String> => Coe,
        http_proxy: Option<String> => HttpProxy,
        https_proxy: Option<String> => HttpsProxy,
        no_proxy: Option<String> => NoProxy,
        registry_enabled: Option<bool> => RegistryEnabled,
        labels: Option<String> => Labels,
        tls_disabled: Option<bool> => TlsDisabled,
        public: Option<bool> => Public,
        server_type: Option<String> => ServerType,
        insecure_registry: Option<String> => InsecureRegistry,
        master_lb_enabled: Option<bool> => MasterLbEnabled,
        floating_ip_enabled: Option<bool> => FloatingIpEnabled,
        hidden: Option<bool> => Hidden,
        tags: Option<String> => Tags,
        driver: Option<String> => Driver,
        created_at: Option<NaiveDateTime> => CreatedAt,
        updated_at: Option<NaiveDateTime> => UpdatedAt,
    }
}

table! {
    /// A row of `cluster`.
    ClusterRow, ClusterCol = "cluster" {
        id: i64 => Id,
        uuid: Option<String> => Uuid,
        project_id: Option<String> => ProjectId,
        user_id: Option<String> => UserId,
        name: Option<String> => Name,
        cluster_template_id: Option<String> => ClusterTemplateId,
        keypair: Option<String> => Keypair,
        docker_volume_size: Option<i64> => DockerVolumeSize,
        labels: Option<String> => Labels,
        master_flavor_id: Option<String> => MasterFlavorId,
        flavor_id: Option<String> => FlavorId,
        stack_id: Option<String> => StackId,
        api_address: Option<String> => ApiAddress,
        status: Option<String> => Status,
        status_reason: Option<String> => StatusReason,
        health_status: Option<String> => HealthStatus,
        health_status_reason: Option<String> => HealthStatusReason,
        create_timeout: Option<i64> => CreateTimeout,
        discovery_url: Option<String> => DiscoveryUrl,
        coe_version: Option<String> => CoeVersion,
        container_version: Option<String> => ContainerVersion,
        fixed_network: Option<String> => FixedNetwork,
        fixed_subnet: Option<String> => FixedSubnet,
        floating_ip_enabled: Option<bool> => FloatingIpEnabled,
        master_lb_enabled: Option<bool> => MasterLbEnabled,
        created_at: Option<NaiveDateTime> => CreatedAt,
        updated_at: Option<NaiveDateTime> => UpdatedAt,
    }
}

table! {
    /// A row of `nodegroup`.
    NodeGroupRow, NodeGroupCol = "nodegroup" {
        id: i64 => Id,
        uuid: Option<String> => Uuid,
        name: Option<String> => Name,
        cluster_id: Option<String> => ClusterId,
        project_id: Option<String> => ProjectId,
        docker_volume_size: Option<i64> => DockerVolumeSize,
        labels: Option<String> => Labels,
        flavor_id: Option<String> => FlavorId,
        image_id: Option<String> => ImageId,
        node_addresses: Option<String> => NodeAddresses,
        node_count: Option<i64> => NodeCount,
        max_node_count: Option<i64> => MaxNodeCount,
        min_node_count: Option<i64> => MinNodeCount,
        role: Option<String> => Role,
        is_default: Option<bool> => IsDefault,
        stack_id: Option<String> => StackId,
        status: Option<String> => Status,
        status_reason: Option<String> => StatusReason,
        version: Option<String> => Version,
        node_labels: Option<String> => NodeLabels,
        node_taints: Option<String> => NodeTaints,
        created_at: Option<NaiveDateTime> => CreatedAt,
        updated_at: Option<NaiveDateTime> => UpdatedAt,
    }
}

table! {
    /// A row of `federation`.
    FederationRow, FederationCol = "federation" {
        id: i64 => Id,
        created_at: Option<NaiveDateTime> => CreatedAt,
        updated_at: Option<NaiveDateTime> => UpdatedAt,
        project_id: Option<String> => ProjectId,
        uuid: Option<String> => Uuid,
        name: Option<String> => Name,
        hostcluster_id: Option<String> => HostclusterId,
        member_ids: Option<String> => MemberIds,
        status: Option<String> => Status,
        status_reason: Option<String> => StatusReason,
        properties: Option<String> => Properties,
    }
}

table! {
    /// A row of `quotas`.
    QuotaRow, QuotaCol = "quotas" {
        id: i64 => Id,
        created_at: Option<NaiveDateTime> => CreatedAt,
        updated_at: Option<NaiveDateTime> => UpdatedAt,
        project_id: Option<String> => ProjectId,
        resource: Option<String> => Resource,
        hard_limit: Option<i64> => HardLimit,
    }
}

table! {
    /// A row of `x509keypair` (all of it, as Magnum's object reads it; the id and times are
    /// not served).
    #[allow(dead_code)]
    X509KeyPairRow, X509KeyPairCol = "x509keypair" {
        id: i64 => Id,
        created_at: Option<NaiveDateTime> => CreatedAt,
        updated_at: Option<NaiveDateTime> => UpdatedAt,
        uuid: Option<String> => Uuid,
        certificate: Option<String> => Certificate,
        private_key: Option<String> => PrivateKey,
        project_id: Option<String> => ProjectId,
        user_id: Option<String> => UserId,
        intermediates: Option<String> => Intermediates,
        private_key_passphrase: Option<String> => PrivateKeyPassphrase,
    }
}

/// `SELECT t.a, t.b, … FROM <table> t`, built once per table.
pub(crate) fn select_from<C: Column>() -> &'static str {
    fn build<C: Column>() -> String {
        let list = C::ALL
            .iter()
            .map(|c| format!("t.{}", c.name()))
            .collect::<Vec<_>>()
            .join(", ");
        format!("SELECT {list} FROM {} t", C::TABLE)
    }
    static TEMPLATE: LazyLock<String> = LazyLock::new(build::<TemplateCol>);
    static CLUSTER: LazyLock<String> = LazyLock::new(build::<ClusterCol>);
    static NODEGROUP: LazyLock<String> = LazyLock::new(build::<NodeGroupCol>);
    static FEDERATION: LazyLock<String> = LazyLock::new(build::<FederationCol>);
    static QUOTA: LazyLock<String> = LazyLock::new(build::<QuotaCol>);
    static X509KEYPAIR: LazyLock<String> = LazyLock::new(build::<X509KeyPairCol>);
    match C::TABLE {
        X509KeyPairCol::TABLE => &X509KEYPAIR,
        TemplateCol::TABLE => &TEMPLATE,
        ClusterCol::TABLE => &CLUSTER,
        NodeGroupCol::TABLE => &NODEGROUP,
        FederationCol::TABLE => &FEDERATION,
        _ => &QUOTA,
    }
}

/// A DATETIME as Python's `isoformat()` of an aware UTC datetime: microseconds only when
/// not zero, as Python prints them.
pub fn isoformat(t: &NaiveDateTime) -> String {
    let mut s = python_str(t, 'T');
    s.push_str("+00:00");
    s
}

/// `YYYY-MM-DD<sep>HH:MM:SS[.ffffff]`, written digit by digit (a `format` string is parsed
/// on every call, and a list page formats a hundred of these).
fn python_str(t: &NaiveDateTime, sep: char) -> String {
    use chrono::Datelike as _;
    use std::fmt::Write as _;
    let mut s = String::with_capacity(32);
    let micros = t.nanosecond() / 1000 % 1_000_000;
    let _ = write!(
        s,
        "{:04}-{:02}-{:02}{sep}{:02}:{:02}:{:02}",
        t.year(),
        t.month(),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    if micros != 0 {
        let _ = write!(s, ".{micros:06}");
    }
    s
}

/// A DATETIME as Python's `str()` of a naive datetime (`YYYY-MM-DD HH:MM:SS[.ffffff]`),
/// the raw form some views show and [`super::now`] writes.
pub fn stored(t: &NaiveDateTime) -> String {
    python_str(t, ' ')
}

/// A time as [`stored`] writes it, in [`isoformat`] (as written when it does not parse).
pub fn iso8601(db: &str) -> String {
    match NaiveDateTime::parse_from_str(db.trim(), "%Y-%m-%d %H:%M:%S%.f") {
        Ok(t) => isoformat(&t),
        Err(_) => db.to_string(),
    }
}

fn time(t: Option<NaiveDateTime>) -> Option<String> {
    t.as_ref().map(isoformat)
}

/// A JSON dict column; anything but an object reads as absent.
pub(crate) fn json_map(t: Option<&str>) -> Option<Map<String, Value>> {
    match serde_json::from_str(t?) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// A JSON list column; anything but a list reads as absent.
pub(crate) fn json_list(t: Option<&str>) -> Option<Vec<Value>> {
    match serde_json::from_str(t?) {
        Ok(Value::Array(a)) => Some(a),
        _ => None,
    }
}

impl From<TemplateRow> for ClusterTemplate {
    fn from(r: TemplateRow) -> Self {
        ClusterTemplate {
            id: r.id,
            uuid: r.uuid.unwrap_or_default(),
            project_id: r.project_id,
            user_id: r.user_id,
            name: r.name,
            image_id: r.image_id,
            flavor_id: r.flavor_id,
            master_flavor_id: r.master_flavor_id,
            keypair_id: r.keypair_id,
            external_network_id: r.external_network_id,
            fixed_network: r.fixed_network,
            fixed_subnet: r.fixed_subnet,
            network_driver: r.network_driver,
            volume_driver: r.volume_driver,
            dns_nameserver: r.dns_nameserver,
            apiserver_port: r.apiserver_port,
            docker_volume_size: r.docker_volume_size,
            docker_storage_driver: r.docker_storage_driver,
            cluster_distro: r.cluster_distro,
            coe: r.coe,
            http_proxy: r.http_proxy,
            https_proxy: r.https_proxy,
            no_proxy: r.no_proxy,
            registry_enabled: r.registry_enabled,
            labels: json_map(r.labels.as_deref()),
            tls_disabled: r.tls_disabled,
            public: r.public,
            server_type: r.server_type,
            insecure_registry: r.insecure_registry,
            master_lb_enabled: r.master_lb_enabled,
            floating_ip_enabled: r.floating_ip_enabled,
            hidden: r.hidden,
            tags: r.tags,
            driver: r.driver,
            created_at: time(r.created_at),
            updated_at: time(r.updated_at),
        }
    }
}

impl From<ClusterRow> for Cluster {
    fn from(r: ClusterRow) -> Self {
        Cluster {
            id: r.id,
            uuid: r.uuid.unwrap_or_default(),
            project_id: r.project_id,
            user_id: r.user_id,
            name: r.name,
            cluster_template_id: r.cluster_template_id,
            keypair: r.keypair,
            docker_volume_size: r.docker_volume_size,
            labels: json_map(r.labels.as_deref()),
            master_flavor_id: r.master_flavor_id,
            flavor_id: r.flavor_id,
            stack_id: r.stack_id,
            api_address: r.api_address,
            status: r.status,
            status_reason: r.status_reason,
            health_status: r.health_status,
            health_status_reason: json_map(r.health_status_reason.as_deref()),
            create_timeout: r.create_timeout,
            discovery_url: r.discovery_url,
            coe_version: r.coe_version,
            container_version: r.container_version,
            fixed_network: r.fixed_network,
            fixed_subnet: r.fixed_subnet,
            floating_ip_enabled: r.floating_ip_enabled,
            master_lb_enabled: r.master_lb_enabled,
            created_at: time(r.created_at),
            updated_at: time(r.updated_at),
        }
    }
}

impl From<NodeGroupRow> for NodeGroup {
    fn from(r: NodeGroupRow) -> Self {
        NodeGroup {
            id: r.id,
            uuid: r.uuid.unwrap_or_default(),
            name: r.name.unwrap_or_default(),
            cluster_id: r.cluster_id.unwrap_or_default(),
            project_id: r.project_id.unwrap_or_default(),
            docker_volume_size: r.docker_volume_size,
            labels: json_map(r.labels.as_deref()),
            flavor_id: r.flavor_id,
            image_id: r.image_id,
            node_addresses: json_list(r.node_addresses.as_deref()),
            node_count: r.node_count.unwrap_or(1),
            max_node_count: r.max_node_count,
            min_node_count: r.min_node_count.unwrap_or(0),
            role: r.role,
            is_default: r.is_default,
            stack_id: r.stack_id,
            status: r.status,
            status_reason: r.status_reason,
            version: r.version,
            node_labels: json_map(r.node_labels.as_deref()),
            node_taints: json_list(r.node_taints.as_deref()),
            created_at: time(r.created_at),
            updated_at: time(r.updated_at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f").expect("time")
    }

    #[test]
    fn timestamps_render_like_python_isoformat() {
        assert_eq!(
            isoformat(&at("2026-12-02 13:12:43.591691")),
            "2026-12-02T13:12:43.591691+00:00"
        );
        assert_eq!(
            isoformat(&at("2026-12-02 13:17:02.0")),
            "2026-12-02T13:17:02+00:00"
        );
        assert_eq!(
            isoformat(&at("2026-12-02 13:17:02.000100")),
            "2026-12-02T13:17:02.000100+00:00"
        );
        assert_eq!(stored(&at("2026-12-02 13:17:02.0")), "2026-12-02 13:17:02");
        assert_eq!(
            stored(&at("0999-01-02 03:04:05.5")),
            "0999-01-02 03:04:05.500000"
        );
        assert_eq!(iso8601("2026-12-02 13:17:02"), "2026-12-02T13:17:02+00:00");
        assert_eq!(
            iso8601("2026-12-02 13:17:02.000000"),
            "2026-12-02T13:17:02+00:00"
        );
    }

    #[test]
    fn each_table_names_its_columns_once_and_selects_them_all() {
        assert_eq!(ClusterCol::named("node_count"), None);
        assert_eq!(
            NodeGroupCol::named("node_count"),
            Some(NodeGroupCol::NodeCount)
        );
        assert_eq!(ClusterCol::ALL.len(), 27);
        assert_eq!(NodeGroupCol::ALL.len(), 23);
        assert_eq!(TemplateCol::ALL.len(), 36);
        assert!(select_from::<ClusterCol>().starts_with("SELECT t.id, t.uuid, "));
        assert!(select_from::<ClusterCol>().ends_with("t.updated_at FROM cluster t"));
        assert!(select_from::<QuotaCol>().ends_with("FROM quotas t"));
        assert!(select_from::<FederationCol>().ends_with("FROM federation t"));
    }
}
