//! GET and POST /sandbox/payments/{paymentId}: the payment provider's sandbox (non-prod
//! stacks): its checkout page, and the signed notice its Pay and Fail buttons send.

use app::boot::Boot;
use app::http;
use app::seckill::sandbox;
use lambda_http::http::Method;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    let boot = Boot::start();
    let secret = boot.payment_secret().await;
    http::run(|request| {
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        let answer = if request.method() == Method::POST {
            sandbox::notice(&secret, &request, now)
        } else {
            sandbox::page(&request)
        };
        std::future::ready(answer)
    })
    .await
}
