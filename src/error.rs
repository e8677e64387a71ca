//! The one error type of the service and its rendering as Magnum's error envelope.
//!
//! Every variant is named after the Magnum exception it mirrors (`magnum/common/exception.py`)
//! and carries Magnum's message template. [`ApiError::status`] is the one status table;
//! [`IntoResponse`] renders the envelope
//! `{"errors":[{"request_id","code","status","title","detail","links"}]}`.

use axum::extract::rejection::{BytesRejection, ExtensionRejection, PathRejection};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// Which formatter Magnum's pipeline would have used for an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// Raised inside a controller and formatted by WSME: `code` is `client`/`server`.
    Wsme,
    /// A pecan/webob HTTP exception (routing, version gates): `code` is `""`, and `title` and
    /// `detail` are blank unless the client asked for JSON.
    Webob,
    /// The microversion 406 body, passed through unchanged.
    Microversion,
}

/// Marker left in the response extensions so that the outer layers can finish the body
/// (Accept-dependent blanks) and decide on version headers.
#[derive(Clone, Debug)]
pub struct ErrorMarker {
    pub flavor: Flavor,
    /// Magnum leaves the OpenStack-API-* headers off for this error.
    pub without_version_headers: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    // --- 400 ---------------------------------------------------------------------------
    /// WSME/api-utils validation texts and `InvalidParameterValue` (`%(err)s`).
    #[error("{0}")]
    InvalidParameterValue(String),
    #[error("Invalid input for field/attribute {field}. Value: '{value}'. {reason}")]
    InvalidInput {
        field: String,
        value: String,
        reason: String,
    },
    #[error("Unknown attribute for argument {argname}: {attrs}")]
    UnknownAttribute { argname: String, attrs: String },
    #[error("Unknown argument: \"{0}\"")]
    UnknownArgument(String),
    #[error("Missing argument: \"{0}\"")]
    MissingArgument(String),
    #[error("Request is not in valid JSON format")]
    MalformedJson,
    #[error("Couldn't apply patch '{patch}'. Reason: {reason}")]
    PatchError { patch: String, reason: String },
    #[error("Expected a uuid but received {0}.")]
    InvalidUuid(String),
    #[error("{0} is not supported.")]
    NotSupported(String),
    /// `NotSupported` raised with a whole message (e.g. a driver's).
    #[error("{0}")]
    NotSupportedMessage(String),
    #[error("Received invalid csr {0}.")]
    InvalidCsr(String),
    #[error("Cluster type ({server_type}, {os}, {coe}) not supported.")]
    ClusterTypeNotSupported {
        server_type: String,
        os: String,
        coe: String,
    },
    #[error("Cluster driver ({0}) not supported.")]
    ClusterDriverNotSupported(String),
    #[error("master nodegroup size of {0} is invalid, size cannot be an even number.")]
    MasterNgSizeInvalid(i64),
    #[error("Resizing the master nodegroup is not supported by this driver.")]
    MasterNgResizeNotSupported,
    #[error("Resizing a nodegroup to zero is not supported in the provided microversion.")]
    ZeroNodeCountNotSupported,
    #[error("Cluster upgrade is not supported in the provided microversion.")]
    ClusterUpgradeNotSupported,
    #[error("Resizing {nodegroup} outside the allowed range: min_node_count = {min}, max_node_count = {max}")]
    NgResizeOutBounds {
        nodegroup: String,
        min: i64,
        /// Python's rendering of the maximum (`None` when unset).
        max: String,
    },
    #[error("Deleting a default nodegroup is not supported.")]
    DeletingDefaultNgNotSupported,
    #[error("Creating master nodegroups is currently not supported.")]
    CreateMasterNodeGroup,
    #[error("ClusterTemplate {0} is referenced by one or multiple clusters.")]
    ClusterTemplateReferenced(String),
    // The cloud's resources (`attr_validator`): Magnum sets 400 on these `ResourceNotFound`s.
    #[error("Image {0} could not be found.")]
    ImageNotFound(String),
    #[error("Image {0} doesn't contain os_distro field.")]
    OsDistroFieldNotFound(String),
    #[error("Unable to find flavor {0}.")]
    FlavorNotFound(String),
    #[error("Unable to find external network {0}.")]
    ExternalNetworkNotFound(String),
    #[error("Unable to find fixed network {0}.")]
    FixedNetworkNotFound(String),
    #[error("Unable to find fixed subnet {0}.")]
    FixedSubnetNotFound(String),
    #[error("Flavor with zero root volume size is not supported when boot_volume_size is zero.")]
    FlavorZeroRootVolumeNotSupported,

