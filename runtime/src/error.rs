//! Errors of the adapters crate: what adapters return, what enqueueing returns, and what a
//! query reports. Each error's message includes its cause's, once: the cause is a field
//! (`error`), not also a [`std::error::Error::source`], so that a chain printed link by link
//! does not repeat it.

use std::path::PathBuf;

/// Returned by [`InputContext`](crate::InputContext)'s enqueue methods.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EnqueueError {
    /// The stream's ingress rejected the item (invalid, or breaking a CTI with no policy). The
    /// item is counted as `rejected` and dead-lettered; the stream goes on.
    #[error("stream `{stream}` rejected the item: {error}")]
    Rejected {
        /// The stream.
        stream: String,
        /// Why.
        error: punctual_policies::Error,
    },
    /// The stream has buffered as many events as its cap allows without a CTI. The query fails
    /// with this error.
    #[error("stream `{stream}`: {error}")]
    BufferFull {
        /// The stream.
        stream: String,
        /// The details.
        error: punctual_policies::Error,
    },
    /// The query holds more than its budget waiting for CTIs ([`Query::max_held`]); the query
    /// fails with this error.
    ///
    /// [`Query::max_held`]: crate::Query::max_held
    #[error(transparent)]
    OverBudget(Box<punctual_engine::OverBudget>),
    /// The query is stopping (or has failed): the adapter should return.
    #[error("the query is stopping")]
    Stopping,
}

/// Returned by [`InputContext::try_enqueue_batch`](crate::InputContext::try_enqueue_batch).
#[derive(Debug, thiserror::Error)]
pub enum TryEnqueueError<P> {
    /// The query cannot take the items now (an output's queue is full, or another call into
    /// the query is running): nothing was enqueued; here they are back.
    #[error("the query cannot take items now (an output is behind, or another call is running): nothing was enqueued")]
    Full(Vec<punctual_core::StreamItem<P>>),
    /// As from [`InputContext::enqueue_batch`](crate::InputContext::enqueue_batch).
    #[error(transparent)]
    Enqueue(EnqueueError),
}

/// What an adapter (or its factory) returns when it cannot go on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdapterError {
    /// An input record could not be parsed.
    #[error("{}:{line}: {message}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// An I/O error.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file or resource.
        path: PathBuf,
        /// The error.
        error: std::io::Error,
    },
    /// Enqueueing failed; see [`EnqueueError`].
    #[error(transparent)]
    Enqueue(#[from] EnqueueError),
    /// The configuration cannot work.
    #[error("bad adapter configuration: {0}")]
    Config(String),
    /// Anything else.
    #[error(transparent)]
    Other(Box<dyn std::error::Error + Send + Sync>),
}

impl AdapterError {
    /// Wraps any error.
    pub fn other(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        AdapterError::Other(Box::new(e))
    }

    /// Whether this only says that the query is stopping.
    pub fn is_stopping(&self) -> bool {
        matches!(self, AdapterError::Enqueue(EnqueueError::Stopping))
    }
}

/// Why binding, starting or running a query failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// Two streams with one name, an unknown import source, an import cycle, a second output...
    #[error("cannot bind the query: {0}")]
    Bind(String),
    /// A factory refused to create an adapter.
    #[error("cannot create the adapter of `{stream}`: {error}")]
    Create {
        /// The stream.
        stream: String,
        /// The factory's error.
        error: AdapterError,
    },
    /// An adapter failed while running.
    #[error("the {role} adapter of `{stream}` failed: {error}")]
    Adapter {
        /// `input` or `output`.
        role: &'static str,
        /// The stream.
        stream: String,
        /// The adapter's error.
        error: AdapterError,
    },
    /// A stream failed (its reorder buffer reached the cap).
    #[error(transparent)]
    Stream(EnqueueError),
    /// A task panicked.
    #[error("task `{task}` panicked: {message}")]
    Panicked {
        /// The task.
        task: String,
        /// The panic message.
        message: String,
    },
    /// Tasks did not finish within the grace period after the query was told to stop; they were
    /// aborted.
    #[error("tasks did not finish within {grace:?} of the stop and were aborted: {tasks:?}")]
    StopTimeout {
        /// The grace period.
        grace: std::time::Duration,
        /// The tasks still running.
        tasks: Vec<String>,
    },
}
