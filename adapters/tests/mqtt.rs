//! MQTT against a real mosquitto broker on a loopback port (feature `mqtt`; `.ci/run` installs
//! Debian's mosquitto). The test starts the broker with a generated config and stops it.
#![cfg(feature = "mqtt")]

use std::time::Duration;

use punctual_adapters::mqtt::rumqttc::{AsyncClient, Event, EventLoop, MqttOptions, Packet, QoS};

use punctual_adapters::mqtt::testing::Broker;
use punctual_adapters::{MqttConfig, MqttInput, MqttOutput};
use punctual_policies::AdvanceTimeSettings;
use punctual_runtime::Query;

mod common;
use common::point;

/// A client subscribed to `topic` on the broker at `port` (the broker has acknowledged the
/// subscription), with its event loop to read what comes.
async fn subscriber(port: u16, id: &str, topic: &str) -> (AsyncClient, EventLoop) {
    let mut opts = MqttOptions::new(id, "127.0.0.1", port);
    opts.set_keep_alive(Duration::from_secs(30));
    let (client, mut events) = AsyncClient::new(opts, 64);
    client
        .subscribe(topic, QoS::AtLeastOnce)
        .await
        .expect("subscribes");
    loop {
        if let Event::Incoming(Packet::SubAck(_)) = events.poll().await.expect("polls") {
            return (client, events);
        }
    }
}

/// A client to publish with, its event loop polled in the background.
fn publisher(port: u16, id: &str) -> AsyncClient {
    let mut opts = MqttOptions::new(id, "127.0.0.1", port);
    opts.set_keep_alive(Duration::from_secs(30));
    let (client, mut events) = AsyncClient::new(opts, 64);
    tokio::spawn(async move { while events.poll().await.is_ok() {} });
    client
}

#[tokio::test]
async fn publish_through_a_query_and_subscribe_to_the_results() {
    let broker = Broker::start().expect("mosquitto runs");
    let port = broker.port();
    tokio::time::timeout(Duration::from_secs(30), async move {
        // A subscriber on the output topic.
        let (_sub, mut sub_events) = subscriber(port, "test-sub", "out").await;
        // The query: readings above 10 from topic `in` to topic `out`.
        let mut query = Query::new("mqtt");
        let s = query
            .create_stream::<_, i64, _, _>(
                point("in").settings(AdvanceTimeSettings::strictly_increasing_start_time()),
                &MqttInput,
                &MqttConfig::new("127.0.0.1", port, "in"),
            )
            .expect("binds");
        query
            .bind_output(
                s.filter(|v| *v > 10),
                &MqttOutput,
                &MqttConfig::new("127.0.0.1", port, "out"),
            )
            .expect("binds");
        let running = query.start().expect("starts");
        tokio::time::sleep(Duration::from_millis(500)).await; // the input's subscription
        let publisher = publisher(port, "test-pub");
        for (t, v) in [(1, 5), (2, 20), (3, 30)] {
            let line = format!("{{\"kind\":\"point\",\"start\":{t},\"payload\":{v}}}");
            publisher
                .publish("in", QoS::AtLeastOnce, false, line)
                .await
                .expect("publishes");
        }
        publisher
            .publish("in", QoS::AtLeastOnce, false, "not json")
            .await
            .expect("publishes");
        publisher
            .publish("in", QoS::AtLeastOnce, false, "{\"kind\":\"eof\"}")
            .await
            .expect("publishes");
        let mut received = Vec::new();
        while received.len() < 6 {
            if let Event::Incoming(Packet::Publish(p)) = sub_events.poll().await.expect("polls") {
                received.push(String::from_utf8_lossy(&p.payload).into_owned());
            }
        }
        let report = running.wait().await.expect("runs");
        assert!(
            received.contains(&r#"{"kind":"point","start":2,"payload":20}"#.to_owned()),
            "{received:?}"
        );
        assert!(
            received.contains(&r#"{"kind":"point","start":3,"payload":30}"#.to_owned()),
            "{received:?}"
        );
        assert!(
            !received.iter().any(|m| m.contains("\"payload\":5")),
            "filtered out: {received:?}"
        );
        assert_eq!(report.counters("in").expect("stream").malformed, 1);
    })
    .await
    .expect("finishes in time");
    drop(broker);
}

/// Flat JSON records (`MqttConfig::lines` with `LineFormat::flat`): each message's time from
/// its field `t` (epoch milliseconds), the payload a row of the fields asked for (`v`, not
/// `note`); a message without the time field is counted malformed, with its reason; the query
/// is stopped (flat records have no `eof`), with a drain.
#[tokio::test]
async fn messages_of_flat_records_are_read_for_their_fields() {
    use punctual_adapters::line::{LineFormat, TimeFormat};
    use punctual_rows::{Row, Value};

    let broker = Broker::start().expect("mosquitto runs");
    let port = broker.port();
    tokio::time::timeout(Duration::from_secs(30), async move {
        let (_sub, mut sub_events) = subscriber(port, "flat-sub", "flat-out").await;
        let mut query = Query::new("mqtt-flat");
        let flat = LineFormat::flat("t", TimeFormat::EpochMs).fields(["v"]);
        let s = query
            .create_stream::<_, Row, _, _>(
                point("in").settings(AdvanceTimeSettings::strictly_increasing_start_time()),
                &MqttInput,
                &MqttConfig::new("127.0.0.1", port, "flat-in").lines(flat),
            )
            .expect("binds");
        let big = s.filter(|r: &Row| r.get("v").and_then(Value::as_i64).is_some_and(|v| v > 10));
        query
            .bind_output(
                big,
                &MqttOutput,
                &MqttConfig::new("127.0.0.1", port, "flat-out"),
            )
            .expect("binds");
        let running = query.start().expect("starts");
        tokio::time::sleep(Duration::from_millis(500)).await; // the input's subscription
        let publisher = publisher(port, "flat-pub");
        for line in [
            r#"{"t":1000,"v":5,"note":"low"}"#,
            r#"{"t":2000,"v":20,"note":"high"}"#,
            r#"{"v":99}"#,
            r#"{"note":"last","t":3000,"v":30}"#,
        ] {
            publisher
                .publish("flat-in", QoS::AtLeastOnce, false, line)
                .await
                .expect("publishes");
        }
        let mut points = Vec::new();
        while points.len() < 2 {
            if let Event::Incoming(Packet::Publish(p)) = sub_events.poll().await.expect("polls") {
                let text = String::from_utf8_lossy(&p.payload).into_owned();
                if text.contains("\"point\"") {
                    points.push(text);
                }
            }
        }
        let report = running.stop().await.expect("stops");
        // 1 ms = 10,000 ticks; only the field asked for.
        assert_eq!(
            points,
            [
                r#"{"kind":"point","start":20000000,"payload":{"v":20}}"#,
                r#"{"kind":"point","start":30000000,"payload":{"v":30}}"#,
            ],
        );
        let counters = report.counters("in").expect("stream");
        assert_eq!((counters.events_in, counters.malformed), (3, 1));
    })
    .await
    .expect("finishes in time");
    drop(broker);
}
