//! `POST /seckill/activities/{id}/end` (admin): ends a published sale now; admissions stop at
//! once in Redis.

use app::boot::Boot;
use app::http;
use app::seckill::office::routes;

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_http::Error> {
    let boot = Boot::start();
    // Redis's connect waits on the network while the SDK is set up.
    let (cache, store) = tokio::join!(boot.redis_sales(), boot.sale_store());
    let route = routes::EndRoute {
        store: &store,
        cache: &cache,
    };
    http::run(|request| routes::end_sale(&route, request)).await
}
