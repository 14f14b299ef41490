//! NATS JetStream (feature `nats`, with `async-nats`): [`NatsInput`] reads a stream in order
//! (an ordered consumer, from the start or from a snapshot's sequence), [`NatsOutput`]
//! publishes a stream's events and CTIs to a subject, each with a message id for JetStream's
//! de-duplication. A message holds one JSON line: an item of the form of [`crate::line`] (an
//! `eof` message ends the input), or a flat record timed by one of its fields
//! ([`NatsConfig::lines`] with [`LineFormat::flat`]).
//!
//! A JetStream stream keeps a window of retention (`max_msgs`, `max_age`, ...): with
//! checkpoints the input commits the stream sequence after the last message it enqueued, and a
//! query restored from a snapshot resumes there. If the stream no longer keeps that sequence
//! (retention dropped the messages after it), the restart fails, naming how many are gone,
//! unless the input says [`NatsConfig::allow_gap`]; so does a running input that finds
//! messages gone before it read them (it fell behind a stream that keeps few, or they were
//! deleted): never a silent hole. The output's message ids are its position
//! (the subject and the count of messages before it): what a restored query publishes again
//! after its snapshot has the ids it had, and JetStream drops the duplicates within the
//! stream's duplicate window (two minutes by default).
//!
//! Messages go in in blocks: after one arrives, those already received (up to 1,024) are
//! enqueued with it in one call. Malformed messages are skipped, counted as `malformed` and
//! dead-lettered with the stream and sequence. The factories declare no advance-time
//! settings: CTIs come from the messages, the stream's settings or its watermark strategy.
//!
//! ```no_run
//! use punctual_adapters::{NatsConfig, NatsInput};
//! use punctual_runtime::{InputOptions, Query};
//! use punctual_core::EventShape;
//! use punctual_rows::Row;
//! # fn demo() -> Result<(), punctual_runtime::QueryError> {
//! let mut query = Query::new("nats");
//! let s = query.create_stream::<_, Row, _, _>(
//!     InputOptions::new("readings", EventShape::Point),
//!     &NatsInput,
//!     &NatsConfig::new("nats://127.0.0.1:4222", "READINGS", "readings"),
//! )?;
//! # let _ = s; Ok(()) }
//! ```

/// The `async-nats` crate this adapter is built on (for tests and custom setups).
pub use async_nats;

pub mod testing;

use std::marker::PhantomData;

use async_nats::jetstream::consumer::pull::OrderedConfig;
use async_nats::jetstream::consumer::DeliverPolicy;
use async_trait::async_trait;
use futures::{FutureExt, StreamExt};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use punctual_core::{Batch, EventShape};
use punctual_policies::MalformedRecord;

use crate::line::{write_item_as, LineFormat, TimeFormat};
use punctual_runtime::adapter::{
    InputAdapter, InputAdapterFactory, OutputAdapter, OutputAdapterFactory, Payload,
};
use punctual_runtime::checkpoint::SourcePosition;
use punctual_runtime::context::InputContext;
use punctual_runtime::error::AdapterError;
use punctual_runtime::query::QueryReport;

/// Where a NATS adapter connects, which JetStream stream it reads and which subject it
/// publishes to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NatsConfig {
    /// The server's URL (`nats://host:4222`).
    pub server: String,
    /// Input: the JetStream stream read.
    pub stream: String,
    /// The subject: input, only the stream's messages on it (empty: all of them); output, the
    /// subject published to.
    #[serde(default)]
    pub subject: String,
    /// Input: how each message is read (default: an item; [`LineFormat::flat`]: a flat
    /// record).
    #[serde(default)]
    pub lines: LineFormat,
    /// Input: go on even if messages of the stream are gone before it read them: at a restore,
    /// the stream no longer keeps the snapshot's sequence, or while reading, retention
    /// dropped messages it had not read yet (it fell behind a stream that keeps few), or they
    /// were deleted. They are lost to this query. Default: the input fails, naming how many
    /// are gone.
    #[serde(default)]
    pub allow_gap: bool,
}

