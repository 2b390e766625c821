//! Reconciliation, on a schedule: reservations that never became orders are given back, each
//! live sale's stock in Redis is logged beside DynamoDB's, and capped at what DynamoDB
//! can still confirm when Redis lost admissions (`cap.lua`; [`crate::seckill::recovery::failover`]).
//!
//! It reads only the live sales (the sparse index of [`crate::seckill::sale::dynamo`]), and retires a
//! sale from them once it ended, its grace period passed and nothing of it is pending: from
//! then on no reservation of it can be orphaned, and the run no longer reads it.
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
//!
//! So the grace period follows from the template ([`Grace::from_env`]): it is at least the
//! time an order's message can spend being retried before it would go to the dead-letter
//! queue (`maxReceiveCount` receives, each hidden for the visibility timeout), plus the
//! batching window, plus the order route's timeout (the send comes at most that long after
//! the reservation). An order whose first consumer attempts fail, on a conflict or an outage,
//! is still confirmed when a later attempt succeeds; only a queue lagging beyond all of that
//! (its age alarm fires at 5 minutes) loses orders.

use crate::config::{ConfigError, Env};
use crate::ids::SaleId;
use crate::seckill::order::{OrderStatus, OrderStore, Reservations};
use serde::Serialize;
use std::time::Duration;

/// How old a reservation without an order must be before it is released, from the order
/// queue's settings as the template gives them to the function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grace {
    pub visibility_timeout_seconds: u64,
    pub max_receive_count: u64,
    pub batching_window_seconds: u64,
    pub order_route_timeout_seconds: u64,
}

impl Grace {
    /// `ORDER_QUEUE_VISIBILITY_TIMEOUT_SECONDS`, `ORDER_QUEUE_MAX_RECEIVE_COUNT`,
    /// `ORDER_QUEUE_BATCHING_WINDOW_SECONDS` and `PLACE_ORDER_TIMEOUT_SECONDS`, all required:
    /// a default here could silently fall below what the template configures.
    pub fn from_env(env: &Env) -> Result<Self, ConfigError> {
        let number = |name: &str| -> Result<u64, ConfigError> {
            let raw = env.required(name)?;
            raw.parse().map_err(|_| ConfigError::Invalid {
                name: name.to_owned(),
                reason: format!("{raw:?} is not a whole number of seconds or receives"),
            })
        };
        Ok(Self {
            visibility_timeout_seconds: number("ORDER_QUEUE_VISIBILITY_TIMEOUT_SECONDS")?,
            max_receive_count: number("ORDER_QUEUE_MAX_RECEIVE_COUNT")?,
            batching_window_seconds: number("ORDER_QUEUE_BATCHING_WINDOW_SECONDS")?,
            order_route_timeout_seconds: number("PLACE_ORDER_TIMEOUT_SECONDS")?,
        })
    }

    /// `maxReceiveCount` x visibility timeout + batching window + the order route's timeout.
    pub fn period(&self) -> Duration {
        let retried = self
            .max_receive_count
            .saturating_mul(self.visibility_timeout_seconds);
        Duration::from_secs(
            retried
                .saturating_add(self.batching_window_seconds)
                .saturating_add(self.order_route_timeout_seconds),
        )
    }
}

/// What one sale's reconciliation found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SaleReport {
    pub sale_id: SaleId,
    pub redis_stock: Option<i64>,
    pub dynamo_stock_remaining: Option<i64>,
    pub pending: usize,
    /// Orphaned reservations given back, and their units.
    pub released: usize,
    pub released_units: u64,
    pub confirmed: usize,
    /// Units taken off the Redis stock because it exceeded what DynamoDB can still confirm
    /// (`cap.lua`): Redis had lost admissions.
    pub capped: i64,
}

/// The run's summary, returned by the function.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub sales: Vec<SaleReport>,
    /// The items the read of the live sales returned: its cost.
    pub items_read: usize,
    /// Sales taken off the live index: ended, past their grace period, nothing pending.
    pub retired: Vec<SaleId>,
    pub released: usize,
    /// Sales that could not be reconciled this time (logged).
    pub failed: usize,
    /// Refunds still due, and how long the oldest has waited (`None` when they could not be
    /// read this time: logged, and the run goes on).
    pub refunds_due: Option<u64>,
    pub oldest_refund_due_age_seconds: Option<u64>,
}

