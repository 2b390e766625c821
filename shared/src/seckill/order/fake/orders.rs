//! The commerce table in memory: sales, orders, buyers' items and refunds, with the
//! conditions and transaction sizes of the DynamoDB adapter.

use super::{PRICE_CENTS, order_id};
use crate::cursor::{Cursor, InvalidCursor, PageLimit};
use crate::ids::{OrderId, SaleId, UserId};
use crate::once::{Rejected, Unit, indices_where, refuse_applied};
use crate::seckill::order::dynamo::{LIMITS, fits_one_transaction, per_buyer};
use crate::seckill::order::refund::Refund;
use crate::seckill::order::refund::{
    OrderRefund, Outstanding, RefundPage, RefundRecord, RefundState,
};
use crate::seckill::order::{
    ConfirmRejected, HeldOrder, LiveSale, LiveSales, NewOrder, Order, OrderLimits, OrderPage,
    OrderStatus, OrderStore, OrderStoreError, PaymentMethod, SaleGuards,
};
use async_trait::async_trait;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

/// A sale item of the commerce table.
struct MemorySale {
    stock: i64,
    per_user_limit: u32,
    /// On the live index.
    live: bool,
    ends_at_ms: i64,
}

/// A refund's state, when it was refunded and the provider's refund id.
type RefundProgress = (RefundState, Option<String>, Option<String>);

#[derive(Default)]
pub(crate) struct MemoryOrders {
    pub(crate) orders: Mutex<BTreeMap<String, Order>>,
    sales: Mutex<HashMap<String, MemorySale>>,
    /// (sale id, user id) → units: the buyers' items.
    buyers: Mutex<HashMap<(String, String), i64>>,
    sale_writes: Mutex<u32>,
    refunds: Mutex<Vec<Refund>>,
    /// (payment, order) → the refund's state, when refunded and the provider's refund id.
    refund_states: Mutex<HashMap<(String, String), RefundProgress>>,
    /// Payment → the order whose refund of it is paid back.
    refund_ledger: Mutex<HashMap<String, OrderId>>,
}

impl MemoryOrders {
    /// A published sale whose per-user limit does not get in the way.
    pub(crate) fn add_sale(&self, sale: &str, stock: i64) {
        self.add_sale_with_limit(sale, stock, 100);
    }

    pub(crate) fn add_sale_with_limit(&self, sale: &str, stock: i64, per_user_limit: u32) {
        self.sales.lock().unwrap().insert(
            sale.to_owned(),
            MemorySale {
                stock,
                per_user_limit,
                live: true,
                ends_at_ms: i64::MAX,
            },
        );
    }

    /// The sale ends (or ended) at `ends_at_ms`.
    pub(crate) fn end_sale_at(&self, sale: &str, ends_at_ms: i64) {
        self.sales.lock().unwrap().get_mut(sale).unwrap().ends_at_ms = ends_at_ms;
    }

    /// Whether the sale is on the live index.
    pub(crate) fn is_live(&self, sale: &str) -> bool {
        self.sales.lock().unwrap()[sale].live
    }

    pub(crate) fn stock(&self, sale: &str) -> i64 {
        self.sales.lock().unwrap()[sale].stock
    }

    /// The buyer's item's `units` (0 when absent).
    pub(crate) fn units(&self, sale: &str, user: &str) -> i64 {
        self.buyers
            .lock()
            .unwrap()
            .get(&(sale.to_owned(), user.to_owned()))
            .copied()
            .unwrap_or(0)
    }

    pub(crate) fn sale_writes(&self) -> u32 {
        *self.sale_writes.lock().unwrap()
    }

    pub(crate) fn refunds(&self) -> Vec<Refund> {
        self.refunds.lock().unwrap().clone()
    }

