//! Refunds for operations: the payments recorded for refund ([`crate::seckill::payment::Refund`]),
//! listed oldest first and paid back through the [`PaymentProvider`] port, once.
//!
//! A refund is `DUE` when the callback records it and `REFUNDED` once an operator settled it.
//! Settling is idempotent and safe against crashes: the provider is asked to refund under a key
//! of the refund's own ([`RefundRequest::key`], the payment and the order), so asking again
//! (a retry, a second operator, a crash after the provider answered) refunds once; then one
//! conditional transaction turns the refund `REFUNDED` (only from `DUE`) and the refund's entry
//! on its order with it, so `GET /orders/{orderId}` shows the state. The refund leaves the due
//! list in that same write (its index key moves to the settled refunds).
//!
//! A payment is paid back once, in full: its notices may have named it with several orders,
//! each recorded as a refund of its own (so that a wrong first notice never blocks the genuine
//! refund), but only the first of them an operator settles takes the payment
//! ([`OrderStore::claim_payment_refund`]); settling another answers `409 PAYMENT_REFUNDED`.

use crate::cursor::{Cursor, PageLimit};
use crate::ids::OrderId;
pub use crate::seckill::order::refund::{
    OrderRefund, Outstanding, RefundPage, RefundRecord, RefundState,
};
use crate::seckill::order::{OrderStore, OrderStoreError};
use crate::seckill::payment::{Currency, PaymentProvider, ProviderError};

/// What the provider is asked to give back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefundRequest {
    pub payment_id: String,
    pub order_id: OrderId,
    pub amount_cents: u64,
    pub currency: Currency,
}

impl RefundRequest {
    /// The provider's idempotency key of this refund: one refund per payment and order,
    /// however often it is asked for.
    pub fn key(&self) -> String {
        format!("refund-{}-{}", self.payment_id, self.order_id)
    }
}

