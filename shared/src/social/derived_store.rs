//! DynamoDB adapter of the asynchronous path's stores: the derived items in the social table
//! (follower counts, notifications, applied markers), written by the queue consumers.
//!
//! The key design is in [`super::keys`]. Each transaction labels its items, so a cancelled
//! one says which units' markers already existed ([`Rejected::AlreadyApplied`]) or that the
//! aggregate's condition failed ([`Rejected::Aggregate`]).

use super::follower_count::{CONSUMER, FollowerCountStore};
use super::keys::{
    APPLIED_SK, NOTIFICATION_KEY_SK, NOTIFICATION_STATE_SK, PROFILE_SK, applied_pk,
    notification_sk, notifications_pk, user_pk,
};
use super::notifications::{
    FOLLOW, NewFollow, Notification, NotificationId, NotificationLimits, NotificationStore,
    NotificationStoreError, Page, TARGET_USER,
};
use crate::config::{ConfigError, Env};
use crate::cursor::{Cursor, PageLimit};
use crate::dynamo::{
    Item, MAX_TRANSACTION_ITEMS, Table, Transaction, UnitItem, get_n, get_s, key, n, put_if_absent,
    query_page, s, start_of, update_in,
};
use crate::fault::OrFault;
use crate::ids::UserId;
use crate::once::{Rejected, Unit};
use anyhow::Context;
use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{AttributeValue, Update};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A follower-count transaction holds a marker per unit, and the followee's profile.
pub const MAX_UNITS_PER_DELTA: usize = MAX_TRANSACTION_ITEMS - 1;
pub const NOTIFICATION_LIMITS: NotificationLimits = NotificationLimits {
    // A new notification costs its key item and itself; the unread count is the one more.
    add: (MAX_TRANSACTION_ITEMS - 1) / 2,
    // Marking read updates each notification, plus the unread count.
    mark: MAX_TRANSACTION_ITEMS - 1,
};

/// How long an applied marker is kept: far longer than a message can live in a queue.
pub const MARKER_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

fn epoch_seconds_after(ttl: Duration) -> u64 {
    (SystemTime::now() + ttl)
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The derived items of the social table.
#[derive(Clone, Debug)]
pub struct DynamoDerivedStore {
    table: Table,
}

impl DynamoDerivedStore {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            table: Table::new(client, table),
        }
    }

    /// The store named by `SOCIAL_TABLE`.
    pub fn from_env(env: &Env, client: Client) -> Result<Self, ConfigError> {
        Table::from_env(env, client, "SOCIAL_TABLE").map(|table| Self { table })
    }

    fn unread_update(
        &self,
        user: &UserId,
        expression: &str,
    ) -> aws_sdk_dynamodb::types::builders::UpdateBuilder {
        Update::builder()
            .set_key(Some(key(user_pk(user), NOTIFICATION_STATE_SK)))
            .update_expression(expression)
    }
}

fn notification_from_item(item: &Item) -> anyhow::Result<Notification> {
    let id = get_s(item, "notificationId")?;
    Ok(Notification {
        notification_id: NotificationId::parse(id).context("stored notificationId is malformed")?,
        kind: get_s(item, "type")?.to_owned(),
        actor_id: get_s(item, "actorId")?.to_owned(),
        target_type: get_s(item, "targetType")?.to_owned(),
        target_id: get_s(item, "targetId")?.to_owned(),
        created_at: get_s(item, "createdAt")?.to_owned(),
        read: matches!(item.get("read"), Some(AttributeValue::Bool(true))),
    })
}

#[async_trait]
impl FollowerCountStore for DynamoDerivedStore {
    fn max_units_per_delta(&self) -> usize {
        MAX_UNITS_PER_DELTA
    }

    #[tracing::instrument(level = "debug", skip(self, units), fields(units = units.len()))]
    async fn apply_follower_delta(
        &self,
        followee: &UserId,
        units: &[Unit<i64>],
    ) -> Result<(), Rejected> {
        let expires_at = epoch_seconds_after(MARKER_TTL);
        let mut transaction = Transaction::of_units(units, |unit| {
            let mut item = key(applied_pk(CONSUMER, &unit.marker), APPLIED_SK);
            item.insert("expiresAt".to_owned(), n(expires_at));
            put_if_absent(&self.table.name, item)
        });
        let delta: i64 = units.iter().map(|unit| unit.payload).sum();
        if delta != 0 {
            // The profile exists (a follow needs it); a negative delta needs enough followers.
            let mut update = Update::builder()
                .set_key(Some(key(user_pk(followee), PROFILE_SK)))
                .update_expression("SET followerCount = followerCount + :delta")
                .expression_attribute_values(":delta", n(delta));
            update = if delta < 0 {
                update
                    .condition_expression("attribute_exists(pk) AND followerCount >= :needed")
                    .expression_attribute_values(":needed", n(-delta))
            } else {
                update.condition_expression("attribute_exists(pk)")
            };
            transaction =
                transaction.push(UnitItem::Aggregate, update_in(&self.table.name, update));
        }
        transaction.commit_units(&self.table.client).await
    }
}

#[async_trait]
impl NotificationStore for DynamoDerivedStore {
    fn limits(&self) -> NotificationLimits {
        NOTIFICATION_LIMITS
    }

