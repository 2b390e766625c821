//! Following: the commands, their outcomes and the port they need from the store.
//!
//! A follow reads the target (it must exist and be active), then writes one transaction of
//! items the follower owns: the edge must be new, the follower's `followingCount` goes up by
//! one, and a `UserFollowed` event goes into the outbox. The followee's profile is in no
//! transaction of a follow: a celebrity's profile would be a hot key, where concurrent
//! transactions conflict (DynamoDB cancels all but one), so its `followerCount` is derived
//! from the events, asynchronously. Unfollow mirrors it.
//!
//! A follow racing a deactivation of its target ends as if it came first: when the follow
//! read the target active and its transaction commits after the deactivation, the edge
//! exists and the follow answers 200, exactly as for a follow a moment earlier (deactivating
//! a user keeps their edges). A follow whose read comes after the deactivation answers 409
//! `TARGET_INACTIVE` and writes nothing. The read is strongly consistent, so the window is
//! one round trip.
//!
//! Both are idempotent: following someone already followed, or unfollowing someone not
//! followed, changes nothing, emits no event and answers with the current state.
//!
//! Two limits hold against abuse ([`FollowLimits`]):
//!
//! - **A rate per user**: every follow and unfollow attempt that reaches the store counts in
//!   the caller's fixed one-minute window, idempotent ones included (a bot toggling or
//!   re-following the same user costs reads and writes too, and must meet the limit as soon
//!   as a changing one would). The count is an item of the caller's alone ([`Attempt`]),
//!   written by a conditional update: no item that another user's request or a consumer
//!   writes, so no new hot key and no new contention. A follow counts in parallel with its
//!   read of the target (no extra round trip); an unfollow counts inside its transaction, and
//!   only an unfollow that changed nothing counts with a write of its own afterwards. Requests
//!   refused before the store (a self-follow, a malformed id) cost nothing and do not count.
//! - **A cap on followings**: the follower's `followingCount` must be below the cap, a
//!   condition on the counter update of the follow transaction, so it holds under concurrent
//!   follows. Following someone already followed answers 200 at the cap; unfollowing is
//!   never capped.

use super::cursor::{Cursor, InvalidCursor, PageLimit};
use super::profile::{Profile, ProfileStore, StoreError, UserStatus};
use crate::config::{ConfigError, Env};
use crate::events::{Envelope, FollowPayload, USER_FOLLOWED, USER_UNFOLLOWED};
use crate::ids::UserId;
use async_trait::async_trait;
use std::num::NonZeroU32;
use time::OffsetDateTime;

/// How long an outbox item is kept after its transaction: far longer than the relay needs.
pub const OUTBOX_TTL_SECONDS: i64 = 24 * 60 * 60;

/// The length of one window of the follow rate limit.
pub const RATE_WINDOW_SECONDS: i64 = 60;

/// How long a window's item is kept after the window ended. Nothing reads a past window (the
/// next one is another item), so this only bounds storage; DynamoDB's TTL deletes it later.
const RATE_ITEM_TTL_SECONDS: i64 = 60;

/// The limits on following, read from the configuration at cold start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FollowLimits {
    /// `FOLLOW_RATE_PER_MINUTE`: follow and unfollow attempts per user and minute, together.
    pub rate_per_minute: NonZeroU32,
    /// `MAX_FOLLOWING`: how many users one account may follow.
    pub max_following: NonZeroU32,
}

impl FollowLimits {
    /// The defaults when the variables are unset, the template's production defaults: far
    /// above what a person clicks (one follow every two seconds, for a minute on end), and
    /// the classic cap of 5,000 followings.
    pub const DEFAULT: Self = Self {
        rate_per_minute: NonZeroU32::new(30).unwrap(),
        max_following: NonZeroU32::new(5_000).unwrap(),
    };

    /// `FOLLOW_RATE_PER_MINUTE` and `MAX_FOLLOWING`, each a whole number of at least 1.
    pub fn from_env(env: &Env) -> Result<Self, ConfigError> {
        Ok(Self {
            rate_per_minute: env
                .parsed_or("FOLLOW_RATE_PER_MINUTE", Self::DEFAULT.rate_per_minute)?,
            max_following: env.parsed_or("MAX_FOLLOWING", Self::DEFAULT.max_following)?,
        })
    }
}

