//! # punctual-engine
//!
//! The one query driver. A [`Plan`] declares a query: its named input streams (each with its
//! advance-time settings or watermark strategy, and its order), the operators composed on them
//! with the typed [`Stream`](punctual_core::ops::Stream) API, and the streams read from
//! outside. [`Plan::build`] checks it (unknown import sources, import cycles) and gives a
//! [`Driver`], which owns every input's [`Ingress`](punctual_policies::Ingress), the
//! import graph, the operator graph and the outputs.
//!
//! The driver is sans-IO: synchronous, no clock of its own (clock readings come in as
//! arguments), no tasks, no channels. Items or columns go in per input; released batches and
//! CTIs, dead letters, counters and `explain` come out. Every executor drives this one type:
//! the tokio runtime in `punctual-adapters` (adapters feed it, output tasks drain it, a clock
//! ticks it), the conformance runner (fed from a case's arrivals), and anything else that runs
//! a query. Nothing else wires an ingress to operators.
//!
//! ```
//! use punctual_core::{Batch, EventShape, Ordered, StreamItem, Time};
//! use punctual_engine::{InputOptions, Plan};
//! use punctual_policies::{AdvanceTimeImportSettings, AdvanceTimeSettings};
//!
//! let t = Time::from_ticks;
//! let mut plan = Plan::new("enriched");
//! let (fast, readings) = plan.input::<(u32, i64), Ordered>(
//!     InputOptions::new("readings", EventShape::Point)
//!         .settings(AdvanceTimeSettings::increasing_start_time()),
//! )?;
//! // The reference stream imports the readings' CTIs: it keeps pace with them.
//! let import = AdvanceTimeSettings::builder()
//!     .import(AdvanceTimeImportSettings::new("readings"))
//!     .build()?;
//! let (slow, names) = plan.input::<(u32, String), Ordered>(
//!     InputOptions::new("names", EventShape::Edge).settings(import),
//! )?;
//! let named = readings.join_on(&names, |r| r.0, |n| n.0, |r, n| (n.1.clone(), r.1));
//! let out = plan.output(&named)?;
//! let mut driver = plan.build()?;
//!
//! driver.enqueue(slow, StreamItem::start_edge(t(0), (7, "seven".to_owned())))?;
//! driver.enqueue(fast, StreamItem::point(t(5), (7, 50)))?; // CTI(5) reaches `names` at once
//! driver.enqueue(fast, StreamItem::point(t(6), (7, 60)))?;
//! let mut results = Batch::new();
//! driver.take_output(&out, &mut results);
//! assert_eq!(results.payloads(), &[("seven".to_owned(), 50)]);
//! assert_eq!(results.last_cti(), Some(t(6)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

mod driver;
mod input;
mod options;
mod plan;
mod saved;
mod sink;

pub use driver::Driver;
pub use options::InputOptions;
pub use plan::{InputId, OutputId, PartitionedInput, Plan};
pub use sink::{DeadLetterCollector, DeadLetterSink};

/// Why a query's plan cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The plan does not fit together: two inputs with one name, an import from a stream that
    /// is not an input, an import cycle, a stream of another plan, a watermark strategy for
    /// another payload type, an unordered input of edges.
    #[error("cannot bind the query: {0}")]
    Bind(String),
}

/// How many events (or groups) a query may hold waiting for CTIs by default, across every
/// input's reorder buffer and every operator (open windows, a join's or a union's waiting
/// events, open start edges): see [`Plan::max_held`].
pub const DEFAULT_MAX_HELD: usize = 4_000_000;

/// A query holds more than its budget ([`Plan::max_held`]) waiting for CTIs: which part holds
/// the most, and the input whose CTI it waits for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "query `{query}` holds {held} events or groups (waiting for CTIs, or start edges waiting \
     for their end), over its budget of {budget}: the most ({most}) in {holder}; what it waits \
     for comes from input `{input}` (its CTI: {cti})"
)]
pub struct OverBudget {
    /// The query.
    pub query: String,
    /// What it holds.
    pub held: usize,
    /// Its budget.
    pub budget: usize,
    /// The input or operator holding the most (`input `x``, `join `y``, ...).
    pub holder: String,
    /// How much that one holds.
    pub most: usize,
    /// The input whose CTI it waits for.
    pub input: String,
    /// That input's CTI.
    pub cti: punctual_core::Time,
}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
