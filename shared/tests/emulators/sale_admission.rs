//! The flash sale against the real stores: admission by the Lua scripts in `redis-server`,
//! the preheated detail, the sale item's create/publish round trip in moto's DynamoDB, and an
//! admitted order read back as PENDING by its owner only. Every test makes its own sale id and
//! users of its own ([`unique`]), so their keys never collide: a user's rate key counts
//! attempts on every sale.

use crate::support::{clients, create_social_table, create_table, redis, unique};
use app::clock::epoch_ms;
use app::ids::{OrderId, SaleId, UserId};
use app::seckill::admission::checkout::Checkout;
use app::seckill::admission::{Admission, Holder, Reservation, Verdict};
use app::seckill::keys::{SaleKeys, order_rate_key};
use app::seckill::order::dynamo::DynamoOrderStore;
use app::seckill::order::redis::RedisReservations;
use app::seckill::order::{OrderView, PendingOrder, find_order};
use app::seckill::sale::dynamo::DynamoSaleStore;
use app::seckill::sale::redis::RedisSales;
use app::seckill::sale::{Lifecycle, NewSale, NewSaleDto, Sale, SaleCache, SaleStore};
use redis::AsyncCommands;
use std::collections::HashMap;
use time::{Duration, OffsetDateTime};

fn new_sale(stock: i64, per_user_limit: i64) -> Sale {
    let now = OffsetDateTime::now_utc();
    let dto = NewSaleDto {
        product_id: "sku-1".to_owned(),
        title: "Phone".to_owned(),
        price_cents: 19_900,
        stock,
        per_user_limit,
        starts_at: app::clock::format(now - Duration::minutes(1)),
        ends_at: app::clock::format(now + Duration::hours(1)),
        reservation_required: false,
        reservation_opens_at: None,
    };
    let new = NewSale::parse(dto, now).unwrap();
    Sale::draft(SaleId::generate(), new, app::clock::format(now))
}

async fn preheated(stock: i64, per_user_limit: i64) -> (RedisSales, Sale) {
    let sales = RedisSales::new(redis().await);
    sales.load_scripts().await.unwrap();
    let sale = new_sale(stock, per_user_limit);
    sales.preheat(&sale, &[]).await.unwrap();
    (sales, sale)
}

fn attempt(sale: &Sale, user: &str, rate: u32) -> Reservation {
    Reservation {
        sale_id: sale.id.clone(),
        user_id: UserId::parse(user).unwrap(),
        order_id: OrderId::generate(&sale.id),
        checkout: Checkout::default(),
        now_ms: epoch_ms(OffsetDateTime::now_utc()),
        rate_limit_per_second: rate,
        idempotency: None,
    }
}

