//! Kafka (feature `kafka`, with `rdkafka`): [`KafkaInput`] consumes a topic, [`KafkaOutput`]
//! produces to one. A message holds one JSON line: an item of the form of [`crate::line`], or
//! a flat record timed by one of its fields ([`KafkaConfig::lines`] with [`LineFormat::flat`]).
//!
//! Each Kafka partition is one partition of the stream's watermark strategy: the input enqueues
//! every event with its partition and the broker's timestamp as its arrival time, so with
//! `Watermark::partitioned(n, bound)` each partition has its own watermark, the stream's CTI is
//! the minimum over the partitions, idle partitions drop out after the idle timeout, and with a
//! maximum drift the input pauses partitions that run too far ahead (and resumes them when the
//! others catch up). Messages go in in blocks: after one arrives, those already received (up to
//! 1,024) are enqueued with it in one call. While messages keep coming, a block is enqueued
//! once the next one is read, and the strategy is told the range of times of that next block per
//! partition (`InputContext::look_ahead`: with `Watermark::partitioned(..).look_ahead()`,
//! YTsaurus Flow's estimate). With `until_end`, the input ends once every partition has reached its end
//! (replaying a topic); otherwise it runs until the query stops. Malformed messages are
//! skipped, counted and dead-lettered with topic, partition and offset. The factories declare no
//! advance-time settings: give the stream a (partitioned) watermark strategy.
//!
//! To read the topic's partitions on several workers, name them ([`KafkaConfig::partitions`])
//! or take them all ([`KafkaConfig::each_partition`]): each is then a partition of the
//! source, an input of its own assigned that Kafka partition, with its own CTIs (and idle
//! timeout) where it is read.
//!
//! ```no_run
//! use punctual_adapters::{KafkaConfig, KafkaInput};
//! use punctual_runtime::{InputOptions, Query};
//! use punctual_core::{EventShape, TimeSpan};
//! use punctual_rows::{Row};
//! use punctual_policies::Watermark;
//! # fn demo() -> Result<(), punctual_runtime::QueryError> {
//! let mut query = Query::new("kafka");
//! let s = query.create_stream::<_, Row, _, _>(
//!     InputOptions::new("clicks", EventShape::Point)
//!         .watermark(Watermark::<Row>::partitioned(8, TimeSpan::from_secs(2)).idle_timeout(TimeSpan::from_secs(30))),
//!     &KafkaInput,
//!     &KafkaConfig::new("localhost:9092", "clicks"),
//! )?;
//! # let _ = s; Ok(()) }
//! ```

/// The `rdkafka` crate this adapter is built on (for tests and custom setups).
pub use rdkafka;

use std::marker::PhantomData;
use std::time::Duration;

use async_trait::async_trait;
use futures::FutureExt;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{BorrowedMessage, Message};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::TopicPartitionList;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use punctual_core::{Batch, EventShape, StreamItem, Time};
use punctual_policies::{Arrival, MalformedRecord};

use crate::line::{write_item_as, LineFormat, TimeFormat};

mod resume;
use punctual_runtime::adapter::{
    InputAdapter, InputAdapterFactory, OutputAdapter, OutputAdapterFactory, Payload,
};
use punctual_runtime::context::InputContext;
use punctual_runtime::error::{AdapterError, EnqueueError};
use punctual_runtime::query::QueryReport;
use resume::{commit, resumed_offsets};

/// Where a Kafka adapter connects.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KafkaConfig {
    /// `bootstrap.servers`.
    pub brokers: String,
    /// The topic.
    pub topic: String,
    /// The consumer group (input; default `punctual-` and the topic).
    #[serde(default)]
    pub group_id: Option<String>,
    /// Input: end once every partition has reached its end (default: run until stopped).
    #[serde(default)]
    pub until_end: bool,
    /// Input: read these partitions of the topic, each as a partition of the source (an
    /// input of its own, read on its own worker: [`InputAdapterFactory::partitions`]),
    /// assigned rather than balanced by the consumer group. Default: the whole topic as one
    /// input, its partitions balanced by the group.
    #[serde(default)]
    pub partitions: Option<Vec<i32>>,
    /// Input: read every partition of the topic, each as a partition of the source, as if
    /// [`KafkaConfig::partitions`] named them all: the partitions are found from the
    /// brokers' metadata when the query is built (a blocking call of up to 5 s).
    #[serde(default)]
    pub each_partition: bool,
    /// Input: how each message is read (default: an item; [`LineFormat::flat`]: a flat
    /// record).
    #[serde(default)]
    pub lines: LineFormat,
    /// Input, restored from a snapshot: go on even if the topic no longer keeps a partition's
    /// messages from the snapshot's offset (they were deleted by retention: lost to this
    /// query). Default: the restart fails, naming the partition and how many messages are
    /// gone.
    #[serde(default)]
    pub allow_gap: bool,
}

