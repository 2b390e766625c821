//! One sale's figures for operators (`GET /seckill/activities/{id}/figures`): its units in
//! Redis and in DynamoDB, its orders by status, the units sold, the revenue and the refunds
//! due for it.
//!
//! **What counts.** `unitsSold` and `revenueCents` count the settled orders, PAID and COD
//! ([`OrderStatus::is_settled`]: the buyer keeps the units), `paidCents` only the PAID ones
//! (collected online; COD is collected on delivery). CONFIRMED orders await their payment and
//! may still be cancelled: they are in `orders` and in `unitsAwaitingPayment`, not sold.
//! CANCELLED and REJECTED orders count nowhere but in `orders`. Reservations still pending in
//! Redis (admitted, not yet materialized) are in `redis.pendingUnits`.
//!
//! **Where it reads.** The sale's item (its stocks), Redis (the sale's `stock` and `pending`
//! keys: null when the cache does not hold the sale), the sale's orders by a keyed query of
//! each of its gsi3 partitions ([`crate::seckill::keys::order_shard`]), and the refunds due, a keyed
//! query of the `REFUNDS#DUE` partition filtered on the order id's sale: its cost is every
//! refund due of every sale, a short list by design (a payment that came for an order that
//! could not take it). Never a scan. The index is eventually consistent: an order written a
//! moment ago may be missing for that moment. Orders written before gsi3 existed have no gsi3
//! keys and are not counted.

use crate::ids::SaleId;
use crate::seckill::office::{OfficeError, SaleOffice};
use crate::seckill::order::{OrderStatus, OrderStoreError, Reservations, ReservationsError};
use crate::seckill::sale::Lifecycle;
use async_trait::async_trait;
use serde::Serialize;
use std::collections::BTreeMap;

/// Orders of one status and what they add up to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tally {
    pub orders: u64,
    pub units: u64,
    /// The orders' totals (unit price × quantity).
    pub amount_cents: u64,
}

impl Tally {
    pub fn add(&mut self, units: u32, amount_cents: u64) {
        self.orders += 1;
        self.units += u64::from(units);
        self.amount_cents = self.amount_cents.saturating_add(amount_cents);
    }
}

/// A sale's orders tallied by status, and how many index items were read for it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OrderTallies {
    pub by_status: BTreeMap<&'static str, Tally>,
    pub items_read: u64,
}

impl OrderTallies {
    /// Counts one order.
    pub fn add(&mut self, status: OrderStatus, units: u32, price_cents: u64) {
        let amount = price_cents.saturating_mul(u64::from(units));
        self.by_status
            .entry(status.as_str())
            .or_default()
            .add(units, amount);
    }

    pub fn of(&self, status: OrderStatus) -> Tally {
        self.by_status
            .get(status.as_str())
            .copied()
            .unwrap_or_default()
    }
}

/// The refunds still due for one sale.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RefundsDue {
    pub count: u64,
    pub amount_cents: u64,
}

/// The commerce table's reads of one sale's orders and refunds.
#[async_trait]
pub trait SaleLedger: Send + Sync {
    /// Every order of the sale, tallied by status (keyed queries of its index partitions).
    async fn order_tallies(&self, sale_id: &SaleId) -> Result<OrderTallies, OrderStoreError>;
    /// The refunds still due for orders of the sale.
    async fn refunds_due_of(&self, sale_id: &SaleId) -> Result<RefundsDue, OrderStoreError>;
}

/// The sale's units in Redis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheUnits {
    /// Units left to reserve.
    pub stock: i64,
    /// Reservations admitted and not yet materialized in DynamoDB, and their units.
    pub pending_orders: u64,
    pub pending_units: u64,
}

/// The sale's units in DynamoDB.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TableUnits {
    pub stock: u32,
    pub stock_remaining: u32,
}

/// One sale's figures ([module](self) for what counts).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Figures {
    pub sale_id: SaleId,
    pub title: String,
    pub state: Lifecycle,
    /// `None` when Redis does not hold the sale (a draft, a retired sale, a cache lost).
    pub redis: Option<CacheUnits>,
    pub dynamo: TableUnits,
    /// Every status, zeros included.
    pub orders: BTreeMap<&'static str, Tally>,
    /// Units of the PAID and COD orders.
    pub units_sold: u64,
    /// Units of the CONFIRMED orders.
    pub units_awaiting_payment: u64,
    /// Totals of the PAID and COD orders.
    pub revenue_cents: u64,
    /// Totals of the PAID orders.
    pub paid_cents: u64,
    pub refunds_due: RefundsDue,
    /// Only for a sale that requires a reservation (预约).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reservations: Option<ReservationFigures>,
}

/// A reservation-only sale's reservations and how many became orders.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReservationFigures {
    /// The buyers who reserved.
    pub count: u64,
    /// The orders that hold units (CONFIRMED, PAID, COD): only reserved buyers could place them.
    pub orders: u64,
    /// `orders` per reservation, in percent (0 without reservations): with a limit of one per
    /// buyer, the share of reserving buyers who bought.
    pub conversion_percent: u64,
}

