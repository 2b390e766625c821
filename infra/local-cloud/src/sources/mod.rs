//! The event sources that `sam local` cannot run: SQS queues, DynamoDB Streams and
//! schedules, each polling as Lambda's event source mappings do and invoking the function's
//! real binary through the runtime.

mod filter;
mod schedule;
mod sqs;
mod streams;

pub use filter::matches_any;
pub use schedule::{Schedule, ScheduleError};

use crate::model::{EventSpec, FunctionSpec};
use crate::runtime::FunctionHandle;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The clients and names the pollers need.
#[derive(Clone, Debug)]
pub struct SourceContext {
    pub sqs: aws_sdk_sqs::Client,
    pub dynamodb: aws_sdk_dynamodb::Client,
    pub streams: aws_sdk_dynamodbstreams::Client,
    pub region: String,
    pub account_id: String,
    /// The live fault switches (duplicate SQS delivery).
    pub faults: std::sync::Arc<crate::faults::Faults>,
    /// Where the stream pollers record the age of what they hand over.
    pub dashboard: std::sync::Arc<crate::dashboard::Dashboard>,
}

/// A function with the events that drive it, and how many instances it runs.
pub struct Subscriber {
    pub spec: FunctionSpec,
    pub handle: FunctionHandle,
    pub instances: u32,
}

/// The running pollers; [`Sources::stop`] ends them.
pub struct Sources {
    tasks: Vec<JoinHandle<()>>,
    stop: watch::Sender<bool>,
}

/// A stop signal that pollers check between polls.
#[derive(Clone)]
pub(crate) struct Stop(watch::Receiver<bool>);

impl Stop {
    pub(crate) fn is_set(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once stop is signalled.
    pub(crate) async fn stopped(&mut self) {
        let _ = self.0.wait_for(|stop| *stop).await;
    }

    /// Sleeps for `duration` unless stopped first; answers whether it was stopped.
    pub(crate) async fn sleep(&mut self, duration: Duration) -> bool {
        let stopped = tokio::select! {
            _ = tokio::time::sleep(duration) => false,
            _ = self.0.wait_for(|stop| *stop) => true,
        };
        stopped || self.is_set()
    }
}

impl Sources {
    /// Starts a poller for every enabled SQS, stream and schedule event.
    pub fn start(subscribers: &[Subscriber], context: &SourceContext) -> Self {
        let (stop, receiver) = watch::channel(false);
        let mut tasks = Vec::new();
        for subscriber in subscribers {
            for event in &subscriber.spec.events {
                let stop = Stop(receiver.clone());
                let function = subscriber.handle.clone();
                let context = context.clone();
                match event {
                    EventSpec::Sqs(source) if source.enabled => {
                        // Lambda runs up to MaximumConcurrency batches at once; locally no more
                        // than the function has instances, or batches would only queue.
                        let pollers = source
                            .maximum_concurrency
                            .unwrap_or(subscriber.instances)
                            .clamp(1, subscriber.instances.max(1));
                        for _ in 0..pollers {
                            let (source, function) = (source.clone(), function.clone());
                            let poll = sqs::poll(source, function, context.clone(), stop.clone());
                            tasks.push(tokio::spawn(poll));
                        }
                    }
                    EventSpec::Stream(source) if source.enabled => {
                        let poll = streams::poll(source.clone(), function, context, stop);
                        tasks.push(tokio::spawn(poll));
                    }
                    EventSpec::Schedule(source) if source.enabled => {
                        let run = schedule::run(source.clone(), function, context, stop);
                        tasks.push(tokio::spawn(run));
                    }
                    _ => {}
                }
            }
        }
        Self { tasks, stop }
    }

    /// Stops every poller and waits for the batches in flight.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
    }
}
