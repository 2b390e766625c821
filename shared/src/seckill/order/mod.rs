//! The order domain: an order's states, the events that drive it, and the ports of the order
//! path (the commerce table, the Redis reservations, the payment-timeout queue).
//!
//! Lifecycle: the order route reserves a unit in Redis and answers `PENDING`; the order
//! consumer materializes it as `CONFIRMED` (or `REJECTED` when DynamoDB's stock or the
//! buyer's per-user limit, the final guards, is exhausted); the buyer pays it (`PAID`) or
//! the payment window ends it (`CANCELLED`, the unit goes back to both stores, and to the
//! buyer). While it is `PENDING`, its owner reads it from Redis ([`PendingOrders`]): the
//! order id names its sale ([`OrderId`]).

pub mod consumer;
pub mod dynamo;
#[cfg(test)]
pub(crate) mod fake;
pub mod redis;
pub mod refund;
pub mod routes;
pub mod sqs;

use crate::cursor::{Cursor, InvalidCursor, PageLimit};
use crate::events::{Envelope, EventError, OrderPlaced, PAYMENT_DUE, PaymentDue, parse_v1};
use crate::ids::{OrderId, SaleId, UserId};
use crate::once::{Rejected, Unit};
use crate::seckill::admission::Holder;
pub use crate::seckill::admission::checkout::{Address, PaymentMethod};
use crate::seckill::order::refund::Refund;
use crate::seckill::order::refund::{Outstanding, RefundPage, RefundRecord};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// How many units one call of each of [`OrderStore`]'s commits takes.
#[derive(Clone, Copy, Debug)]
pub struct OrderLimits {
    /// Whether one [`OrderStore::confirm_orders`] takes `orders` orders of `buyers` distinct
    /// buyers.
    pub confirm_takes: fn(orders: usize, buyers: usize) -> bool,
    /// At most, of [`OrderStore::reject_orders`].
    pub reject: usize,
    /// At most, of [`OrderStore::cancel_orders`], whoever holds them.
    pub cancel: usize,
}

/// The states an order has in the commerce table (`PENDING` exists only in Redis).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum OrderStatus {
    Confirmed,
    Rejected,
    Paid,
    /// Kept for cash on delivery: settled, so its payment window no longer cancels it.
    Cod,
    Cancelled,
}

impl OrderStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Confirmed => "CONFIRMED",
            Self::Rejected => "REJECTED",
            Self::Paid => "PAID",
            Self::Cod => "COD",
            Self::Cancelled => "CANCELLED",
        }
    }

    /// Paid, or kept for cash on delivery: the buyer keeps the units.
    pub fn is_settled(self) -> bool {
        matches!(self, Self::Paid | Self::Cod)
    }

    pub fn parse(raw: &str) -> Option<Self> {
        [
            Self::Confirmed,
            Self::Rejected,
            Self::Paid,
            Self::Cod,
            Self::Cancelled,
        ]
        .into_iter()
        .find(|status| status.as_str() == raw)
    }
}

/// An order as the commerce table holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Order {
    pub order_id: OrderId,
    pub sale_id: SaleId,
    #[serde(skip)]
    pub user_id: UserId,
    /// The unit price.
    pub price_cents: u64,
    pub quantity: u32,
    /// `price_cents` x `quantity`.
    pub total_cents: u64,
    pub status: OrderStatus,
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<Address>,
    /// Chosen at checkout, or how it was paid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payment_method: Option<PaymentMethod>,
    /// The online payment opened for it, once ([`OrderStore::open_payment`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payment_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paid_at: Option<String>,
    /// When an operator confirmed a COD order for delivery ([`OrderStore::confirm_delivery`]);
    /// one not confirmed within the stack's COD window is cancelled, its units back on sale.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivery_confirmed_at: Option<String>,
    /// Payments recorded for refund against this order, and where each refund is.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refunds: Vec<crate::seckill::order::refund::OrderRefund>,
}

/// A materialized order to cancel, and who holds its units.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldOrder {
    pub order_id: OrderId,
    pub holder: Holder,
}

/// An order to materialize, from its `OrderPlaced` event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewOrder {
    pub order_id: OrderId,
    pub sale_id: SaleId,
    pub user_id: UserId,
    /// The unit price.
    pub price_cents: u64,
    /// Units reserved, at least 1.
    pub quantity: u32,
    /// When the reservation was made: the same on every redelivery.
    pub created_at: String,
    pub address: Option<Address>,
    /// Chosen at checkout: `COD` is kept for delivery as soon as it is confirmed.
    pub payment_method: Option<PaymentMethod>,
}

