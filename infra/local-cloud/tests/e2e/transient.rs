//! A DynamoDB call that times out under each route family (follow, order, refund) is answered
//! `503 RETRY`, never `500 INTERNAL`: the write may have landed, and the client's retry, which
//! that answer invites, applies it exactly once.
//!
//! Each function gets one SDK attempt (`attempts=1`), so that the write the proxy holds past
//! the SDK's 2 s attempt timeout (`hang=3s`: forwarded, answered late) reaches the code as the
//! SDK's `TimeoutError`.

use crate::follow::{follower_count, notifications, sign_up};
use crate::payment::{callback, confirmed_order, late_payment};
use crate::seckill::{WAIT, order_status};
use crate::support::{Api, eventually, sale, start_with, status_and_code};
use local_cloud::cloud::LocalCloud;
use local_cloud::faults::{Action, Rule, Service};
use serde_json::json;
use std::time::Duration;

/// Holds `operation` of `function` past its SDK attempt timeout, or lifts that.
fn hang(cloud: &LocalCloud, function: &str, operation: &str, on: bool) {
    let rules = match on {
        true => vec![Rule {
            service: Service::DynamoDb,
            operations: vec![operation.to_owned()],
            action: Action::Hang(Duration::from_secs(3)),
        }],
        false => Vec::new(),
    };
    cloud.faults.set_rules(function, rules);
}

const FOLLOW: &str = "FollowFunction";
const PAY: &str = "PayOrderFunction";
const CALLBACK: &str = "PaymentCallbackFunction";

#[tokio::test]
async fn a_follow_whose_transaction_times_out_is_a_503_and_its_retry_follows_once() {
    let cloud = start_with(
        &[&format!("{FOLLOW}:attempts=1"), &format!("{FOLLOW}:proxy")],
        &[],
    )
    .await;
    let bob = sign_up(&cloud, "bob-timeout").await;
    let alice = sign_up(&cloud, "alice-timeout").await;

    hang(&cloud, FOLLOW, "TransactWriteItems", true);
    let answer = alice.call("PUT", "/users/bob-timeout/follow", None).await;
    assert_eq!(status_and_code(&answer), (503, Some("RETRY")), "{answer:?}");

    hang(&cloud, FOLLOW, "TransactWriteItems", false);
    let (status, body) = alice.call("PUT", "/users/bob-timeout/follow", None).await;
    assert_eq!((status, &body["following"]), (200, &json!(true)), "{body}");
    let (_, me) = alice.call("GET", "/users/alice-timeout", None).await;
    assert_eq!(me["followingCount"], 1, "{me}");
    eventually(WAIT, "bob's count is one follower", || async {
        (follower_count(&bob, "bob-timeout").await == 1).then_some(())
    })
    .await;
    let (_, followers) = bob
        .call("GET", "/users/bob-timeout/followers?limit=10", None)
        .await;
    assert_eq!(
        followers["items"].as_array().unwrap().len(),
        1,
        "{followers}"
    );
    let seen = eventually(WAIT, "bob is notified", || async {
        let body = notifications(&bob).await;
        (!body["items"].as_array().unwrap().is_empty()).then_some(body)
    })
    .await;
    assert_eq!(seen["items"].as_array().unwrap().len(), 1, "{seen}");
    cloud.stop().await;
}

#[tokio::test]
async fn a_payment_whose_write_times_out_is_a_503_and_its_retry_opens_one_payment() {
    let cloud = start_with(
        &[&format!("{PAY}:attempts=1"), &format!("{PAY}:proxy")],
        &[],
    )
    .await;
    let sale = sale()
        .stock(5)
        .per_user_limit(2)
        .publish(&Api::admin(&cloud, "operator"))
        .await;
    let order = confirmed_order(&cloud, &sale, "ada-timeout", 1).await;
    let ada = Api::new(&cloud, Some("ada-timeout"));
    let pay = format!("/orders/{order}/pay");

    hang(&cloud, PAY, "UpdateItem", true);
    let answer = ada
        .call("POST", &pay, Some(json!({"method": "ONLINE"})))
        .await;
    assert_eq!(status_and_code(&answer), (503, Some("RETRY")), "{answer:?}");

    hang(&cloud, PAY, "UpdateItem", false);
    let (status, opened) = ada
        .call("POST", &pay, Some(json!({"method": "ONLINE"})))
        .await;
    assert_eq!(status, 200, "{opened}");
    let payment = opened["payment"]["paymentId"].clone();
    assert!(payment.is_string(), "{opened}");
    // The write that timed out had landed: the retry found its payment, and keeps finding it.
    let (_, again) = ada
        .call("POST", &pay, Some(json!({"method": "ONLINE"})))
        .await;
    assert_eq!(again["payment"]["paymentId"], payment, "{again}");
    assert_eq!(
        order_status(&cloud, "ada-timeout", &order).await.as_deref(),
        Some("CONFIRMED")
    );
    cloud.stop().await;
}

#[tokio::test]
async fn a_refund_whose_record_times_out_is_a_503_and_its_retry_records_one_refund() {
    let cloud = start_with(
        &[
            &format!("{CALLBACK}:attempts=1"),
            &format!("{CALLBACK}:proxy"),
        ],
        &[("PaymentWindowSeconds", "3")],
    )
    .await;
    let buyer = "eve-timeout";
    let late = late_payment(&cloud, buyer).await;
    let (body, signature, payment) = (&late.body, &late.signature, &late.payment);
    let eve = Api::new(&cloud, Some(buyer));

    // The payment arrived too late: its refund is recorded in a transaction, which times out.
    hang(&cloud, CALLBACK, "TransactWriteItems", true);
    let answer = callback(&cloud, body, Some(signature)).await;
    assert_eq!(status_and_code(&answer), (503, Some("RETRY")), "{answer:?}");

    hang(&cloud, CALLBACK, "TransactWriteItems", false);
    let (status, answer) = callback(&cloud, body, Some(signature)).await;
    assert_eq!(
        (status, answer["outcome"].as_str()),
        (200, Some("REFUND_DUE")),
        "{answer}"
    );
    let (_, seen) = eve
        .call("GET", &format!("/orders/{}", late.order), None)
        .await;
    let refunds = seen["refunds"].as_array().unwrap();
    assert_eq!(refunds.len(), 1, "{seen}");
    assert_eq!(refunds[0]["paymentId"], payment.as_str(), "{seen}");
    let ops = Api::admin(&cloud, "ops-timeout");
    let (_, due) = ops.call("GET", "/admin/refunds?limit=100", None).await;
    let listed = (due["items"].as_array().unwrap().iter())
        .filter(|refund| refund["paymentId"] == payment.as_str())
        .count();
    assert_eq!(listed, 1, "{due}");
    cloud.stop().await;
}
