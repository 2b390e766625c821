//! `PUT /users/me`: create or rename the caller's profile.

use app::boot::Boot;
use app::http;
use app::social::user_routes;

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_http::Error> {
    let store = Boot::start().social_store().await;
    http::run(|request| user_routes::put_profile(&store, request)).await
}
