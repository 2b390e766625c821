//! `POST /seckill/activities/{id}/publish` (admin): publishes a sale and preheats Redis.

use app::config::Env;
use app::seckill::redis_store::RedisSales;
use app::seckill::sale_routes;
use app::seckill::sale_store::DynamoSaleStore;
use app::{cloud, http, telemetry};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    telemetry::init();
    let env = Env::process();
    let clients = cloud::Clients::new(&cloud::sdk_config().await);
    let store = DynamoSaleStore::from_env(&env, clients.dynamodb)
        .unwrap_or_else(|err| telemetry::fail_cold_start(&err));
    let redis = cloud::redis_from_env(&env)
        .await
        .unwrap_or_else(|err| telemetry::fail_cold_start(&err));
    let cache = RedisSales::new(redis);
    http::run(|request| sale_routes::publish_sale(&store, &cache, request)).await
}
