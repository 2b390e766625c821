//! In-memory adapters of the sale ports, for domain and handler tests: the sales and the
//! cache, and a page store and page queue that can be told to fail.

use super::*;
use crate::seckill::sale::page::{PageError, PageRequests, SalePages};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Default)]
pub struct MemorySales {
    pub sales: Mutex<HashMap<SaleId, Sale>>,
    pub cached: Mutex<HashMap<SaleId, SaleDetail>>,
    /// The durable reservations (预约) of each sale, as the table holds them.
    pub reserved: Mutex<HashMap<SaleId, Vec<UserId>>>,
    /// What the cache was last preheated with: the reserved buyers.
    pub cached_reserved: Mutex<HashMap<SaleId, Vec<UserId>>>,
}

#[async_trait]
impl SaleStore for MemorySales {
    async fn create(&self, sale: &Sale) -> Result<(), StoreError> {
        self.sales
            .lock()
            .unwrap()
            .insert(sale.id.clone(), sale.clone());
        Ok(())
    }

    async fn publish(&self, id: &SaleId, _now: &str) -> Result<Option<Sale>, StoreError> {
        let mut sales = self.sales.lock().unwrap();
        Ok(sales.get_mut(id).map(|sale| {
            if sale.state == Lifecycle::Draft {
                sale.state = Lifecycle::Published;
            }
            sale.clone()
        }))
    }

    async fn get(&self, id: &SaleId) -> Result<Option<Sale>, StoreError> {
        Ok(self.sales.lock().unwrap().get(id).cloned())
    }

    async fn reserved(&self, id: &SaleId) -> Result<Vec<UserId>, StoreError> {
        Ok(self
            .reserved
            .lock()
            .unwrap()
            .get(id)
            .cloned()
            .unwrap_or_default())
    }
}

#[async_trait]
impl SaleCache for MemorySales {
    async fn preheat(&self, sale: &Sale, reserved: &[UserId]) -> Result<(), StoreError> {
        let mut held = self.cached_reserved.lock().unwrap();
        let held = held.entry(sale.id.clone()).or_default();
        for user in reserved {
            if !held.contains(user) {
                held.push(user.clone());
            }
        }
        let reservations = held.len() as u64;
        let mut cached = self.cached.lock().unwrap();
        let live = cached.get(&sale.id).map(|detail| detail.stock_remaining);
        cached.insert(
            sale.id.clone(),
            SaleDetail {
                id: sale.id.clone(),
                product_id: sale.product_id.clone(),
                title: sale.title.clone(),
                price_cents: sale.price_cents,
                per_user_limit: sale.per_user_limit,
                starts_at_ms: crate::clock::epoch_ms(sale.starts_at),
                ends_at_ms: crate::clock::epoch_ms(sale.ends_at),
                stock: sale.initial_stock,
                stock_remaining: live.unwrap_or(i64::from(sale.stock_remaining)),
                reservation_opens_at_ms: sale.reservation_opens_at.map(crate::clock::epoch_ms),
                reservations,
            },
        );
        Ok(())
    }

    async fn detail(&self, id: &SaleId) -> Result<Option<SaleDetail>, StoreError> {
        Ok(self.cached.lock().unwrap().get(id).cloned())
    }
}

#[derive(Default)]
pub struct MemoryPages {
    pub pages: Mutex<HashMap<SaleId, String>>,
    pub fail: AtomicBool,
}

#[async_trait]
impl SalePages for MemoryPages {
    async fn put(&self, id: &SaleId, html: String) -> Result<(), PageError> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(PageError(anyhow::anyhow!("bucket unreachable")));
        }
        self.pages.lock().unwrap().insert(id.clone(), html);
        Ok(())
    }
}

/// The ids publish-sale asked pages for, in order.
#[derive(Default)]
pub struct MemoryPageRequests {
    pub requested: Mutex<Vec<SaleId>>,
    pub fail: AtomicBool,
}

#[async_trait]
impl PageRequests for MemoryPageRequests {
    async fn request(&self, id: &SaleId) -> Result<(), PageError> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(PageError(anyhow::anyhow!("queue unreachable")));
        }
        self.requested.lock().unwrap().push(id.clone());
        Ok(())
    }
}
