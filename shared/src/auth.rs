//! Who is calling: the identity that API Gateway's JWT authorizer verified.
//!
//! The authorizer has already checked the token's signature, issuer, audience and expiry; the
//! function only reads the claims it passed in `requestContext.authorizer.jwt.claims`. The
//! identity never comes from the body or the path.

use crate::http::ApiError;
use crate::ids::UserId;
use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};

/// The group whose members may operate sales.
pub const ADMIN_GROUP: &str = "admin";

/// The verified caller of a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    pub user_id: UserId,
    pub groups: Vec<String>,
}

impl Caller {
    /// The caller of a route behind the JWT authorizer. A request without claims can only
    /// reach a function through a misconfigured route; it is refused as unauthenticated.
    pub fn from_request(request: &Request) -> Result<Self, ApiError> {
        let claims = match request.request_context_ref() {
            Some(RequestContext::ApiGatewayV2(context)) => context
                .authorizer
                .as_ref()
                .and_then(|authorizer| authorizer.jwt.as_ref())
                .map(|jwt| &jwt.claims),
            _ => None,
        };
        let claims = claims.ok_or_else(ApiError::unauthenticated)?;
        let sub = claims.get("sub").ok_or_else(ApiError::unauthenticated)?;
        let user_id = UserId::parse(sub).map_err(|_| ApiError::unauthenticated())?;
        crate::http::record_id("caller", &user_id);
        let groups = claims
            .get("cognito:groups")
            .map(|raw| parse_groups(raw))
            .unwrap_or_default();
        Ok(Self { user_id, groups })
    }

    pub fn is_admin(&self) -> bool {
        self.groups.iter().any(|group| group == ADMIN_GROUP)
    }

    /// Refuses a caller who is not an operator.
    pub fn require_admin(&self) -> Result<(), ApiError> {
        if self.is_admin() {
            Ok(())
        } else {
            Err(ApiError::forbidden())
        }
    }
}

/// HTTP APIs flatten a list claim into one string, as `[admin buyers]`; a JSON array or a
/// comma-separated list are accepted too, since other issuers and emulators produce them.
fn parse_groups(raw: &str) -> Vec<String> {
    let raw = raw.trim();
    if let Ok(list) = serde_json::from_str::<Vec<String>>(raw) {
        return list;
    }
    raw.trim_start_matches('[')
        .trim_end_matches(']')
        .split(|c: char| c == ',' || c.is_whitespace())
        .map(|group| group.trim_matches('"'))
        .filter(|group| !group.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use lambda_http::http::StatusCode;
    use serde_json::json;

    fn request_with_authorizer(authorizer: serde_json::Value) -> Request {
        crate::testing::api_request("PUT", "/users/me", "", authorizer)
    }

    #[test]
    fn the_caller_is_the_sub_claim_with_its_groups() {
        let request = request_with_authorizer(json!({
            "jwt": {"claims": {"sub": "alice", "cognito:groups": "[admin buyers]"}, "scopes": null}
        }));
        let caller = Caller::from_request(&request).unwrap();
        assert_eq!(caller.user_id.as_str(), "alice");
        assert_eq!(caller.groups, ["admin", "buyers"]);
        assert!(caller.is_admin());
    }

    #[test]
    fn a_user_without_groups_is_not_an_admin() {
        let request = request_with_authorizer(json!({"jwt": {"claims": {"sub": "bob"}}}));
        let caller = Caller::from_request(&request).unwrap();
        assert!(caller.groups.is_empty());
        assert_eq!(
            caller.require_admin().unwrap_err().status(),
            StatusCode::FORBIDDEN
        );
    }

    #[test]
    fn a_request_without_claims_is_unauthenticated() {
        let request = request_with_authorizer(json!(null));
        let err = Caller::from_request(&request).unwrap_err();
        assert_eq!(err.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(err.code(), "UNAUTHENTICATED");
    }

    #[test]
    fn a_sub_that_is_not_a_valid_id_is_unauthenticated() {
        let request = request_with_authorizer(json!({"jwt": {"claims": {"sub": "a#b"}}}));
        assert_eq!(
            Caller::from_request(&request).unwrap_err().status(),
            StatusCode::UNAUTHORIZED
        );
    }

    #[test]
    fn groups_come_in_several_spellings() {
        assert_eq!(parse_groups("[admin]"), ["admin"]);
        assert_eq!(parse_groups(r#"["admin","ops"]"#), ["admin", "ops"]);
        assert_eq!(parse_groups("admin, ops"), ["admin", "ops"]);
        assert!(parse_groups("[]").is_empty());
    }
}
