//! Everything the Lambda functions share: configuration, cloud clients, the HTTP boundary,
//! the caller's identity, the adapters and the domain.
//!
//! # Layout
//!
//! - [`config`]: the environment, read once at cold start; every error names its variable.
//! - [`cloud`]: the one `SdkConfig`, the clients derived from it and the Redis connection.
//! - [`telemetry`]: logging, JSON in Lambda.
//! - [`auth`]: who is calling, from the JWT authorizer's verified claims.
//! - [`admin_mfa`]: the Cognito trigger that keeps `admin` out of tokens without MFA.
//! - [`http`]: JSON in and out, and the error body and status of every route.
//! - [`cursor`]: page size and the opaque cursor of every list.
//! - [`dynamo`], [`queue`], [`script`]: adapters for DynamoDB transactions, SQS queues and
//!   Redis Lua scripts.
//! - [`retry`]: capped exponential backoff with full jitter, for what AWS refuses for a
//!   moment (transaction conflicts, throttling).
//! - [`consumer`]: the SQS batch plumbing of every queue consumer (partial batch failures).
//! - [`once`]: apply a batch of effects once: a marker per effect, one aggregated write.
//! - [`clock`]: wall-clock time as RFC 3339.
//! - [`events`]: the versioned event envelopes on the queues.
//! - [`ids`]: identifiers parsed once at the boundary.
//! - [`text`]: the rules for user-supplied names and titles (NFC, no invisible characters).
//! - [`social`]: the follow product.
//! - [`seckill`]: the flash-sale product.
//!
//! The domain modules never name an AWS or Redis type: they take small port traits, and the
//! adapters beside them implement those ports.

pub mod admin_mfa;
pub mod auth;
pub mod clock;
pub mod cloud;
pub mod config;
pub mod consumer;
pub mod cursor;
pub mod dynamo;
pub mod events;
pub mod http;
pub mod ids;
pub mod once;
pub mod queue;
pub mod retry;
pub mod script;
pub mod seckill;
pub mod social;
pub mod telemetry;
pub mod text;

#[cfg(test)]
mod testing;
