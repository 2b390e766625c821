//! Online payment: the provider port, the provider's signed callback, and what a payment does
//! to an order.
//!
//! Paying online is two steps, and only the second moves money in the order's eyes:
//!
//! 1. The buyer asks to pay a CONFIRMED order (`POST /orders/{id}/pay` `{"method":"ONLINE"}`):
//!    the order gets a payment id, once ([`OrderStore::open_payment`]: asking again answers the
//!    same one), and the [`PaymentProvider`] answers where to send the buyer (its checkout
//!    page). The order stays CONFIRMED.
//! 2. The provider calls back (`POST /payments/callback`) with a [`PaymentNotice`], signed
//!    with the secret both sides share ([`WebhookSecret`]: HMAC-SHA256 over
//!    `"{timestamp}.{body}"`, in the `Payment-Signature: t=<unix seconds>,v1=<hex>` header).
//!    A bad signature, or one older than [`TOLERANCE_SECONDS`], is refused; a valid one is
//!    [`settle`]d. This is the only way an order becomes PAID.
//!
//! [`settle`] is idempotent by the payment id, so a provider that delivers the same notice
//! twice, or anyone replaying it within the tolerance, changes nothing: a PAID order answers
//! that it is paid by that payment, a refund already recorded is not recorded again. A payment
//! that succeeds for an order that can no longer take it (cancelled when its window ended,
//! rejected, already settled otherwise, or for another amount) never turns into a sale: it is
//! recorded for refund ([`Refund`]), and the order is left as it is. The race with the payment
//! timeout is decided by the order's conditional writes: whichever of "CONFIRMED → PAID" and
//! "CONFIRMED → CANCELLED" lands first wins, and the other sees the result.
//!
//! A notice is parsed before anything reads it: its `orderId` is an [`OrderId`] and its
//! `paymentId` a [`PaymentId`] (both become keys), its `currency` a [`Currency`]; a bad one is
//! a 400. A success in another currency than the order's, like one of another amount, is
//! refunded and pays nothing. Refunds are recorded per payment **and order**
//! ([`crate::seckill::keys::refund_sk`]): a notice that names the payment with another order records
//! its own refund, and neither blocks nor overwrites the genuine one.

pub mod refunds;
pub mod routes;
pub mod sandbox;
pub mod secretsmanager;
pub mod timeout;

use crate::ids::{OrderId, PaymentId};
pub use crate::seckill::order::refund::{
    Currency, InvalidCurrency, Refund, RefundReason, SHOP_CURRENCY,
};
use crate::seckill::order::{Order, OrderStatus, OrderStore, OrderStoreError};
use async_trait::async_trait;
use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// The header that carries the callback's signature.
pub const SIGNATURE_HEADER: &str = "payment-signature";

/// How old a signature may be: a notice replayed later than this is refused outright.
pub const TOLERANCE_SECONDS: i64 = 300;

/// A payment opened with the provider.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaymentSession {
    pub payment_id: String,
    pub order_id: OrderId,
    pub amount_cents: u64,
    pub currency: Currency,
    /// Where the provider sends the buyer back (a path of this origin).
    pub return_url: String,
}

/// Why the payment provider failed (unreachable, refusing); the cause is for the log.
#[derive(Debug, thiserror::Error)]
#[error("the payment provider failed")]
pub struct ProviderError(#[from] pub anyhow::Error);

/// The payment provider, as the order path needs it: a real one plugs in behind this trait
/// without touching the domain.
#[async_trait]
pub trait PaymentProvider: Send + Sync {
    /// Opens the payment (or finds it again: the same `payment_id` is the same payment) and
    /// answers the URL of the provider's checkout page for the buyer.
    async fn open(&self, session: &PaymentSession) -> Result<String, ProviderError>;

    /// Gives a payment back, once per [`crate::seckill::payment::refunds::RefundRequest::key`] (asking again with
    /// the same key answers the same refund, as providers' idempotency keys do); answers the
    /// provider's id of the refund.
    async fn refund(
        &self,
        refund: &crate::seckill::payment::refunds::RefundRequest,
    ) -> Result<String, ProviderError>;
}

/// What the provider says happened to a payment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum PaymentStatus {
    Succeeded,
    Failed,
}