async fn cleanup(sales: &[&Sale], users: &[&str]) {
    let mut connection = redis().await;
    let mut all = Vec::new();
    for sale in sales {
        let keys = SaleKeys::new(&sale.id);
        all.extend([
            keys.info,
            keys.stock,
            keys.bought,
            keys.pending,
            keys.released,
            keys.orders,
        ]);
    }
    all.extend(users.iter().map(|user| order_rate_key(user)));
    let _: () = connection.del(all).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ten_thousand_concurrent_attempts_admit_exactly_the_stock() {
    let (first, sale) = preheated(100, 2).await;
    // A few connections, as a few warm Lambda instances would have.
    let mut pools = vec![first];
    for _ in 0..3 {
        pools.push(RedisSales::new(redis().await));
    }
    let run = unique("user");
    let mut handles = Vec::with_capacity(10_000);
    for i in 0..10_000 {
        let sales = pools[i % pools.len()].clone();
        let reservation = attempt(&sale, &format!("{run}-{}", i % 2_000), 1_000);
        handles.push(tokio::spawn(async move {
            let verdict = sales.reserve(&reservation).await.unwrap();
            (reservation.user_id, verdict)
        }));
    }
    let mut admitted: HashMap<UserId, u32> = HashMap::new();
    let mut refused = 0;
    for handle in handles {
        match handle.await.unwrap() {
            (user, Verdict::Reserved { price_cents }) => {
                assert_eq!(price_cents, 19_900);
                *admitted.entry(user).or_default() += 1;
            }
            (_, Verdict::SoldOut | Verdict::LimitReached { room: 0 }) => refused += 1,
            (_, other) => panic!("unexpected verdict {other:?}"),
        }
    }
    assert_eq!(admitted.values().sum::<u32>(), 100);
    assert_eq!(refused, 9_900);
    assert!(admitted.values().all(|n| *n <= 2), "{admitted:?}");

    let keys = SaleKeys::new(&sale.id);
    let mut connection = redis().await;
    let stock: i64 = connection.get(&keys.stock).await.unwrap();
    assert_eq!(stock, 0);
    let bought: HashMap<String, u32> = connection.hgetall(&keys.bought).await.unwrap();
    assert_eq!(bought.values().sum::<u32>(), 100);
    assert!(bought.values().all(|n| *n <= 2));
    let pending: u32 = connection.hlen(&keys.pending).await.unwrap();
    assert_eq!(pending, 100);
    let owners: HashMap<String, String> = connection.hgetall(&keys.orders).await.unwrap();
    assert_eq!(owners.len(), 100);
    let users: Vec<String> = (0..2_000).map(|i| format!("{run}-{i}")).collect();
    let users: Vec<&str> = users.iter().map(String::as_str).collect();
    cleanup(&[&sale], &users).await;
}

#[tokio::test]
async fn window_limit_stock_rate_and_unknown_sales_are_refused() {
    let (sales, sale) = preheated(2, 1).await;
    let [ann, bob, cid, dan] = ["ann", "bob", "cid", "dan"].map(unique);
    let mut early = attempt(&sale, &ann, 100);
    early.now_ms = epoch_ms(sale.starts_at) - 1;
    assert_eq!(sales.reserve(&early).await.unwrap(), Verdict::NotStarted);
    let mut late = attempt(&sale, &ann, 100);
    late.now_ms = epoch_ms(sale.ends_at);
    assert_eq!(sales.reserve(&late).await.unwrap(), Verdict::Ended);

    // In order: who attempts, how many attempts a second they may make, and the answer
    // (`None`: a unit reserved).
    for (user, rate, expected) in [
        (&ann, 100, None),
        (&ann, 100, Some(Verdict::LimitReached { room: 0 })),
        (&bob, 100, None),
        (&cid, 100, Some(Verdict::SoldOut)),
        // Two attempts per second: dan's third in the same second is refused before any
        // check of the stock or of the limit.
        (&dan, 2, Some(Verdict::SoldOut)),
        (&dan, 2, Some(Verdict::SoldOut)),
        (&dan, 2, Some(Verdict::RateLimited)),
    ] {
        let verdict = sales.reserve(&attempt(&sale, user, rate)).await.unwrap();
        match expected {
            Some(expected) => assert_eq!(verdict, expected, "{user}"),
            None => assert!(
                matches!(verdict, Verdict::Reserved { .. }),
                "{user}: {verdict:?}"
            ),
        }
    }

    let mut unknown = attempt(&sale, &ann, 100);
    unknown.sale_id = SaleId::generate();
    assert_eq!(sales.reserve(&unknown).await.unwrap(), Verdict::UnknownSale);
    cleanup(&[&sale], &[&ann, &bob, &cid, &dan]).await;
}

#[tokio::test]
async fn every_attempt_counts_against_the_users_rate_on_every_sale() {
    // One sale not started yet, one ended, one open, and an unknown one.
    let (sales, open) = preheated(5, 5).await;
    let now = OffsetDateTime::now_utc();
    let mut upcoming = new_sale(5, 1);
    upcoming.starts_at = now + Duration::hours(1);
    upcoming.ends_at = now + Duration::hours(2);
    let mut ended = new_sale(5, 1);
    ended.starts_at = now - Duration::hours(2);
    ended.ends_at = now - Duration::hours(1);
    for sale in [&upcoming, &ended] {
        sales.preheat(sale, &[]).await.unwrap();
    }
    let ghost = new_sale(5, 1);
    let [ann, bob] = ["ann", "bob"].map(unique);

    // Four attempts that reserve nothing, then one order: five, the budget.
    let answers = [
        (&upcoming, Verdict::NotStarted),
        (&ended, Verdict::Ended),
        (&ghost, Verdict::UnknownSale),
        (&upcoming, Verdict::NotStarted),
    ];
    for (sale, expected) in answers {
        assert_eq!(
            sales.reserve(&attempt(sale, &ann, 5)).await.unwrap(),
            expected
        );
    }
    assert!(matches!(
        sales.reserve(&attempt(&open, &ann, 5)).await.unwrap(),
        Verdict::Reserved { .. }
    ));
    // The sixth is refused on every sale, the open one included, and changes nothing there.
    for sale in [&open, &upcoming, &ended, &ghost] {
        assert_eq!(
            sales.reserve(&attempt(sale, &ann, 5)).await.unwrap(),
            Verdict::RateLimited
        );
    }
    let keys = SaleKeys::new(&open.id);
    let mut connection = redis().await;
    let stock: i64 = connection.get(&keys.stock).await.unwrap();
    assert_eq!(stock, 4);
    let bought: HashMap<String, u32> = connection.hgetall(&keys.bought).await.unwrap();
    assert_eq!(bought, HashMap::from([(ann.clone(), 1)]));
    // One key for the user, counting every attempt, that expires with its second.
    let counted: u32 = connection.get(order_rate_key(&ann)).await.unwrap();
    assert_eq!(counted, 9);
    let ttl: i64 = connection.pttl(order_rate_key(&ann)).await.unwrap();
    assert!((1..=1_000).contains(&ttl), "{ttl}");
    // Another user has a budget of their own.
    assert!(matches!(
        sales.reserve(&attempt(&open, &bob, 5)).await.unwrap(),
        Verdict::Reserved { .. }
    ));
    // A second later the budget is back.
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    assert!(matches!(
        sales.reserve(&attempt(&open, &ann, 5)).await.unwrap(),
        Verdict::Reserved { .. }
    ));
    cleanup(&[&open, &upcoming, &ended], &[&ann, &bob]).await;
}

#[tokio::test]
async fn a_reservation_is_released_once_even_if_released_twice() {
    let (sales, sale) = preheated(1, 1).await;
    let user = unique("ann");
    let reservation = attempt(&sale, &user, 100);
    assert!(matches!(
        sales.reserve(&reservation).await.unwrap(),
        Verdict::Reserved { .. }
    ));
    let order = &reservation.order_id;
    assert!(sales.release(&sale.id, order, None).await.unwrap());
    assert!(!sales.release(&sale.id, order, None).await.unwrap());
    let ann = Holder {
        user_id: UserId::parse(&user).unwrap(),
        units: 1,
    };
    assert!(!sales.release(&sale.id, order, Some(&ann)).await.unwrap());
    assert!(
        !sales
            .release(&sale.id, &OrderId::generate(&sale.id), None)
            .await
            .unwrap()
    );

    let keys = SaleKeys::new(&sale.id);
    let mut connection = redis().await;
    let stock: i64 = connection.get(&keys.stock).await.unwrap();
    assert_eq!(stock, 1);
    let bought: HashMap<String, u32> = connection.hgetall(&keys.bought).await.unwrap();
    assert!(bought.is_empty(), "{bought:?}");
    let pending: u32 = connection.hlen(&keys.pending).await.unwrap();
    assert_eq!(pending, 0);

    // An order that left `pending` (materialized, then cancelled) is released with its holder.
    let again = attempt(&sale, &user, 100);
    assert!(matches!(
        sales.reserve(&again).await.unwrap(),
        Verdict::Reserved { .. }
    ));
    let _: () = connection
        .hdel(&keys.pending, again.order_id.as_str())
        .await
        .unwrap();
    assert!(
        !sales
            .release(&sale.id, &again.order_id, None)
            .await
            .unwrap()
    );
    assert!(
        sales
            .release(&sale.id, &again.order_id, Some(&ann))
            .await
            .unwrap()
    );
    assert!(
        !sales
            .release(&sale.id, &again.order_id, Some(&ann))
            .await
            .unwrap()
    );
    let stock: i64 = connection.get(&keys.stock).await.unwrap();
    assert_eq!(stock, 1);
    cleanup(&[&sale], &[&user]).await;
}

#[tokio::test]
async fn an_admitted_order_reads_as_pending_to_its_owner_only() {
    let (sales, sale) = preheated(2, 1).await;
    let clients = clients().await;
    let table = create_social_table(&clients).await;
    let store = DynamoOrderStore::new(clients.dynamodb.clone(), &table);
    let pending = RedisReservations::new(redis().await);
    let user = unique("ann");
    let ann = UserId::parse(&user).unwrap();
    let eve = UserId::parse("eve").unwrap();

    let reservation = attempt(&sale, &user, 100);
    assert!(matches!(
        sales.reserve(&reservation).await.unwrap(),
        Verdict::Reserved { .. }
    ));
    let order = reservation.order_id.as_str();
    let keys = SaleKeys::new(&sale.id);
    let mut connection = redis().await;
    let owner: String = connection.hget(&keys.orders, order).await.unwrap();
    assert_eq!(owner, user);

    let read = |user: &UserId, order: &str| {
        let (store, pending, user, order) = (&store, &pending, user.clone(), order.to_owned());
        // As the route does: an id that is no order id names no order.
        async move {
            match OrderId::parse(&order) {
                Ok(order) => find_order(store, pending, &user, &order).await.unwrap(),
                Err(_) => None,
            }
        }
    };
    assert_eq!(
        read(&ann, order).await,
        Some(OrderView::Pending(PendingOrder {
            order_id: reservation.order_id.clone(),
            sale_id: sale.id.clone(),
            status: "PENDING",
        }))
    );
    assert_eq!(read(&eve, order).await, None);
    let unknown = OrderId::generate(&sale.id);
    assert_eq!(read(&ann, unknown.as_str()).await, None);
    assert_eq!(read(&ann, "not-an-order-id").await, None);

    // Given back (e.g. the event could not be sent): no longer anyone's order.
    assert!(
        sales
            .release(&sale.id, &reservation.order_id, None)
            .await
            .unwrap()
    );
    assert_eq!(read(&ann, order).await, None);
    cleanup(&[&sale], &[&user]).await;
}

#[tokio::test]
async fn the_detail_is_read_in_one_round_trip_and_republishing_keeps_the_live_stock() {
    let (sales, sale) = preheated(5, 1).await;
    let user = unique("ann");
    assert!(matches!(
        sales.reserve(&attempt(&sale, &user, 100)).await.unwrap(),
        Verdict::Reserved { .. }
    ));
    sales.preheat(&sale, &[]).await.unwrap();
    let detail = sales.detail(&sale.id).await.unwrap().unwrap();
    assert_eq!(detail.stock, 5);
    assert_eq!(detail.stock_remaining, 4);
    assert_eq!(detail.title, "Phone");
    assert_eq!(detail.starts_at_ms, epoch_ms(sale.starts_at));
    assert!(sales.detail(&SaleId::generate()).await.unwrap().is_none());
    cleanup(&[&sale], &[&user]).await;
}

#[tokio::test]
async fn a_sale_is_created_then_published_once_in_dynamodb() {
    let clients = clients().await;
    let table = create_table(&clients).await;
    let store = DynamoSaleStore::new(clients.dynamodb.clone(), &table);
    let sale = new_sale(100, 2);
    store.create(&sale).await.unwrap();
    assert_eq!(store.get(&sale.id).await.unwrap().as_ref(), Some(&sale));

    let published = store.publish(&sale.id, "t1").await.unwrap().unwrap();
    assert_eq!(published.state, Lifecycle::Published);
    assert_eq!(published.stock_remaining, 100);
    assert_eq!(published.starts_at, sale.starts_at);
    let again = store.publish(&sale.id, "t2").await.unwrap().unwrap();
    assert_eq!(again, published);
    assert!(
        store
            .publish(&SaleId::generate(), "t3")
            .await
            .unwrap()
            .is_none()
    );
    // Creating a sale twice under one id is refused.
    assert!(store.create(&sale).await.is_err());
}

#[tokio::test]
async fn an_order_of_several_units_is_reserved_and_released_whole() {
    let (sales, sale) = preheated(5, 3).await;
    let [ann, bob, cid] = ["ann", "bob", "cid"].map(unique);
    let keys = SaleKeys::new(&sale.id);
    let mut connection = redis().await;
    let with = |user: &str, quantity: u32| {
        let mut reservation = attempt(&sale, user, 100);
        reservation.checkout.quantity = quantity;
        reservation
    };

    // ann takes 2 of her 3; 2 more would pass her limit: one fits, nothing is reserved.
    let first = with(&ann, 2);
    assert!(matches!(
        sales.reserve(&first).await.unwrap(),
        Verdict::Reserved { .. }
    ));
    assert_eq!(
        sales.reserve(&with(&ann, 2)).await.unwrap(),
        Verdict::LimitReached { room: 1 }
    );
    // bob asks for 3 of the 3 left... and gets them; then nothing is left for ann's 1.
    let bobs = with(&bob, 3);
    assert!(matches!(
        sales.reserve(&bobs).await.unwrap(),
        Verdict::Reserved { .. }
    ));
    assert_eq!(
        sales.reserve(&with(&ann, 1)).await.unwrap(),
        Verdict::SoldOut
    );
    let stock: i64 = connection.get(&keys.stock).await.unwrap();
    assert_eq!(stock, 0);
    let entry: String = connection
        .hget(&keys.pending, first.order_id.as_str())
        .await
        .unwrap();
    assert!(
        entry.starts_with(&format!("{ann}:")) && entry.ends_with(":2"),
        "{entry}"
    );

    // Releasing bob's pending order gives his 3 units back, once.
    assert!(sales.release(&sale.id, &bobs.order_id, None).await.unwrap());
    assert!(!sales.release(&sale.id, &bobs.order_id, None).await.unwrap());
    let stock: i64 = connection.get(&keys.stock).await.unwrap();
    assert_eq!(stock, 3);
    let bought: HashMap<String, u32> = connection.hgetall(&keys.bought).await.unwrap();
    assert_eq!(bought, HashMap::from([(ann.clone(), 2)]));
    // bob takes 2 of the 3; cid's 2 do not fit in the 1 left: nothing reserved, and it says so.
    assert!(matches!(
        sales.reserve(&with(&bob, 2)).await.unwrap(),
        Verdict::Reserved { .. }
    ));
    assert_eq!(
        sales.reserve(&with(&cid, 2)).await.unwrap(),
        Verdict::NotEnoughStock { left: 1 }
    );
    let stock: i64 = connection.get(&keys.stock).await.unwrap();
    assert_eq!(stock, 1);

    // ann's confirmed order (no longer pending) comes back whole with its holder and units.
    let _: () = connection
        .hdel(&keys.pending, first.order_id.as_str())
        .await
        .unwrap();
    let holder = Holder {
        user_id: UserId::parse(&ann).unwrap(),
        units: 2,
    };
    assert!(
        sales
            .release(&sale.id, &first.order_id, Some(&holder))
            .await
            .unwrap()
    );
    let stock: i64 = connection.get(&keys.stock).await.unwrap();
    assert_eq!(stock, 3);
    let bought: HashMap<String, u32> = connection.hgetall(&keys.bought).await.unwrap();
    assert_eq!(bought, HashMap::from([(bob.clone(), 2)]));
    cleanup(&[&sale], &[&ann, &bob, &cid]).await;
}

#[tokio::test]
async fn an_idempotency_key_admits_once_per_buyer_and_is_free_again_when_the_order_is_given_up() {
    use app::seckill::admission::{ORDER_KEY_TTL_MS, OrderKey};
    use app::seckill::keys::order_key_key;
    use app::seckill::order::Reservations;
    let (sales, sale) = preheated(10, 5).await;
    let [ann, bob] = ["ann", "bob"].map(unique);
    let reservations = RedisReservations::new(redis().await);
    let keyed = |user: &str, key: &str, checkout: Checkout| Reservation {
        idempotency: OrderKey::new(key, &sale.id, &checkout),
        checkout,
        ..attempt(&sale, user, 100)
    };
    let stock = || async {
        let mut connection = redis().await;
        let stock: i64 = connection.get(SaleKeys::new(&sale.id).stock).await.unwrap();
        stock
    };

    let first = keyed(&ann, "k1", Checkout::default());
    assert!(matches!(
        sales.reserve(&first).await.unwrap(),
        Verdict::Reserved { .. }
    ));
    // A retry: the same order, still pending since the first attempt's time; nothing reserved.
    let retry = keyed(&ann, "k1", Checkout::default());
    assert_eq!(
        sales.reserve(&retry).await.unwrap(),
        Verdict::Replayed {
            order_id: first.order_id.clone(),
            price_cents: 19_900,
            pending_since_ms: Some(first.now_ms),
        }
    );
    assert_eq!(stock().await, 9);
    // Another body, or another sale, under the same key: refused.
    let two = Checkout {
        quantity: 2,
        ..Checkout::default()
    };
    assert_eq!(
        sales.reserve(&keyed(&ann, "k1", two)).await.unwrap(),
        Verdict::KeyReused
    );
    // Bob's k1 is his own.
    assert!(matches!(
        sales
            .reserve(&keyed(&bob, "k1", Checkout::default()))
            .await
            .unwrap(),
        Verdict::Reserved { .. }
    ));
    assert_eq!(stock().await, 8);
    // The key lives a day.
    let mut connection = redis().await;
    let ttl: i64 = connection.pttl(order_key_key(&ann, "k1")).await.unwrap();
    assert!(ttl > 0 && ttl <= ORDER_KEY_TTL_MS as i64, "{ttl}");

    // Once the consumer took the order over, the retry still answers it, with nothing to send.
    reservations
        .claim(&sale.id, std::slice::from_ref(&first.order_id))
        .await
        .unwrap();
    assert_eq!(
        sales.reserve(&retry).await.unwrap(),
        Verdict::Replayed {
            order_id: first.order_id.clone(),
            price_cents: 19_900,
            pending_since_ms: None,
        }
    );
    // Even after the materialized order was cancelled and its units given back.
    let holder = Holder {
        user_id: UserId::parse(&ann).unwrap(),
        units: 1,
    };
    assert!(
        sales
            .release(&sale.id, &first.order_id, Some(&holder))
            .await
            .unwrap()
    );
    assert!(matches!(
        sales.reserve(&retry).await.unwrap(),
        Verdict::Replayed { .. }
    ));

    // A reservation given up while pending (its event could not be sent) never became an
    // order: its key is free, and the next attempt with it is judged anew.
    let failed = keyed(&ann, "k2", Checkout::default());
    assert!(matches!(
        sales.reserve(&failed).await.unwrap(),
        Verdict::Reserved { .. }
    ));
    assert!(
        sales
            .release(&sale.id, &failed.order_id, None)
            .await
            .unwrap()
    );
    let again = keyed(&ann, "k2", Checkout::default());
    assert!(matches!(
        sales.reserve(&again).await.unwrap(),
        Verdict::Reserved { .. }
    ));
    assert_eq!(
        sales
            .reserve(&keyed(&ann, "k2", Checkout::default()))
            .await
            .unwrap(),
        Verdict::Replayed {
            order_id: again.order_id.clone(),
            price_cents: 19_900,
            pending_since_ms: Some(again.now_ms),
        }
    );
    let _: () = connection
        .del(&[
            order_key_key(&ann, "k1"),
            order_key_key(&ann, "k2"),
            order_key_key(&bob, "k1"),
        ])
        .await
        .unwrap();
    cleanup(&[&sale], &[&ann, &bob]).await;
}
