//! The domain tests of following, against the in-memory graph of [`super::fake`].

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

/// What [`change`] does.
#[derive(Clone, Copy, Debug)]
enum Change {
    Follow,
    Unfollow,
}
use Change::{Follow, Unfollow};

/// `follower` follows or unfollows `followee` through the domain, at `at`; `answer` takes
/// the result apart (`Result::unwrap` or `Result::unwrap_err`).
async fn change<T>(
    graph: &MemoryGraph,
    kind: Change,
    (follower, followee): (&str, &str),
    limits: &FollowLimits,
    at: OffsetDateTime,
    answer: impl FnOnce(Result<FollowState, FollowError>) -> T,
) -> T {
    let relationship = pair(follower, followee);
    answer(match kind {
        Follow => follow(graph, &relationship, limits, at).await,
        Unfollow => unfollow(graph, &relationship, limits, at).await,
    })
}

/// [`change`], which must succeed.
async fn ok(
    graph: &MemoryGraph,
    kind: Change,
    who: (&str, &str),
    limits: &FollowLimits,
    at: OffsetDateTime,
) -> FollowState {
    change(graph, kind, who, limits, at, Result::unwrap).await
}

/// [`change`], which must be refused.
async fn refused(
    graph: &MemoryGraph,
    kind: Change,
    who: (&str, &str),
    limits: &FollowLimits,
    at: OffsetDateTime,
) -> FollowError {
    change(graph, kind, who, limits, at, Result::unwrap_err).await
}

fn graph() -> MemoryGraph {
    MemoryGraph::cast()
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
    let state = ok(&graph, Follow, ("ada", "bob"), &LIMITS, NOW).await;
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
    ok(&graph, Follow, ("ada", "bob"), &LIMITS, NOW).await;
    let later = NOW + time::Duration::hours(1);
    let again = ok(&graph, Follow, ("ada", "bob"), &LIMITS, later).await;
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
    let err = refused(&graph, Follow, ("ada", "nobody"), &LIMITS, NOW).await;
    assert!(matches!(err, FollowError::UnknownUser(u) if u.as_str() == "nobody"));
    let err = refused(&graph, Follow, ("ada", "gone"), &LIMITS, NOW).await;
    assert!(matches!(err, FollowError::TargetInactive(_)), "{err:?}");
    assert!(graph.state().outbox.is_empty());
    assert_eq!(graph.state().profiles[&id("ada")].following_count, 0);
}

#[tokio::test]
async fn a_caller_without_a_profile_must_create_one_first() {
    let graph = graph();
    let err = refused(&graph, Follow, ("newbie", "bob"), &LIMITS, NOW).await;
    assert!(matches!(err, FollowError::ProfileRequired), "{err:?}");
    assert!(graph.state().edges.is_empty());
}

#[tokio::test]
async fn a_conflict_the_store_could_not_retry_away_is_busy_and_writes_nothing() {
    let graph = graph();
    graph.state().conflicts = 1;
    let err = refused(&graph, Follow, ("ada", "bob"), &LIMITS, NOW).await;
    assert!(matches!(err, FollowError::Busy), "{err:?}");
    assert!(graph.state().edges.is_empty());
    ok(&graph, Follow, ("ada", "bob"), &LIMITS, NOW).await;

    graph.state().conflicts = 1;
    let err = refused(&graph, Unfollow, ("ada", "bob"), &LIMITS, NOW).await;
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
    let state = ok(&graph, Follow, ("ada", "bob"), &LIMITS, NOW).await;
    assert!(state.changed);
    assert!(graph.state().edges.contains_key(&(id("ada"), id("bob"))));
    assert_eq!(graph.state().outbox.len(), 1);
    // Any follow that reads after the deactivation is refused and writes nothing.
    let err = refused(&graph, Follow, ("cat", "bob"), &LIMITS, NOW).await;
    assert!(matches!(err, FollowError::TargetInactive(_)), "{err:?}");
    assert_eq!(graph.state().edges.len(), 1);
    assert_eq!(graph.state().outbox.len(), 1);
}

#[tokio::test]
async fn an_unfollow_mirrors_the_follow_and_is_idempotent() {
    let graph = graph();
    ok(&graph, Follow, ("ada", "bob"), &LIMITS, NOW).await;
    let state = ok(&graph, Unfollow, ("ada", "bob"), &LIMITS, NOW).await;
    assert!(state.changed);
    assert_eq!(state.followed_at, None);
    let again = ok(&graph, Unfollow, ("ada", "bob"), &LIMITS, NOW).await;
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
        ok(&graph, Follow, (follower, "bob"), &LIMITS, at).await;
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
    FollowLimits::of(rate_per_minute, max_following)
}

#[tokio::test]
async fn every_follow_attempt_counts_and_a_full_window_refuses_until_the_next_minute() {
    let graph = graph();
    let limits = limits(3, 100);
    // A new follow, an idempotent one and one of an unknown user: three attempts.
    ok(&graph, Follow, ("ada", "bob"), &limits, NOW).await;
    ok(&graph, Follow, ("ada", "bob"), &limits, NOW).await;
    let err = refused(&graph, Follow, ("ada", "nobody"), &limits, NOW).await;
    assert!(matches!(err, FollowError::UnknownUser(_)), "{err:?}");

    let later = NOW + time::Duration::seconds(20);
    let err = refused(&graph, Follow, ("ada", "cat"), &limits, later).await;
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
    let err = refused(&graph, Unfollow, ("ada", "bob"), &limits, later).await;
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
    ok(&graph, Follow, ("cat", "bob"), &limits, later).await;
    // The next minute is a new window.
    let next = NOW + time::Duration::minutes(1);
    let state = ok(&graph, Follow, ("ada", "cat"), &limits, next).await;
    assert!(state.changed);
}

#[tokio::test]
async fn unfollows_count_whether_or_not_they_change_anything() {
    let graph = graph();
    let limits = limits(3, 100);
    ok(&graph, Follow, ("ada", "bob"), &limits, NOW).await;
    let state = ok(&graph, Unfollow, ("ada", "bob"), &limits, NOW).await;
    assert!(state.changed);
    let state = ok(&graph, Unfollow, ("ada", "bob"), &limits, NOW).await;
    assert!(!state.changed);
    let err = refused(&graph, Unfollow, ("ada", "bob"), &limits, NOW).await;
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
        ok(&graph, Follow, ("ada", user), &limits, NOW).await;
    }
    let err = refused(&graph, Follow, ("ada", "dan"), &limits, NOW).await;
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
    let again = ok(&graph, Follow, ("ada", "bob"), &limits, NOW).await;
    assert!(!again.changed && again.followed_at.is_some());
    // Unfollowing is never capped, and makes room.
    ok(&graph, Unfollow, ("ada", "cat"), &limits, NOW).await;
    let state = ok(&graph, Follow, ("ada", "dan"), &limits, NOW).await;
    assert!(state.changed);
    assert_eq!(graph.state().profiles[&id("ada")].following_count, 2);
}
