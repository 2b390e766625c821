//! `POST /seckill/activities/{id}/publish` (admin): publishes a sale, preheats Redis and
//! writes its page.

use app::boot::Boot;
use app::http;
use app::seckill::sale::routes::{self, PublishRoute};

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_http::Error> {
    let boot = Boot::start();
    // Redis's connect waits on the network while the SDK is set up.
    let (cache, store) = tokio::join!(boot.redis_sales(), boot.sale_store());
    // Asked of the page writer, which renders it from the table and stores it in S3.
    let pages = boot.sale_page_queue().await;
    let route = PublishRoute {
        store: &store,
        cache: &cache,
        pages: &pages,
    };
    http::run(|request| routes::publish_sale(&route, request)).await
}
