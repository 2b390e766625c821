//! Everything the Lambda functions share: configuration, cloud clients, the HTTP boundary,
//! the caller's identity, the adapters and the domain.
//!
//! # Layout
//!
//! Each product is a module with its own layout section: [`social`] (the follow product) and
//! [`seckill`] (the flash-sale product). Neither imports the other; what both need is here,
//! at the crate's top level:
//!
//! - [`boot`] (boundary): the cold start of every function's `main`: logging, environment,
//!   adapters; the one module that names the adapters of both products.
//! - [`config`] (boundary): the environment, read once at cold start; every error names its
//!   variable.
//! - [`cloud`] (adapter): the one `SdkConfig`, the clients derived from it and the Redis
//!   connection.
//! - [`telemetry`] (boundary): logging, JSON in Lambda.
//! - [`emf`] (boundary): the functions' own metrics, as CloudWatch Embedded Metric Format
//!   lines written once per invocation; the table of every metric.
//! - [`auth`] (boundary): who is calling, from the JWT authorizer's verified claims.
//! - [`local_token`] (boundary): the local HS256 bearer tokens of `make token`, verified by
//!   the runner's authorizer, and by the functions themselves under `sam local` only.
//! - [`admin_mfa`] (domain, port, adapter): the Cognito trigger that keeps `admin` out of
//!   tokens without MFA.
//! - [`http`] (routes): JSON in and out, and the error body and status of every route.
//! - [`error_code`] (routes): every error code the API answers with, the list `openapi.yaml`'s
//!   error schema enumerates.
//! - [`ids`] (domain): every identifier, parsed once at the boundary: users, sales, orders.
//! - [`events`] (domain): every event on the queues, of both products, in its versioned
//!   envelope.
//! - [`cursor`] (domain): page size and the opaque cursor of every list, with the one check
//!   that a cursor fits its list.
//! - [`layout`] (domain): the shop pages' shared head and layout (`shop/_layout/`), included
//!   where a page names it: one expansion for the runner's site and the sale page.
//! - [`text`] (domain): the rules for user-supplied names and titles (NFC, no invisible
//!   characters).
//! - [`clock`] (domain): wall-clock time as RFC 3339.
//! - [`once`] (domain, port): apply a batch of effects once: a marker per effect, one
//!   aggregated write.
//! - [`consumer`] (boundary): the SQS batch plumbing of every queue consumer (partial batch
//!   failures).
//! - [`retry`] (domain): capped exponential backoff with full jitter, for what AWS refuses
//!   for a moment (transaction conflicts, throttling).
//! - [`dynamo`], [`queue`], [`script`] (adapters): DynamoDB transactions, reads, paged
//!   queries and attributes (`dynamo/through_the_sdk.rs` tests its retries against the SDK's
//!   own parsing of DynamoDB's errors), SQS queues, Redis Lua scripts.
//! - [`sample_events`] (tests, tools): the builders of the events AWS delivers to the
//!   functions that are not HTTP routes, and (`samples.rs`) the set of them in `events/`, for
//!   invoking those functions by hand.
//! - `testing` (tests only): helpers of the unit tests.
//!
//! The domain modules never name an AWS or Redis type: they take small port traits, and the
//! adapters beside them implement those ports.

pub mod admin_mfa;
pub mod auth;
pub mod boot;
pub mod clock;
pub mod cloud;
pub mod config;
pub mod consumer;
pub mod cursor;
pub mod dynamo;
pub mod emf;
pub mod error_code;
pub mod events;
pub mod fault;
pub mod http;
pub mod ids;
pub mod layout;
pub mod local_token;
pub mod once;
pub mod queue;
pub mod retry;
pub mod sample_events;
pub mod script;
pub mod seckill;
pub mod social;
pub mod telemetry;
pub mod text;

#[cfg(test)]
mod testing;
