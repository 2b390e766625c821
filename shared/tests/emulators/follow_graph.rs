//! The follow graph against DynamoDB: the follow and unfollow transactions with their outbox
//! events, and the newest-first lists with their cursors.

use crate::support::{clients, create_social_table};
use app::cursor::{Cursor, PageLimit};
use app::dynamo::{get_n, get_s, key, s};
use app::events::SocialEvent;
use app::ids::UserId;
use app::retry::Backoff;
use app::social::follow::{
    self, Attempt, Counted, FollowLimits, FollowWrite, GraphChange, ListEdgesError, UnfollowWrite,
};
use app::social::{
    Direction, DisplayName, DynamoSocialStore, FollowError, GraphStore, ProfileStore, Relationship,
    UserStatus,
};
use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::{BTreeMap, HashMap};
use std::num::NonZeroU32;
use time::OffsetDateTime;
use time::macros::datetime;

const NOW: OffsetDateTime = datetime!(2026-11-30 18:00:00.25 UTC);
/// Limits that none of the tests of other behaviour meet.
const LIMITS: FollowLimits = FollowLimits {
    rate_per_minute: NonZeroU32::new(1_000).unwrap(),
    max_following: NonZeroU32::new(1_000).unwrap(),
};

type Item = HashMap<String, AttributeValue>;

struct Fixture {
    client: Client,
    table: String,
    store: DynamoSocialStore,
}

