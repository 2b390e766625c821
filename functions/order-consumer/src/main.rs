//! SQS on the order queue: each `OrderPlaced` materialized once, the sale's stock written once
//! per batch, never oversold; a `PaymentDue` per confirmed order.

use app::config::Env;
use app::seckill::order_consumer::{self, OrderDeps};
use app::seckill::order_store::DynamoOrderStore;
use app::seckill::payment_due_sink::SqsPaymentDueSink;
use app::seckill::reservations::RedisReservations;
use app::{cloud, consumer, telemetry};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    telemetry::init();
    let env = Env::process();
    let clients = cloud::Clients::new(&cloud::sdk_config().await);
    let store = DynamoOrderStore::from_env(&env, clients.dynamodb)
        .unwrap_or_else(|err| telemetry::fail_cold_start(&err));
    let payments = SqsPaymentDueSink::from_env(&env, clients.sqs)
        .unwrap_or_else(|err| telemetry::fail_cold_start(&err));
    let reservations = RedisReservations::from_env(&env)
        .await
        .unwrap_or_else(|err| telemetry::fail_cold_start(&err));
    let deps = OrderDeps {
        store: &store,
        reservations: &reservations,
        payments: &payments,
    };
    consumer::run(|messages| order_consumer::handle_batch(deps, messages)).await
}
