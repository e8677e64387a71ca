//! Keystone token authentication, as keystonemiddleware's `auth_token` does it in front of
//! Magnum: every request but the public `GET /` and `GET /v1` carries `X-Auth-Token`, which
//! is validated with `GET /v3/auth/tokens` under magnum-rs's own service token, and the
//! identity Keystone returns (user, project, roles with the implied ones, system scope)
//! becomes the request context. Client-sent identity headers are never trusted here.
//!
//! Differences from keystonemiddleware, on purpose: unscoped tokens are refused (it passes
//! them on with no project), and Keystone being unreachable is a 503 in Magnum's envelope.

pub mod cache;
pub mod config;
pub mod token;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde_json::json;
use tokio::sync::Mutex;

use crate::error::ApiError;
use crate::model::RequestContext;
use crate::openstack::{stale_connection, Caller, ServiceCatalog};

pub use config::{KeystoneAuthConfig, Secret};

use cache::TokenCache;

/// keystoneauth renews a token this long before it expires.
const RENEW_BEFORE: Duration = Duration::from_secs(120);

/// Who a valid token speaks for, and the catalog Keystone gave with it.
#[derive(Clone, Debug)]
pub struct Authenticated {
    pub context: RequestContext,
    pub catalog: Arc<ServiceCatalog>,
    pub expires_at: DateTime<Utc>,
}

/// What a token check concluded.
#[derive(Clone, Debug)]
enum Verdict {
    Valid(Box<Authenticated>),
    /// Keystone does not know the token, it expired or was revoked, or it is unscoped.
    Invalid,
}

/// Why a request could not be authenticated.
#[derive(Debug)]
pub enum AuthFailure {
    /// 401 with keystonemiddleware's body.
    Unauthorized,
    /// Keystone could not be asked (down, timing out, or refusing magnum-rs's service user).
    Unavailable(String),
}

struct ServiceToken {
    token: Secret,
    expires_at: DateTime<Utc>,
    /// The service user's catalog, for the calls magnum-rs makes as itself.
    catalog: Arc<ServiceCatalog>,
}

pub struct KeystoneAuth {
    config: KeystoneAuthConfig,
    v3: String,
    http: reqwest::Client,
    service_token: Mutex<Option<ServiceToken>>,
    cache: TokenCache<Verdict>,
}

impl std::fmt::Debug for KeystoneAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeystoneAuth")
            .field("auth_url", &self.v3)
            .field("username", &self.config.username)
            .finish_non_exhaustive()
    }
}

