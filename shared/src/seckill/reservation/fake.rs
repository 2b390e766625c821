//! An in-memory reservation book and list, for domain and handler tests.

use super::*;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Default)]
pub struct MemoryBook {
    /// The sales the cache holds.
    pub windows: Mutex<HashMap<SaleId, Window>>,
    /// The table's items: (sale, user) → reserved at.
    pub items: Mutex<HashMap<(SaleId, UserId), String>>,
    /// The cache's sets.
    pub sets: Mutex<HashMap<SaleId, HashSet<UserId>>>,
    /// Makes the cache's writes fail.
    pub fail_set: AtomicBool,
}

#[async_trait]
impl ReservationBook for MemoryBook {
    async fn put(&self, sale: &SaleId, user: &UserId, at: &str) -> Result<(), StoreError> {
        self.items
            .lock()
            .unwrap()
            .entry((sale.clone(), user.clone()))
            .or_insert_with(|| at.to_owned());
        Ok(())
    }

    async fn delete(&self, sale: &SaleId, user: &UserId) -> Result<(), StoreError> {
        self.items
            .lock()
            .unwrap()
            .remove(&(sale.clone(), user.clone()));
        Ok(())
    }

    async fn holds(&self, sale: &SaleId, user: &UserId) -> Result<bool, StoreError> {
        Ok(self
            .items
            .lock()
            .unwrap()
            .contains_key(&(sale.clone(), user.clone())))
    }
}

#[async_trait]
impl ReservationList for MemoryBook {
    async fn standing(&self, sale: &SaleId, user: &UserId) -> Result<Option<Standing>, StoreError> {
        let Some(window) = self.windows.lock().unwrap().get(sale).copied() else {
            return Ok(None);
        };
        let sets = self.sets.lock().unwrap();
        let set = sets.get(sale);
        Ok(Some(Standing {
            window,
            reserved: set.is_some_and(|set| set.contains(user)),
            reservations: set.map_or(0, |set| set.len() as u64),
        }))
    }

    async fn set(&self, sale: &SaleId, user: &UserId, reserved: bool) -> Result<u64, StoreError> {
        if self.fail_set.load(Ordering::SeqCst) {
            return Err(StoreError(anyhow::anyhow!("cache unreachable")));
        }
        let mut sets = self.sets.lock().unwrap();
        let set = sets.entry(sale.clone()).or_default();
        if reserved {
            set.insert(user.clone());
        } else {
            set.remove(user);
        }
        Ok(set.len() as u64)
    }
}
