//! On the cache's events (SNS): after a failover, a node replacement or a reboot, checks the
//! replication group with ElastiCache and puts every live sale back in order: preheats what
//! Redis lost, caps its stock at what DynamoDB can confirm, releases orphaned reservations.

use app::config::Env;
use app::seckill::cache_control::ElastiCacheControl;
use app::seckill::failover::{self, CacheEvent, FailoverDeps};
use app::seckill::order_store::DynamoOrderStore;
use app::seckill::reconcile::Grace;
use app::seckill::redis_store::RedisSales;
use app::seckill::reservations::RedisReservations;
use app::seckill::sale_store::DynamoSaleStore;
use app::telemetry::fail_cold_start;
use app::{cloud, telemetry};
use aws_lambda_events::sns::SnsEvent;
use lambda_runtime::{LambdaEvent, service_fn};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    telemetry::init();
    let env = Env::process();
    let grace = Grace::from_env(&env)
        .unwrap_or_else(|err| fail_cold_start(&err))
        .period();
    let group = env
        .required("REDIS_CACHE_NAME")
        .unwrap_or_else(|err| fail_cold_start(&err));
    let sdk_config = cloud::sdk_config().await;
    let clients = cloud::Clients::new(&sdk_config);
    let control = ElastiCacheControl::new(&sdk_config);
    let orders = DynamoOrderStore::from_env(&env, clients.dynamodb.clone())
        .unwrap_or_else(|err| fail_cold_start(&err));
    let sales = DynamoSaleStore::from_env(&env, clients.dynamodb)
        .unwrap_or_else(|err| fail_cold_start(&err));
    let reservations = RedisReservations::from_env(&env)
        .await
        .unwrap_or_else(|err| fail_cold_start(&err));
    let cache = RedisSales::new(reservations.connection());
    let deps = FailoverDeps {
        control: &control,
        orders: &orders,
        sales: &sales,
        cache: &cache,
        reservations: &reservations,
    };
    let group = group.as_str();
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SnsEvent>| async move {
        let events = event
            .payload
            .records
            .iter()
            .flat_map(|record| CacheEvent::parse(&record.sns.message))
            .collect();
        let now_ms = app::clock::now_epoch_ms();
        let recovery = failover::recover(deps, group, events, grace, now_ms).await?;
        Ok::<_, lambda_runtime::Error>(serde_json::to_value(recovery)?)
    }))
    .await
}
