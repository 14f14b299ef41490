//! MQTT (feature `mqtt`, with `rumqttc`): [`MqttInput`] subscribes to a topic and enqueues one
//! item per message, [`MqttOutput`] publishes a stream's events and CTIs, one per message. A
//! message holds one JSON line: an item of the form of [`crate::line`] (an `eof` message ends
//! the input), or a flat record timed by one of its fields ([`MqttConfig::lines`] with
//! [`LineFormat::flat`]).
//! Messages go in in blocks: after one arrives, those already received (up to 1,024) are
//! enqueued with it in one call.
//! Malformed messages are skipped, counted as `malformed` and dead-lettered with the topic and
//! message number. For CTIs while a topic is quiet, use a watermark strategy and the query's
//! clock. The factories declare no advance-time settings: CTIs come from the messages, the
//! stream's settings or its watermark strategy.
//!
//! ```no_run
//! use punctual_adapters::{MqttConfig, MqttInput};
//! use punctual_runtime::{InputOptions, Query};
//! use punctual_core::{EventShape};
//! use punctual_rows::{Row};
//! # fn demo() -> Result<(), punctual_runtime::QueryError> {
//! let mut query = Query::new("mqtt");
//! let s = query.create_stream::<_, Row, _, _>(
//!     InputOptions::new("sensors", EventShape::Point),
//!     &MqttInput,
//!     &MqttConfig::new("127.0.0.1", 1883, "sensors/readings"),
//! )?;
//! # let _ = s; Ok(()) }
//! ```

pub mod testing;

/// The `rumqttc` crate this adapter is built on (for tests and custom setups).
pub use rumqttc;

use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::FutureExt;
use rumqttc::{AsyncClient, Event, EventLoop, MqttOptions, Packet, QoS};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use punctual_core::{Batch, EventShape};
use punctual_policies::MalformedRecord;

use crate::line::{write_item_as, LineFormat, TimeFormat};
use punctual_runtime::adapter::{
    InputAdapter, InputAdapterFactory, OutputAdapter, OutputAdapterFactory, Payload,
};
use punctual_runtime::context::InputContext;
use punctual_runtime::error::AdapterError;
use punctual_runtime::query::QueryReport;

/// Where an MQTT adapter connects and which topic it uses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MqttConfig {
    /// Broker host.
    pub host: String,
    /// Broker port.
    pub port: u16,
    /// Topic to subscribe to (input) or publish on (output).
    pub topic: String,
    /// Client id (default: `punctual-` and the topic).
    #[serde(default)]
    pub client_id: Option<String>,
    /// Quality of service, 0, 1 or 2 (default 1: at least once).
    #[serde(default = "one")]
    pub qos: u8,
    /// Input: how each message is read (default: an item; [`LineFormat::flat`]: a flat
    /// record).
    #[serde(default)]
    pub lines: LineFormat,
}

fn one() -> u8 {
    1
}

impl MqttConfig {
    /// A broker and a topic, QoS 1.
    pub fn new(host: impl Into<String>, port: u16, topic: impl Into<String>) -> Self {
        MqttConfig {
            host: host.into(),
            port,
            topic: topic.into(),
            client_id: None,
            qos: 1,
            lines: LineFormat::default(),
        }
    }

    /// Input: reads each message as `lines` says (default: an item; [`LineFormat::flat`]: a
    /// flat record, timed by one of its fields).
    pub fn lines(mut self, lines: LineFormat) -> Self {
        self.lines = lines;
        self
    }

    fn connect(&self, suffix: &str) -> Result<(AsyncClient, EventLoop, QoS), AdapterError> {
        let qos = match self.qos {
            0 => QoS::AtMostOnce,
            1 => QoS::AtLeastOnce,
            2 => QoS::ExactlyOnce,
            q => {
                return Err(AdapterError::Config(format!(
                    "qos must be 0, 1 or 2, not {q}"
                )))
            }
        };
        let id = self
            .client_id
            .clone()
            .unwrap_or_else(|| format!("punctual-{suffix}-{}", self.topic.replace('/', "-")));
        let mut options = MqttOptions::new(id, self.host.clone(), self.port);
        options.set_keep_alive(Duration::from_secs(30));
        let (client, events) = AsyncClient::new(options, 64);
        Ok((client, events, qos))
    }
}

fn mqtt_error(e: impl std::error::Error + Send + Sync + 'static) -> AdapterError {
    AdapterError::other(e)
}

/// Messages enqueued in one call at most (see the module doc).
const BLOCK: usize = 1024;

/// Factory of MQTT inputs; see the module doc.
#[derive(Clone, Copy, Debug, Default)]
pub struct MqttInput;

/// Subscribes to a topic and enqueues its messages.
pub struct MqttReader<P> {
    config: MqttConfig,
    _payload: PhantomData<fn() -> P>,
}

impl<P: Payload + DeserializeOwned> InputAdapterFactory<MqttConfig, P> for MqttInput {
    type Adapter = MqttReader<P>;

    fn create(
        &self,
        config: &MqttConfig,
        _shape: EventShape,
    ) -> Result<Self::Adapter, AdapterError> {
        config.connect("check")?;
        Ok(MqttReader {
            config: config.clone(),
            _payload: PhantomData,
        })
    }
}

