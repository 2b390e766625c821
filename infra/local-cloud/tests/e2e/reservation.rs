//! Reservations (预约) end to end: a sale that requires one sells only to the buyers who
//! reserved it, exactly; a storm of reservations is counted exactly; the cache's copy of the
//! reservations is rebuilt from the table by a publish.

use crate::seckill::{crowd, detail, settled};
use crate::support::{Api, options, sale, start, status_and_code, unique_stack};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;
use time::OffsetDateTime;

/// How far ahead the sale starts: time for the reservations to be made before it.
const LEAD: Duration = Duration::from_secs(15);

async fn reservation(api: &Api, method: &str, sale: &str) -> (u16, Value) {
    api.call(
        method,
        &format!("/seckill/activities/{sale}/reservation"),
        None,
    )
    .await
}

#[tokio::test]
async fn a_reservation_only_sale_sells_only_to_the_buyers_who_reserved_it_exactly() {
    let cloud = start(options(&unique_stack())).await;
    let operator = Api::admin(&cloud, "operator");
    let starts_at = OffsetDateTime::now_utc() + LEAD;
    let sale = sale()
        .product("p-resv")
        .title("Reserved flash sale")
        .starts_at(starts_at)
        .reservation_required(time::Duration::minutes(-1))
        .publish(&operator)
        .await;
    let shown = detail(&cloud, &sale).await;
    assert_eq!(shown["state"], "UPCOMING");
    assert_eq!(shown["reservationRequired"], true);
    assert_eq!(shown["reservationCount"], 0);

    // A storm: 40 buyers reserve at once, each twice; every answer is 200 and the count exact.
    let reserving: Vec<String> = (0..40).map(|i| format!("fan-{i}")).collect();
    let tasks: Vec<_> = reserving
        .iter()
        .chain(reserving.iter())
        .map(|buyer| {
            let api = Api::new(&cloud, Some(buyer));
            let sale = sale.clone();
            tokio::spawn(async move { reservation(&api, "PUT", &sale).await })
        })
        .collect();
    for task in tasks {
        let (status, body) = task.await.unwrap();
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["reserved"], true, "{body}");
    }
    let fan = Api::new(&cloud, Some("fan-0"));
    let (_, standing) = reservation(&fan, "GET", &sale).await;
    assert_eq!(
        (
            standing["reserved"].clone(),
            standing["reservationCount"].clone()
        ),
        (json!(true), json!(40))
    );
    assert_eq!(detail(&cloud, &sale).await["reservationCount"], 40);

    // One cancels before the start; a stranger reads that they hold none.
    let (status, cancelled) = reservation(&Api::new(&cloud, Some("fan-39")), "DELETE", &sale).await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["reservationCount"], 39);
    let stranger = Api::new(&cloud, Some("stranger"));
    let (_, standing) = reservation(&stranger, "GET", &sale).await;
    assert_eq!(standing["reserved"], false);

    // The cache loses its copy of the reservations; publishing again rebuilds it from the table.
    let url = std::env::var("REDIS_URL").unwrap();
    let mut redis = crate::support::redis_connection(&url).await;
    let _: i64 = redis::cmd("DEL")
        .arg(format!("sale:{{{sale}}}:reserved"))
        .query_async(&mut redis)
        .await
        .unwrap();
    assert_eq!(detail(&cloud, &sale).await["reservationCount"], 0);
    let (status, body) = operator
        .call("POST", &format!("/seckill/activities/{sale}/publish"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(detail(&cloud, &sale).await["reservationCount"], 39);

    // Until the start, no one buys; from it, no one reserves.
    let early = stranger
        .call("POST", &format!("/seckill/activities/{sale}/orders"), None)
        .await;
    assert_eq!(status_and_code(&early), (409, Some("NOT_STARTED")));
    let wait = (starts_at - OffsetDateTime::now_utc()).unsigned_abs() + Duration::from_millis(500);
    tokio::time::sleep(wait).await;
    let late = reservation(&stranger, "PUT", &sale).await;
    assert_eq!(status_and_code(&late), (409, Some("RESERVATION_CLOSED")));
    let undo = reservation(&fan, "DELETE", &sale).await;
    assert_eq!(status_and_code(&undo), (409, Some("RESERVATION_CLOSED")));

    // The reserved 39 and 20 strangers at once, for 5 units: 5 reserved buyers get them, every
    // stranger (and the buyer who cancelled) meets NOT_RESERVED.
    let mut buyers: Vec<String> = reserving.clone();
    buyers.extend((0..20).map(|i| format!("stranger-{i}")));
    let (accepted, rejected) = crowd(&cloud, &sale, &buyers).await;
    assert_eq!(accepted.len(), 5, "{rejected:?}");
    for (buyer, _) in &accepted {
        assert!(buyer.starts_with("fan-") && buyer != "fan-39", "{buyer}");
    }
    assert_eq!(
        rejected,
        BTreeMap::from([("NOT_RESERVED".to_owned(), 21), ("SOLD_OUT".to_owned(), 34),])
    );
    let statuses = settled(&cloud, &accepted).await;
    assert_eq!(statuses, BTreeMap::from([("CONFIRMED".to_owned(), 5)]));

    let (status, figures) = operator
        .call("GET", &format!("/seckill/activities/{sale}/figures"), None)
        .await;
    assert_eq!(status, 200, "{figures}");
    assert_eq!(
        figures["reservations"],
        json!({"count": 39, "orders": 5, "conversionPercent": 12})
    );
}

#[tokio::test]
async fn reservations_are_refused_with_a_reason_outside_their_window() {
    let cloud = start(options(&unique_stack())).await;
    let operator = Api::admin(&cloud, "operator");
    let hour = time::Duration::hours(1);
    let later = sale()
        .product("p-resv")
        .title("Later")
        .price_cents(500)
        .stock(3)
        .starts_in(hour)
        .ends_in(2 * hour);
    let not_yet = later
        .clone()
        .reservation_required(hour / 2)
        .publish(&operator)
        .await;
    let open_to_all = later.publish(&operator).await;
    let buyer = Api::new(&cloud, Some("ann"));
    let refused = reservation(&buyer, "PUT", &not_yet).await;
    assert_eq!(
        status_and_code(&refused),
        (409, Some("RESERVATION_NOT_OPEN"))
    );
    let refused = reservation(&buyer, "PUT", &open_to_all).await;
    assert_eq!(
        status_and_code(&refused),
        (409, Some("RESERVATION_NOT_REQUIRED"))
    );
    let anonymous = reservation(&Api::new(&cloud, None), "PUT", &not_yet).await;
    assert_eq!(anonymous.0, 401);
    let unknown = reservation(&buyer, "PUT", "0190f0e2-1c2b-7a00-8000-000000000001").await;
    assert_eq!(unknown.0, 404);
    let malformed = reservation(&buyer, "PUT", "not-a-sale").await;
    assert_eq!(malformed.0, 400);

    // An operator's mistakes are 400s that say why.
    let (status, body) = operator
        .call(
            "POST",
            "/seckill/activities",
            Some({
                let mut body = later.body();
                body["reservationRequired"] = json!(true);
                body
            }),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("reservationOpensAt"),
        "{body}"
    );
}

/// In a real (headless) browser: before a reservation-only sale starts, its page offers ann
/// "Reserve" and then shows "Reserved" and the count; once it starts, ann's Buy is enabled and
/// bob's, who did not reserve, is not, with the reason. A screenshot per step in
/// `$LOCAL_STATE/shop-reservation/`.
#[tokio::test]
async fn the_sale_page_reserves_before_the_start_and_enables_buy_only_for_the_reserved() {
    let cloud = start(options(&unique_stack())).await;
    let base = format!("http://{}", cloud.address);
    let state = crate::support::state_dir("shop-reservation");
    let browser = crate::browser::Browser::start(&state, 1000, 1400).await;
    let walked = reserve_in_browser(&browser.client, &base, &state, &cloud).await;
    browser.close().await;
    cloud.stop().await;
    walked.unwrap();
}

async fn reserve_in_browser(
    client: &fantoccini::Client,
    base: &str,
    state: &std::path::Path,
    cloud: &local_cloud::cloud::LocalCloud,
) -> anyhow::Result<()> {
    use crate::shop::{disabled, page_written, switch_user, wait_for};
    let shot = |name: &'static str| async move {
        let png = client.screenshot().await?;
        std::fs::write(state.join(format!("{name}.png")), png)?;
        anyhow::Ok(())
    };
    let starts_at = OffsetDateTime::now_utc() + Duration::from_secs(25);
    let sale = sale()
        .product("p-resv")
        .title("Reserved phone")
        .stock(3)
        .starts_at(starts_at)
        .reservation_required(time::Duration::minutes(-1))
        .publish(&Api::admin(cloud, "ops"))
        .await;
    page_written(base, &sale).await;

    client.goto(&format!("{base}/shop/sales/{sale}")).await?;
    switch_user(client, "ann", false).await?;
    wait_for(client, "#reserve", |r| r == "Reserve").await?;
    wait_for(client, "#reservation-count", |c| c == "0").await?;
    anyhow::ensure!(!disabled(client, "#reserve").await?, "reserve is disabled");
    anyhow::ensure!(
        disabled(client, "#buy").await?,
        "buy is enabled before the start"
    );
    shot("1-reserve-offered").await?;
    client
        .find(fantoccini::Locator::Id("reserve"))
        .await?
        .click()
        .await?;
    wait_for(client, "#reserve", |r| r == "Reserved").await?;
    wait_for(client, "#reservation-count", |c| c == "1").await?;
    wait_for(client, "#reservation-note", |n| {
        n == "You reserved this sale."
    })
    .await?;
    shot("2-reserved").await?;

    // bob did not reserve: once the sale starts his Buy stays disabled, with the reason.
    switch_user(client, "bob", false).await?;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    wait_for(client, "#reserve", |r| r == "Reserve").await?;
    while OffsetDateTime::now_utc() < starts_at + Duration::from_secs(2) {
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "the sale never started"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    wait_for(client, "#state", |s| s == "On sale now").await?;
    wait_for(client, "#why", |w| w.contains("reserved this sale")).await?;
    anyhow::ensure!(
        disabled(client, "#buy").await?,
        "bob may buy without a reservation"
    );
    shot("3-not-reserved").await?;

    // ann did: her Buy is enabled.
    switch_user(client, "ann", false).await?;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while disabled(client, "#buy").await? {
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "ann's buy was never enabled"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    wait_for(client, "#reserve", |r| r == "Reserved").await?;
    shot("4-reserved-buyer-may-buy").await?;
    Ok(())
}