/// Reconciles every live sale, as of `now_ms` (epoch milliseconds), and retires those that
/// ended more than `grace` ago with nothing left pending.
#[tracing::instrument(skip(store, reservations))]
pub async fn reconcile(
    store: &dyn OrderStore,
    reservations: &dyn Reservations,
    grace: Duration,
    now_ms: i64,
) -> anyhow::Result<Summary> {
    let mut summary = Summary::default();
    let live = store.live_sales().await?;
    summary.items_read = live.items_read;
    let grace_ms = i64::try_from(grace.as_millis()).unwrap_or(i64::MAX);
    for sale in live.sales {
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
                if now_ms >= sale.ends_at_ms.saturating_add(grace_ms) {
                    match retire(store, reservations, &sale.sale_id).await {
                        Ok(true) => summary.retired.push(sale.sale_id),
                        Ok(false) => {}
                        Err(err) => {
                            tracing::error!(sale_id = %sale.sale_id, error = ?err, "failed to retire an ended sale");
                            summary.failed += 1;
                        }
                    }
                }
            }
            Err(err) => {
                tracing::error!(sale_id = %sale.sale_id, error = ?err, "failed to reconcile a sale");
                summary.failed += 1;
            }
        }
    }
    match store.refunds_outstanding().await {
        Ok(outstanding) => {
            let now =
                time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(now_ms) * 1_000_000)
                    .unwrap_or_else(|_| time::OffsetDateTime::now_utc());
            let age = outstanding.oldest_age_seconds(now);
            crate::emf::refunds_outstanding(outstanding.count, age);
            if outstanding.count > 0 {
                tracing::info!(
                    refunds_due = outstanding.count,
                    oldest_age_seconds = age,
                    "refunds due for an operator to settle"
                );
            }
            summary.refunds_due = Some(outstanding.count);
            summary.oldest_refund_due_age_seconds = Some(age);
        }
        Err(err) => tracing::error!(error = ?err, "failed to count the refunds due"),
    }
    Ok(summary)
}

/// Retires an ended sale whose grace period passed if nothing of it is pending any more (a
/// reservation still there was claimed by a consumer a moment ago: the next run retires it).
async fn retire(
    store: &dyn OrderStore,
    reservations: &dyn Reservations,
    sale_id: &SaleId,
) -> anyhow::Result<bool> {
    if !reservations.pending(sale_id).await?.is_empty() {
        return Ok(false);
    }
    let retired = store
        .retire_sale(sale_id, &crate::clock::now_rfc3339())
        .await?;
    if retired {
        tracing::info!(%sale_id, "retired an ended sale from the live sales");
    }
    Ok(retired)
}

