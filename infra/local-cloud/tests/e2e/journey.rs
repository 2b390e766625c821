//! The flash sale's whole journey through the shop's pages in a real (headless) browser, from
//! the operator's ops page to paid, cash-on-delivery, sold-out and expired orders, a
//! screenshot per step in `$LOCAL_STATE/shop-journey/`.

use crate::browser::Browser;
use crate::shop::{disabled, switch_user, wait_for};
use crate::support;
use fantoccini::{Client, Locator};
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

/// The flash sale's seven steps in a browser, as the seed tells them: the operator creates
/// and publishes a 3-unit sale with a limit of 2 from the ops page; ada opens its page before
/// the start (countdown, button disabled), buys 2 when it opens and pays online through the
/// provider's sandbox (her order page shows PAID); bea buys the last one, cash on delivery (the
/// order page says it is kept for delivery); cid finds the button disabled and the page saying
/// sold out; on another sale, dan's unpaid online order expires and its units come back; the
/// operator sees both in the back office and ends the second early, which the home page and
/// its page then show ended; each sale's figures there count those orders. ada finds the first
/// sale from the home page, not from its URL. A screenshot per step in
/// `$LOCAL_STATE/shop-journey/`.
#[tokio::test]
async fn the_flash_sale_journey_from_the_ops_page_to_paid_cod_sold_out_and_expired_orders() {
    // Long enough for ada to pay on a busy machine; dan waits it out.
    let cloud = support::start_with(&[], &[("PaymentWindowSeconds", "15")]).await;
    let base = format!("http://{}", cloud.address);
    let state = support::state_dir("shop-journey");
    let browser = Browser::start(&state, 1000, 1400).await;
    let walked = journey(&browser.client, &base, &state).await;
    browser.close().await;
    cloud.stop().await;
    walked.unwrap();
}

