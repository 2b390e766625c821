//! The back office and the home page's listing end to end, through the local API Gateway: an
//! operator lists every sale (drafts included, by state, paged), edits a draft, ends a live
//! sale early while buyers order; the listing and the detail then say ENDED, later attempts
//! answer 409 `ENDED`, and the orders admitted before the end are confirmed and can be paid.

use crate::seckill::{WAIT, buyers, crowd, detail, dynamodb_stock, settled};
use crate::support::{
    Api, SaleBuilder, eventually, options, sale, start, status_and_code, unique_stack,
};
use serde_json::{Value, json};

/// A sale of `stock` titled `title`, opening `starts_in_s` seconds from now.
fn titled(title: &str, stock: u32, starts_in_s: i64) -> SaleBuilder {
    sale()
        .title(title)
        .stock(stock)
        .starts_in(time::Duration::seconds(starts_in_s))
}

/// The listing's entry of `sale`, once the (eventually consistent) index shows it in `state`.
async fn listed(public: &Api, sale: &str, state: &str) -> Value {
    eventually(
        WAIT,
        &format!("the listing shows {sale} {state}"),
        || async {
            let (status, body) = public.call("GET", "/seckill/listing", None).await;
            assert_eq!(status, 200, "{body}");
            body["items"]
                .as_array()
                .unwrap()
                .iter()
                .find(|item| item["id"] == sale && item["state"] == state)
                .cloned()
        },
    )
    .await
}

#[tokio::test]
async fn operators_list_edit_and_end_sales_and_the_listing_follows() {
    let cloud = start(options(&unique_stack())).await;
    let operator = Api::admin(&cloud, "operator");
    let public = Api::new(&cloud, None);

    // A draft, edited, never listed on the home page; two published sales, one upcoming.
    let draft_id = titled("Draft", 5, 60).create(&operator).await;
    let (status, edited) = operator
        .call(
            "PATCH",
            &format!("/seckill/activities/{draft_id}"),
            Some(json!({"title": "Desk lamp", "priceCents": 2500})),
        )
        .await;
    assert_eq!(status, 200, "{edited}");
    assert_eq!(
        (edited["title"].as_str(), edited["priceCents"].as_i64()),
        (Some("Desk lamp"), Some(2500))
    );
    let refused = operator
        .call(
            "PATCH",
            &format!("/seckill/activities/{draft_id}"),
            Some(json!({"stock": 0})),
        )
        .await;
    assert_eq!(status_and_code(&refused), (400, Some("BAD_REQUEST")));
    let upcoming = titled("Upcoming", 5, 600).publish(&operator).await;
    let live = titled("Live", 40, -60).publish(&operator).await;

    // The back office: newest first, drafts included, by state, paged.
    let (status, page) = operator
        .call("GET", "/seckill/activities?limit=2", None)
        .await;
    assert_eq!(status, 200, "{page}");
    let ids: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [live.as_str(), upcoming.as_str()]);
    let cursor = page["nextCursor"].as_str().unwrap();
    let (_, next) = operator
        .call(
            "GET",
            &format!("/seckill/activities?limit=2&cursor={cursor}"),
            None,
        )
        .await;
    assert_eq!(next["items"][0]["id"], draft_id, "{next}");
    let (_, drafts) = operator
        .call("GET", "/seckill/activities?state=DRAFT", None)
        .await;
    assert_eq!(drafts["items"].as_array().unwrap().len(), 1, "{drafts}");
    assert_eq!(
        status_and_code(
            &operator
                .call("GET", "/seckill/activities?state=LIVE", None)
                .await
        ),
        (400, Some("BAD_REQUEST"))
    );
    let buyer = Api::new(&cloud, Some("buyer"));
    assert_eq!(buyer.call("GET", "/seckill/activities", None).await.0, 403);
    let published = operator
        .call(
            "PATCH",
            &format!("/seckill/activities/{live}"),
            Some(json!({"title": "x"})),
        )
        .await;
    assert_eq!(status_and_code(&published), (409, Some("NOT_DRAFT")));

    // The home page lists the published ones, not the draft.
    listed(&public, &upcoming, "UPCOMING").await;
    listed(&public, &live, "ONGOING").await;
    let (_, listing) = public.call("GET", "/seckill/listing", None).await;
    assert!(
        !listing.to_string().contains(draft_id.as_str()),
        "{listing}"
    );

    // Buyers order while the operator ends the live sale.
    let crowd_buyers = buyers("early", 10);
    let (accepted, _) = crowd(&cloud, &live, &crowd_buyers).await;
    assert_eq!(accepted.len(), 10);
    let (status, ended) = operator
        .call("POST", &format!("/seckill/activities/{live}/end"), None)
        .await;
    assert_eq!(status, 200, "{ended}");
    assert_eq!(ended["state"], "ENDED");
    let again = operator
        .call("POST", &format!("/seckill/activities/{live}/end"), None)
        .await;
    assert_eq!(
        (again.0, &again.1["endsAt"]),
        (200, &ended["endsAt"]),
        "idempotent"
    );
    assert_eq!(
        status_and_code(
            &operator
                .call("POST", &format!("/seckill/activities/{draft_id}/end"), None)
                .await
        ),
        (409, Some("NOT_PUBLISHED"))
    );

    // From now on: 409 ENDED; the detail and the listing agree.
    let late = Api::new(&cloud, Some("late-buyer"))
        .call("POST", &format!("/seckill/activities/{live}/orders"), None)
        .await;
    assert_eq!(status_and_code(&late), (409, Some("ENDED")));
    let view = detail(&cloud, &live).await;
    assert_eq!(view["state"], "ENDED", "{view}");
    // Redis keeps the end in milliseconds, the table in microseconds.
    let millis = |at: &Value| at.as_str().unwrap()[..23].to_owned();
    assert_eq!(millis(&view["endsAt"]), millis(&ended["endsAt"]));
    let entry = listed(&public, &live, "ENDED").await;
    assert_eq!(entry["endsAt"], ended["endsAt"]);
    assert_eq!(
        status_and_code(
            &operator
                .call("POST", &format!("/seckill/activities/{live}/publish"), None)
                .await
        ),
        (409, Some("ENDED"))
    );

    // The orders admitted before the end are confirmed, and can be paid.
    let counts = settled(&cloud, &accepted).await;
    assert_eq!(counts.get("CONFIRMED"), Some(&10), "{counts:?}");
    assert_eq!(dynamodb_stock(&cloud, &live).await, 30);
    let (buyer_id, order) = &accepted[0];
    let (status, paid) = Api::new(&cloud, Some(buyer_id))
        .call(
            "POST",
            &format!("/orders/{order}/pay"),
            Some(json!({"method": "COD"})),
        )
        .await;
    assert_eq!(status, 200, "{paid}");
    assert_eq!(paid["status"], "COD", "{paid}");
    let (_, ended_list) = operator
        .call("GET", "/seckill/activities?state=ENDED", None)
        .await;
    assert_eq!(ended_list["items"][0]["id"], live.as_str(), "{ended_list}");
    cloud.stop().await;
}
