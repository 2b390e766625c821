//! Following: the commands, their outcomes and the port they need from the store.
//!
//! A follow is one transaction: the target must exist and be active, the edge must be new,
//! the follower's `followingCount` goes up by one, and a `UserFollowed` event goes into the
//! outbox. The followee's `followerCount` is not written here: a celebrity's profile would be
//! a hot key, so the count is derived from the events, asynchronously. Unfollow mirrors it.
//!
//! Both are idempotent: following someone already followed, or unfollowing someone not
//! followed, changes nothing, emits no event and answers with the current state.

use super::cursor::{Cursor, InvalidCursor, PageLimit};
use super::profile::{Profile, ProfileStore, StoreError, UserStatus};
use crate::events::{Envelope, FollowPayload, USER_FOLLOWED, USER_UNFOLLOWED};
use crate::ids::UserId;
use async_trait::async_trait;
use std::time::Duration;
use time::OffsetDateTime;

/// How long an outbox item is kept after its transaction: far longer than the relay needs.
pub const OUTBOX_TTL_SECONDS: i64 = 24 * 60 * 60;

/// Why a follow request did not get its answer.
#[derive(Debug, thiserror::Error)]
pub enum FollowError {
    #[error("a user cannot follow or unfollow themselves")]
    SelfFollow,
    #[error("user {0} does not exist")]
    UnknownUser(UserId),
    #[error("user {0} is deactivated and cannot be followed")]
    TargetInactive(UserId),
    #[error("create your profile with PUT /users/me before following anyone")]
    ProfileRequired,
    #[error("the follow graph is busy for these users; retry shortly")]
    Busy,
    #[error(transparent)]
    InvalidCursor(#[from] InvalidCursor),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// "`follower` follows (or stops following) `followee`", two different users.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Relationship {
    pub follower: UserId,
    pub followee: UserId,
}

impl Relationship {
    pub fn new(follower: UserId, followee: UserId) -> Result<Self, FollowError> {
        if follower == followee {
            return Err(FollowError::SelfFollow);
        }
        Ok(Self { follower, followee })
    }
}

/// One change of the graph as the store writes it: the edge and the outbox event.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphChange {
    pub relationship: Relationship,
    /// RFC 3339 UTC with a fixed six fractional digits, so that it sorts as text.
    pub at: String,
    pub event: Envelope<FollowPayload>,
    /// Epoch seconds after which the outbox item may be deleted.
    pub event_expires_at: i64,
}

/// What the store did with a follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FollowWrite {
    Written,
    /// The target has no profile or is not active; nothing was written.
    TargetUnavailable,
    AlreadyFollowing,
    /// The follower has no profile; nothing was written.
    NoFollowerProfile,
    /// A concurrent transaction held one of the items; nothing was written.
    Conflict,
}

/// What the store did with an unfollow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnfollowWrite {
    Written,
    NotFollowing,
    Conflict,
}

/// Which side of the graph a list shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Who follows the user.
    Followers,
    /// Whom the user follows.
    Following,
}

/// One edge of a list, seen from the listed user: the other user and when the edge was made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdgeEntry {
    pub user: UserId,
    pub followed_at: String,
}

/// A page of edges, newest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdgePage {
    pub entries: Vec<EdgeEntry>,
    pub next: Option<Cursor>,
}

/// Why a page of edges could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ListEdgesError {
    #[error(transparent)]
    InvalidCursor(#[from] InvalidCursor),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What following needs from the store, beyond profiles.
#[async_trait]
pub trait GraphStore: ProfileStore {
    /// Writes the edge, the follower's count and the outbox event in one transaction.
    async fn follow(&self, change: &GraphChange) -> Result<FollowWrite, StoreError>;

    /// Deletes the edge, decrements the follower's count and writes the outbox event in one
    /// transaction.
    async fn unfollow(&self, change: &GraphChange) -> Result<UnfollowWrite, StoreError>;

    /// When `relationship` was made, if it exists (a strongly consistent read).
    async fn followed_at(&self, relationship: &Relationship) -> Result<Option<String>, StoreError>;

    /// One page of `user`'s followers or followings, newest first.
    async fn list_edges(
        &self,
        user: &UserId,
        direction: Direction,
        limit: PageLimit,
        cursor: Option<&Cursor>,
    ) -> Result<EdgePage, ListEdgesError>;
}

/// How often and how patiently to retry a transaction that conflicted with another.
#[derive(Clone, Copy, Debug)]
pub struct RetryPolicy {
    pub attempts: u32,
    /// The pause before retry `n` is random in `0..=n * max_jitter`.
    pub max_jitter: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: 3,
            max_jitter: Duration::from_millis(20),
        }
    }
}

