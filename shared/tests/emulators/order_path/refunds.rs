//! Refunds: recorded once per payment and order, shown on their order, listed oldest first
//! and settled once.

use super::World;
use app::cursor::PageLimit;
use app::seckill::order::OrderStore;
use app::seckill::payment::{Currency, Refund, RefundReason};

#[tokio::test]
async fn a_refund_is_recorded_once_per_payment_and_order() {
    let world = World::new(5, 5).await;
    let refund = Refund {
        payment_id: "pay-late".to_owned(),
        order_id: world.oid("o1"),
        user_id: "alice".to_owned(),
        amount_cents: 990,
        currency: Currency::shop(),
        reason: RefundReason::OrderCancelled,
        recorded_at: "2026-11-30T18:00:00.000000Z".to_owned(),
    };
    assert!(world.store.record_refund(&refund).await.unwrap());
    assert!(!world.store.record_refund(&refund).await.unwrap());
    // The same payment named with another order is its own refund: it does not overwrite
    // the first, and the first did not block it.
    let misnamed = Refund {
        order_id: world.oid("o2"),
        user_id: "bob".to_owned(),
        amount_cents: 1,
        reason: RefundReason::UnknownPayment,
        ..refund.clone()
    };
    assert!(world.store.record_refund(&misnamed).await.unwrap());
    let item = world
        .item("REFUND#pay-late", &format!("ORDER#{}", world.id("o1")))
        .await
        .unwrap();
    assert_eq!(item["reason"].as_s().unwrap(), "ORDER_CANCELLED");
    assert_eq!(item["userId"].as_s().unwrap(), "alice");
    assert_eq!(item["amountCents"].as_n().unwrap(), "990");
    assert_eq!(item["currency"].as_s().unwrap(), "EUR");
    assert_eq!(item["state"].as_s().unwrap(), "DUE");
    assert_eq!(item["gsi1pk"].as_s().unwrap(), "REFUNDS#DUE");
    let other = world
        .item("REFUND#pay-late", &format!("ORDER#{}", world.id("o2")))
        .await
        .unwrap();
    assert_eq!(other["userId"].as_s().unwrap(), "bob");
}

#[tokio::test]
async fn a_refund_shows_on_its_order_is_listed_oldest_first_and_settled_once() {
    use app::seckill::payment::refunds::RefundState;
    let world = World::new(5, 5).await;
    world.place("o1", "alice").await;
    world.place("o2", "bob").await;
    let refund = |payment: &str, order: &str, user: &str, at: &str| Refund {
        payment_id: payment.to_owned(),
        order_id: world.oid(order),
        user_id: user.to_owned(),
        amount_cents: 990,
        currency: Currency::shop(),
        reason: RefundReason::OrderCancelled,
        recorded_at: at.to_owned(),
    };
    // Recorded newest first; listed oldest first, a page at a time.
    let late = refund("pay-b", "o1", "alice", "2026-12-01T10:00:02.000000Z");
    let early = refund("pay-a", "o2", "bob", "2026-12-01T10:00:01.000000Z");
    for r in [&late, &early] {
        assert!(world.store.record_refund(r).await.unwrap());
    }
    let one = PageLimit::parse(Some("1")).unwrap();
    let first = world.store.refunds_due(one, None).await.unwrap();
    assert_eq!(first.items[0].payment_id, "pay-a");
    assert_eq!(first.items[0].state, RefundState::Due);
    let second = world
        .store
        .refunds_due(one, first.next.as_ref())
        .await
        .unwrap();
    assert_eq!(second.items[0].payment_id, "pay-b");
    let order = world.store.order(&world.oid("o1")).await.unwrap().unwrap();
    assert_eq!(order.refunds.len(), 1);
    assert_eq!(
        (order.refunds[0].payment_id.as_str(), order.refunds[0].state),
        ("pay-b", RefundState::Due)
    );

    let due = world
        .store
        .refund("pay-b", &world.oid("o1"))
        .await
        .unwrap()
        .unwrap();
    // The payment's one refund is o1's: taken once, answered again, refused to another order.
    for (order, holder) in [("o1", None), ("o1", None), ("o2", Some(world.oid("o1")))] {
        let claimed = world
            .store
            .claim_payment_refund("pay-b", &world.oid(order))
            .await
            .unwrap();
        assert_eq!(claimed, holder, "{order}");
    }
    assert!(world.store.mark_refunded(&due, "rf-1", "t1").await.unwrap());
    assert!(!world.store.mark_refunded(&due, "rf-2", "t2").await.unwrap());
    let settled = world
        .store
        .refund("pay-b", &world.oid("o1"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(settled.state, RefundState::Refunded);
    assert_eq!(settled.provider_refund_id.as_deref(), Some("rf-1"));
    assert_eq!(settled.refunded_at.as_deref(), Some("t1"));
    let order = world.store.order(&world.oid("o1")).await.unwrap().unwrap();
    assert_eq!(order.refunds[0].state, RefundState::Refunded);
    assert_eq!(order.refunds[0].refunded_at.as_deref(), Some("t1"));
    let all = PageLimit::parse(None).unwrap();
    let still: Vec<String> = (world.store.refunds_due(all, None).await.unwrap().items)
        .into_iter()
        .map(|r| r.payment_id)
        .collect();
    assert_eq!(still, ["pay-a"]);
    let item = world
        .item("REFUND#pay-b", &format!("ORDER#{}", world.id("o1")))
        .await
        .unwrap();
    assert_eq!(item["gsi1pk"].as_s().unwrap(), "REFUNDS#REFUNDED");
}
