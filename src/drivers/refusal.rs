//! What a driver (or the registry choosing one) refuses on a request path: a master size or
//! resize it does not allow, a certificate or credential call it does not implement, a CA
//! it cannot read, a template naming no driver this service has.
//!
//! Drivers name their refusals here, never the API's error type: the API maps each one to
//! Magnum's exception, status and text in one place (`api::driver_refusals`). The texts
//! below are Magnum's where the API shows them unchanged, so the same words appear
//! wherever a refusal is written (an operation's `status_reason` too).

/// A refusal, with what Magnum's text needs.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// A control-plane size the driver does not run (Magnum's `MasterNGSizeInvalid`).
    #[error("master nodegroup size of {0} is invalid, size cannot be an even number.")]
    MasterSizeInvalid(i64),
    /// The driver does not resize the control plane (Magnum's `MasterNGResizeNotSupported`).
    #[error("Resizing the master nodegroup is not supported by this driver.")]
    MasterResizeNotSupported,
    /// A certificate method of Magnum's base driver that this driver does not implement,
    /// under Magnum's method name (`get_ca_certificate`, `sign_certificate`,
    /// `rotate_ca_certificate`).
    #[error("'{0}' is not supported by this driver.")]
    NotImplemented(&'static str),
    /// Magnum's base driver raises `NotImplementedError` for `credential_rotate`; the
    /// conductor answers with this text.
    #[error("Credential rotation is not supported by driver.")]
    CredentialRotationNotSupported,
    /// The cluster's CA does not exist yet (no backend name, no Secret, no key), by cluster
    /// uuid.
    #[error("The CA certificate of cluster {0} is not available yet")]
    CaUnavailable(String),
    /// The CA could not be read from the backend (the cause is logged where it happened;
    /// namespaces and RBAC texts are the operator's business), by cluster uuid.
    #[error("the CA of cluster {0} cannot be read from its management cluster")]
    CaUnreadable(String),
    /// The CA was read but cannot sign (the cause is logged), by cluster uuid.
    #[error("the CA of cluster {0} cannot sign")]
    CaCannotSign(String),
    /// The certificate request is not a valid CSR (Magnum's `InvalidCsr`, with the request).
    #[error("Received invalid csr {0}.")]
    InvalidCsr(String),
    /// The backend the cluster lives on is not configured here (e.g. its management
    /// cluster), with the driver's text.
    #[error("{0}")]
    BackendNotConfigured(String),
    /// No driver provides this (server_type, os, coe) (Magnum's `ClusterTypeNotSupported`).
    #[error("Cluster type ({server_type}, {os}, {coe}) not supported.")]
    ClusterTypeNotSupported {
        server_type: String,
        os: String,
        coe: String,
    },
    /// An upgrade to a template that changes what the cluster's infrastructure holds
    /// immutable (CAPO's OpenStackCluster) or cannot change in place.
    #[error(
        "The cluster template's {field} cannot change on an upgrade ({from:?} to {to:?}): {why}"
    )]
    UpgradeChangesImmutable {
        field: &'static str,
        from: String,
        to: String,
        why: &'static str,
    },
    /// The template names a driver this service does not have (Magnum's
    /// `ClusterDriverNotSupported`).
    #[error("Cluster driver ({0}) not supported.")]
    DriverNotSupported(String),
}