impl Default for FollowLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// One follow or unfollow attempt, to be counted in its user's current window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    pub user: UserId,
    /// Epoch seconds at which the window began: a multiple of [`RATE_WINDOW_SECONDS`], by
    /// the clock of the function that counts.
    pub window_start: i64,
    /// How many attempts the window admits.
    pub limit: u32,
    /// Epoch seconds after which the window's item may be deleted.
    pub expires_at: i64,
}

impl Attempt {
    pub fn new(user: &UserId, limits: &FollowLimits, now: OffsetDateTime) -> Self {
        let seconds = now.unix_timestamp();
        let window_start = seconds - seconds.rem_euclid(RATE_WINDOW_SECONDS);
        Self {
            user: user.clone(),
            window_start,
            limit: limits.rate_per_minute.get(),
            expires_at: window_start + RATE_WINDOW_SECONDS + RATE_ITEM_TTL_SECONDS,
        }
    }

    /// Whole seconds from `now` until the next window opens (at least 1).
    fn retry_after(&self, now: OffsetDateTime) -> i64 {
        (self.window_start + RATE_WINDOW_SECONDS - now.unix_timestamp()).max(1)
    }

    fn limited(&self, now: OffsetDateTime) -> FollowError {
        FollowError::RateLimited {
            limit: self.limit,
            retry_after_seconds: self.retry_after(now),
        }
    }
}

/// Whether an attempt was counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counted {
    /// Counted: the window had room for it.
    Admitted,
    /// The window is full; nothing was written.
    Limited,
}

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
    #[error(
        "too many follows and unfollows: at most {limit} a minute; \
         try again in {retry_after_seconds} s"
    )]
    RateLimited {
        limit: u32,
        retry_after_seconds: i64,
    },
    #[error(
        "you already follow {max} users, the most one account may follow; \
         unfollow someone to follow someone new"
    )]
    FollowingLimitReached { max: u32 },
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
    AlreadyFollowing,
    /// The follower has no profile; nothing was written.
    NoFollowerProfile,
    /// The follower already follows as many users as the cap allows; nothing was written.
    FollowingLimitReached,
    /// The transaction's refusal no longer held when the store looked for its reason (an
    /// unfollow freed a place, or the profile was created, in between); nothing was
    /// written, and the same follow may pass now.
    Overtaken,
    /// Concurrent transactions kept holding one of the items through the store's retries;
    /// nothing was written.
    Conflict,
}

/// What the store did with an unfollow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnfollowWrite {
    Written,
    /// Nothing to unfollow; nothing was written, and the attempt was not counted.
    NotFollowing,
    /// The caller's window is full; nothing was written.
    RateLimited,
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
    /// The status of the profile a follow would target, if it exists (a strongly consistent
    /// read: a profile created a moment ago is found).
    async fn follow_target(&self, user: &UserId) -> Result<Option<UserStatus>, StoreError>;

    /// Counts `attempt` in its user's window unless the window is full: one conditional write
    /// of an item that only that user's requests write.
    async fn count_attempt(&self, attempt: &Attempt) -> Result<Counted, StoreError>;

    /// Writes the edge, the follower's count and the outbox event in one transaction, which
    /// includes no item of the followee's; only while the follower follows fewer than
    /// `max_following` users.
    async fn follow(
        &self,
        change: &GraphChange,
        max_following: u32,
    ) -> Result<FollowWrite, StoreError>;

    /// Deletes the edge, decrements the follower's count, writes the outbox event and counts
    /// `attempt` in one transaction; nothing (and no count) if the edge does not exist.
    async fn unfollow(
        &self,
        change: &GraphChange,
        attempt: &Attempt,
    ) -> Result<UnfollowWrite, StoreError>;

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

/// How often a follow or unfollow is tried again when a concurrent change of the same edge
/// overtook it between its write and its read (an unfollow between a refused follow and the
/// read of the edge). Conflicts are retried by the store, with backoff, not here.
const RACE_ATTEMPTS: u32 = 3;

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