impl NewOrder {
    /// The units as DynamoDB's counters take them.
    pub fn units(&self) -> i64 {
        i64::from(self.quantity)
    }

    pub fn total_cents(&self) -> u64 {
        self.price_cents.saturating_mul(u64::from(self.quantity))
    }

    /// What the order is when the stock and the buyer's limit admit it: `COD` when chosen at
    /// checkout (kept for delivery, no payment window), else `CONFIRMED` (awaiting payment).
    pub fn confirmed_status(&self) -> OrderStatus {
        match self.payment_method {
            Some(PaymentMethod::Cod) => OrderStatus::Cod,
            _ => OrderStatus::Confirmed,
        }
    }
}

/// Why an event's payload is not a valid order.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("the order event has an invalid {0}")]
pub struct InvalidOrder(&'static str);

impl TryFrom<OrderPlaced> for NewOrder {
    type Error = InvalidOrder;

    fn try_from(event: OrderPlaced) -> Result<Self, InvalidOrder> {
        let order_id = OrderId::parse(&event.order_id).map_err(|_| InvalidOrder("orderId"))?;
        let sale_id = SaleId::parse(&event.sale_id).map_err(|_| InvalidOrder("saleId"))?;
        let user_id = UserId::parse(&event.user_id).map_err(|_| InvalidOrder("userId"))?;
        let at = crate::clock::from_epoch_ms(event.reserved_at_ms)
            .ok_or(InvalidOrder("reservedAtMs"))?;
        if event.quantity == 0 {
            return Err(InvalidOrder("quantity"));
        }
        Ok(Self {
            order_id,
            sale_id,
            user_id,
            price_cents: event.price_cents,
            quantity: event.quantity,
            created_at: crate::clock::format(at),
            address: event.address.map(Into::into),
            payment_method: event.payment_method.map(Into::into),
        })
    }
}

/// Why a message is not an order event we can act on.
#[derive(Debug, thiserror::Error)]
pub enum OrderEventError {
    #[error(transparent)]
    Event(#[from] EventError),
    #[error(transparent)]
    Invalid(#[from] InvalidOrder),
}

/// An `OrderPlaced` message (v1 or v2) as the order to materialize.
pub fn parse_order_placed(body: &str) -> Result<NewOrder, OrderEventError> {
    let envelope: Envelope<OrderPlaced> = crate::events::parse_order_placed(body)?;
    Ok(NewOrder::try_from(envelope.payload)?)
}

/// An order whose payment window ended, from its `PaymentDue` event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DueOrder {
    pub order_id: OrderId,
    pub sale_id: SaleId,
}

impl TryFrom<PaymentDue> for DueOrder {
    type Error = InvalidOrder;

    fn try_from(event: PaymentDue) -> Result<Self, InvalidOrder> {
        Ok(Self {
            order_id: OrderId::parse(&event.order_id).map_err(|_| InvalidOrder("orderId"))?,
            sale_id: SaleId::parse(&event.sale_id).map_err(|_| InvalidOrder("saleId"))?,
        })
    }
}

impl From<&DueOrder> for PaymentDue {
    fn from(due: &DueOrder) -> Self {
        Self {
            order_id: due.order_id.to_string(),
            sale_id: due.sale_id.to_string(),
        }
    }
}

/// A `PaymentDue` v1 message, as the order whose payment window ended.
pub fn parse_payment_due(body: &str) -> Result<DueOrder, OrderEventError> {
    let envelope: Envelope<PaymentDue> = parse_v1(body, PAYMENT_DUE)?;
    Ok(DueOrder::try_from(envelope.payload)?)
}

/// Why the order store failed.
#[derive(Debug, thiserror::Error)]
pub enum OrderStoreError {
    /// The cursor is not one of this user's order pages.
    #[error(transparent)]
    InvalidCursor(#[from] InvalidCursor),
    /// Concurrent writes of the same item (a transaction holding it) or throttling outlasted
    /// the store's retries; nothing was written, and trying again shortly may succeed.
    #[error("the item is busy")]
    Busy(#[source] anyhow::Error),
    #[error(transparent)]
    Failed(#[from] anyhow::Error),
}

/// A page of a user's orders, newest first.
#[derive(Debug)]
pub struct OrderPage {
    pub items: Vec<Order>,
    pub next: Option<Cursor>,
}

/// A sale on the live index (published, not yet retired) and DynamoDB's stock of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveSale {
    pub sale_id: SaleId,
    pub stock_remaining: Option<i64>,
    /// When it ends (or ended, early or not), epoch milliseconds.
    pub ends_at_ms: i64,
}

/// The live sales, and how many items the read returned (what it cost: the live sales, never
/// the table).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LiveSales {
    pub sales: Vec<LiveSale>,
    pub items_read: usize,
}

/// What the commerce table's sale item guards: its stock and the units one buyer may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SaleGuards {
    pub stock_remaining: i64,
    pub per_user_limit: u32,
    /// The unit price, fixed once the sale is published: what every order of it costs.
    pub price_cents: u64,
}

/// Why [`OrderStore::confirm_orders`] did not commit; nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum ConfirmRejected {
    /// The orders of the units at these indices exist: they were materialized before.
    #[error("orders {0:?} of the commit exist")]
    AlreadyApplied(Vec<usize>),
    /// The sale's `stockRemaining` would go below 0 (or the sale is unknown).
    #[error("the sale's stock is exhausted")]
    SoldOut,
    /// This buyer would hold more units than the sale's per-user limit.
    #[error("the buyer would exceed the per-user limit")]
    OverLimit(UserId),
    /// Anything else (throttling, conflict, network): retrying later may succeed.
    #[error("the commit failed")]
    Failed(#[source] anyhow::Error),
}

/// The orders and sales of the commerce table.
#[async_trait]
pub trait OrderStore: Send + Sync {
    /// How many units one call of each of the commits takes.
    fn limits(&self) -> OrderLimits;
    /// In one transaction: each order put as its [`NewOrder::confirmed_status`] (absent
    /// before, else [`ConfirmRejected::AlreadyApplied`] with the indices of those that
    /// exist); per buyer, `units += k` on the buyer's item, `k` the sum of the buyer's
    /// orders' quantities, which must stay at most `per_user_limit` (else
    /// [`ConfirmRejected::OverLimit`]); and the sale's `stockRemaining -=` the sum of every
    /// order's quantity, which must stay at least 0 (else [`ConfirmRejected::SoldOut`]). The
    /// first failing condition in that order is the one reported.
    async fn confirm_orders(
        &self,
        sale_id: &SaleId,
        per_user_limit: u32,
        units: &[Unit<NewOrder>],
    ) -> Result<(), ConfirmRejected>;
    /// In one transaction: each unit's order put as REJECTED (absent before); no stock change.
    async fn reject_orders(&self, units: &[Unit<NewOrder>]) -> Result<(), Rejected>;
    /// In one transaction: each order (marker = order id, payload = the order and its holder)
    /// CONFIRMED, or COD not confirmed for delivery, → CANCELLED (else
    /// [`Rejected::AlreadyApplied`]), per holder `units -= k` on
    /// the buyer's item (`k` the sum of their orders' quantities), and the sale's
    /// `stockRemaining +=` the sum of every order's quantity.
    async fn cancel_orders(
        &self,
        sale_id: &SaleId,
        units: &[Unit<HeldOrder>],
    ) -> Result<(), Rejected>;
    /// The sale's `stockRemaining`, strongly consistent; `None` for an unknown sale.
    async fn stock_remaining(&self, sale_id: &SaleId) -> Result<Option<i64>, OrderStoreError>;
    /// The sale's stock and per-user limit in one strongly consistent read; `None` for an
    /// unknown sale.
    async fn sale_guards(&self, sale_id: &SaleId) -> Result<Option<SaleGuards>, OrderStoreError>;
    /// The units `user` holds of the sale (CONFIRMED or PAID orders), strongly consistent.
    async fn buyer_units(&self, sale_id: &SaleId, user: &UserId) -> Result<i64, OrderStoreError>;
    async fn order(&self, order_id: &OrderId) -> Result<Option<Order>, OrderStoreError>;
    async fn orders_of(
        &self,
        user: &UserId,
        limit: PageLimit,
        cursor: Option<&Cursor>,
    ) -> Result<OrderPage, OrderStoreError>;
    /// CONFIRMED → COD (kept for cash on delivery, no `paidAt`) if the order is `user`'s;
    /// `false` when that condition failed.
    async fn keep_for_delivery(
        &self,
        order_id: &OrderId,
        user: &UserId,
    ) -> Result<bool, OrderStoreError>;
    /// Gives a CONFIRMED order of `user` the payment id `new_payment_id` unless it has one:
    /// answers the order's payment id, or `None` when the order is not a CONFIRMED order of
    /// `user`.
    async fn open_payment(
        &self,
        order_id: &OrderId,
        user: &UserId,
        new_payment_id: &str,
    ) -> Result<Option<String>, OrderStoreError>;
    /// CONFIRMED → PAID (`paymentMethod` ONLINE, `paidAt` = `at`) if `payment_id` is the
    /// order's payment; `false` when that condition failed. Only a verified provider callback
    /// calls it ([`crate::seckill::payment::settle`]).
    async fn settle_online(
        &self,
        order_id: &OrderId,
        payment_id: &str,
        at: &str,
    ) -> Result<bool, OrderStoreError>;
    /// Records a payment to give back, once per payment id and order, `DUE`, and adds it to
    /// its order's `refunds` (in the same transaction): `true` when this call recorded it.
    async fn record_refund(&self, refund: &Refund) -> Result<bool, OrderStoreError>;
    /// The sales on the live index (a keyed read of the live sales only).
    async fn live_sales(&self) -> Result<LiveSales, OrderStoreError>;
    /// Takes an ended sale off the live index and marks it ENDED, at `now`; `false` when it
    /// was not on it (any more).
    async fn retire_sale(&self, sale_id: &SaleId, now: &str) -> Result<bool, OrderStoreError>;
    /// The refunds still `DUE`, oldest first (a keyed read of the due refunds' index).
    async fn refunds_due(
        &self,
        limit: PageLimit,
        cursor: Option<&Cursor>,
    ) -> Result<RefundPage, OrderStoreError>;
    /// One refund by its payment and order, strongly consistent.
    async fn refund(
        &self,
        payment_id: &str,
        order_id: &OrderId,
    ) -> Result<Option<RefundRecord>, OrderStoreError>;
    /// How many refunds are `DUE` and when the oldest was recorded (keyed reads of the due
    /// refunds' index, counted, not fetched).
    async fn refunds_outstanding(&self) -> Result<Outstanding, OrderStoreError>;
    /// COD → confirmed for delivery at `at` (the first time stays); `None` when there is no
    /// such order, else the order as it is now: one that is not COD is left as it was.
    async fn confirm_delivery(
        &self,
        order_id: &OrderId,
        at: &str,
    ) -> Result<Option<Order>, OrderStoreError>;
    /// Takes the payment's one refund for `order_id` before the provider is asked to pay it
    /// back (a payment is refunded at most once, whatever orders its notices named): `None`
    /// when it is this order's (now, or already), else the order whose refund holds it.
    async fn claim_payment_refund(
        &self,
        payment_id: &str,
        order_id: &OrderId,
    ) -> Result<Option<OrderId>, OrderStoreError>;
    /// `DUE` → `REFUNDED` (`refundedAt` = `at`, the provider's refund id), the refund's entry
    /// on its order likewise, in one transaction; `false` when the refund was no longer `DUE`.
    async fn mark_refunded(
        &self,
        refund: &RefundRecord,
        provider_refund_id: &str,
        at: &str,
    ) -> Result<bool, OrderStoreError>;
}

/// A reservation the admission script recorded in the sale's `pending` hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingReservation {
    pub order_id: OrderId,
    pub user_id: String,
    pub reserved_at_ms: i64,
    /// The units it reserved.
    pub units: u32,
}

/// What Redis holds of an order the consumer claims ([`Reservations::claim`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    /// Its units were given back: the order must be REJECTED.
    Released,
    /// Its reservation, pending until this claim or claimed before: who holds it and how many
    /// units.
    Held(PendingReservation),
    /// Redis knows nothing of it: never admitted (a forged message), or admitted before Redis
    /// lost its data.
    Unknown,
}

