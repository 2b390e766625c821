//! The flash sale's cache failover: Redis replaced by ElastiCache's failover, then reconciled.
//!
//! The bootstrap Lambda runs for these functions ([`app::boot::run_bundle`]): each is
//! deployed as a function of its own and runs the `main` of the folder its `Handler` names.

#[path = "../../cache-failover/src/main.rs"]
mod cache_failover;

fn main() -> Result<(), lambda_runtime::Error> {
    app::boot::run_bundle(&[("cache-failover", cache_failover::main)])
}
