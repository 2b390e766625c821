//! In-memory fakes of the order path's ports, with the semantics of their adapters, for the
//! domain tests.

use crate::consumer::Message;
use crate::cursor::{Cursor, InvalidCursor, PageLimit};
use crate::ids::{OrderId, SaleId, UserId};
use crate::once::{Rejected, Unit, indices_where, refuse_applied};
use crate::seckill::admission::Holder;
use crate::seckill::order::consumer as order_consumer;
use crate::seckill::order::dynamo::{LIMITS, fits_one_transaction, per_buyer};
use crate::seckill::order::refund::Refund;
use crate::seckill::order::refund::{
    OrderRefund, Outstanding, RefundPage, RefundRecord, RefundState,
};
use crate::seckill::order::{
    AdmittedOrder, Claim, ConfirmRejected, DueOrder, HeldOrder, LiveSale, LiveSales, NewOrder,
    Order, OrderLimits, OrderPage, OrderStatus, OrderStore, OrderStoreError, PaymentDueError,
    PaymentDueSink, PaymentMethod, PendingError, PendingOrders, PendingReservation, Reservations,
    ReservationsError, SaleGuards,
};
use async_trait::async_trait;
use lambda_http::Request;
use lambda_http::RequestExt;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

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

/// A sale item of the commerce table.
struct MemorySale {
    stock: i64,
    per_user_limit: u32,
    /// On the live index.
    live: bool,
    ends_at_ms: i64,
}

/// A refund's state, when it was refunded and the provider's refund id.
type RefundProgress = (RefundState, Option<String>, Option<String>);

#[derive(Default)]
pub(crate) struct MemoryOrders {
    pub(crate) orders: Mutex<BTreeMap<String, Order>>,
    sales: Mutex<HashMap<String, MemorySale>>,
    /// (sale id, user id) → units: the buyers' items.
    buyers: Mutex<HashMap<(String, String), i64>>,
    sale_writes: Mutex<u32>,
    refunds: Mutex<Vec<Refund>>,
    /// (payment, order) → the refund's state, when refunded and the provider's refund id.
    refund_states: Mutex<HashMap<(String, String), RefundProgress>>,
    /// Payment → the order whose refund of it is paid back.
    refund_ledger: Mutex<HashMap<String, OrderId>>,
}

impl MemoryOrders {
    /// A published sale whose per-user limit does not get in the way.
    pub(crate) fn add_sale(&self, sale: &str, stock: i64) {
        self.add_sale_with_limit(sale, stock, 100);
    }

    pub(crate) fn add_sale_with_limit(&self, sale: &str, stock: i64, per_user_limit: u32) {
        self.sales.lock().unwrap().insert(
            sale.to_owned(),
            MemorySale {
                stock,
                per_user_limit,
                live: true,
                ends_at_ms: i64::MAX,
            },
        );
    }

    /// The sale ends (or ended) at `ends_at_ms`.
    pub(crate) fn end_sale_at(&self, sale: &str, ends_at_ms: i64) {
        self.sales.lock().unwrap().get_mut(sale).unwrap().ends_at_ms = ends_at_ms;
    }

    /// Whether the sale is on the live index.
    pub(crate) fn is_live(&self, sale: &str) -> bool {
        self.sales.lock().unwrap()[sale].live
    }

    pub(crate) fn stock(&self, sale: &str) -> i64 {
        self.sales.lock().unwrap()[sale].stock
    }

    /// The buyer's item's `units` (0 when absent).
    pub(crate) fn units(&self, sale: &str, user: &str) -> i64 {
        self.buyers
            .lock()
            .unwrap()
            .get(&(sale.to_owned(), user.to_owned()))
            .copied()
            .unwrap_or(0)
    }

    pub(crate) fn sale_writes(&self) -> u32 {
        *self.sale_writes.lock().unwrap()
    }

    pub(crate) fn refunds(&self) -> Vec<Refund> {
        self.refunds.lock().unwrap().clone()
    }