/// Why the Redis side of the reservations failed; the cause is for the log, never the client.
#[derive(Debug, thiserror::Error)]
#[error("the reservations in Redis failed")]
pub struct ReservationsError(#[from] pub anyhow::Error);

/// The Redis side of the reservations.
#[async_trait]
pub trait Reservations: Send + Sync {
    /// The orders are materialized: remove them from the `pending` worklist (idempotent).
    async fn confirm(
        &self,
        sale_id: &SaleId,
        order_ids: &[OrderId],
    ) -> Result<(), ReservationsError>;
    /// The order consumer takes one sale's orders over before materializing them, in one
    /// atomic step (`claim.lua`): moves each pending one from `pending` to `claimed`, so that
    /// a release without a holder no longer gives its unit back, and answers, one per id in
    /// order, what Redis holds of it ([`Claim`]). Idempotent: an order claimed before answers
    /// its reservation again.
    async fn claim(
        &self,
        sale_id: &SaleId,
        order_ids: &[OrderId],
    ) -> Result<Vec<Claim>, ReservationsError>;
    /// Gives the order's units back at most once per order (the `released` set): without a
    /// `holder` only a reservation still pending (its entry says how many units); with the
    /// user who holds it and its quantity, also an order confirmed since. `true` when this
    /// call gave them back.
    async fn release(
        &self,
        sale_id: &SaleId,
        order_id: &OrderId,
        holder: Option<&Holder>,
    ) -> Result<bool, ReservationsError>;
    async fn pending(&self, sale_id: &SaleId)
    -> Result<Vec<PendingReservation>, ReservationsError>;
    /// The units left to reserve; `None` when the sale is not (or no longer) in Redis.
    async fn stock(&self, sale_id: &SaleId) -> Result<Option<i64>, ReservationsError>;
    /// Lowers the stock to at most `dynamo_stock_remaining` minus the pending reservations' units,
    /// atomically (`cap.lua`), never raising it; returns the units it took away (0 when the
    /// stock was within that ceiling or the sale is not in Redis).
    async fn cap_stock(
        &self,
        sale_id: &SaleId,
        dynamo_stock_remaining: i64,
    ) -> Result<i64, ReservationsError>;
}

/// An order the admission script admitted, as Redis knows it (the sale's `orders` hash and
/// `released` set).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdmittedOrder {
    /// Who placed it.
    pub user_id: String,
    /// Its unit was given back (a failed send, the reconciliation, a rejection, a
    /// cancellation): it will never be, or no longer is, pending.
    pub released: bool,
}