impl RetryPolicy {
    async fn pause(&self, attempt: u32) {
        let ceiling = self.max_jitter.saturating_mul(attempt);
        if ceiling.is_zero() {
            return;
        }
        // Random so that two requests that collided do not collide again in step.
        let random = uuid::Uuid::new_v4().as_u128() as u64;
        let nanos = random % (ceiling.as_nanos() as u64 + 1);
        tokio::time::sleep(Duration::from_nanos(nanos)).await;
    }
}

/// The state of an edge after a follow or unfollow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FollowState {
    pub relationship: Relationship,
    /// When the edge was made; `None` when not following.
    pub followed_at: Option<String>,
    /// Whether this request changed the graph (and emitted an event).
    pub changed: bool,
}

fn change(relationship: &Relationship, kind: &str, now: OffsetDateTime) -> GraphChange {
    let at = crate::clock::format(now);
    GraphChange {
        relationship: relationship.clone(),
        event: Envelope {
            kind: kind.to_owned(),
            version: 1,
            id: uuid::Uuid::now_v7().to_string(),
            occurred_at: at.clone(),
            payload: FollowPayload {
                follower_id: relationship.follower.to_string(),
                followee_id: relationship.followee.to_string(),
            },
        },
        at,
        event_expires_at: now.unix_timestamp() + OUTBOX_TTL_SECONDS,
    }
}

/// `relationship.follower` follows `relationship.followee`.
#[tracing::instrument(skip(store, retry), fields(follower = %relationship.follower, followee = %relationship.followee))]
pub async fn follow(
    store: &dyn GraphStore,
    retry: &RetryPolicy,
    relationship: &Relationship,
    now: OffsetDateTime,
) -> Result<FollowState, FollowError> {
    let change = change(relationship, USER_FOLLOWED, now);
    for attempt in 1..=retry.attempts {
        match store.follow(&change).await? {
            FollowWrite::Written => {
                return Ok(FollowState {
                    relationship: relationship.clone(),
                    followed_at: Some(change.at),
                    changed: true,
                });
            }
            FollowWrite::AlreadyFollowing => {
                if let Some(at) = store.followed_at(relationship).await? {
                    return Ok(FollowState {
                        relationship: relationship.clone(),
                        followed_at: Some(at),
                        changed: false,
                    });
                }
                // Unfollowed between the two reads: try the follow again.
            }
            FollowWrite::TargetUnavailable => {
                // Only now tell "unknown" from "inactive": the common case pays no read.
                match store.get_profile(&relationship.followee).await? {
                    None => return Err(FollowError::UnknownUser(relationship.followee.clone())),
                    Some(profile) if profile.status != UserStatus::Active => {
                        return Err(FollowError::TargetInactive(relationship.followee.clone()));
                    }
                    // Created or reactivated meanwhile: try again.
                    Some(_) => {}
                }
            }
            FollowWrite::NoFollowerProfile => return Err(FollowError::ProfileRequired),
            FollowWrite::Conflict => {
                tracing::info!(attempt, "follow transaction conflicted");
                if attempt < retry.attempts {
                    retry.pause(attempt).await;
                }
            }
        }
    }
    Err(FollowError::Busy)
}

/// `relationship.follower` stops following `relationship.followee`.
#[tracing::instrument(skip(store, retry), fields(follower = %relationship.follower, followee = %relationship.followee))]
pub async fn unfollow(
    store: &dyn GraphStore,
    retry: &RetryPolicy,
    relationship: &Relationship,
    now: OffsetDateTime,
) -> Result<FollowState, FollowError> {
    let change = change(relationship, USER_UNFOLLOWED, now);
    for attempt in 1..=retry.attempts {
        let changed = match store.unfollow(&change).await? {
            UnfollowWrite::Written => true,
            UnfollowWrite::NotFollowing => false,
            UnfollowWrite::Conflict => {
                tracing::info!(attempt, "unfollow transaction conflicted");
                if attempt < retry.attempts {
                    retry.pause(attempt).await;
                }
                continue;
            }
        };
        return Ok(FollowState {
            relationship: relationship.clone(),
            followed_at: None,
            changed,
        });
    }
    Err(FollowError::Busy)
}

