//! Follow notifications: created from `UserFollowed` events, at most one per (recipient,
//! actor, FOLLOW, USER, recipient) ever, with the recipient's unread count; listed newest
//! first and marked read by their owner.
//!
//! A notification id is `<createdAt>_<32 hex digits>`: it carries the creation time, so the
//! item (`NOTIF#<recipient>` / `<createdAt>#<notificationId>`) is found from the id alone,
//! without a lookup item, and only ever under the caller's own partition.

use super::keys::notification_key_pk;
use crate::consumer::{Message, parse_each};
use crate::cursor::{Cursor, InvalidCursor, PageLimit};
use crate::events::SocialEvent;
use crate::ids::UserId;
use crate::once::{Outcome, Rejected, Through, Unit, apply_groups, apply_once, group};
use async_trait::async_trait;
use serde::Serialize;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

pub const FOLLOW: &str = "FOLLOW";
pub const TARGET_USER: &str = "USER";

/// A notification's id: its creation time and a random part.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct NotificationId(String);

impl NotificationId {
    /// A new id for a notification created at `created_at` (RFC 3339).
    pub fn new(created_at: &str) -> Self {
        Self(format!("{created_at}_{}", uuid::Uuid::new_v4().simple()))
    }

    /// An id as a client sent it; `None` if it cannot be one of ours.
    pub fn parse(raw: &str) -> Option<Self> {
        let (created_at, random) = raw.rsplit_once('_')?;
        let valid = random.len() == 32
            && random.bytes().all(|b| b.is_ascii_hexdigit())
            && OffsetDateTime::parse(created_at, &Rfc3339).is_ok()
            && !created_at.contains('#');
        valid.then(|| Self(raw.to_owned()))
    }

    pub fn created_at(&self) -> &str {
        self.0.rsplit_once('_').map_or("", |(at, _)| at)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A notification as its owner sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Notification {
    pub notification_id: NotificationId,
    #[serde(rename = "type")]
    pub kind: String,
    pub actor_id: String,
    pub target_type: String,
    pub target_id: String,
    pub created_at: String,
    pub read: bool,
}

/// One page of a user's notifications, newest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    pub items: Vec<Notification>,
    pub next: Option<Cursor>,
}

/// A new follow notification; its unit's marker is the notification key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewFollow {
    pub actor: UserId,
    pub notification_id: NotificationId,
}

/// How many units one call of each of [`NotificationStore`]'s commits takes at most.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotificationLimits {
    /// Of [`NotificationStore::add_follow_notifications`].
    pub add: usize,
    /// Of [`NotificationStore::mark_read`].
    pub mark: usize,
}

