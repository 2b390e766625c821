//! HTTP entry points of the notification routes: only ever the caller's own notifications.

use super::notifications::{self, NotificationId, NotificationStore, NotificationStoreError};
use crate::auth::Caller;
use crate::http::{ApiError, json, parse_body};
use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde::{Deserialize, Serialize};
use serde_json::json as body;

/// How many ids one request may mark.
pub const MAX_IDS: usize = 100;

fn store_error(err: NotificationStoreError) -> ApiError {
    match err {
        NotificationStoreError::InvalidCursor(err) => ApiError::bad_request(err.to_string()),
        NotificationStoreError::Failed(cause) => ApiError::internal(cause),
    }
}

/// How many of the caller's notifications are unread.
async fn unread_count(store: &dyn NotificationStore, caller: &Caller) -> Result<u64, ApiError> {
    store
        .unread_count(&caller.user_id)
        .await
        .map_err(store_error)
}

/// `GET /notifications?limit=&cursor=`: the caller's notifications, newest first.
pub async fn list_notifications(
    store: &dyn NotificationStore,
    request: Request,
) -> Result<Response<Body>, ApiError> {
    let caller = Caller::from_request(&request)?;
    let (limit, cursor) = crate::http::page_query(&request)?;
    let page = store
        .page(&caller.user_id, limit, cursor.as_ref())
        .await
        .map_err(store_error)?;
    let unread = unread_count(store, &caller).await?;
    Ok(json(
        StatusCode::OK,
        &NotificationsPage {
            items: &page.items,
            unread_count: unread,
            next_cursor: page.next.map(|c| c.encode()),
        },
    ))
}

/// `GET /notifications`' answer, serialized straight from the notifications.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct NotificationsPage<'a, T> {
    items: &'a [T],
    unread_count: u64,
    next_cursor: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MarkBody {
    ids: Option<Vec<String>>,
    all: Option<bool>,
}

