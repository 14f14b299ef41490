//! # punctual-policies
//!
//! Where a stream's CTIs come from and what happens to the events that break them: the
//! advance-time settings ([`AdvanceTimeSettings`], generation, import, the Drop/Adjust
//! [`AdvanceTimePolicy`]) and the per-stream [`Ingress`] state machine that applies them,
//! with its reorder buffer, counters and dead-letter output.
//!
//! Synchronous and deterministic: no clock, no I/O.

#![warn(missing_docs)]

pub mod ingress;
pub mod settings;
pub mod watermark;

pub use ingress::{
    DeadLetter, DeadLetterReason, EdgeKey, EnqueueSummary, Enqueued, Ingress, IngressConfig,
    IngressCounters, IngressOutput, LateEvent, MalformedRecord, DEFAULT_MAX_BUFFERED,
};
pub use settings::{
    AdapterAdvanceTimeSettings, AdvanceTimeGenerationSettings, AdvanceTimeImportSettings,
    AdvanceTimePolicy, AdvanceTimeSettings, AdvanceTimeSettingsBuilder, GenerationBuilder,
    GenerationFrequency,
};
pub use watermark::{
    Arrival, ClockReading, DropCause, Emission, SubstreamKey, Watermark, ASA_DEFAULT_LATE,
    ASA_EARLY_WINDOW, ASA_MAX_LATE,
};

use punctual_core::{EventShape, InvalidEvent, Time};

/// Errors of this crate: rejected items and invalid settings. Policy outcomes (dropped,
/// adjusted) are not errors; they are counted.
#[derive(Debug, Clone, PartialEq, thiserror::Error, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum Error {
    /// The item is not a valid event.
    #[error("invalid event: {0}")]
    Invalid(InvalidEvent),
    /// The event breaks the stream's CTI and the stream has no violation policy.
    #[error("event with sync time {sync} breaks CTI({app}) and the stream has no violation policy (Drop or Adjust)")]
    Violation {
        /// The event's sync time.
        sync: Time,
        /// The stream's current CTI.
        app: Time,
    },
    /// The reorder buffer is full: the stream has buffered `cap` events that no CTI has released.
    /// The message gives the times in RFC 3339: the last CTI, and the earliest event held,
    /// which waits for a CTI after it.
    #[error("{cap} events wait for a CTI (the input's buffer cap): the last CTI is at {}, the earliest event held is at {}, and a CTI releases only the events before its time. Do the input's CTIs pass its events (many events at one time wait for a CTI after that time), or does it send none? If so many events are expected, raise the cap (`InputOptions::max_buffered`; `max_buffered` of a job input; `--max-buffered` of `query`)", app.rfc3339(), earliest.rfc3339())]
    BufferFull {
        /// The cap.
        cap: usize,
        /// The stream's current CTI.
        app: Time,
        /// The earliest sync time held: it waits for a CTI after it.
        earliest: Time,
    },
    /// Settings that cannot work.
    #[error("invalid advance-time settings: {0}")]
    InvalidSettings(String),
    /// An edge enqueued on an unordered stream, whose events are released on arrival
    /// ([`IngressConfig::order`]), which takes points and intervals only.
    #[error("edges cannot be released on arrival (the stream is unordered): enqueue points or intervals, or use an ordered stream")]
    EdgeOnArrival,
    /// An event of a kind the stream's shape does not take ([`IngressConfig::shape`]): a point
    /// stream takes points only, an interval stream points and intervals.
    #[error("{kind} on a stream of the {shape:?} shape, which takes {takes}")]
    WrongShape {
        /// The stream's shape.
        shape: EventShape,
        /// The event's kind: `an interval`, `a start edge` or `an end edge`.
        #[serde(deserialize_with = "known_text")]
        kind: StaticText,
        /// What the shape takes.
        #[serde(deserialize_with = "known_text")]
        takes: StaticText,
    },
    /// Columns of one set of events with different lengths.
    #[error("{times} start times for {payloads} payloads: the columns must have equal lengths")]
    ColumnLengths {
        /// Start times given.
        times: usize,
        /// Payloads given.
        payloads: usize,
    },
}

impl From<InvalidEvent> for Error {
    /// (Not a `source`: the message includes the event's error once.)
    fn from(e: InvalidEvent) -> Self {
        Error::Invalid(e)
    }
}

/// A text of the program (not borrowed from what is deserialized: see [`known_text`]).
type StaticText = &'static str;

/// The texts of [`Error::WrongShape`], read back as the same `'static` texts (an error that
/// travels between processes in a late event's reason).
fn known_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    const KNOWN: [&str; 5] = [
        "an interval",
        "a start edge",
        "an end edge",
        "points only",
        "points and intervals",
    ];
    let text = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
    KNOWN
        .into_iter()
        .find(|k| *k == text)
        .ok_or_else(|| serde::de::Error::custom(format!("unknown text {text:?}")))
}

/// Result with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
