//! The payment-timeout consumer: when an order's payment window ends (its `PaymentDue`
//! arrives through the delay queue) and it is still CONFIRMED, it is cancelled and its unit
//! goes back to both stores, exactly once.
//!
//! A COD order has no payment to wait for, but it must be confirmed for delivery by an
//! operator ([`crate::seckill::order::OrderStore::confirm_delivery`]) within the stack's COD
//! window (`COD_CONFIRM_WINDOW_SECONDS` from its creation), or a buyer, or a bot, could hold
//! stock for ever by choosing cash on delivery. Its `PaymentDue` comes back through the delay
//! queue, sent again each time, until it is confirmed (then nothing more happens) or its window
//! has ended: then it is cancelled like an unpaid order.
//!
//! DynamoDB: per sale and batch, one transaction moves the orders CONFIRMED → CANCELLED
//! (conditionally, so a paid or already cancelled order drops out), takes them from each
//! holder's buyer item (`units`, the per-user limit's final guard, so that the buyer may buy
//! again) and adds their units to `stockRemaining` once. Redis: the release script, once per order thanks to the sale's
//! `released` set. A message that finds its order already CANCELLED repeats the release, a
//! no-op unless the first attempt crashed between the two stores.

use crate::config::{ConfigError, Env};
use crate::consumer::{Message, parse_each};
use crate::emf;
use crate::ids::SaleId;
use crate::once::{Through, Unit, apply_once, merge};
use crate::seckill::admission::Holder;
use crate::seckill::order::{
    DueOrder, HeldOrder, Order, OrderStatus, OrderStore, PaymentDueSink, Reservations,
    parse_payment_due,
};
use std::time::Duration;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// What the consumer works with.
#[derive(Clone, Copy)]
pub struct TimeoutDeps<'a> {
    pub store: &'a dyn OrderStore,
    pub reservations: &'a dyn Reservations,
    /// Where a COD order's `PaymentDue` goes again while its window lasts.
    pub payments: &'a dyn PaymentDueSink,
    /// How long after its creation a COD order may wait to be confirmed for delivery.
    pub cod_window: Duration,
}

/// `COD_CONFIRM_WINDOW_SECONDS` (at least 1; a day unless set).
pub fn cod_window_from_env(env: &Env) -> Result<Duration, ConfigError> {
    let seconds = env.parsed_or("COD_CONFIRM_WINDOW_SECONDS", 86_400u64)?;
    if seconds == 0 {
        return Err(ConfigError::Invalid {
            name: "COD_CONFIRM_WINDOW_SECONDS".to_owned(),
            reason: "must be at least 1".to_owned(),
        });
    }
    Ok(Duration::from_secs(seconds))
}

/// Whether `order`'s COD window has ended at `now`: an order whose creation time cannot be
/// read has no window left.
fn cod_window_ended(order: &Order, window: Duration, now: OffsetDateTime) -> bool {
    match OffsetDateTime::parse(&order.created_at, &Rfc3339) {
        Ok(created) => now >= created + window,
        Err(err) => {
            tracing::warn!(order_id = %order.order_id, created_at = %order.created_at, error = %err, "a COD order's creation time is unreadable: its window has ended");
            true
        }
    }
}

/// One sale's orders in a batch (marker = order id, payload = the order and its holder): those
/// to cancel, and those to release.
struct SaleWork {
    sale_id: SaleId,
    to_cancel: Vec<Unit<HeldOrder>>,
    to_release: Vec<Unit<HeldOrder>>,
}

/// Handles one SQS batch; returns the ids of the messages to retry.
#[tracing::instrument(skip_all, fields(messages = messages.len()))]
pub async fn handle_batch(deps: TimeoutDeps<'_>, messages: Vec<Message>) -> Vec<String> {
    handle_batch_at(deps, messages, OffsetDateTime::now_utc()).await
}

