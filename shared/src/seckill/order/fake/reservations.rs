//! Redis's side of the order path in memory: each sale's stock, its buyers' units and the
//! pending, claimed and released reservations, as the Lua scripts keep them.

use super::{order_id, order_name};
use crate::ids::{OrderId, SaleId};
use crate::seckill::admission::Holder;
use crate::seckill::order::{
    AdmittedOrder, Claim, PendingError, PendingOrders, PendingReservation, Reservations,
    ReservationsError,
};
use async_trait::async_trait;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

#[derive(Default)]
struct RedisSale {
    stock: i64,
    bought: HashMap<String, i64>,
    /// Order id → (user, reserved at, units).
    pending: BTreeMap<String, (String, i64, u32)>,
    /// What the consumer claimed from `pending` (the `claimed` hash).
    claimed: BTreeMap<String, (String, i64, u32)>,
    released: BTreeSet<String>,
    /// Every admitted order's owner (the `orders` hash): never removed.
    owners: BTreeMap<String, String>,
}

#[derive(Default)]
pub(crate) struct MemoryReservations {
    sales: Mutex<HashMap<String, RedisSale>>,
}

impl MemoryReservations {
    /// What the admission script does for one order of one unit, at `at_ms`.
    pub(crate) fn reserve_at(&self, sale: &str, order: &str, user: &str, at_ms: i64) {
        self.reserve_units(sale, order, user, at_ms, 1);
    }

    /// What the admission script does for one order of `units` units, at `at_ms`.
    pub(crate) fn reserve_units(
        &self,
        sale: &str,
        order: &str,
        user: &str,
        at_ms: i64,
        units: u32,
    ) {
        let mut sales = self.sales.lock().unwrap();
        let order = order_id(sale, order);
        let sale = sales.entry(sale.to_owned()).or_default();
        sale.stock -= i64::from(units);
        *sale.bought.entry(user.to_owned()).or_default() += i64::from(units);
        sale.pending
            .insert(order.clone(), (user.to_owned(), at_ms, units));
        sale.owners.insert(order, user.to_owned());
    }

    pub(crate) fn reserve(&self, sale: &str, order: &str, user: &str) {
        self.reserve_at(sale, order, user, 0);
    }

    /// What `read` finds in the sale; the default for a sale Redis does not hold.
    fn of_sale<T: Default>(&self, sale: &str, read: impl FnOnce(&RedisSale) -> T) -> T {
        self.sales
            .lock()
            .unwrap()
            .get(sale)
            .map(read)
            .unwrap_or_default()
    }

    /// The pending orders' names ([`order_name`]).
    pub(crate) fn pending_of(&self, sale: &str) -> Vec<String> {
        self.of_sale(sale, |s| {
            s.pending.keys().map(|id| order_name(id)).collect()
        })
    }

    /// The released orders' names ([`order_name`]).
    pub(crate) fn released_of(&self, sale: &str) -> Vec<String> {
        self.of_sale(sale, |s| {
            s.released.iter().map(|id| order_name(id)).collect()
        })
    }

    /// What losing the `bought` hash does (a flush, then a preheat).
    pub(crate) fn forget_buyers(&self, sale: &str) {
        if let Some(sale) = self.sales.lock().unwrap().get_mut(sale) {
            sale.bought.clear();
        }
    }

    pub(crate) fn bought_of(&self, sale: &str, user: &str) -> i64 {
        let sales = self.sales.lock().unwrap();
        sales[sale].bought.get(user).copied().unwrap_or(0)
    }

    /// The stock relative to where it started (the fake starts every sale at 0).
    pub(crate) fn stock_of(&self, sale: &str) -> i64 {
        self.sales.lock().unwrap()[sale].stock
    }

    /// What the preheat (or a failover that lost admissions) leaves as the stock.
    pub(crate) fn set_stock(&self, sale: &str, stock: i64) {
        self.sales
            .lock()
            .unwrap()
            .entry(sale.to_owned())
            .or_default()
            .stock = stock;
    }
}

