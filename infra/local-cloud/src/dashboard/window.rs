//! A window of per-second slots over the last few minutes: bounded memory, one slot per
//! second, an old slot reused (reset) when its second comes round again.

/// Seconds of history every chart of the dashboard holds.
pub(crate) const SECONDS: usize = 300;

/// What one second holds; `reset` empties a reused slot without giving its memory back.
pub(crate) trait Slot: Default {
    fn reset(&mut self);
}

pub(crate) struct Window<T> {
    /// `(epoch second, value)`; second 0 for a slot never used.
    slots: Box<[(u64, T)]>,
}

impl<T: Slot> Default for Window<T> {
    fn default() -> Self {
        Self {
            slots: (0..SECONDS).map(|_| (0, T::default())).collect(),
        }
    }
}

impl<T: Slot> Window<T> {
    /// The slot of `second`, emptied first if it held an older second; `None` for a second
    /// that its slot has already moved past (a straggler older than the window).
    pub(crate) fn at(&mut self, second: u64) -> Option<&mut T> {
        let (held, value) = &mut self.slots[second as usize % SECONDS];
        if *held == second {
            return Some(value);
        }
        if *held > second {
            return None;
        }
        *held = second;
        value.reset();
        Some(value)
    }

    /// The seconds in `(now - SECONDS, now]` that hold something, oldest first.
    pub(crate) fn recent(&self, now: u64) -> impl Iterator<Item = (u64, &T)> {
        let from = now.saturating_sub(SECONDS as u64 - 1);
        (from..=now).filter_map(move |second| {
            let (held, value) = &self.slots[second as usize % SECONDS];
            (*held == second && second != 0).then_some((second, value))
        })
    }
}

/// The current epoch second.
pub(crate) fn now_second() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Count(u32);

    impl Slot for Count {
        fn reset(&mut self) {
            self.0 = 0;
        }
    }

    #[test]
    fn a_slot_is_reused_a_window_later_and_stragglers_are_dropped() {
        let mut window = Window::<Count>::default();
        let start = 1_000_000;
        window.at(start).unwrap().0 += 2;
        window.at(start + 1).unwrap().0 += 1;
        let seen: Vec<(u64, u32)> = window.recent(start + 1).map(|(s, c)| (s, c.0)).collect();
        assert_eq!(seen, [(start, 2), (start + 1, 1)]);

        let later = start + SECONDS as u64;
        window.at(later).unwrap().0 += 5;
        assert!(window.at(start).is_none(), "older than its slot");
        let seen: Vec<(u64, u32)> = window.recent(later).map(|(s, c)| (s, c.0)).collect();
        assert_eq!(seen, [(start + 1, 1), (later, 5)]);
    }
}
