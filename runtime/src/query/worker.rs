//! A query as one worker of several: [`Query::start_worker`], for an executor that runs the
//! same query on many workers (the cluster executor, `punctual-cluster`) and carries what
//! crosses between them.
//!
//! Every worker builds the same query and starts it with its index. The query's driver is
//! split ([`Driver::split`]): each input runs on the worker that owns it
//! ([`Driver::owners`]), whose adapter alone is started; operators that need events together
//! get them from the other workers by the executor; the outputs are read on worker 0, whose
//! output adapters alone are started. Each worker's [`RunningQuery`] reports its own inputs'
//! counters and dead letters.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use punctual_core::ops::Edge;
use punctual_engine::Driver;

use super::shell::{Shell, WorkerSide};
use super::{check_runtime, Query, RunningQuery};
use crate::error::QueryError;

/// The executor's side of a worker: told, under the query's lock, when the inputs this worker
/// owns have sent something to the other workers, and when they have all ended.
pub trait Exchange: Send + Sync + 'static {
    /// Called after every call of this worker's inputs (or clock) into the driver: what the
    /// inputs released waits in the graph ([`Graph::take_injections`]) for the executor to
    /// take and carry.
    ///
    /// [`Graph::take_injections`]: punctual_core::ops::Graph::take_injections
    fn sent(&self, driver: &mut Driver);

    /// Every input this worker owns has ended (at once for a worker that owns none), after
    /// its last [`Exchange::sent`]: this worker sends nothing more of its own.
    fn ended(&self, driver: &mut Driver);

    /// What this worker's inputs have handed over that the executor has not taken yet, if
    /// the executor keeps count: the inputs wait while it is full, so that a worker whose
    /// inputs read faster than its operators run does not gather its whole input in memory.
    /// `None` (the default): they never wait for the executor.
    fn backlog(&self) -> Option<&Backlog> {
        None
    }
}

/// A count of the events a worker's inputs have sent that the executor has not taken yet,
/// with a limit: the inputs' calls into the query wait (and
/// [`try_enqueue_batch`](crate::InputContext::try_enqueue_batch) says `Full`) while the count
/// is over it, the executor's [`Backlog::take`] makes room. A call that finds room sends all
/// it has, so the count may pass the limit by one call's events.
///
/// ```
/// use punctual_runtime::Backlog;
///
/// let backlog = Backlog::new(100);
/// backlog.add(150);
/// assert!(backlog.is_full());
/// backlog.take(60);
/// assert!(!backlog.is_full()); // 90 of 100
/// ```
#[derive(Debug)]
pub struct Backlog {
    events: AtomicUsize,
    limit: usize,
    room: tokio::sync::Notify,
}

impl Backlog {
    /// An empty backlog whose inputs wait once more than `limit` events are in it.
    pub fn new(limit: usize) -> Self {
        Backlog {
            events: AtomicUsize::new(0),
            limit,
            room: tokio::sync::Notify::new(),
        }
    }

    /// The inputs handed over `events` more.
    pub fn add(&self, events: usize) {
        self.events.fetch_add(events, Ordering::AcqRel);
    }

    /// The executor took `events` of them: inputs that wait go on once there is room.
    pub fn take(&self, events: usize) {
        let before = self
            .events
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                Some(n.saturating_sub(events))
            })
            .unwrap_or_else(|n| n);
        if before > self.limit && before.saturating_sub(events) <= self.limit {
            self.room.notify_waiters();
        }
    }

    /// Whether more than the limit is waiting for the executor.
    pub fn is_full(&self) -> bool {
        self.events.load(Ordering::Acquire) > self.limit
    }

    /// Resolves once the backlog is not full.
    pub async fn room(&self) {
        super::gate::until(&self.room, || !self.is_full()).await;
    }
}

/// A query started as one worker of several ([`Query::start_worker`]): what the executor
/// needs to carry the query's batches between the workers.
pub struct QueryWorker {
    pub(super) shell: Arc<Shell>,
    edges: Vec<(Edge, Option<usize>)>,
    pub(super) owners: Vec<usize>,
}

