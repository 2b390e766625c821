//! SQS adapter: send, receive and delete JSON messages on one queue.

use crate::seckill::admission::seal::{SEAL_ATTRIBUTE, Seal};
use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::{MessageAttributeValue, MessageSystemAttributeName};
use serde::Serialize;
use std::time::Duration;

/// Why a queue operation failed.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("failed to serialize the message")]
    Serialize(#[source] serde_json::Error),
    #[error("failed to build a message attribute")]
    Attribute(#[source] aws_sdk_sqs::error::BuildError),
    #[error("SQS {action} failed")]
    Sdk {
        action: &'static str,
        #[source]
        source: Box<aws_sdk_sqs::Error>,
    },
}

impl QueueError {
    fn sdk(action: &'static str, err: impl Into<aws_sdk_sqs::Error>) -> Self {
        Self::Sdk {
            action,
            source: Box::new(err.into()),
        }
    }
}

/// A message taken from a queue; it comes back unless deleted before its visibility timeout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Received {
    pub message_id: String,
    pub receipt_handle: String,
    pub body: String,
    /// How many times SQS has handed this message out, this time included.
    pub receive_count: u32,
}

/// One SQS queue, by URL.
#[derive(Clone, Debug)]
pub struct Queue {
    client: Client,
    url: String,
}

impl Queue {
    pub fn new(client: Client, url: impl Into<String>) -> Self {
        Self {
            client,
            url: url.into(),
        }
    }

    /// The queue whose URL is in the variable `name`.
    pub fn from_env(
        env: &crate::config::Env,
        client: Client,
        name: &str,
    ) -> Result<Self, crate::config::ConfigError> {
        Ok(Self::new(client, env.required(name)?))
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Sends one JSON message, visible after `delay` (SQS allows at most 15 minutes).
    /// Returns the message id.
    pub async fn send<T: Serialize + ?Sized>(
        &self,
        message: &T,
        delay: Option<Duration>,
    ) -> Result<String, QueueError> {
        self.send_with(message, delay, None).await
    }

    /// [`Self::send`], its body sealed with `seal` in the message attribute
    /// [`SEAL_ATTRIBUTE`].
    pub async fn send_sealed<T: Serialize + ?Sized>(
        &self,
        message: &T,
        seal: &Seal,
    ) -> Result<String, QueueError> {
        self.send_with(message, None, Some(seal)).await
    }

    #[tracing::instrument(level = "debug", skip_all, fields(queue = %self.url))]
    async fn send_with<T: Serialize + ?Sized>(
        &self,
        message: &T,
        delay: Option<Duration>,
        seal: Option<&Seal>,
    ) -> Result<String, QueueError> {
        let body = serde_json::to_string(message).map_err(QueueError::Serialize)?;
        let delay = delay.map(|d| i32::try_from(d.as_secs()).unwrap_or(i32::MAX));
        let seal = seal
            .map(|seal| {
                MessageAttributeValue::builder()
                    .data_type("String")
                    .string_value(seal.sign(&body))
                    .build()
            })
            .transpose()
            .map_err(QueueError::Attribute)?;
        let mut request = self
            .client
            .send_message()
            .queue_url(&self.url)
            .message_body(body)
            .set_delay_seconds(delay);
        if let Some(seal) = seal {
            request = request.message_attributes(SEAL_ATTRIBUTE, seal);
        }
        let output = request
            .send()
            .await
            .map_err(|err| QueueError::sdk("SendMessage", err))?;
        Ok(output.message_id.unwrap_or_default())
    }

    /// Receives up to `max` (1..=10) messages, long-polling for up to `wait` (at most 20 s).
    /// The long poll is given its own attempt timeout: the shared one
    /// ([`crate::cloud::ATTEMPT_TIMEOUT`]) is shorter than a long poll.
    #[tracing::instrument(level = "debug", skip_all, fields(queue = %self.url))]
    pub async fn receive(&self, max: i32, wait: Duration) -> Result<Vec<Received>, QueueError> {
        let wait = wait.min(Duration::from_secs(20));
        let timeouts = aws_sdk_sqs::config::timeout::TimeoutConfig::builder()
            .operation_attempt_timeout(wait + crate::cloud::ATTEMPT_TIMEOUT)
            .operation_timeout(wait + crate::cloud::OPERATION_TIMEOUT)
            .build();
        let output = self
            .client
            .receive_message()
            .queue_url(&self.url)
            .max_number_of_messages(max.clamp(1, 10))
            .wait_time_seconds(i32::try_from(wait.as_secs()).unwrap_or(20))
            .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
            .customize()
            .config_override(aws_sdk_sqs::config::Builder::new().timeout_config(timeouts))
            .send()
            .await
            .map_err(|err| QueueError::sdk("ReceiveMessage", err))?;
        Ok(output
            .messages
            .unwrap_or_default()
            .into_iter()
            .map(|message| {
                let receive_count = message
                    .attributes
                    .as_ref()
                    .and_then(|attrs| {
                        attrs.get(&MessageSystemAttributeName::ApproximateReceiveCount)
                    })
                    .and_then(|count| count.parse().ok())
                    .unwrap_or(1);
                Received {
                    message_id: message.message_id.unwrap_or_default(),
                    receipt_handle: message.receipt_handle.unwrap_or_default(),
                    body: message.body.unwrap_or_default(),
                    receive_count,
                }
            })
            .collect())
    }

    /// Deletes a received message so that it is not delivered again.
    #[tracing::instrument(level = "debug", skip_all, fields(queue = %self.url))]
    pub async fn delete(&self, receipt_handle: &str) -> Result<(), QueueError> {
        self.client
            .delete_message()
            .queue_url(&self.url)
            .receipt_handle(receipt_handle)
            .send()
            .await
            .map_err(|err| QueueError::sdk("DeleteMessage", err))?;
        Ok(())
    }

    /// How many messages the queue holds: visible, in flight and delayed (SQS's approximate
    /// counts, which settle within about a minute).
    #[tracing::instrument(level = "debug", skip_all, fields(queue = %self.url))]
    pub async fn depth(&self) -> Result<u32, QueueError> {
        use aws_sdk_sqs::types::QueueAttributeName as Name;
        let attributes = self
            .client
            .get_queue_attributes()
            .queue_url(&self.url)
            .attribute_names(Name::ApproximateNumberOfMessages)
            .attribute_names(Name::ApproximateNumberOfMessagesNotVisible)
            .attribute_names(Name::ApproximateNumberOfMessagesDelayed)
            .send()
            .await
            .map_err(|err| QueueError::sdk("GetQueueAttributes", err))?
            .attributes
            .unwrap_or_default();
        Ok(attributes
            .values()
            .map(|count| count.parse::<u32>().unwrap_or(0))
            .sum())
    }
}