/// `relationship.follower` follows `relationship.followee`, within `limits`.
#[tracing::instrument(skip(store, limits), fields(follower = %relationship.follower, followee = %relationship.followee))]
pub async fn follow(
    store: &dyn GraphStore,
    relationship: &Relationship,
    limits: &FollowLimits,
    now: OffsetDateTime,
) -> Result<FollowState, FollowError> {
    // The attempt is counted while the target is read: two independent requests, one round
    // trip. Every attempt counts, whatever it answers.
    let attempt = Attempt::new(&relationship.follower, limits, now);
    let (target, counted) = tokio::join!(
        store.follow_target(&relationship.followee),
        store.count_attempt(&attempt)
    );
    if counted? == Counted::Limited {
        return Err(attempt.limited(now));
    }
    match target? {
        None => return Err(FollowError::UnknownUser(relationship.followee.clone())),
        Some(status) if status != UserStatus::Active => {
            return Err(FollowError::TargetInactive(relationship.followee.clone()));
        }
        Some(_) => {}
    }
    let change = change(relationship, USER_FOLLOWED, now);
    for _ in 0..RACE_ATTEMPTS {
        match store.follow(&change, limits.max_following.get()).await? {
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
                // Unfollowed between the write and the read: try the follow again.
            }
            FollowWrite::NoFollowerProfile => return Err(FollowError::ProfileRequired),
            FollowWrite::FollowingLimitReached => {
                return Err(FollowError::FollowingLimitReached {
                    max: limits.max_following.get(),
                });
            }
            FollowWrite::Overtaken => {}
            FollowWrite::Conflict => return Err(FollowError::Busy),
        }
    }
    Err(FollowError::Busy)
}

