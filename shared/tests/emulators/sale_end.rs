//! Ending a sale early against moto and redis-server, while buyers are ordering: admissions
//! stop at the end, every admitted order is still materialized, no unit is lost or sold twice,
//! and the home page's listing and the sale's detail agree that it ended.

use crate::support::{clients, create_queue, create_social_table, redis, sealed_batch, unique};
use app::clock::epoch_ms;
use app::ids::{OrderId, SaleId, UserId};
use app::queue::Queue;
use app::seckill::admission::checkout::Checkout;
use app::seckill::admission::{self, Admission, Reservation, Verdict};
use app::seckill::office::{self, SaleOffice};
use app::seckill::order::consumer::{self, OrderDeps};
use app::seckill::order::dynamo::DynamoOrderStore;
use app::seckill::order::redis::RedisReservations;
use app::seckill::order::sqs::SqsPaymentDueSink;
use app::seckill::order::{OrderStatus, OrderStore, Reservations};
use app::seckill::sale::dynamo::DynamoSaleStore;
use app::seckill::sale::page::{PageError, PageRequests};
use app::seckill::sale::redis::RedisSales;
use app::seckill::sale::{
    Lifecycle, NewSale, NewSaleDto, Sale, SaleCache, SaleState, SaleStore, publish,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use time::{Duration, OffsetDateTime};

/// Publishing asks for a page; this test reads none.
struct NoPages;

#[async_trait::async_trait]
impl PageRequests for NoPages {
    async fn request(&self, _id: &SaleId) -> Result<(), PageError> {
        Ok(())
    }
}

const STOCK: i64 = 150;
const BUYERS: usize = 300;

#[tokio::test]
async fn ending_a_sale_while_orders_are_in_flight_loses_and_oversells_nothing() {
    let clients = clients().await;
    let table = create_social_table(&clients).await;
    let sales = DynamoSaleStore::new(clients.dynamodb.clone(), &table);
    let orders = DynamoOrderStore::new(clients.dynamodb.clone(), &table);
    let cache = RedisSales::new(redis().await);
    cache.load_scripts().await.unwrap();
    let reservations = RedisReservations::new(redis().await);

    let now = OffsetDateTime::now_utc();
    let dto = NewSaleDto {
        product_id: "sku-1".into(),
        title: "Lamp".into(),
        price_cents: 990,
        stock: STOCK,
        per_user_limit: 1,
        starts_at: app::clock::format(now - Duration::minutes(1)),
        ends_at: app::clock::format(now + Duration::hours(1)),
        reservation_required: false,
        reservation_opens_at: None,
    };
    let draft = Sale::draft(
        SaleId::generate(),
        NewSale::parse(dto, now).unwrap(),
        app::clock::format(now),
    );
    sales.create(&draft).await.unwrap();
    publish(&sales, &cache, &NoPages, &draft.id, "t")
        .await
        .unwrap();

    // Buyers order one unit each, 300 of them over 300 ms; the operator ends the sale meanwhile.
    let ended = Arc::new(AtomicBool::new(false));
    let prefix = unique("buyer");
    let attempts = (0..BUYERS).map(|i| {
        let cache = cache.clone();
        let ended = ended.clone();
        let sale_id = draft.id.clone();
        let user = format!("{prefix}-{i}");
        async move {
            tokio::time::sleep(std::time::Duration::from_millis(i as u64)).await;
            let after_end = ended.load(Ordering::SeqCst);
            let reservation = Reservation {
                order_id: OrderId::generate(&sale_id),
                sale_id,
                user_id: UserId::parse(&user).unwrap(),
                checkout: Checkout::default(),
                now_ms: epoch_ms(OffsetDateTime::now_utc()),
                rate_limit_per_second: 5,
                idempotency: None,
            };
            let verdict = cache.reserve(&reservation).await.unwrap();
            (after_end, reservation, verdict)
        }
    });
    let operator = async {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let sale = office::end_sale(&sales, &cache, &draft.id, OffsetDateTime::now_utc())
            .await
            .unwrap();
        ended.store(true, Ordering::SeqCst);
        sale
    };
    let (results, ended_sale) = tokio::join!(futures_util::future::join_all(attempts), operator);

    let admitted: Vec<&Reservation> = results
        .iter()
        .filter(|(_, _, verdict)| matches!(verdict, Verdict::Reserved { .. }))
        .map(|(_, reservation, _)| reservation)
        .collect();
    for (after_end, _, verdict) in &results {
        if *after_end {
            assert_eq!(
                *verdict,
                Verdict::Ended,
                "an attempt after the end was not refused"
            );
        }
    }
    let refused_after = results.iter().filter(|(after, ..)| *after).count();
    assert!(refused_after > 0, "some attempts came after the end");
    assert!(!admitted.is_empty(), "some attempts came before it");
    let admitted_units = admitted.len() as i64;
    assert!(admitted_units <= STOCK);
    assert_eq!(
        reservations.stock(&draft.id).await.unwrap(),
        Some(STOCK - admitted_units),
        "Redis: every unit is either admitted or still there"
    );

    // Every admitted order is still materialized after the end.
    let url = create_queue(&clients, "test-payments").await;
    let payments = SqsPaymentDueSink::new(Queue::new(clients.sqs.clone(), &url));
    let deps = OrderDeps {
        store: &orders,
        reservations: &reservations,
        payments: &payments,
        seal: app::seckill::admission::seal::Seal::for_tests(),
    };
    let bodies: Vec<String> = admitted
        .iter()
        .map(|reservation| {
            let event = admission::order_placed(reservation, 990, app::clock::now_rfc3339());
            serde_json::to_string(&event).unwrap()
        })
        .collect();
    for chunk in bodies.chunks(20) {
        let failed = consumer::handle_batch(deps, sealed_batch(chunk)).await;
        assert!(failed.is_empty(), "{failed:?}");
    }
    for reservation in &admitted {
        let order = orders.order(&reservation.order_id).await.unwrap().unwrap();
        assert_eq!(order.status, OrderStatus::Confirmed);
    }
    assert_eq!(
        orders.stock_remaining(&draft.id).await.unwrap(),
        Some(STOCK - admitted_units),
        "DynamoDB: the confirmed orders took exactly the admitted units"
    );
    assert!(reservations.pending(&draft.id).await.unwrap().is_empty());

    // The listing and the detail agree: ENDED, at the moment it was ended.
    assert_eq!(ended_sale.state, Lifecycle::Ended);
    let now_ms = epoch_ms(OffsetDateTime::now_utc());
    let detail = cache.detail(&draft.id).await.unwrap().unwrap();
    assert_eq!(detail.state(now_ms), SaleState::Ended);
    assert_eq!(detail.ends_at_ms, epoch_ms(ended_sale.ends_at));
    let listed = office::listing(sales.live().await.unwrap(), now_ms);
    let entry = listed.iter().find(|l| l.id == draft.id).unwrap();
    assert_eq!(entry.state, SaleState::Ended);
    assert_eq!(entry.ends_at, app::clock::format(ended_sale.ends_at));

    // Publishing it again never reopens it; a later attempt is still ENDED.
    assert!(
        publish(&sales, &cache, &NoPages, &draft.id, "t")
            .await
            .is_err()
    );
    let late = Reservation {
        order_id: OrderId::generate(&draft.id),
        sale_id: draft.id.clone(),
        user_id: UserId::parse(&unique("late")).unwrap(),
        checkout: Checkout::default(),
        now_ms: epoch_ms(OffsetDateTime::now_utc()) - 60_000,
        rate_limit_per_second: 5,
        idempotency: None,
    };
    assert_eq!(cache.reserve(&late).await.unwrap(), Verdict::Ended);
}
