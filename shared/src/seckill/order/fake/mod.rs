//! In-memory fakes of the order path's ports, with the semantics of their adapters, for the
//! domain tests: the commerce table in `orders.rs`, Redis's reservations in
//! `reservations.rs`; here, the payment-timeout queue and the ids, events and worlds the tests
//! start from.

use crate::consumer::Message;
use crate::ids::{OrderId, SaleId, UserId};
use crate::seckill::order::consumer as order_consumer;
use crate::seckill::order::{DueOrder, OrderStore, PaymentDueError, PaymentDueSink};
use async_trait::async_trait;
use lambda_http::Request;
use lambda_http::RequestExt;
use std::collections::HashMap;
use std::sync::Mutex;

mod orders;
mod reservations;

pub(crate) use orders::MemoryOrders;
pub(crate) use reservations::MemoryReservations;

/// Sale ids (UUIDs).
pub(crate) const S1: &str = "0190a1b2-c3d4-7e5f-8a9b-000000000001";
pub(crate) const S2: &str = "0190a1b2-c3d4-7e5f-8a9b-000000000002";
pub(crate) const GHOST: &str = "0190a1b2-c3d4-7e5f-8a9b-00000000dead";

/// The order id a test names `name`: `name` itself when it is an order id already, or when it
/// is not a short plain name (a malformed id, on purpose); else an id of `sale` (of [`S1`] when
/// `sale` is no sale id) whose UUID part spells `name` ([`order_name`] reads it back), so that
/// the tests keep calling their orders "o1", "o2".
pub(crate) fn order_id(sale: &str, name: &str) -> String {
    let plain =
        !name.is_empty() && name.len() <= 16 && name.bytes().all(|b| b.is_ascii_alphanumeric());
    if OrderId::parse(name).is_ok() || !plain {
        return name.to_owned();
    }
    let sale = SaleId::parse(sale).map_or_else(|_| S1.to_owned(), |sale| sale.to_string());
    let spelled: String = name.bytes().map(|b| format!("{b:02x}")).collect();
    format!("{sale}.{spelled:0<32}")
}

/// [`order_id`] as an [`OrderId`] (the name must make one).
pub(crate) fn oid(sale: &str, name: &str) -> OrderId {
    OrderId::parse(&order_id(sale, name)).unwrap()
}

/// The name [`order_id`] spelled into `id`, else `id` itself.
pub(crate) fn order_name(id: &str) -> String {
    let spelled = id.split_once('.').and_then(|(_, rest)| {
        let bytes: Vec<u8> = (0..rest.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(rest.get(i..i + 2)?, 16).ok())
            .collect::<Option<_>>()?;
        let name: Vec<u8> = bytes.into_iter().take_while(|b| *b != 0).collect();
        let name = String::from_utf8(name).ok()?;
        (order_id(id.split_once('.')?.0, &name) == id).then_some(name)
    });
    spelled.unwrap_or_else(|| id.to_owned())
}

/// An `OrderPlaced` v1 message body (`order` as [`order_id`] spells it).
/// The unit price of every sale of the fake store, and of [`placed`]'s orders.
pub(crate) const PRICE_CENTS: u64 = 990;

pub(crate) fn placed(order: &str, sale: &str, user: &str) -> String {
    serde_json::json!({"type": "OrderPlaced", "version": 1, "id": format!("ev-{order}"),
        "occurredAt": "2026-11-30T18:00:00Z",
        "payload": {"orderId": order_id(sale, order), "saleId": sale, "userId": user, "priceCents": 990,
                    "reservedAtMs": 1_796_060_000_000_i64}})
    .to_string()
}

/// An `OrderPlaced` v1 message body of an order reserved `later_ms` after [`placed`]'s.
pub(crate) fn placed_later(order: &str, sale: &str, user: &str, later_ms: i64) -> String {
    let mut body: serde_json::Value = serde_json::from_str(&placed(order, sale, user)).unwrap();
    body["payload"]["reservedAtMs"] = (1_796_060_000_000_i64 + later_ms).into();
    body.to_string()
}

/// An `OrderPlaced` v2 message body of `quantity` units, paid by `method` when chosen.
pub(crate) fn placed_units(
    order: &str,
    sale: &str,
    user: &str,
    quantity: u32,
    method: Option<&str>,
) -> String {
    let mut body: serde_json::Value = serde_json::from_str(&placed(order, sale, user)).unwrap();
    body["version"] = 2.into();
    body["payload"]["quantity"] = quantity.into();
    if let Some(method) = method {
        body["payload"]["paymentMethod"] = method.into();
    }
    body.to_string()
}

/// Order ids of [`S1`] in the form the order route mints ([`crate::ids::OrderId`]).
pub(crate) const O1: &str = "0190a1b2-c3d4-7e5f-8a9b-000000000001.0190a1b2c3d47e5f8a9b0000000001a1";
pub(crate) const O2: &str = "0190a1b2-c3d4-7e5f-8a9b-000000000001.0190a1b2c3d47e5f8a9b0000000001a2";

