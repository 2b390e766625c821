//! GET and POST /sandbox/payments/{paymentId}: the payment provider's sandbox (stacks with
//! `EnablePaymentSandbox=true`): its checkout page, and the notice its Pay and Fail buttons
//! send, signed with the sandbox's own secret for the caller's own order awaiting payment.

use app::boot::Boot;
use app::http;
use app::seckill::payment::sandbox;
use lambda_http::http::Method;

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_http::Error> {
    let boot = Boot::start();
    let store = &boot.order_store().await;
    // Only the notice needs the secret: the checkout page's cold start makes no AWS call.
    let secret = &boot.sandbox_secret_on_first_use().await;
    http::run(|request| async move {
        if request.method() != Method::POST {
            return sandbox::page(&request);
        }
        let secret = secret
            .get()
            .await
            .map_err(http::ApiError::store_unavailable)?;
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        sandbox::notice(store, secret, &request, now).await
    })
    .await
}