/// `POST /notifications/read` with `{"ids": [...]}` or `{"all": true}`. `all` marks at most
/// [`MAX_IDS`] per call, the oldest first: the answer's `unreadCount` says what is left, and
/// the client sends it again until that is 0. One call is at most two transactions.
pub async fn mark_notifications_read(
    store: &dyn NotificationStore,
    request: Request,
) -> Result<Response<Body>, ApiError> {
    let caller = Caller::from_request(&request)?;
    let ids = match parse_body::<MarkBody>(&request)? {
        MarkBody {
            ids: Some(ids),
            all: None,
        } => {
            if ids.is_empty() || ids.len() > MAX_IDS {
                return Err(ApiError::bad_request(format!(
                    "ids must hold 1 to {MAX_IDS} notification ids"
                )));
            }
            // An id that cannot be ours names nothing of the caller's: ignored, as unknown.
            ids.iter()
                .filter_map(|id| NotificationId::parse(id))
                .collect()
        }
        MarkBody {
            ids: None,
            all: Some(true),
        } => store
            .unread_ids(&caller.user_id, MAX_IDS)
            .await
            .map_err(store_error)?,
        _ => {
            return Err(ApiError::bad_request(
                r#"send either {"ids": [...]} or {"all": true}"#,
            ));
        }
    };
    let outcome = notifications::mark_read(store, &caller.user_id, ids).await;
    if !outcome.failed.is_empty() {
        // The unread count is the caller's hot item (the notification consumer writes it too):
        // conflicts that outlasted the store's retries, or an outage. Marking is idempotent,
        // so the client may simply send the request again.
        return Err(ApiError::store_unavailable(anyhow::anyhow!(
            "{} notifications could not be marked read",
            outcome.failed.len()
        )));
    }
    let unread = unread_count(store, &caller).await?;
    Ok(json(
        StatusCode::OK,
        &body!({"marked": outcome.applied.len(), "unreadCount": unread}),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consumer::Message;
    use crate::social::notifications::handle_batch;
    use crate::social::notifications::tests::{MemoryNotifications, follow};
    use crate::testing::{answer, api_request, claims_of};
    use lambda_http::RequestExt;
    use serde_json::Value;

    async fn list(store: &MemoryNotifications, user: &str, query: &str) -> (u16, Value) {
        let mut request = api_request("GET", "/notifications", "", claims_of(user));
        let pairs: std::collections::HashMap<String, String> = url_pairs(query);
        request = request.with_query_string_parameters(pairs);
        answer(list_notifications(store, request).await)
    }

    fn url_pairs(query: &str) -> std::collections::HashMap<String, String> {
        query
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    async fn mark(store: &MemoryNotifications, user: &str, body: &str) -> (u16, Value) {
        let request = api_request("POST", "/notifications/read", body, claims_of(user));
        answer(mark_notifications_read(store, request).await)
    }

    /// `n` fans' follows of `user`, notified.
    async fn followed(user: &str, n: usize) -> MemoryNotifications {
        let store = MemoryNotifications::default();
        let messages = (0..n)
            .map(|i| Message {
                id: format!("m{i}"),
                body: follow(&format!("e{i}"), &format!("fan{i}"), user),
                seal: None,
            })
            .collect();
        assert!(handle_batch(&store, messages).await.is_empty());
        store
    }

    async fn seeded() -> MemoryNotifications {
        followed("bob", 3).await
    }

    #[tokio::test]
    async fn the_owner_pages_through_their_notifications() {
        let store = seeded().await;
        let (status, first) = list(&store, "bob", "limit=2").await;
        assert_eq!(status, 200);
        assert_eq!(first["items"].as_array().unwrap().len(), 2);
        assert_eq!(first["unreadCount"], 3);
        assert_eq!(first["items"][0]["type"], "FOLLOW");
        let cursor = first["nextCursor"].as_str().unwrap().to_owned();
        let (_, second) = list(&store, "bob", &format!("limit=2&cursor={cursor}")).await;
        assert_eq!(second["items"].as_array().unwrap().len(), 1);
        assert!(second["nextCursor"].is_null());

        let (_, other) = list(&store, "eve", "").await;
        assert_eq!(other["items"], serde_json::json!([]));
        assert_eq!(other["unreadCount"], 0);
    }

    #[tokio::test]
    async fn bad_limits_and_cursors_are_400() {
        let store = seeded().await;
        for query in [
            "limit=0",
            "limit=101",
            "limit=x",
            "cursor=%%%",
            "cursor=bm9wZQ",
        ] {
            let (status, body) = list(&store, "bob", query).await;
            assert_eq!(status, 400, "{query}: {body}");
        }
    }

    #[tokio::test]
    async fn marking_read_counts_only_what_changed_and_ignores_foreign_ids() {
        let store = seeded().await;
        let (_, page) = list(&store, "bob", "").await;
        let id = page["items"][0]["notificationId"]
            .as_str()
            .unwrap()
            .to_owned();
        let body = format!(r#"{{"ids": ["{id}", "{id}", "nonsense"]}}"#);

        let (status, answer) = mark(&store, "eve", &body).await;
        assert_eq!((status, &answer["marked"]), (200, &Value::from(0)));

        let (status, answer) = mark(&store, "bob", &body).await;
        assert_eq!(status, 200);
        assert_eq!(answer, serde_json::json!({"marked": 1, "unreadCount": 2}));
        let (_, answer) = mark(&store, "bob", &body).await;
        assert_eq!(answer, serde_json::json!({"marked": 0, "unreadCount": 2}));

        let (_, answer) = mark(&store, "bob", r#"{"all": true}"#).await;
        assert_eq!(answer, serde_json::json!({"marked": 2, "unreadCount": 0}));
    }

    #[tokio::test]
    async fn all_marks_at_most_a_hundred_per_call_and_says_what_is_left() {
        let store = followed("star", 150).await;

        let (_, answer) = mark(&store, "star", r#"{"all": true}"#).await;
        assert_eq!(
            answer,
            serde_json::json!({"marked": 100, "unreadCount": 50})
        );
        let (_, answer) = mark(&store, "star", r#"{"all": true}"#).await;
        assert_eq!(answer, serde_json::json!({"marked": 50, "unreadCount": 0}));
        let (_, answer) = mark(&store, "star", r#"{"all": true}"#).await;
        assert_eq!(answer, serde_json::json!({"marked": 0, "unreadCount": 0}));
    }

    #[tokio::test]
    async fn bad_mark_bodies_are_400() {
        let store = seeded().await;
        let too_many = format!(r#"{{"ids": {}}}"#, serde_json::json!(vec!["x"; 101]));
        for body in [
            "",
            "{}",
            r#"{"ids": []}"#,
            r#"{"all": false}"#,
            r#"{"ids": ["a"], "all": true}"#,
            r#"{"ids": ["a"], "extra": 1}"#,
            too_many.as_str(),
        ] {
            let (status, _) = mark(&store, "bob", body).await;
            assert_eq!(status, 400, "{body}");
        }
    }
}
