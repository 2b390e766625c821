//! SQS adapter of the outbox relay's [`EventSink`] port: the consumers' queues, sent to in
//! batches.

use super::relay::{EventSink, SendFailed};
use crate::config::{ConfigError, Env};
use async_trait::async_trait;
use aws_sdk_sqs::types::SendMessageBatchRequestEntry;

/// A consumer's queue, sent to with `SendMessageBatch` (10 messages a call).
#[derive(Clone, Debug)]
pub struct SqsEventSink {
    client: aws_sdk_sqs::Client,
    url: String,
}

impl SqsEventSink {
    pub fn new(client: aws_sdk_sqs::Client, url: impl Into<String>) -> Self {
        Self {
            client,
            url: url.into(),
        }
    }

    /// The queue whose URL is in the variable `name`.
    pub fn from_env(
        env: &Env,
        client: aws_sdk_sqs::Client,
        name: &str,
    ) -> Result<Self, ConfigError> {
        Ok(Self::new(client, env.required(name)?))
    }
}

/// SQS takes at most this many messages per `SendMessageBatch`.
const SQS_BATCH: usize = 10;

#[async_trait]
impl EventSink for SqsEventSink {
    #[tracing::instrument(level = "debug", skip_all, fields(queue = %self.url, messages = bodies.len()))]
    async fn send_all(&self, bodies: &[&str]) -> Result<(), SendFailed> {
        for (chunk_index, chunk) in bodies.chunks(SQS_BATCH).enumerate() {
            let offset = chunk_index * SQS_BATCH;
            let entries = chunk
                .iter()
                .enumerate()
                .map(|(i, body)| {
                    SendMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .message_body(*body)
                        .build()
                        .expect("id and body are set")
                })
                .collect();
            let output = self
                .client
                .send_message_batch()
                .queue_url(&self.url)
                .set_entries(Some(entries))
                .send()
                .await
                .map_err(|err| SendFailed {
                    first_failed: offset,
                    cause: anyhow::Error::from(aws_sdk_sqs::Error::from(err))
                        .context("SQS SendMessageBatch failed"),
                })?;
            let first = output
                .failed()
                .iter()
                .filter_map(|failure| failure.id().parse::<usize>().ok())
                .min();
            if let Some(first) = first {
                return Err(SendFailed {
                    first_failed: offset + first,
                    cause: anyhow::anyhow!(
                        "SQS refused {} of {} messages",
                        output.failed().len(),
                        chunk.len()
                    ),
                });
            }
        }
        Ok(())
    }
}
