//! Where a Kafka input starts: its partitions assigned at a snapshot's offsets (checked
//! against what the topic still keeps) or at the beginning, and the offsets it commits.

use std::time::Duration;

use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::TopicPartitionList;

use super::{kafka_error, KafkaReader};
use punctual_runtime::adapter::Payload;
use punctual_runtime::context::InputContext;
use punctual_runtime::error::AdapterError;

impl<P> KafkaReader<P> {
    /// Assigns the consumer its partitions at their offsets (a snapshot's, or the beginning),
    /// checking that the topic still keeps each snapshot offset; or, without checkpoints and
    /// without a partition of its own, subscribes to the topic (balanced by the group).
    pub(super) fn start(
        &self,
        consumer: &StreamConsumer,
        checkpoints: bool,
        offsets: &std::collections::BTreeMap<i32, i64>,
    ) -> Result<(), AdapterError> {
        let topic = &self.config.topic;
        let ids = match self.partition {
            Some(p) => vec![p],
            None if checkpoints => {
                let metadata = consumer
                    .fetch_metadata(Some(topic), Duration::from_secs(5))
                    .map_err(kafka_error)?;
                metadata
                    .topics()
                    .iter()
                    .filter(|t| t.name() == topic)
                    .flat_map(|t| t.partitions().iter().map(|p| p.id()))
                    .collect()
            }
            None => return consumer.subscribe(&[topic]).map_err(kafka_error),
        };
        let mut list = TopicPartitionList::new();
        for p in ids {
            let at = match offsets.get(&p) {
                Some(&offset) => {
                    self.check_kept(consumer, p, offset)?;
                    rdkafka::Offset::Offset(offset)
                }
                None => rdkafka::Offset::Beginning,
            };
            list.add_partition_offset(topic, p, at)
                .map_err(kafka_error)?;
        }
        consumer.assign(&list).map_err(kafka_error)
    }

    /// Fails if partition `p` no longer keeps offset `offset` (retention deleted the messages
    /// from it on), naming how many are gone, unless the configuration allows the gap.
    fn check_kept(
        &self,
        consumer: &StreamConsumer,
        p: i32,
        offset: i64,
    ) -> Result<(), AdapterError> {
        let (low, _) = consumer
            .fetch_watermarks(&self.config.topic, p, Duration::from_secs(5))
            .map_err(kafka_error)?;
        if offset >= low || self.config.allow_gap {
            return Ok(());
        }
        Err(AdapterError::Config(format!(
            "kafka {} partition {p}: the snapshot goes on from offset {offset}, but the topic keeps only offsets from {low} on: {} messages are gone (retention); set `allow_gap` to go on without them, or remove the checkpoint directory to start over",
            self.config.topic,
            low - offset
        )))
    }
}

/// The offsets a Kafka input resumes at, by partition, from its snapshot position (pairs of
/// partition and offset); none without one.
pub(super) fn resumed_offsets(
    at: Option<&punctual_runtime::checkpoint::SourcePosition>,
) -> Result<std::collections::BTreeMap<i32, i64>, AdapterError> {
    let Some(at) = at else {
        return Ok(std::collections::BTreeMap::new());
    };
    if at.0.len() % 2 != 0 {
        return Err(AdapterError::Config(format!(
            "a snapshot's position of a Kafka input is pairs of partition and offset, not {:?}",
            at.0
        )));
    }
    Ok(at
        .0
        .chunks(2)
        .map(|pair| (pair[0] as i32, pair[1] as i64))
        .collect())
}

/// With checkpoints: says that the input stands at `offsets` (everything before them is
/// enqueued).
pub(super) async fn commit<P: Payload>(
    ctx: &mut InputContext<P>,
    whole: bool,
    offsets: &std::collections::BTreeMap<i32, i64>,
) -> Result<(), AdapterError> {
    if whole {
        let at = offsets
            .iter()
            .flat_map(|(&p, &o)| [p as u64, o as u64])
            .collect();
        ctx.commit_position(punctual_runtime::checkpoint::SourcePosition(at))
            .await;
    }
    Ok(())
}