impl KafkaConfig {
    /// Brokers and a topic.
    pub fn new(brokers: impl Into<String>, topic: impl Into<String>) -> Self {
        KafkaConfig {
            brokers: brokers.into(),
            topic: topic.into(),
            group_id: None,
            until_end: false,
            partitions: None,
            each_partition: false,
            lines: LineFormat::default(),
            allow_gap: false,
        }
    }

    /// Input: reads each message as `lines` says (default: an item; [`LineFormat::flat`]: a
    /// flat record, timed by one of its fields).
    pub fn lines(mut self, lines: LineFormat) -> Self {
        self.lines = lines;
        self
    }

    /// Read every partition of the topic, each as a partition of the source (see
    /// [`KafkaConfig::each_partition`]).
    pub fn each_partition(mut self) -> Self {
        self.each_partition = true;
        self
    }

    /// The partitions read as partitions of the source: those named, or every partition of
    /// the topic (asking the brokers), or none (the topic as one input).
    fn partition_list(&self) -> Result<Option<Vec<i32>>, AdapterError> {
        if let Some(list) = &self.partitions {
            return Ok(Some(list.clone()));
        }
        if !self.each_partition {
            return Ok(None);
        }
        let consumer: rdkafka::consumer::BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &self.brokers)
            .create()
            .map_err(kafka_error)?;
        let metadata = consumer
            .fetch_metadata(Some(&self.topic), Duration::from_secs(5))
            .map_err(kafka_error)?;
        let ids: Vec<i32> = metadata
            .topics()
            .iter()
            .filter(|t| t.name() == self.topic)
            .flat_map(|t| t.partitions().iter().map(|p| p.id()))
            .collect();
        if ids.is_empty() {
            return Err(AdapterError::Config(format!(
                "topic `{}` has no partitions at {}",
                self.topic, self.brokers
            )));
        }
        Ok(Some(ids))
    }

    /// Read these partitions of the topic, each as a partition of the source.
    pub fn partitions(mut self, partitions: impl IntoIterator<Item = i32>) -> Self {
        self.partitions = Some(partitions.into_iter().collect());
        self
    }

    /// End the input once every partition has reached its end.
    pub fn until_end(mut self) -> Self {
        self.until_end = true;
        self
    }
}

fn kafka_error(e: KafkaError) -> AdapterError {
    AdapterError::other(e)
}

/// Factory of Kafka inputs; see the module doc.
#[derive(Clone, Copy, Debug, Default)]
pub struct KafkaInput;

/// Consumes one topic (or one partition of it) into a stream.
pub struct KafkaReader<P> {
    config: KafkaConfig,
    /// The partition it is assigned, if any (else it subscribes to the topic).
    partition: Option<i32>,
    _payload: PhantomData<fn() -> P>,
}

impl<P: Payload + DeserializeOwned> InputAdapterFactory<KafkaConfig, P> for KafkaInput {
    type Adapter = KafkaReader<P>;

    fn create(
        &self,
        config: &KafkaConfig,
        shape: EventShape,
    ) -> Result<Self::Adapter, AdapterError> {
        self.create_partition(config, shape, 0)
    }

    /// One per partition named in [`KafkaConfig::partitions`], or per partition of the topic
    /// with [`KafkaConfig::each_partition`] (one for the whole topic otherwise).
    fn partitions(&self, config: &KafkaConfig) -> usize {
        // A failure to ask the brokers shows when the first partition is made.
        match config.partition_list() {
            Ok(Some(list)) => list.len().max(1),
            _ => 1,
        }
    }

    /// A Kafka input resumes at the offsets it committed, per partition (it is then assigned
    /// its partitions rather than balanced by the consumer group).
    fn resumable(&self, _config: &KafkaConfig) -> bool {
        true
    }

    fn create_partition(
        &self,
        config: &KafkaConfig,
        _shape: EventShape,
        partition: usize,
    ) -> Result<Self::Adapter, AdapterError> {
        if config.topic.is_empty() || config.brokers.is_empty() {
            return Err(AdapterError::Config(
                "brokers and topic must not be empty".into(),
            ));
        }
        let assigned = match config.partition_list()? {
            None => None,
            Some(list) => Some(*list.get(partition).ok_or_else(|| {
                AdapterError::Config("`partitions` must name at least one partition".into())
            })?),
        };
        Ok(KafkaReader {
            config: config.clone(),
            partition: assigned,
            _payload: PhantomData,
        })
    }
}

impl<P> KafkaReader<P> {
    fn consumer(&self) -> Result<StreamConsumer, AdapterError> {
        let group = self
            .config
            .group_id
            .clone()
            .unwrap_or_else(|| format!("punctual-{}", self.config.topic));
        ClientConfig::new()
            .set("bootstrap.servers", &self.config.brokers)
            .set("group.id", &group)
            .set("enable.auto.commit", "true")
            .set("auto.offset.reset", "earliest")
            .set(
                "enable.partition.eof",
                if self.config.until_end {
                    "true"
                } else {
                    "false"
                },
            )
            .create()
            .map_err(kafka_error)
    }
}