/// A user's profile.
pub async fn profile(store: &dyn ProfileStore, user: &UserId) -> Result<Profile, FollowError> {
    store
        .get_profile(user)
        .await?
        .ok_or_else(|| FollowError::UnknownUser(user.clone()))
}

/// One user of a follower or following list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedUser {
    pub user_id: UserId,
    /// `None` when the user has no profile (any more).
    pub display_name: Option<String>,
    pub followed_at: String,
}

/// A page of a follower or following list, newest first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserPage {
    pub items: Vec<ListedUser>,
    pub next: Option<Cursor>,
}

/// One page of `user`'s followers or followings, with their display names.
#[tracing::instrument(skip(store, cursor))]
pub async fn list(
    store: &dyn GraphStore,
    user: &UserId,
    direction: Direction,
    limit: PageLimit,
    cursor: Option<&Cursor>,
) -> Result<UserPage, FollowError> {
    // The existence check and the page are independent reads: one round trip, not two.
    let (profile, page) = tokio::join!(
        store.get_profile(user),
        store.list_edges(user, direction, limit, cursor)
    );
    if profile?.is_none() {
        return Err(FollowError::UnknownUser(user.clone()));
    }
    let page = page.map_err(|err| match err {
        ListEdgesError::InvalidCursor(err) => FollowError::InvalidCursor(err),
        ListEdgesError::Store(err) => FollowError::Store(err),
    })?;
    let users: Vec<UserId> = page
        .entries
        .iter()
        .map(|entry| entry.user.clone())
        .collect();
    let mut names = if users.is_empty() {
        Default::default()
    } else {
        store.display_names(&users).await?
    };
    let items = page
        .entries
        .into_iter()
        .map(|entry| ListedUser {
            display_name: names.remove(&entry.user),
            user_id: entry.user,
            followed_at: entry.followed_at,
        })
        .collect();
    Ok(UserPage {
        items,
        next: page.next,
    })
}

/// An in-memory store with the DynamoDB adapter's semantics, for domain and handler tests.
#[cfg(test)]
pub(crate) mod fake {
    use super::*;
    use crate::social::profile::DisplayName;
    use std::collections::{BTreeMap, HashMap};
    use std::sync::Mutex;

    #[derive(Default)]
    pub(crate) struct State {
        pub profiles: HashMap<UserId, Profile>,
        /// (follower, followee) → followedAt.
        pub edges: BTreeMap<(UserId, UserId), String>,
        pub outbox: Vec<Envelope<FollowPayload>>,
        /// How many of the next transactions conflict.
        pub conflicts: u32,
        pub transactions: u32,
    }

    #[derive(Default)]
    pub(crate) struct MemoryGraph(pub Mutex<State>);

    impl MemoryGraph {
        pub fn state(&self) -> std::sync::MutexGuard<'_, State> {
            self.0.lock().unwrap()
        }

        pub fn with_users(users: &[(&str, UserStatus)]) -> Self {
            let graph = Self::default();
            for (id, status) in users {
                let id = UserId::parse(id).unwrap();
                graph.state().profiles.insert(
                    id.clone(),
                    Profile {
                        display_name: format!("name of {id}"),
                        user_id: id,
                        following_count: 0,
                        follower_count: 0,
                        status: *status,
                        created_at: "2026-11-30T18:00:00.000000Z".to_owned(),
                    },
                );
            }
            graph
        }

