//! Admission of orders: one atomic reservation of the order's units in the cache, then one
//! `OrderPlaced` event.
//!
//! The [`Admission`] port reserves and releases units (Redis: `redis.rs`); the
//! [`OrderPublisher`] port sends the event (SQS). A rejected attempt touches nothing but the
//! admission store; if the event cannot be sent, the unit is released before the caller hears
//! 503, so that a failed send never keeps stock away from other buyers.
//!
//! An attempt may carry the buyer's `Idempotency-Key` ([`OrderKey`]): the admission store
//! records it in the same atomic step that reserves, so that a retry of an admitted attempt
//! (its answer lost, or still on its way) reserves nothing and answers the same order; when
//! that order's reservation is still pending the retry sends its event again, which the
//! consumer takes once, so a crash between the reservation and the send loses nothing.

pub mod checkout;
#[cfg(test)]
pub(crate) mod fake;
pub mod redis;
pub mod routes;
pub mod seal;
pub mod sqs;

use crate::events::{Envelope, ORDER_PLACED, OrderPlaced};
use crate::ids::{OrderId, SaleId, UserId};
use crate::seckill::admission::checkout::Checkout;
use async_trait::async_trait;
use sha2::{Digest, Sha256};

/// How long an admitted order's `Idempotency-Key` answers the same order: 24 hours.
pub const ORDER_KEY_TTL_MS: u64 = 24 * 60 * 60 * 1_000;

/// The buyer's `Idempotency-Key` of an attempt and the request it names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderKey {
    /// The header's value, checked: 1 to 128 letters, digits, '-', '_' or '.'.
    pub key: String,
    /// A hash of the sale and the checkout: the same key with another request is refused.
    pub fingerprint: String,
}

impl OrderKey {
    /// The key of an attempt on `sale_id` with `checkout`; `None` unless `key` is a valid id.
    pub fn new(key: &str, sale_id: &SaleId, checkout: &Checkout) -> Option<Self> {
        if !crate::ids::valid_id(key) {
            return None;
        }
        let request = (
            sale_id.as_str(),
            checkout.quantity,
            &checkout.address,
            checkout.payment_method,
        );
        let request = serde_json::to_vec(&request).expect("a checkout always serializes");
        Some(Self {
            key: key.to_owned(),
            fingerprint: Sha256::digest(&request)
                .iter()
                .map(|byte| format!("{byte:02x}"))
                .collect(),
        })
    }
}

/// One attempt to reserve an order's units.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reservation {
    pub sale_id: SaleId,
    pub user_id: UserId,
    pub order_id: OrderId,
    /// How many units, where to, how paid: all or nothing of `checkout.quantity` is reserved.
    pub checkout: Checkout,
    /// Epoch milliseconds: the clock the window is checked against.
    pub now_ms: i64,
    /// Attempts a user may make per second, counted over every sale and whatever they answer.
    pub rate_limit_per_second: u32,
    /// The buyer's `Idempotency-Key`, if the request had one.
    pub idempotency: Option<OrderKey>,
}

/// The admission store's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The order's units are reserved, at this unit price.
    Reserved {
        price_cents: u64,
    },
    UnknownSale,
    NotStarted,
    Ended,
    /// The sale requires a reservation (预约) that the user does not hold.
    NotReserved,
    RateLimited,
    /// The user holds the limit already (`room` 0), or would exceed it with this quantity:
    /// `room` more units fit.
    LimitReached {
        room: u32,
    },
    /// No unit is left.
    SoldOut,
    /// Fewer units are left than the quantity asked for (at least one is).
    NotEnoughStock {
        left: u32,
    },
    /// The attempt's key admitted this order before, for the same request; nothing reserved.
    Replayed {
        order_id: OrderId,
        price_cents: u64,
        /// When it was reserved, if the reservation is still pending (its event may never
        /// have been sent); `None` once the consumer took the order over.
        pending_since_ms: Option<i64>,
    },
    /// The attempt's key admitted an order for another request; nothing reserved.
    KeyReused,
}

/// Who holds a materialized order and how many units it has: what releasing an order no
/// longer pending takes (a pending reservation's own entry says both).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    pub user_id: UserId,
    pub units: u32,
}

