//! Payment timeouts: an unpaid order cancelled once, its unit back to both stores and to its
//! buyer.

use super::World;
use app::ids::UserId;
use app::seckill::order::{OrderStore, PaymentMethod};

#[tokio::test]
async fn a_payment_timeout_cancels_once_and_the_unit_returns_to_both_stores_once() {
    let world = World::new(5, 5).await;
    world.reserve("o1", "alice", 0).await;
    world.reserve("o2", "bob", 0).await;
    world.reserve("o3", "carol", 0).await;
    let bodies = world.bodies(&[("o1", "alice"), ("o2", "bob"), ("o3", "carol")]);
    world.consume(&bodies).await;
    let bob = UserId::parse("bob").unwrap();
    let at = "2026-11-30T18:00:00.000000Z";
    // bob opens a payment, once (asking again answers the same one; carol cannot open his).
    let opened = world
        .store
        .open_payment(&world.oid("o2"), &bob, "pay-1")
        .await
        .unwrap();
    assert_eq!(opened.as_deref(), Some("pay-1"));
    let again = world
        .store
        .open_payment(&world.oid("o2"), &bob, "pay-2")
        .await
        .unwrap();
    assert_eq!(again.as_deref(), Some("pay-1"));
    let carol = UserId::parse("carol").unwrap();
    assert_eq!(
        world
            .store
            .open_payment(&world.oid("o2"), &carol, "pay-3")
            .await
            .unwrap(),
        None
    );
    // Only that payment pays it, once: the condition refuses another and a repeat.
    assert!(
        !world
            .store
            .settle_online(&world.oid("o2"), "pay-2", at)
            .await
            .unwrap()
    );
    let o2 = world.oid("o2");
    let pay = || world.store.settle_online(&o2, "pay-1", at);
    assert!(pay().await.unwrap());
    assert!(!pay().await.unwrap());
    assert_eq!(
        world
            .store
            .open_payment(&world.oid("o2"), &bob, "pay-4")
            .await
            .unwrap(),
        None
    );
    // Cash on delivery keeps the order too, and its window no longer cancels it.
    assert!(
        world
            .store
            .keep_for_delivery(&world.oid("o3"), &carol)
            .await
            .unwrap()
    );
    assert!(
        !world
            .store
            .keep_for_delivery(&world.oid("o3"), &carol)
            .await
            .unwrap()
    );
    let due = world.take_payment_due().await;
    assert_eq!(due.len(), 3);
    for _ in 0..2 {
        world.time_out(&due).await;
    }
    world
        .assert_statuses(&[("o1", "CANCELLED"), ("o2", "PAID"), ("o3", "COD")])
        .await;
    let paid = world.store.order(&world.oid("o2")).await.unwrap().unwrap();
    assert_eq!(
        (
            paid.payment_method,
            paid.payment_id.as_deref(),
            paid.paid_at.as_deref()
        ),
        (Some(PaymentMethod::Online), Some("pay-1"), Some(at))
    );
    let kept = world.store.order(&world.oid("o3")).await.unwrap().unwrap();
    assert_eq!(
        (kept.payment_method, kept.paid_at),
        (Some(PaymentMethod::Cod), None)
    );
    assert_eq!(world.stocks().await, (3, 3));
    assert_eq!(world.released().await, ["o1"]);
    assert_eq!(world.bought("alice").await, 0);
}

#[tokio::test]
async fn a_cancelled_order_gives_its_unit_back_to_the_buyer_who_may_buy_again() {
    let world = World::with_limit(5, 5, 1).await;
    world.place("o1", "alice").await;
    let due = world.take_payment_due().await;
    for _ in 0..2 {
        world.time_out(&due).await;
        assert_eq!(world.status("o1").await, "CANCELLED");
        assert_eq!(world.units("alice").await, 0);
        assert_eq!(world.dynamo_stock().await, 5);
    }
    assert_eq!(world.bought("alice").await, 0);

    world.place("o2", "alice").await;
    assert_eq!(world.status("o2").await, "CONFIRMED");
    assert_eq!(world.units("alice").await, 1);
    assert_eq!(world.dynamo_stock().await, 4);
}
