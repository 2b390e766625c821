//! The runner's own tests: the fixture template and the small fixture functions, run for real.

#![expect(
    clippy::unwrap_used,
    reason = "a test's helpers fail the test with a panic, as its assertions do"
)]

mod gateway;
mod gateway_load;
mod guard;
mod invoke;
mod lambda_cpu;
mod provision;
mod sources;
mod support;
