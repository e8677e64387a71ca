//! The body of `GET /v3/auth/tokens` (a validated token) turned into a request identity,
//! the way keystonemiddleware turns it into `X-User-Id`, `X-Project-Id`, `X-Roles`, ….

use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::model::RequestContext;

#[derive(Deserialize)]
struct Body {
    token: Token,
}

#[derive(Deserialize)]
struct Token {
    user: Named,
    expires_at: DateTime<Utc>,
    #[serde(default)]
    project: Option<Named>,
    #[serde(default)]
    domain: Option<Ref>,
    #[serde(default)]
    system: Option<serde_json::Map<String, serde_json::Value>>,
    /// Effective roles: Keystone already includes the implied ones (member ⇒ reader).
    #[serde(default)]
    roles: Vec<Ref>,
}

#[derive(Deserialize)]
struct Named {
    id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    domain: Option<Ref>,
}

#[derive(Deserialize)]
struct Ref {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
}

/// A validated token: who it speaks for, and until when.
#[derive(Clone, Debug)]
pub struct Validated {
    pub context: RequestContext,
    pub expires_at: DateTime<Utc>,
}

/// Why a validated token is still not accepted.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// keystonemiddleware passes unscoped tokens on with no project and no roles; magnum-rs
    /// refuses them: every Magnum rule needs a scope.
    #[error("unscoped token")]
    Unscoped,
    #[error("expired token")]
    Expired,
}

/// Parses Keystone's validation response.
pub fn parse(body: &[u8]) -> Result<ValidationBody, serde_json::Error> {
    serde_json::from_slice::<Body>(body).map(ValidationBody)
}

/// A parsed validation response (opaque outside this module).
pub struct ValidationBody(Body);

impl ValidationBody {
    /// The identity, or why the token is refused.
    pub fn identity(self, now: DateTime<Utc>) -> Result<Validated, Refusal> {
        let t = self.0.token;
        if t.expires_at <= now {
            return Err(Refusal::Expired);
        }
        let system_scope = t.system.as_ref().and_then(|s| {
            s.iter()
                .find(|(_, v)| v.as_bool() == Some(true))
                .map(|(k, _)| k.clone())
        });
        let domain_scope = t.domain.as_ref().and_then(|d| d.id.clone());
        if t.project.is_none() && system_scope.is_none() && domain_scope.is_none() {
            return Err(Refusal::Unscoped);
        }
        let user_domain = t.user.domain.as_ref();
        let project = t.project.as_ref();
        let context = RequestContext {
            user_id: Some(t.user.id.clone()),
            user_name: t.user.name.clone(),
            project_id: project.map(|p| p.id.clone()),
            project_name: project.and_then(|p| p.name.clone()),
            domain_id: user_domain.and_then(|d| d.id.clone()),
            domain_name: user_domain.and_then(|d| d.name.clone()),
            project_domain_id: project.and_then(|p| p.domain.as_ref()?.id.clone()),
            roles: t.roles.into_iter().filter_map(|r| r.name).collect(),
            system_scope,
            domain_scope,
            is_admin: false,
            caller: None,
        };
        Ok(Validated {
            context,
            expires_at: t.expires_at,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        "2026-12-02T13:30:00Z".parse().expect("time")
    }

    const PROJECT_TOKEN: &str = r#"{"token": {"methods": ["password"],
      "user": {"domain": {"id": "default", "name": "Default"}, "id": "u-demo", "name": "demo", "password_expires_at": null},
      "audit_ids": ["Wlz1ql49QoiwJ8NStHrnOg"], "expires_at": "2026-12-02T14:20:47.000000Z",
      "issued_at": "2026-12-02T13:20:47.000000Z",
      "project": {"domain": {"id": "default", "name": "Default"}, "id": "p-demo", "name": "demo"},
      "is_domain": false,
      "roles": [{"id": "b9e8", "name": "member"}, {"id": "afa4", "name": "reader"}]}}"#;

    #[test]
    fn a_project_token_gives_user_project_and_implied_roles() {
        let v = parse(PROJECT_TOKEN.as_bytes())
            .expect("parses")
            .identity(now())
            .expect("accepted");
        let c = v.context;
        assert_eq!(c.user_id.as_deref(), Some("u-demo"));
        assert_eq!(c.user_name.as_deref(), Some("demo"));
        assert_eq!(c.project_id.as_deref(), Some("p-demo"));
        assert_eq!(c.project_name.as_deref(), Some("demo"));
        assert_eq!(c.domain_id.as_deref(), Some("default"));
        assert_eq!(c.project_domain_id.as_deref(), Some("default"));
        assert_eq!(c.roles, vec!["member", "reader"]);
        assert_eq!(c.system_scope, None);
        assert_eq!(v.expires_at.to_rfc3339(), "2026-12-02T14:20:47+00:00");
    }

    #[test]
    fn a_system_token_has_system_scope_all_and_no_project() {
        let body = r#"{"token": {"methods": ["password"], "user": {"domain": {"id": "default", "name": "Default"}, "id": "u-admin", "name": "admin"},
          "expires_at": "2026-12-02T14:20:47.000000Z", "system": {"all": true},
          "roles": [{"id": "1", "name": "admin"}, {"id": "2", "name": "manager"}, {"id": "3", "name": "member"}, {"id": "4", "name": "reader"}]}}"#;
        let c = parse(body.as_bytes())
            .expect("parses")
            .identity(now())
            .expect("accepted")
            .context;
        assert_eq!(c.system_scope.as_deref(), Some("all"));
        assert_eq!(c.project_id, None);
        assert_eq!(c.roles.len(), 4);
    }

    #[test]
    fn an_unscoped_token_is_refused() {
        let body = r#"{"token": {"methods": ["password"], "user": {"domain": {"id": "default", "name": "Default"}, "id": "u-admin", "name": "admin"},
          "expires_at": "2026-12-02T14:20:47.000000Z", "issued_at": "2026-12-02T13:20:47.000000Z"}}"#;
        let r = parse(body.as_bytes()).expect("parses").identity(now());
        assert_eq!(r.err(), Some(Refusal::Unscoped));
    }

    #[test]
    fn a_token_past_its_expiry_is_refused() {
        let later: DateTime<Utc> = "2026-12-02T14:20:47Z".parse().expect("time");
        let r = parse(PROJECT_TOKEN.as_bytes())
            .expect("parses")
            .identity(later);
        assert_eq!(r.err(), Some(Refusal::Expired));
    }

    #[test]
    fn a_domain_token_has_domain_scope() {
        let body = r#"{"token": {"user": {"id": "u", "name": "x", "domain": {"id": "default"}},
          "expires_at": "2026-12-02T14:20:47.000000Z", "domain": {"id": "default", "name": "Default"},
          "roles": [{"id": "1", "name": "admin"}]}}"#;
        let c = parse(body.as_bytes())
            .expect("parses")
            .identity(now())
            .expect("accepted")
            .context;
        assert_eq!(c.domain_scope.as_deref(), Some("default"));
        assert_eq!(c.project_id, None);
    }
}
