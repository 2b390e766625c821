//! `POST /seckill/activities` (admin): creates a draft flash sale.

use app::config::Env;
use app::seckill::sale_routes;
use app::seckill::sale_store::DynamoSaleStore;
use app::{cloud, http, telemetry};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    telemetry::init();
    let clients = cloud::Clients::new(&cloud::sdk_config().await);
    let store = DynamoSaleStore::from_env(&Env::process(), clients.dynamodb)
        .unwrap_or_else(|err| telemetry::fail_cold_start(&err));
    http::run(|request| sale_routes::create_sale(&store, request)).await
}
