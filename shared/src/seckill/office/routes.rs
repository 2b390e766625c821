//! HTTP entry points of the back office (admin: the admin group, signed in with MFA) and of
//! the home page's listing (public): `GET /seckill/activities`, `PATCH
//! /seckill/activities/{id}`, `POST /seckill/activities/{id}/end`, `GET
//! /seckill/activities/{id}/figures`, `GET /seckill/listing`.

use crate::auth::Caller;
use crate::clock::epoch_ms;
use crate::error_code::ErrorCode;
use crate::http::{ApiError, json, page_query, parse_body, query_parameter};
use crate::seckill::office::figures::{self, SaleLedger};
use crate::seckill::office::{
    self, Listed, OfficeError, SaleCloser, SaleEditDto, SaleOffice, listing,
};
use crate::seckill::order::Reservations;
use crate::seckill::sale::Lifecycle;
use crate::seckill::sale::routes::{SaleBody, path_sale, sale_body};
use lambda_http::http::{HeaderValue, StatusCode, header};
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use time::OffsetDateTime;

impl From<OfficeError> for ApiError {
    fn from(err: OfficeError) -> Self {
        let message = err.to_string();
        match err {
            OfficeError::Cursor(_) | OfficeError::Invalid(_) => ApiError::bad_request(message),
            OfficeError::NotFound(_) => ApiError::not_found(message),
            OfficeError::NotDraft(..) => ApiError::conflict(ErrorCode::NotDraft, message),
            OfficeError::NotPublished(_) => ApiError::conflict(ErrorCode::NotPublished, message),
            OfficeError::AlreadyOver(..) => ApiError::conflict(ErrorCode::Ended, message),
            OfficeError::Store(err) => ApiError::store_unavailable(err),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SalesPage<'a> {
    items: Vec<SaleBody<'a>>,
    next_cursor: Option<String>,
}

/// `GET /seckill/activities?state=&limit=&cursor=` (admin): every sale newest first, drafts
/// included, only those in `state` (DRAFT, PUBLISHED, ENDED) if given.
pub async fn list_sales(
    store: &dyn SaleOffice,
    request: Request,
) -> Result<Response<Body>, ApiError> {
    Caller::from_request(&request)?.require_admin()?;
    let (limit, cursor) = page_query(&request)?;
    let state = query_parameter(&request, "state")
        .map(|raw| {
            Lifecycle::parse(&raw).ok_or_else(|| {
                ApiError::bad_request("state must be one of DRAFT, PUBLISHED, ENDED")
            })
        })
        .transpose()?;
    let page = store.page(state, limit, cursor.as_ref()).await?;
    Ok(json(
        StatusCode::OK,
        &SalesPage {
            items: page.items.iter().map(sale_body).collect(),
            next_cursor: page.next.map(|cursor| cursor.encode()),
        },
    ))
}

/// `PATCH /seckill/activities/{id}` (admin): changes a draft's fields (any of the new sale's),
/// checked by the same rules; 409 `NOT_DRAFT` once it is published.
pub async fn edit_sale(
    store: &dyn SaleOffice,
    request: Request,
) -> Result<Response<Body>, ApiError> {
    Caller::from_request(&request)?.require_admin()?;
    let id = path_sale(&request)?;
    let edit: SaleEditDto = parse_body(&request)?;
    let sale = office::edit_draft(store, &id, edit, OffsetDateTime::now_utc()).await?;
    Ok(json(StatusCode::OK, &sale_body(&sale)))
}

/// What the end route needs, built once at cold start.
pub struct EndRoute<'a> {
    pub store: &'a dyn SaleOffice,
    pub cache: &'a dyn SaleCloser,
}

/// `POST /seckill/activities/{id}/end` (admin): ends a published sale now; admissions stop at
/// once. Idempotent; 409 `NOT_PUBLISHED` for a draft, `ENDED` for a sale already over.
pub async fn end_sale(route: &EndRoute<'_>, request: Request) -> Result<Response<Body>, ApiError> {
    Caller::from_request(&request)?.require_admin()?;
    let id = path_sale(&request)?;
    let sale = office::end_sale(route.store, route.cache, &id, OffsetDateTime::now_utc()).await?;
    Ok(json(StatusCode::OK, &sale_body(&sale)))
}

/// What the figures route needs, built once at cold start.
pub struct FiguresRoute<'a> {
    pub office: &'a dyn SaleOffice,
    pub ledger: &'a dyn SaleLedger,
    pub cache: &'a dyn Reservations,
}

