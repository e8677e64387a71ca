//! `[keystone_authtoken]`: how magnum-rs reaches Keystone, with the option names of
//! keystonemiddleware's `auth_token` where one exists.

use serde::{Deserialize, Serialize};

pub use crate::secret::Secret;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KeystoneAuthConfig {
    /// Keystone's identity v3 endpoint for validating tokens (`…/v3`; `/v3` is appended when
    /// the URL does not end with it).
    pub auth_url: String,
    /// The endpoint clients are told to authenticate against (`WWW-Authenticate`).
    /// Empty: `auth_url`.
    pub www_authenticate_uri: String,
    /// The service user magnum-rs validates tokens with (password method).
    pub username: String,
    /// Its password. Prefer the environment (`MAGNUM_RS_KEYSTONE_PASSWORD`) or a mounted
    /// Secret over this file.
    pub password: Secret,
    pub user_domain_name: String,
    pub project_name: String,
    pub project_domain_name: String,
    /// Seconds a validated token is trusted without asking Keystone again (never beyond the
    /// token's own expiry): how long a revoked token can still be used.
    pub token_cache_time: u64,
    /// At most this many validations are cached (oldest dropped first).
    pub token_cache_size: usize,
    /// Seconds to wait for Keystone before answering 503.
    pub http_request_timeout: u64,
}

impl Default for KeystoneAuthConfig {
    fn default() -> Self {
        KeystoneAuthConfig {
            auth_url: "http://127.0.0.1:5000/v3".into(),
            www_authenticate_uri: String::new(),
            username: "magnum".into(),
            password: Secret::default(),
            user_domain_name: "Default".into(),
            project_name: "service".into(),
            project_domain_name: "Default".into(),
            token_cache_time: 30,
            token_cache_size: 10_000,
            http_request_timeout: 10,
        }
    }
}

impl KeystoneAuthConfig {
    /// The v3 base URL, without a trailing slash.
    pub fn v3_url(&self) -> String {
        let base = self.auth_url.trim_end_matches('/');
        if base.ends_with("/v3") {
            base.to_string()
        } else {
            format!("{base}/v3")
        }
    }

    /// What `WWW-Authenticate: Keystone uri="…"` names.
    pub fn authenticate_uri(&self) -> String {
        if self.www_authenticate_uri.is_empty() {
            self.v3_url()
        } else {
            self.www_authenticate_uri.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_service_password_never_shows_in_debug_output() {
        let c = KeystoneAuthConfig {
            password: Secret::new("magnum-secret"),
            ..KeystoneAuthConfig::default()
        };
        let shown = format!("{c:?}");
        assert!(!shown.contains("magnum-secret"), "{shown}");
        assert!(shown.contains("password: \"***\""), "{shown}");
    }

    #[test]
    fn v3_is_appended_to_a_bare_auth_url() {
        let mut c = KeystoneAuthConfig {
            auth_url: "http://ks:5000/".into(),
            ..KeystoneAuthConfig::default()
        };
        assert_eq!(c.v3_url(), "http://ks:5000/v3");
        c.auth_url = "http://ks:5000/v3/".into();
        assert_eq!(c.v3_url(), "http://ks:5000/v3");
        assert_eq!(c.authenticate_uri(), "http://ks:5000/v3");
    }
}