        fn conflicted(state: &mut State) -> bool {
            state.transactions += 1;
            if state.conflicts > 0 {
                state.conflicts -= 1;
                return true;
            }
            false
        }
    }

    #[async_trait]
    impl ProfileStore for MemoryGraph {
        async fn upsert_profile(
            &self,
            user: &UserId,
            name: &DisplayName,
            now: &str,
        ) -> Result<Profile, StoreError> {
            let mut state = self.state();
            let profile = state
                .profiles
                .entry(user.clone())
                .or_insert_with(|| Profile {
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

        async fn get_profile(&self, user: &UserId) -> Result<Option<Profile>, StoreError> {
            Ok(self.state().profiles.get(user).cloned())
        }

        async fn display_names(
            &self,
            users: &[UserId],
        ) -> Result<HashMap<UserId, String>, StoreError> {
            let state = self.state();
            Ok(users
                .iter()
                .filter_map(|user| {
                    let profile = state.profiles.get(user)?;
                    Some((user.clone(), profile.display_name.clone()))
                })
                .collect())
        }
    }

    #[async_trait]
    impl GraphStore for MemoryGraph {
        async fn follow(&self, change: &GraphChange) -> Result<FollowWrite, StoreError> {
            let mut state = self.state();
            if Self::conflicted(&mut state) {
                return Ok(FollowWrite::Conflict);
            }
            let Relationship { follower, followee } = &change.relationship;
            match state.profiles.get(followee) {
                Some(profile) if profile.status == UserStatus::Active => {}
                _ => return Ok(FollowWrite::TargetUnavailable),
            }
            let edge = (follower.clone(), followee.clone());
            if state.edges.contains_key(&edge) {
                return Ok(FollowWrite::AlreadyFollowing);
            }
            let Some(profile) = state.profiles.get_mut(follower) else {
                return Ok(FollowWrite::NoFollowerProfile);
            };
            profile.following_count += 1;
            state.edges.insert(edge, change.at.clone());
            state.outbox.push(change.event.clone());
            Ok(FollowWrite::Written)
        }

        async fn unfollow(&self, change: &GraphChange) -> Result<UnfollowWrite, StoreError> {
            let mut state = self.state();
            if Self::conflicted(&mut state) {
                return Ok(UnfollowWrite::Conflict);
            }
            let Relationship { follower, followee } = &change.relationship;
            if state
                .edges
                .remove(&(follower.clone(), followee.clone()))
                .is_none()
            {
                return Ok(UnfollowWrite::NotFollowing);
            }
            if let Some(profile) = state.profiles.get_mut(follower) {
                profile.following_count -= 1;
            }
            state.outbox.push(change.event.clone());
            Ok(UnfollowWrite::Written)
        }

        async fn followed_at(
            &self,
            relationship: &Relationship,
        ) -> Result<Option<String>, StoreError> {
            let key = (relationship.follower.clone(), relationship.followee.clone());
            Ok(self.state().edges.get(&key).cloned())
        }

        async fn list_edges(
            &self,
            user: &UserId,
            direction: Direction,
            limit: PageLimit,
            cursor: Option<&Cursor>,
        ) -> Result<EdgePage, ListEdgesError> {
            // Newest first, ties by the other user's id, as the index sort key orders them.
            let mut entries: Vec<(String, UserId)> = self
                .state()
                .edges
                .iter()
                .filter_map(|((follower, followee), at)| match direction {
                    Direction::Followers if followee == user => {
                        Some((format!("{at}#{follower}"), follower.clone()))
                    }
                    Direction::Following if follower == user => {
                        Some((format!("{at}#{followee}"), followee.clone()))
                    }
                    _ => None,
                })
                .collect();
            entries.sort_by(|a, b| b.0.cmp(&a.0));
            let start = match cursor {
                None => 0,
                Some(cursor) => {
                    let after = cursor.get("sk").ok_or(InvalidCursor)?;
                    entries
                        .iter()
                        .take_while(|(sk, _)| sk.as_str() >= after)
                        .count()
                }
            };
            let limit = limit.get() as usize;
            let page: Vec<_> = entries.iter().skip(start).take(limit).collect();
            let next = (start + limit < entries.len()).then(|| {
                let last = &page.last().expect("a full page").0;
                Cursor::new(BTreeMap::from([("sk".to_owned(), last.clone())]))
            });
            Ok(EdgePage {
                entries: page
                    .into_iter()
                    .map(|(sk, user)| EdgeEntry {
                        user: user.clone(),
                        followed_at: sk.split('#').next().unwrap().to_owned(),
                    })
                    .collect(),
                next,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fake::MemoryGraph;
    use super::*;
    use crate::events::SocialEvent;
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-11-30 18:00:00.5 UTC);
    const NO_WAIT: RetryPolicy = RetryPolicy {
        attempts: 3,
        max_jitter: Duration::ZERO,
    };

    fn id(raw: &str) -> UserId {
        UserId::parse(raw).unwrap()
    }

    fn pair(follower: &str, followee: &str) -> Relationship {
        Relationship::new(id(follower), id(followee)).unwrap()
    }

    fn graph() -> MemoryGraph {
        MemoryGraph::with_users(&[
            ("ada", UserStatus::Active),
            ("bob", UserStatus::Active),
            ("cat", UserStatus::Active),
            ("gone", UserStatus::Deactivated),
        ])
    }

    #[test]
    fn following_oneself_is_refused() {
        assert!(matches!(
            Relationship::new(id("ada"), id("ada")),
            Err(FollowError::SelfFollow)
        ));
    }

    #[tokio::test]
    async fn a_follow_writes_the_edge_the_followers_count_and_one_versioned_event() {
        let graph = graph();
        let state = follow(&graph, &NO_WAIT, &pair("ada", "bob"), NOW)
            .await
            .unwrap();
        assert!(state.changed);
        assert_eq!(
            state.followed_at.as_deref(),
            Some("2026-11-30T18:00:00.500000Z")
        );

        let s = graph.state();
        assert_eq!(s.profiles[&id("ada")].following_count, 1);
        // The followee's profile is a potential hot key: never written by the request.
        assert_eq!(s.profiles[&id("bob")].follower_count, 0);
        assert_eq!(s.outbox.len(), 1);
        let event = &s.outbox[0];
        assert_eq!(event.kind, "UserFollowed");
        assert_eq!(event.version, 1);
        assert_eq!(event.occurred_at, "2026-11-30T18:00:00.500000Z");
        assert_eq!(
            uuid::Uuid::parse_str(&event.id).unwrap().get_version_num(),
            7
        );
        let body = serde_json::to_string(event).unwrap();
        match SocialEvent::parse(&body).unwrap() {
            SocialEvent::UserFollowed(parsed) => {
                assert_eq!(parsed.payload.follower_id, "ada");
                assert_eq!(parsed.payload.followee_id, "bob");
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn following_again_changes_nothing_and_answers_the_first_follow_time() {
        let graph = graph();
        follow(&graph, &NO_WAIT, &pair("ada", "bob"), NOW)
            .await
            .unwrap();
        let later = NOW + time::Duration::hours(1);
        let again = follow(&graph, &NO_WAIT, &pair("ada", "bob"), later)
            .await
            .unwrap();
        assert!(!again.changed);
        assert_eq!(
            again.followed_at.as_deref(),
            Some("2026-11-30T18:00:00.500000Z")
        );
        let s = graph.state();
        assert_eq!(s.profiles[&id("ada")].following_count, 1);
        assert_eq!(s.outbox.len(), 1);
    }

    #[tokio::test]
    async fn an_unknown_target_is_unknown_and_a_deactivated_one_inactive() {
        let graph = graph();
        let err = follow(&graph, &NO_WAIT, &pair("ada", "nobody"), NOW)
            .await
            .unwrap_err();
        assert!(matches!(err, FollowError::UnknownUser(u) if u.as_str() == "nobody"));
        let err = follow(&graph, &NO_WAIT, &pair("ada", "gone"), NOW)
            .await
            .unwrap_err();
        assert!(matches!(err, FollowError::TargetInactive(_)), "{err:?}");
        assert!(graph.state().outbox.is_empty());
        assert_eq!(graph.state().profiles[&id("ada")].following_count, 0);
    }

    #[tokio::test]
    async fn a_caller_without_a_profile_must_create_one_first() {
        let graph = graph();
        let err = follow(&graph, &NO_WAIT, &pair("newbie", "bob"), NOW)
            .await
            .unwrap_err();
        assert!(matches!(err, FollowError::ProfileRequired), "{err:?}");
        assert!(graph.state().edges.is_empty());
    }

    #[tokio::test]
    async fn conflicts_are_retried_then_reported_busy() {
        let graph = graph();
        graph.state().conflicts = 2;
        let state = follow(&graph, &NO_WAIT, &pair("ada", "bob"), NOW)
            .await
            .unwrap();
        assert!(state.changed);
        assert_eq!(graph.state().transactions, 3);

        graph.state().conflicts = 3;
        let err = unfollow(&graph, &NO_WAIT, &pair("ada", "bob"), NOW)
            .await
            .unwrap_err();
        assert!(matches!(err, FollowError::Busy), "{err:?}");
        assert_eq!(graph.state().transactions, 6);
        assert_eq!(
            graph.state().edges.len(),
            1,
            "a busy unfollow changed nothing"
        );
    }

    #[tokio::test]
    async fn the_default_retry_pauses_briefly() {
        let graph = graph();
        graph.state().conflicts = 5;
        let started = std::time::Instant::now();
        let err = follow(&graph, &RetryPolicy::default(), &pair("ada", "bob"), NOW)
            .await
            .unwrap_err();
        assert!(matches!(err, FollowError::Busy));
        assert!(started.elapsed() < Duration::from_millis(500));
    }

    #[tokio::test]
    async fn an_unfollow_mirrors_the_follow_and_is_idempotent() {
        let graph = graph();
        follow(&graph, &NO_WAIT, &pair("ada", "bob"), NOW)
            .await
            .unwrap();
        let state = unfollow(&graph, &NO_WAIT, &pair("ada", "bob"), NOW)
            .await
            .unwrap();
        assert!(state.changed);
        assert_eq!(state.followed_at, None);
        let again = unfollow(&graph, &NO_WAIT, &pair("ada", "bob"), NOW)
            .await
            .unwrap();
        assert!(!again.changed);

        let s = graph.state();
        assert!(s.edges.is_empty());
        assert_eq!(s.profiles[&id("ada")].following_count, 0);
        let kinds: Vec<&str> = s.outbox.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(kinds, ["UserFollowed", "UserUnfollowed"]);
        assert_ne!(s.outbox[0].id, s.outbox[1].id);
    }

    #[tokio::test]
    async fn lists_are_newest_first_with_names_and_page_by_cursor() {
        let graph = graph();
        for (i, follower) in ["ada", "cat", "newbie"].into_iter().enumerate() {
            if follower == "newbie" {
                // An edge whose follower has no profile (any more): listed without a name.
                graph.state().edges.insert(
                    (id("newbie"), id("bob")),
                    crate::clock::format(NOW + time::Duration::minutes(10)),
                );
                continue;
            }
            let at = NOW + time::Duration::minutes(i as i64);
            follow(&graph, &NO_WAIT, &pair(follower, "bob"), at)
                .await
                .unwrap();
        }
        let limit = PageLimit::parse(Some("2")).unwrap();
        let first = list(&graph, &id("bob"), Direction::Followers, limit, None)
            .await
            .unwrap();
        let users: Vec<&str> = first.items.iter().map(|u| u.user_id.as_str()).collect();
        assert_eq!(users, ["newbie", "cat"]);
        assert_eq!(first.items[0].display_name, None);
        assert_eq!(first.items[1].display_name.as_deref(), Some("name of cat"));
        assert_eq!(first.items[1].followed_at, "2026-11-30T18:01:00.500000Z");

        let second = list(
            &graph,
            &id("bob"),
            Direction::Followers,
            limit,
            first.next.as_ref(),
        )
        .await
        .unwrap();
        let users: Vec<&str> = second.items.iter().map(|u| u.user_id.as_str()).collect();
        assert_eq!(users, ["ada"]);
        assert_eq!(second.next, None);

        let following = list(&graph, &id("ada"), Direction::Following, limit, None)
            .await
            .unwrap();
        assert_eq!(following.items.len(), 1);
        assert_eq!(following.items[0].user_id.as_str(), "bob");
        assert_eq!(
            following.items[0].display_name.as_deref(),
            Some("name of bob")
        );
    }

    #[tokio::test]
    async fn the_list_of_an_unknown_user_is_unknown() {
        let graph = graph();
        let err = list(
            &graph,
            &id("nobody"),
            Direction::Followers,
            PageLimit::default(),
            None,
        )
        .await
        .unwrap_err();
        assert!(matches!(err, FollowError::UnknownUser(_)), "{err:?}");
    }
}
