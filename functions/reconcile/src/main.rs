//! On a schedule: releases reservations that never became orders and logs each published
//! sale's stock in Redis beside DynamoDB's; answers a JSON summary.

use app::config::Env;
use app::seckill::order_store::DynamoOrderStore;
use app::seckill::reconcile::{self, Grace};
use app::seckill::reservations::RedisReservations;
use app::{cloud, telemetry};
use lambda_runtime::{LambdaEvent, service_fn};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    telemetry::init();
    let env = Env::process();
    let grace = Grace::from_env(&env)
        .unwrap_or_else(|err| telemetry::fail_cold_start(&err))
        .period();
    let clients = cloud::Clients::new(&cloud::sdk_config().await);
    let store = DynamoOrderStore::from_env(&env, clients.dynamodb)
        .unwrap_or_else(|err| telemetry::fail_cold_start(&err));
    let reservations = RedisReservations::from_env(&env)
        .await
        .unwrap_or_else(|err| telemetry::fail_cold_start(&err));
    let (store, reservations) = (&store, &reservations);
    lambda_runtime::run(service_fn(
        move |_: LambdaEvent<serde_json::Value>| async move {
            let now_ms = app::clock::now_epoch_ms();
            let summary = reconcile::reconcile(store, reservations, grace, now_ms).await?;
            Ok::<_, lambda_runtime::Error>(serde_json::to_value(summary)?)
        },
    ))
    .await
}
