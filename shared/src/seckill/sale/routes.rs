//! HTTP entry points of the sale routes: operators create and publish, buyers read and order.
//!
//! The buyer routes (`get_sale`, `place_order`) read only the cache and the admission store,
//! never DynamoDB.

use crate::auth::Caller;
use crate::clock::epoch_ms;
use crate::error_code::ErrorCode;
use crate::http::{ApiError, json, parse_body, path_id, record_id};
use crate::ids::SaleId;
use crate::seckill::sale::page::PageRequests;
use crate::seckill::sale::{
    self, Lifecycle, NewSale, NewSaleDto, PublishError, Sale, SaleCache, SaleDetail, SaleState,
    SaleStore,
};
use lambda_http::http::{HeaderValue, StatusCode, header};
use lambda_http::{Body, Request, Response};
use serde::Serialize;
use time::OffsetDateTime;

/// The `{id}` of the path.
pub(crate) fn path_sale(request: &Request) -> Result<SaleId, ApiError> {
    path_id(request, "id", "sale", SaleId::parse)
}

fn rfc3339_of_ms(ms: i64) -> String {
    crate::clock::from_epoch_ms(ms)
        .map(crate::clock::format)
        .unwrap_or_default()
}

/// A sale as operators see it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SaleBody<'a> {
    id: &'a SaleId,
    product_id: &'a str,
    title: &'a str,
    price_cents: u64,
    stock: u32,
    stock_remaining: u32,
    per_user_limit: u32,
    starts_at: String,
    ends_at: String,
    state: Lifecycle,
    created_at: &'a str,
    reservation_required: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    reservation_opens_at: Option<String>,
}

pub(crate) fn sale_body(sale: &Sale) -> SaleBody<'_> {
    SaleBody {
        id: &sale.id,
        product_id: &sale.product_id,
        title: &sale.title,
        price_cents: sale.price_cents,
        stock: sale.initial_stock,
        stock_remaining: sale.stock_remaining,
        per_user_limit: sale.per_user_limit,
        starts_at: crate::clock::format(sale.starts_at),
        ends_at: crate::clock::format(sale.ends_at),
        state: sale.state,
        created_at: &sale.created_at,
        reservation_required: sale.reservation_opens_at.is_some(),
        reservation_opens_at: sale.reservation_opens_at.map(crate::clock::format),
    }
}

/// `POST /seckill/activities` (admin): creates a draft sale; 201 with it.
pub async fn create_sale(
    store: &dyn SaleStore,
    request: Request,
) -> Result<Response<Body>, ApiError> {
    Caller::from_request(&request)?.require_admin()?;
    let dto: NewSaleDto = parse_body(&request)?;
    let now = OffsetDateTime::now_utc();
    let new = NewSale::parse(dto, now).map_err(|err| ApiError::bad_request(err.to_string()))?;
    let sale = Sale::draft(SaleId::generate(), new, crate::clock::format(now));
    record_id("sale", &sale.id);
    store.create(&sale).await.map_err(ApiError::internal)?;
    Ok(json(StatusCode::CREATED, &sale_body(&sale)))
}

/// What the publish route needs, built once at cold start.
pub struct PublishRoute<'a> {
    pub store: &'a dyn SaleStore,
    pub cache: &'a dyn SaleCache,
    pub pages: &'a dyn PageRequests,
}

/// `POST /seckill/activities/{id}/publish` (admin): publishes, preheats and asks for the sale's
/// page at `/shop/sales/{id}` (the page writer renders it from the table); idempotent.
pub async fn publish_sale(
    route: &PublishRoute<'_>,
    request: Request,
) -> Result<Response<Body>, ApiError> {
    Caller::from_request(&request)?.require_admin()?;
    let id = path_sale(&request)?;
    let now = crate::clock::now_rfc3339();
    match sale::publish(route.store, route.cache, route.pages, &id, &now).await {
        Ok(sale) => Ok(json(StatusCode::OK, &sale_body(&sale))),
        Err(err @ PublishError::NotFound(_)) => Err(ApiError::not_found(err.to_string())),
        Err(err @ PublishError::Ended(_)) => {
            Err(ApiError::conflict(ErrorCode::Ended, err.to_string()))
        }
        // The table or the cache failing: publishing again is how the operator retries.
        Err(PublishError::Store(err)) => Err(ApiError::store_unavailable(err)),
        Err(PublishError::Page(err)) => {
            tracing::error!(error = ?anyhow::Error::from(err), "the sale page was not written");
            Err(ApiError::unavailable(
                ErrorCode::Retry,
                "the sale is published but its page could not be queued; publish it again",
            ))
        }
    }
}