/// [`handle_batch`] at `now`.
pub async fn handle_batch_at(
    deps: TimeoutDeps<'_>,
    messages: Vec<Message>,
    now: OffsetDateTime,
) -> Vec<String> {
    let TimeoutDeps {
        store,
        reservations,
        ..
    } = deps;
    let parsed = parse_each(messages, parse_payment_due);
    let mut failed = parsed.refused;
    let units = merge(
        parsed
            .events
            .into_iter()
            .map(|(message, due)| Unit::new(due.order_id.to_string(), message, due.order_id))
            .collect(),
    );
    let mut sales: Vec<SaleWork> = Vec::new();
    // COD orders whose window lasts: their due message goes again.
    let mut again: Vec<(DueOrder, Vec<String>)> = Vec::new();
    for unit in units {
        let order = match store.order(&unit.payload).await {
            Ok(Some(order)) => order,
            Ok(None) => {
                tracing::error!(order_id = %unit.marker, "a payment is due for an unknown order; dropping it");
                continue;
            }
            Err(err) => {
                tracing::error!(order_id = %unit.marker, error = ?anyhow::Error::from(err), "failed to read an order");
                failed.extend(unit.messages);
                continue;
            }
        };
        let index = match sales.iter().position(|work| work.sale_id == order.sale_id) {
            Some(index) => index,
            None => {
                sales.push(SaleWork {
                    sale_id: order.sale_id.clone(),
                    to_cancel: Vec::new(),
                    to_release: Vec::new(),
                });
                sales.len() - 1
            }
        };
        let unit = Unit {
            marker: unit.marker,
            messages: unit.messages,
            payload: HeldOrder {
                holder: Holder {
                    user_id: order.user_id.clone(),
                    units: order.quantity,
                },
                order_id: order.order_id.clone(),
            },
        };
        match order.status {
            OrderStatus::Confirmed => sales[index].to_cancel.push(unit),
            OrderStatus::Cancelled => sales[index].to_release.push(unit),
            OrderStatus::Cod if order.delivery_confirmed_at.is_some() => {}
            OrderStatus::Cod if cod_window_ended(&order, deps.cod_window, now) => {
                tracing::info!(order_id = %unit.marker, created_at = %order.created_at, "a COD order was not confirmed for delivery in its window: cancelling it");
                sales[index].to_cancel.push(unit)
            }
            OrderStatus::Cod => again.push((
                DueOrder {
                    order_id: order.order_id.clone(),
                    sale_id: order.sale_id.clone(),
                },
                unit.messages,
            )),
            OrderStatus::Paid | OrderStatus::Rejected => {}
        }
    }
    let sends = crate::consumer::join_all(
        again
            .iter()
            .map(|(due, _)| async move { deps.payments.payment_due(due).await }),
    )
    .await;
    for ((due, messages), sent) in again.into_iter().zip(sends) {
        if let Err(err) = sent {
            tracing::error!(order_id = %due.order_id, error = ?err, "failed to send a COD order's PaymentDue again");
            failed.extend(messages);
        }
    }
    for SaleWork {
        sale_id,
        to_cancel,
        mut to_release,
    } in sales
    {
        if !to_cancel.is_empty() {
            let cancels = Through {
                port: store,
                context: &sale_id,
                max_units: store.limits().cancel,
                call: |store, sale_id, units| store.cancel_orders(sale_id, units),
            };
            let outcome = apply_once(to_cancel, &cancels).await;
            failed.extend(outcome.failed_messages());
            emf::orders(OrderStatus::Cancelled.as_str(), outcome.applied.len());
            to_release.extend(outcome.applied);
            // Paid or cancelled since we read them: the payer keeps the unit, and whoever
            // cancelled releases it.
            if !outcome.already_applied.is_empty() {
                tracing::info!(
                    orders = outcome.already_applied.len(),
                    "orders paid or cancelled before their payment window ended"
                );
            }
        }
        for unit in to_release {
            match reservations
                .release(&sale_id, &unit.payload.order_id, Some(&unit.payload.holder))
                .await
            {
                Ok(true) => {
                    tracing::info!(order_id = %unit.marker, "unpaid order cancelled; unit released")
                }
                Ok(false) => {}
                Err(err) => {
                    tracing::error!(order_id = %unit.marker, error = ?err, "failed to release a cancelled order's reservation");
                    failed.extend(unit.messages);
                }
            }
        }
    }
    failed
}