/// The callback's body.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PaymentNotice {
    /// The provider's id of this notice.
    pub event_id: String,
    pub payment_id: PaymentId,
    pub order_id: OrderId,
    pub amount_cents: u64,
    pub currency: Currency,
    pub status: PaymentStatus,
}

/// Why a callback's signature is refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignatureError {
    #[error("the Payment-Signature header is missing or malformed")]
    Malformed,
    #[error("the signature does not match the body")]
    Mismatch,
    #[error("the signature is more than {TOLERANCE_SECONDS} seconds away from now")]
    Stale,
}

/// The secret the provider and this service share to sign callbacks.
#[derive(Clone)]
pub struct WebhookSecret(Vec<u8>);

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret(..)")
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

impl WebhookSecret {
    /// A secret of at least 16 bytes (a shorter one is a configuration error).
    pub fn new(secret: impl Into<Vec<u8>>) -> Option<Self> {
        let secret = secret.into();
        (secret.len() >= 16).then_some(Self(secret))
    }

    fn mac(&self, timestamp: i64, body: &[u8]) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC takes keys of any length");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        mac
    }

    /// The `Payment-Signature` header of `body` sent at `timestamp` (unix seconds).
    pub fn sign(&self, timestamp: i64, body: &[u8]) -> String {
        let tag = self.mac(timestamp, body).finalize().into_bytes();
        format!("t={timestamp},v1={}", hex(&tag))
    }

    /// Checks `header` against `body` at `now` (unix seconds), in constant time.
    pub fn verify(
        &self,
        header: Option<&str>,
        body: &[u8],
        now: i64,
    ) -> Result<(), SignatureError> {
        let header = header.ok_or(SignatureError::Malformed)?;
        let mut timestamp = None;
        let mut tag = None;
        for part in header.split(',') {
            match part.trim().split_once('=') {
                Some(("t", value)) => timestamp = value.parse::<i64>().ok(),
                Some(("v1", value)) => tag = unhex(value),
                _ => return Err(SignatureError::Malformed),
            }
        }
        let (Some(timestamp), Some(tag)) = (timestamp, tag) else {
            return Err(SignatureError::Malformed);
        };
        self.mac(timestamp, body)
            .verify_slice(&tag)
            .map_err(|_| SignatureError::Mismatch)?;
        if (now - timestamp).abs() > TOLERANCE_SECONDS {
            return Err(SignatureError::Stale);
        }
        Ok(())
    }
}

/// The secrets `/payments/callback` takes a signature of: the provider's, and the sandbox's
/// own where the stack enables the sandbox (`EnablePaymentSandbox`), so that the sandbox can
/// sign notices without ever holding the provider's secret.
#[derive(Clone, Debug)]
pub struct CallbackSecrets {
    pub provider: WebhookSecret,
    pub sandbox: Option<WebhookSecret>,
}

impl CallbackSecrets {
    /// [`WebhookSecret::verify`] with the provider's secret, then the sandbox's if there is
    /// one: a signature made with neither is a [`SignatureError::Mismatch`].
    pub fn verify(
        &self,
        header: Option<&str>,
        body: &[u8],
        now: i64,
    ) -> Result<(), SignatureError> {
        match (self.provider.verify(header, body, now), &self.sandbox) {
            (Err(SignatureError::Mismatch), Some(sandbox)) => sandbox.verify(header, body, now),
            (verified, _) => verified,
        }
    }
}

/// What a valid notice did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Settlement {
    /// CONFIRMED → PAID by this notice.
    Paid,
    /// Already PAID by this payment: a notice delivered again.
    AlreadyPaid,
    /// The payment failed: the order stays CONFIRMED, and the buyer may try again within the
    /// payment window.
    Failed,
    /// Recorded for refund (`new`: by this notice, not one before it).
    RefundDue { reason: RefundReason, new: bool },
}

impl Settlement {
    /// The callback's answer.
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Paid => "PAID",
            Self::AlreadyPaid => "ALREADY_PAID",
            Self::Failed => "FAILED",
            Self::RefundDue { .. } => "REFUND_DUE",
        }
    }
}

