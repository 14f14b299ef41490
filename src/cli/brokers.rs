//! Kafka, MQTT and NATS sources and targets of jobs, present when the build has the feature of
//! that name (a job naming one in a build without says how to get it).

use punctual_core::ops::{AnyStream, Stream};
use punctual_core::Order;
use punctual_rows::Row;
use punctual_runtime::{InputOptions, Query};

#[cfg(any(feature = "kafka", feature = "mqtt", feature = "nats"))]
fn config<C: serde::de::DeserializeOwned>(table: &toml::Table, what: &str) -> Result<C, String> {
    toml::Value::Table(table.clone())
        .try_into()
        .map_err(|e: toml::de::Error| format!("{what}: {}", e.message()))
}

#[cfg(any(not(feature = "kafka"), not(feature = "mqtt"), not(feature = "nats")))]
fn missing(feature: &str) -> String {
    format!("this punctual was built without {feature}: install it with `cargo install --path . --features {feature}`")
}

/// A Kafka input.
pub(super) fn kafka<O: Order>(
    query: &mut Query,
    options: InputOptions<O>,
    table: &toml::Table,
    lines: punctual_adapters::line::LineFormat,
) -> Result<Stream<Row, O>, String> {
    #[cfg(feature = "kafka")]
    {
        let c: punctual_adapters::KafkaConfig = config(table, "kafka")?;
        if table.contains_key("lines") {
            return Err("kafka: `lines` comes from the input's `time` and `time_format` (or the query's TIMESTAMP BY), not from this table".into());
        }
        let c = c.lines(lines);
        query
            .create_stream::<_, Row, _, _>(options, &punctual_adapters::KafkaInput, &c)
            .map_err(|e| e.to_string())
    }
    #[cfg(not(feature = "kafka"))]
    {
        let _ = (query, options, table, lines);
        Err(missing("kafka"))
    }
}

/// An MQTT input.
pub(super) fn mqtt<O: Order>(
    query: &mut Query,
    options: InputOptions<O>,
    table: &toml::Table,
    lines: punctual_adapters::line::LineFormat,
) -> Result<Stream<Row, O>, String> {
    #[cfg(feature = "mqtt")]
    {
        let c: punctual_adapters::MqttConfig = config(table, "mqtt")?;
        if table.contains_key("lines") {
            return Err("mqtt: `lines` comes from the input's `time` and `time_format` (or the query's TIMESTAMP BY), not from this table".into());
        }
        let c = c.lines(lines);
        query
            .create_stream::<_, Row, _, _>(options, &punctual_adapters::MqttInput, &c)
            .map_err(|e| e.to_string())
    }
    #[cfg(not(feature = "mqtt"))]
    {
        let _ = (query, options, table, lines);
        Err(missing("mqtt"))
    }
}

/// A Kafka output.
pub(super) fn kafka_output(
    query: &mut Query,
    stream: &AnyStream<Row>,
    table: &toml::Table,
) -> Result<(), String> {
    #[cfg(feature = "kafka")]
    {
        let c: punctual_adapters::KafkaConfig = config(table, "kafka")?;
        query
            .bind_output(stream, &punctual_adapters::KafkaOutput, &c)
            .map_err(|e| e.to_string())
    }
    #[cfg(not(feature = "kafka"))]
    {
        let _ = (query, stream, table);
        Err(missing("kafka"))
    }
}

/// An MQTT output.
pub(super) fn mqtt_output(
    query: &mut Query,
    stream: &AnyStream<Row>,
    table: &toml::Table,
) -> Result<(), String> {
    #[cfg(feature = "mqtt")]
    {
        let c: punctual_adapters::MqttConfig = config(table, "mqtt")?;
        query
            .bind_output(stream, &punctual_adapters::MqttOutput, &c)
            .map_err(|e| e.to_string())
    }
    #[cfg(not(feature = "mqtt"))]
    {
        let _ = (query, stream, table);
        Err(missing("mqtt"))
    }
}

/// A NATS JetStream input.
pub(super) fn nats<O: Order>(
    query: &mut Query,
    options: InputOptions<O>,
    table: &toml::Table,
    lines: punctual_adapters::line::LineFormat,
) -> Result<Stream<Row, O>, String> {
    #[cfg(feature = "nats")]
    {
        let c: punctual_adapters::NatsConfig = config(table, "nats")?;
        if table.contains_key("lines") {
            return Err("nats: `lines` comes from the input's `time` and `time_format` (or the query's TIMESTAMP BY), not from this table".into());
        }
        let c = c.lines(lines);
        query
            .create_stream::<_, Row, _, _>(options, &punctual_adapters::NatsInput, &c)
            .map_err(|e| e.to_string())
    }
    #[cfg(not(feature = "nats"))]
    {
        let _ = (query, options, table, lines);
        Err(missing("nats"))
    }
}

/// A NATS output.
pub(super) fn nats_output(
    query: &mut Query,
    stream: &AnyStream<Row>,
    table: &toml::Table,
) -> Result<(), String> {
    #[cfg(feature = "nats")]
    {
        let mut table = table.clone();
        table
            .entry("stream")
            .or_insert_with(|| toml::Value::String(String::new()));
        let c: punctual_adapters::NatsConfig = config(&table, "nats")?;
        query
            .bind_output(stream, &punctual_adapters::NatsOutput, &c)
            .map_err(|e| e.to_string())
    }
    #[cfg(not(feature = "nats"))]
    {
        let _ = (query, stream, table);
        Err(missing("nats"))
    }
}