async fn reconcile_sale(
    store: &dyn OrderStore,
    reservations: &dyn Reservations,
    sale_id: &SaleId,
    dynamo_stock_remaining: Option<i64>,
    grace: Duration,
    now_ms: i64,
) -> anyhow::Result<SaleReport> {
    let grace_ms = i64::try_from(grace.as_millis()).unwrap_or(i64::MAX);
    let pending = reservations.pending(sale_id).await?;
    let mut report = SaleReport {
        sale_id: sale_id.clone(),
        redis_stock: reservations.stock(sale_id).await?,
        dynamo_stock_remaining,
        pending: pending.len(),
        released: 0,
        released_units: 0,
        confirmed: 0,
        capped: 0,
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
                    tracing::warn!(%sale_id, order_id = %reservation.order_id, units = reservation.units, "released an orphaned reservation");
                    report.released += 1;
                    report.released_units += u64::from(reservation.units);
                }
            }
            Some(_) => materialized.push(reservation.order_id),
        }
    }
    if !materialized.is_empty() {
        reservations.confirm(sale_id, &materialized).await?;
        report.confirmed = materialized.len();
    }
    // Read again just before the cap, strongly consistent: the older the figure, the more a
    // cancellation landing in between could make the cap take a unit too many (undersold,
    // never oversold).
    if let Some(remaining) = store.stock_remaining(sale_id).await? {
        report.capped = reservations.cap_stock(sale_id, remaining).await?;
        if report.capped > 0 {
            tracing::warn!(
                %sale_id,
                capped = report.capped,
                "Redis admitted beyond what DynamoDB can confirm: its stock was capped"
            );
        }
    }
    tracing::info!(
        %sale_id,
        redis_stock = report.redis_stock,
        dynamo_stock_remaining = report.dynamo_stock_remaining,
        pending = report.pending,
        released = report.released,
        confirmed = report.confirmed,
        capped = report.capped,
        "sale reconciled"
    );
    let drift = report.redis_stock.zip(report.dynamo_stock_remaining);
    crate::emf::reconciled(
        report.released_units,
        u64::try_from(report.capped).unwrap_or(0),
        drift.map(|(redis, dynamo)| redis - dynamo),
    );
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::consumer::Message;
    use crate::seckill::order::consumer::{self, OrderDeps};
    use crate::seckill::order::fake::World;
    use crate::seckill::order::fake::{
        MemoryOrders, MemoryPayments, MemoryReservations, S1, oid, order_name, placed,
    };
    use crate::seckill::order::{Claim, OrderStatus};

    #[test]
    fn the_grace_period_outlasts_every_retry_of_an_order_message() {
        let env = |visibility_timeout: &'static str| {
            Env::from_pairs([
                ("ORDER_QUEUE_VISIBILITY_TIMEOUT_SECONDS", visibility_timeout),
                ("ORDER_QUEUE_MAX_RECEIVE_COUNT", "5"),
                ("ORDER_QUEUE_BATCHING_WINDOW_SECONDS", "1"),
                ("PLACE_ORDER_TIMEOUT_SECONDS", "10"),
            ])
        };
        let grace = Grace::from_env(&env("60")).unwrap();
        assert_eq!(grace.period(), Duration::from_secs(5 * 60 + 1 + 10));

        let missing = Env::from_pairs([("ORDER_QUEUE_VISIBILITY_TIMEOUT_SECONDS", "60")]);
        let err = Grace::from_env(&missing).unwrap_err();
        assert!(
            err.to_string().contains("ORDER_QUEUE_MAX_RECEIVE_COUNT"),
            "{err}"
        );
        let err = Grace::from_env(&env("a minute")).unwrap_err();
        assert!(err.to_string().contains("VISIBILITY_TIMEOUT"), "{err}");
    }

    #[tokio::test]
    async fn each_run_reports_the_refunds_still_due_and_the_oldest_ones_wait_until_settled() {
        use crate::seckill::payment::refunds::{RefundState, settle_refund};
        use crate::seckill::payment::sandbox::SandboxProvider;
        let store = MemoryOrders::default();
        let reservations = MemoryReservations::default();
        let grace = Duration::from_secs(60);
        // 2026-12-01T10:00:00Z, and a run 90 s after the first refund was recorded.
        let recorded_ms = 1_796_119_200_000;
        let now_ms = recorded_ms + 90_000;

        let none = reconcile(&store, &reservations, grace, now_ms)
            .await
            .unwrap();
        assert_eq!(none.refunds_due, Some(0));
        assert_eq!(none.oldest_refund_due_age_seconds, Some(0));

        for (payment, order, at) in [
            ("p1", "o1", "2026-12-01T10:00:00Z"),
            ("p2", "o2", "2026-12-01T10:01:00Z"),
        ] {
            let refund = crate::seckill::payment::refunds::tests::refund(payment, order, at);
            assert!(store.record_refund(&refund).await.unwrap());
        }
        let due = reconcile(&store, &reservations, grace, now_ms)
            .await
            .unwrap();
        assert_eq!(due.refunds_due, Some(2));
        assert_eq!(due.oldest_refund_due_age_seconds, Some(90));

        // Settling the oldest: the count and the age follow, and the alarm on them clears.
        let settled = settle_refund(&store, Some(&SandboxProvider), "p1", &oid(S1, "o1"), "t1")
            .await
            .unwrap();
        assert_eq!(settled.state, RefundState::Refunded);
        let after = reconcile(&store, &reservations, grace, now_ms)
            .await
            .unwrap();
        assert_eq!(after.refunds_due, Some(1));
        assert_eq!(after.oldest_refund_due_age_seconds, Some(30));
    }

    #[tokio::test]
    async fn an_ended_sale_leaves_the_live_sales_once_its_grace_passed_and_nothing_is_pending() {
        let store = MemoryOrders::default();
        store.add_sale(S1, 10);
        store.end_sale_at(S1, 50_000);
        let reservations = MemoryReservations::default();
        reservations.reserve_at(S1, "late", "a", 45_000);
        let grace = Duration::from_secs(60);

        // Ended, but within its grace period: still reconciled, still live.
        let summary = reconcile(&store, &reservations, grace, 100_000)
            .await
            .unwrap();
        assert_eq!(summary.sales.len(), 1);
        assert!(summary.retired.is_empty());
        assert!(store.is_live(S1));

        // Past it: the orphaned reservation is given back, then the sale retired.
        let summary = reconcile(&store, &reservations, grace, 120_000)
            .await
            .unwrap();
        assert_eq!(summary.released, 1);
        assert_eq!(summary.retired, [SaleId::parse(S1).unwrap()]);
        assert!(!store.is_live(S1));

        // From then on the run reads nothing of it.
        let summary = reconcile(&store, &reservations, grace, 130_000)
            .await
            .unwrap();
        assert!(summary.sales.is_empty());
        assert_eq!(summary.items_read, 0);
    }

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
            seal: crate::seckill::admission::seal::Seal::for_tests(),
        };
        let body = placed("done", S1, "c");
        let message = Message {
            id: "m".to_owned(),
            seal: Some(crate::seckill::admission::seal::Seal::for_tests().sign(&body)),
            body,
        };
        assert!(consumer::handle_batch(deps, vec![message]).await.is_empty());
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

    /// The reconciliation of `world` at `now_ms`, with a grace period of 60 s.
    async fn reconcile_at(world: &World, now_ms: i64) -> Summary {
        let grace = std::time::Duration::from_secs(60);
        let reconciled = reconcile(&world.store, &world.reservations, grace, now_ms);
        reconciled.await.unwrap()
    }

    #[tokio::test]
    async fn a_late_order_whose_reservation_was_released_is_rejected_without_stock() {
        let world = World::new(S1, 10);
        world.reservations.reserve_at(S1, "late", "a", 1_000);
        world.reservations.reserve_at(S1, "ok", "b", 100_000);
        // The queue lagged beyond the grace period: the reconciliation gives "late" back.
        let summary = reconcile_at(&world, 110_000).await;
        assert_eq!(summary.released, 1);
        assert_eq!(world.reservations.stock_of(S1), -1);

        let bodies = [placed("late", S1, "a"), placed("ok", S1, "b")];
        for _ in 0..2 {
            world.consume(&bodies).await;
            assert_eq!(world.store.status("late"), Some(OrderStatus::Rejected));
            assert_eq!(world.store.status("ok"), Some(OrderStatus::Confirmed));
            assert_eq!(world.store.stock(S1), 9);
            // Two reserved, "late" given back once.
            assert_eq!(world.reservations.stock_of(S1), -1);
            assert_eq!(world.reservations.released_of(S1), ["late"]);
            assert!(world.reservations.pending_of(S1).is_empty());
        }
        let due: Vec<String> = world
            .payments
            .sent()
            .into_iter()
            .map(|due| order_name(due.order_id.as_str()))
            .collect();
        assert_eq!(due, ["ok", "ok"]);
    }

    #[tokio::test]
    async fn a_claimed_order_is_not_released_and_its_retry_confirms_it() {
        let world = World::new(S1, 10);
        world.reservations.reserve_at(S1, "o1", "a", 1_000);
        // The consumer claimed it, then its commit failed: the message will come back.
        let sale = SaleId::parse(S1).unwrap();
        let ids = [oid(S1, "o1")];
        let claims = world.reservations.claim(&sale, &ids).await.unwrap();
        assert!(
            matches!(&claims[..], [Claim::Held(held)] if held.user_id == "a"),
            "{claims:?}"
        );
        let summary = reconcile_at(&world, 110_000).await;
        assert_eq!(summary.released, 0);
        // Claimed, not released: still the consumer's, and its reservation is answered again.
        assert_eq!(world.reservations.claim(&sale, &ids).await.unwrap(), claims);
        assert!(!(world.reservations.release(&sale, &ids[0], None).await).unwrap());

        let bodies = [placed("o1", S1, "a")];
        world.consume(&bodies).await;
        assert_eq!(world.store.status("o1"), Some(OrderStatus::Confirmed));
        assert_eq!(world.store.stock(S1), 9);
        assert_eq!(world.reservations.stock_of(S1), -1);
        assert!(world.reservations.released_of(S1).is_empty());
    }
}
