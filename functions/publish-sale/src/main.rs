//! `POST /seckill/activities/{id}/publish` (admin): publishes a sale, preheats Redis and
//! writes its page.

use app::boot::Boot;
use app::http;
use app::seckill::sale_routes::{self, PublishRoute};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    let boot = Boot::start();
    let store = boot.sale_store().await;
    let cache = boot.redis_sales().await;
    // Queued for the page writer, which stores it in S3.
    let pages = boot.sale_page_queue().await;
    let route = PublishRoute {
        store: &store,
        cache: &cache,
        pages: &pages,
    };
    http::run(|request| sale_routes::publish_sale(&route, request)).await
}