/// Why an admitted order could not be read from Redis.
#[derive(Debug, thiserror::Error)]
#[error("the admitted orders could not be read")]
pub struct PendingError(#[from] pub anyhow::Error);

/// The orders admitted in Redis, for reading an order before it is materialized.
#[async_trait]
pub trait PendingOrders: Send + Sync {
    /// The admitted order `order_id`, read from the keys of the sale it names, in one round
    /// trip; `None` when the script never admitted it (or Redis lost the sale).
    async fn admitted(&self, order_id: &OrderId) -> Result<Option<AdmittedOrder>, PendingError>;
}

/// An order as its owner reads it: from the commerce table once materialized, else `PENDING`
/// from Redis.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum OrderView {
    Materialized(Box<Order>),
    Pending(PendingOrder),
}

/// An order admitted but not materialized yet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingOrder {
    pub order_id: OrderId,
    pub sale_id: SaleId,
    /// Always `PENDING`.
    pub status: &'static str,
}

/// The `caller`'s order `order_id`: DynamoDB first; if absent, one Redis round trip on the
/// keys of the sale the id names: `PENDING` when the caller placed it and its unit was not given back.
/// `None` for anyone else's order, an unknown or released one (nothing tells them apart).
pub async fn find_order(
    store: &dyn OrderStore,
    pending: &dyn PendingOrders,
    caller: &UserId,
    order_id: &OrderId,
) -> Result<Option<OrderView>, OrderStoreError> {
    if let Some(order) = store.order(order_id).await? {
        return Ok((order.user_id == *caller).then_some(OrderView::Materialized(Box::new(order))));
    }
    let admitted =
        (pending.admitted(order_id).await).map_err(|err| OrderStoreError::Failed(err.into()))?;
    Ok(match admitted {
        Some(admitted) if admitted.user_id == caller.as_str() && !admitted.released => {
            Some(OrderView::Pending(PendingOrder {
                order_id: order_id.clone(),
                sale_id: order_id.sale_id().clone(),
                status: "PENDING",
            }))
        }
        _ => None,
    })
}