impl KeystoneAuth {
    pub fn new(config: &KeystoneAuthConfig) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(config.http_request_timeout.max(1)))
            .user_agent(concat!(
                "magnum-rs/",
                env!("CARGO_PKG_VERSION"),
                " auth_token"
            ))
            .build()?;
        Ok(KeystoneAuth {
            v3: config.v3_url(),
            config: config.clone(),
            http,
            service_token: Mutex::new(None),
            cache: TokenCache::new(
                Duration::from_secs(config.token_cache_time),
                config.token_cache_size,
            ),
        })
    }

    /// The identity behind a user token, and its catalog.
    pub async fn authenticate(&self, user_token: &str) -> Result<Authenticated, AuthFailure> {
        let key = cache::digest(user_token);
        if let Some(verdict) = self.cache.get(&key, Instant::now()) {
            return match verdict {
                Verdict::Valid(who) => Ok(*who),
                Verdict::Invalid => Err(AuthFailure::Unauthorized),
            };
        }
        let (verdict, expires_at) = self.validate(user_token).await?;
        let not_after = expires_at.map(|at| {
            let left = (at - Utc::now()).to_std().unwrap_or(Duration::ZERO);
            Instant::now() + left
        });
        self.cache
            .insert(key, verdict.clone(), Instant::now(), not_after);
        match verdict {
            Verdict::Valid(who) => Ok(*who),
            Verdict::Invalid => Err(AuthFailure::Unauthorized),
        }
    }

    /// Asks Keystone, renewing the service token once if Keystone no longer accepts it. The
    /// answer carries the token's catalog (keystonemiddleware's `include_service_catalog`),
    /// which the request's calls to Glance, Nova, Neutron and Cinder use.
    async fn validate(
        &self,
        user_token: &str,
    ) -> Result<(Verdict, Option<DateTime<Utc>>), AuthFailure> {
        for attempt in 0..2 {
            let service = self.service_token(attempt > 0).await?;
            let req = self
                .http
                .get(format!("{}/auth/tokens", self.v3))
                .header("X-Auth-Token", service.expose())
                .header("X-Subject-Token", user_token);
            let resp = stale_connection::send(req, true)
                .await
                .map_err(|e| unavailable("validating a token", &e))?;
            match resp.status() {
                StatusCode::OK => {
                    let body = resp
                        .bytes()
                        .await
                        .map_err(|e| unavailable("reading a token validation", &e))?;
                    let unreadable = |e: serde_json::Error| {
                        AuthFailure::Unavailable(format!(
                            "Keystone's token validation could not be read: {e}"
                        ))
                    };
                    let parsed = token::parse(&body).map_err(unreadable)?;
                    let catalog = ServiceCatalog::from_token_body(&body).map_err(unreadable)?;
                    return Ok(match parsed.identity(Utc::now()) {
                        Ok(v) => (
                            Verdict::Valid(Box::new(Authenticated {
                                context: v.context,
                                catalog: Arc::new(catalog),
                                expires_at: v.expires_at,
                            })),
                            Some(v.expires_at),
                        ),
                        Err(refusal) => {
                            tracing::info!(%refusal, "token refused");
                            (Verdict::Invalid, None)
                        }
                    });
                }
                StatusCode::NOT_FOUND => return Ok((Verdict::Invalid, None)),
                StatusCode::UNAUTHORIZED if attempt == 0 => {
                    tracing::info!("Keystone refused the service token: renewing it");
                    continue;
                }
                status => {
                    tracing::error!(%status, "Keystone refused to validate tokens for the service user");
                    return Err(AuthFailure::Unavailable(format!(
                        "Keystone answered {status} when validating a token"
                    )));
                }
            }
        }
        Err(AuthFailure::Unavailable(
            "Keystone does not accept the service user's token".into(),
        ))
    }

    /// The service token, obtained or renewed (when `force`, or close to its expiry).
    async fn service_token(&self, force: bool) -> Result<Secret, AuthFailure> {
        Ok(self.service_caller_renewed(force).await?.token)
    }

    /// magnum-rs's own token and catalog, for the calls Magnum makes as its service user
    /// (what outlives a request: a cluster's cloud resources deleted after the cluster).
    pub async fn service_caller(&self) -> Result<Caller, AuthFailure> {
        self.service_caller_renewed(false).await
    }

    async fn service_caller_renewed(&self, force: bool) -> Result<Caller, AuthFailure> {
        let mut held = self.service_token.lock().await;
        if let Some(t) = held.as_ref() {
            let renew_at =
                t.expires_at - chrono::Duration::from_std(RENEW_BEFORE).unwrap_or_default();
            if !force && Utc::now() < renew_at {
                return Ok(Caller {
                    token: t.token.clone(),
                    catalog: t.catalog.clone(),
                    expires_at: Some(t.expires_at),
                });
            }
        }
        let fresh = self.issue_service_token().await?;
        let caller = Caller {
            token: fresh.token.clone(),
            catalog: fresh.catalog.clone(),
            expires_at: Some(fresh.expires_at),
        };
        *held = Some(fresh);
        Ok(caller)
    }

    async fn issue_service_token(&self) -> Result<ServiceToken, AuthFailure> {
        let c = &self.config;
        let body = json!({"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": c.username,
                "domain": {"name": c.user_domain_name},
                "password": c.password.expose(),
            }}},
            "scope": {"project": {"name": c.project_name, "domain": {"name": c.project_domain_name}}},
        }});
        let req = self
            .http
            .post(format!("{}/auth/tokens", self.v3))
            .json(&body);
        let resp = stale_connection::send(req, true)
            .await
            .map_err(|e| unavailable("authenticating the service user", &e))?;
        let status = resp.status();
        if status != StatusCode::CREATED && status != StatusCode::OK {
            tracing::error!(%status, user = %c.username, "Keystone refused the service user's credentials");
            return Err(AuthFailure::Unavailable(format!(
                "Keystone answered {status} to the service user's authentication"
            )));
        }
        let token = resp
            .headers()
            .get("x-subject-token")
            .and_then(|v| v.to_str().ok())
            .map(Secret::new)
            .ok_or_else(|| AuthFailure::Unavailable("Keystone issued no service token".into()))?;
        #[derive(serde::Deserialize)]
        struct Issued {
            token: IssuedToken,
        }
        #[derive(serde::Deserialize)]
        struct IssuedToken {
            expires_at: DateTime<Utc>,
        }
        let body = resp
            .bytes()
            .await
            .map_err(|e| unavailable("reading the service token", &e))?;
        let unreadable = |e: serde_json::Error| {
            AuthFailure::Unavailable(format!("Keystone's service token could not be read: {e}"))
        };
        let issued: Issued = serde_json::from_slice(&body).map_err(unreadable)?;
        let catalog = ServiceCatalog::from_token_body(&body).map_err(unreadable)?;
        tracing::info!(user = %c.username, expires_at = %issued.token.expires_at, "service token issued");
        Ok(ServiceToken {
            token,
            expires_at: issued.token.expires_at,
            catalog: Arc::new(catalog),
        })
    }

    fn reject(&self) -> Response {
        let body = json!({"error": {
            "code": 401,
            "title": "Unauthorized",
            "message": "The request you have made requires authentication.",
        }});
        let mut resp = (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
        let challenge = format!("Keystone uri=\"{}\"", self.config.authenticate_uri());
        if let Ok(v) = HeaderValue::from_str(&challenge) {
            resp.headers_mut().insert("www-authenticate", v);
        }
        resp
    }
}

