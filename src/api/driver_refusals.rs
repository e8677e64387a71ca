//! The API's answer to what a driver refused ([`Refusal`]) and to a cluster without a
//! driver ([`NoDriver`]): Magnum's exception for each, so its status and text. The one
//! place a driver's refusal becomes an [`ApiError`].

use crate::drivers::Refusal;
use crate::error::ApiError;
use crate::operations::NoDriver;

impl From<Refusal> for ApiError {
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::MasterSizeInvalid(n) => ApiError::MasterNgSizeInvalid(n),
            Refusal::MasterResizeNotSupported => ApiError::MasterNgResizeNotSupported,
            // Magnum raises `NotSupported` with the whole message.
            Refusal::NotImplemented(_) | Refusal::CredentialRotationNotSupported => {
                ApiError::NotSupportedMessage(r.to_string())
            }
            Refusal::CaUnavailable(cluster) => ApiError::ClusterCaUnavailable(cluster),
            Refusal::CaUnreadable(_) | Refusal::CaCannotSign(_) => {
                ApiError::ServiceUnavailable(r.to_string())
            }
            Refusal::InvalidCsr(csr) => ApiError::InvalidCsr(csr),
            Refusal::BackendNotConfigured(why) => ApiError::Conflict(why),
            Refusal::ClusterTypeNotSupported {
                server_type,
                os,
                coe,
            } => ApiError::ClusterTypeNotSupported {
                server_type,
                os,
                coe,
            },
            Refusal::DriverNotSupported(name) => ApiError::ClusterDriverNotSupported(name),
            // Magnum has no such check: its driver's upgrade fails later, in Cluster API.
            Refusal::UpgradeChangesImmutable { .. } => {
                ApiError::InvalidParameterValue(r.to_string())
            }
        }
    }
}

impl From<NoDriver> for ApiError {
    fn from(e: NoDriver) -> Self {
        match e {
            NoDriver::TemplateGone(id) => ApiError::ClusterTemplateNotFound(id),
            NoDriver::Unsupported(r) => r.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each refusal's status and text, as Magnum answers it (and as the API tests and the
    /// conformance harness pin them).
    #[test]
    fn each_refusal_answers_with_magnums_status_and_text() {
        let cases = [
            (
                Refusal::MasterSizeInvalid(2),
                400,
                "master nodegroup size of 2 is invalid, size cannot be an even number.",
            ),
            (
                Refusal::MasterResizeNotSupported,
                400,
                "Resizing the master nodegroup is not supported by this driver.",
            ),
            (
                Refusal::NotImplemented("get_ca_certificate"),
                400,
                "'get_ca_certificate' is not supported by this driver.",
            ),
            (
                Refusal::NotImplemented("rotate_ca_certificate"),
                400,
                "'rotate_ca_certificate' is not supported by this driver.",
            ),
            (
                Refusal::CredentialRotationNotSupported,
                400,
                "Credential rotation is not supported by driver.",
            ),
            (
                Refusal::CaUnavailable("c1".into()),
                409,
                "The CA certificate of cluster c1 is not available yet",
            ),
            (
                Refusal::CaUnreadable("c1".into()),
                503,
                "The service is temporarily unavailable: the CA of cluster c1 cannot be read from its management cluster",
            ),
            (
                Refusal::CaCannotSign("c1".into()),
                503,
                "The service is temporarily unavailable: the CA of cluster c1 cannot sign",
            ),
            (
                Refusal::InvalidCsr("junk".into()),
                400,
                "Received invalid csr junk.",
            ),
            (
                Refusal::BackendNotConfigured("management cluster m2 is not configured".into()),
                409,
                "management cluster m2 is not configured",
            ),
            (
                Refusal::ClusterTypeNotSupported {
                    server_type: "vm".into(),
                    os: "fedora".into(),
                    coe: "swarm".into(),
                },
                400,
                "Cluster type (vm, fedora, swarm) not supported.",
            ),
            (
                Refusal::DriverNotSupported("heat".into()),
                400,
                "Cluster driver (heat) not supported.",
            ),
        ];
        for (refusal, status, text) in cases {
            let e = ApiError::from(refusal.clone());
            assert_eq!(e.status().as_u16(), status, "{refusal:?}");
            assert_eq!(e.to_string(), text, "{refusal:?}");
        }
    }

    /// Where the API shows a refusal's text unchanged, the refusal reads the same (an
    /// operation's `status_reason` shows the driver's own text).
    #[test]
    fn a_refusal_shown_unchanged_reads_the_same_outside_the_api() {
        for r in [
            Refusal::MasterSizeInvalid(4),
            Refusal::CaUnavailable("c1".into()),
            Refusal::DriverNotSupported("heat".into()),
            Refusal::ClusterTypeNotSupported {
                server_type: "vm".into(),
                os: "".into(),
                coe: "kubernetes".into(),
            },
        ] {
            assert_eq!(ApiError::from(r.clone()).to_string(), r.to_string());
        }
    }

    #[test]
    fn a_cluster_without_a_driver_answers_as_its_template_or_its_driver() {
        let gone = ApiError::from(NoDriver::TemplateGone("t1".into()));
        assert_eq!(gone.status().as_u16(), 404);
        assert_eq!(gone.to_string(), "ClusterTemplate t1 could not be found.");
        let unsupported = ApiError::from(NoDriver::Unsupported(Refusal::DriverNotSupported(
            "heat".into(),
        )));
        assert_eq!(unsupported.status().as_u16(), 400);
        assert_eq!(
            unsupported.to_string(),
            "Cluster driver (heat) not supported."
        );
    }
}
