//! Plain data types: rows of Magnum's `cluster_template`, `cluster` and `nodegroup` tables,
//! and the value types the API and drivers share.

use serde_json::{Map, Value};

/// `magnum.objects.fields.ClusterStatus`, used for clusters and nodegroups alike: the
/// [`Status`] enum, and the conductor's rules on a stored status (the column holds text; a
/// value that is none of the 18 allows nothing but a delete).
pub mod status {
    use std::fmt;

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub enum Status {
        CreateInProgress,
        CreateFailed,
        CreateComplete,
        UpdateInProgress,
        UpdateFailed,
        UpdateComplete,
        DeleteInProgress,
        DeleteFailed,
        DeleteComplete,
        ResumeComplete,
        ResumeFailed,
        RestoreComplete,
        RollbackInProgress,
        RollbackFailed,
        RollbackComplete,
        SnapshotComplete,
        CheckComplete,
        AdoptComplete,
    }

    use Status::*;

    impl Status {
        /// All 18, in Magnum's order.
        pub const ALL: [Status; 18] = [
            CreateInProgress,
            CreateFailed,
            CreateComplete,
            UpdateInProgress,
            UpdateFailed,
            UpdateComplete,
            DeleteInProgress,
            DeleteFailed,
            DeleteComplete,
            ResumeComplete,
            ResumeFailed,
            RestoreComplete,
            RollbackInProgress,
            RollbackFailed,
            RollbackComplete,
            SnapshotComplete,
            CheckComplete,
            AdoptComplete,
        ];

        pub const fn as_str(self) -> &'static str {
            match self {
                CreateInProgress => "CREATE_IN_PROGRESS",
                CreateFailed => "CREATE_FAILED",
                CreateComplete => "CREATE_COMPLETE",
                UpdateInProgress => "UPDATE_IN_PROGRESS",
                UpdateFailed => "UPDATE_FAILED",
                UpdateComplete => "UPDATE_COMPLETE",
                DeleteInProgress => "DELETE_IN_PROGRESS",
                DeleteFailed => "DELETE_FAILED",
                DeleteComplete => "DELETE_COMPLETE",
                ResumeComplete => "RESUME_COMPLETE",
                ResumeFailed => "RESUME_FAILED",
                RestoreComplete => "RESTORE_COMPLETE",
                RollbackInProgress => "ROLLBACK_IN_PROGRESS",
                RollbackFailed => "ROLLBACK_FAILED",
                RollbackComplete => "ROLLBACK_COMPLETE",
                SnapshotComplete => "SNAPSHOT_COMPLETE",
                CheckComplete => "CHECK_COMPLETE",
                AdoptComplete => "ADOPT_COMPLETE",
            }
        }

        /// The status a stored text names, if any (exactly, as Magnum compares).
        pub fn parse(text: &str) -> Option<Status> {
            Self::ALL.into_iter().find(|s| s.as_str() == text)
        }

        /// The statuses that make `GET` of a cluster show `faults`.
        pub fn is_failed(self) -> bool {
            matches!(
                self,
                CreateFailed | UpdateFailed | DeleteFailed | RollbackFailed | ResumeFailed
            )
        }

        /// The eight `*_COMPLETE` states from which Magnum's conductor updates and upgrades.
        pub fn is_complete(self) -> bool {
            matches!(
                self,
                CreateComplete
                    | UpdateComplete
                    | ResumeComplete
                    | RestoreComplete
                    | RollbackComplete
                    | SnapshotComplete
                    | CheckComplete
                    | AdoptComplete
            )
        }
    }

    impl fmt::Display for Status {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.as_str())
        }
    }

    impl From<Status> for String {
        fn from(s: Status) -> String {
            s.as_str().to_string()
        }
    }

    /// The 18 names, in Magnum's order (what the API accepts).
    pub const NAMES: [&str; 18] = {
        let mut names = [""; 18];
        let mut i = 0;
        while i < 18 {
            names[i] = Status::ALL[i].as_str();
            i += 1;
        }
        names
    };

    /// Whether a stored status is one that shows `faults`.
    pub fn is_failed(stored: &str) -> bool {
        Status::parse(stored).is_some_and(Status::is_failed)
    }

    /// The conductor accepts a resize from these cluster statuses.
    pub fn allows_resize(stored: &str) -> bool {
        Status::parse(stored)
            .is_some_and(|s| s.is_complete() || matches!(s, UpdateFailed | UpdateInProgress))
    }

    /// The conductor accepts a cluster update (PATCH) only from these.
    pub fn allows_update(stored: &str) -> bool {
        Status::parse(stored).is_some_and(Status::is_complete)
    }

    /// The conductor accepts an upgrade only from these.
    pub fn allows_upgrade(stored: &str) -> bool {
        Status::parse(stored).is_some_and(Status::is_complete)
    }

    /// Work on a row that is being deleted is refused (its delete would undo it, or it
    /// would overwrite the delete's status): every action but the delete itself.
    pub fn not_deleting(stored: &str) -> bool {
        Status::parse(stored) != Some(DeleteInProgress)
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn every_status_reads_back_from_its_name_and_nothing_else_does() {
            for s in Status::ALL {
                assert_eq!(Status::parse(s.as_str()), Some(s));
            }
            assert_eq!(NAMES[0], "CREATE_IN_PROGRESS");
            assert_eq!(NAMES[17], "ADOPT_COMPLETE");
            for odd in ["update_failed", "UPDATE_FAILED ", ""] {
                assert_eq!(Status::parse(odd), None);
                assert!(!allows_resize(odd) && not_deleting(odd));
            }
        }
    }
}

