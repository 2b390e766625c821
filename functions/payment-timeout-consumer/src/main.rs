//! SQS on the order-timeout (delay) queue: an order still unpaid when its window ends, or kept
//! for cash on delivery and not confirmed for delivery in its COD window, is cancelled and its
//! units return to DynamoDB and Redis, once.

use app::boot::Boot;
use app::consumer;
use app::seckill::order::sqs::SqsPaymentDueSink;
use app::seckill::payment::timeout::{self, TimeoutDeps};

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_runtime::Error> {
    let boot = Boot::start();
    let cod_window = boot.must(timeout::cod_window_from_env(boot.env()));
    // Redis's connect and script loads wait on the network while the SDK is set up.
    let (reservations, store) = tokio::join!(boot.reservations(), boot.order_store());
    let sqs = boot.sqs().await.clone();
    let payments = boot.must(SqsPaymentDueSink::from_env(boot.env(), sqs));
    let deps = TimeoutDeps {
        store: &store,
        reservations: &reservations,
        payments: &payments,
        cod_window,
    };
    consumer::run(|messages| timeout::handle_batch(deps, messages)).await
}
