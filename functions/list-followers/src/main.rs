//! `GET /users/{userId}/followers`: who follows a user, newest first, paged.

use app::boot::Boot;
use app::http;
use app::social::user_routes;

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_http::Error> {
    let store = Boot::start().social_store().await;
    http::run(|request| user_routes::list_followers(&store, request)).await
}
