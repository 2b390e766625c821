//! SQS on the order-timeout (delay) queue: an order still unpaid when its window ends is
//! cancelled and its unit returns to DynamoDB and Redis, once.

use app::boot::Boot;
use app::consumer;
use app::seckill::payment_timeout;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_runtime::Error> {
    let boot = Boot::start();
    let store = boot.order_store().await;
    let reservations = boot.reservations().await;
    consumer::run(|messages| payment_timeout::handle_batch(&store, &reservations, messages)).await
}
