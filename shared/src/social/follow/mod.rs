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

mod limits;

pub use limits::{Attempt, Counted, FollowLimits, RATE_WINDOW_SECONDS};

use super::profile::{Profile, ProfileStore, StoreError, UserStatus};
use crate::cursor::{Cursor, InvalidCursor, PageLimit};
use crate::events::{Envelope, FollowPayload, USER_FOLLOWED, USER_UNFOLLOWED};
use crate::ids::UserId;
use async_trait::async_trait;
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
#[tracing::instrument(level = "debug", skip(store, limits), fields(follower = %relationship.follower, followee = %relationship.followee))]
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
#[tracing::instrument(level = "debug", skip(store, limits), fields(follower = %relationship.follower, followee = %relationship.followee))]
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
#[tracing::instrument(level = "debug", skip(store, cursor))]
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

#[cfg(test)]
pub(crate) mod fake;
#[cfg(test)]
mod tests;
