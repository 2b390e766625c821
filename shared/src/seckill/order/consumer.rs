//! The order consumer: materializes `OrderPlaced` events in the commerce table, writing each
//! sale's stock item once per batch (it is the hottest item of a sale), never overselling.
//!
//! Per sale and batch: first one Redis round trip (`claim.lua`, via [`Reservations::claim`])
//! takes the orders over from the `pending` worklist, atomically against `release.lua`, and
//! answers what Redis holds of each. The consumer materializes that and the sale's price, not
//! what a message says: an order whose reservation names another buyer or quantity than its
//! message, or that Redis knows nothing of, is refused (handed back, and in the end the DLQ's:
//! `OrdersRefused`, `ForgedOrderAlarm`) and writes nothing, unless the message carries the
//! order route's seal ([`crate::seckill::admission::seal`]): a sealed order that Redis forgot
//! (it lost its data after the admission) is still materialized, under DynamoDB's guards. A
//! seal that does not verify is refused whatever Redis holds. An
//! order whose unit was already released (the reconciliation gave it up after its grace
//! period while the queue lagged, or the order route after a send that failed ambiguously) is
//! put as REJECTED, with no stock change and no further release: its unit is back in Redis
//! and must not also be taken from DynamoDB. The claimed orders can no longer be released
//! without a holder, so confirming them is safe.
//!
//! Then, per chunk of the claimed orders, one transaction puts them (CONFIRMED, or COD when
//! cash on delivery was chosen at checkout; `attribute_not_exists`, so a redelivered order
//! drops out), adds each buyer's orders' quantities to the buyer's item (`units`, which must
//! stay at most the sale's `perUserLimit`), and takes every order's quantity from
//! `stockRemaining`, which must stay at least 0. These are DynamoDB's final
//! guards: Redis enforces both first, but when it lost its data (a flush, a restart without
//! persistence) and was preheated again, its stock and its `bought` hash start over and it
//! admits more than DynamoDB holds, or a second order of a buyer who already holds the limit.
//! When the stock condition fails, the sale is read again and the orders whose units it still
//! holds are confirmed, first come first served (an order whose quantity no longer fits is
//! skipped, a later smaller one may still fit); when a buyer's condition fails, what the
//! buyer holds is read and the buyer's orders that the limit leaves room for are confirmed,
//! the same way. The rest are put as REJECTED and their reservations released. After a
//! commit each CONFIRMED order gets a `PaymentDue`, and so does each COD order: it must be
//! confirmed for delivery in the stack's COD window ([`crate::seckill::payment::timeout`]).
//!
//! The per-user limit comes from the sale item, read once per sale and batch with its stock
//! ([`OrderStore::sale_guards`]), rather than in the event: the sale item is the authority
//! Redis is preheated from, a limit never changes once the sale is created, and `OrderPlaced`
//! v1 refuses unknown fields, so carrying it would take a v2 event and a consumer deployed
//! first. The read is one small strongly consistent `GetItem` per sale and batch, and it
//! writes nothing, so the stock item stays written once per chunk.
//!
//! Every effect is idempotent and is redone when the message comes back: the claim answers
//! the same for an order it claimed before (neither pending nor released), and a redelivered
//! order that already exists repeats the effects its stored status calls for.

use crate::consumer::{Message, parse_each};
use crate::emf;
use crate::ids::{OrderId, SaleId, UserId};
use crate::once::{Through, Unit, apply_once, merge};
use crate::seckill::admission::Holder;
use crate::seckill::admission::seal::Seal;
use crate::seckill::order::{
    Claim, ConfirmRejected, DueOrder, NewOrder, OrderStatus, OrderStore, PaymentDueSink,
    Reservations, parse_order_placed,
};
use std::collections::{HashMap, HashSet};

/// How often one chunk may meet a failed stock or limit condition that the fresh read does
/// not explain (a concurrent cancellation gave units back) before it is retried later.
const MAX_GUARD_ATTEMPTS: usize = 3;

