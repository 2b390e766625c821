//! The follow graph against DynamoDB: the follow and unfollow transactions with their outbox
//! events, the rate windows, the races, and the newest-first lists with their cursors.
//!
//! This file holds the fixture; the tests are split by concern:
//! - [`writes`]: what a follow and an unfollow write, and what a failed condition leaves;
//! - [`rate`]: the follow rate windows, alone and inside an unfollow's transaction;
//! - [`races`]: concurrent follows and unfollows, and a follow racing a deactivation;
//! - [`lists`]: the followers and following lists and their cursors.

mod lists;
mod races;
mod rate;
mod writes;

use crate::support::{clients, create_social_table};
use app::dynamo::{get_n, get_s, key, s};
use app::events::SocialEvent;
use app::ids::UserId;
use app::social::GraphStore;
use app::social::follow::{self, FollowLimits, GraphChange};
use app::social::follow::{FollowState, FollowWrite};
use app::social::{DisplayName, DynamoSocialStore, ProfileStore, Relationship};
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;
use std::num::NonZeroU32;
use time::OffsetDateTime;
use time::macros::datetime;

pub(super) const NOW: OffsetDateTime = datetime!(2026-11-30 18:00:00.25 UTC);
/// Limits that none of the tests of other behaviour meet.
pub(super) const LIMITS: FollowLimits = FollowLimits {
    rate_per_minute: NonZeroU32::new(1_000).unwrap(),
    max_following: NonZeroU32::new(1_000).unwrap(),
};

pub(super) type Item = HashMap<String, AttributeValue>;

/// What [`Fixture::change`] does.
#[derive(Clone, Copy, Debug)]
pub(super) enum Change {
    Follow,
    Unfollow,
}

pub(super) struct Fixture {
    pub(super) client: Client,
    pub(super) table: String,
    pub(super) store: DynamoSocialStore,
}

impl Fixture {
    /// A fresh social table with active profiles for `users`.
    pub(super) async fn new(users: &[&str]) -> Self {
        let clients = clients().await;
        let table = create_social_table(&clients).await;
        let store = DynamoSocialStore::new(clients.dynamodb.clone(), &table);
        for user in users {
            let name = DisplayName::parse(&format!("Name of {user}")).unwrap();
            store
                .upsert_profile(&id(user), &name, "2026-11-30T17:00:00.000000Z")
                .await
                .unwrap();
        }
        Self {
            client: clients.dynamodb,
            table,
            store,
        }
    }

    pub(super) async fn item(&self, pk: &str, sk: &str) -> Option<Item> {
        self.client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key(pk, sk)))
            .consistent_read(true)
            .send()
            .await
            .unwrap()
            .item
    }

    pub(super) async fn profile(&self, user: &str) -> Item {
        self.item(&format!("USER#{user}"), "PROFILE").await.unwrap()
    }

    /// `follower` follows or unfollows `followee` through the domain, at `at`.
    pub(super) async fn change(
        &self,
        change: Change,
        follower: &str,
        followee: &str,
        limits: &FollowLimits,
        at: OffsetDateTime,
    ) -> FollowState {
        let relationship = pair(follower, followee);
        let result = match change {
            Change::Follow => follow::follow(&self.store, &relationship, limits, at).await,
            Change::Unfollow => follow::unfollow(&self.store, &relationship, limits, at).await,
        };
        result.unwrap()
    }

    /// The store's follow transaction alone: no count of the attempt, no read of the target.
    pub(super) async fn follow_write(
        &self,
        follower: &str,
        followee: &str,
        max: u32,
    ) -> FollowWrite {
        let change = graph_change(follower, followee);
        self.store.follow(&change, max).await.unwrap()
    }

    /// The `followingCount` of `user`'s profile.
    pub(super) async fn following_count(&self, user: &str) -> u64 {
        get_n(&self.profile(user).await, "followingCount").unwrap()
    }

    pub(super) async fn all_items(&self) -> Vec<Item> {
        self.client
            .scan()
            .table_name(&self.table)
            .consistent_read(true)
            .send()
            .await
            .unwrap()
            .items
            .unwrap_or_default()
    }

    pub(super) async fn outbox_events(&self) -> Vec<SocialEvent> {
        let mut events: Vec<(String, SocialEvent)> = self
            .all_items()
            .await
            .iter()
            .filter(|item| get_s(item, "pk").unwrap().starts_with("OUTBOX#"))
            .map(|item| {
                let event = SocialEvent::parse(get_s(item, "event").unwrap()).unwrap();
                (event.id().to_owned(), event)
            })
            .collect();
        // Ids are UUID v7: in creation order.
        events.sort_by(|a, b| a.0.cmp(&b.0));
        events.into_iter().map(|(_, event)| event).collect()
    }

    pub(super) async fn deactivate(&self, user: &str) {
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(format!("USER#{user}"), "PROFILE")))
            .update_expression("SET #status = :status")
            .expression_attribute_names("#status", "status")
            .expression_attribute_values(":status", s("DEACTIVATED"))
            .send()
            .await
            .unwrap();
    }
}

pub(super) fn id(raw: &str) -> UserId {
    UserId::parse(raw).unwrap()
}

pub(super) fn pair(follower: &str, followee: &str) -> Relationship {
    Relationship::new(id(follower), id(followee)).unwrap()
}

/// A follow or unfollow change of `follower` → `followee`, as the domain builds it.
pub(super) fn graph_change(follower: &str, followee: &str) -> GraphChange {
    GraphChange {
        relationship: pair(follower, followee),
        at: "2026-11-30T18:00:00.000000Z".to_owned(),
        event: app::events::Envelope {
            kind: "UserFollowed".to_owned(),
            version: 1,
            id: uuid::Uuid::now_v7().to_string(),
            occurred_at: "2026-11-30T18:00:00.000000Z".to_owned(),
            payload: app::events::FollowPayload {
                follower_id: follower.to_owned(),
                followee_id: followee.to_owned(),
            },
        },
        event_expires_at: 1,
    }
}

pub(super) fn limits(rate_per_minute: u32, max_following: u32) -> FollowLimits {
    FollowLimits {
        rate_per_minute: NonZeroU32::new(rate_per_minute).unwrap(),
        max_following: NonZeroU32::new(max_following).unwrap(),
    }
}

/// The sort key of the rate window that `at` falls in.
pub(super) fn window_sk(at: OffsetDateTime) -> String {
    let seconds = at.unix_timestamp();
    format!("LIMIT#FOLLOW#{}", seconds - seconds.rem_euclid(60))
}

/// Every item but the rate windows: what the graph holds.
pub(super) fn graph_items(items: Vec<Item>) -> Vec<Item> {
    items
        .into_iter()
        .filter(|item| !get_s(item, "sk").unwrap().starts_with("LIMIT#"))
        .collect()
}
