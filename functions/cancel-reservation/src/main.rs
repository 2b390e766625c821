//! `DELETE /seckill/activities/{id}/reservation` (user): the buyer's reservation (预约)
//! removed from DynamoDB, then from the sale's set in Redis, before the sale starts.

use app::boot::Boot;
use app::http;
use app::seckill::reservation::routes::{self, ReservationRoute};

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_http::Error> {
    let boot = Boot::start();
    let (book, list) = tokio::join!(boot.reservation_book(), boot.redis_sales());
    let route = ReservationRoute {
        book: &book,
        list: &list,
    };
    http::run(|request| routes::delete_reservation(&route, request)).await
}
