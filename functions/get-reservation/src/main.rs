//! `GET /seckill/activities/{id}/reservation` (user): whether the caller reserved (预约) the
//! sale, and how many buyers did, from one Redis round trip.

use app::boot::Boot;
use app::http;
use app::seckill::reservation::routes;

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_http::Error> {
    let list = Boot::start().redis_sales().await;
    http::run(|request| routes::get_reservation(&list, request)).await
}