    // --- 403 ---------------------------------------------------------------------------
    #[error("Not authorized.")]
    NotAuthorized,
    #[error("Policy doesn't allow {0} to be performed.")]
    PolicyNotAuthorized(String),
    #[error("Not authorized to set public or hidden flag for cluster template.")]
    ClusterTemplatePublishDenied,
    #[error("Not authorized for image {0}.")]
    ImageNotAuthorized(String),
    #[error("Resource limit exceeded: {0}")]
    ResourceLimitExceeded(String),

    // --- 404 ---------------------------------------------------------------------------
    #[error("Cluster {0} could not be found.")]
    ClusterNotFound(String),
    #[error("Nodegroup {0} could not be found.")]
    NodeGroupNotFound(String),
    #[error("ClusterTemplate {0} could not be found.")]
    ClusterTemplateNotFound(String),
    /// Magnum raises `ResourceNotFound` without arguments in a few places; the
    /// placeholders stay unformatted.
    #[error("The %(name)s resource %(id)s could not be found.")]
    ResourceNotFoundUnformatted,
    #[error("Quota could not be found: {0}")]
    QuotaNotFound(String),
    #[error("Federation {0} could not be found.")]
    FederationNotFound(String),
    /// `KeyPairNotFound` keeps `ResourceNotFound`'s 404.
    #[error("Unable to find keypair {0}.")]
    KeyPairNotFound(String),
    /// `exception.HTTPNotFound` raised with a message of its own.
    #[error("{0}")]
    NotFoundMessage(String),

    // --- 409 ---------------------------------------------------------------------------
    #[error("{0}")]
    Conflict(String),
    #[error("A node group with name {name} already exists in the cluster {cluster}.")]
    NodeGroupAlreadyExists { name: String, cluster: String },
    #[error("{attr} for {nodegroup} is invalid ({expl}).")]
    NodeGroupInvalidInput {
        attr: String,
        nodegroup: String,
        expl: String,
    },
    #[error("Cluster Template is not valid for upgrade: {0}")]
    InvalidClusterTemplateForUpgrade(String),
    #[error("Cluster API address is not available yet")]
    ClusterApiAddressUnavailable,
    #[error("The CA certificate of cluster {0} is not available yet")]
    ClusterCaUnavailable(String),
    #[error("Quota for project {project_id} already exists for resource {resource}.")]
    QuotaAlreadyExists {
        project_id: String,
        resource: String,
    },

    // --- the request's framing ----------------------------------------------------------
    /// A body over `[api] max_request_body_size` (oslo.middleware's sizelimit text; Magnum's
    /// pipeline sets no limit: docs/compatibility.md).
    #[error("Request is too large. Larger than max_request_body_size ({0}).")]
    RequestTooLarge(usize),
    /// WSME's `args_from_body` for a body in a type it does not read.
    #[error("Unknown mimetype: {0}")]
    UnknownMimetype(String),
    /// A request the HTTP framework refused before a handler ran (a path that is not
    /// UTF-8, a body that ended early), with the framework's status and text.
    #[error("{detail}")]
    Rejected { status: StatusCode, detail: String },

    // --- webob / pecan -----------------------------------------------------------------
    #[error("")]
    RouteNotFound,
    #[error("")]
    MethodNotAllowed,
    /// A malformed `OpenStack-API-Version` header.
    #[error("{0}")]
    NotAcceptable(String),
    /// A per-method version gate (`@api_version`).
    #[error("Version {version} was requested but the requested API {method} is not supported for this version.")]
    VersionNotAvailable { version: String, method: String },
    /// A microversion outside the served range: `HTTPNotAcceptableAPIVersion`'s 406, with
    /// its own body (the description only for a JSON `Accept`) and the range headers.
    #[error("{}", description.as_deref().unwrap_or_default())]
    MicroversionUnsupported {
        requested: String,
        description: Option<String>,
        /// The range served, as the body states it (the API's microversion module fills
        /// it in, with the range headers).
        min_version: String,
        max_version: String,
    },

