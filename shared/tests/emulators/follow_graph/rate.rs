//! The follow rate windows: counted alone by a follow, inside the transaction of an unfollow.

use super::Change::{Follow, Unfollow};
use super::{Fixture, NOW, id, limits, pair, window_sk};
use app::dynamo::{get_n, get_s};
use app::social::follow::{self, Attempt, Counted};
use app::social::{FollowError, GraphStore};
use time::macros::datetime;

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
    f.change(Follow, "ada", "bob", &limits, NOW).await;
    let state = f.change(Unfollow, "ada", "bob", &limits, NOW).await;
    assert!(state.changed);
    let window = f.item("USER#ada", &window_sk(NOW)).await.unwrap();
    assert_eq!(get_n::<u32>(&window, "attempts").unwrap(), 2);

    // The next minute: a follow, then the window filled up; the unfollow is refused whole.
    let later = NOW + time::Duration::minutes(1);
    f.change(Follow, "ada", "bob", &limits, later).await;
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
    assert_eq!(f.following_count("ada").await, 1);
    assert_eq!(f.outbox_events().await.len(), events);
    let window = f.item("USER#ada", &window_sk(later)).await.unwrap();
    assert_eq!(get_n::<u32>(&window, "attempts").unwrap(), 2);
}
