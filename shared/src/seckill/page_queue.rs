//! SQS adapter of [`SalePages`] for publish-sale: a page is queued as `SalePageRendered` for
//! the page writer (`sale-page-writer`, [`super::sale_page::write_batch`]), which stores it in
//! S3. publish-sale thus links the SQS client, not the S3 one.

use super::sale_page::{PageError, SalePages};
use crate::config::{ConfigError, Env};
use crate::events::{Envelope, SALE_PAGE_RENDERED, SalePageRendered};
use crate::ids::SaleId;
use crate::queue::Queue;
use async_trait::async_trait;

/// The page writer's queue.
#[derive(Clone, Debug)]
pub struct QueuedSalePages {
    queue: Queue,
}

impl QueuedSalePages {
    pub fn new(queue: Queue) -> Self {
        Self { queue }
    }

    /// The queue named by `SALE_PAGE_QUEUE_URL`.
    pub fn from_env(env: &Env, client: aws_sdk_sqs::Client) -> Result<Self, ConfigError> {
        Queue::from_env(env, client, "SALE_PAGE_QUEUE_URL").map(Self::new)
    }
}

#[async_trait]
impl SalePages for QueuedSalePages {
    #[tracing::instrument(level = "debug", skip(self, html))]
    async fn put(&self, id: &SaleId, html: String) -> Result<(), PageError> {
        let envelope = Envelope {
            kind: SALE_PAGE_RENDERED.to_owned(),
            version: 1,
            id: uuid::Uuid::now_v7().to_string(),
            occurred_at: crate::clock::now_rfc3339(),
            payload: SalePageRendered {
                sale_id: id.to_string(),
                html,
            },
        };
        self.queue
            .send(&envelope, None)
            .await
            .map(|_| ())
            .map_err(|err| {
                PageError(anyhow::Error::new(err).context("failed to queue a sale page"))
            })
    }
}
