//! POST /admin/refunds/{paymentId}/{orderId}/settle (admin): pays a refund back through the
//! payment provider, once.

use app::boot::Boot;
use app::http;
use app::seckill::payment::routes::{self, SettleRoute};

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_http::Error> {
    let boot = Boot::start();
    let store = boot.order_store().await;
    let provider = boot.payment_provider();
    let route = SettleRoute {
        store: &store,
        provider: provider.as_deref(),
    };
    http::run(|request| routes::settle_refund(&route, request)).await
}
