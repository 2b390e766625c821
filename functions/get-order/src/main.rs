//! GET /orders/{orderId}: one of the caller's orders (404 for anyone else's): from DynamoDB
//! once materialized, else `PENDING` from Redis while it is admitted.

use app::boot::Boot;
use app::http;
use app::seckill::order::routes;

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_http::Error> {
    let boot = Boot::start();
    let store = boot.order_store().await;
    let pending = boot.reservation_reader().await;
    http::run(|request| routes::get_order(&store, &pending, request)).await
}
