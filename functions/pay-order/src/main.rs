//! POST /orders/{orderId}/pay: cash on delivery for one of the caller's CONFIRMED orders, or
//! an online payment opened with the provider.

use app::boot::Boot;
use app::http;
use app::seckill::payment::routes::{self, PayRoute};

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_http::Error> {
    let boot = Boot::start();
    let store = boot.order_store().await;
    let provider = boot.payment_provider();
    let route = PayRoute {
        store: &store,
        provider: provider.as_deref(),
    };
    http::run(|request| routes::pay_order(&route, request)).await
}
