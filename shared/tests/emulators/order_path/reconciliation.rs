//! The reconciliation of reservations that never became orders, and of a Redis stock that
//! lost admissions.

use super::World;
use app::ids::SaleId;
use app::seckill::order::Reservations;

#[tokio::test]
async fn reconciliation_releases_an_orphaned_reservation_once() {
    let world = World::new(5, 5).await;
    world.reserve("orphan", "alice", 1_000).await;
    world.reserve("young", "bob", 100_000).await;
    let summary = world.reconcile_at(110_000).await;
    assert_eq!(summary.released, 1);
    let report = &summary.sales[0];
    assert_eq!(report.sale_id, world.sale);
    assert_eq!(report.redis_stock, Some(3));
    assert_eq!(report.dynamo_stock_remaining, Some(5));
    assert_eq!(world.released().await, ["orphan"]);
    assert_eq!(world.redis_stock().await, 4);
    assert_eq!(world.pending().await, 1);

    let again = world.reconcile_at(110_000).await;
    assert_eq!(again.released, 0);
    assert_eq!(world.redis_stock().await, 4);
    assert_eq!(world.dynamo_stock().await, 5);
}

#[tokio::test]
async fn reconciliation_caps_a_redis_stock_that_lost_admissions_and_never_raises_one() {
    // Redis says 8 where DynamoDB has 5: it lost three admissions (a failover).
    let world = World::new(5, 8).await;
    world.reserve("young", "bob", 100_000).await;
    let summary = world.reconcile_at(110_000).await;
    let report = &summary.sales[0];
    assert_eq!(report.redis_stock, Some(7));
    // At most 5 - 1 pending can still be confirmed.
    assert_eq!(report.capped, 3);
    assert_eq!(world.redis_stock().await, 4);
    assert_eq!(world.pending().await, 1);

    // Within the ceiling, again: nothing changes.
    let again = world.reconcile_at(110_000).await;
    assert_eq!(again.sales[0].capped, 0);
    assert_eq!(world.redis_stock().await, 4);

    // Pending reservations count by their units: 3 of one order and 1 of an old-format entry
    // leave room for 5 - 4.
    let units = World::new(5, 8).await;
    units.reserve_units("three", "cid", 100_000, 3).await;
    units.reserve("one", "dan", 100_000).await;
    assert_eq!(units.redis_stock().await, 4);
    assert_eq!(
        units.reservations.cap_stock(&units.sale, 5).await.unwrap(),
        3
    );
    assert_eq!(units.redis_stock().await, 1);
    // Released whole: its 3 units come back, from its own entry.
    assert!(
        units
            .reservations
            .release(&units.sale, &units.oid("three"), None)
            .await
            .unwrap()
    );
    assert_eq!(units.redis_stock().await, 4);

    // Redis below DynamoDB (it lost releases): undersold, never raised.
    let low = World::new(5, 2).await;
    assert_eq!(low.reservations.cap_stock(&low.sale, 5).await.unwrap(), 0);
    assert_eq!(low.redis_stock().await, 2);
    // A ceiling below the pending reservations is 0, not negative.
    low.reserve("a", "alice", 1).await;
    low.reserve("b", "bob", 1).await;
    assert_eq!(low.reservations.cap_stock(&low.sale, 1).await.unwrap(), 0);
    assert_eq!(low.redis_stock().await, 0);
    // A sale Redis does not hold is left alone.
    assert_eq!(
        low.reservations
            .cap_stock(&SaleId::generate(), 5)
            .await
            .unwrap(),
        0
    );
}
