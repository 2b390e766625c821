//! `GET /seckill/listing` (public): the home page's live and upcoming sales, from the live
//! index, cached at the edge for a few seconds.

use app::boot::Boot;
use app::http;
use app::seckill::office::routes;

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_http::Error> {
    let store = Boot::start().sale_store().await;
    http::run(|request| routes::sale_listing(&store, request)).await
}