    #[tracing::instrument(level = "debug", skip(self, units), fields(units = units.len()))]
    async fn add_follow_notifications(
        &self,
        recipient: &UserId,
        units: &[Unit<NewFollow>],
    ) -> Result<(), Rejected> {
        let mut transaction = Transaction::new();
        for (index, unit) in units.iter().enumerate() {
            let marker = key(&unit.marker, NOTIFICATION_KEY_SK);
            transaction = transaction.push(
                UnitItem::Unit(index),
                put_if_absent(&self.table.name, marker),
            );
            let id = &unit.payload.notification_id;
            let mut item = key(
                notifications_pk(recipient),
                notification_sk(id.created_at(), id.as_str()),
            );
            item.extend([
                ("notificationId".to_owned(), s(id.as_str())),
                ("type".to_owned(), s(FOLLOW)),
                ("actorId".to_owned(), s(unit.payload.actor.as_str())),
                ("targetType".to_owned(), s(TARGET_USER)),
                ("targetId".to_owned(), s(recipient.as_str())),
                ("createdAt".to_owned(), s(id.created_at())),
                ("read".to_owned(), AttributeValue::Bool(false)),
            ]);
            transaction = transaction.push(UnitItem::Other, put_if_absent(&self.table.name, item));
        }
        let update = self
            .unread_update(recipient, "ADD unreadCount :n")
            .expression_attribute_values(":n", n(units.len()));
        transaction
            .push(UnitItem::Other, update_in(&self.table.name, update))
            .commit_units(&self.table.client)
            .await
    }

    #[tracing::instrument(level = "debug", skip(self, units), fields(units = units.len()))]
    async fn mark_read(
        &self,
        recipient: &UserId,
        units: &[Unit<NotificationId>],
    ) -> Result<(), Rejected> {
        let marks = |clamp: bool| {
            let transaction = Transaction::of_units(units, |unit| {
                let id = &unit.payload;
                let update = Update::builder()
                    .set_key(Some(key(
                        notifications_pk(recipient),
                        notification_sk(id.created_at(), id.as_str()),
                    )))
                    .update_expression("SET #read = :true")
                    .condition_expression("attribute_exists(pk) AND #read = :false")
                    .expression_attribute_names("#read", "read")
                    .expression_attribute_values(":true", AttributeValue::Bool(true))
                    .expression_attribute_values(":false", AttributeValue::Bool(false));
                update_in(&self.table.name, update)
            });
            let update = if clamp {
                self.unread_update(recipient, "SET unreadCount = :zero")
                    .expression_attribute_values(":zero", n(0))
            } else {
                self.unread_update(recipient, "SET unreadCount = unreadCount - :n")
                    .condition_expression("unreadCount >= :n")
                    .expression_attribute_values(":n", n(units.len()))
            };
            transaction.push(UnitItem::Aggregate, update_in(&self.table.name, update))
        };
        match marks(false).commit_units(&self.table.client).await {
            // The count is short of what is unread (it never should be): never below zero.
            Err(Rejected::Aggregate) => {
                tracing::warn!(%recipient, "unread count below the unread notifications; clamping to 0");
                marks(true).commit_units(&self.table.client).await
            }
            other => other,
        }
    }

    #[tracing::instrument(level = "debug", skip(self, cursor))]
    async fn page(
        &self,
        recipient: &UserId,
        limit: PageLimit,
        cursor: Option<&Cursor>,
    ) -> Result<Page, NotificationStoreError> {
        let pk = notifications_pk(recipient);
        let fits = |cursor: &Cursor| cursor.get("pk") == Some(pk.as_str());
        let start = start_of(cursor, &["pk", "sk"], fits)?;
        let query = self
            .table
            .client
            .query()
            .table_name(&self.table.name)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(&pk));
        let failed = "failed to query notifications";
        let (items, next) = query_page(query, limit, start, failed, notification_from_item).await?;
        Ok(Page { items, next })
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn unread_count(&self, recipient: &UserId) -> Result<u64, NotificationStoreError> {
        let key = key(user_pk(recipient), NOTIFICATION_STATE_SK);
        let failed = "failed to read the unread count";
        let item = self.table.get_consistent(key, None, failed).await?;
        Ok(match item {
            Some(item) => get_n(&item, "unreadCount").map_err(anyhow::Error::from)?,
            None => 0,
        })
    }

    #[tracing::instrument(level = "debug", skip(self))]
    async fn unread_ids(
        &self,
        recipient: &UserId,
        limit: usize,
    ) -> Result<Vec<NotificationId>, NotificationStoreError> {
        let mut ids = Vec::new();
        let mut start = None;
        for _ in 0..MAX_UNREAD_PAGES {
            let output = self
                .table
                .client
                .query()
                .table_name(&self.table.name)
                .key_condition_expression("pk = :pk")
                .filter_expression("#read = :false")
                .projection_expression("notificationId")
                .limit(UNREAD_PAGE_ITEMS)
                .expression_attribute_names("#read", "read")
                .expression_attribute_values(":pk", s(notifications_pk(recipient)))
                .expression_attribute_values(":false", AttributeValue::Bool(false))
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .or_fault("failed to query unread notifications")?;
            for item in output.items() {
                let id = get_s(item, "notificationId").map_err(anyhow::Error::from)?;
                ids.push(NotificationId::parse(id).context("stored notificationId is malformed")?);
                if ids.len() == limit {
                    return Ok(ids);
                }
            }
            start = output.last_evaluated_key;
            if start.is_none() {
                break;
            }
        }
        Ok(ids)
    }
}

/// How many pages of [`UNREAD_PAGE_ITEMS`] notifications (read or not: the filter comes after
/// the read) one `unread_ids` reads at most: a user with many read notifications costs a
/// bounded read per call, not one of their whole history.
const MAX_UNREAD_PAGES: usize = 4;
const UNREAD_PAGE_ITEMS: i32 = 250;
