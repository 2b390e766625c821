//! What a follow and an unfollow write, and what a failed condition leaves.

use super::Change::{Follow, Unfollow};
use super::{Fixture, Item, LIMITS, NOW, graph_change, graph_items, id, limits, pair, window_sk};
use app::dynamo::{get_n, get_s};
use app::events::SocialEvent;
use app::social::follow::{self, Attempt, FollowWrite, UnfollowWrite};
use app::social::{FollowError, GraphStore};

#[tokio::test]
async fn a_follow_writes_edge_counter_and_outbox_in_one_transaction_and_not_the_followee() {
    let f = Fixture::new(&["ada", "bob"]).await;
    let followee_before = f.profile("bob").await;

    let state = f.change(Follow, "ada", "bob", &LIMITS, NOW).await;
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
    assert_eq!(f.following_count("ada").await, 1);
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
    f.change(Follow, "ada", "bob", &LIMITS, NOW).await;
    let again = f
        .change(
            Follow,
            "ada",
            "bob",
            &LIMITS,
            NOW + time::Duration::minutes(5),
        )
        .await;
    assert!(!again.changed);
    assert_eq!(
        again.followed_at.as_deref(),
        Some("2026-11-30T18:00:00.250000Z")
    );
    assert_eq!(f.following_count("ada").await, 1);
    assert_eq!(f.outbox_events().await.len(), 1);
}

#[tokio::test]
async fn failed_conditions_are_named_and_write_nothing() {
    let f = Fixture::new(&["ada", "bob", "gone"]).await;
    f.deactivate("gone").await;
    let before = f.all_items().await.len();
    assert_eq!(
        f.follow_write("newbie", "bob", 1_000).await,
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
async fn the_following_cap_is_a_condition_of_the_follow_transaction() {
    let f = Fixture::new(&["ada", "bob", "cat", "dan"]).await;
    let limits = limits(1_000, 2);
    for user in ["bob", "cat"] {
        f.change(Follow, "ada", user, &limits, NOW).await;
    }
    let err = follow::follow(&f.store, &pair("ada", "dan"), &limits, NOW)
        .await
        .unwrap_err();
    assert!(
        matches!(err, FollowError::FollowingLimitReached { max: 2 }),
        "{err:?}"
    );
    assert_eq!(
        f.follow_write("ada", "dan", 2).await,
        FollowWrite::FollowingLimitReached
    );
    assert!(f.item("USER#ada", "FOLLOWS#dan").await.is_none());
    assert_eq!(f.outbox_events().await.len(), 2);
    // At the cap, following again answers the edge; unfollowing makes room.
    let again = f.change(Follow, "ada", "bob", &limits, NOW).await;
    assert!(!again.changed);
    f.change(Unfollow, "ada", "cat", &limits, NOW).await;
    assert!(f.change(Follow, "ada", "dan", &limits, NOW).await.changed);
    assert_eq!(f.following_count("ada").await, 2);
}

#[tokio::test]
async fn an_unfollow_deletes_the_edge_decrements_and_emits_once() {
    let f = Fixture::new(&["ada", "bob"]).await;
    f.change(Follow, "ada", "bob", &LIMITS, NOW).await;
    let state = f.change(Unfollow, "ada", "bob", &LIMITS, NOW).await;
    assert!(state.changed);
    let again = f.change(Unfollow, "ada", "bob", &LIMITS, NOW).await;
    assert!(!again.changed);

    assert!(f.item("USER#ada", "FOLLOWS#bob").await.is_none());
    assert_eq!(f.following_count("ada").await, 0);
    let events = f.outbox_events().await;
    assert!(matches!(
        events.as_slice(),
        [SocialEvent::UserFollowed(_), SocialEvent::UserUnfollowed(_)]
    ));
}