    /// A recorded refund with its state.
    pub(crate) fn record(&self, refund: &Refund) -> RefundRecord {
        let states = self.refund_states.lock().unwrap();
        let (state, refunded_at, provider_refund_id) = states
            .get(&(refund.payment_id.clone(), refund.order_id.to_string()))
            .cloned()
            .unwrap_or((RefundState::Due, None, None));
        RefundRecord {
            payment_id: refund.payment_id.clone(),
            order_id: refund.order_id.clone(),
            user_id: refund.user_id.clone(),
            amount_cents: refund.amount_cents,
            currency: refund.currency.clone(),
            reason: refund.reason.as_str().to_owned(),
            state,
            recorded_at: refund.recorded_at.clone(),
            refunded_at,
            provider_refund_id,
        }
    }

    pub(crate) fn orders(&self) -> usize {
        self.orders.lock().unwrap().len()
    }

    /// The status of the order a test names `order` ([`order_id`]), of whichever sale.
    pub(crate) fn status(&self, order: &str) -> Option<OrderStatus> {
        let orders = self.orders.lock().unwrap();
        let mut found = orders
            .values()
            .filter(|o| o.order_id.as_str() == order_id(o.sale_id.as_str(), order));
        found.next().map(|o| o.status)
    }

    fn put(
        &self,
        units: &[Unit<NewOrder>],
        status: impl Fn(&NewOrder) -> OrderStatus,
    ) -> Result<(), Rejected> {
        let orders = self.orders.lock().unwrap();
        refuse_applied(units, |u| orders.contains_key(&u.marker))?;
        drop(orders);
        let mut orders = self.orders.lock().unwrap();
        for unit in units {
            let new = &unit.payload;
            orders.insert(
                new.order_id.to_string(),
                Order {
                    order_id: new.order_id.clone(),
                    sale_id: new.sale_id.clone(),
                    user_id: new.user_id.clone(),
                    price_cents: new.price_cents,
                    quantity: new.quantity,
                    total_cents: new.total_cents(),
                    status: status(new),
                    created_at: new.created_at.clone(),
                    address: new.address.clone(),
                    payment_method: new.payment_method,
                    payment_id: None,
                    paid_at: None,
                    delivery_confirmed_at: None,
                    refunds: Vec::new(),
                },
            );
        }
        Ok(())
    }
}

#[async_trait]
impl OrderStore for MemoryOrders {
    fn limits(&self) -> OrderLimits {
        LIMITS
    }

    async fn confirm_orders(
        &self,
        sale_id: &SaleId,
        per_user_limit: u32,
        units: &[Unit<NewOrder>],
    ) -> Result<(), ConfirmRejected> {
        let counts = per_buyer(
            units
                .iter()
                .map(|u| (u.payload.user_id.as_str(), u.payload.units())),
        );
        if !fits_one_transaction(units.len(), counts.len()) {
            return Err(ConfirmRejected::Failed(anyhow::anyhow!("too many items")));
        }
        // The conditions in the transaction's order: orders, buyers, the sale.
        {
            let orders = self.orders.lock().unwrap();
            let applied = indices_where(units, |u| orders.contains_key(&u.marker));
            if !applied.is_empty() {
                return Err(ConfirmRejected::AlreadyApplied(applied));
            }
        }
        let mut buyers = self.buyers.lock().unwrap();
        for (buyer, k) in &counts {
            let held = buyers
                .get(&(sale_id.to_string(), (*buyer).to_owned()))
                .copied()
                .unwrap_or(0);
            if held + k > i64::from(per_user_limit) {
                return Err(ConfirmRejected::OverLimit(UserId::parse(buyer).unwrap()));
            }
        }
        let mut sales = self.sales.lock().unwrap();
        let n: i64 = units.iter().map(|u| u.payload.units()).sum();
        match sales.get_mut(sale_id.as_str()) {
            Some(sale) if sale.stock >= n => sale.stock -= n,
            _ => return Err(ConfirmRejected::SoldOut),
        }
        *self.sale_writes.lock().unwrap() += 1;
        for (buyer, k) in counts {
            *buyers
                .entry((sale_id.to_string(), buyer.to_owned()))
                .or_default() += k;
        }
        drop(sales);
        drop(buyers);
        self.put(units, NewOrder::confirmed_status)
            .map_err(|_| ConfirmRejected::Failed(anyhow::anyhow!("checked above")))
    }

