//! The payment-timeout consumer: when an order's payment window ends (its `PaymentDue`
//! arrives through the delay queue) and it is still CONFIRMED, it is cancelled and its unit
//! goes back to both stores, exactly once.
//!
//! DynamoDB: per sale and batch, one transaction moves the orders CONFIRMED → CANCELLED
//! (conditionally, so a paid or already cancelled order drops out), takes them from each
//! holder's buyer item (`units`, the per-user limit's final guard, so that the buyer may buy
//! again) and adds their units to `stockRemaining` once. Redis: the release script, once per order thanks to the sale's
//! `released` set. A message that finds its order already CANCELLED repeats the release, a
//! no-op unless the first attempt crashed between the two stores.

use crate::consumer::{Message, parse_each};
use crate::emf;
use crate::ids::SaleId;
use crate::once::{Through, Unit, apply_once, merge};
use crate::seckill::admission::Holder;
use crate::seckill::order::{HeldOrder, OrderStatus, OrderStore, Reservations, parse_payment_due};

/// One sale's orders in a batch (marker = order id, payload = the order and its holder): those
/// to cancel, and those to release.
struct SaleWork {
    sale_id: SaleId,
    to_cancel: Vec<Unit<HeldOrder>>,
    to_release: Vec<Unit<HeldOrder>>,
}

/// Handles one SQS batch; returns the ids of the messages to retry.
#[tracing::instrument(skip_all, fields(messages = messages.len()))]
pub async fn handle_batch(
    store: &dyn OrderStore,
    reservations: &dyn Reservations,
    messages: Vec<Message>,
) -> Vec<String> {
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
                order_id: order.order_id,
            },
        };
        match order.status {
            OrderStatus::Confirmed => sales[index].to_cancel.push(unit),
            OrderStatus::Cancelled => sales[index].to_release.push(unit),
            OrderStatus::Paid | OrderStatus::Cod | OrderStatus::Rejected => {}
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
        let failed = handle_batch(store, reservations, batch(bodies)).await;
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

    #[tokio::test]
    async fn a_payment_due_whose_order_id_is_no_order_id_is_refused_not_applied() {
        let (store, reservations) = confirmed(&[("o1", "a")]).await;
        for bad in crate::seckill::order::tests::NOT_ORDER_IDS {
            let mut body: serde_json::Value = serde_json::from_str(&due("o1", S1)).unwrap();
            body["payload"]["orderId"] = bad.into();
            let failed = handle_batch(&store, &reservations, batch(&[body.to_string()])).await;
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
        let store = MemoryOrders::default();
        store.add_sale_with_limit(S1, 10, 3);
        let reservations = MemoryReservations::default();
        let payments = MemoryPayments::default();
        let deps = OrderDeps {
            store: &store,
            reservations: &reservations,
            payments: &payments,
            seal: crate::seckill::admission::seal::Seal::for_tests(),
        };
        reservations.reserve_units(S1, "o1", "a", 0, 3);
        reservations.reserve_units(S1, "o2", "b", 0, 2);
        let bodies = [
            placed_units("o1", S1, "a", 3, Some("ONLINE")),
            placed_units("o2", S1, "b", 2, Some("COD")),
        ];
        assert!(
            consumer::handle_batch(deps, crate::testing::sealed_batch(&bodies))
                .await
                .is_empty()
        );
        assert_eq!(store.stock(S1), 5);
        assert_eq!(reservations.stock_of(S1), -5);

        // Both windows end (the COD order never had one; a stray message changes nothing).
        time_out(&store, &reservations, &[due("o1", S1), due("o2", S1)]).await;
        assert_eq!(store.status("o1"), Some(OrderStatus::Cancelled));
        assert_eq!(store.status("o2"), Some(OrderStatus::Cod));
        assert_eq!(store.stock(S1), 8);
        assert_eq!((store.units(S1, "a"), store.units(S1, "b")), (0, 2));
        assert_eq!(reservations.stock_of(S1), -2);
        assert_eq!(reservations.bought_of(S1, "a"), 0);
        assert_eq!(reservations.released_of(S1), ["o1"]);
    }
}
