//! Paying online, end to end: the pay route opens a payment, the sandbox signs the provider's
//! notice (for the buyer's own order and its payment only, with its own secret), and only the
//! signed callback makes the order PAID; bad signatures, stale ones and replays change
//! nothing; a payment that arrives after the window ended is recorded for refund, once per
//! payment and order; a notice's ids and currency are parsed and compared.

use crate::seckill::{WAIT, detail, dynamodb_stock, order_status};
use crate::support::{Api, eventually, sale, start_with, status_and_code};
use app::seckill::payment::{SIGNATURE_HEADER, WebhookSecret};
use local_cloud::cloud::LocalCloud;
use local_cloud::secrets::local_value;
use serde_json::{Value, json};

/// Places an order of `quantity` units as `buyer` and waits until it is CONFIRMED.
pub(crate) async fn confirmed_order(
    cloud: &LocalCloud,
    sale: &str,
    buyer: &str,
    quantity: u32,
) -> String {
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

/// What the sandbox's Pay (or Fail) button makes for `buyer`: the notice's body and its
/// signature.
pub(crate) async fn sandbox_notice(
    cloud: &LocalCloud,
    buyer: &str,
    opened: &Value,
    outcome: &str,
) -> (String, String) {
    let payment = opened["payment"]["paymentId"].as_str().unwrap();
    let body = json!({"outcome": outcome, "orderId": opened["orderId"]});
    let (status, signed) = Api::new(cloud, Some(buyer))
        .call("POST", &format!("/sandbox/payments/{payment}"), Some(body))
        .await;
    assert_eq!(status, 200, "{signed}");
    assert_eq!(signed["callbackUrl"], "/payments/callback");
    (
        signed["body"].as_str().unwrap().to_owned(),
        signed["signature"].as_str().unwrap().to_owned(),
    )
}

pub(crate) async fn callback(
    cloud: &LocalCloud,
    body: &str,
    signature: Option<&str>,
) -> (u16, Value) {
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
    let sale = sale()
        .stock(5)
        .per_user_limit(3)
        .publish(&Api::admin(&cloud, "operator"))
        .await;
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
    let (body, signature) = sandbox_notice(&cloud, "ada-pay", &opened, "PAY").await;
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
    let secret = WebhookSecret::new(local_value("PaymentWebhookSecret")).unwrap();
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
    // He pays at the provider in time, but its notice arrives only after his window ended.
    let (body, signature) = sandbox_notice(&cloud, "bob-pay", &opened, "PAY").await;
    eventually(WAIT, "bob's unpaid order is cancelled", || async {
        (order_status(&cloud, "bob-pay", &late).await.as_deref() == Some("CANCELLED")).then_some(())
    })
    .await;
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
    let refund = crate::support::commerce_item(
        &cloud,
        format!("REFUND#{payment}"),
        &format!("ORDER#{late}"),
    )
    .await
    .expect("the refund is recorded");
    assert_eq!(refund["currency"].as_s().unwrap(), "EUR");
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
    let (body, signature) = sandbox_notice(&cloud, "cid-pay", &opened, "FAIL").await;
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

/// Opens ada's online payment of a fresh order: the pay route's answer.
async fn opened_payment(cloud: &LocalCloud, sale: &str, buyer: &str) -> Value {
    let order = confirmed_order(cloud, sale, buyer, 1).await;
    let (status, opened) = Api::new(cloud, Some(buyer))
        .call(
            "POST",
            &format!("/orders/{order}/pay"),
            Some(json!({"method": "ONLINE"})),
        )
        .await;
    assert_eq!(status, 200, "{opened}");
    opened
}

#[tokio::test]
async fn the_sandbox_signs_only_the_buyers_own_payment_and_the_journey_still_pays() {
    let cloud = start_with(&[], &[]).await;
    let sale = sale()
        .stock(5)
        .per_user_limit(3)
        .publish(&Api::admin(&cloud, "operator"))
        .await;
    let opened = opened_payment(&cloud, &sale, "ada-sbx").await;
    let order = opened["orderId"].as_str().unwrap().to_owned();
    let payment = opened["payment"]["paymentId"].as_str().unwrap().to_owned();
    let other = opened_payment(&cloud, &sale, "bob-sbx").await;
    let bobs_payment = other["payment"]["paymentId"].as_str().unwrap();
    let pay = json!({"outcome": "PAY", "orderId": order});
    let post = |buyer: Option<&'static str>, payment: String, body: Value| {
        let api = Api::new(&cloud, buyer);
        async move {
            api.call("POST", &format!("/sandbox/payments/{payment}"), Some(body))
                .await
        }
    };

    // No token: the gateway's 401. Another buyer's token: the order is not theirs. A payment
    // id that is not the order's (bob's own, or one never opened): refused. A body naming an
    // amount: refused too (the amount is the order's). Nothing is signed.
    let refused = [
        (post(None, payment.clone(), pay.clone()).await, 401, None),
        (
            post(Some("bob-sbx"), payment.clone(), pay.clone()).await,
            404,
            Some("NOT_FOUND"),
        ),
        (
            post(Some("ada-sbx"), bobs_payment.to_owned(), pay.clone()).await,
            409,
            Some("NOT_THE_ORDERS_PAYMENT"),
        ),
        (
            post(Some("ada-sbx"), "pay_never_opened".into(), pay.clone()).await,
            409,
            Some("NOT_THE_ORDERS_PAYMENT"),
        ),
        (
            post(
                Some("ada-sbx"),
                payment.clone(),
                json!({"outcome": "PAY", "orderId": order, "amountCents": 1}),
            )
            .await,
            400,
            Some("BAD_REQUEST"),
        ),
    ];
    for ((status, answer), expected, code) in refused {
        assert_eq!(status, expected, "{answer}");
        if let Some(code) = code {
            assert_eq!(answer["error"]["code"], code, "{answer}");
        }
        assert!(answer.get("signature").is_none(), "{answer}");
    }
    assert_eq!(
        order_status(&cloud, "ada-sbx", &order).await.as_deref(),
        Some("CONFIRMED")
    );

    // The sandbox signs with its own secret, never the provider's.
    let (body, signature) = sandbox_notice(&cloud, "ada-sbx", &opened, "PAY").await;
    let sandbox = WebhookSecret::new(local_value("PaymentSandboxSecret")).unwrap();
    let provider = WebhookSecret::new(local_value("PaymentWebhookSecret")).unwrap();
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    assert_eq!(
        sandbox.verify(Some(&signature), body.as_bytes(), now),
        Ok(())
    );
    assert!(
        provider
            .verify(Some(&signature), body.as_bytes(), now)
            .is_err()
    );
    let notice: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (&notice["amountCents"], &notice["currency"]),
        (&json!(1999), &json!("EUR")),
        "{notice}"
    );

    // The journey: the notice pays the order.
    let (status, answer) = callback(&cloud, &body, Some(&signature)).await;
    assert_eq!(
        (status, answer["outcome"].as_str()),
        (200, Some("PAID")),
        "{answer}"
    );
    assert_eq!(
        order_status(&cloud, "ada-sbx", &order).await.as_deref(),
        Some("PAID")
    );
    // Paid, it awaits no payment: the sandbox signs nothing more for it.
    let (status, answer) = post(Some("ada-sbx"), payment.clone(), pay).await;
    assert_eq!(
        (status, answer["error"]["code"].as_str()),
        (409, Some("ORDER_NOT_PAYABLE")),
        "{answer}"
    );
    cloud.stop().await;
}

