//! HTTP entry points of a buyer's reservation (预约) of a sale,
//! `/seckill/activities/{id}/reservation`: `PUT` reserves, `DELETE` cancels, `GET` says
//! whether the caller holds one; each answers the caller's standing.

use crate::auth::Caller;
use crate::clock::now_epoch_ms;
use crate::error_code::ErrorCode;
use crate::http::{ApiError, json};
use crate::ids::SaleId;
use crate::seckill::reservation::{
    self, ReservationBook, ReservationError, ReservationList, Standing,
};
use crate::seckill::sale::routes::path_sale;
use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, Response};
use serde::Serialize;

/// What the reservation routes need, built once at cold start.
pub struct ReservationRoute<'a> {
    pub book: &'a dyn ReservationBook,
    pub list: &'a dyn ReservationList,
}

impl From<ReservationError> for ApiError {
    fn from(err: ReservationError) -> Self {
        let message = err.to_string();
        match err {
            ReservationError::UnknownSale(_) => ApiError::not_found(message),
            ReservationError::NotRequired => {
                ApiError::conflict(ErrorCode::ReservationNotRequired, message)
            }
            ReservationError::NotOpen(_) => {
                ApiError::conflict(ErrorCode::ReservationNotOpen, message)
            }
            ReservationError::Closed => ApiError::conflict(ErrorCode::ReservationClosed, message),
            ReservationError::Store(err) => ApiError::store_unavailable(err),
        }
    }
}

fn rfc3339_of_ms(ms: i64) -> String {
    crate::clock::from_epoch_ms(ms)
        .map(crate::clock::format)
        .unwrap_or_default()
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StandingBody<'a> {
    sale_id: &'a SaleId,
    reservation_required: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    reservation_opens_at: Option<String>,
    starts_at: String,
    /// Whether the caller holds a reservation.
    reserved: bool,
    reservation_count: u64,
}

fn standing_body<'a>(sale_id: &'a SaleId, standing: &Standing) -> StandingBody<'a> {
    StandingBody {
        sale_id,
        reservation_required: standing.window.opens_at_ms.is_some(),
        reservation_opens_at: standing.window.opens_at_ms.map(rfc3339_of_ms),
        starts_at: rfc3339_of_ms(standing.window.starts_at_ms),
        reserved: standing.reserved,
        reservation_count: standing.reservations,
    }
}

/// `PUT /seckill/activities/{id}/reservation` (user): reserves; idempotent.
pub async fn put_reservation(
    route: &ReservationRoute<'_>,
    request: Request,
) -> Result<Response<Body>, ApiError> {
    let caller = Caller::from_request(&request)?;
    let sale = path_sale(&request)?;
    let standing = reservation::reserve(
        route.book,
        route.list,
        &sale,
        &caller.user_id,
        now_epoch_ms(),
    )
    .await?;
    Ok(json(StatusCode::OK, &standing_body(&sale, &standing)))
}

/// `DELETE /seckill/activities/{id}/reservation` (user): cancels before the sale starts;
/// idempotent.
pub async fn delete_reservation(
    route: &ReservationRoute<'_>,
    request: Request,
) -> Result<Response<Body>, ApiError> {
    let caller = Caller::from_request(&request)?;
    let sale = path_sale(&request)?;
    let standing = reservation::cancel(
        route.book,
        route.list,
        &sale,
        &caller.user_id,
        now_epoch_ms(),
    )
    .await?;
    Ok(json(StatusCode::OK, &standing_body(&sale, &standing)))
}

/// `GET /seckill/activities/{id}/reservation` (user): whether the caller holds one, and how
/// many buyers do.
pub async fn get_reservation(
    list: &dyn ReservationList,
    request: Request,
) -> Result<Response<Body>, ApiError> {
    let caller = Caller::from_request(&request)?;
    let sale = path_sale(&request)?;
    let standing = reservation::standing(list, &sale, &caller.user_id).await?;
    Ok(json(StatusCode::OK, &standing_body(&sale, &standing)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seckill::reservation::Window;
    use crate::seckill::reservation::fake::MemoryBook;
    use crate::testing::{answer, api_request, assert_refused, claims_of};
    use lambda_http::RequestExt;
    use serde_json::json;
    use std::collections::HashMap;

    fn on_sale(request: Request, sale: &SaleId) -> Request {
        request.with_path_parameters(HashMap::from([("id".to_owned(), sale.as_str().to_owned())]))
    }

    #[tokio::test]
    async fn a_buyer_reserves_reads_and_cancels_and_a_stranger_is_refused() {
        let book = MemoryBook::default();
        let sale = SaleId::generate();
        let now = now_epoch_ms();
        book.windows.lock().unwrap().insert(
            sale.clone(),
            Window {
                opens_at_ms: Some(now - 60_000),
                starts_at_ms: now + 60_000,
                ended: false,
            },
        );
        let route = ReservationRoute {
            book: &book,
            list: &book,
        };
        let call = |method: &str, who: serde_json::Value| {
            on_sale(api_request(method, "/r", "", who), &sale)
        };

        let (status, body) = answer(put_reservation(&route, call("PUT", claims_of("ann"))).await);
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["reserved"], true);
        assert_eq!(body["reservationRequired"], true);
        assert_eq!(body["reservationCount"], 1);
        let (_, body) = answer(get_reservation(&book, call("GET", claims_of("bob"))).await);
        assert_eq!(
            (body["reserved"].clone(), body["reservationCount"].clone()),
            (json!(false), json!(1))
        );
        let (status, body) =
            answer(delete_reservation(&route, call("DELETE", claims_of("ann"))).await);
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["reservationCount"], 0);

        assert_eq!(
            answer(put_reservation(&route, call("PUT", json!(null))).await).0,
            401
        );
        let unknown = on_sale(
            api_request("PUT", "/r", "", claims_of("ann")),
            &SaleId::generate(),
        );
        assert_refused(
            &answer(put_reservation(&route, unknown).await),
            404,
            "NOT_FOUND",
            "no sale",
        );
        let malformed = api_request("PUT", "/r", "", claims_of("ann"))
            .with_path_parameters(HashMap::from([("id".to_owned(), "nope".to_owned())]));
        assert_eq!(answer(put_reservation(&route, malformed).await).0, 400);
    }

    #[tokio::test]
    async fn reserving_outside_the_window_is_a_409_that_says_why() {
        let book = MemoryBook::default();
        let now = now_epoch_ms();
        let sale_with = |opens_at_ms: Option<i64>, starts_at_ms: i64| {
            let sale = SaleId::generate();
            book.windows.lock().unwrap().insert(
                sale.clone(),
                Window {
                    opens_at_ms,
                    starts_at_ms,
                    ended: false,
                },
            );
            sale
        };
        let cases = [
            (
                sale_with(Some(now + 60_000), now + 120_000),
                "RESERVATION_NOT_OPEN",
                "open at",
            ),
            (
                sale_with(Some(now - 120_000), now - 60_000),
                "RESERVATION_CLOSED",
                "closed",
            ),
            (
                sale_with(None, now + 60_000),
                "RESERVATION_NOT_REQUIRED",
                "needs no reservation",
            ),
        ];
        let route = ReservationRoute {
            book: &book,
            list: &book,
        };
        for (sale, code, says) in cases {
            let request = on_sale(api_request("PUT", "/r", "", claims_of("ann")), &sale);
            assert_refused(
                &answer(put_reservation(&route, request).await),
                409,
                code,
                says,
            );
        }
        assert!(book.items.lock().unwrap().is_empty());
    }
}
