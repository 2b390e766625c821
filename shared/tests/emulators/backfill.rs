//! The index backfill against moto: sales and orders written before their index existed
//! (their index keys removed here) are invisible to the back office, the live sales and the
//! figures until the backfill adds the keys, a page at a time, resumed from each page's
//! cursor; a second run changes nothing.

use crate::support::{clients, create_commerce_table};
use app::cursor::PageLimit;
use app::dynamo::{key, n, s};
use app::ids::{OrderId, SaleId};
use app::seckill::keys::{ORDER_SK, SALE_SK, order_pk, sale_pk, user_orders_pk, user_orders_sk};
use app::seckill::office::SaleOffice;
use app::seckill::office::figures::SaleLedger;
use app::seckill::order::dynamo::DynamoOrderStore;
use app::seckill::recovery::backfill::{PageReport, backfill_page};
use app::seckill::sale::dynamo::DynamoSaleStore;
use app::seckill::sale::{Lifecycle, NewSale, Sale, SaleStore};

/// Every page of the backfill from the table's start, summed, and how many pages it took.
async fn backfill_all(table: &app::dynamo::Table) -> (PageReport, usize) {
    let mut total = PageReport::default();
    let mut pages = 0;
    let mut start = None;
    loop {
        let page = backfill_page(table, start.as_ref(), 2).await.unwrap();
        pages += 1;
        total.scanned += page.scanned;
        total.lacking += page.lacking;
        total.sales_listed += page.sales_listed;
        total.sales_made_live += page.sales_made_live;
        total.orders_indexed += page.orders_indexed;
        match page.next {
            Some(next) => start = Some(next),
            None => return (total, pages),
        }
    }
}

#[tokio::test]
async fn items_written_before_their_index_get_its_keys_once_a_page_at_a_time() {
    let clients = clients().await;
    let name = create_commerce_table(&clients).await;
    let table = app::dynamo::Table::new(clients.dynamodb.clone(), &name);
    let sales = DynamoSaleStore::new(clients.dynamodb.clone(), &name);
    let orders = DynamoOrderStore::new(clients.dynamodb.clone(), &name);
    let now = time::OffsetDateTime::now_utc();
    let new = || NewSale {
        product_id: "sku".into(),
        title: "Phone".into(),
        price_cents: 1_999,
        stock: 10,
        per_user_limit: 3,
        starts_at: now - time::Duration::minutes(1),
        ends_at: now + time::Duration::hours(1),
        reservation_opens_at: None,
    };
    // A live sale, a draft and a retired sale, written as before the indexes: no keys.
    let (live, draft, retired) = (SaleId::generate(), SaleId::generate(), SaleId::generate());
    for id in [&live, &draft, &retired] {
        let sale = Sale::draft(id.clone(), new(), app::clock::format(now));
        sales.create(&sale).await.unwrap();
        if id != &draft {
            sales.publish(id, &app::clock::format(now)).await.unwrap();
        }
        let mut strip = clients
            .dynamodb
            .update_item()
            .table_name(&name)
            .set_key(Some(key(sale_pk(id), SALE_SK)))
            .update_expression(if id == &retired {
                "REMOVE gsi1pk, gsi1sk, gsi2pk, gsi2sk SET retiredAt = :t"
            } else {
                "REMOVE gsi1pk, gsi1sk, gsi2pk, gsi2sk"
            });
        if id == &retired {
            strip = strip.expression_attribute_values(":t", s(app::clock::format(now)));
        }
        strip.send().await.unwrap();
    }
    // Three paid orders of the live sale, without the per-sale keys.
    for i in 0..3 {
        let order_id = OrderId::generate(&live);
        let created_at = app::clock::format(now + time::Duration::seconds(i));
        let user = format!("buyer-{i}");
        let mut item = key(order_pk(&order_id), ORDER_SK);
        for (name, value) in [
            ("orderId", s(order_id.as_str())),
            ("saleId", s(live.as_str())),
            ("userId", s(&user)),
            ("priceCents", n(1_999u64)),
            ("quantity", n(1u64)),
            ("totalCents", n(1_999u64)),
            ("status", s("PAID")),
            ("createdAt", s(&created_at)),
            ("gsi1pk", s(user_orders_pk(&user))),
            ("gsi1sk", s(user_orders_sk(&created_at, &order_id))),
        ] {
            item.insert(name.to_owned(), value);
        }
        let put = clients.dynamodb.put_item().table_name(&name);
        put.set_item(Some(item)).send().await.unwrap();
    }
    let all = PageLimit::parse(Some("100")).unwrap();
    let listed = |page: app::seckill::office::SalePage| page.items.len();

    // Invisible before.
    assert_eq!(listed(sales.page(None, all, None).await.unwrap()), 0);
    assert!(sales.live().await.unwrap().is_empty());
    let tallies = orders.order_tallies(&live).await.unwrap();
    assert_eq!(tallies.items_read, 0);

    let (first, pages) = backfill_all(&table).await;
    assert!(
        pages > 1,
        "a page of 2 items at most: resumed from its cursor"
    );
    assert_eq!(first.lacking, 6, "{first:?}");
    assert_eq!(first.sales_listed, 3);
    assert_eq!(
        first.sales_made_live, 1,
        "only the published sale that was not retired"
    );
    assert_eq!(first.orders_indexed, 3);

    // Listed, live and counted after.
    let page = sales.page(None, all, None).await.unwrap();
    let mut ids: Vec<&SaleId> = page.items.iter().map(|sale| &sale.id).collect();
    ids.sort_by_key(|id| id.as_str());
    let mut expected = vec![&live, &draft, &retired];
    expected.sort_by_key(|id| id.as_str());
    assert_eq!(ids, expected);
    let drafts = sales.page(Some(Lifecycle::Draft), all, None).await.unwrap();
    assert_eq!(drafts.items[0].id, draft);
    let live_sales: Vec<SaleId> = sales
        .live()
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(live_sales, std::slice::from_ref(&live));
    let tallies = orders.order_tallies(&live).await.unwrap();
    assert_eq!(tallies.items_read, 3);
    assert_eq!(tallies.by_status["PAID"].orders, 3);
    assert_eq!(tallies.by_status["PAID"].amount_cents, 3 * 1_999);

    // Again: nothing lacks a key, nothing is written.
    let (second, _) = backfill_all(&table).await;
    assert_eq!(
        (
            second.lacking,
            second.sales_listed,
            second.sales_made_live,
            second.orders_indexed
        ),
        (0, 0, 0, 0)
    );
}
