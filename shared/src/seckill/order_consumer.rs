//! The order consumer: materializes `OrderPlaced` events in the commerce table, writing each
//! sale's stock item once per batch (it is the hottest item of a sale), never overselling.
//!
//! Per sale and batch: first one Redis round trip (`claim.lua`, via [`Reservations::claim`])
//! takes the orders over from the `pending` worklist, atomically against `release.lua`. An
//! order whose unit was already released (the reconciliation gave it up after its grace
//! period while the queue lagged, or the order route after a send that failed ambiguously) is
//! put as REJECTED, with no stock change and no further release: its unit is back in Redis
//! and must not also be taken from DynamoDB. The claimed orders can no longer be released
//! without a holder, so confirming them is safe.
//!
//! Then one transaction puts the claimed orders (CONFIRMED, `attribute_not_exists`, so a
//! redelivered order drops out) and takes their units from `stockRemaining`, which must stay
//! at least 0. When that condition fails (Redis admitted more than DynamoDB holds, e.g.
//! after losing data), the sale is read again and as many orders as it still holds are
//! confirmed, first come first served; the rest are put as REJECTED and their reservations
//! released. After a commit each confirmed order gets a `PaymentDue`.
//!
//! Every effect is idempotent and is redone when the message comes back: the claim answers
//! the same for an order it claimed before (neither pending nor released), and a redelivered
//! order that already exists repeats the effects its stored status calls for.

use super::keys::PaymentDue;
use super::orders::{
    MAX_ORDERS_PER_COMMIT, NewOrder, OrderStatus, OrderStore, PaymentDueSink, Reservations,
    parse_order_placed,
};
use crate::consumer::{Message, parse_each};
use crate::once::{Commit, Rejected, Unit, apply_once, merge};
use async_trait::async_trait;

/// How often one chunk may meet a failed stock condition before it is retried later.
const MAX_STOCK_ATTEMPTS: usize = 3;

/// What the consumer works with.
#[derive(Clone, Copy)]
pub struct OrderDeps<'a> {
    pub store: &'a dyn OrderStore,
    pub reservations: &'a dyn Reservations,
    pub payments: &'a dyn PaymentDueSink,
}

struct RejectCommit<'a>(&'a dyn OrderStore);

#[async_trait]
impl Commit<NewOrder> for RejectCommit<'_> {
    async fn commit(&self, units: &[Unit<NewOrder>]) -> Result<(), Rejected> {
        self.0.reject_orders(units).await
    }
}

/// Handles one SQS batch; returns the ids of the messages to retry.
#[tracing::instrument(skip_all, fields(messages = messages.len()))]
pub async fn handle_batch(deps: OrderDeps<'_>, messages: Vec<Message>) -> Vec<String> {
    let parsed = parse_each(messages, parse_order_placed);
    let mut failed = parsed.refused;
    let mut sales: Vec<(String, Vec<Unit<NewOrder>>)> = Vec::new();
    for (message, order) in parsed.events {
        let unit = Unit::new(order.order_id.clone(), message, order);
        match sales
            .iter_mut()
            .find(|(sale, _)| *sale == unit.payload.sale_id)
        {
            Some((_, units)) => units.push(unit),
            None => sales.push((unit.payload.sale_id.clone(), vec![unit])),
        }
    }
    for (sale_id, units) in sales {
        failed.extend(materialize_sale(deps, &sale_id, units).await);
    }
    failed
}

/// What became of one sale's orders in this batch.
#[derive(Default)]
struct Sorted {
    confirmed: Vec<Unit<NewOrder>>,
    rejected: Vec<Unit<NewOrder>>,
    existing: Vec<Unit<NewOrder>>,
    failed: Vec<String>,
}

