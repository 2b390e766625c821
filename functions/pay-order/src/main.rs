//! POST /orders/{orderId}/pay: pays one of the caller's CONFIRMED orders.

use app::boot::Boot;
use app::http;
use app::seckill::order_routes;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    let store = Boot::start().order_store().await;
    http::run(|request| order_routes::pay_order(&store, request)).await
}