pub use status::Status;

/// The role Magnum treats specially; any other role string counts as a worker.
pub const ROLE_MASTER: &str = "master";
pub const ROLE_WORKER: &str = "worker";

/// A row of `cluster_template`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterTemplate {
    pub id: i64,
    pub uuid: String,
    pub project_id: Option<String>,
    pub user_id: Option<String>,
    pub name: Option<String>,
    pub image_id: Option<String>,
    pub flavor_id: Option<String>,
    pub master_flavor_id: Option<String>,
    pub keypair_id: Option<String>,
    pub external_network_id: Option<String>,
    pub fixed_network: Option<String>,
    pub fixed_subnet: Option<String>,
    pub network_driver: Option<String>,
    pub volume_driver: Option<String>,
    pub dns_nameserver: Option<String>,
    pub apiserver_port: Option<i64>,
    pub docker_volume_size: Option<i64>,
    pub docker_storage_driver: Option<String>,
    pub cluster_distro: Option<String>,
    pub coe: Option<String>,
    pub http_proxy: Option<String>,
    pub https_proxy: Option<String>,
    pub no_proxy: Option<String>,
    pub registry_enabled: Option<bool>,
    pub labels: Option<Map<String, Value>>,
    pub tls_disabled: Option<bool>,
    pub public: Option<bool>,
    pub server_type: Option<String>,
    pub insecure_registry: Option<String>,
    pub master_lb_enabled: Option<bool>,
    pub floating_ip_enabled: Option<bool>,
    pub hidden: Option<bool>,
    pub tags: Option<String>,
    pub driver: Option<String>,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
}

/// The label that names a template's (or a cluster's) Kubernetes version.
pub const KUBE_TAG: &str = "kube_tag";

/// A string label of a labels column (a label of another JSON type is none).
fn string_label<'a>(labels: Option<&'a Map<String, Value>>, key: &str) -> Option<&'a str> {
    labels?.get(key)?.as_str()
}

impl ClusterTemplate {
    /// The template's `kube_tag` label: the Kubernetes version its clusters run.
    pub fn kube_tag(&self) -> Option<&str> {
        string_label(self.labels.as_ref(), KUBE_TAG)
    }
}

/// What of a template chooses its driver (`Driver.get_driver_for_cluster`): read alone where
/// nothing else of the template is needed (resize, credentials, the worker's operations
/// other than a create, the reconciler).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DriverSelector {
    pub uuid: String,
    pub coe: Option<String>,
    pub cluster_distro: Option<String>,
    pub server_type: Option<String>,
    pub driver: Option<String>,
}

/// Anything that chooses a driver: a whole template or its [`DriverSelector`].
pub trait SelectsDriver {
    /// The template's `driver` name, when set.
    fn driver_name(&self) -> Option<&str>;
    fn server_type(&self) -> Option<&str>;
    /// Magnum's `os`.
    fn cluster_distro(&self) -> Option<&str>;
    fn coe(&self) -> Option<&str>;
}

impl SelectsDriver for DriverSelector {
    fn driver_name(&self) -> Option<&str> {
        self.driver.as_deref()
    }
    fn server_type(&self) -> Option<&str> {
        self.server_type.as_deref()
    }
    fn cluster_distro(&self) -> Option<&str> {
        self.cluster_distro.as_deref()
    }
    fn coe(&self) -> Option<&str> {
        self.coe.as_deref()
    }
}

impl SelectsDriver for ClusterTemplate {
    fn driver_name(&self) -> Option<&str> {
        self.driver.as_deref()
    }
    fn server_type(&self) -> Option<&str> {
        self.server_type.as_deref()
    }
    fn cluster_distro(&self) -> Option<&str> {
        self.cluster_distro.as_deref()
    }
    fn coe(&self) -> Option<&str> {
        self.coe.as_deref()
    }
}

/// A cluster as the summary list (`GET /v1/clusters`) shows it: the columns it shows and
/// the counts computed from its nodegroups, read in one statement.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterSummary {
    pub uuid: String,
    pub name: Option<String>,
    pub cluster_template_id: Option<String>,
    pub keypair: Option<String>,
    pub docker_volume_size: Option<i64>,
    pub labels: Option<serde_json::Map<String, Value>>,
    pub master_flavor_id: Option<String>,
    pub flavor_id: Option<String>,
    pub create_timeout: Option<i64>,
    pub stack_id: Option<String>,
    pub status: Option<String>,
    pub health_status: Option<String>,
    /// The sum of the master nodegroups' `node_count` (as [`ClusterCounts`]).
    pub master_count: i64,
    /// The sum of the other nodegroups' `node_count`.
    pub node_count: i64,
}

