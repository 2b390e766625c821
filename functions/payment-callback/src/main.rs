//! POST /payments/callback: the payment provider's signed notice; the only way an order
//! becomes PAID.

use app::boot::Boot;
use app::http;
use app::seckill::payment::routes;

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_http::Error> {
    let boot = Boot::start();
    let store = boot.order_store().await;
    let secrets = boot.callback_secrets().await;
    http::run(|request| {
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        routes::callback(&store, &secrets, request, now)
    })
    .await
}