/// Why the notification store failed.
#[derive(Debug, thiserror::Error)]
pub enum NotificationStoreError {
    #[error(transparent)]
    InvalidCursor(#[from] InvalidCursor),
    #[error("notification store failed")]
    Failed(#[from] anyhow::Error),
}

/// Where notifications live.
#[async_trait]
pub trait NotificationStore: Send + Sync {
    /// How many units one call of each of the commits takes.
    fn limits(&self) -> NotificationLimits;

    /// In one transaction: each unit's key item (absent before, else
    /// [`Rejected::AlreadyApplied`]), its notification, and `unreadCount += units`.
    async fn add_follow_notifications(
        &self,
        recipient: &UserId,
        units: &[Unit<NewFollow>],
    ) -> Result<(), Rejected>;

    /// In one transaction: each unit's notification marked read (it was unread, else
    /// [`Rejected::AlreadyApplied`]) and `unreadCount -= units`, never below zero.
    async fn mark_read(
        &self,
        recipient: &UserId,
        units: &[Unit<NotificationId>],
    ) -> Result<(), Rejected>;

    async fn page(
        &self,
        recipient: &UserId,
        limit: PageLimit,
        cursor: Option<&Cursor>,
    ) -> Result<Page, NotificationStoreError>;

    async fn unread_count(&self, recipient: &UserId) -> Result<u64, NotificationStoreError>;

    /// Up to `limit` ids of the recipient's unread notifications, oldest first, reading a
    /// bounded number of pages: fewer (even none) when read ones fill those pages; a caller
    /// learns what is left from [`Self::unread_count`].
    async fn unread_ids(
        &self,
        recipient: &UserId,
        limit: usize,
    ) -> Result<Vec<NotificationId>, NotificationStoreError>;
}

/// The event's time as the notification's, normalized so that it sorts as text; now if the
/// producer's time is unreadable.
fn created_at(occurred_at: &str) -> String {
    crate::clock::normalize(occurred_at).unwrap_or_else(crate::clock::now_rfc3339)
}

/// Handles one SQS batch of social events; returns the ids of the messages to retry.
#[tracing::instrument(skip_all, fields(messages = messages.len()))]
pub async fn handle_batch(store: &dyn NotificationStore, messages: Vec<Message>) -> Vec<String> {
    let parsed = parse_each(messages, SocialEvent::parse);
    let mut failed = parsed.refused;
    let mut groups: Vec<(UserId, Vec<Unit<NewFollow>>)> = Vec::new();
    for (message, event) in parsed.events {
        // An unfollow takes nothing back: the notification was sent, as in the original.
        let SocialEvent::UserFollowed(envelope) = event else {
            continue;
        };
        let (Ok(actor), Ok(recipient)) = (
            UserId::parse(&envelope.payload.follower_id),
            UserId::parse(&envelope.payload.followee_id),
        ) else {
            tracing::error!(message_id = %message, "refusing an event with an invalid user id");
            failed.push(message);
            continue;
        };
        let marker =
            notification_key_pk(&recipient, &actor, FOLLOW, TARGET_USER, recipient.as_str());
        let notification_id = NotificationId::new(&created_at(&envelope.occurred_at));
        let unit = Unit::new(
            marker,
            message,
            NewFollow {
                actor,
                notification_id,
            },
        );
        group(&mut groups, recipient, unit);
    }
    // Recipients are independent items: their commits go side by side.
    let store_for = |recipient| Through {
        port: store,
        context: recipient,
        max_units: store.limits().add,
        call: |store, recipient, units| store.add_follow_notifications(recipient, units),
    };
    failed.extend(apply_groups(groups, store_for).await);
    failed
}

/// Marks the recipient's notifications read; returns the outcome per id. Ids that are not
/// the recipient's unread notifications come back as already applied.
pub async fn mark_read(
    store: &dyn NotificationStore,
    recipient: &UserId,
    ids: Vec<NotificationId>,
) -> Outcome<NotificationId> {
    let units = ids
        .into_iter()
        .map(|id| Unit::new(id.as_str(), id.as_str(), id.clone()))
        .collect();
    let marks = Through {
        port: store,
        context: recipient,
        max_units: store.limits().mark,
        call: |store, recipient, units| store.mark_read(recipient, units),
    };
    apply_once(units, &marks).await
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::once::tests::Markers;
    use crate::testing::batch as messages;
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    /// Notifications in memory, with the DynamoDB store's semantics.
    #[derive(Default)]
    pub(crate) struct MemoryNotifications {
        pub keys: Markers,
        /// (recipient, id) → notification
        pub items: Mutex<BTreeMap<(String, String), Notification>>,
        pub unread: Mutex<BTreeMap<String, u64>>,
        pub state_writes: Mutex<u32>,
    }

    #[async_trait]
    impl NotificationStore for MemoryNotifications {
        fn limits(&self) -> NotificationLimits {
            crate::social::derived_store::NOTIFICATION_LIMITS
        }

        async fn add_follow_notifications(
            &self,
            recipient: &UserId,
            units: &[Unit<NewFollow>],
        ) -> Result<(), Rejected> {
            self.keys.commit(units, || {
                let mut items = self.items.lock().unwrap();
                for unit in units {
                    let id = unit.payload.notification_id.clone();
                    items.insert(
                        (recipient.to_string(), id.as_str().to_owned()),
                        Notification {
                            created_at: id.created_at().to_owned(),
                            notification_id: id,
                            kind: FOLLOW.to_owned(),
                            actor_id: unit.payload.actor.to_string(),
                            target_type: TARGET_USER.to_owned(),
                            target_id: recipient.to_string(),
                            read: false,
                        },
                    );
                }
                *self
                    .unread
                    .lock()
                    .unwrap()
                    .entry(recipient.to_string())
                    .or_default() += units.len() as u64;
                *self.state_writes.lock().unwrap() += 1;
                Ok(())
            })
        }

        async fn mark_read(
            &self,
            recipient: &UserId,
            units: &[Unit<NotificationId>],
        ) -> Result<(), Rejected> {
            let mut items = self.items.lock().unwrap();
            let key = |u: &Unit<NotificationId>| (recipient.to_string(), u.marker.clone());
            crate::once::refuse_applied(units, |u| items.get(&key(u)).is_none_or(|n| n.read))?;
            for unit in units {
                items.get_mut(&key(unit)).unwrap().read = true;
            }
            let mut unread = self.unread.lock().unwrap();
            let count = unread.entry(recipient.to_string()).or_default();
            *count = count.saturating_sub(units.len() as u64);
            Ok(())
        }

        async fn page(
            &self,
            recipient: &UserId,
            limit: PageLimit,
            cursor: Option<&Cursor>,
        ) -> Result<Page, NotificationStoreError> {
            let items = self.items.lock().unwrap();
            let after = cursor.and_then(|c| c.get("sk").map(str::to_owned));
            let mut mine: Vec<Notification> = items
                .iter()
                .filter(|((owner, _), _)| owner == recipient.as_str())
                .map(|(_, n)| n.clone())
                .collect();
            mine.sort_by(|a, b| b.notification_id.0.cmp(&a.notification_id.0));
            let rest: Vec<Notification> = mine
                .into_iter()
                .filter(|n| {
                    after
                        .as_ref()
                        .is_none_or(|after| n.notification_id.0 < *after)
                })
                .collect();
            let limit = limit.get() as usize;
            let next = (rest.len() > limit).then(|| {
                Cursor::new(BTreeMap::from([(
                    "sk".to_owned(),
                    rest[limit - 1].notification_id.0.clone(),
                )]))
            });
            Ok(Page {
                items: rest.into_iter().take(limit).collect(),
                next,
            })
        }

        async fn unread_count(&self, recipient: &UserId) -> Result<u64, NotificationStoreError> {
            Ok(*self
                .unread
                .lock()
                .unwrap()
                .get(recipient.as_str())
                .unwrap_or(&0))
        }

        async fn unread_ids(
            &self,
            recipient: &UserId,
            limit: usize,
        ) -> Result<Vec<NotificationId>, NotificationStoreError> {
            Ok(self
                .items
                .lock()
                .unwrap()
                .iter()
                .filter(|((owner, _), n)| owner == recipient.as_str() && !n.read)
                .map(|(_, n)| n.notification_id.clone())
                .take(limit)
                .collect())
        }
    }

    pub(crate) fn follow(id: &str, follower: &str, followee: &str) -> String {
        serde_json::json!({"type": "UserFollowed", "version": 1, "id": id,
            "occurredAt": "2026-11-30T18:00:00Z",
            "payload": {"followerId": follower, "followeeId": followee}})
        .to_string()
    }

    fn unfollow(id: &str, follower: &str, followee: &str) -> String {
        follow(id, follower, followee).replace("UserFollowed", "UserUnfollowed")
    }

    #[tokio::test]
    async fn follow_unfollow_refollow_and_redelivery_notify_once() {
        let store = MemoryNotifications::default();
        let batch = [
            follow("e1", "a", "star"),
            follow("e1", "a", "star"),
            unfollow("e2", "a", "star"),
            follow("e3", "a", "star"),
            follow("e4", "b", "star"),
        ];
        assert!(handle_batch(&store, messages(&batch)).await.is_empty());
        assert!(handle_batch(&store, messages(&batch)).await.is_empty());
        assert_eq!(store.items.lock().unwrap().len(), 2);
        assert_eq!(store.unread.lock().unwrap()["star"], 2);
        assert_eq!(*store.state_writes.lock().unwrap(), 1);
    }

    #[tokio::test]
    async fn garbage_fails_alone() {
        let store = MemoryNotifications::default();
        let batch = [
            follow("e1", "a", "b"),
            "{}".to_owned(),
            follow("e2", "c", "b"),
        ];
        assert_eq!(handle_batch(&store, messages(&batch)).await, ["m1"]);
        assert_eq!(store.unread.lock().unwrap()["b"], 2);
    }

    #[test]
    fn notification_ids_carry_their_creation_time() {
        let id = NotificationId::new("2026-11-30T18:00:00.5Z");
        assert_eq!(id.created_at(), "2026-11-30T18:00:00.5Z");
        assert_eq!(NotificationId::parse(id.as_str()), Some(id));
        for bad in [
            "",
            "x_0123456789abcdef0123456789abcdef",
            "2026-11-30T18:00:00Z_short",
            "2026-11-30T18:00:00Z",
        ] {
            assert_eq!(NotificationId::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn event_times_are_normalized_to_utc() {
        assert_eq!(
            created_at("2026-11-30T19:00:00+01:00"),
            "2026-11-30T18:00:00.000000Z"
        );
        assert!(created_at("yesterday").starts_with("20"));
    }
}
