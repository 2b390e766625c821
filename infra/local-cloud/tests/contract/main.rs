//! Contract tests of the repository's documents, no emulator needed: `openapi.yaml` describes
//! exactly the routes that `template.yaml` serves, with the same authorizers, and every
//! function's IAM policy grants only what its code uses; and the runner reads `template.yaml`
//! as the project means it (`template`); the shop's bucket, distribution and sign-in client
//! are private and least-privilege (`shop`); `sam local` gets every variable it needs and no
//! function is ever told that it runs under SAM (`sam_local`); the LocalStack profile starts what
//! the runner provisions (`localstack`); the flash-sale code keeps its layout by concern (`layout`);
//! a cached `sam build` is reused only for the very inputs it was built from (`sam_build_cache`).

#![expect(
    clippy::unwrap_used,
    reason = "a test's helpers fail the test with a panic, as its assertions do"
)]

mod alarms;
mod aws_rules;
mod capacity;
mod cognito;
mod contention;
mod dashboard;
mod edge;
mod layout;
mod lints;
mod localstack;
mod logging;
mod openapi;
mod policies;
mod prose;
mod sam_build_cache;
mod sam_local;
mod shop;
mod support;
mod teardown;
mod template;
