//! Adapter tests against the real local emulators: moto for DynamoDB, SQS and S3, and
//! `redis-server`. `make test` starts them and exports their endpoints; every test makes its
//! own table, queue or key prefix, so the tests run in parallel.

#![expect(
    clippy::unwrap_used,
    reason = "a test's helpers fail the test with a panic, as its assertions do"
)]

mod admin_mfa;
mod async_path;
mod backfill;
mod conflicts;
mod dynamo;
mod follow_graph;
mod order_path;
mod page_store;
mod profile_store;
mod queue;
mod redis_endpoint;
mod redis_script;
mod reservations;
mod sale_admission;
mod sale_end;
mod sale_figures;
mod sale_index;
mod secret;
mod support;
