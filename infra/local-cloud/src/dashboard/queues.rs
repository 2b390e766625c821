//! Queue depths: every queue of the template sampled once a second (visible and in flight
//! messages), but only while someone watches the dashboard, so that an idle runner or a
//! benchmark sends the emulator nothing extra.

use super::window::{Slot, Window, now_second};
use crate::model::Model;
use aws_sdk_sqs::types::QueueAttributeName;
use std::sync::{Mutex, PoisonError};

#[derive(Default, Clone, Copy)]
struct Second {
    visible: u64,
    in_flight: u64,
}

impl Slot for Second {
    fn reset(&mut self) {
        *self = Self::default();
    }
}

/// One queue's samples.
pub(crate) struct QueueStats {
    logical_id: String,
    url: String,
    /// A dead-letter queue: some queue's `RedrivePolicy` names it.
    dlq: bool,
    window: Mutex<Window<Second>>,
}

#[derive(serde::Serialize, Debug)]
pub(crate) struct QueueView {
    pub(crate) name: String,
    pub(crate) dlq: bool,
    pub(crate) seconds: Vec<QueueSecond>,
}

#[derive(serde::Serialize, Debug)]
pub(crate) struct QueueSecond {
    pub(crate) t: u64,
    pub(crate) visible: u64,
    #[serde(rename = "inFlight")]
    pub(crate) in_flight: u64,
}

/// The template's queues, DLQs marked.
pub(crate) fn of(model: &Model) -> Vec<QueueStats> {
    let dlqs: Vec<&str> = model
        .queues
        .iter()
        .filter_map(|queue| crate::replay::queue_and_dlq(model, &queue.logical_id).ok())
        .map(|(_, dlq)| dlq.logical_id.as_str())
        .collect();
    model
        .queues
        .iter()
        .map(|queue| QueueStats {
            logical_id: queue.logical_id.clone(),
            url: queue.url.clone(),
            dlq: dlqs.contains(&queue.logical_id.as_str()),
            window: Mutex::default(),
        })
        .collect()
}

impl QueueStats {
    /// Asks SQS for the queue's depth now and records it.
    pub(crate) async fn sample(&self, sqs: &aws_sdk_sqs::Client) {
        let answer = sqs
            .get_queue_attributes()
            .queue_url(&self.url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await;
        let attributes = match answer {
            Ok(output) => output.attributes.unwrap_or_default(),
            Err(error) => {
                tracing::debug!(queue = %self.logical_id, error = ?aws_sdk_sqs::Error::from(error), "sampling the queue failed");
                return;
            }
        };
        let number = |name: QueueAttributeName| {
            attributes
                .get(&name)
                .and_then(|value| value.parse::<u64>().ok())
                .unwrap_or(0)
        };
        let sample = Second {
            visible: number(QueueAttributeName::ApproximateNumberOfMessages),
            in_flight: number(QueueAttributeName::ApproximateNumberOfMessagesNotVisible),
        };
        let mut window = self.window.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(slot) = window.at(now_second()) {
            *slot = sample;
        }
    }

    pub(crate) fn view(&self, now: u64) -> QueueView {
        let window = self.window.lock().unwrap_or_else(PoisonError::into_inner);
        QueueView {
            name: self.logical_id.clone(),
            dlq: self.dlq,
            seconds: window
                .recent(now)
                .map(|(t, second)| QueueSecond {
                    t,
                    visible: second.visible,
                    in_flight: second.in_flight,
                })
                .collect(),
        }
    }
}