impl std::fmt::Debug for QueryWorker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryWorker")
            .field("query", &self.shell.name)
            .field("edges", &self.edges.len())
            .field("owners", &self.owners)
            .finish()
    }
}

impl QueryWorker {
    /// The edges between the workers ([`Driver::split`]), each with the input whose stream it
    /// carries, if any.
    pub fn edges(&self) -> &[(Edge, Option<usize>)] {
        &self.edges
    }

    /// Which worker owns each input, by input index.
    pub fn owners(&self) -> &[usize] {
        &self.owners
    }

    /// Runs `f` on this worker's driver (what came from the other workers), then hands what
    /// the outputs produced to the output adapters (awaiting when they are behind).
    pub async fn receive<R>(&self, f: impl FnOnce(&mut Driver) -> R) -> R {
        self.shell.receive(f).await
    }

    /// The run is over on every worker: the outputs close, and the [`RunningQuery`] ends
    /// once its tasks have.
    pub async fn finish(&self) {
        self.shell.end_worker().await;
    }

    /// Whether the query has failed on this worker (an adapter's error, a stream's).
    pub fn has_failed(&self) -> bool {
        self.shell.signals.has_failed()
    }
}

impl Query {
    /// Starts the query as worker `worker` of `workers`, each running the same query (see the
    /// module doc): the adapters of the inputs this worker owns, the outputs' on worker 0
    /// (an output whose factory says [`per_worker`](crate::OutputAdapterFactory::per_worker):
    /// on every worker, each with its worker's share);
    /// `exchange` takes what the inputs send. Must be called within a tokio runtime with
    /// timers enabled. With one worker, this is [`Query::start`] with an exchange that is
    /// told when the inputs have ended. With checkpoints, the executor cuts the snapshots
    /// across the workers ([`QueryWorker::cut`]); a restore takes part `worker` of a snapshot
    /// of `workers` parts (another number is refused: `punctual_cluster::run_query` starts
    /// as many parts as the snapshot has).
    pub fn start_worker(
        mut self,
        worker: usize,
        workers: usize,
        exchange: Arc<dyn Exchange>,
    ) -> Result<(RunningQuery, QueryWorker), QueryError> {
        check_runtime()?;
        if let Some(o) = self
            .outputs
            .iter()
            .find(|o| o.per_worker())
            .filter(|_| self.checkpoints.is_some() && workers > 1)
        {
            return Err(QueryError::Bind(format!(
                "checkpoints: output `{}` is written by every worker, which a snapshot of \
                 several workers cannot mark; write it from one worker",
                o.name()
            )));
        }
        let mut driver = self.take_plan().build()?;
        let per_worker: Vec<_> = self
            .outputs
            .iter()
            .filter(|o| o.per_worker())
            .map(|o| o.node())
            .collect();
        let edges = if workers > 1 {
            driver.split(worker, workers, &|node| !per_worker.contains(&node))
        } else {
            Vec::new()
        };
        let owners = driver.owners(workers);
        let side = WorkerSide {
            exchange,
            owned: owners.iter().map(|&o| o == worker).collect(),
            workers,
        };
        let running = self.launch(driver, Some((worker, side)))?;
        let handle = QueryWorker {
            shell: Arc::clone(&running.shell),
            edges,
            owners,
        };
        Ok((running, handle))
    }
}

#[cfg(test)]
mod tests {
    use super::Backlog;

    /// An input that finds the backlog full waits until the executor takes enough of it.
    #[tokio::test]
    async fn a_full_backlog_holds_the_inputs_until_the_executor_takes_some() {
        let backlog = std::sync::Arc::new(Backlog::new(10));
        backlog.add(25);
        let waiting = tokio::spawn({
            let backlog = std::sync::Arc::clone(&backlog);
            async move { backlog.room().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        backlog.take(10); // 15 of 10: still full
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        backlog.take(10); // 5 of 10
        waiting.await.expect("the waiting input goes on");
        assert!(!backlog.is_full());
        // Room now: no wait.
        backlog.room().await;
    }
}
