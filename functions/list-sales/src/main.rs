//! `GET /seckill/activities` (admin): every sale newest first, drafts included, by state.

use app::boot::Boot;
use app::http;
use app::seckill::office::routes;

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_http::Error> {
    let store = Boot::start().sale_store().await;
    http::run(|request| routes::list_sales(&store, request)).await
}
