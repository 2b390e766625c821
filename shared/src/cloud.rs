//! The cloud clients: one `SdkConfig` per process and the clients derived from it, and the
//! Redis connection.
//!
//! Loading the `SdkConfig` resolves region, credentials and endpoints, which is expensive, so
//! it happens once at cold start; deriving a client from it is cheap. Endpoints come from the
//! standard variables (`AWS_ENDPOINT_URL`, and per service `AWS_ENDPOINT_URL_DYNAMODB`,
//! `AWS_ENDPOINT_URL_SQS`, ...), so the same binary talks to AWS, LocalStack or the local
//! emulators without a line of product code knowing which.

use aws_config::{BehaviorVersion, SdkConfig};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use std::time::Duration;

/// Loads the shared SDK configuration from the environment.
pub async fn sdk_config() -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest()).load().await
}

/// The AWS clients a function may use, all built from one [`SdkConfig`].
#[derive(Clone, Debug)]
pub struct Clients {
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub sqs: aws_sdk_sqs::Client,
}

impl Clients {
    pub fn new(config: &SdkConfig) -> Self {
        Self {
            dynamodb: aws_sdk_dynamodb::Client::new(config),
            sqs: aws_sdk_sqs::Client::new(config),
        }
    }
}

/// Why Redis could not be reached at cold start.
#[derive(Debug, thiserror::Error)]
#[error("failed to connect to Redis")]
pub struct RedisConnectError(#[source] redis::RedisError);

/// A Redis connection that reconnects by itself; cheap to clone, shared by all invocations.
///
/// The URL may carry a password: it is never logged.
pub async fn redis(url: &str) -> Result<ConnectionManager, RedisConnectError> {
    let client = redis::Client::open(url).map_err(RedisConnectError)?;
    // Short timeouts: a Lambda invocation should fail fast rather than hang on a lost cache.
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(2)))
        .set_response_timeout(Some(Duration::from_secs(2)))
        .set_number_of_retries(2);
    ConnectionManager::new_with_config(client, config)
        .await
        .map_err(RedisConnectError)
}