#[tokio::test]
async fn a_notice_is_parsed_its_currency_compared_and_its_refund_kept_per_order() {
    let cloud = start_with(&[], &[]).await;
    let sale = sale()
        .stock(5)
        .per_user_limit(3)
        .publish(&Api::admin(&cloud, "operator"))
        .await;
    let opened = opened_payment(&cloud, &sale, "ada-ntc").await;
    let order = opened["orderId"].as_str().unwrap().to_owned();
    let payment = opened["payment"]["paymentId"].as_str().unwrap().to_owned();
    let other = opened_payment(&cloud, &sale, "bob-ntc").await;
    let bobs_order = other["orderId"].as_str().unwrap().to_owned();
    // Signed as the provider would sign them: the signature is good, the content is what is
    // tested.
    let provider = WebhookSecret::new(local_value("PaymentWebhookSecret")).unwrap();
    let send = |notice: Value| {
        let body = notice.to_string();
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        let signature = provider.sign(now, body.as_bytes());
        let cloud = &cloud;
        async move { callback(cloud, &body, Some(&signature)).await }
    };
    let notice = |payment: &str, order: &str, currency: &str| {
        json!({"eventId": "ev", "paymentId": payment, "orderId": order,
               "amountCents": 1999, "currency": currency, "status": "SUCCEEDED"})
    };

    // Ids that cannot be keys, and a currency that is not one: 400, nothing written.
    for bad in [
        notice("pay#1", &order, "EUR"),
        notice(&"p".repeat(200), &order, "EUR"),
        notice(&payment, "REFUND#x", "EUR"),
        notice(&payment, &order, "euro"),
    ] {
        let (status, answer) = send(bad.clone()).await;
        assert_eq!(status, 400, "{bad} -> {answer}");
    }
    let mut without = notice(&payment, &order, "EUR");
    without.as_object_mut().unwrap().remove("currency");
    assert_eq!(send(without).await.0, 400);

    // Another currency: refunded, the order still waits.
    let (status, answer) = send(notice(&payment, &order, "USD")).await;
    assert_eq!(
        (status, answer["outcome"].as_str()),
        (200, Some("REFUND_DUE")),
        "{answer}"
    );
    let refund = crate::support::commerce_item(
        &cloud,
        format!("REFUND#{payment}"),
        &format!("ORDER#{order}"),
    )
    .await
    .expect("the refund is recorded");
    assert_eq!(refund["reason"].as_s().unwrap(), "CURRENCY_MISMATCH");
    assert_eq!(
        order_status(&cloud, "ada-ntc", &order).await.as_deref(),
        Some("CONFIRMED")
    );

    // ada's payment named with bob's order: its own refund, bob's order untouched; it
    // neither blocks nor overwrites the refund of ada's order.
    let (status, answer) = send(notice(&payment, &bobs_order, "EUR")).await;
    assert_eq!(
        (status, answer["outcome"].as_str()),
        (200, Some("REFUND_DUE")),
        "{answer}"
    );
    let misnamed = crate::support::commerce_item(
        &cloud,
        format!("REFUND#{payment}"),
        &format!("ORDER#{bobs_order}"),
    )
    .await
    .expect("a refund of its own");
    assert_eq!(misnamed["reason"].as_s().unwrap(), "UNKNOWN_PAYMENT");
    assert_eq!(misnamed["userId"].as_s().unwrap(), "bob-ntc");
    let kept = crate::support::commerce_item(
        &cloud,
        format!("REFUND#{payment}"),
        &format!("ORDER#{order}"),
    )
    .await
    .unwrap();
    assert_eq!(kept["reason"].as_s().unwrap(), "CURRENCY_MISMATCH");
    assert_eq!(kept["userId"].as_s().unwrap(), "ada-ntc");
    assert_eq!(
        order_status(&cloud, "bob-ntc", &bobs_order)
            .await
            .as_deref(),
        Some("CONFIRMED")
    );
    // And the genuine notice still pays ada's order.
    let (status, answer) = send(notice(&payment, &order, "EUR")).await;
    assert_eq!(
        (status, answer["outcome"].as_str()),
        (200, Some("PAID")),
        "{answer}"
    );
    // Two refunds of one payment: the first an operator settles pays it back, the other is
    // refused and nothing more is paid.
    let ops = Api::admin(&cloud, "ops-ntc");
    let settle = |order: &str| format!("/admin/refunds/{payment}/{order}/settle");
    let (status, settled) = ops.call("POST", &settle(&order), None).await;
    assert_eq!(
        (status, settled["state"].as_str()),
        (200, Some("REFUNDED")),
        "{settled}"
    );
    let (status, refused) = ops.call("POST", &settle(&bobs_order), None).await;
    assert_eq!(
        (status, refused["error"]["code"].as_str()),
        (409, Some("PAYMENT_REFUNDED")),
        "{refused}"
    );
    let (status, again) = ops.call("POST", &settle(&order), None).await;
    assert_eq!((status, &again), (200, &settled));
    let misnamed = crate::support::commerce_item(
        &cloud,
        format!("REFUND#{payment}"),
        &format!("ORDER#{bobs_order}"),
    )
    .await
    .unwrap();
    assert_eq!(misnamed["state"].as_s().unwrap(), "DUE");
    cloud.stop().await;
}

