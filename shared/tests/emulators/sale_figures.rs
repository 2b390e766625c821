//! A sale's figures against moto and Redis: orders placed, confirmed, paid, kept for
//! delivery, cancelled and rejected through the real adapters, then summed from the sharded
//! sale-orders index (gsi3) and the refunds due, never a scan.

use crate::support::{clients, create_commerce_table, redis, sealed_batch};
use app::ids::{OrderId, SaleId, UserId};
use app::once::Unit;
use app::seckill::admission::Holder;
use app::seckill::keys::{SALE_ORDER_SHARDS, SaleKeys, order_shard};
use app::seckill::office::figures::{SaleLedger, Tally, sale_figures};
use app::seckill::order::consumer::{self, OrderDeps};
use app::seckill::order::dynamo::DynamoOrderStore;
use app::seckill::order::redis::RedisReservations;
use app::seckill::order::{HeldOrder, OrderStore, PaymentDueSink};
use app::seckill::payment::{Currency, Refund, RefundReason};
use app::seckill::sale::dynamo::DynamoSaleStore;
use app::seckill::sale::{Lifecycle, NewSale, Sale, SaleStore};
use async_trait::async_trait;
use redis::aio::ConnectionManager;

/// The payment-due events are not what this test looks at.
struct NoPayments;

#[async_trait]
impl PaymentDueSink for NoPayments {
    async fn payment_due(
        &self,
        _due: &app::seckill::order::DueOrder,
    ) -> Result<(), app::seckill::order::PaymentDueError> {
        Ok(())
    }
}

/// What the admission script does for one order (`reserve.lua`): the unit taken from the
/// stock, the reservation pending.
async fn reserve(redis: &ConnectionManager, sale: &SaleId, order: &str, user: &str, units: i64) {
    let keys = SaleKeys::new(sale);
    let mut redis = redis.clone();
    let _: () = redis::pipe()
        .atomic()
        .decr(&keys.stock, units)
        .ignore()
        .hincr(&keys.bought, user, units)
        .ignore()
        .hset(&keys.pending, order, format!("{user}:0:{units}"))
        .ignore()
        .hset(&keys.orders, order, user)
        .ignore()
        .query_async(&mut redis)
        .await
        .unwrap();
}

fn placed(sale: &SaleId, order: &str, user: &str, units: u32, method: &str) -> String {
    serde_json::json!({"type": "OrderPlaced", "version": 2, "id": format!("ev-{order}"),
        "occurredAt": "2026-12-01T10:00:00Z",
        "payload": {"orderId": order, "saleId": sale.as_str(), "userId": user,
                    "priceCents": 1_999, "quantity": units, "paymentMethod": method,
                    "reservedAtMs": 1_796_060_000_000_i64}})
    .to_string()
}

