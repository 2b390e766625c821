//! The order path's adapters against moto and redis-server: orders materialized once with one
//! stock write per batch, DynamoDB's stock and buyer items as the final guards, payment
//! timeouts that give a unit back to both stores (and to its buyer) once, the reconciliation
//! of orphaned reservations, and an order read by its owner as PENDING, then as materialized.
//!
//! `mod.rs` holds the [`World`] every test starts from: a sale in both stores over a fresh
//! table and queue; the tests are grouped by what they check.

mod orders;
mod reconciliation;
mod refunds;
mod unpaid;

use crate::support::{clients, create_queue, create_social_table, redis, sealed_batch};
use app::cloud::Clients;
use app::consumer::Message;
use app::dynamo::{get_s, key, n, s};
use app::ids::{OrderId, SaleId, UserId};
use app::queue::Queue;
use app::seckill::keys::{
    LIVE_SALES_PK, ORDER_SK, SALE_SK, SaleKeys, live_sale_sk, order_pk, sale_pk,
};
use app::seckill::order::OrderStore;
use app::seckill::order::consumer::{self, OrderDeps};
use app::seckill::order::dynamo::DynamoOrderStore;
use app::seckill::order::redis::RedisReservations;
use app::seckill::order::sqs::SqsPaymentDueSink;
use app::seckill::payment::timeout as payment_timeout;
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