    /// A recorded refund with its state.
    pub(crate) fn record(&self, refund: &Refund) -> RefundRecord {
        let states = self.refund_states.lock().unwrap();
        let (state, refunded_at, provider_refund_id) = states
            .get(&(refund.payment_id.clone(), refund.order_id.to_string()))
            .cloned()
            .unwrap_or((RefundState::Due, None, None));
        RefundRecord {
            payment_id: refund.payment_id.clone(),
            order_id: refund.order_id.clone(),
            user_id: refund.user_id.clone(),
            amount_cents: refund.amount_cents,
            currency: refund.currency.clone(),
            reason: refund.reason.as_str().to_owned(),
            state,
            recorded_at: refund.recorded_at.clone(),
            refunded_at,
            provider_refund_id,
        }
    }

    pub(crate) fn orders(&self) -> usize {
        self.orders.lock().unwrap().len()
    }

    /// The status of the order a test names `order` ([`order_id`]), of whichever sale.
    pub(crate) fn status(&self, order: &str) -> Option<OrderStatus> {
        let orders = self.orders.lock().unwrap();
        let mut found = orders
            .values()
            .filter(|o| o.order_id.as_str() == order_id(o.sale_id.as_str(), order));
        found.next().map(|o| o.status)
    }

    fn put(
        &self,
        units: &[Unit<NewOrder>],
        status: impl Fn(&NewOrder) -> OrderStatus,
    ) -> Result<(), Rejected> {
        let orders = self.orders.lock().unwrap();
        refuse_applied(units, |u| orders.contains_key(&u.marker))?;
        drop(orders);
        let mut orders = self.orders.lock().unwrap();
        for unit in units {
            let new = &unit.payload;
            orders.insert(
                new.order_id.to_string(),
                Order {
                    order_id: new.order_id.clone(),
                    sale_id: new.sale_id.clone(),
                    user_id: new.user_id.clone(),
                    price_cents: new.price_cents,
                    quantity: new.quantity,
                    total_cents: new.total_cents(),
                    status: status(new),
                    created_at: new.created_at.clone(),
                    address: new.address.clone(),
                    payment_method: new.payment_method,
                    payment_id: None,
                    paid_at: None,
                    delivery_confirmed_at: None,
                    refunds: Vec::new(),
                },
            );
        }
        Ok(())
    }
}

#[async_trait]
impl OrderStore for MemoryOrders {
    fn limits(&self) -> OrderLimits {
        LIMITS
    }

    async fn confirm_orders(
        &self,
        sale_id: &SaleId,
        per_user_limit: u32,
        units: &[Unit<NewOrder>],
    ) -> Result<(), ConfirmRejected> {
        let counts = per_buyer(
            units
                .iter()
                .map(|u| (u.payload.user_id.as_str(), u.payload.units())),
        );
        if !fits_one_transaction(units.len(), counts.len()) {
            return Err(ConfirmRejected::Failed(anyhow::anyhow!("too many items")));
        }
        // The conditions in the transaction's order: orders, buyers, the sale.
        {
            let orders = self.orders.lock().unwrap();
            let applied = indices_where(units, |u| orders.contains_key(&u.marker));
            if !applied.is_empty() {
                return Err(ConfirmRejected::AlreadyApplied(applied));
            }
        }
        let mut buyers = self.buyers.lock().unwrap();
        for (buyer, k) in &counts {
            let held = buyers
                .get(&(sale_id.to_string(), (*buyer).to_owned()))
                .copied()
                .unwrap_or(0);
            if held + k > i64::from(per_user_limit) {
                return Err(ConfirmRejected::OverLimit(UserId::parse(buyer).unwrap()));
            }
        }
        let mut sales = self.sales.lock().unwrap();
        let n: i64 = units.iter().map(|u| u.payload.units()).sum();
        match sales.get_mut(sale_id.as_str()) {
            Some(sale) if sale.stock >= n => sale.stock -= n,
            _ => return Err(ConfirmRejected::SoldOut),
        }
        *self.sale_writes.lock().unwrap() += 1;
        for (buyer, k) in counts {
            *buyers
                .entry((sale_id.to_string(), buyer.to_owned()))
                .or_default() += k;
        }
        drop(sales);
        drop(buyers);
        self.put(units, NewOrder::confirmed_status)
            .map_err(|_| ConfirmRejected::Failed(anyhow::anyhow!("checked above")))
    }