const STATUSES: [OrderStatus; 5] = [
    OrderStatus::Confirmed,
    OrderStatus::Paid,
    OrderStatus::Cod,
    OrderStatus::Cancelled,
    OrderStatus::Rejected,
];

/// The figures of sale `id`: [`OfficeError::NotFound`] for an unknown sale.
pub async fn sale_figures(
    office: &dyn SaleOffice,
    ledger: &dyn SaleLedger,
    cache: &dyn Reservations,
    id: &SaleId,
) -> Result<Figures, OfficeError> {
    let sale = office
        .get(id)
        .await?
        .ok_or_else(|| OfficeError::NotFound(id.clone()))?;
    let store = |err: OrderStoreError| OfficeError::Store(anyhow::Error::from(err).into());
    let cache_err = |err: ReservationsError| OfficeError::Store(anyhow::Error::from(err).into());
    let (tallies, refunds_due, stock) = tokio::join!(
        ledger.order_tallies(id),
        ledger.refunds_due_of(id),
        cache.stock(id),
    );
    let (tallies, refunds_due) = (tallies.map_err(store)?, refunds_due.map_err(store)?);
    let redis = match stock.map_err(cache_err)? {
        Some(stock) => {
            let pending = cache.pending(id).await.map_err(cache_err)?;
            Some(CacheUnits {
                stock,
                pending_orders: pending.len() as u64,
                pending_units: pending.iter().map(|p| u64::from(p.units)).sum(),
            })
        }
        None => None,
    };
    let paid = tallies.of(OrderStatus::Paid);
    let cod = tallies.of(OrderStatus::Cod);
    let reservations = match sale.reservation_opens_at {
        Some(_) => {
            let count = office.reservations(id).await?;
            let orders = tallies.of(OrderStatus::Confirmed).orders + paid.orders + cod.orders;
            Some(ReservationFigures {
                count,
                orders,
                conversion_percent: (orders * 100).checked_div(count).unwrap_or(0),
            })
        }
        None => None,
    };
    Ok(Figures {
        sale_id: sale.id,
        title: sale.title,
        state: sale.state,
        redis,
        dynamo: TableUnits {
            stock: sale.initial_stock,
            stock_remaining: sale.stock_remaining,
        },
        orders: STATUSES
            .into_iter()
            .map(|status| (status.as_str(), tallies.of(status)))
            .collect(),
        units_sold: paid.units + cod.units,
        units_awaiting_payment: tallies.of(OrderStatus::Confirmed).units,
        revenue_cents: paid.amount_cents + cod.amount_cents,
        paid_cents: paid.amount_cents,
        refunds_due,
        reservations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::UserId;
    use crate::once::Unit;
    use crate::seckill::admission::Holder;
    use crate::seckill::office::fake::MemoryOffice;
    use crate::seckill::order::consumer::{OrderDeps, handle_batch};
    use crate::seckill::order::fake::{
        MemoryOrders, MemoryPayments, MemoryReservations, S1, S2, oid, placed_units,
    };
    use crate::seckill::order::{HeldOrder, OrderStore};
    use crate::seckill::payment::refunds::tests::refund;
    use crate::seckill::sale::{NewSale, Sale};
    use time::macros::datetime;

    fn order(n: u32) -> String {
        format!("{S1}.0190a1b2c3d47e5f8a9b00000000{n:04x}")
    }

    /// An office holding sale [`S1`], published: 10 units at 9.90.
    fn office() -> MemoryOffice {
        let new = NewSale {
            product_id: "sku".into(),
            title: "Lamp".into(),
            price_cents: 990,
            stock: 10,
            per_user_limit: 5,
            starts_at: datetime!(2026-12-01 10:00 UTC),
            ends_at: datetime!(2026-12-01 11:00 UTC),
            reservation_opens_at: None,
        };
        let id = SaleId::parse(S1).unwrap();
        let mut sale = Sale::draft(id.clone(), new, "2026-12-01T09:00:00Z".into());
        sale.state = Lifecycle::Published;
        sale.stock_remaining = 3;
        let office = MemoryOffice::default();
        office.sales.sales.lock().unwrap().insert(id, sale);
        office
    }

    /// Materializes `units` units of `user` as order `n` through the order consumer.
    async fn confirmed(
        store: &MemoryOrders,
        cache: &MemoryReservations,
        n: u32,
        user: &str,
        units: u32,
        method: &str,
    ) -> String {
        let id = order(n);
        cache.reserve_units(S1, &id, user, 0, units);
        let deps = OrderDeps {
            store,
            reservations: cache,
            payments: &MemoryPayments::default(),
            seal: crate::seckill::admission::seal::Seal::for_tests(),
        };
        let body = placed_units(&id, S1, user, units, Some(method));
        let failed = handle_batch(deps, crate::testing::sealed_batch(&[body])).await;
        assert!(failed.is_empty(), "{failed:?}");
        id
    }

    #[tokio::test]
    async fn orders_are_summed_by_status_and_only_paid_and_cod_orders_are_sold() {
        let office = office();
        let store = MemoryOrders::default();
        store.add_sale_with_limit(S1, 7, 5);
        let cache = MemoryReservations::default();
        let ann = UserId::parse("ann").unwrap();

        // ann pays 2 online, bob keeps 1 for delivery, cid leaves 3 unpaid, dan's 1 is
        // cancelled, and eve's 2 find no stock left: rejected.
        let paid = confirmed(&store, &cache, 1, "ann", 2, "ONLINE").await;
        assert_eq!(
            store
                .open_payment(&oid(S1, &paid), &ann, "p1")
                .await
                .unwrap()
                .as_deref(),
            Some("p1")
        );
        assert!((store.settle_online(&oid(S1, &paid), "p1", "t").await).unwrap());
        confirmed(&store, &cache, 2, "bob", 1, "COD").await;
        confirmed(&store, &cache, 3, "cid", 3, "ONLINE").await;
        let cancelled = confirmed(&store, &cache, 4, "dan", 1, "ONLINE").await;
        let holder = Holder {
            user_id: UserId::parse("dan").unwrap(),
            units: 1,
        };
        let unit = Unit {
            marker: cancelled.clone(),
            messages: Vec::new(),
            payload: HeldOrder {
                order_id: oid(S1, &cancelled),
                holder,
            },
        };
        let sale = SaleId::parse(S1).unwrap();
        store.cancel_orders(&sale, &[unit]).await.unwrap();
        store.add_sale_with_limit(S1, 0, 5);
        let rejected = confirmed(&store, &cache, 5, "eve", 2, "ONLINE").await;
        assert_eq!(store.status(&rejected), Some(OrderStatus::Rejected));
        // One reservation still pending in Redis; a refund due for dan's order and one for
        // another sale's.
        cache.reserve_units(S1, &order(6), "fay", 0, 2);
        cache.set_stock(S1, 4);
        assert!(
            store
                .record_refund(&refund("pd", &cancelled, "t1"))
                .await
                .unwrap()
        );
        let other = format!("{S2}.0190a1b2c3d47e5f8a9b000000000001");
        assert!(
            store
                .record_refund(&refund("px", &other, "t2"))
                .await
                .unwrap()
        );

        let id = SaleId::parse(S1).unwrap();
        let figures = sale_figures(&office, &store, &cache, &id).await.unwrap();
        let tally = |orders, units, amount_cents| Tally {
            orders,
            units,
            amount_cents,
        };
        assert_eq!(figures.orders["PAID"], tally(1, 2, 1_980));
        assert_eq!(figures.orders["COD"], tally(1, 1, 990));
        assert_eq!(figures.orders["CONFIRMED"], tally(1, 3, 2_970));
        assert_eq!(figures.orders["CANCELLED"], tally(1, 1, 990));
        assert_eq!(figures.orders["REJECTED"], tally(1, 2, 1_980));
        assert_eq!(figures.units_sold, 3, "PAID and COD");
        assert_eq!(figures.units_awaiting_payment, 3);
        assert_eq!(figures.revenue_cents, 2_970, "PAID and COD");
        assert_eq!(figures.paid_cents, 1_980, "PAID only");
        assert_eq!(
            figures.refunds_due,
            RefundsDue {
                count: 1,
                amount_cents: 1_980
            },
            "only this sale's"
        );
        // Redis: its stock as it is, and fay's reservation still pending.
        let redis = figures.redis.unwrap();
        assert_eq!(redis.stock, 4);
        assert_eq!((redis.pending_orders, redis.pending_units), (1, 2));
        assert_eq!(
            figures.dynamo,
            TableUnits {
                stock: 10,
                stock_remaining: 3
            }
        );
    }

    #[tokio::test]
    async fn a_sale_without_orders_or_redis_keys_has_zeros_and_no_redis_and_an_unknown_one_none() {
        let office = office();
        let store = MemoryOrders::default();
        let cache = MemoryReservations::default();
        let id = SaleId::parse(S1).unwrap();
        let figures = sale_figures(&office, &store, &cache, &id).await.unwrap();
        assert_eq!(figures.redis, None);
        assert_eq!(figures.orders.len(), 5, "every status, zeros included");
        assert!(figures.orders.values().all(|t| *t == Tally::default()));
        assert_eq!((figures.units_sold, figures.revenue_cents), (0, 0));
        let body = serde_json::to_value(&figures).unwrap();
        assert_eq!(body["redis"], serde_json::Value::Null);
        assert_eq!(body["orders"]["COD"]["amountCents"], 0);
        assert_eq!(body["state"], "PUBLISHED");

        let unknown = SaleId::parse(S2).unwrap();
        assert!(matches!(
            sale_figures(&office, &store, &cache, &unknown).await,
            Err(OfficeError::NotFound(_))
        ));
    }
}