    async fn reject_orders(&self, units: &[Unit<NewOrder>]) -> Result<(), Rejected> {
        self.put(units, |_| OrderStatus::Rejected)
    }

    async fn cancel_orders(
        &self,
        sale_id: &SaleId,
        units: &[Unit<HeldOrder>],
    ) -> Result<(), Rejected> {
        let mut orders = self.orders.lock().unwrap();
        refuse_applied(units, |u| {
            !orders.get(&u.marker).is_some_and(|o| {
                o.status == OrderStatus::Confirmed
                    || (o.status == OrderStatus::Cod && o.delivery_confirmed_at.is_none())
            })
        })?;
        let counts = per_buyer(units.iter().map(|u| {
            (
                u.payload.holder.user_id.as_str(),
                i64::from(u.payload.holder.units),
            )
        }));
        if !fits_one_transaction(units.len(), counts.len()) {
            return Err(Rejected::Failed(anyhow::anyhow!("too many items")));
        }
        let mut buyers = self.buyers.lock().unwrap();
        for (buyer, k) in &counts {
            let held = buyers
                .get(&(sale_id.to_string(), (*buyer).to_owned()))
                .copied();
            if held.is_none_or(|held| held < *k) {
                return Err(Rejected::Aggregate);
            }
        }
        let mut sales = self.sales.lock().unwrap();
        let Some(sale) = sales.get_mut(sale_id.as_str()) else {
            return Err(Rejected::Aggregate);
        };
        sale.stock += units
            .iter()
            .map(|u| i64::from(u.payload.holder.units))
            .sum::<i64>();
        *self.sale_writes.lock().unwrap() += 1;
        for (buyer, k) in counts {
            *buyers
                .get_mut(&(sale_id.to_string(), buyer.to_owned()))
                .unwrap() -= k;
        }
        for unit in units {
            orders.get_mut(&unit.marker).unwrap().status = OrderStatus::Cancelled;
        }
        Ok(())
    }

    async fn stock_remaining(&self, sale_id: &SaleId) -> Result<Option<i64>, OrderStoreError> {
        Ok(self
            .sales
            .lock()
            .unwrap()
            .get(sale_id.as_str())
            .map(|s| s.stock))
    }

    async fn sale_guards(&self, sale_id: &SaleId) -> Result<Option<SaleGuards>, OrderStoreError> {
        Ok(self
            .sales
            .lock()
            .unwrap()
            .get(sale_id.as_str())
            .map(|sale| SaleGuards {
                stock_remaining: sale.stock,
                per_user_limit: sale.per_user_limit,
                price_cents: PRICE_CENTS,
            }))
    }

    async fn buyer_units(&self, sale_id: &SaleId, user: &UserId) -> Result<i64, OrderStoreError> {
        Ok(self.units(sale_id.as_str(), user.as_str()))
    }

    async fn order(&self, order_id: &OrderId) -> Result<Option<Order>, OrderStoreError> {
        Ok(self.orders.lock().unwrap().get(order_id.as_str()).cloned())
    }

