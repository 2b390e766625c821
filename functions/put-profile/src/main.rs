//! `PUT /users/me`: create or rename the caller's profile.

use app::config::Env;
use app::social::{DynamoSocialStore, user_routes};
use app::{cloud, http, telemetry};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    telemetry::init();
    let clients = cloud::Clients::new(&cloud::sdk_config().await);
    let store = DynamoSocialStore::from_env(&Env::process(), clients.dynamodb)
        .unwrap_or_else(|err| telemetry::fail_cold_start(&err));
    http::run(|request| user_routes::put_profile(&store, request)).await
}
