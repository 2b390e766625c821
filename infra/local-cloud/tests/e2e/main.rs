//! End-to-end tests of the products: the project's own `template.yaml` run by the local cloud
//! runner with the real function binaries, against the emulators, driven over HTTP as a
//! client would.

#![expect(
    clippy::unwrap_used,
    reason = "a test's helpers fail the test with a panic, as its assertions do"
)]

mod abuse;
mod back_office;
mod browser;
mod cache_failover;
mod cod;
mod cold_start;
mod contention;
mod dashboard;
mod decoupling;
mod follow;
mod hostile;
mod hot_keys;
mod journey;
mod metrics;
mod payment;
mod redis_loss;
mod reliability;
mod reservation;
mod sealed;
mod seckill;
mod shop;
mod support;
mod throttling;
mod transient;
