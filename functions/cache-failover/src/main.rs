//! On the cache's events (SNS): after a failover, a node replacement or a reboot, checks the
//! replication group with ElastiCache and puts every live sale back in order: preheats what
//! Redis lost, caps its stock at what DynamoDB can confirm, releases orphaned reservations.

use app::boot::Boot;
use app::seckill::recovery::elasticache::ElastiCacheControl;
use app::seckill::recovery::failover::{self, CacheEvent, FailoverDeps};
use app::seckill::recovery::reconcile::Grace;
use app::seckill::sale::redis::RedisSales;
use aws_lambda_events::sns::SnsEvent;
use lambda_runtime::{LambdaEvent, service_fn};

#[tokio::main(flavor = "current_thread")]
pub(crate) async fn main() -> Result<(), lambda_runtime::Error> {
    let boot = Boot::start();
    let grace = boot.must(Grace::from_env(boot.env())).period();
    let group = boot.must(boot.env().required("REDIS_CACHE_NAME"));
    // Redis's connect and script loads wait on the network while the SDK is set up.
    let (reservations, orders) = tokio::join!(boot.reservations(), boot.order_store());
    let control = ElastiCacheControl::new(boot.sdk_config().await);
    let sales = boot.sale_store().await;
    let cache = RedisSales::new(reservations.connection());
    let deps = FailoverDeps {
        control: &control,
        orders: &orders,
        sales: &sales,
        cache: &cache,
        reservations: &reservations,
    };
    let group = group.as_str();
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SnsEvent>| {
        app::emf::invocation(app::emf::Ids::from(&event.context), async move {
            let events = event
                .payload
                .records
                .iter()
                .flat_map(|record| CacheEvent::parse(&record.sns.message))
                .collect();
            let now_ms = app::clock::now_epoch_ms();
            let recovery = failover::recover(deps, group, events, grace, now_ms).await?;
            Ok::<_, lambda_runtime::Error>(serde_json::to_value(recovery)?)
        })
    }))
    .await
}
