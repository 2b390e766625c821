//! SQS on the sale-page queue: for each sale publish-sale asks a page for, reads the published
//! sale from the commerce table, renders its page and stores it in the shop's bucket, where
//! the distribution serves `/shop/sales/{id}` from.

use app::boot::Boot;
use app::consumer;
use app::seckill::sale::page;

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_runtime::Error> {
    let boot = Boot::start();
    let (sales, pages) = tokio::join!(boot.sale_store(), boot.sale_pages());
    consumer::run(|messages| page::write_batch(&sales, &pages, messages)).await
}
