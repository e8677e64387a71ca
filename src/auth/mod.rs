//! Who is calling. In `noauth` mode the identity comes from the headers keystonemiddleware
//! would set (`X-User-Id`, `X-Project-Id`, `X-Roles`, …), as Magnum's `ContextHook` reads them,
//! on a loopback address only for requests addressed to it ([`loopback_host`]); in
//! `keystone` mode from the validated token ([`keystone`]).

pub mod keystone;
pub mod loopback_host;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::HeaderMap;

use crate::error::ApiError;
use crate::model::RequestContext;
use crate::policy::Credentials;
use crate::state::AppState;

fn header(h: &HeaderMap, name: &str) -> Option<String> {
    h.get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

/// The longest identity value a header may carry: Magnum's `project_id` and `user_id`
/// columns are `VARCHAR(255)`, as are Keystone's names.
pub const IDENTITY_MAX: usize = 255;

/// The longest `X-Roles` list.
pub const ROLES_MAX: usize = 4096;

/// The identity headers of noauth mode and their bounds.
const IDENTITY_HEADERS: [(&str, usize); 10] = [
    ("X-User-Id", IDENTITY_MAX),
    ("X-User-Name", IDENTITY_MAX),
    ("X-Project-Id", IDENTITY_MAX),
    ("X-Tenant-Id", IDENTITY_MAX),
    ("X-Project-Name", IDENTITY_MAX),
    ("X-User-Domain-Id", IDENTITY_MAX),
    ("X-User-Domain-Name", IDENTITY_MAX),
    ("X-Project-Domain-Id", IDENTITY_MAX),
    ("OpenStack-System-Scope", IDENTITY_MAX),
    ("X-Roles", ROLES_MAX),
];

/// Refuses identity headers longer than their bound (400, before anything is read or
/// written): an id longer than Magnum's columns would fail the write on MariaDB, or be
/// stored on SQLite where Magnum could not read it back.
pub fn check_identity_bounds(h: &HeaderMap) -> Result<(), ApiError> {
    for (name, max) in IDENTITY_HEADERS {
        if let Some(v) = h.get(name) {
            if v.len() > max {
                return Err(ApiError::InvalidParameterValue(format!(
                    "The {name} header is longer than {max} characters."
                )));
            }
        }
    }
    Ok(())
}

/// Builds the request context from identity headers.
pub fn context_from_headers(h: &HeaderMap) -> RequestContext {
    let roles = header(h, "x-roles")
        .map(|r| {
            r.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default();
    RequestContext {
        user_id: header(h, "x-user-id"),
        user_name: header(h, "x-user-name"),
        project_id: header(h, "x-project-id").or_else(|| header(h, "x-tenant-id")),
        project_name: header(h, "x-project-name"),
        domain_id: header(h, "x-user-domain-id"),
        domain_name: header(h, "x-user-domain-name"),
        project_domain_id: header(h, "x-project-domain-id"),
        roles,
        system_scope: header(h, "openstack-system-scope"),
        domain_scope: None,
        is_admin: false,
        caller: None,
    }
}

impl RequestContext {
    pub fn credentials(&self) -> Credentials {
        Credentials {
            user_id: self.user_id.clone(),
            project_id: self.project_id.clone(),
            domain_id: self.domain_id.clone(),
            project_domain_id: self.project_domain_id.clone(),
            roles: self.roles.clone(),
            system_scope: self.system_scope.clone(),
            domain_scope: self.domain_scope.clone(),
            is_admin: self.is_admin,
        }
    }
}

impl FromRequestParts<AppState> for RequestContext {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        // An authenticating layer (keystone mode) leaves the context it built; otherwise the
        // identity headers are trusted (noauth).
        let mut ctx = match parts.extensions.get::<RequestContext>() {
            Some(ctx) => ctx.clone(),
            // Fail closed: in keystone mode only the token layer makes identities.
            None if state.keystone.is_some() => {
                return Err(ApiError::ServiceUnavailable(
                    "the request was not authenticated".into(),
                ))
            }
            None => {
                let config = &state.config;
                if loopback_host::applies(config) {
                    loopback_host::check(&parts.headers, &config.noauth.allowed_hosts)?;
                }
                check_identity_bounds(&parts.headers)?;
                let mut ctx = context_from_headers(&parts.headers);
                if ctx.project_id.is_none() && ctx.user_id.is_none() && ctx.roles.is_empty() {
                    let d = &state.config.noauth;
                    ctx.project_id = Some(d.project_id.clone());
                    ctx.user_id = Some(d.user_id.clone());
                    ctx.roles = d.roles.clone();
                }
                ctx
            }
        };
        ctx.is_admin = state.policy.is_admin(&ctx.credentials());
        Ok(ctx)
    }
}
