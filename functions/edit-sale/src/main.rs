//! `PATCH /seckill/activities/{id}` (admin): changes a draft.

use app::boot::Boot;
use app::http;
use app::seckill::office::routes;

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_http::Error> {
    let store = Boot::start().sale_store().await;
    http::run(|request| routes::edit_sale(&store, request)).await
}