/// Pauses the partitions the stream asks to pause and resumes the others.
fn align(consumer: &StreamConsumer, topic: &str, paused: &mut Vec<usize>, now: Vec<usize>) {
    if *paused == now {
        return;
    }
    let list = |ps: &[usize]| {
        let mut l = TopicPartitionList::new();
        for &p in ps {
            l.add_partition(topic, p as i32);
        }
        l
    };
    let resume: Vec<usize> = paused
        .iter()
        .copied()
        .filter(|p| !now.contains(p))
        .collect();
    let pause: Vec<usize> = now
        .iter()
        .copied()
        .filter(|p| !paused.contains(p))
        .collect();
    if !pause.is_empty() {
        let _ = consumer.pause(&list(&pause));
    }
    if !resume.is_empty() {
        let _ = consumer.resume(&list(&resume));
    }
    *paused = now;
}

/// Messages enqueued in one call at most: after a message arrives, those already received
/// are taken too (without waiting), up to this many.
const BLOCK: usize = 1024;

/// What one received message (or receive error) asks of the input.
enum Received<P> {
    /// An item, with its arrival (broker timestamp and partition).
    Item(StreamItem<P>, Arrival),
    /// Nothing to enqueue (an end-of-stream line, or a partition end that does not end the
    /// input).
    Nothing,
    /// A message that could not be parsed.
    Malformed(MalformedRecord),
    /// Every partition has reached its end (`until_end`).
    End,
}

impl<P: Payload + DeserializeOwned> KafkaReader<P> {
    /// Reads one message (or receive error).
    fn receive(
        &self,
        consumer: &StreamConsumer,
        message: Result<BorrowedMessage<'_>, KafkaError>,
        (at_end, offsets): (
            &mut std::collections::BTreeSet<i32>,
            &mut std::collections::BTreeMap<i32, i64>,
        ),
    ) -> Result<Received<P>, AdapterError> {
        let message = match message {
            Ok(m) => m,
            Err(KafkaError::PartitionEOF(p)) => {
                at_end.insert(p);
                let partitions = match self.partition {
                    Some(_) => 1,
                    None => consumer
                        .fetch_metadata(Some(&self.config.topic), Duration::from_secs(5))
                        .ok()
                        .and_then(|m| m.topics().first().map(|t| t.partitions().len()))
                        .unwrap_or(usize::MAX),
                };
                let ended = self.config.until_end && at_end.len() >= partitions;
                return Ok(if ended {
                    Received::End
                } else {
                    Received::Nothing
                });
            }
            Err(e) => return Err(kafka_error(e)),
        };
        let partition = message.partition();
        at_end.remove(&partition);
        offsets.insert(partition, message.offset() + 1);
        let text = String::from_utf8_lossy(message.payload().unwrap_or_default()).into_owned();
        let arrival = Arrival {
            // A timestamp beyond the time line (or none) is no arrival time.
            time: message
                .timestamp()
                .to_millis()
                .and_then(|ms| ms.checked_mul(10_000))
                .map(Time::from_ticks)
                .filter(|t| t.is_finite()),
            partition: usize::try_from(partition).ok(),
        };
        Ok(match self.config.lines.read::<P>(text.trim()) {
            Ok(Some(item)) => Received::Item(item, arrival),
            Ok(None) => Received::Nothing,
            Err(e) => Received::Malformed(MalformedRecord {
                location: format!(
                    "kafka {} partition {partition} offset {}",
                    self.config.topic,
                    message.offset()
                ),
                message: e,
                text,
            }),
        })
    }
}

