//! SQS adapter of [`OrderPublisher`]: one `SendMessage` of `OrderPlaced` to the order queue.

use crate::config::{ConfigError, Env};
use crate::events::{Envelope, OrderPlaced};
use crate::queue::Queue;
use crate::seckill::admission::{OrderPublisher, PublishError};
use async_trait::async_trait;

/// The order queue.
#[derive(Clone, Debug)]
pub struct SqsOrderPublisher {
    queue: Queue,
}

impl SqsOrderPublisher {
    pub fn new(queue: Queue) -> Self {
        Self { queue }
    }

    /// The queue named by `ORDER_QUEUE_URL`.
    pub fn from_env(env: &Env, client: aws_sdk_sqs::Client) -> Result<Self, ConfigError> {
        Queue::from_env(env, client, "ORDER_QUEUE_URL").map(Self::new)
    }
}

#[async_trait]
impl OrderPublisher for SqsOrderPublisher {
    async fn order_placed(&self, event: &Envelope<OrderPlaced>) -> Result<(), PublishError> {
        self.queue
            .send(event, None)
            .await
            .map_err(|err| PublishError(err.into()))?;
        Ok(())
    }
}
