//! # punctual-adapters
//!
//! Where Punctual meets the world: the built-in adapters of the runtime's traits
//! (`punctual-runtime`): in-memory and channel inputs, a collecting output, files (JSON lines
//! and CSV, typed with serde payloads, or untyped with [`Row`](punctual_rows::Row) payloads),
//! replay, standard input, TCP, and, behind features, Kafka, MQTT and a Prometheus exporter;
//! and the formats they read and write.

#![warn(missing_docs)]

pub mod csv;
pub mod jsonl;
#[cfg(feature = "kafka")]
pub mod kafka;
pub mod layout;
pub mod line;
pub mod memory;
#[cfg(feature = "mqtt")]
pub mod mqtt;
#[cfg(feature = "nats")]
pub mod nats;
mod numbers;
mod picked_fields;
#[cfg(feature = "prometheus")]
pub mod prometheus;
pub mod replay;
pub mod tcp;
#[cfg(any(feature = "nats", feature = "mqtt"))]
pub mod testing;

pub use csv::{CsvInput, CsvInputConfig, CsvOutput, CsvOutputConfig};
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
#[cfg(feature = "nats")]
pub use nats::{NatsConfig, NatsInput, NatsOutput};
pub use replay::{ReplayOptions, MAX_LINE_BYTES, MAX_SPLIT};
pub use tcp::{
    TcpClientConfig, TcpClientInput, TcpListenConfig, TcpListenInput, TcpOutput, TcpOutputConfig,
    TcpServerInput,
};
