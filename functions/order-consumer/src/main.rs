//! SQS on the order queue: each `OrderPlaced` materialized once, as its reservation in Redis
//! (or its seal) vouches, the sale's stock written once per batch, never oversold; a
//! `PaymentDue` per confirmed order.

use app::boot::Boot;
use app::consumer;
use app::seckill::order::consumer::{self as order_consumer, OrderDeps};
use app::seckill::order::sqs::SqsPaymentDueSink;

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_runtime::Error> {
    let boot = Boot::start();
    // Redis's connect and script loads and the seal's read wait on the network side by side.
    let (reservations, store, seal) =
        tokio::join!(boot.reservations(), boot.order_store(), boot.order_seal());
    let sqs = boot.sqs().await.clone();
    let payments = boot.must(SqsPaymentDueSink::from_env(boot.env(), sqs));
    let deps = OrderDeps {
        store: &store,
        reservations: &reservations,
        payments: &payments,
        seal: &seal,
    };
    consumer::run(|messages| order_consumer::handle_batch(deps, messages)).await
}
