//! `POST /notifications/read`: mark some or all of the caller's notifications read.

use app::boot::Boot;
use app::http;
use app::social::notification_routes;

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_http::Error> {
    let store = Boot::start().derived_store().await;
    http::run(|request| notification_routes::mark_notifications_read(&store, request)).await
}
