//! `GET /seckill/activities/{id}` (public): a published sale with its live stock, from Redis.

use app::config::Env;
use app::seckill::redis_store::RedisSales;
use app::seckill::sale_routes;
use app::{cloud, http, telemetry};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    telemetry::init();
    let redis = cloud::redis_from_env(&Env::process())
        .await
        .unwrap_or_else(|err| telemetry::fail_cold_start(&err));
    let cache = RedisSales::new(redis);
    http::run(|request| sale_routes::get_sale(&cache, request)).await
}