#[tokio::test]
async fn a_sales_figures_sum_its_orders_by_status_from_every_shard_and_its_refunds_due() {
    let clients = clients().await;
    let table = create_commerce_table(&clients).await;
    let sales = DynamoSaleStore::new(clients.dynamodb.clone(), &table);
    let store = DynamoOrderStore::new(clients.dynamodb.clone(), &table);
    let redis = redis().await;
    let reservations = RedisReservations::new(redis.clone());

    // A sale of 8 units, 3 per buyer, published, with 10 in Redis (as after a loss of
    // admissions: DynamoDB is the final guard); and a second sale
    // whose orders and refunds must not count.
    let now = time::OffsetDateTime::now_utc();
    let new = |stock| NewSale {
        product_id: "sku".into(),
        title: "Phone".into(),
        price_cents: 1_999,
        stock,
        per_user_limit: 3,
        starts_at: now - time::Duration::minutes(1),
        ends_at: now + time::Duration::hours(1),
        reservation_opens_at: None,
    };
    let sale = SaleId::generate();
    let other = SaleId::generate();
    for (id, stock) in [(&sale, 8), (&other, 5)] {
        let draft = Sale::draft(id.clone(), new(stock), app::clock::format(now));
        sales.create(&draft).await.unwrap();
        let published = sales.publish(id, &app::clock::format(now)).await.unwrap();
        assert_eq!(published.unwrap().state, Lifecycle::Published);
    }
    let mut connection = redis.clone();
    let _: () = redis::AsyncCommands::set(&mut connection, SaleKeys::new(&sale).stock, 10)
        .await
        .unwrap();

    let deps = OrderDeps {
        store: &store,
        reservations: &reservations,
        payments: &NoPayments,
        seal: app::seckill::admission::seal::Seal::for_tests(),
    };
    // Six orders of 8 units, which land in several of the index's partitions.
    let buyers: Vec<(OrderId, String, u32, &str)> = [
        ("ann", 2, "ONLINE"),
        ("bob", 1, "COD"),
        ("cid", 1, "ONLINE"),
        ("dan", 2, "ONLINE"),
        ("eve", 1, "COD"),
        ("fay", 1, "ONLINE"),
    ]
    .into_iter()
    .map(|(user, units, method)| {
        let order = OrderId::generate(&sale);
        (order, user.to_owned(), units, method)
    })
    .collect();
    let mut bodies = Vec::new();
    for (order, user, units, method) in &buyers {
        reserve(&redis, &sale, order.as_str(), user, i64::from(*units)).await;
        bodies.push(placed(&sale, order.as_str(), user, *units, method));
    }
    let failed = consumer::handle_batch(deps, sealed_batch(&bodies)).await;
    assert!(failed.is_empty(), "{failed:?}");
    // 8 units taken by 6 orders; gus finds DynamoDB's stock exhausted: rejected.
    let rejected = OrderId::generate(&sale);
    reserve(&redis, &sale, rejected.as_str(), "gus", 1).await;
    let deps = OrderDeps {
        store: &store,
        reservations: &reservations,
        payments: &NoPayments,
        seal: app::seckill::admission::seal::Seal::for_tests(),
    };
    let failed = consumer::handle_batch(
        deps,
        sealed_batch(&[placed(&sale, rejected.as_str(), "gus", 1, "ONLINE")]),
    )
    .await;
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(
        store
            .order(&rejected)
            .await
            .unwrap()
            .unwrap()
            .status
            .as_str(),
        "REJECTED"
    );

    // ann and cid pay online; dan's order is cancelled (its payment window ended) and the
    // payment that came after it is recorded for refund; fay's stays awaiting payment.
    for (order, user, _, _) in buyers.iter().filter(|b| b.1 == "ann" || b.1 == "cid") {
        let owner = UserId::parse(user).unwrap();
        let payment = format!("pay-{user}");
        store.open_payment(order, &owner, &payment).await.unwrap();
        assert!(
            store
                .settle_online(order, &payment, "2026-12-01T10:01:00Z")
                .await
                .unwrap()
        );
    }
    let dan = &buyers[3].0;
    let holder = Holder {
        user_id: UserId::parse("dan").unwrap(),
        units: 2,
    };
    store
        .cancel_orders(
            &sale,
            &[Unit {
                marker: dan.to_string(),
                messages: Vec::new(),
                payload: HeldOrder {
                    order_id: dan.clone(),
                    holder,
                },
            }],
        )
        .await
        .unwrap();
    let refund = |payment: &str, order: &OrderId| Refund {
        payment_id: payment.to_owned(),
        order_id: order.clone(),
        user_id: "dan".to_owned(),
        amount_cents: 3_998,
        currency: Currency::shop(),
        reason: RefundReason::OrderCancelled,
        recorded_at: "2026-12-01T10:02:00Z".to_owned(),
    };
    assert!(store.record_refund(&refund("pay-dan", dan)).await.unwrap());
    let foreign = OrderId::generate(&other);
    assert!(
        store
            .record_refund(&refund("pay-x", &foreign))
            .await
            .unwrap()
    );
    // And one reservation admitted but not yet materialized.
    let pending = OrderId::generate(&sale);
    reserve(&redis, &sale, pending.as_str(), "hal", 1).await;

    let figures = sale_figures(&sales, &store, &reservations, &sale)
        .await
        .unwrap();
    let tally = |orders, units, amount_cents| Tally {
        orders,
        units,
        amount_cents,
    };
    assert_eq!(figures.orders["PAID"], tally(2, 3, 5_997), "ann and cid");
    assert_eq!(figures.orders["COD"], tally(2, 2, 3_998), "bob and eve");
    assert_eq!(figures.orders["CONFIRMED"], tally(1, 1, 1_999), "fay");
    assert_eq!(figures.orders["CANCELLED"], tally(1, 2, 3_998), "dan");
    assert_eq!(figures.orders["REJECTED"], tally(1, 1, 1_999), "gus");
    assert_eq!(figures.units_sold, 5);
    assert_eq!(figures.revenue_cents, 9_995);
    assert_eq!(figures.paid_cents, 5_997);
    assert_eq!(figures.units_awaiting_payment, 1);
    assert_eq!(
        (figures.refunds_due.count, figures.refunds_due.amount_cents),
        (1, 3_998),
        "dan's, not the other sale's"
    );
    // DynamoDB: 8 taken, dan's 2 back. Redis: 10, 8 reserved, gus's 1 reserved and given
    // back on its rejection, hal's 1 reserved.
    assert_eq!(
        (figures.dynamo.stock, figures.dynamo.stock_remaining),
        (8, 2)
    );
    let cache = figures.redis.expect("Redis holds the sale");
    assert_eq!(cache.stock, 1);
    assert_eq!((cache.pending_orders, cache.pending_units), (1, 1), "hal's");

    // Each of the sale's 7 orders was read once, from its own partition of the index (the
    // other sale's none), and the orders spread over more than one partition.
    let tallies = store.order_tallies(&sale).await.unwrap();
    assert_eq!(tallies.items_read, 7);
    let mut shards: Vec<u8> = buyers.iter().map(|b| order_shard(&b.0)).collect();
    shards.sort_unstable();
    shards.dedup();
    assert!(shards.len() > 1 && shards.iter().all(|s| *s < SALE_ORDER_SHARDS));

    // The other sale has no orders; a sale Redis does not hold has no Redis figures.
    let none = sale_figures(&sales, &store, &reservations, &other)
        .await
        .unwrap();
    assert!(none.orders.values().all(|t| *t == Tally::default()));
    assert_eq!(none.redis, None);
}
