//! Finding Redis from `REDIS_CACHE_NAME` against moto's ElastiCache control plane: the
//! replication group's primary endpoint, as `rediss://`. moto has no serverless caches (no
//! `DescribeServerlessCaches`) and no data plane, so nothing listens at the resolved address.

use app::cloud::{self, RedisEndpoint, RedisSetupError};
use app::config::Env;
use aws_sdk_elasticache::Client;

async fn elasticache() -> Client {
    std::env::var("AWS_ENDPOINT_URL").expect("AWS_ENDPOINT_URL points at moto (`make test`)");
    Client::new(&cloud::sdk_config().await)
}

/// A replication group shaped like `template.yaml`'s `RedisCache`; returns its id.
async fn create_replication_group(client: &Client) -> String {
    let id = format!("rg-{}", uuid::Uuid::new_v4().simple());
    client
        .create_replication_group()
        .replication_group_id(&id)
        .replication_group_description("flash-sale cache")
        .engine("valkey")
        .cache_node_type("cache.t4g.small")
        .num_cache_clusters(2)
        .automatic_failover_enabled(true)
        .transit_encryption_enabled(true)
        .send()
        .await
        .expect("create the replication group");
    id
}

#[tokio::test]
async fn a_cache_name_resolves_to_its_primary_endpoint_over_tls() {
    let client = elasticache().await;
    let id = create_replication_group(&client).await;
    let described = client
        .describe_replication_groups()
        .replication_group_id(&id)
        .send()
        .await
        .unwrap();
    let primary = described.replication_groups()[0].node_groups()[0]
        .primary_endpoint()
        .unwrap();

    let env = Env::from_pairs([("REDIS_CACHE_NAME", id.as_str())]);
    let url = RedisEndpoint::from_env(&env)
        .unwrap()
        .resolve(&client)
        .await
        .unwrap();

    assert_eq!(
        url,
        format!(
            "rediss://{}:{}",
            primary.address().unwrap(),
            primary.port().unwrap()
        )
    );
    assert!(url.starts_with(&format!("rediss://master.{id}.")), "{url}");
}

#[tokio::test]
async fn an_unknown_cache_name_fails_naming_it() {
    let client = elasticache().await;
    let id = format!("rg-{}", uuid::Uuid::new_v4().simple());

    let err = RedisEndpoint::CacheName(id.clone())
        .resolve(&client)
        .await
        .unwrap_err();

    assert_eq!(
        err.to_string(),
        format!("failed to describe the ElastiCache replication group {id}")
    );
    let RedisSetupError::Describe { source, .. } = err else {
        panic!("expected a Describe error, got {err:?}");
    };
    assert!(
        source
            .as_service_error()
            .is_some_and(|e| e.is_replication_group_not_found_fault()),
        "{source:?}"
    );
}

#[tokio::test]
async fn redis_url_wins_and_skips_elasticache() {
    let url = std::env::var("REDIS_URL").expect("REDIS_URL points at redis-server");
    // A cache that does not exist: were it looked up, the connection would fail.
    let env = Env::from_pairs([
        ("REDIS_URL", url.as_str()),
        ("REDIS_CACHE_NAME", "rg-does-not-exist"),
    ]);

    let mut redis = cloud::redis_from_env(&env, &cloud::sdk_config().await)
        .await
        .expect("connects to REDIS_URL");

    let pong: String = redis::cmd("PING").query_async(&mut redis).await.unwrap();
    assert_eq!(pong, "PONG");
}