/// Materializes one sale's orders; returns the messages to retry.
#[tracing::instrument(skip(deps, units), fields(orders = units.len()))]
async fn materialize_sale(
    deps: OrderDeps<'_>,
    sale_id: &str,
    units: Vec<Unit<NewOrder>>,
) -> Vec<String> {
    let units = merge(units);
    let order_ids: Vec<String> = units.iter().map(|unit| unit.marker.clone()).collect();
    let released = match deps.reservations.claim(sale_id, &order_ids).await {
        Ok(released) => released,
        Err(err) => {
            tracing::error!(error = ?err, "failed to claim the reservations in Redis");
            return units.into_iter().flat_map(|unit| unit.messages).collect();
        }
    };
    let (withdrawn, mut rest): (Vec<_>, Vec<_>) = units
        .into_iter()
        .partition(|unit| released.contains(&unit.marker));
    if !withdrawn.is_empty() {
        tracing::warn!(
            sale_id,
            orders = withdrawn.len(),
            "rejecting orders whose reservations were already released"
        );
    }

    let mut sorted = Sorted::default();
    while !rest.is_empty() {
        let tail = rest.split_off(rest.len().min(MAX_ORDERS_PER_COMMIT));
        let chunk = std::mem::replace(&mut rest, tail);
        confirm_chunk(deps.store, sale_id, chunk, &mut sorted).await;
    }

    if !sorted.rejected.is_empty() {
        tracing::warn!(
            sale_id,
            orders = sorted.rejected.len(),
            "DynamoDB's stock is exhausted: rejecting orders that Redis admitted"
        );
    }
    let mut to_reject = std::mem::take(&mut sorted.rejected);
    to_reject.extend(withdrawn);
    if !to_reject.is_empty() {
        let outcome = apply_once(to_reject, MAX_ORDERS_PER_COMMIT, &RejectCommit(deps.store)).await;
        sorted.failed.extend(outcome.failed_messages());
        sorted.rejected = outcome.applied;
        sorted.existing.extend(outcome.already_applied);
    }

    // Redelivered orders: redo what their stored status calls for.
    let mut to_release: Vec<(Unit<NewOrder>, String)> = sorted
        .rejected
        .into_iter()
        .map(|unit| {
            let user = unit.payload.user_id.to_string();
            (unit, user)
        })
        .collect();
    let mut to_confirm = sorted.confirmed;
    for unit in sorted.existing {
        match deps.store.order(&unit.marker).await {
            Ok(Some(order)) => match order.status {
                OrderStatus::Confirmed => to_confirm.push(unit),
                OrderStatus::Rejected => to_release.push((unit, order.user_id.to_string())),
                OrderStatus::Paid | OrderStatus::Cancelled => {}
            },
            Ok(None) => {
                tracing::error!(order_id = %unit.marker, "an order that existed is gone");
                sorted.failed.extend(unit.messages);
            }
            Err(err) => {
                tracing::error!(order_id = %unit.marker, error = ?anyhow::Error::from(err), "failed to read an order");
                sorted.failed.extend(unit.messages);
            }
        }
    }
    // A released order's unit is already back: releasing it again would be a no-op anyway.
    to_release.retain(|(unit, _)| !released.contains(&unit.marker));

    // The claim removed every order of the batch from `pending`: nothing left to confirm there.
    let mut failed = sorted.failed;
    for unit in to_confirm {
        let due = PaymentDue {
            order_id: unit.marker.clone(),
            sale_id: sale_id.to_owned(),
        };
        if let Err(err) = deps.payments.payment_due(&due).await {
            tracing::error!(order_id = %unit.marker, error = ?err, "failed to send PaymentDue");
            failed.extend(unit.messages);
        }
    }
    for (unit, user) in to_release {
        if let Err(err) = deps
            .reservations
            .release(sale_id, &unit.marker, Some(&user))
            .await
        {
            tracing::error!(order_id = %unit.marker, error = ?err, "failed to release a rejected order's reservation");
            failed.extend(unit.messages);
        }
    }
    failed
}

