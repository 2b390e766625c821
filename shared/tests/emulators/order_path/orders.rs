//! Orders materialized once, with one stock write per batch and DynamoDB's stock and buyer
//! items as the final guards, and read by their owner as PENDING, then as materialized.

use super::World;
use crate::support::{sealed_batch, template_batch_size};
use app::cursor::PageLimit;
use app::ids::{OrderId, UserId};
use app::seckill::keys::SaleKeys;
use app::seckill::order::consumer::{self};
use app::seckill::order::{Claim, OrderStatus, OrderStore, OrderView, Reservations, find_order};
use redis::AsyncCommands;

#[tokio::test]
async fn a_batch_applied_twice_yields_one_order_and_one_decrement() {
    let world = World::new(10, 10).await;
    world.reserve("o1", "alice", 0).await;
    world.reserve("o2", "bob", 0).await;
    let bodies = world.bodies(&[("o1", "alice"), ("o2", "bob"), ("o1", "alice")]);
    world.consume(&bodies).await;
    world.consume(&bodies).await;
    assert_eq!(world.dynamo_stock().await, 8);
    assert_eq!(world.status("o1").await, "CONFIRMED");
    assert_eq!(world.pending().await, 0);
    assert_eq!(world.redis_stock().await, 8);
    assert_eq!(world.due_orders().await, ["o1", "o2"]);

    let alice = UserId::parse("alice").unwrap();
    let page = world
        .store
        .orders_of(&alice, PageLimit::default(), None)
        .await
        .unwrap();
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.items[0].order_id, world.oid("o1"));
}

#[tokio::test]
async fn a_full_batch_of_orders_of_distinct_buyers_commits_within_dynamodbs_transaction_limit() {
    // The worst case for one commit: every order has a buyer of its own, so each unit writes
    // an order and a buyer item beside the sale's one stock item.
    let size = template_batch_size("OrderConsumerFunction");
    assert!(size >= 50, "{size}");
    let stock = i64::try_from(size).unwrap();
    let world = World::new(stock, stock).await;
    let mut bodies = Vec::new();
    for i in 0..size {
        let (order, user) = (format!("o{i}"), format!("buyer{i}"));
        world.reserve(&order, &user, 0).await;
        bodies.push(world.placed(&order, &user));
    }
    let failed = consumer::handle_batch(world.deps(), sealed_batch(&bodies)).await;
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(world.dynamo_stock().await, 0);
    assert_eq!(world.status(&format!("o{}", size - 1)).await, "CONFIRMED");
    assert_eq!(world.units(&format!("buyer{}", size - 1)).await, 1);
}

