//! Who is calling: the identity that API Gateway's JWT authorizer verified.
//!
//! The authorizer has already checked the token's signature, issuer, audience and expiry; the
//! function only reads the claims it passed in `requestContext.authorizer.jwt.claims`. The
//! identity never comes from the body or the path.
//!
//! One exception, for `sam local start-api`: SAM CLI runs no HTTP API JWT authorizer, so every
//! request reaches the function without claims. Where SAM runs a function it sets
//! `AWS_SAM_LOCAL=true`, which Lambda never does and which the template never sets (a contract
//! test reads it); there, and only there, a request without claims has its bearer token
//! verified here, as a local token ([`crate::local_token`], signed with the public development
//! secret that `make token` uses). Anywhere else such a request stays unauthenticated.

use crate::http::ApiError;
use crate::ids::UserId;
use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};
use std::sync::OnceLock;

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
    /// reach a function through a misconfigured route, or under `sam local` (see the module's
    /// documentation); anywhere else it is refused as unauthenticated.
    pub fn from_request(request: &Request) -> Result<Self, ApiError> {
        Self::from_request_in(request, under_sam_local())
    }

    fn from_request_in(request: &Request, sam_local: bool) -> Result<Self, ApiError> {
        let claims = match request.request_context_ref() {
            Some(RequestContext::ApiGatewayV2(context)) => context
                .authorizer
                .as_ref()
                .and_then(|authorizer| authorizer.jwt.as_ref())
                .map(|jwt| &jwt.claims),
            _ => None,
        };
        // SAM may pass an authorizer without claims: what counts is whether one verified a sub.
        let verified = claims.and_then(|claims| {
            let groups = claims
                .get("cognito:groups")
                .map(|raw| parse_groups(raw))
                .unwrap_or_default();
            claims.get("sub").map(|sub| (sub.clone(), groups))
        });
        let (sub, groups) = match verified {
            Some(verified) => verified,
            None if sam_local => local_token_claims(request)?,
            None => return Err(ApiError::unauthenticated()),
        };
        let user_id = UserId::parse(&sub).map_err(|_| ApiError::unauthenticated())?;
        crate::http::record_id("caller", &user_id);
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

/// Whether SAM CLI runs this process (`AWS_SAM_LOCAL=true`), read once.
fn under_sam_local() -> bool {
    static SAM_LOCAL: OnceLock<bool> = OnceLock::new();
    *SAM_LOCAL.get_or_init(|| std::env::var("AWS_SAM_LOCAL").is_ok_and(|value| value == "true"))
}

/// The `sub` and groups of the request's bearer token, verified as a local token; a missing or
/// bad token is unauthenticated, as API Gateway's authorizer would answer.
fn local_token_claims(request: &Request) -> Result<(String, Vec<String>), ApiError> {
    let token = request
        .headers()
        .get(lambda_http::http::header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .ok_or_else(ApiError::unauthenticated)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs() as i64;
    let claims = crate::local_token::verify(
        crate::local_token::DEFAULT_LOCAL_SECRET.as_bytes(),
        token.trim(),
        now,
    )
    .map_err(|_| ApiError::unauthenticated())?;
    let sub = claims
        .get("sub")
        .and_then(|sub| sub.as_str())
        .ok_or_else(ApiError::unauthenticated)?
        .to_owned();
    let groups = match claims.get("cognito:groups") {
        Some(serde_json::Value::Array(groups)) => groups
            .iter()
            .filter_map(|group| group.as_str().map(str::to_owned))
            .collect(),
        Some(serde_json::Value::String(raw)) => parse_groups(raw),
        _ => Vec::new(),
    };
    Ok((sub, groups))
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
        assert_eq!(err.code(), crate::error_code::ErrorCode::Unauthenticated);
    }

    #[test]
    fn a_sub_that_is_not_a_valid_id_is_unauthenticated() {
        let request = request_with_authorizer(json!({"jwt": {"claims": {"sub": "a#b"}}}));
        assert_eq!(
            Caller::from_request(&request).unwrap_err().status(),
            StatusCode::UNAUTHORIZED
        );
    }

    fn request_with_bearer(token: &str) -> Request {
        let mut request = request_with_authorizer(json!(null));
        request.headers_mut().insert(
            lambda_http::http::header::AUTHORIZATION,
            format!("Bearer {token}").parse().unwrap(),
        );
        request
    }

    fn local_token(sub: &str, groups: &[&str]) -> String {
        let groups: Vec<String> = groups.iter().map(|g| (*g).to_owned()).collect();
        crate::local_token::local_token(
            crate::local_token::DEFAULT_LOCAL_SECRET.as_bytes(),
            sub,
            &groups,
            std::time::Duration::from_secs(60),
        )
        .unwrap()
    }

    #[test]
    fn a_valid_local_token_without_claims_is_refused_outside_sam_local() {
        let request = request_with_bearer(&local_token("ada", &["admin"]));
        let err = Caller::from_request_in(&request, false).unwrap_err();
        assert_eq!(err.status(), StatusCode::UNAUTHORIZED);
        // The process running this test is not under SAM either.
        assert_eq!(
            Caller::from_request(&request).unwrap_err().status(),
            StatusCode::UNAUTHORIZED
        );
    }

    #[test]
    fn under_sam_local_the_bearer_token_is_verified_as_a_local_token() {
        let request = request_with_bearer(&local_token("ada", &["admin"]));
        let caller = Caller::from_request_in(&request, true).unwrap();
        assert_eq!(caller.user_id.as_str(), "ada");
        assert!(caller.is_admin());

        let buyer = request_with_bearer(&local_token("bea", &[]));
        let caller = Caller::from_request_in(&buyer, true).unwrap();
        assert_eq!(caller.user_id.as_str(), "bea");
        assert!(!caller.is_admin());
    }

    #[test]
    fn under_sam_local_a_bad_or_missing_token_is_still_unauthenticated() {
        let forged = crate::local_token::local_token(
            b"not-the-local-secret",
            "mallory",
            &["admin".to_owned()],
            std::time::Duration::from_secs(60),
        )
        .unwrap();
        for request in [
            request_with_authorizer(json!(null)),
            request_with_bearer(&forged),
            request_with_bearer("not.a.token"),
        ] {
            assert_eq!(
                Caller::from_request_in(&request, true)
                    .unwrap_err()
                    .status(),
                StatusCode::UNAUTHORIZED
            );
        }
    }

    #[test]
    fn claims_from_the_authorizer_win_under_sam_local_too() {
        let mut request =
            request_with_authorizer(json!({"jwt": {"claims": {"sub": "bob"}, "scopes": null}}));
        request.headers_mut().insert(
            lambda_http::http::header::AUTHORIZATION,
            format!("Bearer {}", local_token("ada", &["admin"]))
                .parse()
                .unwrap(),
        );
        let caller = Caller::from_request_in(&request, true).unwrap();
        assert_eq!(caller.user_id.as_str(), "bob");
        assert!(!caller.is_admin());
    }

    #[test]
    fn groups_come_in_several_spellings() {
        assert_eq!(parse_groups("[admin]"), ["admin"]);
        assert_eq!(parse_groups(r#"["admin","ops"]"#), ["admin", "ops"]);
        assert_eq!(parse_groups("admin, ops"), ["admin", "ops"]);
        assert!(parse_groups("[]").is_empty());
    }
}
