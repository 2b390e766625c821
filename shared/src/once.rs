//! Apply a batch of effects once: one transaction per aggregate with a conditional marker
//! per effect (`attribute_not_exists`) and one aggregated write, dropping the effects whose
//! marker says they were already applied and committing the rest again.
//!
//! Both social consumers and the mark-read route use it: the follower count (marker = the
//! event, aggregate = the profile's `followerCount`), notifications (marker = the original
//! system's unique key, aggregate = the unread count) and marking read (marker = the
//! notification being unread, aggregate = the unread count). The aggregate is written once
//! per commit, which is what keeps a celebrity's hot item under its write limit.
//!
//! The order consumer (rejections) and the payment-timeout consumer (cancellations) commit
//! their orders the same way. Every commit goes through one port call ([`Through`]), and the
//! port says how many units one call takes: the domain never sizes a batch from DynamoDB's
//! limits itself.

use async_trait::async_trait;
use futures_util::future::BoxFuture;

use crate::emf;

/// One effect, identified by its marker; `messages` are the queue messages that carry it
/// (a duplicate delivery in the same batch adds a message, not an effect).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unit<P> {
    pub marker: String,
    pub messages: Vec<String>,
    pub payload: P,
}

impl<P> Unit<P> {
    pub fn new(marker: impl Into<String>, message: impl Into<String>, payload: P) -> Self {
        Self {
            marker: marker.into(),
            messages: vec![message.into()],
            payload,
        }
    }
}

/// Why a commit did not happen.
#[derive(Debug, thiserror::Error)]
pub enum Rejected {
    /// The markers of the units at these indices exist: those effects are already applied.
    /// All of them at once, so that a redelivered batch costs one more commit, not one per
    /// unit.
    #[error("units {0:?} were already applied")]
    AlreadyApplied(Vec<usize>),
    /// The aggregate's condition does not hold (yet); nothing was written.
    #[error("the aggregate's condition does not hold")]
    Aggregate,
    /// Anything else (throttling, conflict, network): retrying later may succeed.
    #[error("the commit failed")]
    Failed(#[source] anyhow::Error),
}

/// Writes some units and their aggregate in one transaction, all or nothing.
#[async_trait]
pub trait Commit<P: Sync>: Send + Sync {
    /// How many units one [`Self::commit`] takes at most: what the port says its call takes.
    fn max_units(&self) -> usize;

    async fn commit(&self, units: &[Unit<P>]) -> Result<(), Rejected>;
}

/// A [`Commit`] through one call of a port: `call(port, context, units)`, which takes at
/// most `max_units` units (what the port says). The one shape of every commit of the domain.
pub struct Through<'a, S: ?Sized, C, P> {
    pub port: &'a S,
    /// What the call needs besides the units: the followee, the recipient, the sale.
    pub context: C,
    pub max_units: usize,
    pub call: PortCall<S, C, P>,
}

/// The call of [`Through`]: a port method that takes the units, as `async_trait` makes it.
pub type PortCall<S, C, P> =
    for<'u> fn(&'u S, &'u C, &'u [Unit<P>]) -> BoxFuture<'u, Result<(), Rejected>>;

#[async_trait]
impl<S: ?Sized + Sync, C: Send + Sync, P: Sync> Commit<P> for Through<'_, S, C, P> {
    fn max_units(&self) -> usize {
        self.max_units
    }

    async fn commit(&self, units: &[Unit<P>]) -> Result<(), Rejected> {
        (self.call)(self.port, &self.context, units).await
    }
}

/// What became of each unit.
#[derive(Debug)]
pub struct Outcome<P> {
    pub applied: Vec<Unit<P>>,
    pub already_applied: Vec<Unit<P>>,
    /// Not applied; their messages must come back.
    pub failed: Vec<Unit<P>>,
}

impl<P> Outcome<P> {
    /// The messages to report failed.
    pub fn failed_messages(&self) -> impl Iterator<Item = String> + '_ {
        self.failed
            .iter()
            .flat_map(|unit| unit.messages.iter().cloned())
    }
}

