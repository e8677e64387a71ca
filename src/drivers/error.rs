//! What a driver reports when a lifecycle call fails: Magnum's `status_reason` text, whether
//! the worker retries, and the backend error behind it (kept as the error's `source`, for
//! logs; the text a user sees is the message alone).

use std::fmt;

/// A lifecycle failure; its text becomes the `status_reason` Magnum shows.
#[derive(Debug)]
pub enum DriverError {
    /// The request cannot be carried out (e.g. rejected by the backend); not retried.
    Rejected(Reason),
    /// A transient failure (backend unreachable, conflict): the worker retries it.
    Transient(Reason),
}

/// The text of a [`DriverError`] and the Kubernetes error it came from, when there was one.
#[derive(Debug)]
pub struct Reason {
    message: String,
    source: Option<kube::Error>,
}

impl DriverError {
    pub fn rejected(message: impl Into<String>) -> Self {
        DriverError::Rejected(message.into().into())
    }

    pub fn transient(message: impl Into<String>) -> Self {
        DriverError::Transient(message.into().into())
    }

    /// Keeps `source` behind the error, for logs and callers that inspect it.
    pub fn caused_by(mut self, source: kube::Error) -> Self {
        match &mut self {
            DriverError::Rejected(r) | DriverError::Transient(r) => r.source = Some(source),
        }
        self
    }

    pub fn reason(&self) -> &Reason {
        match self {
            DriverError::Rejected(r) | DriverError::Transient(r) => r,
        }
    }

    /// The Kubernetes error behind this one, if any.
    pub fn kube_source(&self) -> Option<&kube::Error> {
        self.reason().source.as_ref()
    }
}

impl Reason {
    pub fn as_str(&self) -> &str {
        &self.message
    }
}

impl From<String> for Reason {
    fn from(message: String) -> Self {
        Reason {
            message,
            source: None,
        }
    }
}

impl From<&str> for Reason {
    fn from(message: &str) -> Self {
        message.to_string().into()
    }
}

impl std::ops::Deref for Reason {
    type Target = str;

    fn deref(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.reason().fmt(f)
    }
}

impl std::error::Error for DriverError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.kube_source()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn a_kube_error_stays_behind_the_message_as_its_source() {
        let kube = kube::Error::Api(
            kube::core::Status::failure("clusters is forbidden", "Forbidden")
                .with_code(403)
                .boxed(),
        );
        let e = DriverError::rejected("Cluster k8s: clusters is forbidden").caused_by(kube);
        assert_eq!(e.to_string(), "Cluster k8s: clusters is forbidden");
        let source = e.source().expect("a source");
        assert!(source.to_string().contains("forbidden"), "{source}");
        assert!(matches!(e.kube_source(), Some(kube::Error::Api(s)) if s.code == 403));
    }

    #[test]
    fn a_message_alone_has_no_source() {
        let e = DriverError::transient("management cluster unreachable");
        assert!(e.source().is_none());
        assert!(matches!(&e, DriverError::Transient(r) if r.contains("unreachable")));
    }
}
