//! SQS adapter of [`PaymentDueSink`]: `PaymentDue` events onto the payment-timeout queue.

use crate::config::{ConfigError, Env};
use crate::events::{Envelope, PAYMENT_DUE, PaymentDue};
use crate::queue::Queue;
use crate::seckill::order::{DueOrder, PaymentDueError, PaymentDueSink};
use anyhow::Context;
use async_trait::async_trait;

/// `PaymentDue` events on the payment-timeout queue, whose own `DelaySeconds` is the
/// payment window.
#[derive(Clone, Debug)]
pub struct SqsPaymentDueSink {
    queue: Queue,
}

impl SqsPaymentDueSink {
    pub fn new(queue: Queue) -> Self {
        Self { queue }
    }

    /// The queue named by `ORDER_TIMEOUT_QUEUE_URL`.
    pub fn from_env(env: &Env, client: aws_sdk_sqs::Client) -> Result<Self, ConfigError> {
        Queue::from_env(env, client, "ORDER_TIMEOUT_QUEUE_URL").map(Self::new)
    }
}

#[async_trait]
impl PaymentDueSink for SqsPaymentDueSink {
    #[tracing::instrument(level = "debug", skip(self))]
    async fn payment_due(&self, due: &DueOrder) -> Result<(), PaymentDueError> {
        let envelope = Envelope {
            kind: PAYMENT_DUE.to_owned(),
            version: 1,
            id: uuid::Uuid::new_v4().to_string(),
            occurred_at: crate::clock::now_rfc3339(),
            payload: PaymentDue::from(due),
        };
        self.queue
            .send(&envelope, None)
            .await
            .context("failed to send PaymentDue")?;
        Ok(())
    }
}
