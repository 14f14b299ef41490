//! Job files with Kafka and MQTT inputs and outputs (features `kafka`, `mqtt`; `.ci/run` runs
//! them): Kafka against librdkafka's in-process mock cluster, MQTT against a mosquitto broker
//! started on a loopback port. Without the features, a job naming them is refused with the way
//! to get them.

mod cli_common;
use cli_common::{run_job, temp_dir};

#[cfg(not(feature = "kafka"))]
#[test]
fn without_the_feature_a_kafka_job_says_how_to_get_it() {
    let dir = temp_dir("no-kafka");
    let job = dir.join("job.toml");
    let (code, err) = run_job(&job, "query = \"SELECT v FROM r\"\n[inputs.r]\nkafka = { brokers = \"localhost:9092\", topic = \"r\" }\n[outputs.output]\npath = \"-\"\n");
    assert_eq!(code, punctual::cli::EXIT_USAGE);
    assert!(
        err.contains(
            "built without kafka: install it with `cargo install --path . --features kafka`"
        ),
        "{err}"
    );
}

/// One job reads a topic and writes another; a second job reads that one to a file.
/// Sends `records` (a line, and the record's timestamp in epoch ms if given) to `topic` of
/// the (mock) cluster at `brokers`.
#[cfg(feature = "kafka")]
fn produce(brokers: &str, topic: &str, records: impl IntoIterator<Item = (String, Option<i64>)>) {
    use punctual::adapters::kafka::rdkafka::config::ClientConfig;
    use punctual::adapters::kafka::rdkafka::producer::{FutureProducer, FutureRecord};
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let config = ClientConfig::new()
            .set("bootstrap.servers", brokers)
            .clone();
        let producer: FutureProducer = config.create().expect("producer");
        for (line, at) in records {
            let record = FutureRecord::<(), str>::to(topic).payload(&line);
            let record = match at {
                Some(at) => record.timestamp(at),
                None => record,
            };
            let sent = producer.send(record, std::time::Duration::from_secs(5));
            sent.await.expect("produced");
        }
    });
}

#[cfg(feature = "kafka")]
#[test]
fn a_job_reads_and_writes_kafka_topics() {
    use punctual::adapters::kafka::rdkafka::mocking::MockCluster;

    let cluster = MockCluster::new(1).expect("mock cluster");
    cluster.create_topic("readings", 1, 1).expect("topic");
    cluster.create_topic("big", 1, 1).expect("topic");
    let brokers = cluster.bootstrap_servers();
    let points = (1..=4).map(|v| {
        let line = format!("{{\"kind\":\"point\",\"start\":{v},\"payload\":{{\"v\":{v}}}}}");
        (line, None)
    });
    produce(&brokers, "readings", points);
    let dir = temp_dir("kafka");
    let first = dir.join("first.toml");
    let (code, err) = run_job(&first, format!(
            "query = \"SELECT v * 10 AS w FROM r WHERE v > 2\"\n[inputs.r]\nkafka = {{ brokers = \"{brokers}\", topic = \"readings\", until_end = true }}\n[outputs.output]\nkafka = {{ brokers = \"{brokers}\", topic = \"big\" }}\n"
        ));
    assert_eq!(code, 0, "{err}");
    let second = dir.join("second.toml");
    let (code, err) = run_job(&second, format!(
            "query = \"SELECT w FROM big\"\n[inputs.big]\nkafka = {{ brokers = \"{brokers}\", topic = \"big\", until_end = true }}\n[outputs.output]\npath = \"out.jsonl\"\ntime_format = \"ticks\"\n"
        ));
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        cli_common::numbers(&dir.join("out.jsonl"), "w"),
        vec![30, 40]
    );
    // A mistake in the table is named.
    let (code, err) = run_job(&first, format!("query = \"SELECT v FROM r\"\n[inputs.r]\nkafka = {{ brokers = \"{brokers}\", topik = \"readings\" }}\n[outputs.output]\npath = \"-\"\n"));
    assert_eq!(code, punctual::cli::EXIT_USAGE);
    assert!(err.contains("kafka: unknown field `topik`"), "{err}");
}

