//! Reservations (预约) against the real stores: each buyer's item in moto's DynamoDB, read
//! back over the sale's index partitions, loaded into `redis-server` by a preheat, and the
//! admission script refusing every buyer outside it.

use crate::support::{clients, create_commerce_table, redis, unique};
use app::clock::epoch_ms;
use app::ids::{OrderId, SaleId, UserId};
use app::seckill::admission::checkout::Checkout;
use app::seckill::admission::{Admission, Reservation, Verdict};
use app::seckill::keys::{SaleKeys, order_rate_key};
use app::seckill::reservation::dynamo::DynamoReservationBook;
use app::seckill::reservation::{ReservationBook, ReservationList};
use app::seckill::sale::dynamo::DynamoSaleStore;
use app::seckill::sale::redis::RedisSales;
use app::seckill::sale::{NewSale, NewSaleDto, Sale, SaleCache, SaleStore};
use redis::AsyncCommands;
use time::{Duration, OffsetDateTime};

/// A sale open since a minute ago that requires a reservation.
fn reserved_sale() -> Sale {
    let now = OffsetDateTime::now_utc();
    let dto = NewSaleDto {
        product_id: "sku-1".to_owned(),
        title: "Phone".to_owned(),
        price_cents: 500,
        stock: 10,
        per_user_limit: 1,
        starts_at: app::clock::format(now - Duration::minutes(1)),
        ends_at: app::clock::format(now + Duration::hours(1)),
        reservation_required: false,
        reservation_opens_at: None,
    };
    let mut sale = Sale::draft(
        SaleId::generate(),
        NewSale::parse(dto, now).unwrap(),
        app::clock::format(now),
    );
    // Reservations opened a day before the start (a new sale could not start in the past).
    // Whole seconds, as the table keeps times to the microsecond.
    sale.reservation_opens_at = Some((now - Duration::days(1)).replace_nanosecond(0).unwrap());
    sale
}

fn attempt(sale: &Sale, user: &UserId) -> Reservation {
    Reservation {
        sale_id: sale.id.clone(),
        user_id: user.clone(),
        order_id: OrderId::generate(&sale.id),
        checkout: Checkout::default(),
        now_ms: epoch_ms(OffsetDateTime::now_utc()),
        rate_limit_per_second: 100,
        idempotency: None,
    }
}

#[tokio::test]
async fn the_table_keeps_one_item_per_buyer_and_a_preheat_lets_only_them_order() {
    let clients = clients().await;
    let table = create_commerce_table(&clients).await;
    let book = DynamoReservationBook::new(clients.dynamodb.clone(), &table);
    let store = DynamoSaleStore::new(clients.dynamodb.clone(), &table);
    let sale = reserved_sale();
    store.create(&sale).await.unwrap();
    let read = store.get(&sale.id).await.unwrap().unwrap();
    assert_eq!(read.reservation_opens_at, sale.reservation_opens_at);

    // Forty buyers, spread over the index's partitions; one twice, one cancelled.
    let users: Vec<UserId> = (0..40)
        .map(|i| UserId::parse(&unique(&format!("fan{i}"))).unwrap())
        .collect();
    for user in users.iter().chain([&users[0]]) {
        book.put(&sale.id, user, "2026-12-07T00:00:00Z")
            .await
            .unwrap();
    }
    book.delete(&sale.id, &users[39]).await.unwrap();
    book.delete(&sale.id, &users[39]).await.unwrap();
    let mut reserved = store.reserved(&sale.id).await.unwrap();
    reserved.sort();
    let mut expected = users[..39].to_vec();
    expected.sort();
    assert_eq!(reserved, expected);

    let sales = RedisSales::new(redis().await);
    sales.load_scripts().await.unwrap();
    sales.preheat(&sale, &reserved).await.unwrap();
    let detail = sales.detail(&sale.id).await.unwrap().unwrap();
    assert_eq!(detail.reservations, 39);
    assert!(detail.reservation_opens_at_ms.is_some());
    let standing = sales.standing(&sale.id, &users[0]).await.unwrap().unwrap();
    assert!(standing.reserved);
    assert!(
        !sales
            .standing(&sale.id, &users[39])
            .await
            .unwrap()
            .unwrap()
            .reserved
    );

    assert!(matches!(
        sales.reserve(&attempt(&sale, &users[0])).await.unwrap(),
        Verdict::Reserved { price_cents: 500 }
    ));
    assert_eq!(
        sales.reserve(&attempt(&sale, &users[39])).await.unwrap(),
        Verdict::NotReserved
    );
    let stranger = UserId::parse(&unique("stranger")).unwrap();
    assert_eq!(
        sales.reserve(&attempt(&sale, &stranger)).await.unwrap(),
        Verdict::NotReserved
    );
    // A refusal reserved nothing: one unit went, to the reserved buyer.
    let keys = SaleKeys::new(&sale.id);
    let mut connection = redis().await;
    let stock: i64 = connection.get(&keys.stock).await.unwrap();
    assert_eq!(stock, 9);

    let mut all: Vec<String> = vec![
        keys.info,
        keys.stock,
        keys.bought,
        keys.pending,
        keys.released,
        keys.orders,
        keys.reserved,
    ];
    all.extend(
        [&users[0], &users[39], &stranger]
            .iter()
            .map(|user| order_rate_key(user.as_str())),
    );
    let _: () = connection.del(all).await.unwrap();
}
