//! HTTP entry points of the social routes: translate the request, call the domain, answer.

use super::profile::{DisplayName, ProfileStore};
use crate::auth::Caller;
use crate::http::{ApiError, json, parse_body};
use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PutProfileBody {
    display_name: String,
}

/// `PUT /users/me`: creates or renames the caller's profile and answers with it.
#[tracing::instrument(skip_all)]
pub async fn put_profile(
    store: &dyn ProfileStore,
    request: Request,
) -> Result<Response<Body>, ApiError> {
    let caller = Caller::from_request(&request)?;
    let body: PutProfileBody = parse_body(&request)?;
    let name = DisplayName::parse(&body.display_name)
        .map_err(|err| ApiError::bad_request(err.to_string()))?;
    let now = crate::clock::now_rfc3339();
    let profile = store
        .upsert_profile(&caller.user_id, &name, &now)
        .await
        .map_err(ApiError::internal)?;
    Ok(json(StatusCode::OK, &profile))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::UserId;
    use crate::social::profile::{Profile, StoreError, UserStatus};
    use crate::testing::{api_request, claims_of};
    use async_trait::async_trait;
    use serde_json::{Value, json};
    use std::collections::HashMap;
    use std::sync::Mutex;

    /// Profiles in memory, with the store's semantics: a rename keeps counters and status.
    #[derive(Default)]
    struct MemoryProfiles(Mutex<HashMap<UserId, Profile>>);

    #[async_trait]
    impl ProfileStore for MemoryProfiles {
        async fn upsert_profile(
            &self,
            user: &UserId,
            name: &DisplayName,
            now: &str,
        ) -> Result<Profile, StoreError> {
            let mut profiles = self.0.lock().unwrap();
            let profile = profiles.entry(user.clone()).or_insert_with(|| Profile {
                user_id: user.clone(),
                display_name: String::new(),
                following_count: 0,
                follower_count: 0,
                status: UserStatus::Active,
                created_at: now.to_owned(),
            });
            profile.display_name = name.as_str().to_owned();
            Ok(profile.clone())
        }
    }

    async fn put(store: &MemoryProfiles, body: &str, authorizer: Value) -> (u16, Value) {
        let request = api_request("PUT", "/users/me", body, authorizer);
        let response = match put_profile(store, request).await {
            Ok(response) => response,
            Err(err) => err.into_response(),
        };
        let body = serde_json::from_slice(response.body().as_ref()).unwrap();
        (response.status().as_u16(), body)
    }

    #[tokio::test]
    async fn the_caller_creates_then_renames_their_own_profile() {
        let store = MemoryProfiles::default();
        let (status, body) = put(&store, r#"{"displayName": " Ada "}"#, claims_of("ada")).await;
        assert_eq!(status, 200);
        assert_eq!(body["userId"], "ada");
        assert_eq!(body["displayName"], "Ada");
        assert_eq!(body["followingCount"], 0);
        assert_eq!(body["status"], "ACTIVE");
        let created_at = body["createdAt"].clone();

        let (status, body) = put(&store, r#"{"displayName": "Countess"}"#, claims_of("ada")).await;
        assert_eq!(status, 200);
        assert_eq!(body["displayName"], "Countess");
        assert_eq!(body["createdAt"], created_at);
    }

    #[tokio::test]
    async fn bad_bodies_are_400_with_a_message() {
        let store = MemoryProfiles::default();
        for body in [
            "",
            "{",
            r#"{"displayName": 7}"#,
            r#"{"displayName": "  "}"#,
            r#"{"displayName": "a", "userId": "mallory"}"#,
        ] {
            let (status, answer) = put(&store, body, claims_of("ada")).await;
            assert_eq!(status, 400, "{body}");
            assert_eq!(answer["error"]["code"], "BAD_REQUEST");
            assert!(!answer["error"]["message"].as_str().unwrap().is_empty());
        }
        assert!(store.0.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn without_claims_the_answer_is_401_and_nothing_is_written() {
        let store = MemoryProfiles::default();
        let (status, body) = put(&store, r#"{"displayName": "Eve"}"#, json!(null)).await;
        assert_eq!(status, 401);
        assert_eq!(body["error"]["code"], "UNAUTHENTICATED");
        assert!(store.0.lock().unwrap().is_empty());
    }
}
