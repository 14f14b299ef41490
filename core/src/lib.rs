//! # punctual-core
//!
//! The synchronous, deterministic core of Punctual: application [`Time`] in 100 ns ticks with
//! named infinities, [`Lifetime`]s, events and their shapes, the [`StreamItem`] that carries an
//! event or a CTI, the columnar [`Batch`] that carries sorted events and CTIs past ingress, and
//! the operators over typed payloads. (The untyped row payload is `punctual-rows`.)
//!
//! No wall clock, no I/O and no async here: everything that needs time gets it passed in.

#![warn(missing_docs)]

pub mod batch;
pub mod event;
pub mod hint;
pub mod ops;
pub mod order;
mod rfc3339;
pub mod time;

pub use batch::{Batch, CtiMark};
pub use event::{Event, EventKind, EventShape, InvalidEvent, StreamItem};
pub use order::{EventOrder, Order, Ordered, Unordered};
pub use time::{EmptyLifetime, Lifetime, Rfc3339, Time, TimeError, TimeSpan, TICKS_PER_SECOND};
