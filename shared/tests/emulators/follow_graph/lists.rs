//! The followers and following lists: newest first, with cursors that only fit their list.

use super::Change::Follow;
use super::{Fixture, LIMITS, NOW, id};
use app::cursor::{Cursor, PageLimit};
use app::dynamo::key;
use app::social::follow::{self, ListEdgesError};
use app::social::{Direction, FollowError, GraphStore};
use std::collections::BTreeMap;

#[tokio::test]
async fn lists_are_newest_first_with_names_and_cursors_that_only_fit_their_list() {
    let followers = ["u0", "u1", "u2", "u3", "u4"];
    let mut users = vec!["star", "ada"];
    users.extend(followers);
    let f = Fixture::new(&users).await;
    for (minute, follower) in followers.iter().enumerate() {
        let at = NOW + time::Duration::minutes(minute as i64);
        f.change(Follow, follower, "star", &LIMITS, at).await;
    }
    f.change(Follow, "ada", "star", &LIMITS, NOW).await;
    f.change(Follow, "ada", "u1", &LIMITS, NOW + time::Duration::hours(1))
        .await;
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
