//! Kafka against librdkafka's in-process mock cluster (feature `kafka`): one Kafka partition is
//! one partition of the watermark strategy.

use std::time::Duration;

mod common;
use common::point;

use punctual_adapters::kafka::rdkafka::config::ClientConfig;
use punctual_adapters::kafka::rdkafka::consumer::{Consumer, StreamConsumer};
use punctual_adapters::kafka::rdkafka::message::Message;
use punctual_adapters::kafka::rdkafka::mocking::MockCluster;
use punctual_adapters::kafka::rdkafka::producer::{FutureProducer, FutureRecord};
use punctual_adapters::{CollectOutput, KafkaConfig, KafkaInput, KafkaOutput};
use punctual_core::{StreamItem, Time, TimeSpan};
use punctual_policies::Watermark;
use punctual_runtime::{DeadLetterCollector, Query};

fn t(x: i64) -> Time {
    Time::from_ticks(x)
}

async fn produce(brokers: &str, topic: &str, messages: &[(i32, &str)]) {
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .create()
        .expect("producer");
    // Queued in order (each send is polled, so queued, in turn), then awaited together.
    let sends = messages.iter().map(|(partition, line)| {
        producer.send(
            FutureRecord::<(), str>::to(topic)
                .partition(*partition)
                .payload(*line),
            Duration::from_secs(5),
        )
    });
    for sent in futures::future::join_all(sends).await {
        sent.expect("produced");
    }
}

#[tokio::test]
async fn partitions_have_their_own_watermarks_and_the_cti_is_their_minimum() {
    let cluster = MockCluster::new(1).expect("mock cluster");
    cluster.create_topic("readings", 2, 1).expect("topic");
    let brokers = cluster.bootstrap_servers();
    let line = |t: i64, v: i64| format!("{{\"kind\":\"point\",\"start\":{t},\"payload\":{v}}}");
    let (a, b, c, d) = (line(10, 1), line(20, 2), line(5, 3), line(8, 4));
    produce(
        &brokers,
        "readings",
        &[(0, &a), (0, &b), (1, &c), (1, &d), (0, "not json")],
    )
    .await;
    tokio::time::timeout(Duration::from_secs(60), async {
        let mut query = Query::new("kafka");
        let s = query
            .create_stream::<_, i64, _, _>(
                point("readings").watermark(Watermark::<i64>::partitioned(2, TimeSpan::ZERO)),
                &KafkaInput,
                &KafkaConfig::new(brokers.clone(), "readings").until_end(),
            )
            .expect("binds");
        let out = CollectOutput::new();
        query.bind_output(&s, &out, &()).expect("binds");
        let report = query.start().expect("starts").wait().await.expect("runs");
        let items = out.items();
        let ctis: Vec<Time> = items
            .iter()
            .filter_map(|i| match i {
                StreamItem::Cti(t) => Some(*t),
                StreamItem::Insert(_) => None,
            })
            .collect();
        // Partition 0 reaches 20, partition 1 only 8: the stream's CTI is their minimum.
        assert!(ctis.contains(&t(8)), "{ctis:?}");
        assert!(
            !ctis.iter().any(|&c| c > t(8) && c < Time::INF),
            "never past partition 1: {ctis:?}"
        );
        assert_eq!(ctis.last(), Some(&Time::INF));
        assert_eq!(items.len() - ctis.len(), 4);
        let c = report.counters("readings").expect("stream");
        assert_eq!((c.events_in, c.malformed, c.dropped), (4, 1, 0));
    })
    .await
    .expect("finishes in time");
}

#[tokio::test]
async fn an_output_produces_json_lines() {
    let cluster = MockCluster::new(1).expect("mock cluster");
    cluster.create_topic("out", 1, 1).expect("topic");
    let brokers = cluster.bootstrap_servers();
    tokio::time::timeout(Duration::from_secs(60), async {
        let items = vec![StreamItem::point(t(1), 7i64), StreamItem::Cti(Time::INF)];
        let config = KafkaConfig::new(brokers.clone(), "out");
        common::write_items(&items, &KafkaOutput, &config).await;
        let consumer: StreamConsumer = ClientConfig::new()
            .set("bootstrap.servers", &brokers)
            .set("group.id", "check")
            .set("auto.offset.reset", "earliest")
            .create()
            .expect("consumer");
        consumer.subscribe(&["out"]).expect("subscribes");
        let mut got = Vec::new();
        while got.len() < 2 {
            let m = consumer.recv().await.expect("message");
            got.push(String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned());
        }
        assert_eq!(
            got,
            vec![
                r#"{"kind":"point","start":1,"payload":7}"#,
                r#"{"kind":"cti","time":"inf"}"#
            ]
        );
    })
    .await
    .expect("finishes in time");
}

