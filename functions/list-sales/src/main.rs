//! `GET /seckill/activities` (admin): every sale newest first, drafts included, by state.

use app::boot::Boot;
use app::http;
use app::seckill::back_office_routes;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    let store = Boot::start().sale_store().await;
    http::run(|request| back_office_routes::list_sales(&store, request)).await
}
