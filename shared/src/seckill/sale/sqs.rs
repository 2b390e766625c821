//! SQS adapter of [`PageRequests`] for publish-sale: a page is asked for as
//! `SalePageRequested` (the sale's id, nothing else) on the page queue, for the page writer
//! (`sale-page-writer`, [`crate::seckill::sale::page::write_batch`]), which renders it from the commerce
//! table and stores it in S3. publish-sale thus links the SQS client, not the S3 one.

use crate::config::{ConfigError, Env};
use crate::events::{Envelope, SALE_PAGE_REQUESTED, SalePageRequested};
use crate::ids::SaleId;
use crate::queue::Queue;
use crate::seckill::sale::page::{PageError, PageRequests};
use async_trait::async_trait;

/// The page writer's queue.
#[derive(Clone, Debug)]
pub struct QueuedPageRequests {
    queue: Queue,
}

impl QueuedPageRequests {
    pub fn new(queue: Queue) -> Self {
        Self { queue }
    }

    /// The queue named by `SALE_PAGE_QUEUE_URL`.
    pub fn from_env(env: &Env, client: aws_sdk_sqs::Client) -> Result<Self, ConfigError> {
        Queue::from_env(env, client, "SALE_PAGE_QUEUE_URL").map(Self::new)
    }
}

/// The `SalePageRequested` v1 envelope of sale `id`.
pub fn page_requested(id: &SaleId) -> Envelope<SalePageRequested> {
    Envelope {
        kind: SALE_PAGE_REQUESTED.to_owned(),
        version: 1,
        id: uuid::Uuid::now_v7().to_string(),
        occurred_at: crate::clock::now_rfc3339(),
        payload: SalePageRequested {
            sale_id: id.to_string(),
        },
    }
}

#[async_trait]
impl PageRequests for QueuedPageRequests {
    #[tracing::instrument(level = "debug", skip(self))]
    async fn request(&self, id: &SaleId) -> Result<(), PageError> {
        self.queue
            .send(&page_requested(id), None)
            .await
            .map(|_| ())
            .map_err(|err| {
                PageError(anyhow::Error::new(err).context("failed to ask for a sale page"))
            })
    }
}
