//! Magnum's registered policy defaults.
//!
//! Transcribed from `magnum/common/policies/*.py` on Magnum master (2026, after the Heat
//! trust rules were removed, so the `*_deny_cluster_user` rules no longer AND in
//! `rule:deny_cluster_user` and `*_user_or_cluster_user` no longer accepts the trustee).
//! Registration order follows `magnum/common/policies/__init__.py`. Descriptions are
//! Magnum's own text, typos included.

use std::fmt;

mod extra;

/// The token scopes a rule is meant for (oslo.policy `scope_types`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScopeType {
    System,
    Domain,
    Project,
}

impl ScopeType {
    /// The name oslo.policy uses (`system`, `domain`, `project`).
    pub fn as_str(self) -> &'static str {
        match self {
            ScopeType::System => "system",
            ScopeType::Domain => "domain",
            ScopeType::Project => "project",
        }
    }
}

impl fmt::Display for ScopeType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An API operation a rule guards (documentation only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operation {
    pub method: &'static str,
    pub path: &'static str,
}

/// A rule registered in code, with its default check string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleDefault {
    pub name: &'static str,
    pub check_str: &'static str,
    /// Empty when the rule declares no scope types (then any token scope may use it).
    pub scope_types: &'static [ScopeType],
    /// Empty when the rule has no description (the base rules).
    pub description: &'static str,
    pub operations: &'static [Operation],
}

/// Every rule Magnum registers, in registration order (66 rules).
pub fn magnum() -> impl Iterator<Item = &'static RuleDefault> {
    [
        BASE,
        extra::CERTIFICATE,
        CLUSTER,
        CLUSTERTEMPLATE,
        extra::CREDENTIAL,
        extra::FEDERATION,
        extra::MAGNUM_SERVICE,
        extra::QUOTA,
        extra::STATS,
        NODEGROUP,
    ]
    .into_iter()
    .flatten()
}

const PROJECT: &[ScopeType] = &[ScopeType::Project];
const NONE: &[ScopeType] = &[];

const fn base(name: &'static str, check_str: &'static str) -> RuleDefault {
    RuleDefault {
        name,
        check_str,
        scope_types: NONE,
        description: "",
        operations: &[],
    }
}

const fn documented(
    name: &'static str,
    check_str: &'static str,
    scope_types: &'static [ScopeType],
    description: &'static str,
    operations: &'static [Operation],
) -> RuleDefault {
    RuleDefault {
        name,
        check_str,
        scope_types,
        description,
        operations,
    }
}

const fn op(method: &'static str, path: &'static str) -> Operation {
    Operation { method, path }
}

const ADMIN_API: &str = "rule:context_is_admin";
const ADMIN_OR_PROJECT_READER: &str = "rule:admin_or_project_reader";
const ADMIN_OR_PROJECT_MEMBER: &str = "rule:admin_or_project_member";
const ADMIN_OR_PROJECT_MEMBER_USER: &str = "rule:admin_or_project_member_user";
const ADMIN_OR_PROJECT_MEMBER_USER_OR_CLUSTER_USER: &str =
    "rule:admin_or_project_member_user_or_cluster_user";
const PROJECT_MEMBER_DENY_CLUSTER_USER: &str = "rule:project_member_deny_cluster_user";
const ADMIN_OR_PROJECT_MEMBER_DENY_CLUSTER_USER: &str =
    "rule:admin_or_project_member_deny_cluster_user";
const ADMIN_OR_PROJECT_READER_DENY_CLUSTER_USER: &str =
    "rule:admin_or_project_reader_deny_cluster_user";
const ADMIN_OR_PROJECT_READER_USER: &str = "rule:admin_or_project_reader_user";

const BASE: &[RuleDefault] = &[
    base("context_is_admin", "role:admin"),
    base(
        "admin_or_owner",
        "is_admin:True or project_id:%(project_id)s",
    ),
    base("admin_or_user", "is_admin:True or user_id:%(user_id)s"),
    base("is_user", "user_id:%(user_id)s"),
    base(
        "project_member",
        "role:member and project_id:%(project_id)s",
    ),
    base(
        "project_reader",
        "role:reader and project_id:%(project_id)s",
    ),
    base(
        "admin_or_project_reader",
        "(rule:context_is_admin) or (rule:project_reader)",
    ),
    base(
        "admin_or_project_member",
        "(rule:context_is_admin) or (rule:project_member)",
    ),
    base(
        "admin_or_project_member_user",
        "(rule:context_is_admin) or ((rule:project_member) and (rule:is_user))",
    ),
    base(
        "admin_or_project_member_user_or_cluster_user",
        "(rule:context_is_admin) or ((rule:project_member) and (rule:is_user))",
    ),
    base("project_member_deny_cluster_user", "(rule:project_member)"),
    base(
        "admin_or_project_member_deny_cluster_user",
        "(rule:context_is_admin) or (rule:project_member)",
    ),
    base("project_reader_deny_cluster_user", "(rule:project_reader)"),
    base(
        "admin_or_project_reader_deny_cluster_user",
        "(rule:context_is_admin) or (rule:project_reader)",
    ),
    base(
        "admin_or_project_reader_user",
        "(rule:context_is_admin) or ((rule:project_reader) and (rule:is_user))",
    ),
];

