//! HTTP entry points of the social routes: translate the request, call the domain, answer.

use super::follow::{
    self, Direction, FollowError, FollowLimits, FollowState, GraphStore, Relationship,
};
use super::profile::{DisplayName, ProfileStore};
use crate::auth::Caller;
use crate::error_code::ErrorCode;
use crate::http::{ApiError, json, page_query, parse_body, path_id};
use crate::ids::UserId;
use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PutProfileBody {
    display_name: String,
}

/// `PUT /users/me`: creates or renames the caller's profile and answers with it.
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

impl From<FollowError> for ApiError {
    fn from(err: FollowError) -> Self {
        let message = err.to_string();
        match err {
            FollowError::SelfFollow => {
                ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::SelfFollow, message)
            }
            FollowError::UnknownUser(_) => ApiError::not_found(message),
            FollowError::TargetInactive(_) => {
                ApiError::conflict(ErrorCode::TargetInactive, message)
            }
            FollowError::ProfileRequired => ApiError::conflict(ErrorCode::ProfileRequired, message),
            FollowError::RateLimited { .. } => ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                ErrorCode::RateLimited,
                message,
            ),
            FollowError::FollowingLimitReached { .. } => {
                ApiError::conflict(ErrorCode::FollowingLimitReached, message)
            }
            FollowError::Busy => ApiError::unavailable(ErrorCode::Retry, message),
            FollowError::InvalidCursor(_) => ApiError::bad_request(message),
            FollowError::Store(err) => ApiError::internal(err),
        }
    }
}

/// The `{userId}` of the path.
fn path_user(request: &Request) -> Result<UserId, ApiError> {
    path_id(request, "userId", "target", UserId::parse)
}

/// `GET /users/{userId}`: a user's profile.
pub async fn get_user(
    store: &dyn ProfileStore,
    request: Request,
) -> Result<Response<Body>, ApiError> {
    Caller::from_request(&request)?;
    let user = path_user(&request)?;
    let profile = follow::profile(store, &user).await?;
    Ok(json(StatusCode::OK, &profile))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FollowBody<'a> {
    follower_id: &'a UserId,
    followee_id: &'a UserId,
    following: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    followed_at: Option<&'a str>,
}

fn follow_response(state: &FollowState) -> Response<Body> {
    json(
        StatusCode::OK,
        &FollowBody {
            follower_id: &state.relationship.follower,
            followee_id: &state.relationship.followee,
            following: state.followed_at.is_some(),
            followed_at: state.followed_at.as_deref(),
        },
    )
}

fn relationship(request: &Request) -> Result<Relationship, ApiError> {
    let caller = Caller::from_request(request)?;
    let target = path_user(request)?;
    Ok(Relationship::new(caller.user_id, target)?)
}

/// `PUT /users/{userId}/follow`: the caller follows the user; idempotent; within `limits`.
pub async fn follow(
    store: &dyn GraphStore,
    limits: &FollowLimits,
    request: Request,
) -> Result<Response<Body>, ApiError> {
    let relationship = relationship(&request)?;
    let state = follow::follow(store, &relationship, limits, OffsetDateTime::now_utc()).await?;
    Ok(follow_response(&state))
}

