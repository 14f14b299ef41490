//! # punctual-runtime
//!
//! The runtime around the query driver, and where async lives: the [`InputAdapter`] and
//! [`OutputAdapter`] traits and their factories, the [`InputContext`] through which an adapter
//! enqueues items (awaiting under backpressure), query binding and the tokio loop around the
//! one [`Driver`](punctual_engine::Driver) ([`Query`], [`RunningQuery`]), clocks, checkpoints
//! and the metrics a running query keeps. The adapters themselves (files, sockets, brokers,
//! memory) and their formats are `punctual-adapters`.

#![warn(missing_docs)]

pub mod adapter;
pub mod checkpoint;
pub mod clock;
pub mod context;
pub mod error;
pub mod observe;
pub mod query;

pub use adapter::{
    InputAdapter, InputAdapterFactory, OutputAdapter, OutputAdapterFactory, OutputContext,
    Partitioned, Payload,
};
pub use checkpoint::Checkpoints;
pub use clock::{Clock, ManualClock, SystemClock};
pub use context::InputContext;
pub use error::{AdapterError, EnqueueError, QueryError, TryEnqueueError};
pub use punctual_core::ops::Stream;
pub use punctual_engine::{DeadLetterCollector, DeadLetterSink, InputOptions};
pub use punctual_policies::EnqueueSummary;
pub use query::{
    Backlog, Ending, Exchange, HeldItem, Monitor, OperatorDropItem, Query, QueryFailure,
    QueryReport, QueryWorker, RunningQuery, StopHandle, StopMode, WorkerCut, MAX_REPORTED_HELD,
};
