//! The social product's queue consumers and its outbox relay, and the Cognito trigger that holds admins to MFA.
//!
//! The bootstrap Lambda runs for these functions ([`app::boot::run_bundle`]): each is
//! deployed as a function of its own and runs the `main` of the folder its `Handler` names.

#[path = "../../admin-mfa-guard/src/main.rs"]
mod admin_mfa_guard;
#[path = "../../follower-count-consumer/src/main.rs"]
mod follower_count_consumer;
#[path = "../../notification-consumer/src/main.rs"]
mod notification_consumer;
#[path = "../../outbox-relay/src/main.rs"]
mod outbox_relay;

fn main() -> Result<(), lambda_runtime::Error> {
    app::boot::run_bundle(&[
        ("follower-count-consumer", follower_count_consumer::main),
        ("notification-consumer", notification_consumer::main),
        ("outbox-relay", outbox_relay::main),
        ("admin-mfa-guard", admin_mfa_guard::main),
    ])
}
