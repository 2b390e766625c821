//! Stream lag: how old the records are when the stream poller hands them to a function
//! (Lambda's `IteratorAge`), and how many it hands over, per second.

use super::window::{Slot, Window};
use std::sync::{Mutex, PoisonError};

#[derive(Default)]
struct Second {
    batches: u32,
    records: u32,
    max_age_ms: u64,
}

impl Slot for Second {
    fn reset(&mut self) {
        *self = Self::default();
    }
}

/// One stream event source: a table's stream feeding a function.
pub(crate) struct StreamStats {
    function: String,
    table: String,
    window: Mutex<Window<Second>>,
}

#[derive(serde::Serialize, Debug)]
pub(crate) struct StreamView {
    pub(crate) function: String,
    pub(crate) table: String,
    pub(crate) seconds: Vec<StreamSecond>,
}

#[derive(serde::Serialize, Debug, PartialEq)]
pub(crate) struct StreamSecond {
    pub(crate) t: u64,
    pub(crate) batches: u32,
    pub(crate) records: u32,
    /// The oldest record handed over in this second, in milliseconds since it was written.
    #[serde(rename = "maxAgeMs")]
    pub(crate) max_age_ms: u64,
}

impl StreamStats {
    pub(crate) fn new(function: &str, table: &str) -> Self {
        Self {
            function: function.to_owned(),
            table: table.to_owned(),
            window: Mutex::default(),
        }
    }

    pub(crate) fn is(&self, function: &str, table: &str) -> bool {
        self.function == function && self.table == table
    }

    /// A batch of `records` handed to the function in `second`, the oldest written
    /// `oldest_age_ms` ago.
    pub(crate) fn handed(&self, second: u64, records: usize, oldest_age_ms: u64) {
        let mut window = self.window.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = window.at(second) {
            slot.batches += 1;
            slot.records = slot.records.saturating_add(records as u32);
            slot.max_age_ms = slot.max_age_ms.max(oldest_age_ms);
        }
    }

    pub(crate) fn view(&self, now: u64) -> StreamView {
        let window = self.window.lock().unwrap_or_else(PoisonError::into_inner);
        StreamView {
            function: self.function.clone(),
            table: self.table.clone(),
            seconds: window
                .recent(now)
                .filter(|(_, second)| second.batches > 0)
                .map(|(t, second)| StreamSecond {
                    t,
                    batches: second.batches,
                    records: second.records,
                    max_age_ms: second.max_age_ms,
                })
                .collect(),
        }
    }
}
