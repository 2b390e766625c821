//! The order queue as an attacker inside the account meets it: a message sent straight to the
//! queue, which no reservation in Redis and no seal vouches for, confirms nothing and ends in
//! the dead-letter queue (issue 40, item 3); the honest buyer's order is confirmed at the
//! sale's price.

use crate::seckill::{WAIT, crowd, dynamodb_stock, order_status, settled};
use crate::support::{
    Api, commerce_item, eventually, options, queue_depth, queue_url, sale, sdk, start, unique_stack,
};
use aws_sdk_sqs::types::MessageAttributeValue;
use serde_json::json;
use std::collections::BTreeMap;

/// An `OrderPlaced` v2 as the order route would send it, with what the forger chose.
fn order_placed(sale: &str, order: &str, user: &str, price_cents: u64, quantity: u32) -> String {
    json!({"type": "OrderPlaced", "version": 2, "id": uuid::Uuid::now_v7().to_string(),
        "occurredAt": "2026-12-07T12:00:00Z",
        "payload": {"orderId": order, "saleId": sale, "userId": user, "priceCents": price_cents,
            "reservedAtMs": 1_796_060_000_000_i64, "quantity": quantity}})
    .to_string()
}

#[tokio::test]
async fn order_messages_no_reservation_or_seal_vouches_for_confirm_nothing() {
    let cloud = start(options(&unique_stack())).await;
    let sale = sale()
        .stock(5)
        .per_user_limit(2)
        .publish(&Api::admin(&cloud, "operator"))
        .await;
    let sqs = aws_sdk_sqs::Client::new(&sdk().await);
    let queue = queue_url(&cloud, "OrderQueue");
    let dead_letters = queue_url(&cloud, "OrderDeadLetterQueue");

    // alice buys the honest way.
    let (accepted, refused) = crowd(&cloud, &sale, &["alice".to_owned()]).await;
    assert!(refused.is_empty(), "{refused:?}");
    let alice = accepted[0].1.clone();
    assert_eq!(
        settled(&cloud, &accepted).await,
        BTreeMap::from([("CONFIRMED".to_owned(), 1)])
    );

    // mallory, who may send to the queue, tries three ways.
    let invented = format!("{sale}.{:032x}", 0xf0f0_u128);
    let badly_sealed = format!("{sale}.{:032x}", 0xf0f1_u128);
    let forged = [
        // An order nobody was admitted with, at one cent.
        (order_placed(&sale, &invented, "mallory", 1, 2), None),
        // alice's reservation, claimed for mallory.
        (order_placed(&sale, &alice, "mallory", 1, 1), None),
        // A seal of mallory's own making.
        (
            order_placed(&sale, &badly_sealed, "mallory", 1, 1),
            Some("bWFsbG9yeSdzIG93biBzZWFs"),
        ),
    ];
    for (body, seal) in &forged {
        let mut send = sqs.send_message().queue_url(&queue).message_body(body);
        if let Some(seal) = seal {
            let attribute = MessageAttributeValue::builder()
                .data_type("String")
                .string_value(*seal)
                .build()
                .unwrap();
            send = send.message_attributes("seal", attribute);
        }
        send.send().await.expect("SendMessage to the order queue");
    }

    // Each is refused on every receive and moved to the dead-letter queue (5 receives, the
    // visibility shortened to 2 s), having written nothing.
    eventually(WAIT + WAIT, "the three reach the DLQ", || {
        let (sqs, dead_letters) = (sqs.clone(), dead_letters.clone());
        async move { (queue_depth(&sqs, &dead_letters).await >= 3).then_some(()) }
    })
    .await;
    assert_eq!(queue_depth(&sqs, &queue).await, 0);
    for order in [&invented, &badly_sealed] {
        assert_eq!(
            order_status(&cloud, "mallory", order).await,
            None,
            "{order}"
        );
        assert!(
            commerce_item(&cloud, format!("ORDER#{order}"), "ORDER")
                .await
                .is_none(),
            "{order} was written"
        );
    }
    assert_eq!(order_status(&cloud, "mallory", &alice).await, None);
    let item = commerce_item(&cloud, format!("ORDER#{alice}"), "ORDER")
        .await
        .expect("alice's order");
    assert_eq!(item["userId"].as_s().unwrap(), "alice");
    assert_eq!(
        item["priceCents"].as_n().unwrap(),
        "1999",
        "the sale's price"
    );
    assert_eq!(dynamodb_stock(&cloud, &sale).await, 4, "only alice's unit");
    cloud.stop().await;
}