/// What the consumer works with.
#[derive(Clone, Copy)]
pub struct OrderDeps<'a> {
    pub store: &'a dyn OrderStore,
    pub reservations: &'a dyn Reservations,
    pub payments: &'a dyn PaymentDueSink,
    /// What the order route seals its messages with.
    pub seal: &'a Seal,
}

/// Handles one SQS batch; returns the ids of the messages to retry.
#[tracing::instrument(skip_all, fields(messages = messages.len()))]
pub async fn handle_batch(deps: OrderDeps<'_>, messages: Vec<Message>) -> Vec<String> {
    let mut failed = Vec::new();
    let mut sealed = HashSet::new();
    let mut unrefused = Vec::with_capacity(messages.len());
    for message in messages {
        match &message.seal {
            Some(seal) if deps.seal.verifies(&message.body, seal) => {
                sealed.insert(message.id.clone());
                unrefused.push(message);
            }
            Some(_) => {
                tracing::warn!(message_id = %message.id, reason = "BAD_SEAL", "refusing an order message whose seal does not verify");
                emf::orders_refused(1);
                failed.push(message.id);
            }
            None => unrefused.push(message),
        }
    }
    let parsed = parse_each(unrefused, parse_order_placed);
    failed.extend(parsed.refused);
    let mut sales: Vec<(SaleId, Vec<Unit<NewOrder>>)> = Vec::new();
    for (message, order) in parsed.events {
        let unit = Unit::new(order.order_id.to_string(), message, order);
        match sales
            .iter_mut()
            .find(|(sale, _)| *sale == unit.payload.sale_id)
        {
            Some((_, units)) => units.push(unit),
            None => sales.push((unit.payload.sale_id.clone(), vec![unit])),
        }
    }
    for (sale_id, units) in sales {
        failed.extend(materialize_sale(deps, &sale_id, units, &sealed).await);
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

/// Why an order message is refused, as `OrdersRefused` counts it.
fn refusal(claim: &Claim, unit: &Unit<NewOrder>, sealed: bool) -> Option<&'static str> {
    match claim {
        // Its REJECTED item would name the message's buyer.
        Claim::Released => (!sealed).then_some("NO_RESERVATION"),
        Claim::Held(held) => (held.user_id != unit.payload.user_id.as_str()
            || held.units != unit.payload.quantity)
            .then_some("MISMATCH"),
        Claim::Unknown => (!sealed).then_some("NO_RESERVATION"),
    }
}

/// Materializes one sale's orders; returns the messages to retry. `sealed` holds the ids of
/// the messages whose seal verified.
#[tracing::instrument(skip(deps, units, sealed), fields(orders = units.len()))]
async fn materialize_sale(
    deps: OrderDeps<'_>,
    sale_id: &SaleId,
    units: Vec<Unit<NewOrder>>,
    sealed: &HashSet<String>,
) -> Vec<String> {
    let mut order_ids: Vec<OrderId> = Vec::new();
    for unit in &units {
        if !order_ids.contains(&unit.payload.order_id) {
            order_ids.push(unit.payload.order_id.clone());
        }
    }
    let claims: HashMap<OrderId, Claim> = match deps.reservations.claim(sale_id, &order_ids).await {
        Ok(claims) => order_ids.into_iter().zip(claims).collect(),
        Err(err) => {
            tracing::error!(error = ?err, "failed to claim the reservations in Redis");
            return units.into_iter().flat_map(|unit| unit.messages).collect();
        }
    };
    // Each message on its own, before duplicates are merged: a forged copy of an order must
    // not take the genuine message down with it.
    let mut vouched = Vec::new();
    let mut refused = Vec::new();
    for unit in units {
        let claim = &claims[&unit.payload.order_id];
        let is_sealed = unit.messages.iter().all(|id| sealed.contains(id));
        if let Some(reason) = refusal(claim, &unit, is_sealed) {
            tracing::warn!(
                %sale_id,
                order_id = %unit.marker,
                reason,
                ?claim,
                "refusing an order message that no reservation in Redis and no seal vouches for"
            );
            emf::orders_refused(1);
            refused.extend(unit.messages);
        } else {
            vouched.push(unit);
        }
    }
    let mut released = HashSet::new();
    let (withdrawn, mut rest): (Vec<_>, Vec<_>) = merge(vouched)
        .into_iter()
        .partition(|unit| claims[&unit.payload.order_id] == Claim::Released);
    for unit in &withdrawn {
        released.insert(unit.payload.order_id.clone());
    }
    if !withdrawn.is_empty() {
        tracing::warn!(
            %sale_id,
            orders = withdrawn.len(),
            "rejecting orders whose reservations were already released"
        );
    }

    let mut sorted = Sorted {
        failed: refused,
        ..Sorted::default()
    };
    if !rest.is_empty() {
        match deps.store.sale_guards(sale_id).await {
            Ok(Some(guards)) => {
                // The sale's price, which no longer changes once it is published, not the
                // message's.
                for unit in &mut rest {
                    unit.payload.price_cents = guards.price_cents;
                }
                while !rest.is_empty() {
                    let chunk = next_chunk(&mut rest, deps.store);
                    confirm_chunk(
                        deps.store,
                        sale_id,
                        guards.per_user_limit,
                        chunk,
                        &mut sorted,
                    )
                    .await;
                }
            }
            Ok(None) => {
                tracing::warn!(%sale_id, "orders of an unknown sale");
                sorted.rejected.append(&mut rest);
            }
            Err(err) => {
                tracing::error!(error = ?anyhow::Error::from(err), "failed to read the sale");
                sorted
                    .failed
                    .extend(rest.drain(..).flat_map(|unit| unit.messages));
            }
        }
    }
    let mut to_reject = std::mem::take(&mut sorted.rejected);
    to_reject.extend(withdrawn);
    if !to_reject.is_empty() {
        let rejects = Through {
            port: deps.store,
            context: (),
            max_units: deps.store.limits().reject,
            call: |store, (), units| store.reject_orders(units),
        };
        let outcome = apply_once(to_reject, &rejects).await;
        sorted.failed.extend(outcome.failed_messages());
        sorted.rejected = outcome.applied;
        emf::orders(OrderStatus::Rejected.as_str(), sorted.rejected.len());
        sorted.existing.extend(outcome.already_applied);
    }

    // Redelivered orders: redo what their stored status calls for.
    let mut to_release: Vec<(Unit<NewOrder>, Holder)> = sorted
        .rejected
        .into_iter()
        .map(|unit| {
            let holder = holder_of(&unit.payload);
            (unit, holder)
        })
        .collect();
    // Every order confirmed or kept for delivery gets its PaymentDue.
    let mut to_confirm = sorted.confirmed;
    let cod = to_confirm
        .iter()
        .filter(|unit| unit.payload.confirmed_status() == OrderStatus::Cod)
        .count();
    emf::orders(OrderStatus::Confirmed.as_str(), to_confirm.len() - cod);
    emf::orders(OrderStatus::Cod.as_str(), cod);
    for unit in sorted.existing {
        match deps.store.order(&unit.payload.order_id).await {
            Ok(Some(order)) => match order.status {
                OrderStatus::Confirmed | OrderStatus::Cod => to_confirm.push(unit),
                OrderStatus::Rejected => {
                    let holder = holder_of(&unit.payload);
                    to_release.push((unit, holder));
                }
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
    to_release.retain(|(unit, _)| !released.contains(&unit.payload.order_id));

    // The claim removed every order of the batch from `pending`: nothing left to confirm there.
    let mut failed = sorted.failed;
    // Independent sends: side by side, so a batch of confirmations costs one round trip to
    // SQS, not one per order (which could outlast the invocation).
    let sends = crate::consumer::join_all(to_confirm.iter().map(|unit| async move {
        let due = DueOrder {
            order_id: unit.payload.order_id.clone(),
            sale_id: sale_id.clone(),
        };
        deps.payments.payment_due(&due).await
    }))
    .await;
    for (unit, sent) in to_confirm.into_iter().zip(sends) {
        if let Err(err) = sent {
            tracing::error!(order_id = %unit.marker, error = ?err, "failed to send PaymentDue");
            failed.extend(unit.messages);
        }
    }
    for (unit, holder) in to_release {
        if let Err(err) = deps
            .reservations
            .release(sale_id, &unit.payload.order_id, Some(&holder))
            .await
        {
            tracing::error!(order_id = %unit.marker, error = ?err, "failed to release a rejected order's reservation");
            failed.extend(unit.messages);
        }
    }
    failed
}

/// Who holds the order's units, as a release names them.
fn holder_of(order: &NewOrder) -> Holder {
    Holder {
        user_id: order.user_id.clone(),
        units: order.quantity,
    }
}

/// Takes from the front of `rest` the longest run of orders that one confirmation of `store`
/// takes, whose count depends on how many distinct buyers they have.
fn next_chunk(rest: &mut Vec<Unit<NewOrder>>, store: &dyn OrderStore) -> Vec<Unit<NewOrder>> {
    let take = {
        let mut buyers: HashSet<&UserId> = HashSet::new();
        let mut take = 0;
        for unit in rest.iter() {
            let new_buyer = !buyers.contains(&unit.payload.user_id);
            if !(store.limits().confirm_takes)(take + 1, buyers.len() + usize::from(new_buyer)) {
                break;
            }
            buyers.insert(&unit.payload.user_id);
            take += 1;
        }
        take
    };
    let tail = rest.split_off(take);
    std::mem::replace(rest, tail)
}

/// The orders of `orders` (creation time, id, units) that `room` units hold, first come first
/// served (by reservation time, then by the time-ordered id): an order that no longer fits
/// is skipped, and a later smaller one may still fit.
fn fitting(mut orders: Vec<(&str, &str, i64)>, mut room: i64) -> HashSet<String> {
    orders.sort_unstable();
    let mut kept = HashSet::new();
    for (_, order, units) in orders {
        if units <= room {
            room -= units;
            kept.insert(order.to_owned());
        }
    }
    kept
}

/// Removes from `chunk` and answers the orders of those that `among` picks that `room` units
/// do not hold ([`fitting`]).
fn beyond_room(
    chunk: &mut Vec<Unit<NewOrder>>,
    among: impl Fn(&NewOrder) -> bool,
    room: i64,
) -> Vec<Unit<NewOrder>> {
    let theirs = chunk
        .iter()
        .filter(|unit| among(&unit.payload))
        .map(|unit| {
            let order = &unit.payload;
            (
                order.created_at.as_str(),
                unit.marker.as_str(),
                order.units(),
            )
        })
        .collect();
    let kept = fitting(theirs, room);
    let (keep, excess) = std::mem::take(chunk)
        .into_iter()
        .partition(|unit| !among(&unit.payload) || kept.contains(&unit.marker));
    *chunk = keep;
    excess
}

/// Confirms what the sale's stock and the buyers' limit allow of one chunk, sorting every
/// unit.
async fn confirm_chunk(
    store: &dyn OrderStore,
    sale_id: &SaleId,
    per_user_limit: u32,
    mut chunk: Vec<Unit<NewOrder>>,
    sorted: &mut Sorted,
) {
    let mut attempts = 0;
    let fail = |chunk: &mut Vec<Unit<NewOrder>>, sorted: &mut Sorted| {
        sorted
            .failed
            .extend(chunk.drain(..).flat_map(|unit| unit.messages));
    };
    // Each round commits, removes a unit or counts an attempt, so this ends.
    while !chunk.is_empty() {
        match store.confirm_orders(sale_id, per_user_limit, &chunk).await {
            Ok(()) => {
                sorted.confirmed.append(&mut chunk);
            }
            Err(ConfirmRejected::AlreadyApplied(indices))
                if !indices.is_empty() && indices.iter().all(|i| *i < chunk.len()) =>
            {
                sorted
                    .existing
                    .extend(crate::once::take_indices(&mut chunk, &indices));
            }
            Err(ConfirmRejected::OverLimit(buyer)) if attempts < MAX_GUARD_ATTEMPTS => {
                match store.buyer_units(sale_id, &buyer).await {
                    Ok(held) => {
                        let room = i64::from(per_user_limit) - held;
                        let excess = beyond_room(&mut chunk, |order| order.user_id == buyer, room);
                        if excess.is_empty() {
                            attempts += 1;
                        } else {
                            tracing::warn!(
                                %sale_id,
                                user_id = %buyer,
                                held,
                                orders = excess.len(),
                                "the buyer holds the per-user limit in DynamoDB: rejecting orders that Redis admitted"
                            );
                            sorted.rejected.extend(excess);
                        }
                    }
                    Err(err) => {
                        tracing::error!(error = ?anyhow::Error::from(err), "failed to read what a buyer holds");
                        fail(&mut chunk, sorted);
                    }
                }
            }
            Err(ConfirmRejected::SoldOut) if attempts < MAX_GUARD_ATTEMPTS => {
                match store.stock_remaining(sale_id).await {
                    Ok(stock) => {
                        let excess = beyond_room(&mut chunk, |_| true, stock.unwrap_or(0));
                        if !excess.is_empty() {
                            tracing::warn!(
                                %sale_id,
                                orders = excess.len(),
                                "DynamoDB's stock is exhausted: rejecting orders that Redis admitted"
                            );
                            sorted.rejected.extend(excess);
                        } else {
                            attempts += 1;
                        }
                    }
                    Err(err) => {
                        tracing::error!(error = ?anyhow::Error::from(err), "failed to read the sale's stock");
                        fail(&mut chunk, sorted);
                    }
                }
            }
            Err(err) => {
                tracing::error!(error = ?anyhow::Error::from(err), orders = chunk.len(), "failed to confirm orders");
                fail(&mut chunk, sorted);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seckill::order::fake::{
        GHOST, PRICE_CENTS, S1, S2, World, oid, order_name, placed, placed_later, placed_units,
    };
    use crate::testing::sealed_batch;

    /// `body` with the unit price `cents`.
    fn priced(body: &str, cents: u64) -> String {
        let mut body: serde_json::Value = serde_json::from_str(body).unwrap();
        body["payload"]["priceCents"] = cents.into();
        body.to_string()
    }

    #[tokio::test]
    async fn an_order_no_reservation_or_seal_vouches_for_is_refused_and_writes_nothing() {
        let world = World::new(S1, 10);
        world.reservations.reserve(S1, "o1", "a");
        let mut messages = crate::testing::batch(&[
            // a's reservation, claimed for mallory.
            priced(&placed("o1", S1, "mallory"), 1),
            // An order nobody was admitted with.
            priced(&placed("o9", S1, "mallory"), 1),
            // a's own order, unsealed: the reservation vouches for it, not its price.
            priced(&placed("o1", S1, "a"), 1),
            // A seal that does not verify.
            placed("o8", S1, "mallory"),
        ]);
        messages[3].seal = Some("bm90IHRoZSBzZWFs".to_owned());
        let mut refused = handle_batch(world.deps(), messages).await;
        refused.sort();
        assert_eq!(refused, ["m0", "m1", "m3"]);
        assert_eq!(world.store.orders(), 1);
        assert_eq!(world.store.stock(S1), 9);
        let order = world.store.order(&oid(S1, "o1")).await.unwrap().unwrap();
        assert_eq!(order.user_id.as_str(), "a");
        assert_eq!(order.price_cents, PRICE_CENTS, "the sale's price");
        assert_eq!(order.status, OrderStatus::Confirmed);
        // Claimed, it is vouched for again when its message comes back, for a only.
        let again = crate::testing::batch(&[placed("o1", S1, "a"), placed("o1", S1, "b")]);
        assert_eq!(handle_batch(world.deps(), again).await, ["m1"]);
        assert_eq!(world.store.orders(), 1);
    }

    #[tokio::test]
    async fn a_sealed_order_that_redis_forgot_is_confirmed_under_dynamodbs_guards() {
        let world = World::new(S1, 1);
        // Admitted, then Redis lost its data: no reservation is left of either.
        let bodies = [
            priced(&placed("o1", S1, "a"), 1),
            placed_later("o2", S1, "b", 5),
        ];
        assert!(
            handle_batch(world.deps(), sealed_batch(&bodies))
                .await
                .is_empty()
        );
        assert_eq!(world.store.status("o1"), Some(OrderStatus::Confirmed));
        assert_eq!(world.store.status("o2"), Some(OrderStatus::Rejected));
        assert_eq!(world.store.stock(S1), 0);
        let order = world.store.order(&oid(S1, "o1")).await.unwrap().unwrap();
        assert_eq!(order.price_cents, PRICE_CENTS);
        // Unsealed, the same orders would have been refused.
        let world = World::new(S1, 1);
        let refused = handle_batch(world.deps(), crate::testing::batch(&bodies)).await;
        assert_eq!(refused, ["m0", "m1"]);
        assert_eq!(world.store.orders(), 0);
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
        assert_eq!(
            handle_batch(world.deps(), sealed_batch(&bodies)).await,
            ["m4"]
        );
        assert_eq!(world.store.stock(S1), 8);
        assert_eq!(world.store.stock(S2), 9);
        assert_eq!(world.store.sale_writes(), 2);
        assert_eq!(world.store.status("o2"), Some(OrderStatus::Confirmed));
        assert!(world.reservations.pending_of(S1).is_empty());
        assert_eq!(world.payments.sent().len(), 3);

        assert_eq!(
            handle_batch(world.deps(), sealed_batch(&bodies)).await,
            ["m4"]
        );
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
        world.consume(&bodies).await;
        assert_eq!(world.store.stock(S1), 0);
        assert_eq!(world.store.status("o1"), Some(OrderStatus::Confirmed));
        assert_eq!(world.store.status("o2"), Some(OrderStatus::Confirmed));
        assert_eq!(world.store.status("o3"), Some(OrderStatus::Rejected));
        assert_eq!(world.reservations.released_of(S1), ["o3"]);
        assert_eq!(world.payments.sent().len(), 2);

        world.consume(&bodies).await;
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
        world.consume(&bodies).await;
        assert_eq!(world.store.status("o1"), Some(OrderStatus::Rejected));
    }

    #[tokio::test]
    async fn a_buyer_who_holds_the_limit_is_refused_by_dynamodb_after_redis_lost_data() {
        let world = World::new(S1, 0);
        world.store.add_sale_with_limit(S1, 10, 1);
        world.reservations.reserve(S1, "o1", "a");
        let first = [placed("o1", S1, "a")];
        world.consume(&first).await;
        assert_eq!(world.store.units(S1, "a"), 1);

        // Redis lost `bought` and was preheated again: it admits a second order of a.
        world.reservations.forget_buyers(S1);
        world.reservations.reserve(S1, "o2", "a");
        world.reservations.reserve(S1, "o3", "b");
        let bodies = [
            placed("o1", S1, "a"),
            placed("o2", S1, "a"),
            placed("o3", S1, "b"),
        ];
        for _ in 0..2 {
            world.consume(&bodies).await;
            assert_eq!(world.store.status("o1"), Some(OrderStatus::Confirmed));
            assert_eq!(world.store.status("o2"), Some(OrderStatus::Rejected));
            assert_eq!(world.store.status("o3"), Some(OrderStatus::Confirmed));
            assert_eq!(world.store.stock(S1), 8);
            assert_eq!(
                (world.store.units(S1, "a"), world.store.units(S1, "b")),
                (1, 1)
            );
            assert_eq!(world.reservations.released_of(S1), ["o2"]);
            // o2's unit and a's count are back in Redis: a may try again, and be refused again.
            assert_eq!(world.reservations.bought_of(S1, "a"), 0);
        }
    }

    #[tokio::test]
    async fn a_buyers_orders_in_one_batch_are_confirmed_up_to_the_limit_first_come_first_served() {
        let world = World::new(S1, 0);
        world.store.add_sale_with_limit(S1, 10, 2);
        for order in ["late", "early", "middle"] {
            world.reservations.reserve(S1, order, "a");
        }
        world.reservations.reserve(S1, "other", "b");
        let bodies = [
            placed_later("late", S1, "a", 30),
            placed_later("early", S1, "a", 10),
            placed_later("other", S1, "b", 40),
            placed_later("middle", S1, "a", 20),
        ];
        for _ in 0..2 {
            world.consume(&bodies).await;
            assert_eq!(world.store.status("early"), Some(OrderStatus::Confirmed));
            assert_eq!(world.store.status("middle"), Some(OrderStatus::Confirmed));
            assert_eq!(world.store.status("late"), Some(OrderStatus::Rejected));
            assert_eq!(world.store.status("other"), Some(OrderStatus::Confirmed));
            assert_eq!(world.store.units(S1, "a"), 2);
            assert_eq!(world.store.stock(S1), 7);
            assert_eq!(world.reservations.released_of(S1), ["late"]);
        }
    }

    #[tokio::test]
    async fn a_large_batch_of_distinct_buyers_is_split_into_transactions_that_fit() {
        let world = World::new(S1, 0);
        world.store.add_sale_with_limit(S1, 200, 1);
        let bodies = world.reserve_all((0..120).map(|i| (format!("o{i}"), format!("u{i}"))));
        world.consume(&bodies).await;
        assert_eq!(world.store.stock(S1), 80);
        // 49 orders, 49 buyers and the sale per transaction: 49 + 49 + 22.
        assert_eq!(world.store.sale_writes(), 3);
        assert_eq!(world.store.units(S1, "u119"), 1);
    }

    #[tokio::test]
    async fn one_buyers_many_orders_share_one_buyer_item_per_transaction() {
        let world = World::new(S1, 0);
        world.store.add_sale_with_limit(S1, 200, 100);
        let bodies = world.reserve_all((0..100).map(|i| (format!("o{i}"), "a".to_owned())));
        world.consume(&bodies).await;
        // 98 orders, one buyer and the sale, then 2.
        assert_eq!(world.store.sale_writes(), 2);
        assert_eq!(world.store.units(S1, "a"), 100);
    }

    #[tokio::test]
    async fn failures_after_the_commit_retry_the_message_and_are_redone_once() {
        let world = World::new(S1, 5);
        world.reservations.reserve(S1, "o1", "a");
        world.payments.fail(true);
        let bodies = [placed("o1", S1, "a")];
        assert_eq!(
            handle_batch(world.deps(), sealed_batch(&bodies)).await,
            ["m0"]
        );
        world.payments.fail(false);
        world.consume(&bodies).await;
        assert_eq!(world.store.stock(S1), 4);
        assert_eq!(world.payments.sent().len(), 1);
    }

    #[tokio::test]
    async fn orders_of_several_units_take_their_units_and_each_gets_its_payment_due() {
        let world = World::new(S1, 10);
        world.store.add_sale_with_limit(S1, 10, 3);
        world.reservations.reserve_units(S1, "o1", "ann", 0, 3);
        world.reservations.reserve_units(S1, "o2", "bob", 0, 2);
        let bodies = [
            placed_units("o1", S1, "ann", 3, Some("ONLINE")),
            placed_units("o2", S1, "bob", 2, Some("COD")),
        ];
        world.consume(&bodies).await;
        assert_eq!(world.store.stock(S1), 5);
        assert_eq!(
            (world.store.units(S1, "ann"), world.store.units(S1, "bob")),
            (3, 2)
        );
        assert_eq!(world.store.status("o1"), Some(OrderStatus::Confirmed));
        assert_eq!(world.store.status("o2"), Some(OrderStatus::Cod));
        let order = world.store.order(&oid(S1, "o1")).await.unwrap().unwrap();
        assert_eq!((order.quantity, order.total_cents), (3, 2_970));
        // The order awaiting payment has its payment window, the COD one its delivery window.
        let due: Vec<String> = world
            .payments
            .sent()
            .into_iter()
            .map(|d| order_name(d.order_id.as_str()))
            .collect();
        assert_eq!(due, ["o1", "o2"]);
        // Redelivered: nothing changes; the messages go again (a consumer takes each once).
        world.consume(&bodies).await;
        assert_eq!(world.store.stock(S1), 5);
        assert_eq!(world.payments.sent().len(), 4);
    }

    #[tokio::test]
    async fn when_dynamodb_holds_fewer_units_orders_that_fit_are_confirmed_first_come_first_served()
    {
        // Redis lost its data and admitted 3 + 2 + 1 units where DynamoDB holds fewer. With 3,
        // the first order takes them all; with 4, the second (2) no longer fits in the 1 left,
        // but the third, later and smaller, does.
        for (stock, confirmed) in [(3, vec!["o1"]), (4, vec!["o1", "o3"])] {
            let world = World::new(S1, stock);
            let orders = [("o1", "ann", 3), ("o2", "bob", 2), ("o3", "cid", 1)];
            let mut bodies = Vec::new();
            for (i, (order, user, units)) in orders.into_iter().enumerate() {
                world.reservations.reserve_units(S1, order, user, 0, units);
                let mut body: serde_json::Value =
                    serde_json::from_str(&placed_units(order, S1, user, units, None)).unwrap();
                body["payload"]["reservedAtMs"] = (1_796_060_000_000_i64 + i as i64).into();
                bodies.push(body.to_string());
            }
            world.consume(&bodies).await;
            let kept: Vec<&str> = ["o1", "o2", "o3"]
                .into_iter()
                .filter(|o| world.store.status(o) == Some(OrderStatus::Confirmed))
                .collect();
            assert_eq!(kept, confirmed, "DynamoDB stock {stock}");
            assert_eq!(world.store.status("o2"), Some(OrderStatus::Rejected));
            // The rejected order's 2 units went back to Redis, whole and once.
            assert!(
                world
                    .reservations
                    .released_of(S1)
                    .contains(&"o2".to_owned())
            );
            assert_eq!(
                world.store.stock(S1),
                stock - if stock == 3 { 3 } else { 4 }
            );
        }
    }

    #[tokio::test]
    async fn a_buyer_over_the_limit_in_units_is_refused_by_dynamodb() {
        // Redis lost its `bought` hash: ann, who holds 2 of a limit of 3, was admitted 2 more.
        let world = World::new(S1, 10);
        world.store.add_sale_with_limit(S1, 10, 3);
        world.reservations.reserve_units(S1, "o1", "ann", 0, 2);
        world
            .consume(&[placed_units("o1", S1, "ann", 2, None)])
            .await;
        world.reservations.forget_buyers(S1);
        world.reservations.reserve_units(S1, "o2", "ann", 0, 2);
        world
            .consume(&[placed_units("o2", S1, "ann", 2, None)])
            .await;
        assert_eq!(world.store.status("o2"), Some(OrderStatus::Rejected));
        assert_eq!(world.store.units(S1, "ann"), 2);
        assert_eq!(world.store.stock(S1), 8);
    }
}