/// Reads topic `topic` (made with `partitions` partitions, holding one point per message
/// given as `(partition, time, payload)`) with `config` to its end, each event with a
/// watermark of its own input; returns each input's name and events read, and the payloads.
async fn read_partitioned(
    topic: &str,
    partitions: i32,
    messages: &[(i32, i64, i64)],
    config: impl Fn(KafkaConfig) -> KafkaConfig,
) -> (Vec<(String, u64)>, Vec<i64>) {
    let cluster = MockCluster::new(1).expect("mock cluster");
    cluster.create_topic(topic, partitions, 1).expect("topic");
    let brokers = cluster.bootstrap_servers();
    let lines: Vec<(i32, String)> = messages
        .iter()
        .map(|&(p, t, v)| {
            (
                p,
                format!("{{\"kind\":\"point\",\"start\":{t},\"payload\":{v}}}"),
            )
        })
        .collect();
    let borrowed: Vec<(i32, &str)> = lines.iter().map(|(p, l)| (*p, l.as_str())).collect();
    produce(&brokers, topic, &borrowed).await;
    tokio::time::timeout(Duration::from_secs(60), async {
        let mut query = Query::new("kafka-partitions");
        let s = query
            .create_stream::<_, i64, _, _>(
                point("readings").watermark(Watermark::<i64>::bounded(TimeSpan::ZERO)),
                &KafkaInput,
                &config(KafkaConfig::new(brokers.clone(), topic).until_end()),
            )
            .expect("binds");
        let out = CollectOutput::new();
        query.bind_output(&s, &out, &()).expect("binds");
        let report = query.start().expect("starts").wait().await.expect("runs");
        let read = report
            .streams
            .iter()
            .map(|(n, c)| (n.clone(), c.events_in))
            .collect();
        (read, out.payloads())
    })
    .await
    .expect("finishes in time")
}

/// Partitions named in the configuration are partitions of the source: an input each,
/// assigned its Kafka partition, with its own counters and CTIs (a watermark each), the
/// stream their union; each ends at its partition's end.
#[tokio::test]
async fn named_partitions_are_inputs_of_their_own() {
    let messages = [(0, 10, 1), (0, 20, 2), (1, 5, 3)];
    let (read, payloads) = read_partitioned("parts", 2, &messages, |c| c.partitions([0, 1])).await;
    let names: Vec<(&str, u64)> = read.iter().map(|(n, e)| (n.as_str(), *e)).collect();
    assert_eq!(names, [("readings#0", 2), ("readings#1", 1)]);
    assert_eq!(payloads, [3, 1, 2], "the union, in time order");
}

/// Every partition of a topic, found from the brokers when the query is built: an input each.
#[tokio::test]
async fn each_partition_of_a_topic_is_an_input_of_its_own() {
    let messages = [(0, 1, 1), (1, 2, 2), (2, 3, 3)];
    let (read, payloads) =
        read_partitioned("three", 3, &messages, KafkaConfig::each_partition).await;
    let names: Vec<(&str, u64)> = read.iter().map(|(n, e)| (n.as_str(), *e)).collect();
    assert_eq!(
        names,
        [("readings#0", 1), ("readings#1", 1), ("readings#2", 1)]
    );
    assert_eq!(payloads, [1, 2, 3]);
}

