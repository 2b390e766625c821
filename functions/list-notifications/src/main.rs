//! `GET /notifications`: the caller's notifications, newest first, with the unread count.

use app::boot::Boot;
use app::http;
use app::social::notification_routes;

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_http::Error> {
    let store = Boot::start().derived_store().await;
    http::run(|request| notification_routes::list_notifications(&store, request)).await
}