    // --- 5xx ---------------------------------------------------------------------------
    /// A failure of ours; the cause is logged once here and never shown to the client.
    #[error("An internal error occurred.")]
    Internal(#[source] anyhow::Error),
    #[error("The service is temporarily unavailable: {0}")]
    ServiceUnavailable(String),
}

/// An extractor's refusal: axum's status and text, in Magnum's envelope.
impl From<PathRejection> for ApiError {
    fn from(r: PathRejection) -> Self {
        ApiError::rejected(r.status(), r.body_text())
    }
}

impl From<ExtensionRejection> for ApiError {
    fn from(r: ExtensionRejection) -> Self {
        ApiError::rejected(r.status(), r.body_text())
    }
}

impl From<BytesRejection> for ApiError {
    fn from(r: BytesRejection) -> Self {
        ApiError::rejected(r.status(), r.body_text())
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(e: sqlx::Error) -> Self {
        ApiError::Internal(e.into())
    }
}

impl From<anyhow::Error> for ApiError {
    fn from(e: anyhow::Error) -> Self {
        ApiError::Internal(e)
    }
}

impl ApiError {
    /// What the HTTP framework refused by itself, with its status and (trimmed) text.
    /// `_check_cluster_quota_limit`'s refusal: the project owns `limit` clusters already.
    pub fn cluster_quota_reached(limit: i64) -> Self {
        ApiError::ResourceLimitExceeded(format!(
            "You have reached the maximum clusters per project, {limit}. You may delete a cluster to make room for a new one."
        ))
    }

    pub fn rejected(status: StatusCode, text: impl AsRef<str>) -> Self {
        ApiError::Rejected {
            status,
            detail: text.as_ref().trim().to_string(),
        }
    }

    /// Builds Magnum's WSME type/constraint error.
    pub fn invalid_input(
        field: impl Into<String>,
        value: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        ApiError::InvalidInput {
            field: field.into(),
            value: value.into(),
            reason: reason.into(),
        }
    }