/// Why a refund could not be settled.
#[derive(Debug, thiserror::Error)]
pub enum SettleRefundError {
    #[error("no such refund")]
    UnknownRefund,
    /// The stack has no payment provider (prod until one is plugged in).
    #[error(
        "no payment provider is configured on this stack: refund the payment with the provider by hand"
    )]
    NoProvider,
    /// The payment was refunded (or is being refunded) for another order it was named with.
    #[error("payment {payment_id} is refunded for order {order_id}: a payment is refunded once")]
    PaymentRefunded {
        payment_id: String,
        order_id: OrderId,
    },
    #[error("the payment provider failed")]
    Provider(#[source] ProviderError),
    #[error(transparent)]
    Store(#[from] OrderStoreError),
}

/// The refunds still due, oldest first.
pub async fn refunds_due(
    store: &dyn OrderStore,
    limit: PageLimit,
    cursor: Option<&Cursor>,
) -> Result<RefundPage, OrderStoreError> {
    store.refunds_due(limit, cursor).await
}

/// Pays a refund back through `provider`, once: a refund already `REFUNDED` answers as it is.
#[tracing::instrument(skip(store, provider))]
pub async fn settle_refund(
    store: &dyn OrderStore,
    provider: Option<&dyn PaymentProvider>,
    payment_id: &str,
    order_id: &OrderId,
    at: &str,
) -> Result<RefundRecord, SettleRefundError> {
    let refund = store
        .refund(payment_id, order_id)
        .await?
        .ok_or(SettleRefundError::UnknownRefund)?;
    if refund.state == RefundState::Refunded {
        return Ok(refund);
    }
    let provider = provider.ok_or(SettleRefundError::NoProvider)?;
    // Taken before the provider pays, and kept: a crash after it leaves the payment this
    // refund's, and settling it again goes on.
    if let Some(holder) = store
        .claim_payment_refund(&refund.payment_id, order_id)
        .await?
    {
        return Err(SettleRefundError::PaymentRefunded {
            payment_id: refund.payment_id,
            order_id: holder,
        });
    }
    let request = RefundRequest {
        payment_id: refund.payment_id.clone(),
        order_id: refund.order_id.clone(),
        amount_cents: refund.amount_cents,
        currency: refund.currency.clone(),
    };
    let provider_refund_id = provider
        .refund(&request)
        .await
        .map_err(SettleRefundError::Provider)?;
    if store
        .mark_refunded(&refund, &provider_refund_id, at)
        .await?
    {
        tracing::info!(amount_cents = refund.amount_cents, "refund settled");
        crate::emf::refund_settled(&refund.reason);
        return Ok(RefundRecord {
            state: RefundState::Refunded,
            refunded_at: Some(at.to_owned()),
            provider_refund_id: Some(provider_refund_id),
            ..refund
        });
    }
    // Settled meanwhile by another request (the provider refunded once, under the same key).
    store
        .refund(payment_id, order_id)
        .await?
        .ok_or(SettleRefundError::UnknownRefund)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::seckill::order::fake::MemoryReservations;
    use crate::seckill::order::fake::{MemoryOrders, S1, add_awaiting_payment, oid};
    use crate::seckill::payment::sandbox::SandboxProvider;
    use crate::seckill::payment::{Refund, RefundReason};

    pub(crate) fn refund(payment: &str, order: &str, at: &str) -> Refund {
        Refund {
            payment_id: payment.to_owned(),
            order_id: oid(S1, order),
            user_id: "ann".to_owned(),
            amount_cents: 1_980,
            currency: Currency::shop(),
            reason: RefundReason::OrderCancelled,
            recorded_at: at.to_owned(),
        }
    }

    #[tokio::test]
    async fn refunds_due_are_listed_oldest_first_and_settled_once_with_the_order_showing_it() {
        let store = MemoryOrders::default();
        store.add_sale(S1, 10);
        let reservations = MemoryReservations::default();
        add_awaiting_payment(&store, &reservations, "o1", "ann", "p1").await;
        add_awaiting_payment(&store, &reservations, "o2", "ann", "p2").await;
        for (payment, order, at) in [
            ("p2", "o2", "2026-12-01T10:00:02Z"),
            ("p1", "o1", "2026-12-01T10:00:01Z"),
        ] {
            assert!(
                store
                    .record_refund(&refund(payment, order, at))
                    .await
                    .unwrap()
            );
        }
        let limit = PageLimit::parse(Some("1")).unwrap();
        let first = refunds_due(&store, limit, None).await.unwrap();
        assert_eq!(first.items[0].payment_id, "p1");
        let second = refunds_due(&store, limit, first.next.as_ref())
            .await
            .unwrap();
        assert_eq!(second.items[0].payment_id, "p2");

        let order = store.order(&oid(S1, "o1")).await.unwrap().unwrap();
        assert_eq!(order.refunds.len(), 1);
        assert_eq!(order.refunds[0].state, RefundState::Due);

        let settled = settle_refund(&store, Some(&SandboxProvider), "p1", &oid(S1, "o1"), "t1")
            .await
            .unwrap();
        assert_eq!(settled.state, RefundState::Refunded);
        let provider_id = settled.provider_refund_id.clone().unwrap();
        // Again: the same answer, nothing refunded twice.
        let again = settle_refund(&store, Some(&SandboxProvider), "p1", &oid(S1, "o1"), "t2")
            .await
            .unwrap();
        assert_eq!(again, settled);
        assert_eq!(again.refunded_at.as_deref(), Some("t1"));
        assert_eq!(again.provider_refund_id, Some(provider_id));
        let order = store.order(&oid(S1, "o1")).await.unwrap().unwrap();
        assert_eq!(order.refunds[0].state, RefundState::Refunded);
        assert_eq!(order.refunds[0].refunded_at.as_deref(), Some("t1"));
        let due = refunds_due(&store, PageLimit::parse(None).unwrap(), None)
            .await
            .unwrap();
        let due: Vec<&str> = due.items.iter().map(|r| r.payment_id.as_str()).collect();
        assert_eq!(due, ["p2"]);

        // No provider (prod until one is plugged in): refused, still due.
        let err = settle_refund(&store, None, "p2", &oid(S1, "o2"), "t3")
            .await
            .unwrap_err();
        assert!(matches!(err, SettleRefundError::NoProvider), "{err:?}");
        assert_eq!(
            store
                .refund("p2", &oid(S1, "o2"))
                .await
                .unwrap()
                .unwrap()
                .state,
            RefundState::Due
        );
        let err = settle_refund(&store, Some(&SandboxProvider), "p9", &oid(S1, "o1"), "t")
            .await
            .unwrap_err();
        assert!(matches!(err, SettleRefundError::UnknownRefund), "{err:?}");
    }

    #[tokio::test]
    async fn a_payment_named_with_two_orders_is_paid_back_once() {
        let store = MemoryOrders::default();
        store.add_sale(S1, 10);
        let reservations = MemoryReservations::default();
        add_awaiting_payment(&store, &reservations, "o1", "ann", "p1").await;
        add_awaiting_payment(&store, &reservations, "o2", "ann", "p2").await;
        // Notices named p1 with o1 and with o2: two refunds recorded, neither blocking.
        for order in ["o2", "o1"] {
            assert!(
                store
                    .record_refund(&refund("p1", order, "2026-12-01T10:00:00Z"))
                    .await
                    .unwrap()
            );
        }
        let settled = settle_refund(&store, Some(&SandboxProvider), "p1", &oid(S1, "o1"), "t1")
            .await
            .unwrap();
        assert_eq!(settled.state, RefundState::Refunded);
        let err = settle_refund(&store, Some(&SandboxProvider), "p1", &oid(S1, "o2"), "t2")
            .await
            .unwrap_err();
        assert!(
            matches!(&err, SettleRefundError::PaymentRefunded { order_id, .. } if *order_id == oid(S1, "o1")),
            "{err:?}"
        );
        let other = store.refund("p1", &oid(S1, "o2")).await.unwrap().unwrap();
        assert_eq!(other.state, RefundState::Due, "nothing paid for o2");
        // The settled one answers as it is.
        let again = settle_refund(&store, Some(&SandboxProvider), "p1", &oid(S1, "o1"), "t3")
            .await
            .unwrap();
        assert_eq!(again, settled);
    }
}