async fn journey(client: &Client, base: &str, state: &Path) -> anyhow::Result<()> {
    let shot = |name: &'static str| async move {
        let png = client.screenshot().await?;
        std::fs::write(state.join(format!("{name}.png")), png)?;
        anyhow::Ok(())
    };

    // 1. The operator: a sale of 3 units, 2 per buyer, opening in 15 s.
    client.goto(&format!("{base}/shop/ops.html")).await?;
    switch_user(client, "ops", true).await?;
    let sale_page = create_from_ops_page(client, "Phone", "3", "2", 15).await?;
    shot("01-ops-published").await?;

    // 2. ada finds it on the home page, upcoming with its countdown, and opens it: the
    // countdown runs there and the button waits.
    client.goto(&format!("{base}/shop/")).await?;
    switch_user(client, "ada", false).await?;
    let first = sale_page.rsplit('/').next().unwrap_or_default().to_owned();
    let listed = format!("#sales li[data-sale-id='{first}']");
    wait_for(client, &format!("{listed} .state"), |s| {
        s.contains("starts in")
    })
    .await?;
    shot("02-home-upcoming").await?;
    client
        .find(Locator::Css(&format!("{listed} a")))
        .await?
        .click()
        .await?;
    anyhow::ensure!(client.current_url().await?.path() == sale_page);
    wait_for(client, "#countdown", |c| c.starts_with("Starts in")).await?;
    anyhow::ensure!(
        disabled(client, "#buy").await?,
        "buy is enabled before the start"
    );
    shot("02-detail-before-the-start").await?;
    let deadline = Instant::now() + Duration::from_secs(40);
    while disabled(client, "#buy").await? {
        anyhow::ensure!(Instant::now() < deadline, "buy was never enabled");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    wait_for(client, "#state", |s| s == "On sale now").await?;
    shot("03-detail-on-sale").await?;

    // ada buys 2 and pays online: cashier, the provider's page, Pay, back to her order.
    client.find(Locator::Id("buy")).await?.click().await?;
    checkout(client, "2", "Ada Lovelace", false).await?;
    shot("04-checkout").await?;
    client.find(Locator::Id("place")).await?.click().await?;
    wait_for(client, "#status", |s| s == "CONFIRMED").await?;
    wait_for(client, "#to-cashier", |t| t.contains("cashier")).await?;
    shot("05-order-confirmed").await?;
    client
        .find(Locator::Id("to-cashier"))
        .await?
        .click()
        .await?;
    wait_for(client, "#status", |s| s == "CONFIRMED").await?;
    wait_for(client, "#amount", |a| a.contains("39.98")).await?;
    shot("06-cashier").await?;
    client.find(Locator::Id("pay")).await?.click().await?;
    wait_for(client, "h1", |h| h.starts_with("Pay order")).await?;
    wait_for(client, "#amount", |a| a == "39.98").await?;
    shot("07-provider-sandbox").await?;
    client.find(Locator::Id("pay")).await?.click().await?;
    wait_for(client, "#status", |s| s == "PAID").await?;
    anyhow::ensure!(client.current_url().await?.path() == "/shop/order.html");
    shot("08-order-paid").await?;

    // 3. bea buys the last unit, cash on delivery: kept for delivery.
    client.goto(&format!("{base}{sale_page}")).await?;
    switch_user(client, "bea", false).await?;
    wait_for(client, "#stock-remaining", |s| s.starts_with('1')).await?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while disabled(client, "#buy").await? {
        anyhow::ensure!(Instant::now() < deadline, "bea's buy was never enabled");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    client.find(Locator::Id("buy")).await?.click().await?;
    checkout(client, "1", "Bea Smith", true).await?;
    client.find(Locator::Id("place")).await?.click().await?;
    wait_for(client, "#status", |s| s == "COD").await?;
    wait_for(client, "#message", |m| m.contains("kept for delivery")).await?;
    shot("09-order-cash-on-delivery").await?;

    // 4. cid: sold out.
    client.goto(&format!("{base}{sale_page}")).await?;
    switch_user(client, "cid", false).await?;
    wait_for(client, "#state", |s| s == "Sold out").await?;
    anyhow::ensure!(
        disabled(client, "#buy").await?,
        "a sold-out sale's button is enabled"
    );
    shot("10-sold-out").await?;

    // 5. Another sale, open now: dan orders its 2 units online and never pays; when the
    // payment window ends the order is cancelled and the units are back on the page.
    client.goto(&format!("{base}/shop/ops.html")).await?;
    switch_user(client, "ops", true).await?;
    let second = create_from_ops_page(client, "Tablet", "2", "2", 0).await?;
    client.goto(&format!("{base}{second}")).await?;
    switch_user(client, "dan", false).await?;
    let deadline = Instant::now() + Duration::from_secs(20);
    while disabled(client, "#buy").await? {
        anyhow::ensure!(Instant::now() < deadline, "dan's buy was never enabled");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    client.find(Locator::Id("buy")).await?.click().await?;
    checkout(client, "2", "Dan Brown", false).await?;
    client.find(Locator::Id("place")).await?.click().await?;
    wait_for(client, "#status", |s| s == "CONFIRMED").await?;
    let order_page = client.current_url().await?;
    client.goto(&format!("{base}{second}")).await?;
    wait_for(client, "#stock-remaining", |s| s.starts_with('0')).await?;
    client.goto(order_page.as_str()).await?;
    wait_for_long(
        client,
        "#status",
        |s| s == "CANCELLED",
        Duration::from_secs(60),
    )
    .await?;
    shot("11-order-expired").await?;
    client.goto(&format!("{base}{second}")).await?;
    wait_for(client, "#stock-remaining", |s| s.starts_with('2')).await?;
    wait_for(client, "#state", |s| s == "On sale now").await?;
    shot("12-units-back").await?;
    // Back to the shop's home by the header's link, /shop/, and by its bare form, which
    // redirects there: the distribution's function gives it its index.html.
    client
        .find(Locator::Css("header a[href='/shop/']"))
        .await?
        .click()
        .await?;
    wait_for(client, "h1", |h| h == "Flash sales").await?;
    anyhow::ensure!(client.current_url().await?.path() == "/shop/");
    client.goto(&format!("{base}/shop")).await?;
    wait_for(client, "h1", |h| h == "Flash sales").await?;
    anyhow::ensure!(client.current_url().await?.path() == "/shop/");
    shot("13-shop-home").await?;

    // 6. The operator finds both sales in the back office and ends the second one early;
    // the home page marks it ended and its page says so, the button disabled.
    client.goto(&format!("{base}/shop/ops.html")).await?;
    switch_user(client, "ops", true).await?;
    let second_id = second.rsplit('/').next().unwrap_or_default().to_owned();
    let row = |id: &str| format!("#sales-rows tr[data-sale-id='{id}']");
    wait_for(client, &row(&first), |r| {
        r.contains("Phone") && r.contains("PUBLISHED")
    })
    .await?;
    wait_for(client, &row(&second_id), |r| {
        r.contains("Tablet") && r.contains("2 / 2")
    })
    .await?;
    shot("14-back-office").await?;
    // The first sale's figures: ada's 2 paid online, bea's 1 kept for delivery, all 3 sold
    // at 19.99, none left in either store, nothing pending or due.
    figures_of(client, &row(&first)).await?;
    wait_for(client, "#figures-sale", |s| s.contains("Phone")).await?;
    wait_for(client, "#figures-sold", |s| s == "3").await?;
    wait_for(client, "#figures-revenue", |s| s == "59.97").await?;
    wait_for(client, "#figures-paid", |s| s == "39.98").await?;
    wait_for(client, "#figures-awaiting", |s| s == "0").await?;
    wait_for(client, "#figures-dynamo", |s| s == "0 / 3").await?;
    wait_for(client, "#figures-redis", |s| s.starts_with("0, 0 pending")).await?;
    wait_for(client, "#figures-refunds", |s| s.starts_with("0 ")).await?;
    let tally = |status: &str| format!("#figures-rows tr[data-status={status}]");
    wait_for(client, &tally("PAID"), |r| {
        cells(r) == ["PAID", "1", "2", "39.98"]
    })
    .await?;
    wait_for(client, &tally("COD"), |r| {
        cells(r) == ["COD", "1", "1", "19.99"]
    })
    .await?;
    wait_for(client, &tally("CANCELLED"), |r| {
        cells(r) == ["CANCELLED", "0", "0", "0.00"]
    })
    .await?;
    shot("14-back-office-figures").await?;
    client
        .find(Locator::Css(&format!(
            "{} button[data-action=end]",
            row(&second_id)
        )))
        .await?
        .click()
        .await?;
    wait_for(client, "#sales-message", |m| m == "Ended \"Tablet\".").await?;
    wait_for(client, &row(&second_id), |r| r.contains("ENDED")).await?;
    shot("15-back-office-ended").await?;
    // The second sale's figures: dan's unpaid order cancelled, its 2 units back, none sold.
    figures_of(client, &row(&second_id)).await?;
    wait_for(client, "#figures-sale", |s| {
        s.contains("Tablet") && s.contains("ENDED")
    })
    .await?;
    wait_for(client, &tally("CANCELLED"), |r| {
        cells(r) == ["CANCELLED", "1", "2", "39.98"]
    })
    .await?;
    wait_for(client, "#figures-sold", |s| s == "0").await?;
    wait_for(client, "#figures-revenue", |s| s == "0.00").await?;
    wait_for(client, "#figures-dynamo", |s| s == "2 / 2").await?;
    client.goto(&format!("{base}/shop/")).await?;
    switch_user(client, "eve", false).await?;
    wait_for(
        client,
        &format!("#sales li[data-sale-id='{second_id}'] .state"),
        |s| s.contains("ended"),
    )
    .await?;
    shot("16-home-ended").await?;
    client.goto(&format!("{base}{second}")).await?;
    wait_for(client, "#state", |s| s == "This sale has ended").await?;
    anyhow::ensure!(
        disabled(client, "#buy").await?,
        "an ended sale's button is enabled"
    );
    shot("17-detail-ended").await?;
    Ok(())
}

/// Clicks the Figures button of the back office's row `row`.
async fn figures_of(client: &Client, row: &str) -> anyhow::Result<()> {
    client
        .find(Locator::Css(&format!("{row} button[data-action=figures]")))
        .await?
        .click()
        .await?;
    Ok(())
}

/// A table row's text, cell by cell.
fn cells(row: &str) -> Vec<&str> {
    row.split_whitespace().collect()
}

/// Creates and publishes a sale from the ops page (signed in as an operator), opening in
/// `starts_in_s` seconds for an hour; answers the sale page's path.
pub(crate) async fn create_from_ops_page(
    client: &Client,
    title: &str,
    stock: &str,
    limit: &str,
    starts_in_s: u64,
) -> anyhow::Result<String> {
    for (field, value) in [
        ("productId", "p-1"),
        ("title", title),
        ("price", "19.99"),
        ("stock", stock),
        ("perUserLimit", limit),
    ] {
        let input = client.find(Locator::Id(field)).await?;
        input.clear().await?;
        input.send_keys(value).await?;
    }
    client
        .execute(
            "const local = (d) => new Date(d.getTime() - d.getTimezoneOffset() * 60000)
                 .toISOString().slice(0, 19);
             document.getElementById('startsAt').value = local(new Date(Date.now() + arguments[0]));
             document.getElementById('endsAt').value = local(new Date(Date.now() + 3600000));",
            vec![json!(starts_in_s * 1000)],
        )
        .await?;
    client
        .find(Locator::Id("create-sale"))
        .await?
        .click()
        .await?;
    wait_for(client, "#message", |m| m.starts_with("Created sale")).await?;
    client.find(Locator::Id("publish")).await?.click().await?;
    let link = wait_for(client, "#sale-page", |_| true).await?;
    anyhow::ensure!(link.contains(title), "{link}");
    Ok(client
        .find(Locator::Id("sale-page"))
        .await?
        .attr("href")
        .await?
        .unwrap_or_default())
}

/// Fills the checkout: `quantity` units to `recipient` in Paris, online or cash on delivery.
async fn checkout(
    client: &Client,
    quantity: &str,
    recipient: &str,
    cod: bool,
) -> anyhow::Result<()> {
    wait_for(client, "#sale-title", |t| !t.starts_with("Loading")).await?;
    let input = client.find(Locator::Id("quantity")).await?;
    input.clear().await?;
    input.send_keys(quantity).await?;
    for (field, value) in [
        ("recipient", recipient),
        ("line1", "10 Rue de Rivoli"),
        ("city", "Paris"),
        ("postalCode", "75001"),
        ("country", "fr"),
    ] {
        let input = client.find(Locator::Id(field)).await?;
        input.clear().await?;
        input.send_keys(value).await?;
    }
    let method = if cod { "pay-cod" } else { "pay-online" };
    client.find(Locator::Id(method)).await?.click().await?;
    Ok(())
}

/// [`wait_for`] with a deadline of `limit`.
async fn wait_for_long(
    client: &Client,
    css: &str,
    ok: impl Fn(&str) -> bool,
    limit: Duration,
) -> anyhow::Result<String> {
    let deadline = Instant::now() + limit;
    loop {
        match wait_for(client, css, &ok).await {
            Ok(text) => return Ok(text),
            Err(err) if Instant::now() >= deadline => return Err(err),
            Err(_) => {}
        }
    }
}