/// Enqueues a block of items with their arrivals (leaving it empty); rejected items are counted
/// and dead-lettered by the query, and do not stop the input.
async fn flush<P: Payload>(
    ctx: &mut InputContext<P>,
    block: &mut Vec<(StreamItem<P>, Arrival)>,
) -> Result<(), AdapterError> {
    if block.is_empty() {
        return Ok(());
    }
    match ctx.enqueue_batch_with(block.drain(..)).await {
        Ok(_) | Err(EnqueueError::Rejected { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

#[async_trait]
impl<P: Payload + DeserializeOwned> InputAdapter<P> for KafkaReader<P> {
    async fn run(&mut self, ctx: &mut InputContext<P>) -> Result<(), AdapterError> {
        let consumer = self.consumer()?;
        // With checkpoints: the offset after the last message read, per partition, committed
        // each time everything read is enqueued; restored from a snapshot, the start.
        let whole = ctx.commits_positions();
        let mut offsets = resumed_offsets(ctx.resume_from())?;
        self.start(&consumer, whole, &offsets)?;
        let mut at_end = std::collections::BTreeSet::new();
        let mut paused = Vec::new();
        // `held`: a block read, enqueued once the next one is read (or nothing more is there).
        let (mut held, mut block) = (Vec::with_capacity(BLOCK), Vec::with_capacity(BLOCK));
        let mut ready = None;
        loop {
            let first = match ready.take() {
                Some(message) => message,
                None => {
                    // Nothing more is there now: what is held goes in before waiting.
                    flush(ctx, &mut held).await?;
                    tokio::select! {
                        m = consumer.recv() => m,
                        _ = ctx.stopping() => return Ok(()),
                    }
                }
            };
            // This message and those already received, up to a block.
            let mut next = Some(first);
            while let Some(message) = next.take() {
                match self.receive(&consumer, message, (&mut at_end, &mut offsets))? {
                    Received::Item(item, arrival) => block.push((item, arrival)),
                    Received::Nothing => {}
                    Received::Malformed(record) => {
                        flush(ctx, &mut held).await?;
                        flush(ctx, &mut block).await?;
                        ctx.report_malformed(record).await;
                    }
                    Received::End => {
                        flush(ctx, &mut held).await?;
                        flush(ctx, &mut block).await?;
                        return commit(ctx, whole, &offsets).await;
                    }
                }
                if block.len() < BLOCK {
                    next = consumer.recv().now_or_never();
                }
            }
            // The block before this one goes in; the strategy learns what this one holds per
            // partition (the look-ahead term); this one is held until the next is read.
            flush(ctx, &mut held).await?;
            for (partition, range) in ranges_by_partition(&block) {
                ctx.look_ahead(partition, range).await?;
            }
            std::mem::swap(&mut held, &mut block);
            if whole {
                // With checkpoints nothing read waits: the input stands at its offsets.
                flush(ctx, &mut held).await?;
                commit(ctx, whole, &offsets).await?;
            }
            ready = consumer.recv().now_or_never();
            align(
                &consumer,
                &self.config.topic,
                &mut paused,
                ctx.paused_partitions(),
            );
        }
    }
}

/// Per partition, the least and highest start times of the block's events.
fn ranges_by_partition<P>(
    block: &[(StreamItem<P>, Arrival)],
) -> std::collections::BTreeMap<usize, (Time, Time)> {
    let mut ranges = std::collections::BTreeMap::new();
    for (item, arrival) in block {
        if let (StreamItem::Insert(e), Some(p)) = (item, arrival.partition) {
            let t = e.kind.start();
            ranges
                .entry(p)
                .and_modify(|(lo, hi): &mut (Time, Time)| {
                    *lo = (*lo).min(t);
                    *hi = (*hi).max(t);
                })
                .or_insert((t, t));
        }
    }
    ranges
}

/// Factory of Kafka outputs: every event and CTI as one message on the topic.
#[derive(Clone, Copy, Debug, Default)]
pub struct KafkaOutput;

/// Produces a stream to a topic.
pub struct KafkaWriter<P> {
    config: KafkaConfig,
    producer: Option<FutureProducer>,
    _payload: PhantomData<fn(P)>,
}

impl<P: Payload + Serialize> OutputAdapterFactory<KafkaConfig, P> for KafkaOutput {
    type Adapter = KafkaWriter<P>;

    fn create(
        &self,
        config: &KafkaConfig,
        _shape: EventShape,
    ) -> Result<Self::Adapter, AdapterError> {
        Ok(KafkaWriter {
            config: config.clone(),
            producer: None,
            _payload: PhantomData,
        })
    }
}

#[async_trait]
impl<P: Payload + Serialize> OutputAdapter<P> for KafkaWriter<P> {
    async fn write(&mut self, batch: &Batch<P>) -> Result<(), AdapterError> {
        if self.producer.is_none() {
            self.producer = Some(
                ClientConfig::new()
                    .set("bootstrap.servers", &self.config.brokers)
                    .create()
                    .map_err(kafka_error)?,
            );
        }
        let Some(producer) = &self.producer else {
            return Ok(());
        };
        for item in batch.items() {
            let mut line = Vec::new();
            write_item_as(item, TimeFormat::Auto, &mut line).map_err(AdapterError::other)?;
            producer
                .send(
                    FutureRecord::<(), [u8]>::to(&self.config.topic).payload(&line[..]),
                    Duration::from_secs(10),
                )
                .await
                .map_err(|(e, _)| kafka_error(e))?;
        }
        Ok(())
    }

    async fn finish(&mut self, _report: &QueryReport) -> Result<(), AdapterError> {
        if let Some(p) = &self.producer {
            rdkafka::producer::Producer::flush(p, Duration::from_secs(10)).map_err(kafka_error)?;
        }
        Ok(())
    }
}
