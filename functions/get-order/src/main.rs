//! GET /orders/{orderId}: one of the caller's orders (404 for anyone else's): from DynamoDB
//! once materialized, else `PENDING` from Redis while it is admitted.

use app::config::Env;
use app::seckill::order_routes;
use app::seckill::order_store::DynamoOrderStore;
use app::seckill::reservations::RedisReservations;
use app::telemetry::fail_cold_start;
use app::{cloud, http, telemetry};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    telemetry::init();
    let env = Env::process();
    let clients = cloud::Clients::new(&cloud::sdk_config().await);
    let store = DynamoOrderStore::from_env(&env, clients.dynamodb)
        .unwrap_or_else(|err| fail_cold_start(&err));
    let pending = RedisReservations::reader_from_env(&env)
        .await
        .unwrap_or_else(|err| fail_cold_start(&err));
    http::run(|request| order_routes::get_order(&store, &pending, request)).await
}