impl Fixture {
    /// A fresh social table with active profiles for `users`.
    async fn new(users: &[&str]) -> Self {
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

    async fn item(&self, pk: &str, sk: &str) -> Option<Item> {
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

    async fn profile(&self, user: &str) -> Item {
        self.item(&format!("USER#{user}"), "PROFILE").await.unwrap()
    }

    async fn all_items(&self) -> Vec<Item> {
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

    async fn outbox_events(&self) -> Vec<SocialEvent> {
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

    async fn deactivate(&self, user: &str) {
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

fn id(raw: &str) -> UserId {
    UserId::parse(raw).unwrap()
}

fn pair(follower: &str, followee: &str) -> Relationship {
    Relationship::new(id(follower), id(followee)).unwrap()
}

#[tokio::test]
async fn a_follow_writes_edge_counter_and_outbox_in_one_transaction_and_not_the_followee() {
    let f = Fixture::new(&["ada", "bob"]).await;
    let followee_before = f.profile("bob").await;

    let state = follow::follow(&f.store, &pair("ada", "bob"), &LIMITS, NOW)
        .await
        .unwrap();
    assert!(state.changed);
    let at = "2026-11-30T18:00:00.250000Z";
    assert_eq!(state.followed_at.as_deref(), Some(at));

    let edge = f.item("USER#ada", "FOLLOWS#bob").await.expect("the edge");
    for (name, value) in [
        ("followerId", "ada"),
        ("followeeId", "bob"),
        ("followedAt", at),
        ("gsi1pk", "FOLLOWERS#bob"),
        ("gsi1sk", &format!("{at}#ada")),
        ("gsi2pk", "FOLLOWING#ada"),
        ("gsi2sk", &format!("{at}#bob")),
    ] {
        assert_eq!(get_s(&edge, name).unwrap(), value, "{name}");
    }
    assert_eq!(
        get_n::<u64>(&f.profile("ada").await, "followingCount").unwrap(),
        1
    );
    // The followee's profile is a potential hot key: the request never writes it.
    assert_eq!(f.profile("bob").await, followee_before);

    let outbox: Vec<Item> = f
        .all_items()
        .await
        .into_iter()
        .filter(|item| get_s(item, "pk").unwrap().starts_with("OUTBOX#"))
        .collect();
    assert_eq!(outbox.len(), 1);
    assert_eq!(get_s(&outbox[0], "sk").unwrap(), "EVENT");
    let expires_at: i64 = get_n(&outbox[0], "expiresAt").unwrap();
    assert_eq!(expires_at, NOW.unix_timestamp() + 86_400);
    match SocialEvent::parse(get_s(&outbox[0], "event").unwrap()).unwrap() {
        SocialEvent::UserFollowed(event) => {
            assert_eq!(
                get_s(&outbox[0], "pk").unwrap(),
                format!("OUTBOX#{}", event.id)
            );
            assert_eq!(event.version, 1);
            assert_eq!(event.occurred_at, at);
            assert_eq!(event.payload.follower_id, "ada");
            assert_eq!(event.payload.followee_id, "bob");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn following_twice_changes_nothing_and_answers_the_first_time() {
    let f = Fixture::new(&["ada", "bob"]).await;
    follow::follow(&f.store, &pair("ada", "bob"), &LIMITS, NOW)
        .await
        .unwrap();
    let again = follow::follow(
        &f.store,
        &pair("ada", "bob"),
        &LIMITS,
        NOW + time::Duration::minutes(5),
    )
    .await
    .unwrap();
    assert!(!again.changed);
    assert_eq!(
        again.followed_at.as_deref(),
        Some("2026-11-30T18:00:00.250000Z")
    );
    assert_eq!(
        get_n::<u64>(&f.profile("ada").await, "followingCount").unwrap(),
        1
    );
    assert_eq!(f.outbox_events().await.len(), 1);
}

/// A follow or unfollow change of `follower` → `followee`, as the domain builds it.
fn graph_change(follower: &str, followee: &str) -> GraphChange {
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

fn limits(rate_per_minute: u32, max_following: u32) -> FollowLimits {
    FollowLimits {
        rate_per_minute: NonZeroU32::new(rate_per_minute).unwrap(),
        max_following: NonZeroU32::new(max_following).unwrap(),
    }
}

/// The sort key of the rate window that `at` falls in.
fn window_sk(at: OffsetDateTime) -> String {
    let seconds = at.unix_timestamp();
    format!("LIMIT#FOLLOW#{}", seconds - seconds.rem_euclid(60))
}

/// Every item but the rate windows: what the graph holds.
fn graph_items(items: Vec<Item>) -> Vec<Item> {
    items
        .into_iter()
        .filter(|item| !get_s(item, "sk").unwrap().starts_with("LIMIT#"))
        .collect()
}

#[tokio::test]
async fn failed_conditions_are_named_and_write_nothing() {
    let f = Fixture::new(&["ada", "bob", "gone"]).await;
    f.deactivate("gone").await;
    let before = f.all_items().await.len();
    assert_eq!(
        f.store
            .follow(&graph_change("newbie", "bob"), 1_000)
            .await
            .unwrap(),
        FollowWrite::NoFollowerProfile
    );
    let attempt = Attempt::new(&id("ada"), &LIMITS, NOW);
    assert_eq!(
        f.store
            .unfollow(&graph_change("ada", "bob"), &attempt)
            .await
            .unwrap(),
        UnfollowWrite::NotFollowing
    );
    assert_eq!(
        f.all_items().await.len(),
        before,
        "a cancelled unfollow counts nothing either"
    );

    // Through the domain, the read of the target tells the two target failures apart, and
    // neither writes anything but the attempt's count in the caller's window.
    let err = follow::follow(&f.store, &pair("ada", "nobody"), &LIMITS, NOW)
        .await
        .unwrap_err();
    assert!(matches!(err, FollowError::UnknownUser(_)), "{err:?}");
    let err = follow::follow(&f.store, &pair("ada", "gone"), &LIMITS, NOW)
        .await
        .unwrap_err();
    assert!(matches!(err, FollowError::TargetInactive(_)), "{err:?}");
    let err = follow::follow(&f.store, &pair("newbie", "bob"), &LIMITS, NOW)
        .await
        .unwrap_err();
    assert!(matches!(err, FollowError::ProfileRequired), "{err:?}");
    assert_eq!(graph_items(f.all_items().await).len(), before);
    let ada = f.item("USER#ada", &window_sk(NOW)).await.unwrap();
    assert_eq!(get_n::<u32>(&ada, "attempts").unwrap(), 2);
    let newbie = f.item("USER#newbie", &window_sk(NOW)).await.unwrap();
    assert_eq!(get_n::<u32>(&newbie, "attempts").unwrap(), 1);
}

#[tokio::test]
async fn a_window_admits_its_limit_then_refuses_and_each_minute_and_user_has_its_own() {
    let f = Fixture::new(&[]).await;
    let limits = limits(3, 1_000);
    let attempt = Attempt::new(&id("ada"), &limits, NOW);
    for _ in 0..3 {
        assert_eq!(
            f.store.count_attempt(&attempt).await.unwrap(),
            Counted::Admitted
        );
    }
    for _ in 0..2 {
        assert_eq!(
            f.store.count_attempt(&attempt).await.unwrap(),
            Counted::Limited
        );
    }
    let item = f.item("USER#ada", &window_sk(NOW)).await.unwrap();
    let minute = datetime!(2026-11-30 18:00:00 UTC).unix_timestamp();
    assert_eq!(
        get_s(&item, "sk").unwrap(),
        format!("LIMIT#FOLLOW#{minute}")
    );
    assert_eq!(
        get_n::<u32>(&item, "attempts").unwrap(),
        3,
        "a refused attempt writes nothing"
    );
    assert_eq!(get_s(&item, "entity").unwrap(), "FOLLOW_RATE");
    assert_eq!(get_n::<i64>(&item, "expiresAt").unwrap(), minute + 120);

    let bob = Attempt::new(&id("bob"), &limits, NOW);
    assert_eq!(
        f.store.count_attempt(&bob).await.unwrap(),
        Counted::Admitted
    );
    let next = Attempt::new(&id("ada"), &limits, NOW + time::Duration::minutes(1));
    assert_eq!(
        f.store.count_attempt(&next).await.unwrap(),
        Counted::Admitted
    );
}

#[tokio::test]
async fn an_unfollow_counts_in_its_transaction_and_a_full_window_refuses_it_whole() {
    let f = Fixture::new(&["ada", "bob", "cat"]).await;
    let limits = limits(2, 1_000);
    follow::follow(&f.store, &pair("ada", "bob"), &limits, NOW)
        .await
        .unwrap();
    let state = follow::unfollow(&f.store, &pair("ada", "bob"), &limits, NOW)
        .await
        .unwrap();
    assert!(state.changed);
    let window = f.item("USER#ada", &window_sk(NOW)).await.unwrap();
    assert_eq!(get_n::<u32>(&window, "attempts").unwrap(), 2);

    // The next minute: a follow, then the window filled up; the unfollow is refused whole.
    let later = NOW + time::Duration::minutes(1);
    follow::follow(&f.store, &pair("ada", "bob"), &limits, later)
        .await
        .unwrap();
    let attempt = Attempt::new(&id("ada"), &limits, later);
    assert_eq!(
        f.store.count_attempt(&attempt).await.unwrap(),
        Counted::Admitted
    );
    let events = f.outbox_events().await.len();
    for followee in ["bob", "cat"] {
        let err = follow::unfollow(&f.store, &pair("ada", followee), &limits, later)
            .await
            .unwrap_err();
        assert!(
            matches!(err, FollowError::RateLimited { limit: 2, .. }),
            "{followee}: {err:?}"
        );
    }
    assert!(f.item("USER#ada", "FOLLOWS#bob").await.is_some());
    assert_eq!(
        get_n::<u64>(&f.profile("ada").await, "followingCount").unwrap(),
        1
    );
    assert_eq!(f.outbox_events().await.len(), events);
    let window = f.item("USER#ada", &window_sk(later)).await.unwrap();
    assert_eq!(get_n::<u32>(&window, "attempts").unwrap(), 2);
}

#[tokio::test]
async fn the_following_cap_is_a_condition_of_the_follow_transaction() {
    let f = Fixture::new(&["ada", "bob", "cat", "dan"]).await;
    let limits = limits(1_000, 2);
    for user in ["bob", "cat"] {
        follow::follow(&f.store, &pair("ada", user), &limits, NOW)
            .await
            .unwrap();
    }
    let err = follow::follow(&f.store, &pair("ada", "dan"), &limits, NOW)
        .await
        .unwrap_err();
    assert!(
        matches!(err, FollowError::FollowingLimitReached { max: 2 }),
        "{err:?}"
    );
    assert_eq!(
        f.store
            .follow(&graph_change("ada", "dan"), 2)
            .await
            .unwrap(),
        FollowWrite::FollowingLimitReached
    );
    assert!(f.item("USER#ada", "FOLLOWS#dan").await.is_none());
    assert_eq!(f.outbox_events().await.len(), 2);
    // At the cap, following again answers the edge; unfollowing makes room.
    let again = follow::follow(&f.store, &pair("ada", "bob"), &limits, NOW)
        .await
        .unwrap();
    assert!(!again.changed);
    follow::unfollow(&f.store, &pair("ada", "cat"), &limits, NOW)
        .await
        .unwrap();
    assert!(
        follow::follow(&f.store, &pair("ada", "dan"), &limits, NOW)
            .await
            .unwrap()
            .changed
    );
    assert_eq!(
        get_n::<u64>(&f.profile("ada").await, "followingCount").unwrap(),
        2
    );
}

#[tokio::test]
async fn concurrent_follows_never_pass_the_cap() {
    let stars: Vec<String> = (0..8).map(|i| format!("star{i}")).collect();
    let mut users: Vec<&str> = stars.iter().map(String::as_str).collect();
    users.push("ada");
    let f = Fixture::new(&users).await;
    let limits = limits(1_000, 3);
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(stars.len()));
    let tasks: Vec<_> = stars
        .iter()
        .map(|star| {
            let (store, barrier, star) = (f.store.clone(), barrier.clone(), star.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                follow::follow(
                    &store,
                    &pair("ada", &star),
                    &limits,
                    OffsetDateTime::now_utc(),
                )
                .await
            })
        })
        .collect();
    let mut followed = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(state) => {
                assert!(state.changed);
                followed += 1;
            }
            // The transactions all hold ada's profile: some may conflict through every retry.
            Err(FollowError::FollowingLimitReached { max: 3 } | FollowError::Busy) => {}
            Err(err) => panic!("{err:?}"),
        }
    }
    let count: usize = get_n(&f.profile("ada").await, "followingCount").unwrap();
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
    let fans: Vec<String> = (0..24).map(|i| format!("fan{i}")).collect();
    let mut users: Vec<&str> = fans.iter().map(String::as_str).collect();
    users.push("star");
    let f = Fixture::new(&users).await;
    let store = f.store.clone().with_backoff(Backoff::NONE);
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(fans.len()));
    let tasks: Vec<_> = fans
        .iter()
        .map(|fan| {
            let (store, barrier, fan) = (store.clone(), barrier.clone(), fan.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                follow::follow(
                    &store,
                    &pair(&fan, "star"),
                    &LIMITS,
                    OffsetDateTime::now_utc(),
                )
                .await
            })
        })
        .collect();
    for task in tasks {
        let state = task.await.unwrap().expect("no follow conflicts");
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
    assert_eq!(
        get_n::<u64>(&f.profile("cat").await, "followingCount").unwrap(),
        0
    );
    assert_eq!(f.outbox_events().await.len(), 1);
}

#[tokio::test]
async fn an_unfollow_deletes_the_edge_decrements_and_emits_once() {
    let f = Fixture::new(&["ada", "bob"]).await;
    follow::follow(&f.store, &pair("ada", "bob"), &LIMITS, NOW)
        .await
        .unwrap();
    let state = follow::unfollow(&f.store, &pair("ada", "bob"), &LIMITS, NOW)
        .await
        .unwrap();
    assert!(state.changed);
    let again = follow::unfollow(&f.store, &pair("ada", "bob"), &LIMITS, NOW)
        .await
        .unwrap();
    assert!(!again.changed);

    assert!(f.item("USER#ada", "FOLLOWS#bob").await.is_none());
    assert_eq!(
        get_n::<u64>(&f.profile("ada").await, "followingCount").unwrap(),
        0
    );
    let events = f.outbox_events().await;
    assert!(matches!(
        events.as_slice(),
        [SocialEvent::UserFollowed(_), SocialEvent::UserUnfollowed(_)]
    ));
}

#[tokio::test]
async fn lists_are_newest_first_with_names_and_cursors_that_only_fit_their_list() {
    let followers = ["u0", "u1", "u2", "u3", "u4"];
    let mut users = vec!["star", "ada"];
    users.extend(followers);
    let f = Fixture::new(&users).await;
    for (minute, follower) in followers.iter().enumerate() {
        let at = NOW + time::Duration::minutes(minute as i64);
        follow::follow(&f.store, &pair(follower, "star"), &LIMITS, at)
            .await
            .unwrap();
    }
    follow::follow(&f.store, &pair("ada", "star"), &LIMITS, NOW)
        .await
        .unwrap();
    follow::follow(
        &f.store,
        &pair("ada", "u1"),
        &LIMITS,
        NOW + time::Duration::hours(1),
    )
    .await
    .unwrap();
    // A follower whose profile is gone is still listed, without a name.
    f.client
        .delete_item()
        .table_name(&f.table)
        .set_key(Some(key("USER#u4", "PROFILE")))
        .send()
        .await
        .unwrap();

    let limit = PageLimit::parse(Some("2")).unwrap();
    let mut seen = Vec::new();
    let mut cursor: Option<Cursor> = None;
    let mut pages = 0;
    loop {
        let page = follow::list(
            &f.store,
            &id("star"),
            Direction::Followers,
            limit,
            cursor.as_ref(),
        )
        .await
        .unwrap();
        pages += 1;
        seen.extend(page.items);
        match page.next {
            // Through its text, as a client hands it back.
            Some(next) => cursor = Some(Cursor::parse(&next.encode()).unwrap()),
            None => break,
        }
        assert!(pages < 10, "the pages never end");
    }
    let order: Vec<&str> = seen.iter().map(|user| user.user_id.as_str()).collect();
    // Newest first; ada and u0 followed at the same instant, so the user id breaks the tie.
    assert_eq!(order, ["u4", "u3", "u2", "u1", "u0", "ada"]);
    assert_eq!(seen[0].display_name, None);
    assert_eq!(seen[1].display_name.as_deref(), Some("Name of u3"));
    assert_eq!(seen[1].followed_at, "2026-11-30T18:03:00.250000Z");

    let following = follow::list(
        &f.store,
        &id("ada"),
        Direction::Following,
        PageLimit::default(),
        None,
    )
    .await
    .unwrap();
    let order: Vec<&str> = following.items.iter().map(|u| u.user_id.as_str()).collect();
    assert_eq!(order, ["u1", "star"]);
    assert_eq!(following.next, None);

    // A cursor of star's followers does not page ada's followings, nor u1's followers.
    let first = f
        .store
        .list_edges(&id("star"), Direction::Followers, limit, None)
        .await
        .unwrap();
    let star_cursor = first.next.expect("more than one page");
    for (user, direction) in [("ada", Direction::Following), ("u1", Direction::Followers)] {
        let err = f
            .store
            .list_edges(&id(user), direction, limit, Some(&star_cursor))
            .await
            .unwrap_err();
        assert!(matches!(err, ListEdgesError::InvalidCursor(_)), "{err:?}");
    }
    let forged = Cursor::new(BTreeMap::from([("pk".to_owned(), "USER#star".to_owned())]));
    let err = follow::list(
        &f.store,
        &id("star"),
        Direction::Followers,
        limit,
        Some(&forged),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, FollowError::InvalidCursor(_)), "{err:?}");

    let err = follow::list(&f.store, &id("nobody"), Direction::Followers, limit, None)
        .await
        .unwrap_err();
    assert!(matches!(err, FollowError::UnknownUser(_)), "{err:?}");
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
    let count: usize = get_n(&f.profile("ada").await, "followingCount").unwrap();
    assert_eq!(count, edges);
    // Every change emitted exactly one event, alternating follow and unfollow.
    let events = f.outbox_events().await;
    let follows = events
        .iter()
        .filter(|e| matches!(e, SocialEvent::UserFollowed(_)))
        .count();
    assert_eq!(follows - (events.len() - follows), edges);
}
