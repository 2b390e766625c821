//! SQS on the order-timeout (delay) queue: an order still unpaid when its window ends is
//! cancelled and its unit returns to DynamoDB and Redis, once.

use app::boot::Boot;
use app::consumer;
use app::seckill::payment::timeout;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_runtime::Error> {
    let boot = Boot::start();
    // Redis's connect and script loads wait on the network while the SDK is set up.
    let (reservations, store) = tokio::join!(boot.reservations(), boot.order_store());
    consumer::run(|messages| timeout::handle_batch(&store, &reservations, messages)).await
}