/// A store holding `order`, a CONFIRMED order of `user` for 2 units of [`S1`] at 990 (1,980 in
/// all) to pay online, with its payment `payment` opened; and the reservations behind it.
pub(crate) async fn awaiting_payment(
    order: &str,
    user: &str,
    payment: &str,
) -> (MemoryOrders, MemoryReservations) {
    let store = MemoryOrders::default();
    store.add_sale(S1, 10);
    let reservations = MemoryReservations::default();
    add_awaiting_payment(&store, &reservations, order, user, payment).await;
    (store, reservations)
}

/// [`awaiting_payment`]'s order added to `store`.
pub(crate) async fn add_awaiting_payment(
    store: &MemoryOrders,
    reservations: &MemoryReservations,
    order: &str,
    user: &str,
    payment: &str,
) {
    reservations.reserve_units(S1, order, user, 0, 2);
    let deps = crate::seckill::order::consumer::OrderDeps {
        store,
        reservations,
        payments: &MemoryPayments::default(),
        seal: crate::seckill::admission::seal::Seal::for_tests(),
    };
    let body = placed_units(order, S1, user, 2, Some("ONLINE"));
    let failed =
        crate::seckill::order::consumer::handle_batch(deps, crate::testing::sealed_batch(&[body]))
            .await;
    assert!(failed.is_empty(), "{failed:?}");
    let owner = UserId::parse(user).unwrap();
    let opened = (store.open_payment(&oid(S1, order), &owner, payment).await).unwrap();
    assert_eq!(opened.as_deref(), Some(payment));
}

/// A `PaymentDue` v1 message body (`order` as [`order_id`] spells it).
pub(crate) fn due(order: &str, sale: &str) -> String {
    serde_json::json!({"type": "PaymentDue", "version": 1, "id": format!("due-{order}"),
        "occurredAt": "2026-11-30T18:00:00Z",
        "payload": {"orderId": order_id(sale, order), "saleId": sale}})
    .to_string()
}

#[derive(Default)]
pub(crate) struct MemoryPayments {
    sent: Mutex<Vec<DueOrder>>,
    fail: Mutex<bool>,
}

impl MemoryPayments {
    pub(crate) fn sent(&self) -> Vec<DueOrder> {
        self.sent.lock().unwrap().clone()
    }

    pub(crate) fn fail(&self, fail: bool) {
        *self.fail.lock().unwrap() = fail;
    }
}

#[async_trait]
impl PaymentDueSink for MemoryPayments {
    async fn payment_due(&self, due: &DueOrder) -> Result<(), PaymentDueError> {
        if *self.fail.lock().unwrap() {
            return Err(anyhow::anyhow!("queue down").into());
        }
        self.sent.lock().unwrap().push(due.clone());
        Ok(())
    }
}

/// A store with sale S1 and these `(order, buyer)` orders materialized by the consumer.
pub(crate) async fn seeded(orders: &[(&str, &str)]) -> MemoryOrders {
    let store = MemoryOrders::default();
    store.add_sale(S1, 10);
    let reservations = MemoryReservations::default();
    let payments = MemoryPayments::default();
    let messages = orders
        .iter()
        .map(|(order, user)| {
            let body = placed(order, S1, user);
            Message {
                id: (*order).to_owned(),
                seal: Some(crate::seckill::admission::seal::Seal::for_tests().sign(&body)),
                body,
            }
        })
        .collect();
    let deps = order_consumer::OrderDeps {
        store: &store,
        reservations: &reservations,
        payments: &payments,
        seal: crate::seckill::admission::seal::Seal::for_tests(),
    };
    assert!(
        order_consumer::handle_batch(deps, messages)
            .await
            .is_empty()
    );
    store
}

/// `request` for the order `order` of [`S1`] (its `{orderId}` path parameter, as
/// [`order_id`] spells it).
pub(crate) fn with_order(request: Request, order: &str) -> Request {
    let order = order_id(S1, order);
    request.with_path_parameters(HashMap::from([("orderId".to_owned(), order)]))
}

/// The order path's fakes together, for tests of the consumer and what runs beside it.
pub(crate) struct World {
    pub(crate) store: MemoryOrders,
    pub(crate) reservations: MemoryReservations,
    pub(crate) payments: MemoryPayments,
}

impl World {
    pub(crate) fn new(sale: &str, stock: i64) -> Self {
        let world = Self {
            store: MemoryOrders::default(),
            reservations: MemoryReservations::default(),
            payments: MemoryPayments::default(),
        };
        world.store.add_sale(sale, stock);
        world
    }

    pub(crate) fn deps(&self) -> order_consumer::OrderDeps<'_> {
        order_consumer::OrderDeps {
            store: &self.store,
            reservations: &self.reservations,
            payments: &self.payments,
            seal: crate::seckill::admission::seal::Seal::for_tests(),
        }
    }

    /// Reserves each (order, user) of S1 and answers their `OrderPlaced` bodies.
    pub(crate) fn reserve_all(
        &self,
        orders: impl Iterator<Item = (String, String)>,
    ) -> Vec<String> {
        orders
            .map(|(order, user)| {
                self.reservations.reserve(S1, &order, &user);
                placed(&order, S1, &user)
            })
            .collect()
    }

    /// Runs the consumer on `bodies`, which must all succeed.
    pub(crate) async fn consume(&self, bodies: &[String]) {
        let failed =
            order_consumer::handle_batch(self.deps(), crate::testing::sealed_batch(bodies)).await;
        assert!(failed.is_empty(), "{failed:?}");
    }
}
