//! The followee's `followerCount`, derived from follow events: aggregated per batch (one
//! write of the followee's profile per batch, however famous) and applied once per event
//! (a marker per event in the same transaction), so redelivery changes nothing.

use crate::consumer::{Message, parse_each};
use crate::events::SocialEvent;
use crate::ids::UserId;
use crate::once::{Rejected, Through, Unit, apply_groups, group};
use async_trait::async_trait;

/// The consumer's name in its applied markers (`APPLIED#follower-count#<eventId>`).
pub const CONSUMER: &str = "follower-count";

/// Where follower counts are applied. A unit's marker is the event id and its payload the
/// change (+1 follow, -1 unfollow).
#[async_trait]
pub trait FollowerCountStore: Send + Sync {
    /// How many units one [`Self::apply_follower_delta`] takes at most.
    fn max_units_per_delta(&self) -> usize;

    /// In one transaction: a marker per unit (absent before) and `followerCount += sum`,
    /// never below zero (else [`Rejected::Aggregate`]).
    async fn apply_follower_delta(
        &self,
        followee: &UserId,
        units: &[Unit<i64>],
    ) -> Result<(), Rejected>;
}

/// Handles one SQS batch; returns the ids of the messages to retry.
#[tracing::instrument(skip_all, fields(messages = messages.len()))]
pub async fn handle_batch(store: &dyn FollowerCountStore, messages: Vec<Message>) -> Vec<String> {
    let parsed = parse_each(messages, SocialEvent::parse);
    let mut failed = parsed.refused;
    let mut groups: Vec<(UserId, Vec<Unit<i64>>)> = Vec::new();
    for (message, event) in parsed.events {
        let (delta, envelope) = match event {
            SocialEvent::UserFollowed(envelope) => (1, envelope),
            SocialEvent::UserUnfollowed(envelope) => (-1, envelope),
        };
        let Ok(followee) = UserId::parse(&envelope.payload.followee_id) else {
            tracing::error!(message_id = %message, "refusing an event with an invalid followee id");
            failed.push(message);
            continue;
        };
        group(
            &mut groups,
            followee,
            Unit::new(envelope.id, message, delta),
        );
    }
    // Followees are independent items: their commits go side by side.
    let store_for = |followee| Through {
        port: store,
        context: followee,
        max_units: store.max_units_per_delta(),
        call: |store, followee, units| store.apply_follower_delta(followee, units),
    };
    failed.extend(apply_groups(groups, store_for).await);
    failed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::once::tests::Markers;
    use std::collections::HashMap;
    use std::sync::Mutex;

    /// Profiles' follower counts and markers in memory; counts every profile write.
    #[derive(Default)]
    struct MemoryCounts {
        counts: Mutex<HashMap<UserId, i64>>,
        markers: Markers,
        profile_writes: Mutex<u32>,
    }

    #[async_trait]
    impl FollowerCountStore for MemoryCounts {
        fn max_units_per_delta(&self) -> usize {
            crate::social::derived_store::MAX_UNITS_PER_DELTA
        }

        async fn apply_follower_delta(
            &self,
            followee: &UserId,
            units: &[Unit<i64>],
        ) -> Result<(), Rejected> {
            self.markers.commit(units, || {
                let delta: i64 = units.iter().map(|u| u.payload).sum();
                let mut counts = self.counts.lock().unwrap();
                let count = counts.entry(followee.clone()).or_default();
                if *count + delta < 0 {
                    return Err(Rejected::Aggregate);
                }
                *count += delta;
                *self.profile_writes.lock().unwrap() += 1;
                Ok(())
            })
        }
    }

    fn event(kind: &str, id: &str, follower: &str, followee: &str) -> String {
        serde_json::json!({"type": kind, "version": 1, "id": id, "occurredAt": "2026-11-30T18:00:00Z",
            "payload": {"followerId": follower, "followeeId": followee}})
        .to_string()
    }

    fn batch(events: &[(&str, String)]) -> Vec<Message> {
        events
            .iter()
            .map(|(id, body)| Message {
                id: (*id).to_owned(),
                body: body.clone(),
                seal: None,
            })
            .collect()
    }

    fn count(store: &MemoryCounts, user: &str) -> i64 {
        let user = UserId::parse(user).unwrap();
        store
            .counts
            .lock()
            .unwrap()
            .get(&user)
            .copied()
            .unwrap_or(0)
    }

    #[tokio::test]
    async fn a_celebrity_batch_is_one_profile_write_and_redelivery_changes_nothing() {
        let store = MemoryCounts::default();
        let messages: Vec<(&str, String)> = vec![
            ("m1", event("UserFollowed", "e1", "a", "star")),
            ("m2", event("UserFollowed", "e2", "b", "star")),
            ("m3", event("UserFollowed", "e3", "c", "star")),
            ("m4", event("UserUnfollowed", "e4", "a", "star")),
            ("m5", event("UserFollowed", "e5", "a", "other")),
        ];
        assert!(handle_batch(&store, batch(&messages)).await.is_empty());
        assert_eq!(count(&store, "star"), 2);
        assert_eq!(count(&store, "other"), 1);
        assert_eq!(*store.profile_writes.lock().unwrap(), 2);

        assert!(handle_batch(&store, batch(&messages)).await.is_empty());
        assert_eq!(count(&store, "star"), 2);
        assert_eq!(*store.profile_writes.lock().unwrap(), 2);
    }

    #[tokio::test]
    async fn an_unfollow_before_its_follow_is_retried_and_the_count_never_goes_negative() {
        let store = MemoryCounts::default();
        let unfollow = ("m2", event("UserUnfollowed", "e2", "a", "b"));
        let failed = handle_batch(&store, batch(std::slice::from_ref(&unfollow))).await;
        assert_eq!(failed, ["m2"]);
        assert_eq!(count(&store, "b"), 0);

        let follow = ("m1", event("UserFollowed", "e1", "a", "b"));
        assert!(handle_batch(&store, batch(&[follow])).await.is_empty());
        assert!(handle_batch(&store, batch(&[unfollow])).await.is_empty());
        assert_eq!(count(&store, "b"), 0);
    }

    #[tokio::test]
    async fn garbage_fails_alone_and_duplicates_count_once() {
        let store = MemoryCounts::default();
        let follow = event("UserFollowed", "e1", "a", "b");
        let messages = vec![
            ("m1", follow.clone()),
            ("m2", "not json".to_owned()),
            ("m3", follow),
        ];
        assert_eq!(handle_batch(&store, batch(&messages)).await, ["m2"]);
        assert_eq!(count(&store, "b"), 1);
    }
}
