//! The order path's adapters against moto and redis-server: orders materialized once with one
//! stock write per batch, DynamoDB's stock and buyer items as the final guards, payment
//! timeouts that give a unit back to both stores (and to its buyer) once, the reconciliation of orphaned reservations, and an order
//! read by its owner as PENDING, then as materialized.

use crate::support::{
    clients, create_queue, create_social_table, redis, sealed_batch, template_batch_size,
};
use app::cloud::Clients;
use app::consumer::Message;
use app::cursor::PageLimit;
use app::dynamo::{get_s, key, n, s};
use app::ids::{OrderId, SaleId, UserId};
use app::queue::Queue;
use app::seckill::keys::{
    LIVE_SALES_PK, ORDER_SK, SALE_SK, SaleKeys, live_sale_sk, order_pk, sale_pk,
};
use app::seckill::order::consumer::{self, OrderDeps};
use app::seckill::order::dynamo::DynamoOrderStore;
use app::seckill::order::redis::RedisReservations;
use app::seckill::order::sqs::SqsPaymentDueSink;
use app::seckill::order::{
    Claim, OrderStatus, OrderStore, OrderView, PaymentMethod, Reservations, find_order,
};
use app::seckill::payment::timeout as payment_timeout;
use app::seckill::payment::{Currency, Refund, RefundReason};
use app::seckill::recovery::reconcile;
use aws_sdk_dynamodb::types::AttributeValue;
use redis::AsyncCommands;
use redis::aio::ConnectionManager;
use std::collections::HashMap;
use std::time::Duration;

/// A sale in both stores, with the order path's adapters over a fresh table and queue.
struct World {
    clients: Clients,
    table: String,
    sale: SaleId,
    redis: ConnectionManager,
    store: DynamoOrderStore,
    reservations: RedisReservations,
    payments: SqsPaymentDueSink,
    timeouts: Queue,
}

impl World {
    /// `dynamo_stock` in DynamoDB, `redis_stock` in Redis: they differ when Redis lost data.
    async fn new(dynamo_stock: i64, redis_stock: i64) -> Self {
        Self::with_limit(dynamo_stock, redis_stock, 100).await
    }

    /// A sale whose buyers may each hold `per_user_limit` units.
    async fn with_limit(dynamo_stock: i64, redis_stock: i64, per_user_limit: u32) -> Self {
        let clients = clients().await;
        // The commerce table has the same key layout (its gsi1 is the orders index).
        let table = create_social_table(&clients).await;
        let sale = SaleId::generate();
        let mut item = key(sale_pk(&sale), SALE_SK);
        item.insert("state".to_owned(), s("PUBLISHED"));
        // On the live index, as publishing puts it, ending in an hour.
        item.insert("gsi1pk".to_owned(), s(LIVE_SALES_PK));
        item.insert("gsi1sk".to_owned(), s(live_sale_sk("2026-12-01", &sale)));
        let ends_at = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
        item.insert("endsAt".to_owned(), s(app::clock::format(ends_at)));
        item.insert("stockRemaining".to_owned(), n(dynamo_stock));
        item.insert("perUserLimit".to_owned(), n(per_user_limit));
        item.insert("priceCents".to_owned(), n(990));
        clients
            .dynamodb
            .put_item()
            .table_name(&table)
            .set_item(Some(item))
            .send()
            .await
            .unwrap();
        let mut redis = redis().await;
        let _: () = redis
            .set(SaleKeys::new(&sale).stock, redis_stock)
            .await
            .unwrap();
        let url = create_queue(&clients, "test-timeouts").await;
        let reservations = RedisReservations::new(redis.clone());
        Self {
            store: DynamoOrderStore::new(clients.dynamodb.clone(), &table),
            payments: SqsPaymentDueSink::new(Queue::new(clients.sqs.clone(), &url)),
            timeouts: Queue::new(clients.sqs.clone(), &url),
            reservations,
            clients,
            table,
            sale,
            redis,
        }
    }

    /// The reconciliation at `now_ms`, with a grace period of 60 s.
    async fn reconcile_at(&self, now_ms: i64) -> reconcile::Summary {
        reconcile::reconcile(
            &self.store,
            &self.reservations,
            Duration::from_secs(60),
            now_ms,
        )
        .await
        .unwrap()
    }

