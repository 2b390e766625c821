//! A local cloud for the SAM template, without Docker: what `sam local start-api` does, plus
//! the event sources it cannot run.
//!
//! # Layout
//!
//! - [`model`]: the resolved deployment: tables, queues, functions and their events.
//! - [`template`]: reads `template.yaml` (parameters, Globals, `!Ref`, `!GetAtt`, `!Sub`)
//!   into a [`model::Model`].
//! - [`provision`]: creates the model's tables, queues and buckets in the emulators.
//! - [`secrets`]: creates the template's secrets in the emulator with their local values.
//! - [`runtime`]: runs each function's real binary behind a local Lambda Runtime API and
//!   invokes it, one invocation at a time per instance.
//! - [`jwt`]: the local stand-in for the JWT authorizer (HS256), and `make token`.
//! - [`gateway`]: the HTTP API on 127.0.0.1, payload format 2.0.
//! - [`lambda_api`]: Lambda's Invoke API beside it (`aws lambda invoke --endpoint-url`,
//!   `make invoke`).
//! - [`dashboard`]: the live dashboard at `/_local/dashboard` and what it records.
//! - [`pages`]: the shop's pages under `/shop/`, from the emulator's S3, as the cloud's
//!   distribution serves them.
//! - [`layout`]: the pages' site as uploaded, locally and by `infra/deploy-pages.sh`: each
//!   page's shared head and layout included from `shop/_layout/` by [`app::layout`], the
//!   expansion the sale page's renderer uses too (`local-cloud pages`).
//! - [`sign_in`]: the development sign-in at `/_local/sign-in`, a local token for a user name.
//! - `guard`: which requests `/_local/` and the Invoke API answer: only those to the runner
//!   itself, from no other site's page.
//! - [`sources`]: the SQS, DynamoDB Streams and schedule event sources.
//! - [`faults`]: the fault switches (AWS proxy rules, crashes, timeouts, duplicate delivery).
//! - `loopback`: the plain HTTP server of every local endpoint (the HTTP API, Runtime APIs,
//!   proxies, stubs).
//! - [`forward`]: `local-cloud forward`, TCP and Unix-socket forwarding for `sam local`'s
//!   containers (`infra/docker/bridge.sh`).
//! - [`replay`]: `dlq-replay`, moving a dead-letter queue's messages back to its queue.
//! - [`cloud`]: all of the above started together, and stopped together.
//! - [`check`]: `local-cloud check`, every function answering one invocation (`make sam-check`).
//! - [`cpu_quota`]: Lambda's CPU share for a memory size, as a cgroup per process
//!   (`local-cloud up --lambda-cpu`, the bench's durations by memory size).

pub mod check;
pub mod cloud;
pub mod cpu_quota;
pub mod dashboard;
pub mod faults;
pub mod forward;
pub mod gateway;
mod guard;
pub mod jwt;
pub mod lambda_api;
pub mod layout;
pub mod loopback;
pub mod model;
pub mod pages;
pub mod provision;
pub mod replay;
pub mod runtime;
pub mod secrets;
pub mod sign_in;
pub mod sources;
pub mod template;
