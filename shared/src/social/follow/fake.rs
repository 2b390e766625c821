//! An in-memory store with the DynamoDB adapter's semantics, for domain and handler tests.

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

    /// The cast of the unit tests: `ada`, `bob` and `cat`, active, and `gone`, deactivated.
    pub fn cast() -> Self {
        Self::with_users(&[
            ("ada", UserStatus::Active),
            ("bob", UserStatus::Active),
            ("cat", UserStatus::Active),
            ("gone", UserStatus::Deactivated),
        ])
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

    async fn display_names(&self, users: &[UserId]) -> Result<HashMap<UserId, String>, StoreError> {
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

    async fn followed_at(&self, relationship: &Relationship) -> Result<Option<String>, StoreError> {
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