/// A sale as buyers see it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DetailBody<'a> {
    id: &'a SaleId,
    product_id: &'a str,
    title: &'a str,
    price_cents: u64,
    per_user_limit: u32,
    starts_at: String,
    ends_at: String,
    stock: u32,
    stock_remaining: i64,
    state: SaleState,
    /// Only buyers who reserved may order.
    reservation_required: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    reservation_opens_at: Option<String>,
    /// The buyers who reserved, live.
    reservation_count: u64,
    /// The server's clock when the answer was made, for the page's countdown.
    server_time: String,
}

fn detail_body(detail: &SaleDetail, now_ms: i64) -> DetailBody<'_> {
    DetailBody {
        id: &detail.id,
        product_id: &detail.product_id,
        title: &detail.title,
        price_cents: detail.price_cents,
        per_user_limit: detail.per_user_limit,
        starts_at: rfc3339_of_ms(detail.starts_at_ms),
        ends_at: rfc3339_of_ms(detail.ends_at_ms),
        stock: detail.stock,
        stock_remaining: detail.stock_remaining.max(0),
        state: detail.state(now_ms),
        reservation_required: detail.reservation_opens_at_ms.is_some(),
        reservation_opens_at: detail.reservation_opens_at_ms.map(rfc3339_of_ms),
        reservation_count: detail.reservations,
        server_time: rfc3339_of_ms(now_ms),
    }
}

/// How long a CDN or browser may reuse a detail page: short, since the stock is live.
pub const DETAIL_CACHE_CONTROL: &str = "public, max-age=1";

