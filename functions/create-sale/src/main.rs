//! `POST /seckill/activities` (admin): creates a draft flash sale.

use app::boot::Boot;
use app::http;
use app::seckill::sale::routes;

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_http::Error> {
    let boot = Boot::start();
    let store = boot.sale_store().await;
    http::run(|request| routes::create_sale(&store, request)).await
}
