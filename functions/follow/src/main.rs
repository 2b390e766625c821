//! `PUT /users/{userId}/follow`: the caller follows a user, in one transaction with an outbox
//! event, within the follow rate and the cap on followings.

use app::config::Env;
use app::social::{DynamoSocialStore, FollowLimits, user_routes};
use app::{cloud, http, telemetry};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    telemetry::init();
    let env = Env::process();
    let limits =
        FollowLimits::from_env(&env).unwrap_or_else(|err| telemetry::fail_cold_start(&err));
    let clients = cloud::Clients::new(&cloud::sdk_config().await);
    let store = DynamoSocialStore::from_env(&env, clients.dynamodb)
        .unwrap_or_else(|err| telemetry::fail_cold_start(&err));
    http::run(|request| user_routes::follow(&store, &limits, request)).await
}
