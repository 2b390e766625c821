//! `GET /seckill/listing` (public): the home page's live and upcoming sales, from the live
//! index, cached at the edge for a few seconds.

use app::boot::Boot;
use app::http;
use app::seckill::back_office_routes;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    let store = Boot::start().sale_store().await;
    http::run(|request| back_office_routes::sale_listing(&store, request)).await
}
