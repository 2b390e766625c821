//! Concurrent follows and unfollows, and a follow racing a deactivation of its target.

use super::{Fixture, LIMITS, NOW, id, limits, pair};
use app::cursor::{Cursor, PageLimit};
use app::dynamo::get_s;
use app::events::SocialEvent;
use app::ids::UserId;
use app::retry::Backoff;
use app::social::follow::{
    self, Attempt, Counted, FollowLimits, FollowState, FollowWrite, GraphChange, ListEdgesError,
    UnfollowWrite,
};
use app::social::{
    Direction, DisplayName, DynamoSocialStore, FollowError, GraphStore, ProfileStore, Relationship,
    UserStatus,
};
use async_trait::async_trait;
use std::collections::HashMap;
use time::OffsetDateTime;

/// Users `{prefix}0` to `{prefix}{n - 1}`.
fn numbered(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// A table with profiles for `users` and for `other`.
async fn fixture_of(users: &[String], other: &str) -> Fixture {
    let mut all: Vec<&str> = users.iter().map(String::as_str).collect();
    all.push(other);
    Fixture::new(&all).await
}

/// Follows every pair through `store` at once (all released by one barrier), answering each
/// follow's result in the order of `pairs`.
async fn follow_at_once(
    store: &DynamoSocialStore,
    pairs: Vec<(String, String)>,
    limits: FollowLimits,
) -> Vec<Result<FollowState, FollowError>> {
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(pairs.len()));
    let tasks = pairs.into_iter().map(|(follower, followee)| {
        let (store, barrier) = (store.clone(), barrier.clone());
        tokio::spawn(async move {
            barrier.wait().await;
            let relationship = pair(&follower, &followee);
            follow::follow(&store, &relationship, &limits, OffsetDateTime::now_utc()).await
        })
    });
    let joined = futures_util::future::join_all(tasks).await;
    joined.into_iter().map(|task| task.unwrap()).collect()
}

#[tokio::test]
async fn concurrent_follows_never_pass_the_cap() {
    let stars = numbered("star", 8);
    let f = fixture_of(&stars, "ada").await;
    let pairs = stars.iter().map(|star| ("ada".to_owned(), star.clone()));
    let mut followed = 0;
    for result in follow_at_once(&f.store, pairs.collect(), limits(1_000, 3)).await {
        match result {
            Ok(state) => {
                assert!(state.changed);
                followed += 1;
            }
            // The transactions all hold ada's profile: some may conflict through every retry.
            Err(FollowError::FollowingLimitReached { max: 3 } | FollowError::Busy) => {}
            Err(err) => panic!("{err:?}"),
        }
    }
    let count = f.following_count("ada").await as usize;
    let edges = f
        .all_items()
        .await
        .iter()
        .filter(|item| get_s(item, "sk").unwrap().starts_with("FOLLOWS#"))
        .count();
    assert!(followed <= 3, "{followed} follows passed a cap of 3");
    assert_eq!((count, edges), (followed, followed));
}

#[tokio::test]
async fn concurrent_follows_of_one_user_never_conflict_even_without_retries() {
    // The follow transaction holds only the follower's items; had it included the followee's
    // profile, even as a ConditionCheck, the emulator (as DynamoDB) would cancel all but one
    // of the transactions in flight at once.
    let fans = numbered("fan", 24);
    let f = fixture_of(&fans, "star").await;
    let store = f.store.clone().with_backoff(Backoff::NONE);
    let pairs = fans.iter().map(|fan| (fan.clone(), "star".to_owned()));
    for result in follow_at_once(&store, pairs.collect(), LIMITS).await {
        let state = result.expect("no follow conflicts");
        assert!(state.changed);
    }
    let page = f
        .store
        .list_edges(
            &id("star"),
            Direction::Followers,
            PageLimit::parse(Some("100")).unwrap(),
            None,
        )
        .await
        .unwrap();
    assert_eq!(page.entries.len(), fans.len());
    assert_eq!(f.outbox_events().await.len(), fans.len());
}

/// The DynamoDB store, with the target deactivated right after a follow read its status:
/// the race of a follow with a deactivation, made deterministic.
struct DeactivatedAfterRead<'a> {
    fixture: &'a Fixture,
}

