//! The flash sale end to end: publish, a crowd of buyers, orders materialized from the queue,
//! payment windows, and Redis losing its data mid-sale.

use crate::support::{
    Api, eventually, function_named, options, queue_url, sale, sdk, start, start_with,
    status_and_code, unique_stack,
};
use local_cloud::cloud::{CloudOptions, LocalCloud};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

pub(crate) const WAIT: Duration = Duration::from_secs(40);

/// Each buyer places one order at once; answers the accepted (buyer, orderId) pairs and the
/// count of each rejection code.
pub(crate) async fn crowd(
    cloud: &LocalCloud,
    sale: &str,
    buyers: &[String],
) -> (Vec<(String, String)>, BTreeMap<String, usize>) {
    let path = format!("/seckill/activities/{sale}/orders");
    let tasks: Vec<_> = buyers
        .iter()
        .map(|buyer| {
            let api = Api::new(cloud, Some(buyer));
            let path = path.clone();
            let buyer = buyer.clone();
            tokio::spawn(async move { (buyer, api.call("POST", &path, None).await) })
        })
        .collect();
    let mut accepted = Vec::new();
    let mut rejected = BTreeMap::new();
    for task in tasks {
        let (buyer, (status, body)) = task.await.unwrap();
        if status == 202 {
            assert_eq!(body["status"], "PENDING", "{body}");
            accepted.push((buyer, body["orderId"].as_str().unwrap().to_owned()));
        } else {
            let code = body["error"]["code"].as_str().unwrap_or("?").to_owned();
            assert!(status == 409 || status == 429, "{status} {body}");
            *rejected.entry(code).or_default() += 1;
        }
    }
    (accepted, rejected)
}

pub(crate) async fn order_status(cloud: &LocalCloud, buyer: &str, order: &str) -> Option<String> {
    let (status, body) = Api::new(cloud, Some(buyer))
        .call("GET", &format!("/orders/{order}"), None)
        .await;
    (status == 200).then(|| body["status"].as_str().unwrap().to_owned())
}

/// Waits until every order is materialized; answers how many have each status.
pub(crate) async fn settled(
    cloud: &LocalCloud,
    orders: &[(String, String)],
) -> BTreeMap<String, usize> {
    settled_within(cloud, orders, WAIT).await
}

/// [`settled`], for a burst that may take longer than [`WAIT`] to drain.
pub(crate) async fn settled_within(
    cloud: &LocalCloud,
    orders: &[(String, String)],
    wait: Duration,
) -> BTreeMap<String, usize> {
    eventually(wait, "every order is materialized", || async {
        let mut counts = BTreeMap::new();
        for (buyer, order) in orders {
            match order_status(cloud, buyer, order).await {
                Some(status) if status != "PENDING" => *counts.entry(status).or_default() += 1,
                _ => return None,
            }
        }
        Some(counts)
    })
    .await
}

