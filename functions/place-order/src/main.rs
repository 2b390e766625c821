//! `POST /seckill/activities/{id}/orders` (user): one Lua reservation in Redis, one sealed
//! `OrderPlaced` on SQS, `202 Accepted`.

use app::boot::Boot;
use app::http;
use app::seckill::admission::routes::{self, OrderRoute};
use app::seckill::admission::sqs::SqsOrderPublisher;

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_http::Error> {
    let boot = Boot::start();
    let rate_limit_per_second = boot.must(routes::rate_limit_from_env(boot.env()));
    // Redis's connect and script loads and the seal's read wait on the network side by side.
    let (admission, sqs, seal) = tokio::join!(
        boot.redis_sales_with_scripts(),
        boot.sqs(),
        boot.order_seal()
    );
    let publisher = boot.must(SqsOrderPublisher::from_env(boot.env(), sqs.clone(), seal));
    let route = OrderRoute {
        admission: &admission,
        publisher: &publisher,
        rate_limit_per_second,
    };
    http::run(|request| routes::place_order(&route, request)).await
}
