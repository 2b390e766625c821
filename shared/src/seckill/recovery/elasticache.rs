//! ElastiCache adapter of [`CacheControl`]: `DescribeReplicationGroups`, called only by the
//! failover reconcile, never at a cold start.

use crate::fault::OrFault;
use crate::seckill::recovery::failover::{CacheControl, CacheControlError, CacheGroup};
use anyhow::Context;
use async_trait::async_trait;

pub struct ElastiCacheControl {
    client: aws_sdk_elasticache::Client,
}

impl ElastiCacheControl {
    pub fn new(config: &aws_config::SdkConfig) -> Self {
        Self {
            client: aws_sdk_elasticache::Client::new(config),
        }
    }
}

#[async_trait]
impl CacheControl for ElastiCacheControl {
    #[tracing::instrument(level = "debug", skip(self))]
    async fn group(&self, id: &str) -> Result<CacheGroup, CacheControlError> {
        let output = self
            .client
            .describe_replication_groups()
            .replication_group_id(id)
            .send()
            .await
            .or_fault(format!("failed to describe the replication group {id}"))?;
        let group = output
            .replication_groups()
            .first()
            .with_context(|| format!("no replication group {id}"))?;
        // Cluster mode disabled: one node group, whose primary endpoint follows failovers.
        let primary = group
            .node_groups()
            .first()
            .and_then(|node_group| node_group.primary_endpoint())
            .and_then(|endpoint| Some(format!("{}:{}", endpoint.address()?, endpoint.port()?)));
        Ok(CacheGroup {
            status: group.status().unwrap_or("unknown").to_owned(),
            primary,
        })
    }
}
