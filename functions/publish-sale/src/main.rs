//! `POST /seckill/activities/{id}/publish` (admin): publishes a sale and preheats Redis.

use app::boot::Boot;
use app::http;
use app::seckill::sale_routes;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    let boot = Boot::start();
    let store = boot.sale_store().await;
    let cache = boot.redis_sales().await;
    http::run(|request| sale_routes::publish_sale(&store, &cache, request)).await
}
