//! The commerce table's sale indexes in moto: the live sales are read with a keyed query of
//! their sparse index, whose cost is the live sales and never the orders, buyers, drafts and
//! retired sales beside them; reconciliation reads only them and retires an ended one.

use crate::support::{clients, create_social_table, redis};
use app::dynamo::{key, s};
use app::ids::{OrderId, SaleId};
use app::seckill::keys::{BUYER_SK, ORDER_SK, buyer_pk, order_pk};
use app::seckill::order::OrderStore;
use app::seckill::order::dynamo::DynamoOrderStore;
use app::seckill::order::redis::RedisReservations;
use app::seckill::recovery::reconcile;
use app::seckill::sale::dynamo::DynamoSaleStore;
use app::seckill::sale::{Lifecycle, NewSale, NewSaleDto, Sale, SaleStore};
use std::time::Duration;
use time::OffsetDateTime;

/// A draft open from `starts` to `ends` minutes from now.
fn draft(starts: i64, ends: i64) -> Sale {
    let now = OffsetDateTime::now_utc();
    let dto = NewSaleDto {
        product_id: "sku-1".to_owned(),
        title: "Lamp".to_owned(),
        price_cents: 990,
        stock: 10,
        per_user_limit: 1,
        starts_at: app::clock::format(now + time::Duration::minutes(starts)),
        ends_at: app::clock::format(now + time::Duration::minutes(ends)),
        reservation_required: false,
        reservation_opens_at: None,
    };
    Sale::draft(
        SaleId::generate(),
        NewSale::parse(dto, now - time::Duration::hours(2)).unwrap(),
        app::clock::format(now),
    )
}

#[tokio::test]
async fn reconciliation_reads_only_the_live_sales_and_retires_an_ended_one() {
    let clients = clients().await;
    let table = create_social_table(&clients).await;
    let sales = DynamoSaleStore::new(clients.dynamodb.clone(), &table);
    let orders = DynamoOrderStore::new(clients.dynamodb.clone(), &table);

    // Two live sales (one of them already over), three drafts, and 120 orders and buyers.
    let live = draft(-5, 60);
    let over = draft(-120, -60);
    for sale in [&live, &over] {
        sales.create(sale).await.unwrap();
        sales.publish(&sale.id, "t").await.unwrap().unwrap();
    }
    for _ in 0..3 {
        sales.create(&draft(10, 20)).await.unwrap();
    }
    for i in 0..60 {
        let mut order = key(order_pk(&OrderId::generate(&live.id)), ORDER_SK);
        order.insert("gsi1pk".to_owned(), s(format!("USER#u{i}")));
        order.insert("gsi1sk".to_owned(), s(format!("t#o{i}")));
        let buyer = key(buyer_pk(&live.id, &format!("u{i}")), BUYER_SK);
        for item in [order, buyer] {
            let put = clients.dynamodb.put_item().table_name(&table);
            put.set_item(Some(item)).send().await.unwrap();
        }
    }
    let found = orders.live_sales().await.unwrap();
    let mut ids: Vec<_> = found
        .sales
        .iter()
        .map(|sale| sale.sale_id.to_string())
        .collect();
    ids.sort();
    let mut expected = vec![live.id.to_string(), over.id.to_string()];
    expected.sort();
    assert_eq!(ids, expected);
    assert_eq!(found.items_read, 2, "the read costs the live sales only");

    // The run reads the same two; the sale over for an hour is retired, nothing pending.
    let reservations = RedisReservations::new(redis().await);
    let now_ms = app::clock::now_epoch_ms();
    let summary = reconcile::reconcile(&orders, &reservations, Duration::from_secs(60), now_ms)
        .await
        .unwrap();
    assert_eq!(summary.items_read, 2);
    assert_eq!(summary.retired, std::slice::from_ref(&over.id));
    assert_eq!(
        sales.get(&over.id).await.unwrap().unwrap().state,
        Lifecycle::Ended
    );

    let after = orders.live_sales().await.unwrap();
    assert_eq!(after.items_read, 1);
    assert_eq!(after.sales[0].sale_id, live.id);
    // Retiring twice changes nothing; an ended sale is never published (preheated) again.
    assert!(!orders.retire_sale(&over.id, "t").await.unwrap());
    let again = sales.publish(&over.id, "t").await.unwrap().unwrap();
    assert_eq!(again.state, Lifecycle::Ended);
    assert_eq!(orders.live_sales().await.unwrap().items_read, 1);
}
