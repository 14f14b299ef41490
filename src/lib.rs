//! # Punctual
//!
//! Punctuation-driven event-time stream processing in the StreamInsight tradition. Input
//! adapters enqueue point, interval and edge events together with CTIs (current time
//! increments: promises that no earlier event will follow); advance-time settings generate or
//! import CTIs; Drop/Adjust policies handle events that break them; results are released
//! exactly as far as the CTIs allow.
//!
//! This crate re-exports the workspace's crates and offers a [`prelude`]:
//! - [`core`]: time, events, stream items, batches, rows;
//! - [`policies`]: advance-time settings, policies, the ingress state machine;
//! - [`engine`]: the query driver every runtime drives (a plan of inputs, operators and
//!   outputs, run synchronously);
//! - [`adapters`]: async adapter traits and factories, query binding, built-in adapters;
//! - [`sql`]: the query language (Stream Analytics-style SQL compiled onto the operators);
//! - [`conformance`]: the runner for the data-driven conformance cases (also `punctual check`);
//! - [`testing`]: a harness for testing queries (scripted source, manual clock, segment
//!   assertions);
//! - [`timeline`]: the SVG picture of a case (also `punctual timeline`).

#![warn(missing_docs)]

pub use punctual_adapters as adapters;
pub use punctual_cluster as cluster;
pub use punctual_core as core;
pub use punctual_engine as engine;
pub use punctual_policies as policies;
pub use punctual_rows as rows;
pub use punctual_runtime as runtime;
pub use punctual_sql as sql;

pub mod cli;
pub mod conformance;
pub mod testing;
pub mod timeline;

/// The names most programs need.
pub mod prelude {
    pub use punctual_core::ops::{
        Aggregate, Avg, Count, Max, Min, Payload, Stream, Sum, TopK, WindowOutput,
    };
    pub use punctual_core::{
        Batch, Event, EventKind, EventShape, Lifetime, Order, Ordered, StreamItem, Time, TimeSpan,
        Unordered, TICKS_PER_SECOND,
    };
    pub use punctual_policies::{
        AdapterAdvanceTimeSettings, AdvanceTimeGenerationSettings, AdvanceTimeImportSettings,
        AdvanceTimePolicy, AdvanceTimeSettings, DeadLetter, IngressCounters,
    };
    pub use punctual_rows::{Row, Value};
}

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