/// An order of `buyer` whose payment was opened and signed by the provider, but whose window
/// ran out first (the stack's `PaymentWindowSeconds` short): the order is CANCELLED.
pub(crate) struct LatePayment {
    pub order: String,
    pub payment: String,
    pub opened: Value,
    /// The provider's notice and its signature, not yet delivered.
    pub body: String,
    pub signature: String,
}

pub(crate) async fn late_payment(cloud: &LocalCloud, buyer: &str) -> LatePayment {
    let sale = sale()
        .stock(5)
        .per_user_limit(3)
        .publish(&Api::admin(cloud, "operator"))
        .await;
    let order = confirmed_order(cloud, &sale, buyer, 1).await;
    let (status, opened) = Api::new(cloud, Some(buyer))
        .call(
            "POST",
            &format!("/orders/{order}/pay"),
            Some(json!({"method": "ONLINE"})),
        )
        .await;
    assert_eq!(status, 200, "{opened}");
    let payment = opened["payment"]["paymentId"].as_str().unwrap().to_owned();
    let (body, signature) = sandbox_notice(cloud, buyer, &opened, "PAY").await;
    eventually(WAIT, "the unpaid order is cancelled", || async {
        (order_status(cloud, buyer, &order).await.as_deref() == Some("CANCELLED")).then_some(())
    })
    .await;
    LatePayment {
        order,
        payment,
        opened,
        body,
        signature,
    }
}

