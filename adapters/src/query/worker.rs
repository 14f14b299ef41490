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
}

/// A query started as one worker of several ([`Query::start_worker`]): what the executor
/// needs to carry the query's batches between the workers.
pub struct QueryWorker {
    shell: Arc<Shell>,
    edges: Vec<(Edge, Option<usize>)>,
    owners: Vec<usize>,
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
    /// told when the inputs have ended. Checkpoints do not run on several workers.
    pub fn start_worker(
        mut self,
        worker: usize,
        workers: usize,
        exchange: Arc<dyn Exchange>,
    ) -> Result<(RunningQuery, QueryWorker), QueryError> {
        check_runtime()?;
        if self.checkpoints.is_some() && workers > 1 {
            return Err(QueryError::Bind(
                "checkpoints: a query on several workers cannot take them".to_owned(),
            ));
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
