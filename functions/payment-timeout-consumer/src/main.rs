//! SQS on the order-timeout (delay) queue: an order still unpaid when its window ends is
//! cancelled and its unit returns to DynamoDB and Redis, once.

use app::config::Env;
use app::seckill::order_store::DynamoOrderStore;
use app::seckill::payment_timeout;
use app::seckill::reservations::RedisReservations;
use app::{cloud, consumer, telemetry};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    telemetry::init();
    let env = Env::process();
    let clients = cloud::Clients::new(&cloud::sdk_config().await);
    let store = DynamoOrderStore::from_env(&env, clients.dynamodb)
        .unwrap_or_else(|err| telemetry::fail_cold_start(&err));
    let reservations = RedisReservations::from_env(&env)
        .await
        .unwrap_or_else(|err| telemetry::fail_cold_start(&err));
    consumer::run(|messages| payment_timeout::handle_batch(&store, &reservations, messages)).await
}
