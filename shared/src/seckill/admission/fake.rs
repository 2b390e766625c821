//! An in-memory admission store with the script's semantics, and a publisher that can fail.

use super::*;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// A sale's window (ms), per-user limit, price and stock.
pub type FakeSale = (i64, i64, u32, u64, i64);

/// What a buyer's key admitted: (fingerprint, order id, price, reserved at ms).
pub type KeptKey = (String, OrderId, u64, i64);

#[derive(Default)]
pub struct MemoryAdmission {
    pub sales: Mutex<HashMap<SaleId, FakeSale>>,
    /// Per user, across sales: (start of the one-second window in ms, attempts in it).
    pub attempts: Mutex<HashMap<UserId, (i64, u32)>>,
    pub bought: Mutex<HashMap<(SaleId, UserId), u32>>,
    /// Order id → its buyer and units.
    pub pending: Mutex<HashMap<OrderId, (UserId, u32)>>,
    pub released: Mutex<HashSet<OrderId>>,
    /// (buyer, key) → what it admitted, as `order-key`.
    pub keys: Mutex<HashMap<(UserId, String), KeptKey>>,
    /// Orders given up while still pending (never orders): their keys are free again.
    pub withdrawn: Mutex<HashSet<OrderId>>,
    /// The sales that require a reservation (预约), each with the buyers who hold one.
    pub reserved: Mutex<HashMap<SaleId, HashSet<UserId>>>,
}

impl MemoryAdmission {
    pub fn stock(&self, sale: &SaleId) -> i64 {
        self.sales.lock().unwrap()[sale].4
    }
}

#[async_trait]
impl Admission for MemoryAdmission {
    async fn reserve(&self, r: &Reservation) -> Result<Verdict, AdmissionError> {
        // First, as the script's INCR with a one-second expiry: every attempt counts.
        let mut attempts = self.attempts.lock().unwrap();
        let window = attempts.entry(r.user_id.clone()).or_insert((r.now_ms, 0));
        if r.now_ms >= window.0 + 1_000 {
            *window = (r.now_ms, 0);
        }
        window.1 += 1;
        if window.1 > r.rate_limit_per_second {
            return Ok(Verdict::RateLimited);
        }
        drop(attempts);
        if let Some(key) = &r.idempotency {
            let kept = self.keys.lock().unwrap();
            if let Some((fingerprint, order, price, at)) =
                kept.get(&(r.user_id.clone(), key.key.clone()))
            {
                if *fingerprint != key.fingerprint {
                    return Ok(Verdict::KeyReused);
                }
                if !self.withdrawn.lock().unwrap().contains(order) {
                    let pending = self.pending.lock().unwrap().contains_key(order);
                    return Ok(Verdict::Replayed {
                        order_id: order.clone(),
                        price_cents: *price,
                        pending_since_ms: pending.then_some(*at),
                    });
                }
            }
        }
        let mut sales = self.sales.lock().unwrap();
        let Some(sale) = sales.get_mut(&r.sale_id) else {
            return Ok(Verdict::UnknownSale);
        };
        if r.now_ms < sale.0 {
            return Ok(Verdict::NotStarted);
        }
        if r.now_ms >= sale.1 {
            return Ok(Verdict::Ended);
        }
        if let Some(reserved) = self.reserved.lock().unwrap().get(&r.sale_id)
            && !reserved.contains(&r.user_id)
        {
            return Ok(Verdict::NotReserved);
        }
        let mut bought = self.bought.lock().unwrap();
        let held = bought
            .entry((r.sale_id.clone(), r.user_id.clone()))
            .or_default();
        let quantity = r.checkout.quantity;
        if *held + quantity > sale.2 {
            return Ok(Verdict::LimitReached {
                room: sale.2.saturating_sub(*held),
            });
        }
        if sale.4 <= 0 {
            return Ok(Verdict::SoldOut);
        }
        if sale.4 < i64::from(quantity) {
            return Ok(Verdict::NotEnoughStock {
                left: u32::try_from(sale.4).unwrap(),
            });
        }
        sale.4 -= i64::from(quantity);
        *held += quantity;
        self.pending
            .lock()
            .unwrap()
            .insert(r.order_id.clone(), (r.user_id.clone(), quantity));
        if let Some(key) = &r.idempotency {
            self.keys.lock().unwrap().insert(
                (r.user_id.clone(), key.key.clone()),
                (
                    key.fingerprint.clone(),
                    r.order_id.clone(),
                    sale.3,
                    r.now_ms,
                ),
            );
        }
        Ok(Verdict::Reserved {
            price_cents: sale.3,
        })
    }

    async fn release(
        &self,
        sale_id: &SaleId,
        order_id: &OrderId,
        holder: Option<&Holder>,
    ) -> Result<bool, AdmissionError> {
        if !self.released.lock().unwrap().insert(order_id.clone()) {
            return Ok(false);
        }
        let (user, units) = match (self.pending.lock().unwrap().remove(order_id), holder) {
            (Some(pending), _) => {
                self.withdrawn.lock().unwrap().insert(order_id.clone());
                pending
            }
            (None, Some(holder)) => (holder.user_id.clone(), holder.units),
            (None, None) => {
                self.released.lock().unwrap().remove(order_id);
                return Ok(false);
            }
        };
        self.sales.lock().unwrap().get_mut(sale_id).unwrap().4 += i64::from(units);
        *self
            .bought
            .lock()
            .unwrap()
            .get_mut(&(sale_id.clone(), user))
            .unwrap() -= units;
        Ok(true)
    }
}

#[derive(Default)]
pub struct MemoryPublisher {
    pub fail: AtomicBool,
    pub sent: Mutex<Vec<Envelope<OrderPlaced>>>,
}

#[async_trait]
impl OrderPublisher for MemoryPublisher {
    async fn order_placed(&self, event: &Envelope<OrderPlaced>) -> Result<(), PublishError> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(anyhow::anyhow!("queue unavailable").into());
        }
        self.sent.lock().unwrap().push(event.clone());
        Ok(())
    }
}