/// The consumer's ports over `store` and `reservations`, a sink that keeps what is sent again
/// (leaked: a test's), and a COD window that the tests' orders, created late in 2026, are
/// all inside.
#[cfg(test)]
pub(crate) fn test_deps<'a>(
    store: &'a crate::seckill::order::fake::MemoryOrders,
    reservations: &'a crate::seckill::order::fake::MemoryReservations,
) -> TimeoutDeps<'a> {
    TimeoutDeps {
        store,
        reservations,
        payments: Box::leak(Box::default()) as &crate::seckill::order::fake::MemoryPayments,
        cod_window: Duration::from_secs(3_650 * 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::UserId;
    use crate::seckill::order::consumer::{self, OrderDeps};
    use crate::seckill::order::fake::placed_units;
    use crate::seckill::order::fake::{
        MemoryOrders, MemoryPayments, MemoryReservations, S1, due, oid, placed,
    };
    use crate::testing::batch;

    /// Runs the payment-timeout consumer on `bodies`, which must all succeed.
    async fn time_out(store: &MemoryOrders, reservations: &MemoryReservations, bodies: &[String]) {
        let failed = handle_batch(test_deps(store, reservations), batch(bodies)).await;
        assert!(failed.is_empty(), "{failed:?}");
    }

    async fn confirmed(orders: &[(&str, &str)]) -> (MemoryOrders, MemoryReservations) {
        let store = MemoryOrders::default();
        store.add_sale(S1, 10);
        let reservations = MemoryReservations::default();
        let payments = MemoryPayments::default();
        let bodies: Vec<String> = orders
            .iter()
            .map(|(order, user)| {
                reservations.reserve(S1, order, user);
                placed(order, S1, user)
            })
            .collect();
        let deps = OrderDeps {
            store: &store,
            reservations: &reservations,
            payments: &payments,
            seal: crate::seckill::admission::seal::Seal::for_tests(),
        };
        assert!(
            consumer::handle_batch(deps, crate::testing::sealed_batch(&bodies))
                .await
                .is_empty()
        );
        (store, reservations)
    }

    /// A sale with a per-user limit of 3 and these `(order, buyer, units, payment method)`
    /// orders reserved and materialized; the sink of their `PaymentDue`s.
    async fn materialized(
        orders: &[(&str, &str, u32, &str)],
    ) -> (MemoryOrders, MemoryReservations, MemoryPayments) {
        let store = MemoryOrders::default();
        store.add_sale_with_limit(S1, 10, 3);
        let reservations = MemoryReservations::default();
        let payments = MemoryPayments::default();
        let bodies: Vec<String> = orders
            .iter()
            .map(|(order, user, units, method)| {
                reservations.reserve_units(S1, order, user, 0, *units);
                placed_units(order, S1, user, *units, Some(method))
            })
            .collect();
        let deps = OrderDeps {
            store: &store,
            reservations: &reservations,
            payments: &payments,
            seal: crate::seckill::admission::seal::Seal::for_tests(),
        };
        assert!(
            consumer::handle_batch(deps, crate::testing::sealed_batch(&bodies))
                .await
                .is_empty()
        );
        (store, reservations, payments)
    }

    #[tokio::test]
    async fn a_payment_due_whose_order_id_is_no_order_id_is_refused_not_applied() {
        let (store, reservations) = confirmed(&[("o1", "a")]).await;
        for bad in crate::seckill::order::tests::NOT_ORDER_IDS {
            let mut body: serde_json::Value = serde_json::from_str(&due("o1", S1)).unwrap();
            body["payload"]["orderId"] = bad.into();
            let failed =
                handle_batch(test_deps(&store, &reservations), batch(&[body.to_string()])).await;
            assert_eq!(failed, ["m0"], "{bad}");
        }
        assert_eq!(store.status("o1"), Some(OrderStatus::Confirmed));
        assert!(reservations.released_of(S1).is_empty());
    }

    #[tokio::test]
    async fn an_unpaid_order_is_cancelled_once_and_its_unit_returns_to_both_stores_once() {
        let (store, reservations) = confirmed(&[("o1", "a"), ("o2", "b")]).await;
        assert_eq!(store.stock(S1), 8);
        let writes = store.sale_writes();
        let bodies = [due("o1", S1), due("o2", S1), due("o1", S1)];
        time_out(&store, &reservations, &bodies).await;
        assert_eq!(store.status("o1"), Some(OrderStatus::Cancelled));
        assert_eq!(store.stock(S1), 10);
        assert_eq!(store.sale_writes(), writes + 1);
        assert_eq!(reservations.released_of(S1), ["o1", "o2"]);
        assert_eq!(reservations.stock_of(S1), 0);

        time_out(&store, &reservations, &bodies).await;
        assert_eq!(store.stock(S1), 10);
        assert_eq!(reservations.stock_of(S1), 0);
        assert_eq!(store.sale_writes(), writes + 1);
    }

    #[tokio::test]
    async fn a_cancelled_order_gives_the_buyers_unit_back_so_the_buyer_may_buy_again() {
        let store = MemoryOrders::default();
        store.add_sale_with_limit(S1, 10, 1);
        let reservations = MemoryReservations::default();
        let payments = MemoryPayments::default();
        let deps = OrderDeps {
            store: &store,
            reservations: &reservations,
            payments: &payments,
            seal: crate::seckill::admission::seal::Seal::for_tests(),
        };
        let place = async |order: &str| {
            reservations.reserve(S1, order, "a");
            let failed = consumer::handle_batch(
                deps,
                crate::testing::sealed_batch(&[placed(order, S1, "a")]),
            );
            assert!(failed.await.is_empty());
        };
        place("o1").await;
        assert_eq!(store.units(S1, "a"), 1);
        let writes = store.sale_writes();
        for _ in 0..2 {
            time_out(&store, &reservations, &[due("o1", S1)]).await;
            assert_eq!(store.status("o1"), Some(OrderStatus::Cancelled));
            assert_eq!(store.units(S1, "a"), 0);
            assert_eq!(store.stock(S1), 10);
            assert_eq!(store.sale_writes(), writes + 1);
        }

        place("o2").await;
        assert_eq!(store.status("o2"), Some(OrderStatus::Confirmed));
        assert_eq!(store.units(S1, "a"), 1);
    }

    #[tokio::test]
    async fn paid_and_cash_on_delivery_orders_and_an_unknown_one_are_left_alone() {
        let (store, reservations) = confirmed(&[("o1", "a"), ("o2", "a")]).await;
        let alice = UserId::parse("a").unwrap();
        assert_eq!(
            store
                .open_payment(&oid(S1, "o1"), &alice, "p1")
                .await
                .unwrap()
                .as_deref(),
            Some("p1")
        );
        assert!(
            store
                .settle_online(&oid(S1, "o1"), "p1", "t")
                .await
                .unwrap()
        );
        assert!(
            store
                .keep_for_delivery(&oid(S1, "o2"), &alice)
                .await
                .unwrap()
        );
        let bodies = [due("o1", S1), due("o2", S1), due("nope", S1)];
        time_out(&store, &reservations, &bodies).await;
        assert_eq!(store.status("o1"), Some(OrderStatus::Paid));
        assert_eq!(store.status("o2"), Some(OrderStatus::Cod));
        assert_eq!(store.stock(S1), 8);
        assert!(reservations.released_of(S1).is_empty());
    }

    #[tokio::test]
    async fn an_unpaid_order_of_several_units_gives_them_all_back_and_cod_is_left_alone() {
        let (store, reservations, _) =
            materialized(&[("o1", "a", 3, "ONLINE"), ("o2", "b", 2, "COD")]).await;
        assert_eq!(store.stock(S1), 5);
        assert_eq!(reservations.stock_of(S1), -5);

        // Both payment windows end: the COD order's own window (a day) lasts.
        time_out(&store, &reservations, &[due("o1", S1), due("o2", S1)]).await;
        assert_eq!(store.status("o1"), Some(OrderStatus::Cancelled));
        assert_eq!(store.status("o2"), Some(OrderStatus::Cod));
        assert_eq!(store.stock(S1), 8);
        assert_eq!((store.units(S1, "a"), store.units(S1, "b")), (0, 2));
        assert_eq!(reservations.stock_of(S1), -2);
        assert_eq!(reservations.bought_of(S1, "a"), 0);
        assert_eq!(reservations.released_of(S1), ["o1"]);
    }

    #[tokio::test]
    async fn a_cod_order_not_confirmed_for_delivery_in_its_window_is_cancelled_a_confirmed_one_kept()
     {
        let (store, reservations, payments) =
            materialized(&[("o1", "a", 2, "COD"), ("o2", "b", 1, "COD")]).await;
        // Each COD order's PaymentDue is on its way.
        assert_eq!(payments.sent().len(), 2);
        let o2 = store
            .confirm_delivery(&oid(S1, "o2"), "2026-12-01T09:00:00Z")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            o2.delivery_confirmed_at.as_deref(),
            Some("2026-12-01T09:00:00Z")
        );
        let created = store
            .order(&oid(S1, "o1"))
            .await
            .unwrap()
            .unwrap()
            .created_at;
        let created = OffsetDateTime::parse(&created, &Rfc3339).unwrap();
        let resent = MemoryPayments::default();
        let window = Duration::from_secs(3_600);
        let timeouts = TimeoutDeps {
            store: &store,
            reservations: &reservations,
            payments: &resent,
            cod_window: window,
        };
        let dues = [due("o1", S1), due("o2", S1)];

        // Within the window: o1 waits, its message sent again; o2 is confirmed, nothing more.
        let within = created + time::Duration::minutes(15);
        assert!(
            handle_batch_at(timeouts, batch(&dues), within)
                .await
                .is_empty()
        );
        assert_eq!(store.status("o1"), Some(OrderStatus::Cod));
        let again: Vec<String> = resent
            .sent()
            .iter()
            .map(|d| d.order_id.to_string())
            .collect();
        assert_eq!(again, [oid(S1, "o1").to_string()]);

        // Past it: o1 is cancelled, its units back in both stores; o2 is kept.
        let past = created + window;
        assert!(
            handle_batch_at(timeouts, batch(&dues), past)
                .await
                .is_empty()
        );
        assert_eq!(store.status("o1"), Some(OrderStatus::Cancelled));
        assert_eq!(store.status("o2"), Some(OrderStatus::Cod));
        assert_eq!(store.stock(S1), 9);
        assert_eq!((store.units(S1, "a"), store.units(S1, "b")), (0, 1));
        assert_eq!(reservations.released_of(S1), ["o1"]);
        assert_eq!(resent.sent().len(), 1, "nothing sent again past the window");
        // Confirming a cancelled order changes nothing.
        let late = store
            .confirm_delivery(&oid(S1, "o1"), "2026-12-02T09:00:00Z")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(late.status, OrderStatus::Cancelled);
        assert_eq!(late.delivery_confirmed_at, None);
    }

    #[test]
    fn the_cod_window_is_a_day_unless_set_and_never_zero() {
        let env = |value: &str| Env::from_pairs([("COD_CONFIRM_WINDOW_SECONDS", value)]);
        assert_eq!(
            cod_window_from_env(&Env::from_pairs([])).unwrap(),
            Duration::from_secs(86_400)
        );
        assert_eq!(
            cod_window_from_env(&env("90")).unwrap(),
            Duration::from_secs(90)
        );
        assert!(cod_window_from_env(&env("0")).is_err());
        assert!(cod_window_from_env(&env("soon")).is_err());
    }
}
