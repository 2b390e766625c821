//! GET /admin/refunds (admin): the refunds still due, oldest first.

use app::boot::Boot;
use app::http;
use app::seckill::payment::routes;

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_http::Error> {
    let store = Boot::start().order_store().await;
    http::run(|request| routes::list_refunds_due(&store, request)).await
}