/// A row of `cluster` plus what Magnum computes from its nodegroups on every read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cluster {
    pub id: i64,
    pub uuid: String,
    pub project_id: Option<String>,
    pub user_id: Option<String>,
    pub name: Option<String>,
    pub cluster_template_id: Option<String>,
    pub keypair: Option<String>,
    pub docker_volume_size: Option<i64>,
    pub labels: Option<Map<String, Value>>,
    pub master_flavor_id: Option<String>,
    pub flavor_id: Option<String>,
    pub stack_id: Option<String>,
    pub api_address: Option<String>,
    pub status: Option<String>,
    pub status_reason: Option<String>,
    pub health_status: Option<String>,
    pub health_status_reason: Option<Map<String, Value>>,
    pub create_timeout: Option<i64>,
    pub discovery_url: Option<String>,
    pub coe_version: Option<String>,
    pub container_version: Option<String>,
    pub fixed_network: Option<String>,
    pub fixed_subnet: Option<String>,
    pub floating_ip_enabled: Option<bool>,
    pub master_lb_enabled: Option<bool>,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
}

/// A row of `nodegroup`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeGroup {
    pub id: i64,
    pub uuid: String,
    pub name: String,
    pub cluster_id: String,
    pub project_id: String,
    pub docker_volume_size: Option<i64>,
    pub labels: Option<Map<String, Value>>,
    pub flavor_id: Option<String>,
    pub image_id: Option<String>,
    pub node_addresses: Option<Vec<Value>>,
    /// NULL in the database reads as 1, like Magnum's object layer.
    pub node_count: i64,
    pub max_node_count: Option<i64>,
    /// NULL in the database reads as 0, like Magnum's object layer.
    pub min_node_count: i64,
    pub role: Option<String>,
    pub is_default: Option<bool>,
    pub stack_id: Option<String>,
    pub status: Option<String>,
    pub status_reason: Option<String>,
    pub version: Option<String>,
    pub node_labels: Option<Map<String, Value>>,
    pub node_taints: Option<Vec<Value>>,
    pub created_at: Option<String>,
    pub updated_at: Option<String>,
}

impl NodeGroup {
    pub fn is_master(&self) -> bool {
        self.role.as_deref() == Some(ROLE_MASTER)
    }

    pub fn is_default(&self) -> bool {
        self.is_default.unwrap_or(false)
    }
}

/// Sums Magnum computes over a cluster's nodegroups (`magnum/objects/cluster.py`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterCounts {
    pub node_count: i64,
    pub master_count: i64,
    pub node_addresses: Vec<Value>,
    pub master_addresses: Vec<Value>,
}

impl ClusterCounts {
    pub fn from_nodegroups<'a>(ngs: impl IntoIterator<Item = &'a NodeGroup>) -> Self {
        let mut c = ClusterCounts::default();
        for ng in ngs {
            let addrs = ng.node_addresses.clone().unwrap_or_default();
            if ng.is_master() {
                c.master_count = c.master_count.saturating_add(ng.node_count);
                c.master_addresses.extend(addrs);
            } else {
                c.node_count = c.node_count.saturating_add(ng.node_count);
                c.node_addresses.extend(addrs);
            }
        }
        c
    }
}

/// Who is calling: the request context Magnum builds from the identity headers or the token.
#[derive(Clone, Debug, Default)]
pub struct RequestContext {
    pub user_id: Option<String>,
    pub user_name: Option<String>,
    pub project_id: Option<String>,
    pub project_name: Option<String>,
    pub domain_id: Option<String>,
    pub domain_name: Option<String>,
    pub project_domain_id: Option<String>,
    pub roles: Vec<String>,
    pub system_scope: Option<String>,
    /// The domain id of a domain-scoped token (keystone mode only).
    pub domain_scope: Option<String>,
    pub is_admin: bool,
    /// The token and its catalog, to call the cloud as this user (Magnum's
    /// `auth_token`/`auth_token_info`); keystone mode only.
    pub caller: Option<crate::openstack::Caller>,
}

/// How a read is scoped to tenants (`_add_tenant_filters`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tenancy {
    /// An admin with `all_tenants`: no filter.
    All,
    /// Only rows of this project.
    Project(String),
    /// No project in the context: only rows of this user.
    User(String),
}

impl Tenancy {
    pub fn of(ctx: &RequestContext, all_tenants: bool) -> Self {
        if all_tenants && ctx.is_admin {
            return Tenancy::All;
        }
        match (&ctx.project_id, &ctx.user_id) {
            (Some(p), _) => Tenancy::Project(p.clone()),
            (None, Some(u)) => Tenancy::User(u.clone()),
            (None, None) => Tenancy::Project(String::new()),
        }
    }
}
