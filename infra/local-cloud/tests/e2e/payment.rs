//! Paying online, end to end: the pay route opens a payment, the sandbox signs the provider's
//! notice, and only the signed callback makes the order PAID; bad signatures, stale ones and
//! replays change nothing; a payment that arrives after the window ended is recorded for
//! refund.

use crate::seckill::{WAIT, detail, dynamodb_stock, open_sale, order_status};
use crate::support::{Api, eventually, start_with, status_and_code};
use app::seckill::payment::{SIGNATURE_HEADER, WebhookSecret};
use local_cloud::cloud::LocalCloud;
use serde_json::{Value, json};

/// Places an order of `quantity` units as `buyer` and waits until it is CONFIRMED.
async fn confirmed_order(cloud: &LocalCloud, sale: &str, buyer: &str, quantity: u32) -> String {
    let api = Api::new(cloud, Some(buyer));
    let path = format!("/seckill/activities/{sale}/orders");
    let body = json!({"quantity": quantity, "paymentMethod": "ONLINE"});
    let (status, placed) = api.call("POST", &path, Some(body)).await;
    assert_eq!(status, 202, "{placed}");
    let order = placed["orderId"].as_str().unwrap().to_owned();
    eventually(WAIT, "the order is confirmed", || async {
        (order_status(cloud, buyer, &order).await.as_deref() == Some("CONFIRMED")).then_some(())
    })
    .await;
    order
}

/// What the sandbox's Pay (or Fail) button makes: the notice's body and its signature.
async fn sandbox_notice(cloud: &LocalCloud, opened: &Value, outcome: &str) -> (String, String) {
    let anyone = Api::new(cloud, None);
    let payment = opened["payment"]["paymentId"].as_str().unwrap();
    let body = json!({"outcome": outcome, "orderId": opened["orderId"],
                      "amountCents": opened["totalCents"]});
    let (status, signed) = anyone
        .call("POST", &format!("/sandbox/payments/{payment}"), Some(body))
        .await;
    assert_eq!(status, 200, "{signed}");
    assert_eq!(signed["callbackUrl"], "/payments/callback");
    (
        signed["body"].as_str().unwrap().to_owned(),
        signed["signature"].as_str().unwrap().to_owned(),
    )
}

async fn callback(cloud: &LocalCloud, body: &str, signature: Option<&str>) -> (u16, Value) {
    let headers: Vec<(&str, &str)> = signature
        .map(|s| (SIGNATURE_HEADER, s))
        .into_iter()
        .collect();
    Api::new(cloud, None)
        .send("POST", "/payments/callback", &headers, body.to_owned())
        .await
}

