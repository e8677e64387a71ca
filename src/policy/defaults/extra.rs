//! Magnum's rules for certificates, credentials, federations, magnum-services, quotas and
//! stats (`magnum/common/policies/{certificate,credential,federation,magnum_service,quota,
//! stats}.py`).

use super::{
    documented, op, RuleDefault, ADMIN_API, ADMIN_OR_PROJECT_MEMBER,
    ADMIN_OR_PROJECT_MEMBER_DENY_CLUSTER_USER, ADMIN_OR_PROJECT_MEMBER_USER,
    ADMIN_OR_PROJECT_READER, ADMIN_OR_PROJECT_READER_DENY_CLUSTER_USER,
    ADMIN_OR_PROJECT_READER_USER, NONE, PROJECT, PROJECT_MEMBER_DENY_CLUSTER_USER,
};

pub(super) const CERTIFICATE: &[RuleDefault] = &[
    documented(
        "certificate:create",
        ADMIN_OR_PROJECT_MEMBER_USER,
        PROJECT,
        "Sign a new certificate by the CA.",
        &[op("POST", "/v1/certificates")],
    ),
    documented(
        "certificate:get",
        ADMIN_OR_PROJECT_READER_USER,
        PROJECT,
        "Retrieve CA information about the given cluster.",
        &[op("GET", "/v1/certificates/{cluster_uuid}")],
    ),
    documented(
        "certificate:rotate_ca",
        ADMIN_OR_PROJECT_MEMBER,
        PROJECT,
        "Rotate the CA certificate on the given cluster.",
        &[op("PATCH", "/v1/certificates/{cluster_uuid}")],
    ),
];

pub(super) const CREDENTIAL: &[RuleDefault] = &[documented(
    "credential:rotate",
    PROJECT_MEMBER_DENY_CLUSTER_USER,
    PROJECT,
    "Rotate the credential of a cluster.",
    &[op("PATCH", "/v1/credentials/{cluster_uuid}")],
)];

pub(super) const FEDERATION: &[RuleDefault] = &[
    documented(
        "federation:create",
        ADMIN_OR_PROJECT_MEMBER_DENY_CLUSTER_USER,
        PROJECT,
        "Create a new federation.",
        &[op("POST", "/v1/federations")],
    ),
    documented(
        "federation:delete",
        ADMIN_OR_PROJECT_MEMBER_DENY_CLUSTER_USER,
        PROJECT,
        "Delete a federation.",
        &[op("DELETE", "/v1/federations/{federation_ident}")],
    ),
    documented(
        "federation:detail",
        ADMIN_OR_PROJECT_READER_DENY_CLUSTER_USER,
        PROJECT,
        "Retrieve a list of federations with detail.",
        &[op("GET", "/v1/federations")],
    ),
    documented(
        "federation:get",
        ADMIN_OR_PROJECT_READER_DENY_CLUSTER_USER,
        PROJECT,
        "Retrieve information about the given federation.",
        &[op("GET", "/v1/federations/{federation_ident}")],
    ),
    documented(
        "federation:get_all",
        ADMIN_OR_PROJECT_READER_DENY_CLUSTER_USER,
        PROJECT,
        "Retrieve a list of federations.",
        &[op("GET", "/v1/federations/")],
    ),
    documented(
        "federation:update",
        ADMIN_OR_PROJECT_MEMBER_DENY_CLUSTER_USER,
        PROJECT,
        "Update an existing federation.",
        &[op("PATCH", "/v1/federations/{federation_ident}")],
    ),
];

pub(super) const MAGNUM_SERVICE: &[RuleDefault] = &[documented(
    "magnum-service:get_all",
    ADMIN_API,
    NONE,
    "Retrieve a list of magnum-services.",
    &[op("GET", "/v1/mservices")],
)];

pub(super) const QUOTA: &[RuleDefault] = &[
    documented(
        "quota:create",
        ADMIN_API,
        NONE,
        "Create quota.",
        &[op("POST", "/v1/quotas")],
    ),
    documented(
        "quota:delete",
        ADMIN_API,
        NONE,
        "Delete quota for a given project_id and resource.",
        &[op("DELETE", "/v1/quotas/{project_id}/{resource}")],
    ),
    documented(
        "quota:get",
        ADMIN_OR_PROJECT_READER,
        PROJECT,
        "Retrieve Quota information for the given project_id.",
        &[op("GET", "/v1/quotas/{project_id}/{resource}")],
    ),
    documented(
        "quota:get_all",
        ADMIN_API,
        NONE,
        "Retrieve a list of quotas.",
        &[op("GET", "/v1/quotas")],
    ),
    documented(
        "quota:update",
        ADMIN_API,
        NONE,
        "Update quota for a given project_id.",
        &[op("PATCH", "/v1/quotas/{project_id}/{resource}")],
    ),
];

pub(super) const STATS: &[RuleDefault] = &[documented(
    "stats:get_all",
    ADMIN_OR_PROJECT_READER,
    PROJECT,
    "Retrieve magnum stats.",
    &[op("GET", "/v1/stats")],
)];