const CLUSTER: &[RuleDefault] = &[
    documented(
        "cluster:create",
        ADMIN_OR_PROJECT_MEMBER_DENY_CLUSTER_USER,
        PROJECT,
        "Create a new cluster.",
        &[op("POST", "/v1/clusters")],
    ),
    documented(
        "cluster:delete",
        ADMIN_OR_PROJECT_MEMBER_DENY_CLUSTER_USER,
        PROJECT,
        "Delete a cluster.",
        &[op("DELETE", "/v1/clusters/{cluster_ident}")],
    ),
    documented(
        "cluster:delete_all_projects",
        ADMIN_API,
        NONE,
        "Delete a cluster from any project.",
        &[op("DELETE", "/v1/clusters/{cluster_ident}")],
    ),
    documented(
        "cluster:detail",
        ADMIN_OR_PROJECT_READER_DENY_CLUSTER_USER,
        PROJECT,
        "Retrieve a list of clusters with detail.",
        &[op("GET", "/v1/clusters")],
    ),
    documented(
        "cluster:detail_all_projects",
        ADMIN_API,
        NONE,
        "Retrieve a list of clusters with detail across projects.",
        &[op("GET", "/v1/clusters")],
    ),
    documented(
        "cluster:get",
        ADMIN_OR_PROJECT_READER_DENY_CLUSTER_USER,
        PROJECT,
        "Retrieve information about the given cluster.",
        &[op("GET", "/v1/clusters/{cluster_ident}")],
    ),
    documented(
        "cluster:get_one_all_projects",
        ADMIN_API,
        NONE,
        "Retrieve information about the given cluster across projects.",
        &[op("GET", "/v1/clusters/{cluster_ident}")],
    ),
    documented(
        "cluster:get_all",
        ADMIN_OR_PROJECT_READER_DENY_CLUSTER_USER,
        PROJECT,
        "Retrieve a list of clusters.",
        &[op("GET", "/v1/clusters/")],
    ),
    documented(
        "cluster:get_all_all_projects",
        ADMIN_API,
        NONE,
        "Retrieve a list of all clusters across projects.",
        &[op("GET", "/v1/clusters/")],
    ),
    documented(
        "cluster:update",
        ADMIN_OR_PROJECT_MEMBER_DENY_CLUSTER_USER,
        PROJECT,
        "Update an existing cluster.",
        &[op("PATCH", "/v1/clusters/{cluster_ident}")],
    ),
    documented(
        "cluster:update_health_status",
        ADMIN_OR_PROJECT_MEMBER_USER_OR_CLUSTER_USER,
        PROJECT,
        "Update the health status of an existing cluster.",
        &[op("PATCH", "/v1/clusters/{cluster_ident}")],
    ),
    documented(
        "cluster:update_all_projects",
        ADMIN_API,
        NONE,
        "Update an existing cluster.",
        &[op("PATCH", "/v1/clusters/{cluster_ident}")],
    ),
    documented(
        "cluster:resize",
        ADMIN_OR_PROJECT_MEMBER_DENY_CLUSTER_USER,
        PROJECT,
        "Resize an existing cluster.",
        &[op("POST", "/v1/clusters/{cluster_ident}/actions/resize")],
    ),
    documented(
        "cluster:upgrade",
        ADMIN_OR_PROJECT_MEMBER_DENY_CLUSTER_USER,
        PROJECT,
        "Upgrade an existing cluster.",
        &[op("POST", "/v1/clusters/{cluster_ident}/actions/upgrade")],
    ),
    documented(
        "cluster:upgrade_all_projects",
        ADMIN_API,
        NONE,
        "Upgrade an existing cluster across all projects.",
        &[op("POST", "/v1/clusters/{cluster_ident}/actions/upgrade")],
    ),
];