/// Why a notice could not be settled.
#[derive(Debug, thiserror::Error)]
pub enum SettleError {
    #[error("no such order")]
    UnknownOrder,
    #[error(transparent)]
    Store(#[from] OrderStoreError),
}

/// What the order, as it is now, makes of a successful payment: pay it, or refund it.
fn verdict(order: &Order, notice: &PaymentNotice) -> Result<(), RefundReason> {
    let ours = order.payment_id.as_deref() == Some(notice.payment_id.as_str());
    match order.status {
        OrderStatus::Confirmed if !ours => Err(RefundReason::UnknownPayment),
        OrderStatus::Confirmed if notice.currency != Currency::of(order) => {
            Err(RefundReason::CurrencyMismatch)
        }
        OrderStatus::Confirmed if notice.amount_cents != order.total_cents => {
            Err(RefundReason::AmountMismatch)
        }
        OrderStatus::Confirmed => Ok(()),
        OrderStatus::Paid | OrderStatus::Cod => Err(RefundReason::AlreadySettled),
        OrderStatus::Cancelled => Err(RefundReason::OrderCancelled),
        OrderStatus::Rejected => Err(RefundReason::OrderRejected),
    }
}

/// Applies a notice whose signature was verified, at `at` (RFC 3339).
#[tracing::instrument(skip(store, notice), fields(order = %notice.order_id, payment = %notice.payment_id))]
pub async fn settle(
    store: &dyn OrderStore,
    notice: &PaymentNotice,
    at: &str,
) -> Result<Settlement, SettleError> {
    let mut order = store
        .order(&notice.order_id)
        .await?
        .ok_or(SettleError::UnknownOrder)?;
    if notice.status == PaymentStatus::Failed {
        tracing::info!(status = order.status.as_str(), "the payment failed");
        return Ok(Settlement::Failed);
    }
    // Twice at most: a conditional write that lost to the payment timeout (or to another
    // notice) reads the order again, and what it became decides.
    for _ in 0..2 {
        if order.status == OrderStatus::Paid
            && order.payment_id.as_deref() == Some(notice.payment_id.as_str())
        {
            return Ok(Settlement::AlreadyPaid);
        }
        match verdict(&order, notice) {
            Ok(()) => {
                if store
                    .settle_online(&order.order_id, notice.payment_id.as_str(), at)
                    .await?
                {
                    return Ok(Settlement::Paid);
                }
            }
            Err(reason) => return refund(store, &order, notice, reason, at).await,
        }
        order = store
            .order(&notice.order_id)
            .await?
            .ok_or(SettleError::UnknownOrder)?;
    }
    Err(SettleError::Store(OrderStoreError::Busy(anyhow::anyhow!(
        "the order kept changing while the payment was settled"
    ))))
}

async fn refund(
    store: &dyn OrderStore,
    order: &Order,
    notice: &PaymentNotice,
    reason: RefundReason,
    at: &str,
) -> Result<Settlement, SettleError> {
    let refund = Refund {
        payment_id: notice.payment_id.to_string(),
        order_id: order.order_id.clone(),
        user_id: order.user_id.to_string(),
        amount_cents: notice.amount_cents,
        currency: notice.currency.clone(),
        reason,
        recorded_at: at.to_owned(),
    };
    let new = store.record_refund(&refund).await?;
    if new {
        tracing::warn!(
            reason = reason.as_str(),
            amount_cents = notice.amount_cents,
            status = order.status.as_str(),
            "a payment arrived that the order cannot take: recorded for refund"
        );
        crate::emf::refund_due(reason.as_str());
    }
    Ok(Settlement::RefundDue { reason, new })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seckill::order::fake::{
        MemoryOrders, MemoryReservations, O1, O2, S1, add_awaiting_payment, awaiting_payment, oid,
    };
    use crate::seckill::payment::timeout;
    use crate::testing::batch;

    const SECRET: &[u8] = b"a-shared-test-secret";

    fn secret() -> WebhookSecret {
        WebhookSecret::new(SECRET).unwrap()
    }

    #[test]
    fn a_signature_verifies_only_its_body_its_secret_and_its_time() {
        let body = br#"{"paymentId":"p1"}"#;
        let header = secret().sign(1_000, body);
        assert!(header.starts_with("t=1000,v1="), "{header}");
        assert_eq!(secret().verify(Some(&header), body, 1_000), Ok(()));
        assert_eq!(
            secret().verify(Some(&header), body, 1_000 + TOLERANCE_SECONDS),
            Ok(())
        );
        assert_eq!(
            secret().verify(Some(&header), br#"{"paymentId":"p2"}"#, 1_000),
            Err(SignatureError::Mismatch)
        );
        let other = WebhookSecret::new(b"another-secret-of-16".to_vec()).unwrap();
        assert_eq!(
            other.verify(Some(&header), body, 1_000),
            Err(SignatureError::Mismatch)
        );
        // The timestamp is signed: moving it breaks the signature; a true old one is stale.
        let moved = header.replace("t=1000", "t=1290");
        assert_eq!(
            secret().verify(Some(&moved), body, 1_300),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            secret().verify(Some(&header), body, 1_001 + TOLERANCE_SECONDS),
            Err(SignatureError::Stale)
        );
        for bad in [
            "",
            "t=1000",
            "v1=00",
            "t=x,v1=00",
            "t=1000,v1=zz",
            "t=1000,v2=00",
        ] {
            assert_eq!(
                secret().verify(Some(bad), body, 1_000),
                Err(SignatureError::Malformed),
                "{bad}"
            );
        }
        assert_eq!(
            secret().verify(None, body, 1_000),
            Err(SignatureError::Malformed)
        );
        assert!(WebhookSecret::new(b"short".to_vec()).is_none());
        assert_eq!(format!("{:?}", secret()), "WebhookSecret(..)");
    }

    /// A store with one CONFIRMED order [`O1`] of ann's, 2 units at 990, its payment `p1`
    /// opened.
    async fn confirmed() -> (MemoryOrders, MemoryReservations) {
        awaiting_payment(O1, "ann", "p1").await
    }

    fn notice(payment: &str, amount: u64, status: PaymentStatus) -> PaymentNotice {
        PaymentNotice {
            event_id: format!("ev-{payment}"),
            payment_id: PaymentId::parse(payment).unwrap(),
            order_id: OrderId::parse(O1).unwrap(),
            amount_cents: amount,
            currency: Currency::shop(),
            status,
        }
    }

    #[tokio::test]
    async fn a_payment_opens_once_and_its_success_pays_the_order_once() {
        let (store, _) = confirmed().await;
        let ann = crate::ids::UserId::parse("ann").unwrap();
        // Asking again answers the same payment; someone else's order opens nothing.
        let again = store
            .open_payment(&oid(S1, O1), &ann, "p-other")
            .await
            .unwrap();
        assert_eq!(again.as_deref(), Some("p1"));
        let bob = crate::ids::UserId::parse("bob").unwrap();
        assert_eq!(
            store.open_payment(&oid(S1, O1), &bob, "p9").await.unwrap(),
            None
        );

        let failed = settle(&store, &notice("p1", 1_980, PaymentStatus::Failed), "t").await;
        assert_eq!(failed.unwrap(), Settlement::Failed);
        assert_eq!(store.status(O1), Some(OrderStatus::Confirmed));
        let paid = notice("p1", 1_980, PaymentStatus::Succeeded);
        assert_eq!(settle(&store, &paid, "t").await.unwrap(), Settlement::Paid);
        let order = store.order(&oid(S1, O1)).await.unwrap().unwrap();
        assert_eq!(order.status, OrderStatus::Paid);
        assert_eq!(order.paid_at.as_deref(), Some("t"));
        // Delivered again: nothing changes, nothing is refunded.
        assert_eq!(
            settle(&store, &paid, "t2").await.unwrap(),
            Settlement::AlreadyPaid
        );
        assert_eq!(store.refunds().len(), 0);
        // A second, different payment of the paid order is refunded, once.
        let second = notice("p2", 1_980, PaymentStatus::Succeeded);
        let reason = RefundReason::AlreadySettled;
        assert_eq!(
            settle(&store, &second, "t").await.unwrap(),
            Settlement::RefundDue { reason, new: true }
        );
        assert_eq!(
            settle(&store, &second, "t").await.unwrap(),
            Settlement::RefundDue { reason, new: false }
        );
        assert_eq!(store.refunds().len(), 1);
    }

    #[tokio::test]
    async fn a_payment_after_the_window_ended_is_refunded_never_sold() {
        let (store, reservations) = confirmed().await;
        let due = crate::seckill::order::fake::due(O1, S1);
        assert!(
            timeout::handle_batch(
                crate::seckill::payment::timeout::test_deps(&store, &reservations),
                batch(&[due]),
            )
            .await
            .is_empty()
        );
        assert_eq!(store.status(O1), Some(OrderStatus::Cancelled));
        assert_eq!(store.stock(S1), 10);

        let late = notice("p1", 1_980, PaymentStatus::Succeeded);
        assert_eq!(
            settle(&store, &late, "t").await.unwrap(),
            Settlement::RefundDue {
                reason: RefundReason::OrderCancelled,
                new: true
            }
        );
        assert_eq!(store.status(O1), Some(OrderStatus::Cancelled));
        assert_eq!(store.stock(S1), 10);
        let refunds = store.refunds();
        assert_eq!(
            (refunds[0].amount_cents, refunds[0].user_id.as_str()),
            (1_980, "ann")
        );
    }

    #[tokio::test]
    async fn a_wrong_amount_or_a_payment_never_opened_is_refunded_and_the_order_waits() {
        let (store, _) = confirmed().await;
        let short = notice("p1", 990, PaymentStatus::Succeeded);
        assert!(matches!(
            settle(&store, &short, "t").await.unwrap(),
            Settlement::RefundDue {
                reason: RefundReason::AmountMismatch,
                ..
            }
        ));
        let stranger = notice("p7", 1_980, PaymentStatus::Succeeded);
        assert!(matches!(
            settle(&store, &stranger, "t").await.unwrap(),
            Settlement::RefundDue {
                reason: RefundReason::UnknownPayment,
                ..
            }
        ));
        assert_eq!(store.status(O1), Some(OrderStatus::Confirmed));
        let mut unknown = notice("p1", 1_980, PaymentStatus::Succeeded);
        unknown.order_id = OrderId::parse(O2).unwrap();
        assert!(matches!(
            settle(&store, &unknown, "t").await,
            Err(SettleError::UnknownOrder)
        ));
    }

    #[test]
    fn a_notice_names_its_ids_and_currency_in_their_parsed_forms() {
        let good = serde_json::json!({"eventId": "ev", "paymentId": "pay_1", "orderId": O1,
            "amountCents": 1_980, "currency": "EUR", "status": "SUCCEEDED"});
        let parsed: PaymentNotice = serde_json::from_value(good.clone()).unwrap();
        assert_eq!(
            parsed,
            notice("pay_1", 1_980, PaymentStatus::Succeeded).with_event("ev")
        );
        for (field, bad) in [
            ("paymentId", "pay#1"),
            ("paymentId", ""),
            ("paymentId", &"p".repeat(129)),
            ("orderId", "o1"),
            ("orderId", "ORDER#x"),
            ("currency", "eur"),
            ("currency", "EURO"),
        ] {
            let mut body = good.clone();
            body[field] = bad.into();
            assert!(
                serde_json::from_value::<PaymentNotice>(body).is_err(),
                "{field}={bad:?} is refused"
            );
        }
        let mut without = good;
        without.as_object_mut().unwrap().remove("currency");
        assert!(serde_json::from_value::<PaymentNotice>(without).is_err());
    }

    impl PaymentNotice {
        fn with_event(mut self, event_id: &str) -> Self {
            self.event_id = event_id.to_owned();
            self
        }
    }

    #[tokio::test]
    async fn a_payment_in_another_currency_is_refunded_and_pays_nothing() {
        let (store, _) = confirmed().await;
        let mut dollars = notice("p1", 1_980, PaymentStatus::Succeeded);
        dollars.currency = Currency::parse("USD").unwrap();
        assert_eq!(
            settle(&store, &dollars, "t").await.unwrap(),
            Settlement::RefundDue {
                reason: RefundReason::CurrencyMismatch,
                new: true
            }
        );
        assert_eq!(store.status(O1), Some(OrderStatus::Confirmed));
        let refunds = store.refunds();
        assert_eq!(refunds[0].currency.as_str(), "USD");
        // The same payment in the order's currency still pays it.
        let euros = notice("p1", 1_980, PaymentStatus::Succeeded);
        assert_eq!(settle(&store, &euros, "t").await.unwrap(), Settlement::Paid);
    }

    #[tokio::test]
    async fn a_notice_naming_the_payment_with_another_order_neither_blocks_nor_overwrites_its_refund()
     {
        // ann's O1 awaits p1 until its window ends; bob's O2 awaits his own payment p2.
        let (store, reservations) = confirmed().await;
        add_awaiting_payment(&store, &reservations, O2, "bob", "p2").await;
        let due = crate::seckill::order::fake::due(O1, S1);
        assert!(
            timeout::handle_batch(
                crate::seckill::payment::timeout::test_deps(&store, &reservations),
                batch(&[due]),
            )
            .await
            .is_empty()
        );
        // First, a notice naming p1 with bob's order: refunded, bob's order untouched.
        let mut misnamed = notice("p1", 1_980, PaymentStatus::Succeeded);
        misnamed.order_id = OrderId::parse(O2).unwrap();
        assert_eq!(
            settle(&store, &misnamed, "t1").await.unwrap(),
            Settlement::RefundDue {
                reason: RefundReason::UnknownPayment,
                new: true
            }
        );
        assert_eq!(store.status(O2), Some(OrderStatus::Confirmed));
        // Then ann's genuine p1 arrives late: its refund is recorded, for ann and her
        // cancelled order, not lost behind the first one nor written over it.
        let genuine = notice("p1", 1_980, PaymentStatus::Succeeded);
        assert_eq!(
            settle(&store, &genuine, "t2").await.unwrap(),
            Settlement::RefundDue {
                reason: RefundReason::OrderCancelled,
                new: true
            }
        );
        let refunds = store.refunds();
        let of = |order: &str| {
            refunds
                .iter()
                .find(|r| r.payment_id == "p1" && r.order_id.as_str() == order)
                .map(|r| (r.user_id.as_str(), r.reason, r.recorded_at.as_str()))
        };
        assert_eq!(of(O2), Some(("bob", RefundReason::UnknownPayment, "t1")));
        assert_eq!(of(O1), Some(("ann", RefundReason::OrderCancelled, "t2")));
        // Each is recorded once.
        assert!(matches!(
            settle(&store, &misnamed, "t3").await.unwrap(),
            Settlement::RefundDue { new: false, .. }
        ));
        assert_eq!(store.refunds().len(), 2);
    }

    #[test]
    fn the_callback_takes_the_sandboxs_signature_only_when_it_has_the_sandboxs_secret() {
        let sandbox = WebhookSecret::new(b"the-sandbox-own-secret".to_vec()).unwrap();
        let body = br#"{"paymentId":"p1"}"#;
        let by_provider = secret().sign(1_000, body);
        let by_sandbox = sandbox.sign(1_000, body);
        let without = CallbackSecrets {
            provider: secret(),
            sandbox: None,
        };
        assert_eq!(without.verify(Some(&by_provider), body, 1_000), Ok(()));
        assert_eq!(
            without.verify(Some(&by_sandbox), body, 1_000),
            Err(SignatureError::Mismatch)
        );
        let with = CallbackSecrets {
            sandbox: Some(sandbox.clone()),
            ..without
        };
        assert_eq!(with.verify(Some(&by_provider), body, 1_000), Ok(()));
        assert_eq!(with.verify(Some(&by_sandbox), body, 1_000), Ok(()));
        let stale = sandbox.sign(1_000 - 2 * TOLERANCE_SECONDS, body);
        assert_eq!(
            with.verify(Some(&stale), body, 1_000),
            Err(SignatureError::Stale)
        );
        let other = WebhookSecret::new(b"neither-of-the-two".to_vec()).unwrap();
        assert_eq!(
            with.verify(Some(&other.sign(1_000, body)), body, 1_000),
            Err(SignatureError::Mismatch)
        );
    }
}