/// Merges units with the same marker: the first keeps its payload, the others add their
/// messages (a transaction may not name one item twice).
pub fn merge<P>(units: Vec<Unit<P>>) -> Vec<Unit<P>> {
    let mut merged: Vec<Unit<P>> = Vec::with_capacity(units.len());
    for unit in units {
        match merged.iter_mut().find(|kept| kept.marker == unit.marker) {
            Some(kept) => kept.messages.extend(unit.messages),
            None => merged.push(unit),
        }
    }
    merged
}

/// A transaction item's label that may name a unit (by its index in the commit).
pub trait UnitLabel {
    fn unit(&self) -> Option<usize>;
}

/// The indices of the units among a cancellation's failed labels: the units already applied.
pub fn unit_indices<L: UnitLabel>(labels: &[L]) -> Vec<usize> {
    labels.iter().filter_map(UnitLabel::unit).collect()
}

/// The indices of the units for which `applied` holds: what a store reports as
/// [`Rejected::AlreadyApplied`].
pub fn indices_where<P>(units: &[Unit<P>], applied: impl Fn(&Unit<P>) -> bool) -> Vec<usize> {
    units
        .iter()
        .enumerate()
        .filter(|(_, unit)| applied(unit))
        .map(|(i, _)| i)
        .collect()
}

/// [`Rejected::AlreadyApplied`] with the units for which `applied` holds, if any: how a
/// store refuses a commit that would apply a unit twice.
pub fn refuse_applied<P>(
    units: &[Unit<P>],
    applied: impl Fn(&Unit<P>) -> bool,
) -> Result<(), Rejected> {
    let indices = indices_where(units, applied);
    match indices.is_empty() {
        true => Ok(()),
        false => Err(Rejected::AlreadyApplied(indices)),
    }
}

/// Removes the items at `indices` from `items` and answers them, in their order.
pub fn take_indices<T>(items: &mut Vec<T>, indices: &[usize]) -> Vec<T> {
    let (taken, kept): (Vec<_>, Vec<_>) = std::mem::take(items)
        .into_iter()
        .enumerate()
        .partition(|(i, _)| indices.contains(i));
    *items = kept.into_iter().map(|(_, item)| item).collect();
    taken.into_iter().map(|(_, item)| item).collect()
}

/// Adds `unit` to the group of `key` (the aggregate it goes to: a followee, a recipient, a
/// sale), making the group when it is the first; groups stay in order of first appearance.
pub fn group<K: PartialEq, P>(groups: &mut Vec<(K, Vec<Unit<P>>)>, key: K, unit: Unit<P>) {
    match groups.iter_mut().find(|(seen, _)| *seen == key) {
        Some((_, units)) => units.push(unit),
        None => groups.push((key, vec![unit])),
    }
}

/// Applies each group's units once through the commit that `target` makes of its key. The
/// groups are independent items, so their commits go side by side; answers the messages to
/// retry.
pub async fn apply_groups<K, P: Sync, C: Commit<P>>(
    groups: Vec<(K, Vec<Unit<P>>)>,
    target: impl Fn(K) -> C,
) -> Vec<String> {
    let outcomes = crate::consumer::join_all(groups.into_iter().map(|(key, units)| {
        let target = target(key);
        async move { apply_once(units, &target).await }
    }))
    .await;
    outcomes.iter().flat_map(Outcome::failed_messages).collect()
}

/// Applies `units` through `store`, at most [`Commit::max_units`] per transaction; counts
/// the applied and the duplicates (already applied, or the same marker twice in `units`) as
/// [`emf::applied`].
pub async fn apply_once<P: Sync>(units: Vec<Unit<P>>, store: &dyn Commit<P>) -> Outcome<P> {
    let given = units.len();
    let outcome = apply_merged(merge(units), store).await;
    let merged =
        given - outcome.applied.len() - outcome.already_applied.len() - outcome.failed.len();
    emf::applied(
        outcome.applied.len(),
        outcome.already_applied.len() + merged,
    );
    outcome
}