/// `relationship.follower` stops following `relationship.followee`, within `limits`' rate.
#[tracing::instrument(skip(store, limits), fields(follower = %relationship.follower, followee = %relationship.followee))]
pub async fn unfollow(
    store: &dyn GraphStore,
    relationship: &Relationship,
    limits: &FollowLimits,
    now: OffsetDateTime,
) -> Result<FollowState, FollowError> {
    let attempt = Attempt::new(&relationship.follower, limits, now);
    let change = change(relationship, USER_UNFOLLOWED, now);
    let changed = match store.unfollow(&change, &attempt).await? {
        UnfollowWrite::Written => true,
        // The cancelled transaction counted nothing; an unfollow that changes nothing is an
        // attempt all the same.
        UnfollowWrite::NotFollowing => match store.count_attempt(&attempt).await? {
            Counted::Admitted => false,
            Counted::Limited => return Err(attempt.limited(now)),
        },
        UnfollowWrite::RateLimited => return Err(attempt.limited(now)),
        UnfollowWrite::Conflict => return Err(FollowError::Busy),
    };
    Ok(FollowState {
        relationship: relationship.clone(),
        followed_at: None,
        changed,
    })
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
        /// How many of the next transactions conflict (through all of the store's retries).
        pub conflicts: u32,
        pub transactions: u32,
        /// Deactivate this user right after a follow read their status: the race of a
        /// follow with a deactivation.
        pub deactivate_after_read: Option<UserId>,
        /// (user, window start) → attempts counted in that window.
        pub attempts: BTreeMap<(UserId, i64), u32>,
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

        /// Counts `attempt` unless its window is full, as the conditional update does.
        fn count(state: &mut State, attempt: &Attempt) -> Counted {
            let window = (attempt.user.clone(), attempt.window_start);
            let count = state.attempts.entry(window).or_default();
            if *count >= attempt.limit {
                return Counted::Limited;
            }
            *count += 1;
            Counted::Admitted
        }

        fn window_full(state: &State, attempt: &Attempt) -> bool {
            let window = (attempt.user.clone(), attempt.window_start);
            state.attempts.get(&window).copied().unwrap_or(0) >= attempt.limit
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
        async fn follow_target(&self, user: &UserId) -> Result<Option<UserStatus>, StoreError> {
            let mut state = self.state();
            let status = state.profiles.get(user).map(|profile| profile.status);
            if state.deactivate_after_read.as_ref() == Some(user)
                && let Some(profile) = state.profiles.get_mut(user)
            {
                profile.status = UserStatus::Deactivated;
            }
            Ok(status)
        }

        async fn count_attempt(&self, attempt: &Attempt) -> Result<Counted, StoreError> {
            Ok(Self::count(&mut self.state(), attempt))
        }

        async fn follow(
            &self,
            change: &GraphChange,
            max_following: u32,
        ) -> Result<FollowWrite, StoreError> {
            let mut state = self.state();
            if Self::conflicted(&mut state) {
                return Ok(FollowWrite::Conflict);
            }
            let Relationship { follower, followee } = &change.relationship;
            let edge = (follower.clone(), followee.clone());
            if state.edges.contains_key(&edge) {
                return Ok(FollowWrite::AlreadyFollowing);
            }
            let Some(profile) = state.profiles.get_mut(follower) else {
                return Ok(FollowWrite::NoFollowerProfile);
            };
            if profile.following_count >= u64::from(max_following) {
                return Ok(FollowWrite::FollowingLimitReached);
            }
            profile.following_count += 1;
            state.edges.insert(edge, change.at.clone());
            state.outbox.push(change.event.clone());
            Ok(FollowWrite::Written)
        }

        async fn unfollow(
            &self,
            change: &GraphChange,
            attempt: &Attempt,
        ) -> Result<UnfollowWrite, StoreError> {
            let mut state = self.state();
            if Self::conflicted(&mut state) {
                return Ok(UnfollowWrite::Conflict);
            }
            // One transaction: a full window refuses it whether or not the edge exists.
            if Self::window_full(&state, attempt) {
                return Ok(UnfollowWrite::RateLimited);
            }
            let Relationship { follower, followee } = &change.relationship;
            if state
                .edges
                .remove(&(follower.clone(), followee.clone()))
                .is_none()
            {
                return Ok(UnfollowWrite::NotFollowing);
            }
            Self::count(&mut state, attempt);
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
    const LIMITS: FollowLimits = FollowLimits::DEFAULT;

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
        let state = follow(&graph, &pair("ada", "bob"), &LIMITS, NOW)
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
        follow(&graph, &pair("ada", "bob"), &LIMITS, NOW)
            .await
            .unwrap();
        let later = NOW + time::Duration::hours(1);
        let again = follow(&graph, &pair("ada", "bob"), &LIMITS, later)
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
        let err = follow(&graph, &pair("ada", "nobody"), &LIMITS, NOW)
            .await
            .unwrap_err();
        assert!(matches!(err, FollowError::UnknownUser(u) if u.as_str() == "nobody"));
        let err = follow(&graph, &pair("ada", "gone"), &LIMITS, NOW)
            .await
            .unwrap_err();
        assert!(matches!(err, FollowError::TargetInactive(_)), "{err:?}");
        assert!(graph.state().outbox.is_empty());
        assert_eq!(graph.state().profiles[&id("ada")].following_count, 0);
    }

    #[tokio::test]
    async fn a_caller_without_a_profile_must_create_one_first() {
        let graph = graph();
        let err = follow(&graph, &pair("newbie", "bob"), &LIMITS, NOW)
            .await
            .unwrap_err();
        assert!(matches!(err, FollowError::ProfileRequired), "{err:?}");
        assert!(graph.state().edges.is_empty());
    }

    #[tokio::test]
    async fn a_conflict_the_store_could_not_retry_away_is_busy_and_writes_nothing() {
        let graph = graph();
        graph.state().conflicts = 1;
        let err = follow(&graph, &pair("ada", "bob"), &LIMITS, NOW)
            .await
            .unwrap_err();
        assert!(matches!(err, FollowError::Busy), "{err:?}");
        assert!(graph.state().edges.is_empty());
        follow(&graph, &pair("ada", "bob"), &LIMITS, NOW)
            .await
            .unwrap();

        graph.state().conflicts = 1;
        let err = unfollow(&graph, &pair("ada", "bob"), &LIMITS, NOW)
            .await
            .unwrap_err();
        assert!(matches!(err, FollowError::Busy), "{err:?}");
        assert_eq!(
            graph.state().edges.len(),
            1,
            "a busy unfollow changed nothing"
        );
        assert_eq!(graph.state().transactions, 3);
    }

    #[tokio::test]
    async fn a_follow_racing_a_deactivation_is_ordered_before_it() {
        let graph = graph();
        graph.state().deactivate_after_read = Some(id("bob"));
        // The follow read bob active; bob was deactivated before its transaction.
        let state = follow(&graph, &pair("ada", "bob"), &LIMITS, NOW)
            .await
            .unwrap();
        assert!(state.changed);
        assert!(graph.state().edges.contains_key(&(id("ada"), id("bob"))));
        assert_eq!(graph.state().outbox.len(), 1);
        // Any follow that reads after the deactivation is refused and writes nothing.
        let err = follow(&graph, &pair("cat", "bob"), &LIMITS, NOW)
            .await
            .unwrap_err();
        assert!(matches!(err, FollowError::TargetInactive(_)), "{err:?}");
        assert_eq!(graph.state().edges.len(), 1);
        assert_eq!(graph.state().outbox.len(), 1);
    }

    #[tokio::test]
    async fn an_unfollow_mirrors_the_follow_and_is_idempotent() {
        let graph = graph();
        follow(&graph, &pair("ada", "bob"), &LIMITS, NOW)
            .await
            .unwrap();
        let state = unfollow(&graph, &pair("ada", "bob"), &LIMITS, NOW)
            .await
            .unwrap();
        assert!(state.changed);
        assert_eq!(state.followed_at, None);
        let again = unfollow(&graph, &pair("ada", "bob"), &LIMITS, NOW)
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
            follow(&graph, &pair(follower, "bob"), &LIMITS, at)
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

    fn limits(rate_per_minute: u32, max_following: u32) -> FollowLimits {
        FollowLimits {
            rate_per_minute: NonZeroU32::new(rate_per_minute).unwrap(),
            max_following: NonZeroU32::new(max_following).unwrap(),
        }
    }

    #[test]
    fn an_attempt_falls_in_the_minute_of_its_clock_and_says_when_the_next_one_opens() {
        let attempt = Attempt::new(&id("ada"), &limits(7, 10), NOW);
        let minute = datetime!(2026-11-30 18:00:00 UTC).unix_timestamp();
        assert_eq!(attempt.window_start, minute);
        assert_eq!(attempt.limit, 7);
        assert_eq!(attempt.expires_at, minute + 120);
        let late = datetime!(2026-11-30 18:00:59.9 UTC);
        assert_eq!(Attempt::new(&id("ada"), &LIMITS, late).window_start, minute);
        assert_eq!(
            attempt.limited(late).to_string(),
            "too many follows and unfollows: at most 7 a minute; try again in 1 s"
        );
        assert_eq!(
            Attempt::new(
                &id("ada"),
                &LIMITS,
                late + time::Duration::milliseconds(100)
            )
            .window_start,
            minute + 60
        );
    }

    #[tokio::test]
    async fn every_follow_attempt_counts_and_a_full_window_refuses_until_the_next_minute() {
        let graph = graph();
        let limits = limits(3, 100);
        // A new follow, an idempotent one and one of an unknown user: three attempts.
        follow(&graph, &pair("ada", "bob"), &limits, NOW)
            .await
            .unwrap();
        follow(&graph, &pair("ada", "bob"), &limits, NOW)
            .await
            .unwrap();
        let err = follow(&graph, &pair("ada", "nobody"), &limits, NOW)
            .await
            .unwrap_err();
        assert!(matches!(err, FollowError::UnknownUser(_)), "{err:?}");

        let later = NOW + time::Duration::seconds(20);
        let err = follow(&graph, &pair("ada", "cat"), &limits, later)
            .await
            .unwrap_err();
        assert!(
            matches!(
                err,
                FollowError::RateLimited {
                    limit: 3,
                    retry_after_seconds: 40
                }
            ),
            "{err:?}"
        );
        let err = unfollow(&graph, &pair("ada", "bob"), &limits, later)
            .await
            .unwrap_err();
        assert!(matches!(err, FollowError::RateLimited { .. }), "{err:?}");
        {
            let s = graph.state();
            assert!(!s.edges.contains_key(&(id("ada"), id("cat"))));
            assert!(
                s.edges.contains_key(&(id("ada"), id("bob"))),
                "not unfollowed"
            );
            assert_eq!(s.outbox.len(), 1);
            assert_eq!(s.profiles[&id("ada")].following_count, 1);
        }
        // Other users have windows of their own.
        follow(&graph, &pair("cat", "bob"), &limits, later)
            .await
            .unwrap();
        // The next minute is a new window.
        let next = NOW + time::Duration::minutes(1);
        let state = follow(&graph, &pair("ada", "cat"), &limits, next)
            .await
            .unwrap();
        assert!(state.changed);
    }

    #[tokio::test]
    async fn unfollows_count_whether_or_not_they_change_anything() {
        let graph = graph();
        let limits = limits(3, 100);
        follow(&graph, &pair("ada", "bob"), &limits, NOW)
            .await
            .unwrap();
        let state = unfollow(&graph, &pair("ada", "bob"), &limits, NOW)
            .await
            .unwrap();
        assert!(state.changed);
        let state = unfollow(&graph, &pair("ada", "bob"), &limits, NOW)
            .await
            .unwrap();
        assert!(!state.changed);
        let err = unfollow(&graph, &pair("ada", "bob"), &limits, NOW)
            .await
            .unwrap_err();
        assert!(matches!(err, FollowError::RateLimited { .. }), "{err:?}");
        let window = (
            id("ada"),
            Attempt::new(&id("ada"), &limits, NOW).window_start,
        );
        assert_eq!(graph.state().attempts[&window], 3);
        assert_eq!(graph.state().outbox.len(), 2);
    }

    #[tokio::test]
    async fn the_following_cap_refuses_only_new_follows_and_unfollowing_makes_room() {
        let graph = MemoryGraph::with_users(&[
            ("ada", UserStatus::Active),
            ("bob", UserStatus::Active),
            ("cat", UserStatus::Active),
            ("dan", UserStatus::Active),
        ]);
        let limits = limits(100, 2);
        for user in ["bob", "cat"] {
            follow(&graph, &pair("ada", user), &limits, NOW)
                .await
                .unwrap();
        }
        let err = follow(&graph, &pair("ada", "dan"), &limits, NOW)
            .await
            .unwrap_err();
        assert!(
            matches!(err, FollowError::FollowingLimitReached { max: 2 }),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "you already follow 2 users, the most one account may follow; \
             unfollow someone to follow someone new"
        );
        assert!(!graph.state().edges.contains_key(&(id("ada"), id("dan"))));
        assert_eq!(graph.state().outbox.len(), 2);
        // At the cap, following someone already followed still answers the edge.
        let again = follow(&graph, &pair("ada", "bob"), &limits, NOW)
            .await
            .unwrap();
        assert!(!again.changed && again.followed_at.is_some());
        // Unfollowing is never capped, and makes room.
        unfollow(&graph, &pair("ada", "cat"), &limits, NOW)
            .await
            .unwrap();
        let state = follow(&graph, &pair("ada", "dan"), &limits, NOW)
            .await
            .unwrap();
        assert!(state.changed);
        assert_eq!(graph.state().profiles[&id("ada")].following_count, 2);
    }

    #[test]
    fn the_limits_come_from_the_environment_with_production_defaults() {
        assert_eq!(
            FollowLimits::from_env(&Env::from_pairs([])).unwrap(),
            limits(30, 5_000)
        );
        let env = Env::from_pairs([("FOLLOW_RATE_PER_MINUTE", "120"), ("MAX_FOLLOWING", "3")]);
        assert_eq!(FollowLimits::from_env(&env).unwrap(), limits(120, 3));
        for name in ["FOLLOW_RATE_PER_MINUTE", "MAX_FOLLOWING"] {
            for bad in ["0", "-1", "many"] {
                let err = FollowLimits::from_env(&Env::from_pairs([(name, bad)])).unwrap_err();
                assert!(
                    matches!(&err, ConfigError::Invalid { name: n, .. } if n == name),
                    "{name}={bad}: {err:?}"
                );
            }
        }
    }
}
