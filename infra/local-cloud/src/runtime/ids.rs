//! Unique ids for invocations and HTTP requests, without a syscall per id: a per-process
//! random seed, a counter, and the splitmix64 mixer (a bijection, so ids never repeat).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// 128 random-looking bits; the first 64 are unique for the life of the process.
pub(crate) fn next_u128() -> u128 {
    static SEED: OnceLock<u64> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let seed = *SEED.get_or_init(|| uuid::Uuid::new_v4().as_u64_pair().0);
    let state = seed.wrapping_add(COUNTER.fetch_add(GOLDEN, Ordering::Relaxed));
    let high = mix(state);
    let low = mix(state ^ 0x5851_F42D_4C95_7F2D);
    (u128::from(high) << 64) | u128::from(low)
}

/// A version 4 UUID, as Lambda's request ids are.
pub(crate) fn request_uuid() -> uuid::Uuid {
    uuid::Builder::from_random_bytes(next_u128().to_be_bytes()).into_uuid()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_do_not_repeat_and_are_v4() {
        let ids: HashSet<uuid::Uuid> = (0..10_000).map(|_| request_uuid()).collect();
        assert_eq!(ids.len(), 10_000);
        assert!(ids.iter().all(|id| id.get_version_num() == 4));
    }
}