impl NatsConfig {
    /// A server, a JetStream stream and a subject.
    pub fn new(
        server: impl Into<String>,
        stream: impl Into<String>,
        subject: impl Into<String>,
    ) -> Self {
        NatsConfig {
            server: server.into(),
            stream: stream.into(),
            subject: subject.into(),
            lines: LineFormat::default(),
            allow_gap: false,
        }
    }

    /// Input: reads each message as `lines` says.
    pub fn lines(mut self, lines: LineFormat) -> Self {
        self.lines = lines;
        self
    }

    /// Refuses an empty `server`, or an empty `value` (what `what` names).
    fn check(&self, value: &str, what: &str) -> Result<(), AdapterError> {
        if self.server.is_empty() {
            return Err(AdapterError::Config(
                "nats: `server` must not be empty".into(),
            ));
        }
        if value.is_empty() {
            return Err(AdapterError::Config(format!(
                "nats: {what} must not be empty"
            )));
        }
        Ok(())
    }

    async fn jetstream(&self) -> Result<async_nats::jetstream::Context, AdapterError> {
        let client = async_nats::connect(&self.server)
            .await
            .map_err(|e| AdapterError::Config(format!("nats {}: {e}", self.server)))?;
        Ok(async_nats::jetstream::new(client))
    }
}

fn nats_error(what: &str, e: impl std::fmt::Display) -> AdapterError {
    AdapterError::Config(format!("nats: {what}: {e}"))
}

/// Messages enqueued in one call at most (see the module doc).
const BLOCK: usize = 1024;

/// Factory of NATS JetStream inputs; see the module doc.
#[derive(Clone, Copy, Debug, Default)]
pub struct NatsInput;

/// Reads a JetStream stream in order.
pub struct NatsReader<P> {
    config: NatsConfig,
    _payload: PhantomData<fn() -> P>,
}

impl<P: Payload + DeserializeOwned> InputAdapterFactory<NatsConfig, P> for NatsInput {
    type Adapter = NatsReader<P>;

    fn create(
        &self,
        config: &NatsConfig,
        _shape: EventShape,
    ) -> Result<Self::Adapter, AdapterError> {
        config.check(&config.stream, "an input's `stream`")?;
        Ok(NatsReader {
            config: config.clone(),
            _payload: PhantomData,
        })
    }

    /// A JetStream input resumes at the stream sequence it committed.
    fn resumable(&self, _config: &NatsConfig) -> bool {
        true
    }
}

impl<P> NatsReader<P> {
    /// The sequence to start from: the snapshot's, checked against what the stream keeps, or
    /// the start of what it keeps.
    async fn start(
        &self,
        stream: &mut async_nats::jetstream::stream::Stream,
        resume: Option<&SourcePosition>,
    ) -> Result<DeliverPolicy, AdapterError> {
        let Some(at) = resume else {
            return Ok(DeliverPolicy::All);
        };
        let &[next] = at.0.as_slice() else {
            return Err(AdapterError::Config(format!(
                "a snapshot's position of a NATS input is a stream sequence, not {:?}",
                at.0
            )));
        };
        let info = stream
            .info()
            .await
            .map_err(|e| nats_error(&self.config.stream, e))?;
        let first = info.state.first_sequence;
        // An empty stream's first sequence is the next one it will take.
        let kept = info.state.messages == 0 && first <= next.max(1);
        if next < first && !kept && !self.config.allow_gap {
            return Err(AdapterError::Config(format!(
                "nats stream {}: the snapshot goes on from sequence {next}, but the stream keeps only sequences from {first} on: {} messages are gone (retention); set `allow_gap` to go on without them, or remove the checkpoint directory to start over",
                self.config.stream,
                first - next
            )));
        }
        Ok(DeliverPolicy::ByStartSequence {
            start_sequence: next.max(1),
        })
    }
}

