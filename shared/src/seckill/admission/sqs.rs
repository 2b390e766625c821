//! SQS adapter of [`OrderPublisher`]: one `SendMessage` of `OrderPlaced` to the order queue,
//! sealed ([`crate::seckill::admission::seal`]).

use crate::config::{ConfigError, Env};
use crate::events::{Envelope, OrderPlaced};
use crate::queue::Queue;
use crate::seckill::admission::seal::Seal;
use crate::seckill::admission::{OrderPublisher, PublishError};
use async_trait::async_trait;

/// The order queue.
#[derive(Clone, Debug)]
pub struct SqsOrderPublisher {
    queue: Queue,
    seal: Seal,
}

impl SqsOrderPublisher {
    pub fn new(queue: Queue, seal: Seal) -> Self {
        Self { queue, seal }
    }

    /// The queue named by `ORDER_QUEUE_URL`, its messages sealed with `seal`.
    pub fn from_env(
        env: &Env,
        client: aws_sdk_sqs::Client,
        seal: Seal,
    ) -> Result<Self, ConfigError> {
        Ok(Self::new(
            Queue::from_env(env, client, "ORDER_QUEUE_URL")?,
            seal,
        ))
    }
}

#[async_trait]
impl OrderPublisher for SqsOrderPublisher {
    async fn order_placed(&self, event: &Envelope<OrderPlaced>) -> Result<(), PublishError> {
        self.queue
            .send_sealed(event, &self.seal)
            .await
            .map_err(|err| PublishError(err.into()))?;
        Ok(())
    }
}
