//! `GET /seckill/activities/{id}/figures` (admin): one sale's units in Redis and in DynamoDB,
//! its orders by status, units sold, revenue and refunds due.

use app::boot::Boot;
use app::http;
use app::seckill::office::routes;

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_http::Error> {
    let boot = Boot::start();
    // Redis's connect waits on the network while the SDK is set up.
    let (cache, office, ledger) = tokio::join!(
        boot.reservation_reader(),
        boot.sale_store(),
        boot.order_store()
    );
    let route = routes::FiguresRoute {
        office: &office,
        ledger: &ledger,
        cache: &cache,
    };
    http::run(|request| routes::sale_figures(&route, request)).await
}