    async fn reject_orders(&self, units: &[Unit<NewOrder>]) -> Result<(), Rejected> {
        self.put(units, |_| OrderStatus::Rejected)
    }

    async fn cancel_orders(
        &self,
        sale_id: &SaleId,
        units: &[Unit<HeldOrder>],
    ) -> Result<(), Rejected> {
        let mut orders = self.orders.lock().unwrap();
        refuse_applied(units, |u| {
            !orders.get(&u.marker).is_some_and(|o| {
                o.status == OrderStatus::Confirmed
                    || (o.status == OrderStatus::Cod && o.delivery_confirmed_at.is_none())
            })
        })?;
        let counts = per_buyer(units.iter().map(|u| {
            (
                u.payload.holder.user_id.as_str(),
                i64::from(u.payload.holder.units),
            )
        }));
        if !fits_one_transaction(units.len(), counts.len()) {
            return Err(Rejected::Failed(anyhow::anyhow!("too many items")));
        }
        let mut buyers = self.buyers.lock().unwrap();
        for (buyer, k) in &counts {
            let held = buyers
                .get(&(sale_id.to_string(), (*buyer).to_owned()))
                .copied();
            if held.is_none_or(|held| held < *k) {
                return Err(Rejected::Aggregate);
            }
        }
        let mut sales = self.sales.lock().unwrap();
        let Some(sale) = sales.get_mut(sale_id.as_str()) else {
            return Err(Rejected::Aggregate);
        };
        sale.stock += units
            .iter()
            .map(|u| i64::from(u.payload.holder.units))
            .sum::<i64>();
        *self.sale_writes.lock().unwrap() += 1;
        for (buyer, k) in counts {
            *buyers
                .get_mut(&(sale_id.to_string(), buyer.to_owned()))
                .unwrap() -= k;
        }
        for unit in units {
            orders.get_mut(&unit.marker).unwrap().status = OrderStatus::Cancelled;
        }
        Ok(())
    }

    async fn stock_remaining(&self, sale_id: &SaleId) -> Result<Option<i64>, OrderStoreError> {
        Ok(self
            .sales
            .lock()
            .unwrap()
            .get(sale_id.as_str())
            .map(|s| s.stock))
    }

    async fn sale_guards(&self, sale_id: &SaleId) -> Result<Option<SaleGuards>, OrderStoreError> {
        Ok(self
            .sales
            .lock()
            .unwrap()
            .get(sale_id.as_str())
            .map(|sale| SaleGuards {
                stock_remaining: sale.stock,
                per_user_limit: sale.per_user_limit,
                price_cents: PRICE_CENTS,
            }))
    }

    async fn buyer_units(&self, sale_id: &SaleId, user: &UserId) -> Result<i64, OrderStoreError> {
        Ok(self.units(sale_id.as_str(), user.as_str()))
    }

    async fn order(&self, order_id: &OrderId) -> Result<Option<Order>, OrderStoreError> {
        Ok(self.orders.lock().unwrap().get(order_id.as_str()).cloned())
    }

    async fn orders_of(
        &self,
        user: &UserId,
        limit: PageLimit,
        cursor: Option<&Cursor>,
    ) -> Result<OrderPage, OrderStoreError> {
        let mut mine: Vec<Order> = self
            .orders
            .lock()
            .unwrap()
            .values()
            .filter(|o| o.user_id == *user)
            .cloned()
            .collect();
        mine.sort_by(|a, b| {
            (&b.created_at, b.order_id.as_str()).cmp(&(&a.created_at, a.order_id.as_str()))
        });
        let start = match cursor {
            None => 0,
            Some(cursor) => {
                if cursor.get("user") != Some(user.as_str()) {
                    return Err(OrderStoreError::InvalidCursor(InvalidCursor));
                }
                cursor
                    .get("after")
                    .and_then(|id| mine.iter().position(|o| o.order_id.as_str() == id))
                    .ok_or(InvalidCursor)?
                    + 1
            }
        };
        let limit = limit.get() as usize;
        let items: Vec<Order> = mine.iter().skip(start).take(limit).cloned().collect();
        let next = (start + limit < mine.len()).then(|| {
            Cursor::new(BTreeMap::from([
                ("user".to_owned(), user.to_string()),
                (
                    "after".to_owned(),
                    items.last().unwrap().order_id.to_string(),
                ),
            ]))
        });
        Ok(OrderPage { items, next })
    }