/// Why a `PaymentDue` event could not be sent.
#[derive(Debug, thiserror::Error)]
#[error("the payment-due event could not be sent")]
pub struct PaymentDueError(#[from] pub anyhow::Error);

/// Where `PaymentDue` events go (a delay queue: they arrive when the payment window ends).
#[async_trait]
pub trait PaymentDueSink: Send + Sync {
    async fn payment_due(&self, due: &DueOrder) -> Result<(), PaymentDueError>;
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::seckill::order::fake::{S1, oid, placed};

    #[test]
    fn an_order_placed_event_becomes_a_new_order_with_a_stable_creation_time() {
        let order = parse_order_placed(&placed("o1", S1, "alice")).unwrap();
        assert_eq!(order.order_id, oid(S1, "o1"));
        assert_eq!(order.sale_id.as_str(), S1);
        assert_eq!(order.user_id.as_str(), "alice");
        assert_eq!(order.created_at, "2026-11-30T17:33:20.000000Z");
    }

    #[test]
    fn bad_ids_other_events_and_garbage_are_refused() {
        assert!(parse_order_placed(&placed("o#1", S1, "alice")).is_err());
        assert!(parse_order_placed(&placed("o1", S1, "a b")).is_err());
        assert!(parse_order_placed(&placed("o1", "s1", "alice")).is_err());
        assert!(parse_order_placed("nope").is_err());
        let due = crate::seckill::order::fake::due("o1", S1);
        let due = due.as_str();
        assert!(parse_order_placed(due).is_err());
        assert_eq!(parse_payment_due(due).unwrap().order_id, oid(S1, "o1"));
    }

    /// Key-safe ids that are not of the form the order route mints: the event can never be
    /// applied, so it is refused (to the dead-letter queue), never a panic further on.
    pub(crate) const NOT_ORDER_IDS: [&str; 3] = [
        "o1",
        "0190a1b2-c3d4-7e5f-8a9b-000000000001",
        "0190a1b2-c3d4-7e5f-8a9b-000000000001.nope",
    ];

    #[test]
    fn an_event_whose_order_id_is_no_order_id_is_refused_as_invalid() {
        for bad in NOT_ORDER_IDS {
            let mut body: serde_json::Value =
                serde_json::from_str(&placed("o1", S1, "alice")).unwrap();
            body["payload"]["orderId"] = bad.into();
            let err = parse_order_placed(&body.to_string()).unwrap_err();
            assert!(
                matches!(err, OrderEventError::Invalid(InvalidOrder("orderId"))),
                "{bad}: {err:?}"
            );
            let mut body: serde_json::Value =
                serde_json::from_str(&crate::seckill::order::fake::due("o1", S1)).unwrap();
            body["payload"]["orderId"] = bad.into();
            let err = parse_payment_due(&body.to_string()).unwrap_err();
            assert!(
                matches!(err, OrderEventError::Invalid(InvalidOrder("orderId"))),
                "{bad}: {err:?}"
            );
        }
        let mut body: serde_json::Value =
            serde_json::from_str(&crate::seckill::order::fake::due("o1", S1)).unwrap();
        body["payload"]["saleId"] = "s1".into();
        let err = parse_payment_due(&body.to_string()).unwrap_err();
        assert!(
            matches!(err, OrderEventError::Invalid(InvalidOrder("saleId"))),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn the_consumer_refuses_a_message_whose_order_id_is_no_order_id() {
        let world = crate::seckill::order::fake::World::new(S1, 10);
        for bad in NOT_ORDER_IDS {
            let mut placed: serde_json::Value =
                serde_json::from_str(&placed("o1", S1, "alice")).unwrap();
            placed["payload"]["orderId"] = bad.into();
            let failed = consumer::handle_batch(
                world.deps(),
                crate::testing::sealed_batch(&[placed.to_string()]),
            )
            .await;
            assert_eq!(failed, ["m0"], "{bad}");
        }
        assert_eq!(world.store.orders(), 0);
    }

    #[test]
    fn statuses_and_methods_round_trip() {
        for status in ["CONFIRMED", "REJECTED", "PAID", "COD", "CANCELLED"] {
            assert_eq!(OrderStatus::parse(status).unwrap().as_str(), status);
        }
        assert_eq!(OrderStatus::parse("PENDING"), None);
        assert_eq!(PaymentMethod::parse("COD"), Some(PaymentMethod::Cod));
        assert_eq!(PaymentMethod::parse("cash"), None);
    }
}