const CLUSTERTEMPLATE: &[RuleDefault] = &[
    documented(
        "clustertemplate:create",
        ADMIN_OR_PROJECT_MEMBER_DENY_CLUSTER_USER,
        PROJECT,
        "Create a new cluster template.",
        &[op("POST", "/v1/clustertemplates")],
    ),
    documented(
        "clustertemplate:delete",
        ADMIN_OR_PROJECT_MEMBER,
        PROJECT,
        "Delete a cluster template.",
        &[op("DELETE", "/v1/clustertemplate/{clustertemplate_ident}")],
    ),
    documented(
        "clustertemplate:delete_all_projects",
        ADMIN_API,
        NONE,
        "Delete a cluster template from any project.",
        &[op("DELETE", "/v1/clustertemplate/{clustertemplate_ident}")],
    ),
    documented(
        "clustertemplate:detail_all_projects",
        ADMIN_API,
        NONE,
        "Retrieve a list of cluster templates with detail across projects.",
        &[op("GET", "/v1/clustertemplates")],
    ),
    documented(
        "clustertemplate:detail",
        ADMIN_OR_PROJECT_READER_DENY_CLUSTER_USER,
        PROJECT,
        "Retrieve a list of cluster templates with detail.",
        &[op("GET", "/v1/clustertemplates")],
    ),
    documented(
        "clustertemplate:get",
        ADMIN_OR_PROJECT_READER_DENY_CLUSTER_USER,
        PROJECT,
        "Retrieve information about the given cluster template.",
        &[op("GET", "/v1/clustertemplate/{clustertemplate_ident}")],
    ),
    documented(
        "clustertemplate:get_one_all_projects",
        ADMIN_API,
        NONE,
        "Retrieve information about the given cluster template across project.",
        &[op("GET", "/v1/clustertemplate/{clustertemplate_ident}")],
    ),
    documented(
        "clustertemplate:get_all",
        ADMIN_OR_PROJECT_READER_DENY_CLUSTER_USER,
        PROJECT,
        "Retrieve a list of cluster templates.",
        &[op("GET", "/v1/clustertemplates")],
    ),
    documented(
        "clustertemplate:get_all_all_projects",
        ADMIN_API,
        NONE,
        "Retrieve a list of cluster templates across projects.",
        &[op("GET", "/v1/clustertemplates")],
    ),
    documented(
        "clustertemplate:update",
        ADMIN_OR_PROJECT_MEMBER,
        PROJECT,
        "Update an existing cluster template.",
        &[op("PATCH", "/v1/clustertemplate/{clustertemplate_ident}")],
    ),
    documented(
        "clustertemplate:update_all_projects",
        ADMIN_API,
        NONE,
        "Update an existing cluster template.",
        &[op("PATCH", "/v1/clustertemplate/{clustertemplate_ident}")],
    ),
    documented(
        "clustertemplate:publish",
        ADMIN_API,
        NONE,
        "Publish or hide an existing cluster template (set public or hidden flags).",
        &[
            op("POST", "/v1/clustertemplates"),
            op("PATCH", "/v1/clustertemplates"),
        ],
    ),
];

const NODEGROUP: &[RuleDefault] = &[
    documented(
        "nodegroup:get",
        ADMIN_OR_PROJECT_READER,
        PROJECT,
        "Retrieve information about the given nodegroup.",
        &[op("GET", "/v1/clusters/{cluster_id}/nodegroup/{nodegroup}")],
    ),
    documented(
        "nodegroup:get_all",
        ADMIN_OR_PROJECT_READER,
        PROJECT,
        "Retrieve a list of nodegroups that belong to a cluster.",
        &[op("GET", "/v1/clusters/{cluster_id}/nodegroups/")],
    ),
    documented(
        "nodegroup:get_all_all_projects",
        ADMIN_API,
        NONE,
        "Retrieve a list of nodegroups across projects.",
        &[op("GET", "/v1/clusters/{cluster_id}/nodegroups/")],
    ),
    documented(
        "nodegroup:get_one_all_projects",
        ADMIN_API,
        NONE,
        "Retrieve infornation for a given nodegroup.",
        &[op(
            "GET",
            "/v1/clusters/{cluster_id}/nodegroups/{nodegroup}",
        )],
    ),
    documented(
        "nodegroup:create",
        ADMIN_OR_PROJECT_MEMBER,
        PROJECT,
        "Create a new nodegroup.",
        &[op("POST", "/v1/clusters/{cluster_id}/nodegroups/")],
    ),
    documented(
        "nodegroup:delete",
        ADMIN_OR_PROJECT_MEMBER,
        PROJECT,
        "Delete a nodegroup.",
        &[op(
            "DELETE",
            "/v1/clusters/{cluster_id}/nodegroups/{nodegroup}",
        )],
    ),
    documented(
        "nodegroup:update",
        ADMIN_OR_PROJECT_MEMBER,
        PROJECT,
        "Update an existing nodegroup.",
        &[op(
            "PATCH",
            "/v1/clusters/{cluster_id}/nodegroups/{nodegroup}",
        )],
    ),
];
