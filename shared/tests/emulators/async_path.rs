//! The asynchronous path's adapters against moto: follower counts and notifications applied
//! once, and the relay's SQS sink.

use crate::support::{batch, clients, create_queue, create_table, template_batch_size};
use app::cursor::PageLimit;
use app::dynamo::{Table, get_n, key, n, s};
use app::ids::UserId;
use app::social::derived_store::DynamoDerivedStore;
use app::social::event_sink::SqsEventSink;
use app::social::notifications::{self, NotificationStore};
use app::social::relay::EventSink;
use app::social::{follower_count, keys};
use std::time::Duration;

fn event(kind: &str, id: &str, follower: &str, followee: &str) -> String {
    serde_json::json!({"type": kind, "version": 1, "id": id, "occurredAt": "2026-11-30T18:00:00Z",
        "payload": {"followerId": follower, "followeeId": followee}})
    .to_string()
}

/// The profiles of a fresh table, read and written directly.
struct Profiles {
    client: aws_sdk_dynamodb::Client,
    table: String,
}

/// A fresh table, and the derived store over it.
async fn derived_table() -> (Profiles, DynamoDerivedStore) {
    let clients = clients().await;
    let table = create_table(&clients).await;
    let store = DynamoDerivedStore::new(clients.dynamodb.clone(), &table);
    let client = clients.dynamodb;
    (Profiles { client, table }, store)
}

impl Profiles {
    async fn put(&self, user: &str, followers: i64) {
        let user = UserId::parse(user).unwrap();
        let mut item = key(keys::user_pk(&user), keys::PROFILE_SK);
        item.insert("followerCount".to_owned(), n(followers));
        item.insert("status".to_owned(), s("ACTIVE"));
        let put = self.client.put_item().table_name(&self.table);
        put.set_item(Some(item)).send().await.unwrap();
    }

    async fn follower_count(&self, user: &str) -> i64 {
        let user = UserId::parse(user).unwrap();
        let key = key(keys::user_pk(&user), keys::PROFILE_SK);
        let table = Table::new(self.client.clone(), &self.table);
        let item = table.get_consistent(key, None, "read a profile");
        get_n(&item.await.unwrap().unwrap(), "followerCount").unwrap()
    }
}

#[tokio::test]
async fn a_follower_count_batch_applied_twice_changes_nothing_and_never_goes_negative() {
    let (profiles, store) = derived_table().await;
    profiles.put("star", 0).await;
    let bodies = [
        event("UserFollowed", "e1", "a", "star"),
        event("UserFollowed", "e1", "a", "star"),
        event("UserFollowed", "e2", "b", "star"),
        event("UserUnfollowed", "e3", "a", "star"),
        "garbage".to_owned(),
    ];
    assert_eq!(
        follower_count::handle_batch(&store, batch(&bodies)).await,
        ["m4"]
    );
    assert_eq!(profiles.follower_count("star").await, 1);
    assert_eq!(
        follower_count::handle_batch(&store, batch(&bodies)).await,
        ["m4"]
    );
    assert_eq!(profiles.follower_count("star").await, 1);

    // Two unfollows whose follows have not arrived: refused until they do.
    let early = [
        event("UserUnfollowed", "e4", "b", "star"),
        event("UserUnfollowed", "e5", "c", "star"),
    ];
    assert_eq!(
        follower_count::handle_batch(&store, batch(&early)).await,
        ["m0", "m1"]
    );
    assert_eq!(profiles.follower_count("star").await, 1);
    let late_follow = [event("UserFollowed", "e6", "c", "star")];
    assert!(
        follower_count::handle_batch(&store, batch(&late_follow))
            .await
            .is_empty()
    );
    assert!(
        follower_count::handle_batch(&store, batch(&early))
            .await
            .is_empty()
    );
    assert_eq!(profiles.follower_count("star").await, 0);
}