#[tokio::test]
async fn an_order_reads_as_pending_to_its_owner_then_as_materialized() {
    let world = World::new(10, 10).await;
    let order = OrderId::generate(&world.sale).to_string();
    world.reserve(&order, "alice", 0).await;
    let alice = UserId::parse("alice").unwrap();
    let bob = UserId::parse("bob").unwrap();
    let read = |user: &UserId| {
        let (world, user, order) = (&world, user.clone(), order.clone());
        async move {
            find_order(&world.store, &world.reservations, &user, &world.oid(&order))
                .await
                .unwrap()
        }
    };
    match read(&alice).await {
        Some(OrderView::Pending(pending)) => {
            assert_eq!(
                (pending.sale_id.as_str(), pending.status),
                (world.sale.as_str(), "PENDING")
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(read(&bob).await, None);

    let bodies = [world.placed(&order, "alice")];
    world.consume(&bodies).await;
    match read(&alice).await {
        Some(OrderView::Materialized(stored)) => {
            assert_eq!(stored.status, OrderStatus::Confirmed);
            assert_eq!(stored.order_id.as_str(), order);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(read(&bob).await, None);
}

#[tokio::test]
async fn dynamodb_stock_is_the_final_guard_and_the_excess_is_rejected_and_released() {
    // Redis lost data and admitted three where DynamoDB holds two.
    let world = World::new(2, 3).await;
    for (order, user) in [("o1", "a"), ("o2", "b"), ("o3", "c")] {
        world.reserve(order, user, 0).await;
    }
    let bodies = world.bodies(&[("o1", "a"), ("o2", "b"), ("o3", "c")]);
    world.consume(&bodies).await;
    world
        .assert_statuses(&[("o1", "CONFIRMED"), ("o2", "CONFIRMED"), ("o3", "REJECTED")])
        .await;
    assert_eq!(world.dynamo_stock().await, 0);
    assert_eq!(world.released().await, ["o3"]);
    assert_eq!(world.redis_stock().await, 1);
    assert_eq!(world.pending().await, 0);

    // Redelivery changes nothing.
    world.consume(&bodies).await;
    assert_eq!(world.stocks().await, (0, 1));
}

#[tokio::test]
async fn an_order_released_before_it_arrives_is_rejected_and_a_claimed_one_is_not_released() {
    let world = World::new(5, 5).await;
    // "late" waited in the queue beyond the grace period; "inflight" was claimed by a consumer
    // whose commit has not happened yet; "ok" is young.
    world.reserve("late", "alice", 1_000).await;
    world.reserve("inflight", "bob", 1_000).await;
    world.reserve("ok", "carol", 100_000).await;
    let ids = [world.oid("inflight"), world.oid("never")];
    let claims = world.reservations.claim(&world.sale, &ids).await.unwrap();
    assert!(
        matches!(&claims[..], [Claim::Held(held), Claim::Unknown]
            if held.user_id == "bob" && held.units == 1 && held.reserved_at_ms == 1_000),
        "{claims:?}"
    );
    let summary = world.reconcile_at(110_000).await;
    assert_eq!(summary.released, 1);
    assert_eq!(world.released().await, ["late"]);
    assert_eq!(world.redis_stock().await, 3);
    // Claimed, "inflight" is answered again; "late" was given back.
    let ids = [world.oid("late"), world.oid("inflight")];
    let again = world.reservations.claim(&world.sale, &ids).await.unwrap();
    assert_eq!(again, [Claim::Released, claims[0].clone()]);

    let bodies = world.bodies(&[("late", "alice"), ("inflight", "bob"), ("ok", "carol")]);
    for _ in 0..2 {
        world.consume(&bodies).await;
        world
            .assert_statuses(&[
                ("late", "REJECTED"),
                ("inflight", "CONFIRMED"),
                ("ok", "CONFIRMED"),
            ])
            .await;
        assert_eq!(world.dynamo_stock().await, 3);
        // Three reserved, "late" given back once: both stores agree.
        assert_eq!(world.redis_stock().await, 3);
        assert_eq!(world.released().await, ["late"]);
        assert_eq!(world.pending().await, 0);
    }
    assert_eq!(world.bought("alice").await, 0);
    assert_eq!(world.due_orders().await, ["inflight", "ok"]);
}

#[tokio::test]
async fn a_users_orders_page_newest_first_and_a_foreign_cursor_is_refused() {
    let world = World::new(10, 10).await;
    let mut bodies = world
        .alices_orders_a_millisecond_apart(&["o1", "o2", "o3"])
        .await;
    world.reserve("o4", "bob", 0).await;
    bodies.push(world.placed("o4", "bob"));
    world.consume(&bodies).await;
    let alice = UserId::parse("alice").unwrap();
    let limit = PageLimit::parse(Some("2")).unwrap();
    let first = world.store.orders_of(&alice, limit, None).await.unwrap();
    let ids: Vec<String> = (first.items.iter())
        .map(|o| world.name(o.order_id.as_str()))
        .collect();
    assert_eq!(ids, ["o3", "o2"]);
    let cursor = first.next.expect("a second page");
    let second = world
        .store
        .orders_of(&alice, limit, Some(&cursor))
        .await
        .unwrap();
    assert_eq!(second.items[0].order_id, world.oid("o1"));
    assert_eq!(second.items.len(), 1);

    let bob = UserId::parse("bob").unwrap();
    assert!(matches!(
        world.store.orders_of(&bob, limit, Some(&cursor)).await,
        Err(app::seckill::order::OrderStoreError::InvalidCursor(_))
    ));
}

#[tokio::test]
async fn dynamodb_refuses_a_second_order_of_a_buyer_at_the_limit_after_redis_lost_data() {
    let world = World::with_limit(10, 10, 1).await;
    world.place("o1", "alice").await;
    assert_eq!(world.units("alice").await, 1);

    // Redis lost the `bought` hash: alice is admitted a second time.
    let mut redis = world.redis.clone();
    let _: () = redis.del(SaleKeys::new(&world.sale).bought).await.unwrap();
    world.reserve("o2", "alice", 0).await;
    world.reserve("o3", "bob", 0).await;
    let bodies = world.bodies(&[("o1", "alice"), ("o2", "alice"), ("o3", "bob")]);
    for _ in 0..2 {
        world.consume(&bodies).await;
        world
            .assert_statuses(&[("o1", "CONFIRMED"), ("o2", "REJECTED"), ("o3", "CONFIRMED")])
            .await;
        assert_eq!(world.units("alice").await, 1);
        assert_eq!(world.units("bob").await, 1);
        assert_eq!(world.dynamo_stock().await, 8);
        // o2's unit is back in Redis, and so is alice's count there.
        assert_eq!(world.released().await, ["o2"]);
        assert_eq!(world.redis_stock().await, 8);
        assert_eq!(world.bought("alice").await, 0);
        assert_eq!(world.pending().await, 0);
    }
}

#[tokio::test]
async fn a_buyers_orders_beyond_the_room_left_are_rejected_first_come_first_served() {
    let world = World::with_limit(10, 10, 2).await;
    let mut bodies = world
        .alices_orders_a_millisecond_apart(&["o1", "o2", "o3"])
        .await;
    bodies.reverse();
    world.consume(&bodies).await;
    world
        .assert_statuses(&[("o1", "CONFIRMED"), ("o2", "CONFIRMED"), ("o3", "REJECTED")])
        .await;
    assert_eq!(world.units("alice").await, 2);
    assert_eq!(world.dynamo_stock().await, 8);
    assert_eq!(world.released().await, ["o3"]);
}