    /// The one status table.
    pub fn status(&self) -> StatusCode {
        use ApiError::*;
        match self {
            InvalidParameterValue(_)
            | InvalidInput { .. }
            | UnknownAttribute { .. }
            | UnknownArgument(_)
            | MissingArgument(_)
            | MalformedJson
            | PatchError { .. }
            | InvalidUuid(_)
            | NotSupported(_)
            | NotSupportedMessage(_)
            | InvalidCsr(_)
            | ClusterTypeNotSupported { .. }
            | ClusterDriverNotSupported(_)
            | MasterNgSizeInvalid(_)
            | MasterNgResizeNotSupported
            | ZeroNodeCountNotSupported
            | ClusterUpgradeNotSupported
            | NgResizeOutBounds { .. }
            | DeletingDefaultNgNotSupported
            | CreateMasterNodeGroup
            | ClusterTemplateReferenced(_)
            | ImageNotFound(_)
            | OsDistroFieldNotFound(_)
            | FlavorNotFound(_)
            | ExternalNetworkNotFound(_)
            | FixedNetworkNotFound(_)
            | FixedSubnetNotFound(_)
            | FlavorZeroRootVolumeNotSupported => StatusCode::BAD_REQUEST,
            NotAuthorized
            | PolicyNotAuthorized(_)
            | ClusterTemplatePublishDenied
            | ImageNotAuthorized(_)
            | ResourceLimitExceeded(_) => StatusCode::FORBIDDEN,
            ClusterNotFound(_)
            | NodeGroupNotFound(_)
            | ClusterTemplateNotFound(_)
            | ResourceNotFoundUnformatted
            | QuotaNotFound(_)
            | FederationNotFound(_)
            | KeyPairNotFound(_)
            | NotFoundMessage(_)
            | RouteNotFound => StatusCode::NOT_FOUND,
            Conflict(_)
            | NodeGroupAlreadyExists { .. }
            | NodeGroupInvalidInput { .. }
            | InvalidClusterTemplateForUpgrade(_)
            | ClusterApiAddressUnavailable
            | ClusterCaUnavailable(_)
            | QuotaAlreadyExists { .. } => StatusCode::CONFLICT,
            MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            NotAcceptable(_) | VersionNotAvailable { .. } | MicroversionUnsupported { .. } => {
                StatusCode::NOT_ACCEPTABLE
            }
            RequestTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            UnknownMimetype(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Rejected { status, .. } => *status,
            Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ServiceUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    fn flavor(&self) -> Flavor {
        match self {
            ApiError::RouteNotFound
            | ApiError::MethodNotAllowed
            | ApiError::NotAcceptable(_)
            | ApiError::VersionNotAvailable { .. } => Flavor::Webob,
            ApiError::MicroversionUnsupported { .. } => Flavor::Microversion,
            _ => Flavor::Wsme,
        }
    }

    fn without_version_headers(&self) -> bool {
        matches!(
            self,
            ApiError::RouteNotFound
                | ApiError::MethodNotAllowed
                | ApiError::NotAcceptable(_)
                | ApiError::VersionNotAvailable { .. }
        )
    }
}

/// The webob title of a status, as pecan shows it with a JSON Accept header.
fn webob_title(status: StatusCode) -> &'static str {
    match status {
        StatusCode::NOT_FOUND => "Not Found",
        StatusCode::METHOD_NOT_ALLOWED => "Method Not Allowed",
        StatusCode::NOT_ACCEPTABLE => "Not Acceptable",
        _ => "",
    }
}

/// Magnum's `title`: the message up to, not including, the first `.`.
pub fn title_of(detail: &str) -> &str {
    detail.split('.').next().unwrap_or_default()
}

/// The generic envelope around one error.
pub fn envelope(code: &str, status: StatusCode, title: &str, detail: &str) -> serde_json::Value {
    json!({"errors": [{
        "request_id": "",
        "code": code,
        "status": status.as_u16(),
        "title": title,
        "detail": detail,
        "links": [],
    }]})
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let flavor = self.flavor();
        let body = match &self {
            ApiError::Internal(cause) => {
                tracing::error!(error = ?cause, "internal error");
                let detail = self.to_string();
                envelope("server", status, title_of(&detail), &detail)
            }
            ApiError::MicroversionUnsupported {
                description,
                min_version,
                max_version,
                ..
            } => {
                let mut error = json!({
                    "code": "magnum.microversion-unsupported",
                    "title": "Requested microversion is unsupported",
                    "links": [{"rel": "help", "href": "http://docs.openstack.org/api-guide/compute/microversions.html"}],
                    "max_version": max_version,
                    "min_version": min_version,
                });
                if let Some(description) = description {
                    error["description"] = description.as_str().into();
                }
                json!({"errors": [error]})
            }
            _ if flavor == Flavor::Webob => {
                envelope("", status, webob_title(status), &self.to_string())
            }
            _ => {
                let detail = self.to_string();
                let code = if status.is_server_error() {
                    "server"
                } else {
                    "client"
                };
                envelope(code, status, title_of(&detail), &detail)
            }
        };
        let mut response = (status, axum::Json(body)).into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        response.extensions_mut().insert(ErrorMarker {
            flavor,
            without_version_headers: self.without_version_headers(),
        });
        response
    }
}

pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn title_is_cut_at_the_first_period() {
        assert_eq!(
            title_of(
                "Multiple clusters exist with same name. Please use the cluster uuid instead."
            ),
            "Multiple clusters exist with same name"
        );
        assert_eq!(
            title_of("Cluster notthere could not be found."),
            "Cluster notthere could not be found"
        );
    }

    #[test]
    fn out_of_bounds_text_has_no_final_period() {
        let e = ApiError::NgResizeOutBounds {
            nodegroup: "test-worker".into(),
            min: 2,
            max: "5".into(),
        };
        assert_eq!(
            e.to_string(),
            "Resizing test-worker outside the allowed range: min_node_count = 2, max_node_count = 5"
        );
        assert_eq!(e.status(), StatusCode::BAD_REQUEST);
    }
}
