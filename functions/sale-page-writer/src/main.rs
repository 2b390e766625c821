//! SQS on the sale-page queue: stores each page publish-sale rendered in the shop's bucket,
//! where the distribution serves `/shop/sales/{id}` from.

use app::boot::Boot;
use app::consumer;
use app::seckill::sale_page;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_runtime::Error> {
    let boot = Boot::start();
    let pages = boot.sale_pages().await;
    consumer::run(|messages| sale_page::write_batch(&pages, messages)).await
}
