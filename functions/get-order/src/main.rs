//! GET /orders/{orderId}: one of the caller's orders (404 for anyone else's).

use app::config::Env;
use app::seckill::order_routes;
use app::seckill::order_store::DynamoOrderStore;
use app::{cloud, http, telemetry};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    telemetry::init();
    let clients = cloud::Clients::new(&cloud::sdk_config().await);
    let store = DynamoOrderStore::from_env(&Env::process(), clients.dynamodb)
        .unwrap_or_else(|err| telemetry::fail_cold_start(&err));
    http::run(|request| order_routes::get_order(&store, request)).await
}
