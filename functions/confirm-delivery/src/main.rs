//! POST /admin/orders/{orderId}/confirm-delivery (admin): a COD order confirmed for delivery,
//! so that its COD window no longer cancels it.

use app::boot::Boot;
use app::http;
use app::seckill::payment::routes;

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_http::Error> {
    let boot = Boot::start();
    let store = boot.order_store().await;
    http::run(|request| routes::confirm_delivery(&store, request)).await
}
