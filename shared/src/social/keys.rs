//! The social table's key design: which item lives under which key, in one place.
//!
//! | item | `pk` | `sk` | index keys | access pattern |
//! |---|---|---|---|---|
//! | profile | `USER#<u>` | `PROFILE` | | one user's profile and counters |
//! | follow edge a→b | `USER#<a>` | `FOLLOWS#<b>` | gsi1 `FOLLOWERS#<b>` / `<at>#<a>`; gsi2 `FOLLOWING#<a>` / `<at>#<b>` | does a follow b (one GetItem or a condition); b's followers and a's followings newest first |
//! | outbox event | `OUTBOX#<eventId>` | `EVENT` | | written in the follow transaction, relayed from the stream, expires by TTL |
//! | notification | `NOTIF#<u>` | `<at>#<notificationId>` | | u's notifications newest first |
//! | notification key | `NOTIFKEY#<recipient>#<actor>#<type>#<targetType>#<targetId>` | `KEY` | | at most one notification per key, ever |
//! | notification state | `USER#<u>` | `NOTIFSTATE` | | u's unread count |
//! | follow rate window | `USER#<u>` | `LIMIT#FOLLOW#<windowStart>` | | u's follow and unfollow attempts in one minute (a conditional count); written only by u's own requests, expires by TTL |
//! | applied event | `APPLIED#<consumer>#<eventId>` | `APPLIED` | | an event a consumer already applied (idempotency), expires by TTL |
//!
//! `<at>` is an RFC 3339 UTC time, which sorts as text; ids never contain `#`.

use crate::ids::UserId;

pub const PROFILE_SK: &str = "PROFILE";
pub const OUTBOX_SK: &str = "EVENT";
pub const NOTIFICATION_KEY_SK: &str = "KEY";
pub const NOTIFICATION_STATE_SK: &str = "NOTIFSTATE";
pub const APPLIED_SK: &str = "APPLIED";
pub const OUTBOX_PREFIX: &str = "OUTBOX#";

/// The name of the followers index (gsi1) and of the following index (gsi2).
pub const FOLLOWERS_INDEX: &str = "gsi1";
pub const FOLLOWING_INDEX: &str = "gsi2";

pub fn user_pk(user: &UserId) -> String {
    format!("USER#{user}")
}

pub fn follow_sk(followee: &UserId) -> String {
    format!("FOLLOWS#{followee}")
}

pub fn followers_pk(followee: &UserId) -> String {
    format!("FOLLOWERS#{followee}")
}

pub fn following_pk(follower: &UserId) -> String {
    format!("FOLLOWING#{follower}")
}

/// The sort key of an edge in either index: newest first when read backwards.
pub fn edge_index_sk(followed_at: &str, other: &UserId) -> String {
    format!("{followed_at}#{other}")
}

/// The item counting `user`'s follow and unfollow attempts in the window that began at
/// `window_start` (epoch seconds): one item per window, so that a new window starts at zero
/// without reading or resetting the last one.
pub fn follow_rate_sk(window_start: i64) -> String {
    format!("LIMIT#FOLLOW#{window_start}")
}

pub fn outbox_pk(event_id: &str) -> String {
    format!("{OUTBOX_PREFIX}{event_id}")
}

pub fn notifications_pk(recipient: &UserId) -> String {
    format!("NOTIF#{recipient}")
}

pub fn notification_sk(created_at: &str, notification_id: &str) -> String {
    format!("{created_at}#{notification_id}")
}

/// The original system's unique key of a notification.
pub fn notification_key_pk(
    recipient: &UserId,
    actor: &UserId,
    kind: &str,
    target_type: &str,
    target_id: &str,
) -> String {
    format!("NOTIFKEY#{recipient}#{actor}#{kind}#{target_type}#{target_id}")
}

pub fn applied_pk(consumer: &str, event_id: &str) -> String {
    format!("APPLIED#{consumer}#{event_id}")
}
