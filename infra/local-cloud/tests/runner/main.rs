//! The runner's own tests: the fixture template and the small fixture functions, run for real.

mod gateway;
mod gateway_load;
mod invoke;
mod lambda_cpu;
mod provision;
mod sources;
mod support;