/// A payment that arrives after its order was cancelled is due for refund; an operator finds
/// it in the refunds due, settles it (the sandbox refunds locally), once, and the buyer's
/// order shows the refund's state throughout.
#[tokio::test]
async fn an_operator_lists_a_refund_due_and_settles_it_once_and_the_order_shows_it() {
    let cloud = start_with(&[], &[("PaymentWindowSeconds", "3")]).await;
    let buyer = "eve-refund";
    let late = late_payment(&cloud, buyer).await;
    let LatePayment {
        order,
        payment,
        opened,
        ..
    } = &late;
    let eve = Api::new(&cloud, Some(buyer));
    let (status, answer) = callback(&cloud, &late.body, Some(&late.signature)).await;
    assert_eq!(
        (status, answer["outcome"].as_str()),
        (200, Some("REFUND_DUE"))
    );

    let (_, seen) = eve.call("GET", &format!("/orders/{order}"), None).await;
    assert_eq!(seen["refunds"][0]["paymentId"], payment.as_str(), "{seen}");
    assert_eq!(seen["refunds"][0]["state"], "DUE");

    let settle = format!("/admin/refunds/{payment}/{order}/settle");
    assert_eq!(eve.call("GET", "/admin/refunds", None).await.0, 403);
    assert_eq!(eve.call("POST", &settle, None).await.0, 403);

    let ops = Api::admin(&cloud, "ops-refund");
    let (status, due) = ops.call("GET", "/admin/refunds?limit=10", None).await;
    assert_eq!(status, 200, "{due}");
    let listed: Vec<&Value> = (due["items"].as_array().unwrap().iter())
        .filter(|r| r["paymentId"] == payment.as_str())
        .collect();
    assert_eq!(listed.len(), 1, "{due}");
    assert_eq!(listed[0]["orderId"], order.as_str());
    assert_eq!(listed[0]["userId"], buyer);
    assert_eq!(listed[0]["amountCents"], opened["totalCents"]);
    assert_eq!(listed[0]["reason"], "ORDER_CANCELLED");
    assert_eq!(listed[0]["state"], "DUE");

    let (status, settled) = ops.call("POST", &settle, None).await;
    assert_eq!(status, 200, "{settled}");
    assert_eq!(settled["state"], "REFUNDED");
    assert!(settled["providerRefundId"].is_string(), "{settled}");
    // Again (a double click, a retry): the same refund, nothing refunded twice.
    assert_eq!(
        ops.call("POST", &settle, None).await,
        (200, settled.clone())
    );
    let (status, unknown) = ops
        .call(
            "POST",
            &format!("/admin/refunds/pay_none/{order}/settle"),
            None,
        )
        .await;
    assert_eq!(
        status_and_code(&(status, unknown)),
        (404, Some("NOT_FOUND"))
    );

    let (_, seen) = eve.call("GET", &format!("/orders/{order}"), None).await;
    assert_eq!(seen["refunds"][0]["state"], "REFUNDED", "{seen}");
    assert_eq!(seen["refunds"][0]["refundedAt"], settled["refundedAt"]);
    let (_, due) = ops.call("GET", "/admin/refunds?limit=10", None).await;
    assert!(
        !(due["items"].as_array().unwrap().iter()).any(|r| r["paymentId"] == payment.as_str()),
        "{due}"
    );
    cloud.stop().await;
}