    async fn keep_for_delivery(
        &self,
        order_id: &OrderId,
        user: &UserId,
    ) -> Result<bool, OrderStoreError> {
        let mut orders = self.orders.lock().unwrap();
        match orders.get_mut(order_id.as_str()) {
            Some(order) if order.user_id == *user && order.status == OrderStatus::Confirmed => {
                order.status = OrderStatus::Cod;
                order.payment_method = Some(PaymentMethod::Cod);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn open_payment(
        &self,
        order_id: &OrderId,
        user: &UserId,
        new_payment_id: &str,
    ) -> Result<Option<String>, OrderStoreError> {
        let mut orders = self.orders.lock().unwrap();
        Ok(match orders.get_mut(order_id.as_str()) {
            Some(order) if order.user_id == *user && order.status == OrderStatus::Confirmed => {
                Some(
                    order
                        .payment_id
                        .get_or_insert_with(|| new_payment_id.to_owned())
                        .clone(),
                )
            }
            _ => None,
        })
    }

    async fn settle_online(
        &self,
        order_id: &OrderId,
        payment_id: &str,
        at: &str,
    ) -> Result<bool, OrderStoreError> {
        let mut orders = self.orders.lock().unwrap();
        match orders.get_mut(order_id.as_str()) {
            Some(order)
                if order.status == OrderStatus::Confirmed
                    && order.payment_id.as_deref() == Some(payment_id) =>
            {
                order.status = OrderStatus::Paid;
                order.payment_method = Some(PaymentMethod::Online);
                order.paid_at = Some(at.to_owned());
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn record_refund(&self, refund: &Refund) -> Result<bool, OrderStoreError> {
        let mut refunds = self.refunds.lock().unwrap();
        // One per payment and order, as the table's key (`REFUND#<payment>`, `ORDER#<order>`).
        if refunds
            .iter()
            .any(|r| r.payment_id == refund.payment_id && r.order_id == refund.order_id)
        {
            return Ok(false);
        }
        refunds.push(refund.clone());
        self.refund_states.lock().unwrap().insert(
            (refund.payment_id.clone(), refund.order_id.to_string()),
            (RefundState::Due, None, None),
        );
        if let Some(order) = self
            .orders
            .lock()
            .unwrap()
            .get_mut(refund.order_id.as_str())
        {
            order.refunds.push(OrderRefund {
                payment_id: refund.payment_id.clone(),
                amount_cents: refund.amount_cents,
                currency: refund.currency.clone(),
                reason: refund.reason.as_str().to_owned(),
                state: RefundState::Due,
                recorded_at: refund.recorded_at.clone(),
                refunded_at: None,
            });
        }
        Ok(true)
    }

    async fn refunds_due(
        &self,
        limit: PageLimit,
        cursor: Option<&Cursor>,
    ) -> Result<RefundPage, OrderStoreError> {
        let records: Vec<RefundRecord> = self.refunds().iter().map(|r| self.record(r)).collect();
        let mut due: Vec<RefundRecord> = records
            .into_iter()
            .filter(|r| r.state == RefundState::Due)
            .collect();
        due.sort_by(|a, b| (&a.recorded_at, &a.payment_id).cmp(&(&b.recorded_at, &b.payment_id)));
        let start = match cursor {
            None => 0,
            Some(cursor) => {
                cursor
                    .get("after")
                    .and_then(|after| {
                        due.iter()
                            .position(|r| format!("{}#{}", r.payment_id, r.order_id) == after)
                    })
                    .ok_or(InvalidCursor)?
                    + 1
            }
        };
        let limit = limit.get() as usize;
        let items: Vec<RefundRecord> = due.iter().skip(start).take(limit).cloned().collect();
        let next = (start + limit < due.len()).then(|| {
            let last = items.last().unwrap();
            Cursor::new(BTreeMap::from([(
                "after".to_owned(),
                format!("{}#{}", last.payment_id, last.order_id),
            )]))
        });
        Ok(RefundPage { items, next })
    }

    async fn refunds_outstanding(&self) -> Result<Outstanding, OrderStoreError> {
        let due: Vec<RefundRecord> = self
            .refunds()
            .iter()
            .map(|r| self.record(r))
            .filter(|r| r.state == RefundState::Due)
            .collect();
        Ok(Outstanding {
            count: due.len() as u64,
            oldest_recorded_at: due.iter().map(|r| r.recorded_at.clone()).min(),
        })
    }

    async fn refund(
        &self,
        payment_id: &str,
        order_id: &OrderId,
    ) -> Result<Option<RefundRecord>, OrderStoreError> {
        Ok(self
            .refunds()
            .iter()
            .find(|r| r.payment_id == payment_id && r.order_id == *order_id)
            .map(|r| self.record(r)))
    }

    async fn confirm_delivery(
        &self,
        order_id: &OrderId,
        at: &str,
    ) -> Result<Option<Order>, OrderStoreError> {
        let mut orders = self.orders.lock().unwrap();
        Ok(orders.get_mut(order_id.as_str()).map(|order| {
            if order.status == OrderStatus::Cod && order.delivery_confirmed_at.is_none() {
                order.delivery_confirmed_at = Some(at.to_owned());
            }
            order.clone()
        }))
    }

    async fn claim_payment_refund(
        &self,
        payment_id: &str,
        order_id: &OrderId,
    ) -> Result<Option<OrderId>, OrderStoreError> {
        let mut ledger = self.refund_ledger.lock().unwrap();
        let holder = ledger
            .entry(payment_id.to_owned())
            .or_insert_with(|| order_id.clone());
        Ok((holder != order_id).then(|| holder.clone()))
    }

    async fn mark_refunded(
        &self,
        refund: &RefundRecord,
        provider_refund_id: &str,
        at: &str,
    ) -> Result<bool, OrderStoreError> {
        let mut states = self.refund_states.lock().unwrap();
        let key = (refund.payment_id.clone(), refund.order_id.to_string());
        match states.get_mut(&key) {
            Some(state) if state.0 == RefundState::Due => {
                *state = (
                    RefundState::Refunded,
                    Some(at.to_owned()),
                    Some(provider_refund_id.to_owned()),
                );
            }
            _ => return Ok(false),
        }
        if let Some(order) = self
            .orders
            .lock()
            .unwrap()
            .get_mut(refund.order_id.as_str())
        {
            for entry in &mut order.refunds {
                if entry.payment_id == refund.payment_id {
                    entry.state = RefundState::Refunded;
                    entry.refunded_at = Some(at.to_owned());
                }
            }
        }
        Ok(true)
    }

    async fn live_sales(&self) -> Result<LiveSales, OrderStoreError> {
        let mut sales: Vec<LiveSale> = self
            .sales
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, sale)| sale.live)
            .map(|(id, sale)| LiveSale {
                sale_id: SaleId::parse(id).unwrap(),
                stock_remaining: Some(sale.stock),
                ends_at_ms: sale.ends_at_ms,
            })
            .collect();
        sales.sort_by(|a, b| a.sale_id.as_str().cmp(b.sale_id.as_str()));
        let items_read = sales.len();
        Ok(LiveSales { sales, items_read })
    }

    async fn retire_sale(&self, sale_id: &SaleId, _now: &str) -> Result<bool, OrderStoreError> {
        let mut sales = self.sales.lock().unwrap();
        Ok(sales
            .get_mut(sale_id.as_str())
            .is_some_and(|sale| std::mem::replace(&mut sale.live, false)))
    }
}