/// A job reading flat records from a Kafka topic with Stream Analytics' tolerances over the
/// messages' timestamps (their arrival times): with `OVER device` each device has its own
/// watermark, so one device's clock does not move another's events; without it, one
/// watermark for all moves every event behind it up to it (policy `adjust`).
#[cfg(feature = "kafka")]
#[test]
fn a_job_reads_flat_records_from_kafka_with_a_watermark_per_key() {
    use punctual::adapters::kafka::rdkafka::mocking::MockCluster;

    let cluster = MockCluster::new(1).expect("mock cluster");
    cluster.create_topic("records", 1, 1).expect("topic");
    let brokers = cluster.bootstrap_servers();
    // Event time, device, value, arrival time (seconds after the base).
    let records = [
        (5, "a", 1, 5),
        (1, "b", 2, 6),
        (3, "a", 3, 7),
        (2, "b", 4, 20),
    ];
    // A minute ago: the tolerances measure arrival against the clock (a quiet input's
    // watermark follows the clock, `late` behind), so the records are recent.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_millis();
    let base_ms = i64::try_from(now_ms).expect("in range") / 1000 * 1000 - 60_000;
    let lines = records.into_iter().map(|(at, device, v, arrival)| {
        let line = format!(
            "{{\"t\":{},\"device\":\"{device}\",\"v\":{v},\"note\":\"x\"}}",
            base_ms + at * 1000
        );
        (line, Some(base_ms + arrival * 1000))
    });
    produce(&brokers, "records", lines);
    let dir = temp_dir("kafka-over");
    let job = dir.join("job.toml");
    // Each run in a consumer group of its own, which reads the topic from its start.
    let run = |over: &str, watermark: &str, group: &str| {
        let (code, err) = run_job(&job, format!(
                "query = \"SELECT device, v FROM r TIMESTAMP BY t {over}\"\n[inputs.r]\nkafka = {{ brokers = \"{brokers}\", topic = \"records\", group_id = \"{group}\", until_end = true }}\ntime_format = \"epoch-ms\"\nwatermark = {{ {watermark} }}\n[outputs.output]\npath = \"out.jsonl\"\ntime_format = \"epoch-ms\"\n"
            ));
        assert_eq!(code, 0, "{err}");
        let out = std::fs::read_to_string(dir.join("out.jsonl")).expect("written");
        let mut got: Vec<(i64, i64)> = out
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| Some((v["v"].as_i64()?, v["time"].as_i64()? - base_ms)))
            .collect();
        got.sort();
        (got, err)
    };
    let tolerances = "out_of_order = \"0s\", late = \"1h\", early = \"1h\"";
    // Per device: b's events at 1 s and 2 s are on time for b; a's at 3 s is behind a's 5 s.
    // One watermark: the three events behind 5 s are moved up to it.
    for (over, name, moved, said) in [
        (
            "OVER device",
            "per-device",
            [5000, 1000, 5000, 2000],
            "out_of_order=1",
        ),
        ("", "one", [5000; 4], "out_of_order=3"),
    ] {
        let (got, err) = run(over, tolerances, name);
        assert_eq!(
            got,
            [1, 2, 3, 4].into_iter().zip(moved).collect::<Vec<_>>(),
            "{err}"
        );
        assert!(err.contains(said), "{err}");
    }
    // No late-arrival limit (Stream Analytics' -1), a wide out-of-order tolerance: the event
    // that arrived 18 s after its time keeps it (with the default 5 s it would take 15 s).
    let (kept, err) = run(
        "",
        "out_of_order = \"10s\", late = \"indefinite\", early = \"1h\"",
        "indefinite",
    );
    assert_eq!(
        kept,
        vec![(1, 5000), (2, 1000), (3, 3000), (4, 2000)],
        "{err}"
    );
    assert!(err.contains(" late=0 "), "{err}");
}

/// A job reading an MQTT topic until its `eof` line, to a file.
#[cfg(feature = "mqtt")]
#[test]
fn a_job_reads_an_mqtt_topic() {
    use punctual::adapters::mqtt::rumqttc::{AsyncClient, MqttOptions, QoS};
    use punctual::adapters::mqtt::testing::Broker;
    use std::time::Duration;

    // A mosquitto broker on a free loopback port (`.ci/run` installs it), stopped at the end.
    let broker = Broker::start().expect("mosquitto runs");
    let port = broker.port();
    let dir = temp_dir("mqtt");
    let job = dir.join("job.toml");
    let toml = format!(
        "query = \"SELECT v FROM r WHERE v > 10\"\n[inputs.r]\nmqtt = {{ host = \"127.0.0.1\", port = {port}, topic = \"in\" }}\n[outputs.output]\npath = \"out.jsonl\"\ntime_format = \"ticks\"\n"
    );
    let running = std::thread::spawn(move || run_job(&job, toml));
    std::thread::sleep(Duration::from_millis(700)); // the job's subscription
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let mut opts = MqttOptions::new("job-test-pub", "127.0.0.1", port);
        opts.set_keep_alive(Duration::from_secs(30));
        let (publisher, mut events) = AsyncClient::new(opts, 64);
        tokio::spawn(async move { while events.poll().await.is_ok() {} });
        let points = [(1, 5), (2, 20), (3, 30)].map(|(t, v)| {
            format!("{{\"kind\":\"point\",\"start\":{t},\"payload\":{{\"v\":{v}}}}}")
        });
        for line in points.into_iter().chain(["{\"kind\":\"eof\"}".to_owned()]) {
            let sent = publisher.publish("in", QoS::AtLeastOnce, false, line);
            sent.await.expect("publishes");
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    });
    let (code, err) = running.join().expect("the job ends");
    drop(broker);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        cli_common::numbers(&dir.join("out.jsonl"), "v"),
        vec![20, 30]
    );
}
