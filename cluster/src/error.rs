//! [`Error`]: why a run on the cluster failed.

/// Why a run on the cluster failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Timely could not start its workers.
    #[error("cannot start the cluster: {0}")]
    Start(String),
    /// A worker could not build the query.
    #[error("worker {worker} cannot build the query: {message}")]
    Build {
        /// The worker.
        worker: usize,
        /// Why.
        message: String,
    },
    /// Another process of the run was lost (it died, or its connection broke): there is no
    /// recovery; every process of the run stops with this error.
    #[error("lost process {process} ({address}): {message}; the run stops (there is no recovery)")]
    LostPeer {
        /// The lost process's index.
        process: usize,
        /// Its address, from the configuration.
        address: String,
        /// What the connection said.
        message: String,
    },
    /// The query failed on a worker (an adapter's error, say): [`run_query`](crate::run_query).
    #[error("worker {worker}: the query failed: {message}")]
    Query {
        /// The worker.
        worker: usize,
        /// What went wrong.
        message: String,
    },
    /// A worker stopped with a panic.
    #[error("worker {worker} failed: {message}")]
    Worker {
        /// The worker.
        worker: usize,
        /// What it said.
        message: String,
    },
}