/// Confirms what the sale's stock allows of one chunk, sorting every unit.
async fn confirm_chunk(
    store: &dyn OrderStore,
    sale_id: &str,
    mut chunk: Vec<Unit<NewOrder>>,
    sorted: &mut Sorted,
) {
    let mut stock_attempts = 0;
    // Each round commits, removes a unit or counts an attempt, so this ends.
    while !chunk.is_empty() {
        match store.confirm_orders(sale_id, &chunk).await {
            Ok(()) => {
                sorted.confirmed.append(&mut chunk);
            }
            Err(Rejected::AlreadyApplied(index)) if index < chunk.len() => {
                sorted.existing.push(chunk.remove(index));
            }
            Err(Rejected::Aggregate) if stock_attempts < MAX_STOCK_ATTEMPTS => {
                stock_attempts += 1;
                match store.stock_remaining(sale_id).await {
                    Ok(stock) => {
                        let fits = usize::try_from(stock.unwrap_or(0)).unwrap_or(0);
                        if fits < chunk.len() {
                            sorted.rejected.extend(chunk.split_off(fits));
                        }
                    }
                    Err(err) => {
                        tracing::error!(error = ?anyhow::Error::from(err), "failed to read the sale's stock");
                        sorted
                            .failed
                            .extend(chunk.drain(..).flat_map(|unit| unit.messages));
                    }
                }
            }
            Err(err) => {
                tracing::error!(error = ?anyhow::Error::from(err), orders = chunk.len(), "failed to confirm orders");
                sorted
                    .failed
                    .extend(chunk.drain(..).flat_map(|unit| unit.messages));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seckill::memory::{
        GHOST, MemoryOrders, MemoryPayments, MemoryReservations, S1, S2, placed,
    };

    fn batch(bodies: &[String]) -> Vec<Message> {
        bodies
            .iter()
            .enumerate()
            .map(|(i, body)| Message {
                id: format!("m{i}"),
                body: body.clone(),
            })
            .collect()
    }

    struct World {
        store: MemoryOrders,
        reservations: MemoryReservations,
        payments: MemoryPayments,
    }

    impl World {
        fn new(sale: &str, stock: i64) -> Self {
            let world = Self {
                store: MemoryOrders::default(),
                reservations: MemoryReservations::default(),
                payments: MemoryPayments::default(),
            };
            world.store.add_sale(sale, stock);
            world
        }

        fn deps(&self) -> OrderDeps<'_> {
            OrderDeps {
                store: &self.store,
                reservations: &self.reservations,
                payments: &self.payments,
            }
        }
    }

    #[tokio::test]
    async fn a_batch_writes_each_sale_once_and_redelivery_changes_nothing() {
        let world = World::new(S1, 10);
        world.store.add_sale(S2, 10);
        let bodies = [
            placed("o1", S1, "a"),
            placed("o2", S1, "b"),
            placed("o2", S1, "b"),
            placed("o3", S2, "c"),
            "garbage".to_owned(),
        ];
        for (o, s, u) in [("o1", S1, "a"), ("o2", S1, "b"), ("o3", S2, "c")] {
            world.reservations.reserve(s, o, u);
        }
        assert_eq!(handle_batch(world.deps(), batch(&bodies)).await, ["m4"]);
        assert_eq!(world.store.stock(S1), 8);
        assert_eq!(world.store.stock(S2), 9);
        assert_eq!(world.store.sale_writes(), 2);
        assert_eq!(world.store.status("o2"), Some(OrderStatus::Confirmed));
        assert!(world.reservations.pending_of(S1).is_empty());
        assert_eq!(world.payments.sent().len(), 3);

        assert_eq!(handle_batch(world.deps(), batch(&bodies)).await, ["m4"]);
        assert_eq!(world.store.stock(S1), 8);
        assert_eq!(world.store.sale_writes(), 2);
        assert_eq!(world.store.orders(), 3);
        // The effects after the commit are repeated, harmlessly.
        assert_eq!(world.payments.sent().len(), 6);
    }

    #[tokio::test]
    async fn orders_beyond_dynamodb_stock_are_rejected_and_released() {
        let world = World::new(S1, 2);
        for (o, u) in [("o1", "a"), ("o2", "b"), ("o3", "c")] {
            world.reservations.reserve(S1, o, u);
        }
        let bodies = [
            placed("o1", S1, "a"),
            placed("o2", S1, "b"),
            placed("o3", S1, "c"),
        ];
        assert!(handle_batch(world.deps(), batch(&bodies)).await.is_empty());
        assert_eq!(world.store.stock(S1), 0);
        assert_eq!(world.store.status("o1"), Some(OrderStatus::Confirmed));
        assert_eq!(world.store.status("o2"), Some(OrderStatus::Confirmed));
        assert_eq!(world.store.status("o3"), Some(OrderStatus::Rejected));
        assert_eq!(world.reservations.released_of(S1), ["o3"]);
        assert_eq!(world.payments.sent().len(), 2);

        assert!(handle_batch(world.deps(), batch(&bodies)).await.is_empty());
        assert_eq!(world.store.stock(S1), 0);
        assert_eq!(world.reservations.released_of(S1), ["o3"]);
        // Three reserved, one given back.
        assert_eq!(world.reservations.stock_of(S1), -2);
    }

    #[tokio::test]
    async fn an_unknown_sale_rejects_its_orders() {
        let world = World::new(S1, 2);
        world.reservations.reserve(GHOST, "o1", "a");
        let bodies = [placed("o1", GHOST, "a")];
        assert!(handle_batch(world.deps(), batch(&bodies)).await.is_empty());
        assert_eq!(world.store.status("o1"), Some(OrderStatus::Rejected));
    }

    #[tokio::test]
    async fn a_late_order_whose_reservation_was_released_is_rejected_without_stock() {
        let world = World::new(S1, 10);
        world.reservations.reserve_at(S1, "late", "a", 1_000);
        world.reservations.reserve_at(S1, "ok", "b", 100_000);
        // The queue lagged beyond the grace period: the reconciliation gives "late" back.
        let grace = std::time::Duration::from_secs(60);
        let summary =
            crate::seckill::reconcile::reconcile(&world.store, &world.reservations, grace, 110_000)
                .await
                .unwrap();
        assert_eq!(summary.released, 1);
        assert_eq!(world.reservations.stock_of(S1), -1);

        let bodies = [placed("late", S1, "a"), placed("ok", S1, "b")];
        for _ in 0..2 {
            assert!(handle_batch(world.deps(), batch(&bodies)).await.is_empty());
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
            .map(|due| due.order_id)
            .collect();
        assert_eq!(due, ["ok", "ok"]);
    }

    #[tokio::test]
    async fn a_claimed_order_is_not_released_and_its_retry_confirms_it() {
        let world = World::new(S1, 10);
        world.reservations.reserve_at(S1, "o1", "a", 1_000);
        // The consumer claimed it, then its commit failed: the message will come back.
        let ids = ["o1".to_owned()];
        assert!(world.reservations.claim(S1, &ids).await.unwrap().is_empty());
        let grace = std::time::Duration::from_secs(60);
        let summary =
            crate::seckill::reconcile::reconcile(&world.store, &world.reservations, grace, 110_000)
                .await
                .unwrap();
        assert_eq!(summary.released, 0);
        // Neither pending nor released: still the consumer's.
        assert!(world.reservations.claim(S1, &ids).await.unwrap().is_empty());
        assert!(!world.reservations.release(S1, "o1", None).await.unwrap());

        let bodies = [placed("o1", S1, "a")];
        assert!(handle_batch(world.deps(), batch(&bodies)).await.is_empty());
        assert_eq!(world.store.status("o1"), Some(OrderStatus::Confirmed));
        assert_eq!(world.store.stock(S1), 9);
        assert_eq!(world.reservations.stock_of(S1), -1);
        assert!(world.reservations.released_of(S1).is_empty());
    }

    #[tokio::test]
    async fn failures_after_the_commit_retry_the_message_and_are_redone_once() {
        let world = World::new(S1, 5);
        world.reservations.reserve(S1, "o1", "a");
        world.payments.fail(true);
        let bodies = [placed("o1", S1, "a")];
        assert_eq!(handle_batch(world.deps(), batch(&bodies)).await, ["m0"]);
        world.payments.fail(false);
        assert!(handle_batch(world.deps(), batch(&bodies)).await.is_empty());
        assert_eq!(world.store.stock(S1), 4);
        assert_eq!(world.payments.sent().len(), 1);
    }
}