/// Flat records in Kafka messages (`KafkaConfig::lines`): each message a JSON object timed by
/// one of its fields, read for the fields asked for, in arrival order (an unordered stream);
/// a message without its time is malformed (counted, and dead-lettered).
#[tokio::test]
async fn messages_of_flat_records_are_read_for_their_fields() {
    use punctual_adapters::line::{LineFormat, TimeFormat};
    use punctual_rows::Row;
    let cluster = MockCluster::new(1).expect("mock cluster");
    cluster.create_topic("records", 1, 1).expect("topic");
    let brokers = cluster.bootstrap_servers();
    produce(
        &brokers,
        "records",
        &[
            (0, r#"{"ts":"2026-12-01T10:00:02Z","device":"a","v":1}"#),
            (0, r#"{"ts":"2026-12-01T10:00:01Z","device":"b","v":2}"#),
            (0, r#"{"device":"c","v":3}"#),
        ],
    )
    .await;
    tokio::time::timeout(Duration::from_secs(60), async {
        let mut query = Query::new("kafka-flat");
        let lines = LineFormat::flat("ts", TimeFormat::Rfc3339).fields(["device"]);
        let s = query
            .create_stream::<_, Row, _, _>(
                point("records")
                    .watermark(Watermark::<Row>::partitioned(1, TimeSpan::from_secs(5)))
                    .unordered(),
                &KafkaInput,
                &KafkaConfig::new(brokers.clone(), "records")
                    .until_end()
                    .lines(lines),
            )
            .expect("binds");
        let out = CollectOutput::new();
        query.bind_output(&s, &out, &()).expect("binds");
        let report = query.start().expect("starts").wait().await.expect("runs");
        let at = |s: &str| Time::parse_rfc3339(s).expect("a time");
        let events: Vec<StreamItem<Row>> = out
            .items()
            .into_iter()
            .filter(|i| matches!(i, StreamItem::Insert(_)))
            .collect();
        assert_eq!(
            events,
            vec![
                StreamItem::point(at("2026-12-01T10:00:02Z"), Row::new().with("device", "a")),
                StreamItem::point(at("2026-12-01T10:00:01Z"), Row::new().with("device", "b")),
            ]
        );
        let c = report.counters("records").expect("stream");
        assert_eq!(c.malformed, 1, "{c:?}");
    })
    .await
    .expect("finishes in time");
}

/// A query reading a topic with checkpoints, aborted mid-run and started again with the same
/// directory, goes on from its snapshot's offsets: its output file ends as an uninterrupted
/// run's, byte for byte, the counters go on from the snapshot's, and the malformed message
/// near the start is not read again (its dead letter came from the first run only).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_aborted_and_restarted_from_its_snapshot_gives_the_uninterrupted_output() {
    let cluster = MockCluster::new(1).expect("mock cluster");
    cluster.create_topic("clicks", 1, 1).expect("topic");
    let brokers = cluster.bootstrap_servers();
    let mut lines: Vec<String> = (0..20_000i64)
        .map(|i| {
            format!(
                "{{\"kind\":\"point\",\"start\":{},\"payload\":{}}}",
                i * 3,
                i % 7
            )
        })
        .collect();
    lines.insert(1, "not json".to_owned());
    let messages: Vec<(i32, &str)> = lines.iter().map(|l| (0, l.as_str())).collect();
    produce(&brokers, "clicks", &messages).await;
    let dir = std::env::temp_dir().join(format!("punctual-kafka-ckpt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let query = |out: &std::path::Path, checkpoints: bool, letters: &DeadLetterCollector<i64>| {
        let state = checkpoints.then(|| dir.join("state"));
        let config = KafkaConfig::new(brokers.clone(), "clicks").until_end();
        common::counts_query(&KafkaInput, &config, state.as_deref(), out, letters)
    };
    let malformed = |c: &DeadLetterCollector<i64>| {
        c.reasons()
            .iter()
            .filter(|r| r.contains("offset 1"))
            .count()
    };
    tokio::time::timeout(Duration::from_secs(120), async {
        let expected = dir.join("expected.jsonl");
        let letters = DeadLetterCollector::new();
        let whole_run = query(&expected, false, &letters);
        common::run_to_end(whole_run).await;
        assert_eq!(letters.letters().len(), 1, "the malformed message");
        let out = dir.join("out.jsonl");
        let first = DeadLetterCollector::new();
        let running = query(&out, true, &first).start().expect("starts");
        // Aborted once a snapshot past the malformed message is written: one cut after its
        // dead letter came. The first snapshot written after that may have been cut before
        // it (snapshots follow each other: a cut, its write, the next cut), so two are
        // waited for: the second was cut after the first was written.
        let snapshot = dir.join("state").join("snapshot");
        while malformed(&first) == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        for _ in 0..2 {
            let seen = std::fs::read(&snapshot).unwrap_or_default();
            while std::fs::read(&snapshot).unwrap_or_default() == seen {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        let aborted = running.abort().await;
        assert!(aborted.is_ok(), "{aborted:?}");
        let whole = std::fs::read(&expected).expect("written");
        assert!(
            std::fs::read(&out).expect("written").len() < whole.len(),
            "aborted mid-run"
        );
        let second = DeadLetterCollector::new();
        let report = common::run_to_end(query(&out, true, &second)).await;
        assert!(
            std::fs::read(&out).expect("written") == whole,
            "the same output"
        );
        assert_eq!(
            malformed(&first),
            1,
            "the first run read the malformed message"
        );
        assert_eq!(malformed(&second), 0, "the second went on after it");
        let c = report.counters("in").expect("stream");
        assert_eq!(
            (c.events_in, c.malformed),
            (20_000, 1),
            "counted once, over both runs"
        );
    })
    .await
    .expect("finishes in time");
    std::fs::remove_dir_all(&dir).ok();
}