#[tokio::test]
async fn follow_unfollow_refollow_yields_one_notification_and_marking_read_counts_once() {
    let (_, store) = derived_table().await;
    let bob = UserId::parse("bob").unwrap();
    let first = [
        event("UserFollowed", "e1", "ann", "bob"),
        event("UserFollowed", "e1", "ann", "bob"),
        event("UserFollowed", "e2", "cid", "bob"),
        "{\"type\":\"Nope\",\"version\":1,\"id\":\"x\",\"occurredAt\":\"t\",\"payload\":{}}"
            .to_owned(),
    ];
    assert_eq!(
        notifications::handle_batch(&store, batch(&first)).await,
        ["m3"]
    );
    let again = [
        event("UserUnfollowed", "e3", "ann", "bob"),
        event("UserFollowed", "e4", "ann", "bob"),
    ];
    assert!(
        notifications::handle_batch(&store, batch(&again))
            .await
            .is_empty()
    );
    assert!(
        notifications::handle_batch(&store, batch(&first[..3]))
            .await
            .is_empty()
    );

    let page = store.page(&bob, PageLimit::default(), None).await.unwrap();
    assert_eq!(page.items.len(), 2);
    assert!(page.next.is_none());
    assert_eq!(store.unread_count(&bob).await.unwrap(), 2);

    let first_page = store
        .page(&bob, PageLimit::parse(Some("1")).unwrap(), None)
        .await
        .unwrap();
    let cursor = first_page.next.expect("a second page");
    let second = store
        .page(&bob, PageLimit::parse(Some("1")).unwrap(), Some(&cursor))
        .await
        .unwrap();
    assert_eq!(second.items.len(), 1);
    assert_ne!(second.items[0], first_page.items[0]);
    let eve = UserId::parse("eve").unwrap();
    assert!(
        store
            .page(&eve, PageLimit::default(), Some(&cursor))
            .await
            .is_err()
    );

    let id = page.items[0].notification_id.clone();
    let outcome = notifications::mark_read(&store, &bob, vec![id.clone(), id.clone()]).await;
    assert_eq!(outcome.applied.len(), 1);
    let outcome = notifications::mark_read(&store, &eve, vec![id.clone()]).await;
    assert_eq!((outcome.applied.len(), outcome.failed.len()), (0, 0));
    assert_eq!(store.unread_count(&bob).await.unwrap(), 1);
    let rest = store.unread_ids(&bob, 100).await.unwrap();
    let outcome = notifications::mark_read(&store, &bob, rest).await;
    assert_eq!(outcome.applied.len(), 1);
    assert_eq!(store.unread_count(&bob).await.unwrap(), 0);
}

#[tokio::test]
async fn the_relay_sink_sends_every_body_in_batches_of_ten() {
    let clients = clients().await;
    let url = create_queue(&clients, "relay").await;
    let sink = SqsEventSink::new(clients.sqs.clone(), &url);
    let bodies: Vec<String> = (0..12).map(|i| format!("event {i}")).collect();
    let refs: Vec<&str> = bodies.iter().map(String::as_str).collect();
    sink.send_all(&refs).await.unwrap();
    let queue = app::queue::Queue::new(clients.sqs.clone(), &url);
    let mut received = Vec::new();
    while received.len() < 12 {
        let batch = queue.receive(10, Duration::from_secs(1)).await.unwrap();
        assert!(!batch.is_empty(), "only {} arrived", received.len());
        received.extend(batch.into_iter().map(|m| m.body));
    }
    received.sort();
    let mut expected = bodies.clone();
    expected.sort();
    assert_eq!(received, expected);
}

#[tokio::test]
async fn a_full_batch_of_follows_of_one_user_commits_within_dynamodbs_transaction_limit() {
    let (profiles, store) = derived_table().await;
    profiles.put("star", 0).await;
    // The template's batch, all for one followee: each notification writes two items and each
    // count event one marker, beside the one profile or unread-count item, so the commits must
    // be split for moto (like DynamoDB) to take them.
    for (function, apply) in [
        ("NotificationConsumerFunction", "notifications"),
        ("FollowerCountConsumerFunction", "follower counts"),
    ] {
        let size = template_batch_size(function);
        assert!(size >= 50, "{function}: {size}");
        let bodies: Vec<String> = (0..size)
            .map(|i| {
                event(
                    "UserFollowed",
                    &format!("{apply}-{i}"),
                    &format!("fan{i}"),
                    "star",
                )
            })
            .collect();
        let failed = if apply == "notifications" {
            notifications::handle_batch(&store, batch(&bodies)).await
        } else {
            follower_count::handle_batch(&store, batch(&bodies)).await
        };
        assert!(failed.is_empty(), "{function}: {failed:?}");
    }
    assert_eq!(
        profiles.follower_count("star").await,
        template_batch_size("FollowerCountConsumerFunction") as i64
    );
    let star = UserId::parse("star").unwrap();
    assert_eq!(
        store.unread_count(&star).await.unwrap(),
        template_batch_size("NotificationConsumerFunction") as u64
    );
    // `{"all": true}` reads at most what it may mark.
    assert_eq!(store.unread_ids(&star, 30).await.unwrap().len(), 30);
    assert_eq!(
        store.unread_ids(&star, 1_000).await.unwrap().len(),
        template_batch_size("NotificationConsumerFunction")
    );
}
