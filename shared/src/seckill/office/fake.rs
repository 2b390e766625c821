//! An in-memory back office over the sale fake's definitions.

use super::*;
use crate::seckill::office::figures::{OrderTallies, RefundsDue, SaleLedger};
use crate::seckill::order::OrderStoreError;
use crate::seckill::order::fake::MemoryOrders;
use crate::seckill::order::refund::RefundState;
use crate::seckill::sale::fake::MemorySales;
use std::sync::Mutex;

#[derive(Default)]
pub struct MemoryOffice {
    pub sales: MemorySales,
    /// The closes Redis was asked for, in order.
    pub closed: Mutex<Vec<(SaleId, i64)>>,
}

#[async_trait]
impl SaleOffice for MemoryOffice {
    async fn page(
        &self,
        state: Option<Lifecycle>,
        limit: PageLimit,
        _cursor: Option<&Cursor>,
    ) -> Result<SalePage, OfficeError> {
        let mut items: Vec<Sale> = self.sales.sales.lock().unwrap().values().cloned().collect();
        items.retain(|sale| state.is_none_or(|state| sale.state == state));
        items.sort_by(|a, b| b.created_at.cmp(&a.created_at));
        items.truncate(limit.get() as usize);
        Ok(SalePage { items, next: None })
    }

    async fn live(&self) -> Result<Vec<Sale>, StoreError> {
        let sales = self.sales.sales.lock().unwrap();
        Ok(sales
            .values()
            .filter(|sale| sale.state != Lifecycle::Draft)
            .cloned()
            .collect())
    }

    async fn replace_draft(&self, sale: &Sale) -> Result<bool, StoreError> {
        let mut sales = self.sales.sales.lock().unwrap();
        match sales.get_mut(&sale.id) {
            Some(current) if current.state == Lifecycle::Draft => {
                *current = sale.clone();
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn end(&self, id: &SaleId, now: OffsetDateTime) -> Result<Ending, StoreError> {
        let mut sales = self.sales.sales.lock().unwrap();
        let Some(sale) = sales.get_mut(id) else {
            return Ok(Ending::Unknown);
        };
        Ok(match sale.state {
            Lifecycle::Draft => Ending::Draft,
            Lifecycle::Ended => Ending::AlreadyEnded(sale.clone()),
            Lifecycle::Published if sale.ends_at <= now => Ending::Over(sale.clone()),
            Lifecycle::Published => {
                sale.state = Lifecycle::Ended;
                sale.ends_at = now;
                Ending::Ended(sale.clone())
            }
        })
    }

    async fn get(&self, id: &SaleId) -> Result<Option<Sale>, StoreError> {
        Ok(self.sales.sales.lock().unwrap().get(id).cloned())
    }

    async fn reservations(&self, id: &SaleId) -> Result<u64, StoreError> {
        Ok(self
            .sales
            .reserved
            .lock()
            .unwrap()
            .get(id)
            .map_or(0, Vec::len) as u64)
    }
}

#[async_trait]
impl SaleCloser for MemoryOffice {
    async fn close(&self, id: &SaleId, ends_at_ms: i64) -> Result<(), StoreError> {
        self.closed.lock().unwrap().push((id.clone(), ends_at_ms));
        Ok(())
    }
}

/// The sale's orders, as gsi3 holds them: each order of the sale, by its `saleId`.
#[async_trait]
impl SaleLedger for MemoryOrders {
    async fn order_tallies(&self, sale_id: &SaleId) -> Result<OrderTallies, OrderStoreError> {
        let mut tallies = OrderTallies::default();
        for order in self.orders.lock().unwrap().values() {
            if order.sale_id == *sale_id {
                tallies.items_read += 1;
                tallies.add(order.status, order.quantity, order.price_cents);
            }
        }
        Ok(tallies)
    }

    async fn refunds_due_of(&self, sale_id: &SaleId) -> Result<RefundsDue, OrderStoreError> {
        let mut due = RefundsDue::default();
        for refund in self.refunds() {
            if refund.order_id.sale_id() == sale_id
                && self.record(&refund).state == RefundState::Due
            {
                due.count += 1;
                due.amount_cents += refund.amount_cents;
            }
        }
        Ok(due)
    }
}