fn unavailable(doing: &str, e: &reqwest::Error) -> AuthFailure {
    // reqwest's errors name the URL, never the headers carrying tokens.
    tracing::warn!(error = %stale_connection::chain(e), "Keystone unreachable while {doing}");
    AuthFailure::Unavailable(format!("Keystone is unreachable ({doing})"))
}

/// Magnum's public routes (`acl_public_routes = /, /v1`), matched like its
/// `AuthTokenMiddleware`: on the raw path without trailing slashes, `.json` allowed.
#[async_trait::async_trait]
impl crate::openstack::ServiceIdentity for KeystoneAuth {
    async fn service_caller(&self) -> Result<Caller, crate::openstack::CallError> {
        KeystoneAuth::service_caller(self)
            .await
            .map_err(|e| match e {
                AuthFailure::Unauthorized => crate::openstack::CallError::Forbidden,
                AuthFailure::Unavailable(why) => crate::openstack::CallError::Unavailable(why),
            })
    }
}

pub fn is_public_path(path: &str) -> bool {
    let trimmed = path.trim_end_matches('/');
    let p = if trimmed.is_empty() { "/" } else { trimmed };
    let p = p.strip_suffix(".json").unwrap_or(p);
    p == "/" || p == "/v1"
}

/// The middleware: authenticates every non-public request when keystone auth is on. Its
/// state is its own: the token validator, or none in noauth mode.
pub async fn layer(
    State(keystone): State<Option<std::sync::Arc<KeystoneAuth>>>,
    mut req: Request,
    next: Next,
) -> Response {
    let Some(auth) = keystone.as_ref() else {
        return next.run(req).await;
    };
    if is_public_path(req.uri().path()) {
        return next.run(req).await;
    }
    let token = req
        .headers()
        .get("x-auth-token")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned);
    let Some(token) = token else {
        return auth.reject();
    };
    match auth.authenticate(&token).await {
        Ok(who) => {
            let mut ctx = who.context;
            ctx.caller = Some(Caller {
                token: Secret::new(token),
                catalog: who.catalog,
                expires_at: Some(who.expires_at),
            });
            req.extensions_mut().insert(ctx);
            next.run(req).await
        }
        Err(AuthFailure::Unauthorized) => auth.reject(),
        Err(AuthFailure::Unavailable(why)) => ApiError::ServiceUnavailable(why).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_version_documents_are_public() {
        for p in ["/", "", "/v1", "/v1/", "/v1.json", "/.json"] {
            assert!(is_public_path(p), "{p}");
        }
        for p in ["/v1/clusters", "/clusters", "/v2", "/v1/clustertemplates/"] {
            assert!(!is_public_path(p), "{p}");
        }
    }
}