/// `DELETE /users/{userId}/follow`: the caller stops following the user; idempotent; within
/// `limits`' rate.
pub async fn unfollow(
    store: &dyn GraphStore,
    limits: &FollowLimits,
    request: Request,
) -> Result<Response<Body>, ApiError> {
    let relationship = relationship(&request)?;
    let state = follow::unfollow(store, &relationship, limits, OffsetDateTime::now_utc()).await?;
    Ok(follow_response(&state))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ListBody {
    items: Vec<ListItem>,
    next_cursor: Option<String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ListItem {
    user_id: UserId,
    display_name: Option<String>,
    followed_at: String,
}

async fn list(
    store: &dyn GraphStore,
    request: Request,
    direction: Direction,
) -> Result<Response<Body>, ApiError> {
    Caller::from_request(&request)?;
    let user = path_user(&request)?;
    let (limit, cursor) = page_query(&request)?;
    let page = follow::list(store, &user, direction, limit, cursor.as_ref()).await?;
    let body = ListBody {
        items: page
            .items
            .into_iter()
            .map(|item| ListItem {
                user_id: item.user_id,
                display_name: item.display_name,
                followed_at: item.followed_at,
            })
            .collect(),
        next_cursor: page.next.map(|cursor| cursor.encode()),
    };
    Ok(json(StatusCode::OK, &body))
}

/// `GET /users/{userId}/followers?limit=&cursor=`: who follows the user, newest first.
pub async fn list_followers(
    store: &dyn GraphStore,
    request: Request,
) -> Result<Response<Body>, ApiError> {
    list(store, request, Direction::Followers).await
}

/// `GET /users/{userId}/following?limit=&cursor=`: whom the user follows, newest first.
pub async fn list_following(
    store: &dyn GraphStore,
    request: Request,
) -> Result<Response<Body>, ApiError> {
    list(store, request, Direction::Following).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::social::follow::fake::MemoryGraph;
    use crate::testing::{answer, api_request, assert_refused, claims_of, logged};
    use lambda_http::RequestExt;
    use serde_json::{Value, json};
    use std::collections::HashMap;

    async fn put(store: &MemoryGraph, body: &str, authorizer: Value) -> (u16, Value) {
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
        let store = MemoryGraph::default();
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
        let store = MemoryGraph::default();
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
        assert!(store.state().profiles.is_empty());
    }

    #[tokio::test]
    async fn without_claims_the_answer_is_401_and_nothing_is_written() {
        let store = MemoryGraph::default();
        let (status, body) = put(&store, r#"{"displayName": "Eve"}"#, json!(null)).await;
        assert_eq!(status, 401);
        assert_eq!(body["error"]["code"], "UNAUTHENTICATED");
        assert!(store.state().profiles.is_empty());
    }

    fn routed(
        method: &str,
        path: &str,
        caller: &str,
        user: &str,
        query: &[(&str, &str)],
    ) -> Request {
        let params = HashMap::from([("userId".to_owned(), user.to_owned())]);
        let query: HashMap<String, String> = query
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        api_request(method, path, "", claims_of(caller))
            .with_path_parameters(params)
            .with_query_string_parameters(query)
    }

    fn graph() -> MemoryGraph {
        MemoryGraph::cast()
    }

    async fn follow_as(graph: &MemoryGraph, caller: &str, user: &str) -> (u16, Value) {
        let request = routed("PUT", "/users/x/follow", caller, user, &[]);
        answer(follow(graph, &FollowLimits::DEFAULT, request).await)
    }

    #[tokio::test]
    async fn get_user_answers_the_profile_404_or_400() {
        let graph = graph();
        let get = |user: &str| routed("GET", "/users/x", "ada", user, &[]);
        let (status, body) = answer(get_user(&graph, get("bob")).await);
        assert_eq!(status, 200);
        assert_eq!(body["userId"], "bob");
        assert_eq!(body["displayName"], "name of bob");
        assert_eq!(body["followerCount"], 0);
        assert_eq!(body["followingCount"], 0);
        assert_eq!(body["status"], "ACTIVE");
        assert!(body["createdAt"].is_string());

        let refused = answer(get_user(&graph, get("nobody")).await);
        assert_refused(&refused, 404, "NOT_FOUND", "");
        let refused = answer(get_user(&graph, get("a#b")).await);
        assert_refused(&refused, 400, "BAD_REQUEST", "userId");
    }

    #[tokio::test]
    async fn a_follow_is_logged_with_who_followed_whom() {
        let graph = graph();
        let route = |request| follow(&graph, &FollowLimits::DEFAULT, request);
        let request = routed("PUT", "/users/x/follow", "ada", "bob", &[]);
        let (response, log) = logged(async { crate::http::answer(&route, request).await }).await;
        assert_eq!(response.status(), 200);
        assert!(log.contains("request{caller=ada target=bob}"), "{log}");
    }

    #[tokio::test]
    async fn a_follow_answers_the_edge_and_again_the_same_edge() {
        let graph = graph();
        let (status, first) = follow_as(&graph, "ada", "bob").await;
        assert_eq!(status, 200);
        assert_eq!(first["followerId"], "ada");
        assert_eq!(first["followeeId"], "bob");
        assert_eq!(first["following"], true);
        assert!(first["followedAt"].as_str().unwrap().ends_with('Z'));
        let (status, again) = follow_as(&graph, "ada", "bob").await;
        assert_eq!((status, &again), (200, &first));
        assert_eq!(graph.state().outbox.len(), 1);
    }

    #[tokio::test]
    async fn follow_errors_have_their_status_and_code() {
        let graph = graph();
        for (caller, user, status, code) in [
            ("ada", "ada", 400, "SELF_FOLLOW"),
            ("ada", "nobody", 404, "NOT_FOUND"),
            ("ada", "gone", 409, "TARGET_INACTIVE"),
            ("newbie", "bob", 409, "PROFILE_REQUIRED"),
            ("ada", "not valid", 400, "BAD_REQUEST"),
        ] {
            let (got, body) = follow_as(&graph, caller, user).await;
            assert_eq!(
                (got, body["error"]["code"].as_str()),
                (status, Some(code)),
                "{user}"
            );
        }
        graph.state().conflicts = 10;
        let (status, body) = follow_as(&graph, "ada", "bob").await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (503, Some("RETRY"))
        );
        assert!(graph.state().outbox.is_empty());
    }

    #[tokio::test]
    async fn the_rate_limit_is_429_and_the_following_cap_409_each_with_its_code() {
        let graph = graph();
        let limits = |rate, max| FollowLimits {
            rate_per_minute: std::num::NonZeroU32::new(rate).unwrap(),
            max_following: std::num::NonZeroU32::new(max).unwrap(),
        };
        let call = |method: &'static str, caller: &'static str, user: &'static str, limits| {
            let graph = &graph;
            async move {
                let request = routed(method, "/users/x/follow", caller, user, &[]);
                let result = if method == "PUT" {
                    follow(graph, &limits, request).await
                } else {
                    unfollow(graph, &limits, request).await
                };
                answer(result)
            }
        };
        let (status, _) = call("PUT", "ada", "bob", limits(100, 1)).await;
        assert_eq!(status, 200);
        let refused = call("PUT", "ada", "cat", limits(100, 1)).await;
        let says = "you already follow 1 users";
        assert_refused(&refused, 409, "FOLLOWING_LIMIT_REACHED", says);
        // Three attempts of cat's: the third is over a rate of two a minute.
        for (method, status) in [("PUT", 200), ("DELETE", 200)] {
            assert_eq!(call(method, "cat", "bob", limits(2, 100)).await.0, status);
        }
        let refused = call("DELETE", "cat", "bob", limits(2, 100)).await;
        let says = "too many follows and unfollows: at most 2 a minute";
        assert_refused(&refused, 429, "RATE_LIMITED", says);
    }

    #[tokio::test]
    async fn an_unfollow_answers_not_following_and_refuses_oneself() {
        let graph = graph();
        follow_as(&graph, "ada", "bob").await;
        let unfollow_as = |caller: &str, user: &str| {
            unfollow(
                &graph,
                &FollowLimits::DEFAULT,
                routed("DELETE", "/users/x/follow", caller, user, &[]),
            )
        };
        for _ in 0..2 {
            let (status, body) = answer(unfollow_as("ada", "bob").await);
            assert_eq!(status, 200);
            assert_eq!(
                body,
                json!({"followerId": "ada", "followeeId": "bob", "following": false})
            );
        }
        let (status, body) = answer(unfollow_as("ada", "ada").await);
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (400, Some("SELF_FOLLOW"))
        );
        assert_eq!(graph.state().outbox.len(), 2);
    }

    #[tokio::test]
    async fn lists_page_with_next_cursor_and_refuse_bad_limits_and_cursors() {
        let graph = graph();
        follow_as(&graph, "ada", "bob").await;
        follow_as(&graph, "cat", "bob").await;
        let list_as = |user: &str, query: &[(&str, &str)]| {
            list_followers(
                &graph,
                routed("GET", "/users/x/followers", "ada", user, query),
            )
        };
        let (status, first) = answer(list_as("bob", &[("limit", "1")]).await);
        assert_eq!(status, 200);
        assert_eq!(first["items"].as_array().unwrap().len(), 1);
        let cursor = first["nextCursor"].as_str().unwrap().to_owned();
        let (status, second) = answer(list_as("bob", &[("limit", "1"), ("cursor", &cursor)]).await);
        assert_eq!(status, 200);
        assert_eq!(second["items"].as_array().unwrap().len(), 1);
        assert_ne!(second["items"][0]["userId"], first["items"][0]["userId"]);
        assert_eq!(second["nextCursor"], Value::Null);
        let item = &second["items"][0];
        assert!(item["displayName"].is_string() && item["followedAt"].is_string());

        for query in [[("limit", "0")], [("limit", "101")], [("limit", "x")]] {
            let (status, body) = answer(list_as("bob", &query).await);
            assert_eq!(status, 400);
            assert_eq!(
                body["error"]["message"],
                "limit must be an integer from 1 to 100"
            );
        }
        let (status, body) = answer(list_as("bob", &[("cursor", "%%%")]).await);
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (400, Some("BAD_REQUEST"))
        );
        let (status, _) = answer(list_as("nobody", &[]).await);
        assert_eq!(status, 404);

        let request = routed("GET", "/users/x/following", "ada", "ada", &[]);
        let (status, body) = answer(list_following(&graph, request).await);
        assert_eq!(status, 200);
        assert_eq!(body["items"][0]["userId"], "bob");
        assert_eq!(body["nextCursor"], Value::Null);
    }
}