    async fn orders_of(
        &self,
        user: &UserId,
        limit: PageLimit,
        cursor: Option<&Cursor>,
    ) -> Result<OrderPage, OrderStoreError> {
        let mut mine: Vec<Order> = self
            .orders
            .lock()
            .unwrap()
            .values()
            .filter(|o| o.user_id == *user)
            .cloned()
            .collect();
        mine.sort_by(|a, b| {
            (&b.created_at, b.order_id.as_str()).cmp(&(&a.created_at, a.order_id.as_str()))
        });
        let start = match cursor {
            None => 0,
            Some(cursor) => {
                if cursor.get("user") != Some(user.as_str()) {
                    return Err(OrderStoreError::InvalidCursor(InvalidCursor));
                }
                cursor
                    .get("after")
                    .and_then(|id| mine.iter().position(|o| o.order_id.as_str() == id))
                    .ok_or(InvalidCursor)?
                    + 1
            }
        };
        let limit = limit.get() as usize;
        let items: Vec<Order> = mine.iter().skip(start).take(limit).cloned().collect();
        let next = (start + limit < mine.len()).then(|| {
            Cursor::new(BTreeMap::from([
                ("user".to_owned(), user.to_string()),
                (
                    "after".to_owned(),
                    items.last().unwrap().order_id.to_string(),
                ),
            ]))
        });
        Ok(OrderPage { items, next })
    }

