//! Policy enforcement for handlers: Magnum's `policy.enforce(context, action, target)`.

use crate::error::{ApiError, ApiResult};
use crate::model::RequestContext;
use crate::policy::Target;
use crate::state::AppState;

/// Enforces `action` against a resource owned by `project_id`/`user_id`.
pub fn enforce_on(
    state: &AppState,
    ctx: &RequestContext,
    action: &str,
    project_id: Option<&str>,
    user_id: Option<&str>,
) -> ApiResult<()> {
    let mut target = Target::new();
    if let Some(p) = project_id {
        target.insert("project_id", p.to_string());
    }
    if let Some(u) = user_id {
        target.insert("user_id", u.to_string());
    }
    check(state, ctx, action, &target)
}

/// Enforces `action` with Magnum's default target (the caller's own project and user).
pub fn enforce(state: &AppState, ctx: &RequestContext, action: &str) -> ApiResult<()> {
    let creds = ctx.credentials();
    check(state, ctx, action, &Target::for_credentials(&creds))
}

fn check(state: &AppState, ctx: &RequestContext, action: &str, target: &Target) -> ApiResult<()> {
    state
        .policy
        .enforce(action, target, &ctx.credentials())
        .map_err(|d| ApiError::PolicyNotAuthorized(d.action))
}

/// Magnum's admin pattern: an admin must pass the `*_all_projects` rule and then sees every
/// project (`context.all_tenants = True`); others see their own.
pub fn admin_all_tenants(
    state: &AppState,
    ctx: &RequestContext,
    all_projects_rule: &str,
) -> ApiResult<bool> {
    if ctx.is_admin {
        enforce(state, ctx, all_projects_rule)?;
        Ok(true)
    } else {
        Ok(false)
    }
}
