//! `POST /seckill/activities/{id}/orders` (user): one Lua reservation in Redis, one
//! `OrderPlaced` on SQS, `202 Accepted`.

use app::config::Env;
use app::seckill::order_publisher::SqsOrderPublisher;
use app::seckill::redis_store::RedisSales;
use app::seckill::sale_routes::{self, OrderRoute};
use app::telemetry::fail_cold_start;
use app::{cloud, http, telemetry};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    telemetry::init();
    let env = Env::process();
    let rate_limit_per_second =
        sale_routes::rate_limit_from_env(&env).unwrap_or_else(|err| fail_cold_start(&err));
    let clients = cloud::Clients::new(&cloud::sdk_config().await);
    let publisher =
        SqsOrderPublisher::from_env(&env, clients.sqs).unwrap_or_else(|err| fail_cold_start(&err));
    let redis = cloud::redis_from_env(&env)
        .await
        .unwrap_or_else(|err| fail_cold_start(&err));
    let admission = RedisSales::new(redis);
    if let Err(err) = admission.load_scripts().await {
        fail_cold_start(&err);
    }
    let route = OrderRoute {
        admission: &admission,
        publisher: &publisher,
        rate_limit_per_second,
    };
    http::run(|request| sale_routes::place_order(&route, request)).await
}
