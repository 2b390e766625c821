//! GET /orders: the caller's orders, newest first, cursor paging.

use app::boot::Boot;
use app::http;
use app::seckill::order::routes;

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_http::Error> {
    let store = Boot::start().order_store().await;
    http::run(|request| routes::list_orders(&store, request)).await
}