#[async_trait]
impl<P: Payload + DeserializeOwned> InputAdapter<P> for NatsReader<P> {
    async fn run(&mut self, ctx: &mut InputContext<P>) -> Result<(), AdapterError> {
        let js = self.config.jetstream().await?;
        let mut stream = js
            .get_stream(&self.config.stream)
            .await
            .map_err(|e| nats_error(&self.config.stream, e))?;
        let deliver_policy = self.start(&mut stream, ctx.resume_from()).await?;
        let mut gaps = Gaps {
            expected: match deliver_policy {
                DeliverPolicy::ByStartSequence { start_sequence } => Some(start_sequence),
                _ => None,
            },
            checked: None,
        };
        let consumer = stream
            .create_consumer(OrderedConfig {
                deliver_policy,
                filter_subject: self.config.subject.clone(),
                ..OrderedConfig::default()
            })
            .await
            .map_err(|e| nats_error(&self.config.stream, e))?;
        let mut messages = consumer
            .messages()
            .await
            .map_err(|e| nats_error(&self.config.stream, e))?;
        // With checkpoints: the sequence after the last message enqueued.
        let whole = ctx.commits_positions();
        let mut next_sequence = None;
        let mut block = Vec::with_capacity(BLOCK);
        'read: loop {
            let first = tokio::select! {
                m = messages.next() => m,
                _ = ctx.stopping() => break,
            };
            let mut next = Some(first);
            while let Some(message) = next.take() {
                let Some(message) = message else {
                    break 'read;
                };
                let message = message.map_err(|e| nats_error(&self.config.stream, e))?;
                let sequence = message
                    .info()
                    .map_err(|e| nats_error(&self.config.stream, e))?
                    .stream_sequence;
                if !self.config.allow_gap {
                    gaps.check(&mut stream, &self.config, sequence).await?;
                }
                next_sequence = Some(sequence + 1);
                let text = String::from_utf8_lossy(&message.payload).into_owned();
                match self.config.lines.read::<P>(text.trim()) {
                    Ok(Some(item)) => block.push(item),
                    Ok(None) => break 'read,
                    Err(e) => {
                        ctx.enqueue_batch(block.drain(..)).await?;
                        ctx.report_malformed(MalformedRecord {
                            location: format!(
                                "nats stream {} sequence {sequence}",
                                self.config.stream
                            ),
                            message: e,
                            text,
                        })
                        .await;
                    }
                }
                if block.len() < BLOCK {
                    next = messages.next().now_or_never();
                }
            }
            ctx.enqueue_batch(block.drain(..)).await?;
            commit(ctx, whole, next_sequence).await;
        }
        // What was read before an `eof` message or the stop.
        if !block.is_empty() && !ctx.is_stopping() {
            ctx.enqueue_batch(block.drain(..)).await?;
        }
        commit(ctx, whole, next_sequence).await;
        Ok(())
    }
}

/// Where a NATS input's next message should be, to find the messages of the stream it never
/// saw: retention dropped them while it was behind (a stream that keeps few messages and a
/// reader slower than its writers), or they were deleted.
struct Gaps {
    /// The sequence after the last message read (or the one it starts from).
    expected: Option<u64>,
    /// When the stream was last asked what it keeps (with a subject, sequences of other
    /// subjects come between this input's messages: it asks at most once a second).
    checked: Option<std::time::Instant>,
}

impl Gaps {
    /// Message `sequence` came: an error naming how many messages are gone if some were
    /// missed.
    async fn check(
        &mut self,
        stream: &mut async_nats::jetstream::stream::Stream,
        config: &NatsConfig,
        sequence: u64,
    ) -> Result<(), AdapterError> {
        let expected = self.expected.replace(sequence + 1);
        let Some(want) = expected.filter(|w| sequence > *w) else {
            return Ok(());
        };
        let gone = if config.subject.is_empty() {
            sequence - want
        } else {
            if self
                .checked
                .is_some_and(|t| t.elapsed() < std::time::Duration::from_secs(1))
            {
                return Ok(());
            }
            self.checked = Some(std::time::Instant::now());
            let info = stream
                .info()
                .await
                .map_err(|e| nats_error(&config.stream, e))?;
            info.state.first_sequence.saturating_sub(want)
        };
        if gone == 0 {
            return Ok(());
        }
        Err(AdapterError::Config(format!(
            "nats stream {}: {gone} messages from sequence {want} on are gone before this input \
             read them (retention dropped them while it was behind, or they were deleted); set \
             `allow_gap` to go on without them",
            config.stream
        )))
    }
}