#[async_trait]
impl ProfileStore for DeactivatedAfterRead<'_> {
    async fn upsert_profile(
        &self,
        user: &UserId,
        name: &DisplayName,
        now: &str,
    ) -> Result<app::social::Profile, app::social::profile::StoreError> {
        self.fixture.store.upsert_profile(user, name, now).await
    }

    async fn get_profile(
        &self,
        user: &UserId,
    ) -> Result<Option<app::social::Profile>, app::social::profile::StoreError> {
        self.fixture.store.get_profile(user).await
    }

    async fn display_names(
        &self,
        users: &[UserId],
    ) -> Result<HashMap<UserId, String>, app::social::profile::StoreError> {
        self.fixture.store.display_names(users).await
    }
}

#[async_trait]
impl GraphStore for DeactivatedAfterRead<'_> {
    async fn follow_target(
        &self,
        user: &UserId,
    ) -> Result<Option<UserStatus>, app::social::profile::StoreError> {
        let status = self.fixture.store.follow_target(user).await;
        self.fixture.deactivate(user.as_str()).await;
        status
    }

    async fn count_attempt(
        &self,
        attempt: &Attempt,
    ) -> Result<Counted, app::social::profile::StoreError> {
        self.fixture.store.count_attempt(attempt).await
    }

    async fn follow(
        &self,
        change: &GraphChange,
        max_following: u32,
    ) -> Result<FollowWrite, app::social::profile::StoreError> {
        self.fixture.store.follow(change, max_following).await
    }

    async fn unfollow(
        &self,
        change: &GraphChange,
        attempt: &Attempt,
    ) -> Result<UnfollowWrite, app::social::profile::StoreError> {
        self.fixture.store.unfollow(change, attempt).await
    }

    async fn followed_at(
        &self,
        relationship: &Relationship,
    ) -> Result<Option<String>, app::social::profile::StoreError> {
        self.fixture.store.followed_at(relationship).await
    }

    async fn list_edges(
        &self,
        user: &UserId,
        direction: Direction,
        limit: PageLimit,
        cursor: Option<&Cursor>,
    ) -> Result<app::social::follow::EdgePage, ListEdgesError> {
        self.fixture
            .store
            .list_edges(user, direction, limit, cursor)
            .await
    }
}

#[tokio::test]
async fn a_follow_racing_a_deactivation_is_ordered_before_it_and_later_ones_are_refused() {
    let f = Fixture::new(&["ada", "bob", "cat"]).await;
    let racing = DeactivatedAfterRead { fixture: &f };
    // ada's follow read bob active; bob was deactivated before its transaction committed.
    let state = follow::follow(&racing, &pair("ada", "bob"), &LIMITS, NOW)
        .await
        .unwrap();
    assert!(state.changed);
    let profile = f.profile("bob").await;
    assert_eq!(get_s(&profile, "status").unwrap(), "DEACTIVATED");
    assert!(f.item("USER#ada", "FOLLOWS#bob").await.is_some());
    assert_eq!(f.outbox_events().await.len(), 1);

    // A follow that reads after the deactivation is refused and writes nothing.
    let err = follow::follow(&f.store, &pair("cat", "bob"), &LIMITS, NOW)
        .await
        .unwrap_err();
    assert!(matches!(err, FollowError::TargetInactive(_)), "{err:?}");
    assert!(f.item("USER#cat", "FOLLOWS#bob").await.is_none());
    assert_eq!(f.following_count("cat").await, 0);
    assert_eq!(f.outbox_events().await.len(), 1);
}

#[tokio::test]
async fn concurrent_follows_and_unfollows_of_one_pair_keep_the_counter_equal_to_the_edges() {
    let f = Fixture::new(&["ada", "bob"]).await;
    let mut tasks = Vec::new();
    for task in 0..6 {
        let store = f.store.clone();
        tasks.push(tokio::spawn(async move {
            for round in 0..5 {
                let relationship = pair("ada", "bob");
                let now = OffsetDateTime::now_utc();
                let result = if (task + round) % 2 == 0 {
                    follow::follow(&store, &relationship, &LIMITS, now).await
                } else {
                    follow::unfollow(&store, &relationship, &LIMITS, now).await
                };
                match result {
                    Ok(_) | Err(FollowError::Busy) => {}
                    Err(err) => panic!("{err:?}"),
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let edges = usize::from(f.item("USER#ada", "FOLLOWS#bob").await.is_some());
    let count = f.following_count("ada").await as usize;
    assert_eq!(count, edges);
    // Every change emitted exactly one event, alternating follow and unfollow.
    let events = f.outbox_events().await;
    let follows = events
        .iter()
        .filter(|e| matches!(e, SocialEvent::UserFollowed(_)))
        .count();
    assert_eq!(follows - (events.len() - follows), edges);
}