    async fn keep_for_delivery(
        &self,
        order_id: &OrderId,
        user: &UserId,
    ) -> Result<bool, OrderStoreError> {
        let mut orders = self.orders.lock().unwrap();
        match orders.get_mut(order_id.as_str()) {
            Some(order) if order.user_id == *user && order.status == OrderStatus::Confirmed => {
                order.status = OrderStatus::Cod;
                order.payment_method = Some(PaymentMethod::Cod);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn open_payment(
        &self,
        order_id: &OrderId,
        user: &UserId,
        new_payment_id: &str,
    ) -> Result<Option<String>, OrderStoreError> {
        let mut orders = self.orders.lock().unwrap();
        Ok(match orders.get_mut(order_id.as_str()) {
            Some(order) if order.user_id == *user && order.status == OrderStatus::Confirmed => {
                Some(
                    order
                        .payment_id
                        .get_or_insert_with(|| new_payment_id.to_owned())
                        .clone(),
                )
            }
            _ => None,
        })
    }

    async fn settle_online(
        &self,
        order_id: &OrderId,
        payment_id: &str,
        at: &str,
    ) -> Result<bool, OrderStoreError> {
        let mut orders = self.orders.lock().unwrap();
        match orders.get_mut(order_id.as_str()) {
            Some(order)
                if order.status == OrderStatus::Confirmed
                    && order.payment_id.as_deref() == Some(payment_id) =>
            {
                order.status = OrderStatus::Paid;
                order.payment_method = Some(PaymentMethod::Online);
                order.paid_at = Some(at.to_owned());
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn record_refund(&self, refund: &Refund) -> Result<bool, OrderStoreError> {
        let mut refunds = self.refunds.lock().unwrap();
        // One per payment and order, as the table's key (`REFUND#<payment>`, `ORDER#<order>`).
        if refunds
            .iter()
            .any(|r| r.payment_id == refund.payment_id && r.order_id == refund.order_id)
        {
            return Ok(false);
        }
        refunds.push(refund.clone());
        self.refund_states.lock().unwrap().insert(
            (refund.payment_id.clone(), refund.order_id.to_string()),
            (RefundState::Due, None, None),
        );
        if let Some(order) = self
            .orders
            .lock()
            .unwrap()
            .get_mut(refund.order_id.as_str())
        {
            order.refunds.push(OrderRefund {
                payment_id: refund.payment_id.clone(),
                amount_cents: refund.amount_cents,
                currency: refund.currency.clone(),
                reason: refund.reason.as_str().to_owned(),
                state: RefundState::Due,
                recorded_at: refund.recorded_at.clone(),
                refunded_at: None,
            });
        }
        Ok(true)
    }

    async fn refunds_due(
        &self,
        limit: PageLimit,
        cursor: Option<&Cursor>,
    ) -> Result<RefundPage, OrderStoreError> {
        let records: Vec<RefundRecord> = self.refunds().iter().map(|r| self.record(r)).collect();
        let mut due: Vec<RefundRecord> = records
            .into_iter()
            .filter(|r| r.state == RefundState::Due)
            .collect();
        due.sort_by(|a, b| (&a.recorded_at, &a.payment_id).cmp(&(&b.recorded_at, &b.payment_id)));
        let start = match cursor {
            None => 0,
            Some(cursor) => {
                cursor
                    .get("after")
                    .and_then(|after| {
                        due.iter()
                            .position(|r| format!("{}#{}", r.payment_id, r.order_id) == after)
                    })
                    .ok_or(InvalidCursor)?
                    + 1
            }
        };
        let limit = limit.get() as usize;
        let items: Vec<RefundRecord> = due.iter().skip(start).take(limit).cloned().collect();
        let next = (start + limit < due.len()).then(|| {
            let last = items.last().unwrap();
            Cursor::new(BTreeMap::from([(
                "after".to_owned(),
                format!("{}#{}", last.payment_id, last.order_id),
            )]))
        });
        Ok(RefundPage { items, next })
    }

    async fn refunds_outstanding(&self) -> Result<Outstanding, OrderStoreError> {
        let due: Vec<RefundRecord> = self
            .refunds()
            .iter()
            .map(|r| self.record(r))
            .filter(|r| r.state == RefundState::Due)
            .collect();
        Ok(Outstanding {
            count: due.len() as u64,
            oldest_recorded_at: due.iter().map(|r| r.recorded_at.clone()).min(),
        })
    }

    async fn refund(
        &self,
        payment_id: &str,
        order_id: &OrderId,
    ) -> Result<Option<RefundRecord>, OrderStoreError> {
        Ok(self
            .refunds()
            .iter()
            .find(|r| r.payment_id == payment_id && r.order_id == *order_id)
            .map(|r| self.record(r)))
    }

    async fn confirm_delivery(
        &self,
        order_id: &OrderId,
        at: &str,
    ) -> Result<Option<Order>, OrderStoreError> {
        let mut orders = self.orders.lock().unwrap();
        Ok(orders.get_mut(order_id.as_str()).map(|order| {
            if order.status == OrderStatus::Cod && order.delivery_confirmed_at.is_none() {
                order.delivery_confirmed_at = Some(at.to_owned());
            }
            order.clone()
        }))
    }

    async fn claim_payment_refund(
        &self,
        payment_id: &str,
        order_id: &OrderId,
    ) -> Result<Option<OrderId>, OrderStoreError> {
        let mut ledger = self.refund_ledger.lock().unwrap();
        let holder = ledger
            .entry(payment_id.to_owned())
            .or_insert_with(|| order_id.clone());
        Ok((holder != order_id).then(|| holder.clone()))
    }

    async fn mark_refunded(
        &self,
        refund: &RefundRecord,
        provider_refund_id: &str,
        at: &str,
    ) -> Result<bool, OrderStoreError> {
        let mut states = self.refund_states.lock().unwrap();
        let key = (refund.payment_id.clone(), refund.order_id.to_string());
        match states.get_mut(&key) {
            Some(state) if state.0 == RefundState::Due => {
                *state = (
                    RefundState::Refunded,
                    Some(at.to_owned()),
                    Some(provider_refund_id.to_owned()),
                );
            }
            _ => return Ok(false),
        }
        if let Some(order) = self
            .orders
            .lock()
            .unwrap()
            .get_mut(refund.order_id.as_str())
        {
            for entry in &mut order.refunds {
                if entry.payment_id == refund.payment_id {
                    entry.state = RefundState::Refunded;
                    entry.refunded_at = Some(at.to_owned());
                }
            }
        }
        Ok(true)
    }

    async fn live_sales(&self) -> Result<LiveSales, OrderStoreError> {
        let mut sales: Vec<LiveSale> = self
            .sales
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, sale)| sale.live)
            .map(|(id, sale)| LiveSale {
                sale_id: SaleId::parse(id).unwrap(),
                stock_remaining: Some(sale.stock),
                ends_at_ms: sale.ends_at_ms,
            })
            .collect();
        sales.sort_by(|a, b| a.sale_id.as_str().cmp(b.sale_id.as_str()));
        let items_read = sales.len();
        Ok(LiveSales { sales, items_read })
    }

    async fn retire_sale(&self, sale_id: &SaleId, _now: &str) -> Result<bool, OrderStoreError> {
        let mut sales = self.sales.lock().unwrap();
        Ok(sales
            .get_mut(sale_id.as_str())
            .is_some_and(|sale| std::mem::replace(&mut sale.live, false)))
    }
}

/// One sale in Redis.
#[derive(Default)]
struct RedisSale {
    stock: i64,
    bought: HashMap<String, i64>,
    /// Order id → (user, reserved at, units).
    pending: BTreeMap<String, (String, i64, u32)>,
    /// What the consumer claimed from `pending` (the `claimed` hash).
    claimed: BTreeMap<String, (String, i64, u32)>,
    released: BTreeSet<String>,
    /// Every admitted order's owner (the `orders` hash): never removed.
    owners: BTreeMap<String, String>,
}

#[derive(Default)]
pub(crate) struct MemoryReservations {
    sales: Mutex<HashMap<String, RedisSale>>,
}

impl MemoryReservations {
    /// What the admission script does for one order of one unit, at `at_ms`.
    pub(crate) fn reserve_at(&self, sale: &str, order: &str, user: &str, at_ms: i64) {
        self.reserve_units(sale, order, user, at_ms, 1);
    }

    /// What the admission script does for one order of `units` units, at `at_ms`.
    pub(crate) fn reserve_units(
        &self,
        sale: &str,
        order: &str,
        user: &str,
        at_ms: i64,
        units: u32,
    ) {
        let mut sales = self.sales.lock().unwrap();
        let order = order_id(sale, order);
        let sale = sales.entry(sale.to_owned()).or_default();
        sale.stock -= i64::from(units);
        *sale.bought.entry(user.to_owned()).or_default() += i64::from(units);
        sale.pending
            .insert(order.clone(), (user.to_owned(), at_ms, units));
        sale.owners.insert(order, user.to_owned());
    }

    pub(crate) fn reserve(&self, sale: &str, order: &str, user: &str) {
        self.reserve_at(sale, order, user, 0);
    }

    /// What `read` finds in the sale; the default for a sale Redis does not hold.
    fn of_sale<T: Default>(&self, sale: &str, read: impl FnOnce(&RedisSale) -> T) -> T {
        self.sales
            .lock()
            .unwrap()
            .get(sale)
            .map(read)
            .unwrap_or_default()
    }

    /// The pending orders' names ([`order_name`]).
    pub(crate) fn pending_of(&self, sale: &str) -> Vec<String> {
        self.of_sale(sale, |s| {
            s.pending.keys().map(|id| order_name(id)).collect()
        })
    }

    /// The released orders' names ([`order_name`]).
    pub(crate) fn released_of(&self, sale: &str) -> Vec<String> {
        self.of_sale(sale, |s| {
            s.released.iter().map(|id| order_name(id)).collect()
        })
    }

    /// What losing the `bought` hash does (a flush, then a preheat).
    pub(crate) fn forget_buyers(&self, sale: &str) {
        if let Some(sale) = self.sales.lock().unwrap().get_mut(sale) {
            sale.bought.clear();
        }
    }

    pub(crate) fn bought_of(&self, sale: &str, user: &str) -> i64 {
        let sales = self.sales.lock().unwrap();
        sales[sale].bought.get(user).copied().unwrap_or(0)
    }

    /// The stock relative to where it started (the fake starts every sale at 0).
    pub(crate) fn stock_of(&self, sale: &str) -> i64 {
        self.sales.lock().unwrap()[sale].stock
    }

    /// What the preheat (or a failover that lost admissions) leaves as the stock.
    pub(crate) fn set_stock(&self, sale: &str, stock: i64) {
        self.sales
            .lock()
            .unwrap()
            .entry(sale.to_owned())
            .or_default()
            .stock = stock;
    }
}

#[async_trait]
impl Reservations for MemoryReservations {
    async fn confirm(
        &self,
        sale_id: &SaleId,
        order_ids: &[OrderId],
    ) -> Result<(), ReservationsError> {
        if let Some(sale) = self.sales.lock().unwrap().get_mut(sale_id.as_str()) {
            for id in order_ids {
                sale.pending.remove(id.as_str());
            }
        }
        Ok(())
    }

    async fn claim(
        &self,
        sale_id: &SaleId,
        order_ids: &[OrderId],
    ) -> Result<Vec<Claim>, ReservationsError> {
        let mut sales = self.sales.lock().unwrap();
        let sale = sales.entry(sale_id.to_string()).or_default();
        let mut claims = Vec::new();
        for id in order_ids {
            if sale.released.contains(id.as_str()) {
                claims.push(Claim::Released);
                continue;
            }
            if let Some(entry) = sale.pending.remove(id.as_str()) {
                sale.claimed.insert(id.to_string(), entry);
            }
            claims.push(match sale.claimed.get(id.as_str()) {
                Some((user, at, units)) => Claim::Held(PendingReservation {
                    order_id: id.clone(),
                    user_id: user.clone(),
                    reserved_at_ms: *at,
                    units: *units,
                }),
                None => Claim::Unknown,
            });
        }
        Ok(claims)
    }

    async fn release(
        &self,
        sale_id: &SaleId,
        order_id: &OrderId,
        holder: Option<&Holder>,
    ) -> Result<bool, ReservationsError> {
        let order_id = order_id.as_str();
        let mut sales = self.sales.lock().unwrap();
        let sale = sales.entry(sale_id.to_string()).or_default();
        if sale.released.contains(order_id) {
            return Ok(false);
        }
        let (user_id, units) = match (sale.pending.remove(order_id), holder) {
            (Some((user, _, units)), _) => (user, units),
            (None, Some(holder)) => (holder.user_id.to_string(), holder.units),
            (None, None) => return Ok(false),
        };
        sale.released.insert(order_id.to_owned());
        sale.stock += i64::from(units);
        if let Some(bought) = sale.bought.get_mut(&user_id) {
            *bought = (*bought - i64::from(units)).max(0);
        }
        Ok(true)
    }

    async fn pending(
        &self,
        sale_id: &SaleId,
    ) -> Result<Vec<PendingReservation>, ReservationsError> {
        let sales = self.sales.lock().unwrap();
        Ok(sales
            .get(sale_id.as_str())
            .map(|sale| {
                sale.pending
                    .iter()
                    .map(|(order, (user, at, units))| PendingReservation {
                        order_id: OrderId::parse(order).unwrap(),
                        user_id: user.clone(),
                        reserved_at_ms: *at,
                        units: *units,
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn stock(&self, sale_id: &SaleId) -> Result<Option<i64>, ReservationsError> {
        Ok(self
            .sales
            .lock()
            .unwrap()
            .get(sale_id.as_str())
            .map(|s| s.stock))
    }

    async fn cap_stock(
        &self,
        sale_id: &SaleId,
        dynamo_stock_remaining: i64,
    ) -> Result<i64, ReservationsError> {
        let mut sales = self.sales.lock().unwrap();
        let Some(sale) = sales.get_mut(sale_id.as_str()) else {
            return Ok(0);
        };
        let pending: i64 = sale
            .pending
            .values()
            .map(|(_, _, units)| i64::from(*units))
            .sum();
        let ceiling = (dynamo_stock_remaining - pending).max(0);
        let lowered = (sale.stock - ceiling).max(0);
        sale.stock -= lowered;
        Ok(lowered)
    }
}

#[async_trait]
impl PendingOrders for MemoryReservations {
    async fn admitted(&self, order_id: &OrderId) -> Result<Option<AdmittedOrder>, PendingError> {
        let sales = self.sales.lock().unwrap();
        let sale_id = order_id.sale_id().as_str();
        let order_id = order_id.as_str();
        Ok(sales.get(sale_id).and_then(|sale| {
            sale.owners.get(order_id).map(|user| AdmittedOrder {
                user_id: user.clone(),
                released: sale.released.contains(order_id),
            })
        }))
    }
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