/// Why the admission store failed (unreachable, a script error); the cause is for the log.
#[derive(Debug, thiserror::Error)]
#[error("admission store failed")]
pub struct AdmissionError(#[from] pub anyhow::Error);

/// Reserves and releases units of a sale, atomically per call.
#[async_trait]
pub trait Admission: Send + Sync {
    /// Counts the attempt against the user's rate limit (one budget for every sale, whatever
    /// the attempt answers), then checks the sale, its window, the user's limit and the stock
    /// for the order's quantity; reserves all its units when all pass, none otherwise.
    async fn reserve(&self, reservation: &Reservation) -> Result<Verdict, AdmissionError>;

    /// Gives the order's units back, once: `true` when this call released them. Without a
    /// `holder`, only a reservation still pending is released; with one, also an order that
    /// was materialized since (e.g. cancelled for non-payment).
    async fn release(
        &self,
        sale_id: &SaleId,
        order_id: &OrderId,
        holder: Option<&Holder>,
    ) -> Result<bool, AdmissionError>;
}

/// Why an event could not be sent.
#[derive(Debug, thiserror::Error)]
#[error("failed to publish the order event")]
pub struct PublishError(#[from] pub anyhow::Error);

/// Sends the order events (SQS).
#[async_trait]
pub trait OrderPublisher: Send + Sync {
    async fn order_placed(&self, event: &Envelope<OrderPlaced>) -> Result<(), PublishError>;
}

/// Why an order was not accepted.
#[derive(Debug, thiserror::Error)]
pub enum PlaceOrderError {
    #[error("no such sale")]
    UnknownSale,
    #[error("the sale has not started yet")]
    NotStarted,
    #[error("the sale has ended")]
    Ended,
    #[error("this sale sells only to buyers who reserved it before it started")]
    NotReserved,
    #[error("too many attempts, slow down")]
    RateLimited,
    #[error("{}", limit_message(*room))]
    LimitReached { room: u32 },
    #[error("the sale is sold out")]
    SoldOut,
    #[error("only {left} unit{s} left", s = if *left == 1 { " is" } else { "s are" })]
    NotEnoughStock { left: u32 },
    #[error("this Idempotency-Key was used for another order request; use a new key")]
    KeyReused,
    /// The event could not be sent; the reservation was given back (or will be reconciled).
    #[error("the order could not be queued, please retry")]
    Unavailable(#[source] PublishError),
    #[error(transparent)]
    Admission(#[from] AdmissionError),
}

/// An accepted order: reserved and queued.
#[derive(Clone, Debug, PartialEq)]
pub struct PlacedOrder {
    pub order_id: OrderId,
    /// The attempt's key had admitted this order before: this answer repeats that one.
    pub replayed: bool,
}

fn limit_message(room: u32) -> String {
    match room {
        0 => "you already hold as many units as this sale allows".to_owned(),
        1 => "you may buy 1 more unit of this sale".to_owned(),
        room => format!("you may buy {room} more units of this sale"),
    }
}

/// The `OrderPlaced` v2 event of a reservation.
pub fn order_placed(
    reservation: &Reservation,
    price_cents: u64,
    occurred_at: String,
) -> Envelope<OrderPlaced> {
    Envelope {
        kind: ORDER_PLACED.to_owned(),
        version: 2,
        id: uuid::Uuid::now_v7().to_string(),
        occurred_at,
        payload: OrderPlaced {
            order_id: reservation.order_id.to_string(),
            sale_id: reservation.sale_id.as_str().to_owned(),
            user_id: reservation.user_id.as_str().to_owned(),
            price_cents,
            reserved_at_ms: reservation.now_ms,
            quantity: reservation.checkout.quantity,
            address: reservation.checkout.address.clone().map(Into::into),
            payment_method: reservation.checkout.payment_method.map(Into::into),
        },
    }
}

/// Places an order: one reservation of its units, then one event; on a failed send, one
/// release.
#[tracing::instrument(level = "debug", skip(admission, publisher), fields(sale = %reservation.sale_id, order = %reservation.order_id))]
pub async fn place_order(
    admission: &dyn Admission,
    publisher: &dyn OrderPublisher,
    reservation: &Reservation,
    occurred_at: String,
) -> Result<PlacedOrder, PlaceOrderError> {
    let price_cents = match admission.reserve(reservation).await? {
        Verdict::Reserved { price_cents } => price_cents,
        Verdict::Replayed {
            order_id,
            price_cents,
            pending_since_ms,
        } => {
            return replayed(
                publisher,
                reservation,
                order_id,
                price_cents,
                pending_since_ms,
                occurred_at,
            )
            .await;
        }
        Verdict::KeyReused => return Err(PlaceOrderError::KeyReused),
        Verdict::UnknownSale => return Err(PlaceOrderError::UnknownSale),
        Verdict::NotStarted => return Err(PlaceOrderError::NotStarted),
        Verdict::Ended => return Err(PlaceOrderError::Ended),
        Verdict::NotReserved => return Err(PlaceOrderError::NotReserved),
        Verdict::RateLimited => return Err(PlaceOrderError::RateLimited),
        Verdict::LimitReached { room } => return Err(PlaceOrderError::LimitReached { room }),
        Verdict::SoldOut => return Err(PlaceOrderError::SoldOut),
        Verdict::NotEnoughStock { left } => return Err(PlaceOrderError::NotEnoughStock { left }),
    };
    let event = order_placed(reservation, price_cents, occurred_at);
    if let Err(send) = publisher.order_placed(&event).await {
        // The order does not exist for anyone but this reservation: give the unit back. If
        // that fails too, the pending entry stays and the reconciliation releases it.
        match admission
            .release(&reservation.sale_id, &reservation.order_id, None)
            .await
        {
            Ok(released) => tracing::warn!(error = ?send, released, "order event not sent"),
            Err(release) => tracing::error!(
                error = ?send, release_error = ?release,
                "order event not sent and the reservation not released"
            ),
        }
        return Err(PlaceOrderError::Unavailable(send));
    }
    Ok(PlacedOrder {
        order_id: reservation.order_id.clone(),
        replayed: false,
    })
}

/// A retry of an admitted attempt: the same order. While its reservation is pending, the
/// first attempt may have crashed before sending the event, so it is sent (again: the consumer
/// takes an order once). A failed send here releases nothing: the reservation is the first
/// attempt's, kept for the next retry or, after its grace period, the reconciliation.
async fn replayed(
    publisher: &dyn OrderPublisher,
    reservation: &Reservation,
    order_id: OrderId,
    price_cents: u64,
    pending_since_ms: Option<i64>,
    occurred_at: String,
) -> Result<PlacedOrder, PlaceOrderError> {
    if let Some(reserved_at_ms) = pending_since_ms {
        let first = Reservation {
            order_id: order_id.clone(),
            now_ms: reserved_at_ms,
            ..reservation.clone()
        };
        let event = order_placed(&first, price_cents, occurred_at);
        publisher
            .order_placed(&event)
            .await
            .map_err(PlaceOrderError::Unavailable)?;
    }
    Ok(PlacedOrder {
        order_id,
        replayed: true,
    })
}

#[cfg(test)]
mod tests {
    use super::fake::{MemoryAdmission, MemoryPublisher};
    use super::*;
    use std::sync::atomic::Ordering;

    fn setup(stock: i64) -> (MemoryAdmission, SaleId) {
        let admission = MemoryAdmission::default();
        let sale = SaleId::generate();
        admission
            .sales
            .lock()
            .unwrap()
            .insert(sale.clone(), (1_000, 2_000, 1, 500, stock));
        (admission, sale)
    }

    fn attempt(sale: &SaleId, user: &str, now_ms: i64) -> Reservation {
        Reservation {
            sale_id: sale.clone(),
            user_id: UserId::parse(user).unwrap(),
            order_id: OrderId::generate(sale),
            checkout: Checkout::default(),
            now_ms,
            rate_limit_per_second: 5,
            idempotency: None,
        }
    }

    #[tokio::test]
    async fn an_admitted_order_sends_one_order_placed_event() {
        let (admission, sale) = setup(1);
        let publisher = MemoryPublisher::default();
        let reservation = attempt(&sale, "ann", 1_500);
        let placed = place_order(&admission, &publisher, &reservation, "t".into())
            .await
            .unwrap();
        let sent = publisher.sent.lock().unwrap();
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].kind, ORDER_PLACED);
        assert_eq!(sent[0].version, 2);
        assert_eq!(sent[0].payload.quantity, 1);
        assert_eq!(sent[0].payload.order_id, placed.order_id.as_str());
        assert_eq!(sent[0].payload.price_cents, 500);
        assert_eq!(sent[0].payload.reserved_at_ms, 1_500);
    }

    #[tokio::test]
    async fn rejections_send_nothing() {
        let (admission, sale) = setup(1);
        let publisher = MemoryPublisher::default();
        let p = |r: Reservation| {
            let (admission, publisher) = (&admission, &publisher);
            async move { place_order(admission, publisher, &r, "t".into()).await }
        };
        let unknown = SaleId::generate();
        // In order: the sale, who attempts at which time, and the answer (`None`: placed).
        let cases = [
            (&sale, "a", 999, Some("NotStarted")),
            (&sale, "a", 2_000, Some("Ended")),
            (&sale, "a", 1_500, None),
            (&sale, "a", 1_500, Some("LimitReached { room: 0 }")),
            (&sale, "b", 1_500, Some("SoldOut")),
            (&unknown, "a", 1_500, Some("UnknownSale")),
        ];
        for (sale, user, at_ms, refused) in cases {
            let answer = p(attempt(sale, user, at_ms)).await;
            match (refused, answer) {
                (None, answer) => assert!(answer.is_ok(), "{user} at {at_ms}: {answer:?}"),
                (Some(expected), Err(err)) => assert_eq!(format!("{err:?}"), expected),
                (Some(expected), Ok(placed)) => panic!("{expected} expected, placed {placed:?}"),
            }
        }
        assert_eq!(publisher.sent.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_sale_that_requires_a_reservation_admits_only_the_reserved_and_sends_nothing_else() {
        let (admission, sale) = setup(2);
        admission.reserved.lock().unwrap().insert(
            sale.clone(),
            [UserId::parse("ann").unwrap()].into_iter().collect(),
        );
        let publisher = MemoryPublisher::default();
        let refused = place_order(
            &admission,
            &publisher,
            &attempt(&sale, "bob", 1_500),
            "t".into(),
        )
        .await;
        assert!(
            matches!(refused, Err(PlaceOrderError::NotReserved)),
            "{refused:?}"
        );
        // Refused before the stock: nothing reserved, nothing sent.
        assert_eq!(admission.stock(&sale), 2);
        assert!(publisher.sent.lock().unwrap().is_empty());
        place_order(
            &admission,
            &publisher,
            &attempt(&sale, "ann", 1_500),
            "t".into(),
        )
        .await
        .unwrap();
        assert_eq!(admission.stock(&sale), 1);
        assert_eq!(publisher.sent.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn every_attempt_counts_against_one_budget_across_sales() {
        let (admission, sale) = setup(10);
        let other = SaleId::generate();
        admission
            .sales
            .lock()
            .unwrap()
            .insert(other.clone(), (500, 1_000, 1, 500, 10));
        let publisher = MemoryPublisher::default();
        let p = |r: Reservation| {
            let (admission, publisher) = (&admission, &publisher);
            async move { place_order(admission, publisher, &r, "t".into()).await }
        };
        // Five answers that reserve nothing, within one second and over three sales: before
        // the start, after the end, on an unknown sale.
        let unknown = SaleId::generate();
        for (sale, at) in [
            (&sale, 900),
            (&other, 1_000),
            (&unknown, 1_200),
            (&sale, 950),
            (&other, 1_300),
        ] {
            assert!(matches!(
                p(attempt(sale, "ann", at)).await,
                Err(PlaceOrderError::NotStarted
                    | PlaceOrderError::Ended
                    | PlaceOrderError::UnknownSale)
            ));
        }
        // The sixth in that second is refused, whichever sale, even one she could buy.
        for sale in [&sale, &other, &unknown] {
            assert!(matches!(
                p(attempt(sale, "ann", 1_500)).await,
                Err(PlaceOrderError::RateLimited)
            ));
        }
        // Another user's budget is their own; and a second later ann's is back.
        assert!(p(attempt(&sale, "bob", 1_500)).await.is_ok());
        assert!(p(attempt(&sale, "ann", 1_900)).await.is_ok());
        assert_eq!(publisher.sent.lock().unwrap().len(), 2);
        assert_eq!(admission.stock(&sale), 8);
    }

    #[tokio::test]
    async fn a_failed_send_releases_the_reservation() {
        let (admission, sale) = setup(1);
        let publisher = MemoryPublisher::default();
        publisher.fail.store(true, Ordering::SeqCst);
        let reservation = attempt(&sale, "ann", 1_500);
        let err = place_order(&admission, &publisher, &reservation, "t".into())
            .await
            .unwrap_err();
        assert!(matches!(err, PlaceOrderError::Unavailable(_)));
        assert_eq!(admission.stock(&sale), 1);
        assert!(admission.pending.lock().unwrap().is_empty());
        // The user may try again, and the unit is there.
        publisher.fail.store(false, Ordering::SeqCst);
        let again = attempt(&sale, "ann", 1_600);
        assert!(
            place_order(&admission, &publisher, &again, "t".into())
                .await
                .is_ok()
        );
    }
}
