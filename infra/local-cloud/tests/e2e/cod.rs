//! Cash on delivery as a hoarding bot would use it: a COD order that no operator confirms for
//! delivery within the stack's COD window is cancelled and its units go back on sale; one an
//! operator confirmed is kept (issue 40).

use crate::seckill::{WAIT, detail, dynamodb_stock, order_status};
use crate::support::{Api, eventually, sale, start_with, status_and_code};
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn a_cod_order_no_operator_confirms_expires_and_a_confirmed_one_is_kept() {
    let cloud = start_with(
        &[],
        &[
            ("PaymentWindowSeconds", "2"),
            ("CodConfirmWindowSeconds", "6"),
        ],
    )
    .await;
    let sale = sale()
        .stock(4)
        .per_user_limit(2)
        .publish(&Api::admin(&cloud, "operator"))
        .await;
    let path = format!("/seckill/activities/{sale}/orders");
    let address = json!({"recipient": "Cara Bot", "line1": "1 Main St", "city": "Lyon",
                         "postalCode": "69001", "country": "FR"});
    let cod = json!({"quantity": 2, "address": address, "paymentMethod": "COD"});
    let mut orders = Vec::new();
    for buyer in ["cara-cod", "dan-cod"] {
        let (status, body) = Api::new(&cloud, Some(buyer))
            .call("POST", &path, Some(cod.clone()))
            .await;
        assert_eq!(status, 202, "{body}");
        orders.push((buyer, body["orderId"].as_str().unwrap().to_owned()));
    }
    let [(cara, cara_order), (dan, dan_order)] = [orders[0].clone(), orders[1].clone()];
    for (buyer, order) in [(cara, &cara_order), (dan, &dan_order)] {
        eventually(WAIT, "the order is kept for delivery", || async {
            (order_status(&cloud, buyer, order).await.as_deref() == Some("COD")).then_some(())
        })
        .await;
    }
    assert_eq!(dynamodb_stock(&cloud, &sale).await, 0);

    // An operator confirms dan's, and only an operator may.
    let confirm = |order: &str| format!("/admin/orders/{order}/confirm-delivery");
    let (status, _) = Api::new(&cloud, Some(dan))
        .call("POST", &confirm(&dan_order), None)
        .await;
    assert_eq!(status, 403);
    let ops = Api::admin(&cloud, "ops-cod");
    let (status, confirmed) = ops.call("POST", &confirm(&dan_order), None).await;
    assert_eq!(status, 200, "{confirmed}");
    assert!(confirmed["deliveryConfirmedAt"].is_string(), "{confirmed}");

    // cara's window ends: her order is cancelled and its 2 units are back in both stores.
    eventually(
        WAIT,
        "cara's unconfirmed COD order is cancelled",
        || async {
            (order_status(&cloud, cara, &cara_order).await.as_deref() == Some("CANCELLED"))
                .then_some(())
        },
    )
    .await;
    eventually(WAIT, "cara's units are back in Redis", || async {
        (detail(&cloud, &sale).await["stockRemaining"] == 2).then_some(())
    })
    .await;
    assert_eq!(dynamodb_stock(&cloud, &sale).await, 2);
    let late = ops.call("POST", &confirm(&cara_order), None).await;
    assert_eq!(
        status_and_code(&late),
        (409, Some("ORDER_NOT_COD")),
        "{late:?}"
    );

    // dan's outlives the window.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        order_status(&cloud, dan, &dan_order).await.as_deref(),
        Some("COD")
    );
    cloud.stop().await;
}