/// With checkpoints: says that the input stands at stream sequence `next`.
async fn commit<P: Payload>(ctx: &mut InputContext<P>, whole: bool, next: Option<u64>) {
    if let (true, Some(next)) = (whole, next) {
        ctx.commit_position(SourcePosition(vec![next])).await;
    }
}

/// Factory of NATS JetStream outputs; see the module doc.
#[derive(Clone, Copy, Debug, Default)]
pub struct NatsOutput;

/// Publishes a stream to a subject, with message ids for de-duplication.
pub struct NatsWriter<P> {
    config: NatsConfig,
    js: Option<async_nats::jetstream::Context>,
    /// Messages published so far (the next one's position).
    published: u64,
    /// Publishes not acknowledged yet.
    pending: Vec<async_nats::jetstream::context::PublishAckFuture>,
    _payload: PhantomData<fn(P)>,
}

impl<P: Payload + Serialize> OutputAdapterFactory<NatsConfig, P> for NatsOutput {
    type Adapter = NatsWriter<P>;

    fn create(
        &self,
        config: &NatsConfig,
        _shape: EventShape,
    ) -> Result<Self::Adapter, AdapterError> {
        config.check(&config.subject, "an output's `subject`")?;
        Ok(NatsWriter {
            config: config.clone(),
            js: None,
            published: 0,
            pending: Vec::new(),
            _payload: PhantomData,
        })
    }
}

impl<P> NatsWriter<P> {
    /// Waits for every publish to be acknowledged.
    async fn acknowledged(&mut self) -> Result<(), AdapterError> {
        for ack in self.pending.drain(..) {
            ack.await.map_err(|e| nats_error(&self.config.subject, e))?;
        }
        Ok(())
    }
}

#[async_trait]
impl<P: Payload + Serialize> OutputAdapter<P> for NatsWriter<P> {
    async fn write(&mut self, batch: &Batch<P>) -> Result<(), AdapterError> {
        if self.js.is_none() {
            self.js = Some(self.config.jetstream().await?);
        }
        let Some(js) = self.js.clone() else {
            return Ok(());
        };
        for item in batch.items() {
            let mut line = Vec::new();
            write_item_as(item, TimeFormat::Auto, &mut line).map_err(AdapterError::other)?;
            let mut headers = async_nats::HeaderMap::new();
            let id = format!("{}-{}", self.config.subject, self.published);
            headers.insert("Nats-Msg-Id", id.as_str());
            let ack = js
                .publish_with_headers(self.config.subject.clone(), headers, line.into())
                .await
                .map_err(|e| nats_error(&self.config.subject, e))?;
            self.pending.push(ack);
            self.published += 1;
            if self.pending.len() >= BLOCK {
                self.acknowledged().await?;
            }
        }
        Ok(())
    }

    /// It can: its position is the count of messages published, each with that count as its
    /// message id.
    fn can_checkpoint(&self) -> bool {
        true
    }

    async fn checkpoint(&mut self) -> Result<u64, AdapterError> {
        self.acknowledged().await?;
        Ok(self.published)
    }

    /// Goes on numbering from `position`: what is published again has the ids it had, and
    /// JetStream drops the duplicates.
    async fn rewind(&mut self, position: u64) -> Result<(), AdapterError> {
        self.published = position;
        Ok(())
    }

    async fn finish(&mut self, _report: &QueryReport) -> Result<(), AdapterError> {
        self.acknowledged().await
    }
}