#[async_trait]
impl Reservations for MemoryReservations {
    async fn confirm(
        &self,
        sale_id: &SaleId,
        order_ids: &[OrderId],
    ) -> Result<(), ReservationsError> {
        if let Some(sale) = self.sales.lock().unwrap().get_mut(sale_id.as_str()) {
            for id in order_ids {
                sale.pending.remove(id.as_str());
            }
        }
        Ok(())
    }

    async fn claim(
        &self,
        sale_id: &SaleId,
        order_ids: &[OrderId],
    ) -> Result<Vec<Claim>, ReservationsError> {
        let mut sales = self.sales.lock().unwrap();
        let sale = sales.entry(sale_id.to_string()).or_default();
        let mut claims = Vec::new();
        for id in order_ids {
            if sale.released.contains(id.as_str()) {
                claims.push(Claim::Released);
                continue;
            }
            if let Some(entry) = sale.pending.remove(id.as_str()) {
                sale.claimed.insert(id.to_string(), entry);
            }
            claims.push(match sale.claimed.get(id.as_str()) {
                Some((user, at, units)) => Claim::Held(PendingReservation {
                    order_id: id.clone(),
                    user_id: user.clone(),
                    reserved_at_ms: *at,
                    units: *units,
                }),
                None => Claim::Unknown,
            });
        }
        Ok(claims)
    }

    async fn release(
        &self,
        sale_id: &SaleId,
        order_id: &OrderId,
        holder: Option<&Holder>,
    ) -> Result<bool, ReservationsError> {
        let order_id = order_id.as_str();
        let mut sales = self.sales.lock().unwrap();
        let sale = sales.entry(sale_id.to_string()).or_default();
        if sale.released.contains(order_id) {
            return Ok(false);
        }
        let (user_id, units) = match (sale.pending.remove(order_id), holder) {
            (Some((user, _, units)), _) => (user, units),
            (None, Some(holder)) => (holder.user_id.to_string(), holder.units),
            (None, None) => return Ok(false),
        };
        sale.released.insert(order_id.to_owned());
        sale.stock += i64::from(units);
        if let Some(bought) = sale.bought.get_mut(&user_id) {
            *bought = (*bought - i64::from(units)).max(0);
        }
        Ok(true)
    }

    async fn pending(
        &self,
        sale_id: &SaleId,
    ) -> Result<Vec<PendingReservation>, ReservationsError> {
        let sales = self.sales.lock().unwrap();
        Ok(sales
            .get(sale_id.as_str())
            .map(|sale| {
                sale.pending
                    .iter()
                    .map(|(order, (user, at, units))| PendingReservation {
                        order_id: OrderId::parse(order).unwrap(),
                        user_id: user.clone(),
                        reserved_at_ms: *at,
                        units: *units,
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn stock(&self, sale_id: &SaleId) -> Result<Option<i64>, ReservationsError> {
        Ok(self
            .sales
            .lock()
            .unwrap()
            .get(sale_id.as_str())
            .map(|s| s.stock))
    }

    async fn cap_stock(
        &self,
        sale_id: &SaleId,
        dynamo_stock_remaining: i64,
    ) -> Result<i64, ReservationsError> {
        let mut sales = self.sales.lock().unwrap();
        let Some(sale) = sales.get_mut(sale_id.as_str()) else {
            return Ok(0);
        };
        let pending: i64 = sale
            .pending
            .values()
            .map(|(_, _, units)| i64::from(*units))
            .sum();
        let ceiling = (dynamo_stock_remaining - pending).max(0);
        let lowered = (sale.stock - ceiling).max(0);
        sale.stock -= lowered;
        Ok(lowered)
    }
}

#[async_trait]
impl PendingOrders for MemoryReservations {
    async fn admitted(&self, order_id: &OrderId) -> Result<Option<AdmittedOrder>, PendingError> {
        let sales = self.sales.lock().unwrap();
        let sale_id = order_id.sale_id().as_str();
        let order_id = order_id.as_str();
        Ok(sales.get(sale_id).and_then(|sale| {
            sale.owners.get(order_id).map(|user| AdmittedOrder {
                user_id: user.clone(),
                released: sale.released.contains(order_id),
            })
        }))
    }
}
