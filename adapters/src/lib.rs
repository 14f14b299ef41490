//! # punctual-adapters
//!
//! Where Punctual meets the world, and where async lives: the [`InputAdapter`] and
//! [`OutputAdapter`] traits and their factories, the [`InputContext`] through which an adapter
//! enqueues items (awaiting under backpressure), query binding and the tokio runtime
//! ([`Query`], [`RunningQuery`]), and built-in adapters: in-memory and channel inputs, a
//! collecting output, and JSON-lines files (typed with serde payloads, or untyped with
//! [`Row`](punctual_rows::Row) payloads).

#![warn(missing_docs)]

pub mod adapter;
pub mod checkpoint;
pub mod clock;
pub mod context;
pub mod csv;
mod digits;
pub mod error;
pub mod jsonl;
#[cfg(feature = "kafka")]
pub mod kafka;
pub mod layout;
pub mod line;
pub mod memory;
#[cfg(feature = "mqtt")]
pub mod mqtt;
pub mod observe;
mod only;
#[cfg(feature = "prometheus")]
pub mod prometheus;
pub mod query;
pub mod replay;
pub mod tcp;

pub use adapter::{
    InputAdapter, InputAdapterFactory, OutputAdapter, OutputAdapterFactory, OutputContext,
    Partitioned, Payload,
};
pub use checkpoint::Checkpoints;
pub use clock::{Clock, ManualClock, SystemClock};
pub use context::InputContext;
pub use csv::{CsvInput, CsvInputConfig, CsvOutput, CsvOutputConfig};
pub use error::{AdapterError, EnqueueError, QueryError, TryEnqueueError};
pub use jsonl::{
    JsonLinesInput, JsonLinesInputConfig, JsonLinesOutput, JsonLinesOutputConfig, MalformedLines,
};
#[cfg(feature = "kafka")]
pub use kafka::{KafkaConfig, KafkaInput, KafkaOutput};
pub use memory::{
    channel_input, stream_output, ChannelInput, CollectOutput, IterInput, MemoryInput,
    RecordsInput, StreamInput, StreamOutput,
};
#[cfg(feature = "mqtt")]
pub use mqtt::{MqttConfig, MqttInput, MqttOutput};
pub use punctual_core::ops::Stream;
pub use punctual_engine::{DeadLetterCollector, DeadLetterSink, InputOptions};
pub use punctual_policies::EnqueueSummary;
pub use query::{
    Backlog, Ending, Exchange, HeldItem, Monitor, OperatorDropItem, Query, QueryFailure,
    QueryReport, QueryWorker, RunningQuery, StopHandle, StopMode, MAX_REPORTED_HELD,
};
pub use replay::{ReplayOptions, MAX_LINE_BYTES, MAX_SPLIT};
pub use tcp::{
    TcpClientConfig, TcpClientInput, TcpListenConfig, TcpListenInput, TcpOutput, TcpOutputConfig,
    TcpServerInput,
};