/// `GET /seckill/activities/{id}` (public): the published sale with its live stock and state,
/// from one Redis round trip.
pub async fn get_sale(cache: &dyn SaleCache, request: Request) -> Result<Response<Body>, ApiError> {
    let id = path_sale(&request)?;
    let detail = cache
        .detail(&id)
        .await
        .map_err(ApiError::store_unavailable)?
        .ok_or_else(|| ApiError::not_found(format!("no sale {id}")))?;
    let now_ms = epoch_ms(OffsetDateTime::now_utc());
    let mut response = json(StatusCode::OK, &detail_body(&detail, now_ms));
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(DETAIL_CACHE_CONTROL),
    );
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::seckill::sale::fake::MemoryPageRequests;
    use crate::seckill::sale::fake::MemorySales;
    use crate::testing::{answer, api_request, assert_refused, claims_of};
    use lambda_http::RequestExt;
    use serde_json::{Value, json};
    use std::collections::HashMap;
    use std::sync::atomic::Ordering;

    fn admin() -> Value {
        json!({"jwt": {"claims": {"sub": "op", "cognito:groups": "[admin]"}, "scopes": null}})
    }

    fn publish_route<'a>(
        sales: &'a MemorySales,
        pages: &'a MemoryPageRequests,
    ) -> PublishRoute<'a> {
        PublishRoute {
            store: sales,
            cache: sales,
            pages,
        }
    }

    fn with_id(request: Request, id: &str) -> Request {
        request.with_path_parameters(HashMap::from([("id".to_owned(), id.to_owned())]))
    }

    fn new_sale_body(starts_in_s: i64) -> String {
        let now = OffsetDateTime::now_utc();
        json!({
            "productId": "sku-1", "title": "Phone", "priceCents": 500, "stock": 3,
            "perUserLimit": 1,
            "startsAt": crate::clock::format(now + time::Duration::seconds(starts_in_s)),
            "endsAt": crate::clock::format(now + time::Duration::hours(1)),
        })
        .to_string()
    }

    #[tokio::test]
    async fn only_operators_create_and_publish() {
        let sales = MemorySales::default();
        let request = api_request(
            "POST",
            "/seckill/activities",
            &new_sale_body(0),
            claims_of("bob"),
        );
        let (status, body) = answer(create_sale(&sales, request).await);
        assert_eq!(status, 403, "{body}");
        let request = with_id(
            api_request("POST", "/p", "", claims_of("bob")),
            SaleId::generate().as_str(),
        );
        let pages = MemoryPageRequests::default();
        let route = publish_route(&sales, &pages);
        assert_eq!(answer(publish_sale(&route, request).await).0, 403);
    }

    #[tokio::test]
    async fn a_bad_sale_is_a_400_that_says_why() {
        let sales = MemorySales::default();
        let field = |name: &str, value: Value| {
            let mut body: Value = serde_json::from_str(&new_sale_body(0)).unwrap();
            body[name] = value;
            body.to_string()
        };
        for (body, says) in [
            (field("discount", json!(10)), "unknown field `discount`"),
            (field("perUserLimit", json!(4)), "perUserLimit"),
        ] {
            let request = api_request("POST", "/seckill/activities", &body, admin());
            assert_refused(
                &answer(create_sale(&sales, request).await),
                400,
                "BAD_REQUEST",
                says,
            );
        }
    }

    #[tokio::test]
    async fn a_sale_is_created_published_and_read_publicly() {
        let sales = MemorySales::default();
        let request = api_request("POST", "/seckill/activities", &new_sale_body(-1), admin());
        let (status, created) = answer(create_sale(&sales, request).await);
        assert_eq!(status, 201, "{created}");
        assert_eq!(created["state"], "DRAFT");
        assert_eq!(created["stockRemaining"], 3);
        let id = created["id"].as_str().unwrap().to_owned();

        let read = || {
            let request = with_id(api_request("GET", "/d", "", json!(null)), &id);
            get_sale(&sales, request)
        };
        assert_eq!(answer(read().await).0, 404);

        let pages = MemoryPageRequests::default();
        let route = publish_route(&sales, &pages);
        pages.fail.store(true, Ordering::SeqCst);
        let request = with_id(api_request("POST", "/p", "", admin()), &id);
        assert_refused(
            &answer(publish_sale(&route, request).await),
            503,
            "RETRY",
            "publish it again",
        );
        pages.fail.store(false, Ordering::SeqCst);
        let request = with_id(api_request("POST", "/p", "", admin()), &id);
        let (status, published) = answer(publish_sale(&route, request).await);
        assert_eq!(status, 200);
        assert_eq!(published["state"], "PUBLISHED");
        let request = with_id(api_request("POST", "/p", "", admin()), &id);
        assert_eq!(answer(publish_sale(&route, request).await).0, 200);
        let sale_id = SaleId::parse(&id).unwrap();
        // Asked for once per publish that succeeded; the writer renders it from the table.
        assert_eq!(*pages.requested.lock().unwrap(), [sale_id.clone(), sale_id]);

        let response = read().await.unwrap();
        assert_eq!(
            response.headers()[header::CACHE_CONTROL],
            DETAIL_CACHE_CONTROL
        );
        let (status, detail) = answer(Ok(response));
        assert_eq!(status, 200);
        assert_eq!(detail["state"], "ONGOING");
        assert_eq!(detail["stock"], 3);
        assert_eq!(detail["stockRemaining"], 3);
        assert_eq!(detail["priceCents"], 500);
        let server_time = detail["serverTime"].as_str().unwrap();
        let then =
            OffsetDateTime::parse(server_time, &time::format_description::well_known::Rfc3339);
        let lag = OffsetDateTime::now_utc() - then.unwrap();
        assert!(lag.whole_seconds().abs() < 5, "{server_time}");

        let request = with_id(
            api_request("POST", "/p", "", admin()),
            SaleId::generate().as_str(),
        );
        assert_eq!(answer(publish_sale(&route, request).await).0, 404);
        let request = with_id(api_request("GET", "/d", "", json!(null)), "nope");
        assert_eq!(answer(get_sale(&sales, request).await).0, 400);
    }
}
