//! The one closed load loop: `concurrency` workers, each sending its next request as soon as
//! its previous one is answered, until `requests` have been sent or `duration` has passed.
//! What a request is (HTTP on a keep-alive connection, a Redis script call) is the
//! [`Worker`]'s business; the loop hands out indexes, times each send and keeps every sample.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How far a closed loop goes: whichever of `requests` and `duration` comes first.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    pub concurrency: usize,
    pub requests: u64,
    pub duration: Duration,
}

/// One worker of a closed loop: it owns what it sends on (a connection, a client).
pub trait Worker: Send + 'static {
    type Request: Send;
    type Answer: Send + 'static;

    /// Builds request `index`, outside the timed part; `None` ends this worker early.
    fn prepare(&mut self, index: u64) -> Option<Self::Request>;

    /// Sends the request and waits for its answer: the timed part.
    fn send(&mut self, request: Self::Request) -> impl Future<Output = Self::Answer> + Send;
}

/// One request of a loop.
#[derive(Clone, Debug)]
pub struct Sample<A> {
    /// Its index, `0..requests`, in the order the workers took them.
    pub index: u64,
    /// From send to answer, in microseconds.
    pub micros: u64,
    /// When the answer came, in microseconds since the loop started.
    pub done_micros: u64,
    pub answer: A,
}

/// What a loop did.
#[derive(Debug)]
pub struct Run<A> {
    /// Every request sent, grouped by worker.
    pub samples: Vec<Sample<A>>,
    /// Why each worker that could not start did not (it sent nothing and took no index).
    pub failed_workers: Vec<String>,
    /// From the start of the loop (workers starting included) to its last answer.
    pub seconds: f64,
}

/// Runs the loop: `start(w)` makes worker `w` of `0..concurrency`, on its own task.
pub async fn closed_loop<W, S, Fut>(bounds: Bounds, start: S) -> anyhow::Result<Run<W::Answer>>
where
    W: Worker,
    S: Fn(usize) -> Fut,
    Fut: Future<Output = anyhow::Result<W>> + Send + 'static,
{
    let issued = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    // No deadline only when `duration` is too long to add to now.
    let deadline = started.checked_add(bounds.duration);
    let mut workers = Vec::with_capacity(bounds.concurrency);
    for w in 0..bounds.concurrency {
        let (issued, starting) = (issued.clone(), start(w));
        workers.push(tokio::spawn(async move {
            let mut worker = match starting.await {
                Ok(worker) => worker,
                Err(err) => return Err(err.to_string()),
            };
            let mut samples = Vec::new();
            loop {
                let index = issued.fetch_add(1, Ordering::Relaxed);
                if index >= bounds.requests || deadline.is_some_and(|d| Instant::now() >= d) {
                    break;
                }
                let Some(request) = worker.prepare(index) else {
                    break;
                };
                let sent = Instant::now();
                let answer = worker.send(request).await;
                samples.push(Sample {
                    index,
                    micros: sent.elapsed().as_micros() as u64,
                    done_micros: started.elapsed().as_micros() as u64,
                    answer,
                });
            }
            Ok(samples)
        }));
    }
    let mut run = Run {
        samples: Vec::new(),
        failed_workers: Vec::new(),
        seconds: 0.0,
    };
    for worker in workers {
        match worker.await? {
            Ok(samples) => run.samples.extend(samples),
            Err(err) => run.failed_workers.push(err),
        }
    }
    run.seconds = started.elapsed().as_secs_f64();
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    /// Answers its worker number after `pause`; `stop_at` ends it early.
    struct Fake {
        number: usize,
        pause: Duration,
        stop_at: Option<u64>,
        in_flight: Arc<AtomicUsize>,
        most_in_flight: Arc<AtomicUsize>,
    }

    impl Worker for Fake {
        type Request = u64;
        type Answer = usize;

        fn prepare(&mut self, index: u64) -> Option<u64> {
            (self.stop_at != Some(index)).then_some(index)
        }

        async fn send(&mut self, _index: u64) -> usize {
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.most_in_flight.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(self.pause).await;
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            self.number
        }
    }

    fn bounds(concurrency: usize, requests: u64, duration: Duration) -> Bounds {
        Bounds {
            concurrency,
            requests,
            duration,
        }
    }

    async fn fakes(bounds: Bounds, pause: Duration, stop_at: Option<u64>) -> (Run<usize>, usize) {
        let in_flight = Arc::new(AtomicUsize::new(0));
        let most_in_flight = Arc::new(AtomicUsize::new(0));
        let run = closed_loop(bounds, |number| {
            let fake = Fake {
                number,
                pause,
                stop_at,
                in_flight: in_flight.clone(),
                most_in_flight: most_in_flight.clone(),
            };
            async move { Ok(fake) }
        })
        .await
        .unwrap();
        (run, most_in_flight.load(Ordering::SeqCst))
    }

    #[tokio::test]
    async fn sends_each_index_once_up_to_the_count_with_as_many_in_flight_as_workers() {
        let bounds = bounds(4, 40, Duration::from_secs(60));
        let (run, most_in_flight) = fakes(bounds, Duration::from_millis(5), None).await;
        let mut indexes: Vec<u64> = run.samples.iter().map(|s| s.index).collect();
        indexes.sort_unstable();
        assert_eq!(indexes, (0..40).collect::<Vec<_>>());
        assert_eq!(most_in_flight, 4);
        let workers: std::collections::BTreeSet<usize> =
            run.samples.iter().map(|s| s.answer).collect();
        assert_eq!(workers, (0..4).collect());
        for sample in &run.samples {
            assert!(
                sample.micros >= 5_000,
                "the latency is the send's: {sample:?}"
            );
            assert!(sample.done_micros >= sample.micros, "{sample:?}");
        }
        assert!(run.failed_workers.is_empty());
    }

    #[tokio::test]
    async fn stops_at_the_deadline_before_the_count() {
        let bounds = bounds(2, 1_000_000, Duration::from_millis(200));
        let (run, _) = fakes(bounds, Duration::from_millis(10), None).await;
        // About 2 x 200 / 10 requests: bounded by time, far from the count.
        assert!(
            (10..=60).contains(&run.samples.len()),
            "{}",
            run.samples.len()
        );
        assert!(run.seconds < 1.0, "{}", run.seconds);
    }

    #[tokio::test]
    async fn a_worker_that_prepares_nothing_ends() {
        let bounds = bounds(1, 100, Duration::from_secs(60));
        let (run, _) = fakes(bounds, Duration::ZERO, Some(7)).await;
        assert_eq!(run.samples.len(), 7);
    }

    #[tokio::test]
    async fn a_worker_that_cannot_start_takes_no_index() {
        let bounds = bounds(3, 10, Duration::from_secs(60));
        let run = closed_loop(bounds, |number| async move {
            anyhow::ensure!(number != 1, "worker {number} has no connection");
            Ok(Fake {
                number,
                pause: Duration::ZERO,
                stop_at: None,
                in_flight: Arc::default(),
                most_in_flight: Arc::default(),
            })
        })
        .await
        .unwrap();
        assert_eq!(run.samples.len(), 10);
        assert!(run.samples.iter().all(|s| s.answer != 1));
        assert_eq!(run.failed_workers, ["worker 1 has no connection"]);
    }
}
