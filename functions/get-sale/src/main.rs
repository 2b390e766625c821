//! `GET /seckill/activities/{id}` (public): a published sale with its live stock, from Redis.

use app::boot::Boot;
use app::http;
use app::seckill::sale::routes;

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_http::Error> {
    let cache = Boot::start().redis_sales().await;
    http::run(|request| routes::get_sale(&cache, request)).await
}