    /// The order id a test names `name`: `name` itself when it is an order id, else an id of
    /// the sale whose UUID part spells `name` ([`Self::name`] reads it back).
    fn id(&self, name: &str) -> String {
        if OrderId::parse(name).is_ok() {
            return name.to_owned();
        }
        assert!(name.len() <= 16, "{name}");
        let spelled: String = name.bytes().map(|b| format!("{b:02x}")).collect();
        format!("{}.{spelled:0<32}", self.sale)
    }

    fn oid(&self, name: &str) -> OrderId {
        OrderId::parse(&self.id(name)).unwrap()
    }

    /// The name [`Self::id`] spelled into `id`, else `id` itself.
    fn name(&self, id: &str) -> String {
        let spelled = id
            .strip_prefix(&format!("{}.", self.sale))
            .map(|rest| {
                let bytes: Vec<u8> = (0..rest.len() / 2)
                    .map(|i| u8::from_str_radix(&rest[2 * i..2 * i + 2], 16).unwrap())
                    .take_while(|b| *b != 0)
                    .collect();
                String::from_utf8(bytes).unwrap_or_default()
            })
            .filter(|name| self.id(name) == id);
        spelled.unwrap_or_else(|| id.to_owned())
    }

    fn deps(&self) -> OrderDeps<'_> {
        OrderDeps {
            store: &self.store,
            reservations: &self.reservations,
            payments: &self.payments,
            seal: app::seckill::admission::seal::Seal::for_tests(),
        }
    }

    /// What the admission script does for one order (`reserve.lua`).
    /// What the admission script did for an order of one unit before orders had a quantity
    /// (a pending entry without `:units`).
    async fn reserve(&self, order: &str, user: &str, at_ms: i64) {
        self.reserve_entry(order, user, 1, format!("{user}:{at_ms}"))
            .await;
    }

    /// What the admission script does for an order of `units` units.
    async fn reserve_units(&self, order: &str, user: &str, at_ms: i64, units: i64) {
        self.reserve_entry(order, user, units, format!("{user}:{at_ms}:{units}"))
            .await;
    }

    async fn reserve_entry(&self, order: &str, user: &str, units: i64, entry: String) {
        let keys = SaleKeys::new(&self.sale);
        let mut redis = self.redis.clone();
        let _: () = redis::pipe()
            .atomic()
            .decr(&keys.stock, units)
            .ignore()
            .hincr(&keys.bought, user, units)
            .ignore()
            .hset(&keys.pending, self.id(order), entry)
            .ignore()
            .hset(&keys.orders, self.id(order), user)
            .ignore()
            .query_async(&mut redis)
            .await
            .unwrap();
    }

    /// Reserves an order of `user` and runs the order consumer on it.
    async fn place(&self, order: &str, user: &str) {
        self.reserve(order, user, 0).await;
        self.consume(&[self.placed(order, user)]).await;
    }

    /// The `OrderPlaced` bodies of these (order, user) pairs, in order.
    fn bodies(&self, orders: &[(&str, &str)]) -> Vec<String> {
        orders
            .iter()
            .map(|(order, user)| self.placed(order, user))
            .collect()
    }

    fn placed(&self, order: &str, user: &str) -> String {
        serde_json::json!({"type": "OrderPlaced", "version": 1, "id": format!("ev-{order}"),
            "occurredAt": "2026-11-30T18:00:00Z",
            "payload": {"orderId": self.id(order), "saleId": self.sale, "userId": user,
                        "priceCents": 990, "reservedAtMs": 1_796_060_000_000_i64}})
        .to_string()
    }

    async fn dynamo_stock(&self) -> i64 {
        self.store
            .stock_remaining(&self.sale)
            .await
            .unwrap()
            .unwrap()
    }

    /// The stock in DynamoDB and in Redis.
    async fn stocks(&self) -> (i64, i64) {
        (self.dynamo_stock().await, self.redis_stock().await)
    }

    async fn units(&self, user: &str) -> i64 {
        self.store
            .buyer_units(&self.sale, &UserId::parse(user).unwrap())
            .await
            .unwrap()
    }

    async fn bought(&self, user: &str) -> i64 {
        let mut redis = self.redis.clone();
        let bought: Option<i64> = redis
            .hget(SaleKeys::new(&self.sale).bought, user)
            .await
            .unwrap();
        bought.unwrap_or(0)
    }

    async fn redis_stock(&self) -> i64 {
        let mut redis = self.redis.clone();
        redis.get(SaleKeys::new(&self.sale).stock).await.unwrap()
    }

    async fn released(&self) -> Vec<String> {
        let mut redis = self.redis.clone();
        let released: Vec<String> = redis
            .smembers(SaleKeys::new(&self.sale).released)
            .await
            .unwrap();
        let mut released: Vec<String> = released.iter().map(|id| self.name(id)).collect();
        released.sort();
        released
    }

    async fn pending(&self) -> usize {
        let mut redis = self.redis.clone();
        redis.hlen(SaleKeys::new(&self.sale).pending).await.unwrap()
    }

    async fn status(&self, order: &str) -> String {
        let item = self
            .item(&order_pk(&self.oid(order)), ORDER_SK)
            .await
            .unwrap();
        get_s(&item, "status").unwrap().to_owned()
    }

    /// An item of the table, strongly consistent.
    async fn item(&self, pk: &str, sk: &str) -> Option<HashMap<String, AttributeValue>> {
        let output = self
            .clients
            .dynamodb
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key(pk, sk)))
            .consistent_read(true)
            .send()
            .await
            .unwrap();
        output.item().cloned()
    }

    /// Runs the order consumer on `bodies`, which must all succeed.
    async fn consume(&self, bodies: &[String]) {
        let failed = consumer::handle_batch(self.deps(), sealed_batch(bodies)).await;
        assert!(failed.is_empty(), "{failed:?}");
    }

    /// Runs the payment-timeout consumer on `due`, which must all succeed.
    async fn time_out(&self, due: &[Message]) {
        let deps = payment_timeout::TimeoutDeps {
            store: &self.store,
            reservations: &self.reservations,
            payments: &self.payments,
            // The tests' orders are created late in 2026: a window they are all inside.
            cod_window: Duration::from_secs(3_650 * 86_400),
        };
        let failed = payment_timeout::handle_batch(deps, due.to_vec());
        let failed = failed.await;
        assert!(failed.is_empty(), "{failed:?}");
    }

    /// Asserts the stored status of each order.
    async fn assert_statuses(&self, expected: &[(&str, &str)]) {
        for (order, status) in expected {
            assert_eq!(self.status(order).await, *status, "{order}");
        }
    }

    /// Reserves `orders`, all alice's, a millisecond apart in that order, and answers their
    /// `OrderPlaced` bodies.
    async fn alices_orders_a_millisecond_apart(&self, orders: &[&str]) -> Vec<String> {
        let mut bodies = Vec::new();
        for (i, order) in orders.iter().enumerate() {
            self.reserve(order, "alice", 0).await;
            let mut body: serde_json::Value =
                serde_json::from_str(&self.placed(order, "alice")).unwrap();
            body["payload"]["reservedAtMs"] = (1_796_060_000_000_i64 + i as i64).into();
            bodies.push(body.to_string());
        }
        bodies
    }

    /// The orders of the `PaymentDue` messages on the timeout queue (taken), sorted, once each.
    async fn due_orders(&self) -> Vec<String> {
        let mut orders: Vec<String> = self
            .take_payment_due()
            .await
            .iter()
            .map(|m| serde_json::from_str::<serde_json::Value>(&m.body).unwrap())
            .map(|v| self.name(v["payload"]["orderId"].as_str().unwrap()))
            .collect();
        orders.sort();
        orders.dedup();
        orders
    }

    /// Receives and deletes the `PaymentDue` messages on the timeout queue.
    async fn take_payment_due(&self) -> Vec<Message> {
        let mut messages = Vec::new();
        loop {
            let batch = self
                .timeouts
                .receive(10, Duration::from_secs(1))
                .await
                .unwrap();
            if batch.is_empty() {
                return messages;
            }
            for received in batch {
                self.timeouts
                    .delete(&received.receipt_handle)
                    .await
                    .unwrap();
                messages.push(Message {
                    id: received.message_id,
                    body: received.body,
                    seal: None,
                });
            }
        }
    }
}

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
