//! `PUT /users/{userId}/follow`: the caller follows a user, in one transaction with an outbox
//! event, within the follow rate and the cap on followings.

use app::boot::Boot;
use app::http;
use app::social::{FollowLimits, user_routes};

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_http::Error> {
    let boot = Boot::start();
    let limits = boot.must(FollowLimits::from_env(boot.env()));
    let store = boot.social_store().await;
    http::run(|request| user_routes::follow(&store, &limits, request)).await
}