#[async_trait]
impl<P: Payload + DeserializeOwned> InputAdapter<P> for MqttReader<P> {
    async fn run(&mut self, ctx: &mut InputContext<P>) -> Result<(), AdapterError> {
        let (client, mut events, qos) = self.config.connect("in")?;
        client
            .subscribe(self.config.topic.clone(), qos)
            .await
            .map_err(mqtt_error)?;
        let mut number = 0usize;
        let mut block = Vec::with_capacity(BLOCK);
        'read: loop {
            let first = tokio::select! {
                e = events.poll() => e,
                _ = ctx.stopping() => break,
            };
            // This event and those already received, up to a block, in one call.
            let mut next = Some(first);
            while let Some(event) = next.take() {
                let event = event.map_err(mqtt_error)?;
                if let Event::Incoming(Packet::Publish(message)) = event {
                    number += 1;
                    let text = String::from_utf8_lossy(&message.payload).into_owned();
                    match self.config.lines.read::<P>(text.trim()) {
                        Ok(Some(item)) => block.push(item),
                        Ok(None) => break 'read,
                        Err(e) => {
                            ctx.enqueue_batch(block.drain(..)).await?;
                            ctx.report_malformed(MalformedRecord {
                                location: format!("mqtt {} message {number}", self.config.topic),
                                message: e,
                                text,
                            })
                            .await;
                        }
                    }
                }
                if block.len() < BLOCK {
                    next = events.poll().now_or_never();
                }
            }
            ctx.enqueue_batch(block.drain(..)).await?;
        }
        // What was read before an `eof` message or the stop.
        if !block.is_empty() && !ctx.is_stopping() {
            ctx.enqueue_batch(block.drain(..)).await?;
        }
        let _ = client.disconnect().await;
        Ok(())
    }
}

/// Factory of MQTT outputs; see the module doc.
#[derive(Clone, Copy, Debug, Default)]
pub struct MqttOutput;

/// Publishes a stream on a topic.
pub struct MqttWriter<P> {
    config: MqttConfig,
    client: Option<Publisher>,
    _payload: PhantomData<fn(P)>,
}

/// A connected publisher: the client, its QoS, the task driving its event loop, how many
/// messages were handed to it and how many are done (sent at QoS 0, acknowledged above).
struct Publisher {
    client: AsyncClient,
    qos: QoS,
    driver: tokio::task::JoinHandle<()>,
    published: usize,
    done: Arc<AtomicUsize>,
}

impl<P: Payload + Serialize> OutputAdapterFactory<MqttConfig, P> for MqttOutput {
    type Adapter = MqttWriter<P>;

    fn create(
        &self,
        config: &MqttConfig,
        _shape: EventShape,
    ) -> Result<Self::Adapter, AdapterError> {
        config.connect("check")?;
        Ok(MqttWriter {
            config: config.clone(),
            client: None,
            _payload: PhantomData,
        })
    }
}

#[async_trait]
impl<P: Payload + Serialize> OutputAdapter<P> for MqttWriter<P> {
    async fn write(&mut self, batch: &Batch<P>) -> Result<(), AdapterError> {
        if self.client.is_none() {
            let (client, mut events, qos) = self.config.connect("out")?;
            let done = Arc::new(AtomicUsize::new(0));
            let counter = Arc::clone(&done);
            // The event loop drives the connection and counts finished publishes; it ends when
            // the client disconnects.
            let driver = tokio::spawn(async move {
                while let Ok(e) = events.poll().await {
                    let finished = match (&e, qos) {
                        (Event::Outgoing(rumqttc::Outgoing::Publish(_)), QoS::AtMostOnce) => true,
                        (Event::Incoming(Packet::PubAck(_)), QoS::AtLeastOnce) => true,
                        (Event::Incoming(Packet::PubComp(_)), QoS::ExactlyOnce) => true,
                        (Event::Outgoing(rumqttc::Outgoing::Disconnect), _) => break,
                        _ => false,
                    };
                    if finished {
                        counter.fetch_add(1, Ordering::SeqCst);
                    }
                }
            });
            self.client = Some(Publisher {
                client,
                qos,
                driver,
                published: 0,
                done,
            });
        }
        if let Some(p) = self.client.as_mut() {
            for item in batch.items() {
                let mut line = Vec::new();
                write_item_as(item, TimeFormat::Auto, &mut line).map_err(AdapterError::other)?;
                p.client
                    .publish(self.config.topic.clone(), p.qos, false, line)
                    .await
                    .map_err(mqtt_error)?;
                p.published += 1;
            }
        }
        Ok(())
    }

    /// Waits (up to 10 s) until every message went out (QoS 0) or was acknowledged (QoS 1 and
    /// 2), then disconnects.
    async fn finish(&mut self, _report: &QueryReport) -> Result<(), AdapterError> {
        if let Some(p) = self.client.take() {
            let flushed = async {
                while p.done.load(Ordering::SeqCst) < p.published {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            };
            let waited = tokio::time::timeout(Duration::from_secs(10), flushed).await;
            p.client.disconnect().await.map_err(mqtt_error)?;
            let _ = tokio::time::timeout(Duration::from_secs(5), p.driver).await;
            if waited.is_err() {
                return Err(AdapterError::Config(format!(
                    "the broker did not take {} of {} messages on `{}` within 10 s",
                    p.published - p.done.load(Ordering::SeqCst),
                    p.published,
                    self.config.topic
                )));
            }
        }
        Ok(())
    }
}
