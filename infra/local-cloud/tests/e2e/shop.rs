//! The shop's pages under `/shop/`, served by the runner from the emulator's S3 as the
//! cloud's distribution serves them from the bucket: the static pages uploaded at start, and
//! a sale's page written by publish-sale; then a buyer's whole path in a real (headless)
//! browser, a screenshot per step in `$LOCAL_STATE/shop/`.

use crate::browser::Browser;
use crate::journey::create_from_ops_page;
use crate::support::{self, Api, sale};
use bytes::Bytes;
use fantoccini::{Client, Locator};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// `GET base+path`: status, content type, body.
async fn get(base: &str, method: &str, path: &str) -> (u16, String, String) {
    let client = HttpClient::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let request = http::Request::builder()
        .method(method)
        .uri(format!("{base}{path}"))
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = client.request(request).await.expect("the runner answers");
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, kind, String::from_utf8_lossy(&body).into_owned())
}

/// The sale's page, once the page writer stored it (publish-sale queues it): status, content
/// type, body.
pub(crate) async fn page_written(base: &str, id: &str) -> (u16, String, String) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let answer = get(base, "GET", &format!("/shop/sales/{id}")).await;
        // Not there yet: S3's 403 for a key that does not exist.
        if answer.0 != 403 || Instant::now() > deadline {
            return answer;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn at(from_now: time::Duration) -> String {
    (OffsetDateTime::now_utc() + from_now)
        .format(&Rfc3339)
        .unwrap()
}

/// The static pages and a published sale's page come from the bucket with their content
/// types, as the distribution serves them (every file the deploy step uploads, byte for
/// byte): `/shop/` is its `index.html` (the viewer-request function's rewrite), `/shop`
/// redirects there, and a key that does not exist is S3's 403 (no index document of S3's
/// own, no `s3:ListBucket`); the pages answer only GET and HEAD; and the API's routes are
/// untouched.
#[tokio::test]
async fn the_pages_and_a_published_sales_page_are_served_from_the_bucket() {
    let cloud = support::start(support::options(&support::unique_stack())).await;
    let base = format!("http://{}", cloud.address);
    for (path, kind, has) in [
        ("/shop/", "text/html; charset=utf-8", "<h1>Flash sales</h1>"),
        (
            "/shop/checkout.html",
            "text/html; charset=utf-8",
            "<h1>Checkout</h1>",
        ),
        (
            "/shop/shop.js",
            "text/javascript; charset=utf-8",
            "sessionStorage",
        ),
        ("/shop/shop.css", "text/css; charset=utf-8", "font"),
        ("/shop/config.json", "application/json", "/_local/sign-in"),
    ] {
        let (status, content_type, body) = get(&base, "GET", path).await;
        assert_eq!(
            (status, content_type.as_str()),
            (200, kind),
            "{path}: {body}"
        );
        assert!(body.contains(has), "{path}: {body}");
    }
    // Every file of the site as the deploy step uploads it (`local-cloud pages`) is served as
    // it is, each page with its shared head and layout included; their sources and the sale
    // page's template are not pages.
    let site = local_cloud::layout::site(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shop"))
        .expect("the pages expand");
    assert!(site.len() > 10, "{site:?}");
    for file in &site {
        let (status, kind, body) = get(&base, "GET", &format!("/shop/{}", file.key)).await;
        assert_eq!(
            (status, kind.as_str()),
            (200, file.content_type),
            "{}",
            file.key
        );
        assert!(body.as_bytes() == file.body, "{}: {body}", file.key);
    }
    for source in ["/shop/templates/sale.html", "/shop/_layout/head.html"] {
        let (status, _, body) = get(&base, "GET", source).await;
        assert_eq!(status, 403, "{source}: {body}");
    }
    // /shop has no slash: the function redirects it; a directory without an index.html is
    // a key that does not exist.
    let client = HttpClient::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let bare = client
        .get(format!("{base}/shop").parse().unwrap())
        .await
        .unwrap();
    assert_eq!(bare.status(), 301);
    assert_eq!(bare.headers()[http::header::LOCATION], "/shop/");
    let (status, kind, body) = get(&base, "GET", "/shop/sales/").await;
    assert_eq!((status, kind.as_str()), (403, "application/xml"), "{body}");
    assert!(body.contains("<Code>AccessDenied</Code>"), "{body}");

    let ops = Api::admin(&cloud, "ops");
    let id = sale().title("Phone <b>X</b>").stock(3).publish(&ops).await;
    let (status, content_type, page) = page_written(&base, &id).await;
    assert_eq!(
        (status, content_type.as_str()),
        (200, "text/html; charset=utf-8")
    );
    assert!(
        page.contains("<h1>Phone &lt;b&gt;X&lt;/b&gt;</h1>"),
        "{page}"
    );
    assert!(page.contains(&format!("data-sale-id=\"{id}\"")), "{page}");

    let missing = "/shop/sales/0190d4b2-0000-7000-8000-000000000000";
    let (status, _, message) = get(&base, "GET", missing).await;
    assert_eq!(status, 403);
    assert!(message.contains("<Code>AccessDenied</Code>"), "{message}");
    let (status, _, _) = get(&base, "POST", "/shop/checkout.html").await;
    assert_eq!(status, 405);
    // Not a page: the API's answer.
    let (status, _, detail) = get(&base, "GET", &format!("/seckill/activities/{id}")).await;
    assert_eq!(status, 200, "{detail}");
    assert!(detail.contains("\"serverTime\""), "{detail}");

    // Every answer of the site, pages and API, carries the distribution's security headers
    // (ShopSecurityHeadersPolicy), the payment sandbox's page included; the runner's own
    // tools under /_local/ keep theirs.
    for path in [
        "/shop/".to_owned(),
        "/shop/shop.js".to_owned(),
        format!("/shop/sales/{id}"),
        missing.to_owned(),
        format!("/seckill/activities/{id}"),
        "/orders".to_owned(),
        "/sandbox/payments/pay_1?orderId=s.o&amountCents=100&returnUrl=%2Fshop%2F".to_owned(),
    ] {
        let headers = headers_of(&base, &path).await;
        for (name, value) in local_cloud::pages::SECURITY_HEADERS {
            assert_eq!(
                headers.get(name).and_then(|v| v.to_str().ok()),
                Some(value),
                "{path}: {name}"
            );
        }
    }
    let sign_in = headers_of(&base, "/_local/sign-in").await;
    assert_eq!(sign_in["x-frame-options"], "DENY");
    assert!(
        sign_in["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("frame-ancestors 'none'")
    );
    cloud.stop().await;
}

/// The headers of `GET base+path`.
async fn headers_of(base: &str, path: &str) -> http::HeaderMap {
    let client = HttpClient::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let request = http::Request::builder()
        .uri(format!("{base}{path}"))
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = client.request(request).await.expect("the runner answers");
    response.headers().clone()
}

/// Session fixation (security review, issue 29): a link to a page of the shop carrying
/// another user's valid token in its fragment (`#token=...`, with or without a made-up
/// `state`) signs no one in, and does not replace the signed-in buyer, whose orders stay
/// theirs; only the answer to the sign-in this tab started is taken, once.
#[tokio::test]
async fn a_link_with_another_users_token_signs_no_one_in_and_only_this_tabs_sign_in_does() {
    let cloud = support::start(support::options(&support::unique_stack())).await;
    let base = format!("http://{}", cloud.address);
    let state = support::state_dir("shop-fixation");
    let browser = Browser::start(&state, 1000, 1000).await;
    let checked = fixation(&browser.client, &base, &cloud).await;
    browser.close().await;
    cloud.stop().await;
    checked.unwrap();
}

async fn fixation(
    client: &Client,
    base: &str,
    cloud: &local_cloud::cloud::LocalCloud,
) -> anyhow::Result<()> {
    // mallory, the attacker, has an order of her own.
    let mallory = local_cloud::jwt::local_token(
        local_cloud::jwt::DEFAULT_LOCAL_SECRET.as_bytes(),
        "mallory",
        &[],
        Duration::from_secs(600),
    )?;
    let ops = Api::admin(cloud, "ops");
    let sale = sale().title("Bait").stock(5).publish(&ops).await;
    let order = Api::with_token(base, &mallory).place_order(&sale).await;
    let stored = |client: &Client, key: &'static str| {
        let client = client.clone();
        async move {
            let value: Value = client
                .execute(
                    "return sessionStorage.getItem(arguments[0]);",
                    vec![json!(key)],
                )
                .await?;
            anyhow::Ok(value)
        }
    };

    // Signed out, the victim follows mallory's link: still signed out, the token dropped
    // and gone from the address bar.
    client
        .goto(&format!("{base}/shop/#token={mallory}"))
        .await?;
    wait_for(client, "#who", |who| who == "Sign in").await?;
    wait_for(client, "#orders", |o| {
        o.contains("Sign in to see your orders")
    })
    .await?;
    anyhow::ensure!(stored(client, "shop.token").await? == Value::Null);
    anyhow::ensure!(client.current_url().await?.fragment().is_none());

    // With a made-up state, while a sign-in of this tab is pending: not taken either, and
    // the pending sign-in is not cancelled by it.
    client.find(Locator::Css("#sign-in")).await?.click().await?;
    wait_for(client, "h1", |h| h == "Local sign-in").await?;
    client
        .goto(&format!(
            "{base}/shop/#token={mallory}&state=AAAAAAAAAAAAAAAAAAAAAA"
        ))
        .await?;
    wait_for(client, "#who", |who| who == "Sign in").await?;
    anyhow::ensure!(stored(client, "shop.token").await? == Value::Null);
    anyhow::ensure!(stored(client, "shop.signin").await? != Value::Null);

    // The normal sign-in still works: ann signs in from the page and sees her own orders.
    client.find(Locator::Css("#sign-in")).await?.click().await?;
    wait_for(client, "h1", |h| h == "Local sign-in").await?;
    // The sign-in page is on the same origin: the tab's pending sign-in is readable here.
    let pending = stored(client, "shop.signin").await?;
    sign_in(client, "ann", false).await?;
    wait_for(client, "#who", |who| who.contains("Signed in as ann")).await?;
    anyhow::ensure!(client.current_url().await?.path() == "/shop/");
    anyhow::ensure!(client.current_url().await?.fragment().is_none());
    wait_for(client, "#orders", |o| o == "No orders yet.").await?;
    // The nonce is used up.
    anyhow::ensure!(stored(client, "shop.signin").await? == Value::Null);

    // Signed in, ann follows mallory's link, on another page and on the home page: still
    // ann, and mallory's order is not shown as hers.
    client
        .goto(&format!(
            "{base}/shop/order.html?id={order}#token={mallory}"
        ))
        .await?;
    wait_for(client, "#who", |who| who.contains("Signed in as ann")).await?;
    client
        .goto(&format!("{base}/shop/#token={mallory}"))
        .await?;
    wait_for(client, "#who", |who| who.contains("Signed in as ann")).await?;
    let orders = wait_for(client, "#orders", |o| o == "No orders yet.").await?;
    anyhow::ensure!(!orders.contains(&order), "{orders}");

    // A replay of a used nonce takes nothing either.
    let nonce: Value = serde_json::from_str(pending.as_str().unwrap_or("null"))?;
    let nonce = nonce["state"].as_str().unwrap_or_default().to_owned();
    anyhow::ensure!(nonce.len() >= 16, "{pending}");
    client
        .find(Locator::Css("#who button"))
        .await?
        .click()
        .await?;
    wait_for(client, "#who", |who| who == "Sign in").await?;
    // Another document than the one open (a new fragment alone would not load the page).
    client
        .goto(&format!(
            "{base}/shop/order.html?id={order}#token={mallory}&state={nonce}"
        ))
        .await?;
    wait_for(client, "#who", |who| who == "Sign in").await?;
    anyhow::ensure!(stored(client, "shop.token").await? == Value::Null);
    Ok(())
}

/// The cloud's sign-in callback (security review, issue 29): the provider's error text in
/// the query is never shown (a link could put any words on the shop's page), a fixed
/// message is; and a callback whose state is not the pending sign-in's neither takes its
/// code nor cancels that sign-in, which only its own answer ends.
#[tokio::test]
async fn the_callback_shows_no_text_of_the_link_and_takes_only_the_pending_sign_ins_answer() {
    let cloud = support::start(support::options(&support::unique_stack())).await;
    let base = format!("http://{}", cloud.address);
    let state = support::state_dir("shop-callback");
    let browser = Browser::start(&state, 1000, 800).await;
    let checked = callback(&browser.client, &base).await;
    browser.close().await;
    cloud.stop().await;
    checked.unwrap();
}

async fn callback(client: &Client, base: &str) -> anyhow::Result<()> {
    const PHISHING: &str = "Your+account+is+locked.+Call+0800+555+0100+now";
    const NOT_HERE: &str = "This sign-in was not started here, or has expired: sign in again.";
    let pending_of = |client: &Client| {
        let client = client.clone();
        async move {
            let value: Value = client
                .execute("return sessionStorage.getItem('shop.pkce');", vec![])
                .await?;
            anyhow::Ok(value)
        }
    };
    let text_of_page = |client: &Client| {
        let client = client.clone();
        async move { anyhow::Ok(client.find(Locator::Css("body")).await?.text().await?) }
    };

    // No sign-in pending: an error link shows the fixed message only.
    client
        .goto(&format!(
            "{base}/shop/callback.html?error=access_denied&error_description={PHISHING}"
        ))
        .await?;
    wait_for(client, "#message", |m| m == NOT_HERE).await?;
    anyhow::ensure!(!text_of_page(client).await?.contains("0800"));

    // A sign-in pending in this tab (as shop.signIn leaves it before going to Cognito).
    let pending =
        json!({"verifier": "v".repeat(43), "state": "cGVuZGluZy1zdGF0ZQ", "back": "/shop/"});
    client
        .execute(
            "sessionStorage.setItem('shop.pkce', JSON.stringify(arguments[0]));",
            vec![pending.clone()],
        )
        .await?;
    // Another state, a code or an error: refused, and the pending sign-in stays.
    for query in [
        "code=attackers-code&state=c29tZW9uZS1lbHNl".to_owned(),
        format!("error=access_denied&error_description={PHISHING}&state=c29tZW9uZS1lbHNl"),
        "code=attackers-code".to_owned(),
    ] {
        client
            .goto(&format!("{base}/shop/callback.html?{query}"))
            .await?;
        wait_for(client, "#message", |m| m == NOT_HERE).await?;
        anyhow::ensure!(!text_of_page(client).await?.contains("0800"), "{query}");
        anyhow::ensure!(
            pending_of(client).await? != Value::Null,
            "{query} cancelled the pending sign-in"
        );
        anyhow::ensure!(client.current_url().await?.path() == "/shop/callback.html");
    }
    // The provider's error answering this sign-in: a fixed message, none of its text, and
    // the sign-in is over.
    client
        .goto(&format!(
            "{base}/shop/callback.html?error=access_denied&error_description={PHISHING}&state=cGVuZGluZy1zdGF0ZQ"
        ))
        .await?;
    wait_for(client, "#message", |m| {
        m == "Sign-in failed or was cancelled: sign in again."
    })
    .await?;
    anyhow::ensure!(!text_of_page(client).await?.contains("0800"));
    anyhow::ensure!(pending_of(client).await? == Value::Null);
    Ok(())
}

/// The page writer renders a page itself, from the sale in the commerce table, given only
/// the sale's id (issue 29, item 8): a `SalePageRequested` naming a published sale stores that
/// sale's page; one naming a draft stores nothing; and the retired `SalePageRendered`, which
/// carried the HTML, publishes nothing, not even for a published sale, and reaches the
/// dead-letter queue.
#[tokio::test]
async fn the_page_writer_renders_a_requested_page_from_the_table_and_stores_no_html_it_is_sent() {
    let cloud = support::start(support::options(&support::unique_stack())).await;
    let base = format!("http://{}", cloud.address);
    let ops = Api::admin(&cloud, "ops");
    let config = support::sdk().await;
    let sqs = aws_sdk_sqs::Client::new(&config);
    let s3 = app::cloud::s3_client(&config);
    let bucket = cloud.model.bucket("ShopBucket").unwrap().name.clone();
    let queue = support::queue_url(&cloud, "SalePageQueue");
    let dead_letters = support::queue_url(&cloud, "SalePageDeadLetterQueue");
    let send = |kind: &str, payload: Value| {
        let body = json!({"type": kind, "version": 1, "id": uuid::Uuid::now_v7().to_string(),
            "occurredAt": at(time::Duration::ZERO), "payload": payload})
        .to_string();
        let (sqs, queue) = (sqs.clone(), queue.clone());
        async move {
            sqs.send_message()
                .queue_url(queue)
                .message_body(body)
                .send()
                .await
                .expect("SendMessage to the page queue");
        }
    };

    // A published sale, its page deleted; asked for by id alone, it is rendered again.
    let published = sale().title("Lamp {{price}}").stock(3).publish(&ops).await;
    let (status, _, first) = page_written(&base, &published).await;
    assert_eq!(status, 200, "{first}");
    s3.delete_object()
        .bucket(&bucket)
        .key(format!("shop/sales/{published}"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        get(&base, "GET", &format!("/shop/sales/{published}"))
            .await
            .0,
        403
    );
    send("SalePageRequested", json!({"saleId": published})).await;
    let (status, _, page) = page_written(&base, &published).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page, first, "the same page, rendered from the table");
    assert!(page.contains("<h1>Lamp {{price}}</h1>"), "{page}");
    assert!(page.contains(">19.99<"), "{page}");

    // A draft gets no page, whatever the message says.
    let draft = sale()
        .title("Draft")
        .price_cents(100)
        .stock(1)
        .starts_in(time::Duration::minutes(5))
        .create(&ops)
        .await;
    let evil = "<script>alert(document.cookie)</script>";
    send("SalePageRequested", json!({"saleId": draft})).await;
    send("SalePageRendered", json!({"saleId": draft, "html": evil})).await;
    send(
        "SalePageRendered",
        json!({"saleId": published, "html": evil}),
    )
    .await;

    // Each is refused on every receive and moved to the dead-letter queue (5 receives, the
    // visibility shortened to 2 s); by then the writer stored nothing of them.
    support::eventually(Duration::from_secs(60), "the three reach the DLQ", || {
        let sqs = sqs.clone();
        let dead_letters = dead_letters.clone();
        async move { (support::queue_depth(&sqs, &dead_letters).await >= 3).then_some(()) }
    })
    .await;
    assert_eq!(support::queue_depth(&sqs, &queue).await, 0);
    let (status, _, body) = get(&base, "GET", &format!("/shop/sales/{draft}")).await;
    assert_eq!(status, 403, "a draft has no page: {body}");
    let (status, _, page) = get(&base, "GET", &format!("/shop/sales/{published}")).await;
    assert_eq!(status, 200);
    assert_eq!(
        page, first,
        "the page is still the one rendered from the table"
    );
    assert!(!page.contains("<script>alert"), "{page}");
    cloud.stop().await;
}

/// A buyer's path through the pages: the operator signs in through the ops page and creates
/// and publishes a sale that opens 20 s later; a buyer signs in from its page, sees the
/// countdown and a disabled button, then the button enabled once the sale is ONGOING, checks
/// out one unit, and sees the order CONFIRMED; a sold-out sale says so, its button disabled.
#[tokio::test]
async fn a_buyer_follows_a_sale_from_its_page_to_a_confirmed_order() {
    let cloud = support::start(support::options(&support::unique_stack())).await;
    let base = format!("http://{}", cloud.address);
    let state = support::state_dir("shop");
    let browser = Browser::start(&state, 1000, 1400).await;
    let walked = walk(&browser.client, &base, &state, &cloud).await;
    browser.close().await;
    cloud.stop().await;
    walked.unwrap();
}

async fn walk(
    client: &Client,
    base: &str,
    state: &Path,
    cloud: &local_cloud::cloud::LocalCloud,
) -> anyhow::Result<()> {
    let shot = |name: &'static str| async move {
        let png = client.screenshot().await?;
        std::fs::write(state.join(format!("{name}.png")), png)?;
        anyhow::Ok(())
    };

    // The operator signs in from the ops page, through the development sign-in.
    client.goto(&format!("{base}/shop/ops.html")).await?;
    wait_for(client, "#sign-in", |_| true).await?;
    client.find(Locator::Css("#sign-in")).await?.click().await?;
    sign_in(client, "ops", true).await?;
    wait_for(client, "#who", |who| {
        who.contains("Signed in as ops (admin)")
    })
    .await?;
    anyhow::ensure!(client.current_url().await?.path() == "/shop/ops.html");
    shot("1-ops-signed-in").await?;

    // A sale opening in 20 s, created and published from the form.
    let sale_page = create_from_ops_page(client, "Phone", "5", "1", 20).await?;
    shot("2-ops-published").await?;

    // The buyer: signed out, then in as ann from the sale's page.
    client.goto(&format!("{base}{sale_page}")).await?;
    switch_user(client, "ann", false).await?;
    wait_for(client, "#countdown", |c| c.starts_with("Starts in")).await?;
    anyhow::ensure!(
        disabled(client, "#buy").await?,
        "buy is enabled before the start"
    );
    wait_for(client, "#state", |s| s == "Not started yet").await?;
    shot("3-sale-upcoming").await?;

    // The sale opens: the button is enabled within a second or so.
    let deadline = Instant::now() + Duration::from_secs(40);
    while disabled(client, "#buy").await? {
        anyhow::ensure!(Instant::now() < deadline, "buy was never enabled");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    wait_for(client, "#state", |s| s == "On sale now").await?;
    wait_for(client, "#countdown", |c| c.starts_with("Ends in")).await?;
    shot("4-sale-ongoing").await?;

    // Checkout of one unit, paid online: the confirmed order links to the cashier.
    client.find(Locator::Id("buy")).await?.click().await?;
    wait_for(client, "#sale-title", |t| t.starts_with("Phone")).await?;
    for (field, value) in [
        ("recipient", "Ann Lee"),
        ("line1", "1 Main Street"),
        ("city", "Lyon"),
        ("postalCode", "69001"),
        ("country", "fr"),
    ] {
        client
            .find(Locator::Id(field))
            .await?
            .send_keys(value)
            .await?;
    }
    shot("5-checkout").await?;
    client.find(Locator::Id("place")).await?.click().await?;
    wait_for(client, "#status", |s| s == "CONFIRMED").await?;
    anyhow::ensure!(client.current_url().await?.path() == "/shop/order.html");
    wait_for(client, "#to-cashier", |t| t.contains("cashier")).await?;
    shot("6-order-confirmed").await?;

    // A sold-out sale: its only unit bought by bob.
    let ops = Api::admin(cloud, "ops");
    let id = sale().title("Last one").stock(1).publish(&ops).await;
    let (status, placed) = ops
        .as_user("bob")
        .call("POST", &format!("/seckill/activities/{id}/orders"), None)
        .await;
    anyhow::ensure!(status == 202, "{placed}");
    page_written(base, &id).await;
    client.goto(&format!("{base}/shop/sales/{id}")).await?;
    wait_for(client, "#state", |s| s == "Sold out").await?;
    wait_for(client, "#buy", |b| b == "Sold out").await?;
    anyhow::ensure!(
        disabled(client, "#buy").await?,
        "a sold-out sale's button is enabled"
    );
    shot("7-sold-out").await?;
    Ok(())
}

/// Fills the development sign-in's form the page sent the browser to, and submits it.
async fn sign_in(client: &Client, user: &str, admin: bool) -> anyhow::Result<()> {
    wait_for(client, "h1", |h| h == "Local sign-in").await?;
    client
        .find(Locator::Id("user"))
        .await?
        .send_keys(user)
        .await?;
    if admin {
        client.find(Locator::Id("admin")).await?.click().await?;
    }
    client
        .find(Locator::Css("button[type=submit]"))
        .await?
        .click()
        .await?;
    Ok(())
}

pub(crate) async fn disabled(client: &Client, css: &str) -> anyhow::Result<bool> {
    let value: Value = client
        .execute(
            "return document.querySelector(arguments[0]).disabled;",
            vec![json!(css)],
        )
        .await?;
    Ok(value == json!(true))
}

/// Waits (10 s at most) for an element whose text satisfies `ok`; answers the text.
pub(crate) async fn wait_for(
    client: &Client,
    css: &str,
    ok: impl Fn(&str) -> bool,
) -> anyhow::Result<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut last = None;
    loop {
        if let Ok(element) = client.find(Locator::Css(css)).await
            && let Ok(text) = element.text().await
        {
            if ok(text.trim()) {
                return Ok(text.trim().to_owned());
            }
            last = Some(text);
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{css} never showed what was expected; last {last:?} at {}",
            client.current_url().await?
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Signs out whoever is signed in on this page, then in as `user` through the development
/// sign-in, back on the same page.
pub(crate) async fn switch_user(client: &Client, user: &str, admin: bool) -> anyhow::Result<()> {
    let who = wait_for(client, "#who", |who| !who.is_empty()).await?;
    if who.starts_with("Signed in") {
        client
            .find(Locator::Css("#who button"))
            .await?
            .click()
            .await?;
    }
    wait_for(client, "#sign-in", |_| true).await?;
    client.find(Locator::Css("#sign-in")).await?.click().await?;
    sign_in(client, user, admin).await?;
    wait_for(client, "#who", |who| {
        who.contains(&format!("Signed in as {user}"))
    })
    .await?;
    Ok(())
}