pub(crate) async fn detail(cloud: &LocalCloud, sale: &str) -> Value {
    let (status, body) = Api::new(cloud, None)
        .call("GET", &format!("/seckill/activities/{sale}"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    body
}

/// The sale's stock as DynamoDB, the final guard, counts it.
pub(crate) async fn dynamodb_stock(cloud: &LocalCloud, sale: &str) -> i64 {
    let item = crate::support::commerce_item(cloud, format!("SALE#{sale}"), "SALE")
        .await
        .unwrap();
    item["stockRemaining"].as_n().unwrap().parse().unwrap()
}

pub(crate) fn buyers(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// A fresh stack, and its options with the order consumer not running (a probe start of the
/// stack names the function that runs it); `options(&stack)` runs it again.
async fn without_order_consumer() -> (String, CloudOptions) {
    let stack = unique_stack();
    let probe = start(options(&stack)).await;
    let mut held = options(&stack);
    held.disabled_sources = vec![function_named(&probe, "order-consumer")];
    probe.stop().await;
    (stack, held)
}

/// A sale of `stock` units, one per buyer, and the orders of `buyers` admitted while the order
/// consumer is down, so that DynamoDB has counted none of them: the stack (`options(&stack)`
/// starts it again with the consumer), the cloud without it, the sale and the admitted orders.
async fn admitted_while_the_consumer_is_down(
    stock: u32,
    buyers: &[String],
) -> (String, LocalCloud, String, Vec<(String, String)>) {
    let (stack, held) = without_order_consumer().await;
    let cloud = start(held).await;
    let sale = sale()
        .stock(stock)
        .per_user_limit(1)
        .publish(&Api::admin(&cloud, "operator"))
        .await;
    let (admitted, _) = crowd(&cloud, &sale, buyers).await;
    assert_eq!(admitted.len(), buyers.len());
    (stack, cloud, sale, admitted)
}

#[tokio::test]
async fn a_sale_sells_out_exactly_and_every_order_is_confirmed() {
    let cloud = start(options(&unique_stack())).await;
    let sale = sale()
        .stock(20)
        .per_user_limit(1)
        .publish(&Api::admin(&cloud, "operator"))
        .await;
    let (accepted, rejected) = crowd(&cloud, &sale, &buyers("b", 40)).await;
    assert_eq!(accepted.len(), 20, "{rejected:?}");
    assert_eq!(rejected.get("SOLD_OUT"), Some(&20), "{rejected:?}");

    let view = detail(&cloud, &sale).await;
    assert_eq!(view["state"], "SOLD_OUT", "{view}");
    assert_eq!(view["stockRemaining"], 0);
    assert_eq!(
        settled(&cloud, &accepted).await,
        BTreeMap::from([("CONFIRMED".to_owned(), 20)])
    );
    assert_eq!(dynamodb_stock(&cloud, &sale).await, 0);
    cloud.stop().await;
}

#[tokio::test]
async fn redis_flushed_mid_sale_and_preheated_again_never_oversells() {
    // DynamoDB has counted none of the first orders when Redis loses the sale.
    let (stack, cloud, sale, first) =
        admitted_while_the_consumer_is_down(10, &buyers("early", 6)).await;
    let mut redis = crate::support::redis_connection(&std::env::var("REDIS_URL").unwrap()).await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("sale:{{{sale}}}:*"))
        .query_async(&mut redis)
        .await
        .unwrap();
    assert!(!keys.is_empty());
    let _: () = redis::cmd("DEL")
        .arg(&keys)
        .query_async(&mut redis)
        .await
        .unwrap();

    // Re-preheated from DynamoDB, which still says 10: Redis admits 10 more.
    let (status, body) = Api::admin(&cloud, "operator")
        .call("POST", &format!("/seckill/activities/{sale}/publish"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    let (second, _) = crowd(&cloud, &sale, &buyers("late", 10)).await;
    assert_eq!(second.len(), 10);
    cloud.stop().await;

    // The consumer comes back to 16 orders for 10 units: DynamoDB's guard confirms 10.
    let cloud = start(options(&stack)).await;
    let all: Vec<_> = first.into_iter().chain(second).collect();
    let counts = settled(&cloud, &all).await;
    assert_eq!(counts.get("CONFIRMED"), Some(&10), "{counts:?}");
    assert_eq!(counts.get("REJECTED"), Some(&6), "{counts:?}");
    assert_eq!(dynamodb_stock(&cloud, &sale).await, 0);
    cloud.stop().await;
}

#[tokio::test]
async fn every_order_event_delivered_twice_yields_one_order() {
    let (stack, cloud, sale, accepted) =
        admitted_while_the_consumer_is_down(5, &buyers("twice", 3)).await;
    // Take the three events off the queue and put each back twice.
    let sqs = aws_sdk_sqs::Client::new(&sdk().await);
    let queue = queue_url(&cloud, "OrderQueue");
    let mut bodies = Vec::new();
    while bodies.len() < 3 {
        let output = sqs
            .receive_message()
            .queue_url(&queue)
            .max_number_of_messages(10)
            .wait_time_seconds(1)
            .send()
            .await
            .unwrap();
        for message in output.messages.unwrap_or_default() {
            bodies.push(message.body.clone().unwrap());
            sqs.delete_message()
                .queue_url(&queue)
                .receipt_handle(message.receipt_handle.unwrap())
                .send()
                .await
                .unwrap();
        }
    }
    for body in bodies.iter().chain(bodies.iter()) {
        sqs.send_message()
            .queue_url(&queue)
            .message_body(body)
            .send()
            .await
            .unwrap();
    }
    cloud.stop().await;

    let cloud = start(options(&stack)).await;
    assert_eq!(
        settled(&cloud, &accepted).await,
        BTreeMap::from([("CONFIRMED".to_owned(), 3)])
    );
    eventually(WAIT, "the duplicates are consumed", || async {
        (crate::support::queue_depth(&sqs, &queue).await == 0).then_some(())
    })
    .await;
    assert_eq!(dynamodb_stock(&cloud, &sale).await, 2);
    let (_, listed) = Api::new(&cloud, Some("twice0"))
        .call("GET", "/orders", None)
        .await;
    assert_eq!(listed["items"].as_array().unwrap().len(), 1, "{listed}");
    cloud.stop().await;
}

#[tokio::test]
async fn an_unpaid_order_is_cancelled_and_its_unit_can_be_bought_again() {
    let cloud = start_with(&[], &[("PaymentWindowSeconds", "2")]).await;
    let sale = sale()
        .stock(1)
        .per_user_limit(1)
        .publish(&Api::admin(&cloud, "operator"))
        .await;

    let (first, _) = crowd(&cloud, &sale, &buyers("slow", 1)).await;
    let (buyer, order) = first[0].clone();
    eventually(WAIT, "the unpaid order is cancelled", || async {
        (order_status(&cloud, &buyer, &order).await.as_deref() == Some("CANCELLED")).then_some(())
    })
    .await;
    let answer = Api::new(&cloud, Some(&buyer))
        .call(
            "POST",
            &format!("/orders/{order}/pay"),
            Some(json!({"method": "ONLINE"})),
        )
        .await;
    let not_payable = (409, Some("ORDER_NOT_PAYABLE"));
    assert_eq!(status_and_code(&answer), not_payable, "{answer:?}");
    assert_eq!(detail(&cloud, &sale).await["stockRemaining"], 1);
    assert_eq!(dynamodb_stock(&cloud, &sale).await, 1);

    // The unit is back: someone else buys it, chooses cash on delivery in time, and keeps it
    // past the payment window.
    let (second, _) = crowd(&cloud, &sale, &buyers("quick", 1)).await;
    let (buyer, order) = second[0].clone();
    eventually(WAIT, "the second order is confirmed", || async {
        (order_status(&cloud, &buyer, &order).await.as_deref() == Some("CONFIRMED")).then_some(())
    })
    .await;
    let (status, body) = Api::new(&cloud, Some(&buyer))
        .call(
            "POST",
            &format!("/orders/{order}/pay"),
            Some(json!({"method": "COD"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "COD");
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(
        order_status(&cloud, &buyer, &order).await.as_deref(),
        Some("COD")
    );
    assert_eq!(dynamodb_stock(&cloud, &sale).await, 0);
    cloud.stop().await;
}

#[tokio::test]
async fn orders_of_several_units_with_an_address_cod_kept_and_an_unpaid_one_given_back_whole() {
    let cloud = start_with(&[], &[("PaymentWindowSeconds", "2")]).await;
    let sale = sale()
        .stock(5)
        .per_user_limit(3)
        .publish(&Api::admin(&cloud, "operator"))
        .await;
    let path = format!("/seckill/activities/{sale}/orders");
    let address = json!({"recipient": "Ada Lovelace", "line1": "12 St James's Square",
                         "city": "London", "postalCode": "SW1Y 4JH", "country": "gb"});
    let (ada, bob) = (
        Api::new(&cloud, Some("ada-q")),
        Api::new(&cloud, Some("bob-q")),
    );

    // A bad address is a 400 that names the field, and reserves nothing.
    let mut bad = address.clone();
    bad["postalCode"] = json!("SW1Y#4JH");
    let (status, body) = ada
        .call("POST", &path, Some(json!({"quantity": 2, "address": bad})))
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("address.postalCode"),
        "{body}"
    );

    // ada buys 2, cash on delivery: kept for delivery once confirmed, no payment window.
    let cod = json!({"quantity": 2, "address": address, "paymentMethod": "COD"});
    let (status, body) = ada.call("POST", &path, Some(cod)).await;
    assert_eq!(status, 202, "{body}");
    let ada_order = body["orderId"].as_str().unwrap().to_owned();
    // bob buys 3 and never pays; then asks for 1 more than his limit allows.
    let (status, body) = bob.call("POST", &path, Some(json!({"quantity": 3}))).await;
    assert_eq!(status, 202, "{body}");
    let bob_order = body["orderId"].as_str().unwrap().to_owned();
    let answer = bob.call("POST", &path, Some(json!({"quantity": 1}))).await;
    assert_eq!(
        status_and_code(&answer),
        (409, Some("LIMIT_REACHED")),
        "{answer:?}"
    );
    assert_eq!(detail(&cloud, &sale).await["stockRemaining"], 0);

    eventually(WAIT, "ada's order is kept for delivery", || async {
        (order_status(&cloud, "ada-q", &ada_order).await.as_deref() == Some("COD")).then_some(())
    })
    .await;
    let (_, order) = ada.call("GET", &format!("/orders/{ada_order}"), None).await;
    assert_eq!(
        (order["quantity"].as_u64(), order["totalCents"].as_u64()),
        (Some(2), Some(3998))
    );
    assert_eq!(order["address"]["country"], "GB");
    assert_eq!(order["paymentMethod"], "COD");

    // bob's 3 units come back to both stores when his payment window ends; ada keeps hers.
    eventually(WAIT, "bob's unpaid order is cancelled", || async {
        (order_status(&cloud, "bob-q", &bob_order).await.as_deref() == Some("CANCELLED"))
            .then_some(())
    })
    .await;
    eventually(WAIT, "bob's units are back in Redis", || async {
        (detail(&cloud, &sale).await["stockRemaining"] == 3).then_some(())
    })
    .await;
    assert_eq!(dynamodb_stock(&cloud, &sale).await, 3);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        order_status(&cloud, "ada-q", &ada_order).await.as_deref(),
        Some("COD")
    );
    // bob may buy again, up to his limit (4 would pass it), and the 3 units are there.
    let answer = bob.call("POST", &path, Some(json!({"quantity": 4}))).await;
    assert_eq!(
        status_and_code(&answer),
        (409, Some("LIMIT_REACHED")),
        "{answer:?}"
    );
    let (status, body) = bob.call("POST", &path, Some(json!({"quantity": 3}))).await;
    assert_eq!(status, 202, "{body}");
    cloud.stop().await;
}

/// A buyer's answer is lost (the client gives up while the order's event is still being sent)
/// and the checkout retries with the same `Idempotency-Key`: the retry answers the first
/// attempt's order, and exactly one order and one unit come of the two attempts.
#[tokio::test]
async fn a_retry_after_a_dropped_answer_with_the_same_idempotency_key_makes_one_order() {
    // Every SendMessage of the order route lands, but answers late: three quarters of the
    // SDK's attempt timeout, so that the send still succeeds (a longer hang fails every
    // attempt, and the test would be of a broken queue, where 503 RETRY is right).
    let hang = app::cloud::ATTEMPT_TIMEOUT * 3 / 4;
    let rule = format!(
        "PlaceOrderFunction:sqs.SendMessage:hang={}ms",
        hang.as_millis()
    );
    let cloud = start_with(&[rule.as_str()], &[]).await;
    let sale = sale()
        .stock(5)
        .per_user_limit(3)
        .publish(&Api::admin(&cloud, "operator"))
        .await;
    // A buyer of this run's own: the key is kept a day in Redis, which outlives a run.
    let buyer = format!("ida-{}", &uuid::Uuid::now_v7().simple().to_string()[20..]);
    let buyer = buyer.as_str();
    let api = Api::new(&cloud, Some(buyer));
    let path = format!("/seckill/activities/{sale}/orders");
    let body = json!({"quantity": 1, "paymentMethod": "COD"}).to_string();
    let key = [("idempotency-key", "checkout-7f3a")];

    let first = {
        let (api, path, body) = (api.clone(), path.clone(), body.clone());
        tokio::spawn(async move { api.send("POST", &path, &key, body).await })
    };
    // Reserved (the unit is gone from the live stock), the event on its way: the client drops
    // the connection before the answer comes.
    eventually(WAIT, "the first attempt reserved", || async {
        (detail(&cloud, &sale).await["stockRemaining"] == 4).then_some(())
    })
    .await;
    assert!(
        !first.is_finished(),
        "the first answer came before it could be dropped"
    );
    first.abort();

    let (status, retried) = api.send("POST", &path, &key, body.clone()).await;
    assert_eq!(status, 202, "{retried}");
    let order = retried["orderId"].as_str().unwrap().to_owned();
    // Asked again, with the send no longer slow: the same order again.
    cloud.faults.set_rules("PlaceOrderFunction", Vec::new());
    let (status, again) = api.send("POST", &path, &key, body).await;
    assert_eq!((status, &again), (202, &retried));
    // The same key with another request is refused, and reserves nothing.
    let other = json!({"quantity": 2}).to_string();
    let refused = api.send("POST", &path, &key, other).await;
    assert_eq!(
        status_and_code(&refused),
        (422, Some("IDEMPOTENCY_KEY_REUSED")),
        "{refused:?}"
    );

    let status = eventually(WAIT, "the order is materialized", || async {
        order_status(&cloud, buyer, &order)
            .await
            .filter(|status| status != "PENDING")
    })
    .await;
    assert_eq!(status, "COD");
    // Give the first attempt's own (late) event time to arrive, then count.
    tokio::time::sleep(hang + Duration::from_secs(2)).await;
    let (status, listed) = api.call("GET", "/orders?limit=10", None).await;
    assert_eq!(status, 200, "{listed}");
    let ids: Vec<&str> = (listed["items"].as_array().unwrap().iter())
        .map(|item| item["orderId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [order.as_str()], "{listed}");
    assert_eq!(detail(&cloud, &sale).await["stockRemaining"], 4);
    assert_eq!(dynamodb_stock(&cloud, &sale).await, 4);
}