/// [`apply_once`] of units with distinct markers.
async fn apply_merged<P: Sync>(mut rest: Vec<Unit<P>>, store: &dyn Commit<P>) -> Outcome<P> {
    let max_per_commit = store.max_units();
    let mut outcome = Outcome {
        applied: Vec::new(),
        already_applied: Vec::new(),
        failed: Vec::new(),
    };
    while !rest.is_empty() {
        let tail = rest.split_off(rest.len().min(max_per_commit.max(1)));
        let mut chunk = std::mem::replace(&mut rest, tail);
        // Each rejection removes at least one unit, so this ends.
        loop {
            if chunk.is_empty() {
                break;
            }
            match store.commit(&chunk).await {
                Ok(()) => {
                    outcome.applied.append(&mut chunk);
                    break;
                }
                Err(Rejected::AlreadyApplied(indices))
                    if !indices.is_empty() && indices.iter().all(|i| *i < chunk.len()) =>
                {
                    outcome
                        .already_applied
                        .extend(take_indices(&mut chunk, &indices));
                }
                Err(Rejected::Aggregate) => {
                    tracing::info!(units = chunk.len(), "aggregate condition not met yet");
                    outcome.failed.append(&mut chunk);
                    break;
                }
                Err(err) => {
                    tracing::error!(error = ?anyhow::Error::from(err), units = chunk.len(), "commit failed");
                    outcome.failed.append(&mut chunk);
                    break;
                }
            }
        }
    }
    outcome
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::Mutex;

    /// The applied markers of a fake store, with the semantics of the adapters'
    /// transactions: a commit with a unit applied before is refused whole; else `write` runs,
    /// and the markers are recorded with what it wrote.
    #[derive(Default)]
    pub(crate) struct Markers(Mutex<HashSet<String>>);

    impl Markers {
        pub(crate) fn commit<P>(
            &self,
            units: &[Unit<P>],
            write: impl FnOnce() -> Result<(), Rejected>,
        ) -> Result<(), Rejected> {
            let mut markers = self.0.lock().unwrap();
            refuse_applied(units, |u| markers.contains(&u.marker))?;
            write()?;
            markers.extend(units.iter().map(|u| u.marker.clone()));
            Ok(())
        }
    }

    /// Markers and a sum in memory, with the semantics of the DynamoDB transaction.
    #[derive(Default)]
    pub(crate) struct MemoryCommit {
        pub markers: Markers,
        pub total: Mutex<i64>,
        pub commits: Mutex<u32>,
        pub attempts: Mutex<u32>,
        pub fail: Mutex<bool>,
    }

    #[async_trait]
    impl Commit<i64> for MemoryCommit {
        fn max_units(&self) -> usize {
            99
        }

        async fn commit(&self, units: &[Unit<i64>]) -> Result<(), Rejected> {
            *self.attempts.lock().unwrap() += 1;
            if *self.fail.lock().unwrap() {
                return Err(Rejected::Failed(anyhow::anyhow!("down")));
            }
            self.markers.commit(units, || {
                let mut total = self.total.lock().unwrap();
                let delta: i64 = units.iter().map(|u| u.payload).sum();
                if *total + delta < 0 {
                    return Err(Rejected::Aggregate);
                }
                *total += delta;
                *self.commits.lock().unwrap() += 1;
                Ok(())
            })
        }
    }

    fn units(spec: &[(&str, &str, i64)]) -> Vec<Unit<i64>> {
        spec.iter()
            .map(|(marker, message, delta)| Unit::new(*marker, *message, *delta))
            .collect()
    }

    #[tokio::test]
    async fn a_batch_is_applied_in_one_commit_and_a_redelivery_changes_nothing() {
        let store = MemoryCommit::default();
        let batch = units(&[("e1", "m1", 1), ("e2", "m2", 1), ("e3", "m3", -1)]);
        let outcome = apply_once(batch.clone(), &store).await;
        assert_eq!(outcome.applied.len(), 3);
        assert_eq!(*store.total.lock().unwrap(), 1);
        assert_eq!(*store.commits.lock().unwrap(), 1);

        let outcome = apply_once(batch, &store).await;
        assert!(outcome.applied.is_empty());
        assert_eq!(outcome.already_applied.len(), 3);
        assert_eq!(outcome.failed_messages().count(), 0);
        assert_eq!(*store.total.lock().unwrap(), 1);
    }

    #[tokio::test]
    async fn already_applied_units_are_dropped_and_the_rest_committed() {
        let store = MemoryCommit::default();
        apply_once(units(&[("e2", "m2", 1)]), &store).await;
        let outcome = apply_once(units(&[("e1", "m1", 1), ("e2", "m2", 1)]), &store).await;
        assert_eq!(outcome.applied[0].marker, "e1");
        assert_eq!(outcome.already_applied[0].marker, "e2");
        assert_eq!(*store.total.lock().unwrap(), 2);
    }

    #[tokio::test]
    async fn every_applied_unit_is_dropped_in_one_round() {
        let store = MemoryCommit::default();
        apply_once(units(&[("e1", "m1", 1), ("e3", "m3", 1)]), &store).await;
        let outcome = apply_once(
            units(&[
                ("e1", "m1", 1),
                ("e2", "m2", 1),
                ("e3", "m3", 1),
                ("e4", "m4", 1),
            ]),
            &store,
        )
        .await;
        let applied: Vec<&str> = outcome.applied.iter().map(|u| u.marker.as_str()).collect();
        let already: Vec<&str> = outcome
            .already_applied
            .iter()
            .map(|u| u.marker.as_str())
            .collect();
        assert_eq!(applied, ["e2", "e4"]);
        assert_eq!(already, ["e1", "e3"]);
        // The first commit, then one refused and one that went through.
        assert_eq!(*store.commits.lock().unwrap(), 2);
        assert_eq!(*store.attempts.lock().unwrap(), 3);
    }

    #[tokio::test]
    async fn duplicates_in_one_batch_are_one_unit_with_both_messages() {
        let store = MemoryCommit::default();
        let outcome = apply_once(units(&[("e1", "m1", 1), ("e1", "m2", 1)]), &store).await;
        assert_eq!(outcome.applied.len(), 1);
        assert_eq!(outcome.applied[0].messages, ["m1", "m2"]);
        assert_eq!(*store.total.lock().unwrap(), 1);
    }

    #[tokio::test]
    async fn a_rejected_aggregate_fails_every_message_of_the_commit() {
        let store = MemoryCommit::default();
        let outcome = apply_once(units(&[("e1", "m1", -1), ("e2", "m2", -1)]), &store).await;
        let failed: Vec<String> = outcome.failed_messages().collect();
        assert_eq!(failed, ["m1", "m2"]);
        assert_eq!(*store.total.lock().unwrap(), 0);
    }

    #[tokio::test]
    async fn large_batches_are_split_into_bounded_commits() {
        let store = MemoryCommit::default();
        let many: Vec<Unit<i64>> = (0..250)
            .map(|i| Unit::new(format!("e{i}"), format!("m{i}"), 1))
            .collect();
        let outcome = apply_once(many, &store).await;
        assert_eq!(outcome.applied.len(), 250);
        assert_eq!(*store.commits.lock().unwrap(), 3);
    }

    #[tokio::test]
    async fn an_infrastructure_failure_fails_the_units_for_a_retry() {
        let store = MemoryCommit::default();
        *store.fail.lock().unwrap() = true;
        let outcome = apply_once(units(&[("e1", "m1", 1)]), &store).await;
        assert_eq!(outcome.failed_messages().collect::<Vec<_>>(), ["m1"]);
    }
}