#[tokio::test]
async fn only_the_providers_signed_callback_pays_an_order_and_a_late_payment_is_refunded() {
    // Long enough for ada to pay in time on a busy machine; bob waits it out.
    let cloud = start_with(&[], &[("PaymentWindowSeconds", "8")]).await;
    let sale = open_sale(&cloud, 5, 3).await;
    let order = confirmed_order(&cloud, &sale, "ada-pay", 2).await;
    let ada = Api::new(&cloud, Some("ada-pay"));

    // Asking to pay online opens a payment, once, and the order waits.
    let pay = format!("/orders/{order}/pay");
    let (status, opened) = ada
        .call("POST", &pay, Some(json!({"method": "ONLINE"})))
        .await;
    assert_eq!(status, 200, "{opened}");
    assert_eq!(opened["status"], "CONFIRMED");
    assert_eq!(opened["totalCents"], 3998);
    let (_, again) = ada
        .call("POST", &pay, Some(json!({"method": "ONLINE"})))
        .await;
    assert_eq!(
        again["payment"]["paymentId"],
        opened["payment"]["paymentId"]
    );
    // The provider's page (the sandbox) shows the amount.
    let redirect = opened["payment"]["redirectUrl"].as_str().unwrap();
    let (status, page) = Api::new(&cloud, None).call("GET", redirect, None).await;
    assert_eq!(status, 200);
    assert!(page.as_str().unwrap().contains("39.98"), "{page}");

    // Unsigned, tampered, stale: refused, and the order is still unpaid.
    let (body, signature) = sandbox_notice(&cloud, &opened, "PAY").await;
    let unsigned = callback(&cloud, &body, None).await;
    assert_eq!(
        status_and_code(&unsigned),
        (401, Some("BAD_SIGNATURE")),
        "{unsigned:?}"
    );
    let tampered = body.replace("3998", "1");
    let forged = callback(&cloud, &tampered, Some(&signature)).await;
    assert_eq!(
        status_and_code(&forged),
        (401, Some("BAD_SIGNATURE")),
        "{forged:?}"
    );
    let secret =
        WebhookSecret::new(local_cloud::secrets::local_value("PaymentWebhookSecret")).unwrap();
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    let old = secret.sign(now - 3_600, body.as_bytes());
    let stale = callback(&cloud, &body, Some(&old)).await;
    assert_eq!(
        status_and_code(&stale),
        (401, Some("STALE_SIGNATURE")),
        "{stale:?}"
    );
    assert_eq!(
        order_status(&cloud, "ada-pay", &order).await.as_deref(),
        Some("CONFIRMED")
    );

    // The signed notice pays it; delivered again, it changes nothing.
    let (status, answer) = callback(&cloud, &body, Some(&signature)).await;
    assert_eq!(
        (status, answer["outcome"].as_str()),
        (200, Some("PAID")),
        "{answer}"
    );
    let (status, answer) = callback(&cloud, &body, Some(&signature)).await;
    assert_eq!(
        (status, answer["outcome"].as_str()),
        (200, Some("ALREADY_PAID")),
        "{answer}"
    );
    let (_, paid) = ada.call("GET", &format!("/orders/{order}"), None).await;
    assert_eq!(paid["status"], "PAID", "{paid}");
    assert_eq!(paid["paymentMethod"], "ONLINE");
    assert!(paid["paidAt"].is_string(), "{paid}");

    // bob opens a payment and lets the window end: his units go back; his payment, when it
    // finally arrives, is recorded for refund and sells nothing.
    let late = confirmed_order(&cloud, &sale, "bob-pay", 3).await;
    let bob = Api::new(&cloud, Some("bob-pay"));
    let (status, opened) = bob
        .call(
            "POST",
            &format!("/orders/{late}/pay"),
            Some(json!({"method": "ONLINE"})),
        )
        .await;
    assert_eq!(status, 200, "{opened}");
    eventually(WAIT, "bob's unpaid order is cancelled", || async {
        (order_status(&cloud, "bob-pay", &late).await.as_deref() == Some("CANCELLED")).then_some(())
    })
    .await;
    let (body, signature) = sandbox_notice(&cloud, &opened, "PAY").await;
    let (status, answer) = callback(&cloud, &body, Some(&signature)).await;
    assert_eq!(
        (status, answer["outcome"].as_str()),
        (200, Some("REFUND_DUE")),
        "{answer}"
    );
    assert_eq!(
        order_status(&cloud, "bob-pay", &late).await.as_deref(),
        Some("CANCELLED")
    );
    let payment = opened["payment"]["paymentId"].as_str().unwrap();
    let refund = crate::support::commerce_item(&cloud, format!("REFUND#{payment}"), "REFUND")
        .await
        .expect("the refund is recorded");
    assert_eq!(refund["reason"].as_s().unwrap(), "ORDER_CANCELLED");
    assert_eq!(refund["amountCents"].as_n().unwrap(), "5997");
    // ada's 2 are sold; bob's 3 are back in both stores.
    assert_eq!(dynamodb_stock(&cloud, &sale).await, 3);
    eventually(WAIT, "bob's units are back in Redis", || async {
        (detail(&cloud, &sale).await["stockRemaining"] == 3).then_some(())
    })
    .await;
    // A failed payment leaves an order waiting: nothing paid, nothing refunded.
    let third = confirmed_order(&cloud, &sale, "cid-pay", 1).await;
    let (_, opened) = Api::new(&cloud, Some("cid-pay"))
        .call(
            "POST",
            &format!("/orders/{third}/pay"),
            Some(json!({"method": "ONLINE"})),
        )
        .await;
    let (body, signature) = sandbox_notice(&cloud, &opened, "FAIL").await;
    let (status, answer) = callback(&cloud, &body, Some(&signature)).await;
    assert_eq!(
        (status, answer["outcome"].as_str()),
        (200, Some("FAILED")),
        "{answer}"
    );
    assert_eq!(
        order_status(&cloud, "cid-pay", &third).await.as_deref(),
        Some("CONFIRMED")
    );
    cloud.stop().await;
}
