//! Reconciliation, on a schedule: reservations that never became orders are given back, and
//! each published sale's stock in Redis is logged beside DynamoDB's.
//!
//! A reservation stays in the sale's `pending` hash until the order consumer materialized its
//! order. One older than the grace period whose order does not exist in DynamoDB was lost
//! between the admission script and the queue (a crash before the send): it is released. One
//! whose order exists only missed its confirmation, which is redone.
//!
//! The release cannot race the order consumer into counting a unit twice: the consumer first
//! claims its orders (`claim.lua`: out of `pending`, or reported as released), and a release
//! without a holder only gives back an order still in `pending` and not yet in `released`;
//! both are atomic scripts, so exactly one of them wins per order. When the order queue lags
//! beyond the grace period, the release wins and the late order is put as REJECTED, with no
//! stock taken from DynamoDB: the buyer loses the order, never the stores their agreement.
//! So the grace period should still exceed the queue's normal lag.

use super::orders::{OrderStatus, OrderStore, Reservations};
use serde::Serialize;
use std::time::Duration;

/// What one sale's reconciliation found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SaleReport {
    pub sale_id: String,
    pub redis_stock: Option<i64>,
    pub dynamo_stock_remaining: Option<i64>,
    pub pending: usize,
    pub released: usize,
    pub confirmed: usize,
}

/// The run's summary, returned by the function.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub sales: Vec<SaleReport>,
    pub released: usize,
    /// Sales that could not be reconciled this time (logged).
    pub failed: usize,
}

/// Reconciles every published sale, as of `now_ms` (epoch milliseconds).
#[tracing::instrument(skip(store, reservations))]
pub async fn reconcile(
    store: &dyn OrderStore,
    reservations: &dyn Reservations,
    grace: Duration,
    now_ms: i64,
) -> anyhow::Result<Summary> {
    let mut summary = Summary::default();
    for sale in store.published_sales().await? {
        match reconcile_sale(
            store,
            reservations,
            &sale.sale_id,
            sale.stock_remaining,
            grace,
            now_ms,
        )
        .await
        {
            Ok(report) => {
                summary.released += report.released;
                summary.sales.push(report);
            }
            Err(err) => {
                tracing::error!(sale_id = %sale.sale_id, error = ?err, "failed to reconcile a sale");
                summary.failed += 1;
            }
        }
    }
    Ok(summary)
}

async fn reconcile_sale(
    store: &dyn OrderStore,
    reservations: &dyn Reservations,
    sale_id: &str,
    dynamo_stock_remaining: Option<i64>,
    grace: Duration,
    now_ms: i64,
) -> anyhow::Result<SaleReport> {
    let grace_ms = i64::try_from(grace.as_millis()).unwrap_or(i64::MAX);
    let pending = reservations.pending(sale_id).await?;
    let mut report = SaleReport {
        sale_id: sale_id.to_owned(),
        redis_stock: reservations.stock(sale_id).await?,
        dynamo_stock_remaining,
        pending: pending.len(),
        released: 0,
        confirmed: 0,
    };
    let mut materialized = Vec::new();
    for reservation in pending {
        if now_ms.saturating_sub(reservation.reserved_at_ms) < grace_ms {
            continue;
        }
        let order = store.order(&reservation.order_id).await?;
        match order.map(|order| order.status) {
            None | Some(OrderStatus::Rejected) => {
                // No holder: if the consumer claimed it meanwhile (it left `pending`), this
                // changes nothing; if this wins, the consumer's claim sees it released and
                // puts the order as REJECTED.
                if reservations
                    .release(sale_id, &reservation.order_id, None)
                    .await?
                {
                    tracing::warn!(sale_id, order_id = %reservation.order_id, "released an orphaned reservation");
                    report.released += 1;
                }
            }
            Some(_) => materialized.push(reservation.order_id),
        }
    }
    if !materialized.is_empty() {
        reservations.confirm(sale_id, &materialized).await?;
        report.confirmed = materialized.len();
    }
    tracing::info!(
        sale_id,
        redis_stock = report.redis_stock,
        dynamo_stock_remaining = report.dynamo_stock_remaining,
        pending = report.pending,
        released = report.released,
        confirmed = report.confirmed,
        "sale reconciled"
    );
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consumer::Message;
    use crate::seckill::memory::{MemoryOrders, MemoryPayments, MemoryReservations, S1, placed};
    use crate::seckill::order_consumer::{self, OrderDeps};

    #[tokio::test]
    async fn only_old_orphaned_reservations_are_released_and_only_once() {
        let store = MemoryOrders::default();
        store.add_sale(S1, 10);
        let reservations = MemoryReservations::default();
        let payments = MemoryPayments::default();
        reservations.reserve_at(S1, "orphan", "a", 1_000);
        reservations.reserve_at(S1, "young", "b", 100_000);
        reservations.reserve_at(S1, "done", "c", 1_000);
        let deps = OrderDeps {
            store: &store,
            reservations: &reservations,
            payments: &payments,
        };
        let message = Message {
            id: "m".to_owned(),
            body: placed("done", S1, "c"),
        };
        assert!(
            order_consumer::handle_batch(deps, vec![message])
                .await
                .is_empty()
        );
        // The consumer's confirmation got lost: "done" is still pending.
        reservations.reserve_at(S1, "done", "c", 1_000);

        let grace = Duration::from_secs(60);
        let summary = reconcile(&store, &reservations, grace, 110_000)
            .await
            .unwrap();
        assert_eq!(summary.released, 1);
        assert_eq!(summary.sales[0].confirmed, 1);
        assert_eq!(summary.sales[0].dynamo_stock_remaining, Some(9));
        assert_eq!(reservations.released_of(S1), ["orphan"]);
        assert_eq!(reservations.pending_of(S1), ["young"]);

        let summary = reconcile(&store, &reservations, grace, 110_000)
            .await
            .unwrap();
        assert_eq!(summary.released, 0);
    }
}