/// `GET /seckill/activities/{id}/figures` (admin): the sale's units in Redis and in
/// DynamoDB, its orders by status, the units sold and the revenue (PAID and COD orders), and
/// the refunds due for it ([`crate::seckill::office::figures`]); 404 for an unknown sale.
pub async fn sale_figures(
    route: &FiguresRoute<'_>,
    request: Request,
) -> Result<Response<Body>, ApiError> {
    Caller::from_request(&request)?.require_admin()?;
    let id = path_sale(&request)?;
    let figures = figures::sale_figures(route.office, route.ledger, route.cache, &id).await?;
    Ok(json(StatusCode::OK, &figures))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ListingBody {
    items: Vec<Listed>,
    /// The server's clock when the answer was made, for the page's countdowns.
    server_time: String,
}

/// How long the edge and browsers may reuse the listing: a few seconds, so that the home
/// page's crowd costs the origin about one read per edge location in that time.
pub const LISTING_CACHE_CONTROL: &str = "public, max-age=2";

/// `GET /seckill/listing` (public): the live and upcoming sales, and those that just sold out
/// or ended, from one keyed query of the live index.
pub async fn sale_listing(
    store: &dyn SaleOffice,
    _request: Request,
) -> Result<Response<Body>, ApiError> {
    let live = store.live().await.map_err(ApiError::store_unavailable)?;
    let now = OffsetDateTime::now_utc();
    let body = ListingBody {
        items: listing(live, epoch_ms(now)),
        server_time: crate::clock::format(now),
    };
    let mut response = json(StatusCode::OK, &body);
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(LISTING_CACHE_CONTROL),
    );
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seckill::office::fake::MemoryOffice;
    use crate::seckill::sale::{NewSale, NewSaleDto, Sale, SaleId};
    use crate::testing::{answer, api_request, assert_refused, claims_of};

    fn draft(office: &MemoryOffice) -> Sale {
        let now = OffsetDateTime::now_utc();
        let dto = NewSaleDto {
            product_id: "sku".into(),
            title: "Lamp".into(),
            price_cents: 990,
            stock: 5,
            per_user_limit: 1,
            starts_at: crate::clock::format(now - time::Duration::minutes(1)),
            ends_at: crate::clock::format(now + time::Duration::hours(1)),
            reservation_required: false,
            reservation_opens_at: None,
        };
        let sale = Sale::draft(
            SaleId::generate(),
            NewSale::parse(dto, now).unwrap(),
            crate::clock::format(now),
        );
        let mut sales = office.sales.sales.lock().unwrap();
        sales.insert(sale.id.clone(), sale.clone());
        sale
    }

    fn admin() -> serde_json::Value {
        serde_json::json!({"jwt": {"claims": {"sub": "op", "cognito:groups": "[admin]"}, "scopes": null}})
    }

    fn on(request: Request, id: &SaleId) -> Request {
        use lambda_http::RequestExt;
        request.with_path_parameters(std::collections::HashMap::from([(
            "id".to_owned(),
            id.to_string(),
        )]))
    }

    #[tokio::test]
    async fn only_operators_list_edit_and_end() {
        let office = MemoryOffice::default();
        let sale = draft(&office);
        let buyer = || claims_of("bob");
        let list = api_request("GET", "/seckill/activities", "", buyer());
        assert_eq!(answer(list_sales(&office, list).await).0, 403);
        let edit = on(
            api_request("PATCH", "/x", r#"{"title":"t"}"#, buyer()),
            &sale.id,
        );
        assert_eq!(answer(edit_sale(&office, edit).await).0, 403);
        let route = EndRoute {
            store: &office,
            cache: &office,
        };
        let end = on(api_request("POST", "/x", "", buyer()), &sale.id);
        assert_eq!(answer(end_sale(&route, end).await).0, 403);
        assert!(office.closed.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_draft_is_edited_then_published_sales_are_ended_not_edited() {
        let office = MemoryOffice::default();
        let sale = draft(&office);
        let route = EndRoute {
            store: &office,
            cache: &office,
        };
        let end = |id: &SaleId| on(api_request("POST", "/x", "", admin()), id);
        assert_refused(
            &answer(end_sale(&route, end(&sale.id)).await),
            409,
            "NOT_PUBLISHED",
            "draft",
        );
        let edit = |body: &str| on(api_request("PATCH", "/x", body, admin()), &sale.id);
        let (status, body) = answer(edit_sale(&office, edit(r#"{"priceCents": 1250}"#)).await);
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["priceCents"], 1250);
        assert_eq!(body["state"], "DRAFT");
        assert_refused(
            &answer(edit_sale(&office, edit(r#"{"priceCents": 0}"#)).await),
            400,
            "BAD_REQUEST",
            "priceCents",
        );
        assert_refused(
            &answer(edit_sale(&office, edit(r#"{"colour": "red"}"#)).await),
            400,
            "BAD_REQUEST",
            "colour",
        );

        office
            .sales
            .sales
            .lock()
            .unwrap()
            .get_mut(&sale.id)
            .unwrap()
            .state = Lifecycle::Published;
        assert_refused(
            &answer(edit_sale(&office, edit(r#"{"priceCents": 1}"#)).await),
            409,
            "NOT_DRAFT",
            "PUBLISHED",
        );
        let (status, body) = answer(end_sale(&route, end(&sale.id)).await);
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["state"], "ENDED");
        assert_eq!(office.closed.lock().unwrap().len(), 1);
        assert_refused(
            &answer(end_sale(&route, end(&SaleId::generate())).await),
            404,
            "NOT_FOUND",
            "no sale",
        );
    }

    #[tokio::test]
    async fn figures_are_for_operators_of_a_known_sale_by_a_well_formed_id() {
        use crate::seckill::order::fake::{MemoryOrders, MemoryReservations};
        let office = MemoryOffice::default();
        let sale = draft(&office);
        let (ledger, cache) = (MemoryOrders::default(), MemoryReservations::default());
        let route = FiguresRoute {
            office: &office,
            ledger: &ledger,
            cache: &cache,
        };
        let get = |claims| on(api_request("GET", "/x", "", claims), &sale.id);
        assert_eq!(
            answer(sale_figures(&route, get(claims_of("bob"))).await).0,
            403
        );
        let (status, body) = answer(sale_figures(&route, get(admin())).await);
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["saleId"], sale.id.to_string());
        assert_eq!(body["state"], "DRAFT");
        assert_eq!(body["dynamo"]["stock"], 5);
        assert_eq!(body["orders"]["PAID"]["orders"], 0);
        assert_eq!(body["redis"], serde_json::Value::Null);
        assert_refused(
            &answer(
                sale_figures(
                    &route,
                    on(api_request("GET", "/x", "", admin()), &SaleId::generate()),
                )
                .await,
            ),
            404,
            "NOT_FOUND",
            "no sale",
        );
        let malformed = {
            use lambda_http::RequestExt;
            api_request("GET", "/x", "", admin()).with_path_parameters(
                std::collections::HashMap::from([("id".to_owned(), "not-a-sale".to_owned())]),
            )
        };
        assert_eq!(answer(sale_figures(&route, malformed).await).0, 400);
    }

    #[tokio::test]
    async fn the_list_refuses_an_unknown_state_and_the_listing_is_cached_briefly() {
        use lambda_http::RequestExt;
        let office = MemoryOffice::default();
        let sale = draft(&office);
        let query = |state: &str| {
            api_request("GET", "/seckill/activities", "", admin()).with_query_string_parameters(
                std::collections::HashMap::from([("state".to_owned(), state.to_owned())]),
            )
        };
        assert_refused(
            &answer(list_sales(&office, query("LIVE")).await),
            400,
            "BAD_REQUEST",
            "state",
        );
        let (status, body) = answer(list_sales(&office, query("DRAFT")).await);
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["items"][0]["id"], sale.id.to_string());
        let (_, body) = answer(list_sales(&office, query("PUBLISHED")).await);
        assert_eq!(body["items"], serde_json::json!([]));

        // A draft is never listed; a published one is, with its state.
        let request = || api_request("GET", "/seckill/listing", "", serde_json::Value::Null);
        let response = sale_listing(&office, request()).await.unwrap();
        assert_eq!(
            response.headers()[header::CACHE_CONTROL],
            LISTING_CACHE_CONTROL
        );
        let (_, body) = answer(Ok(response));
        assert_eq!(body["items"], serde_json::json!([]));
        office
            .sales
            .sales
            .lock()
            .unwrap()
            .get_mut(&sale.id)
            .unwrap()
            .state = Lifecycle::Published;
        let (_, body) = answer(sale_listing(&office, request()).await);
        assert_eq!(body["items"][0]["state"], "ONGOING");
        assert_eq!(body["items"][0]["title"], "Lamp");
    }
}
