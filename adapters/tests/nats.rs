//! NATS JetStream against a real nats-server on a loopback port (feature `nats`; `.ci/run`
//! installs Debian's nats-server). Each test starts a server of its own with JetStream and
//! stops it.

use std::time::Duration;

mod common;
use common::payloads;
use common::point;

use punctual_adapters::nats::testing::Server;
use punctual_adapters::{CollectOutput, NatsConfig, NatsInput, NatsOutput};
use punctual_core::{StreamItem, Time};
use punctual_runtime::{DeadLetterCollector, Query};

fn point_line(t: i64, v: i64) -> String {
    format!("{{\"kind\":\"point\",\"start\":{t},\"payload\":{v}}}")
}

/// An input reads a stream in order to its `eof` message; an output publishes a stream's items
/// with message ids, and what a restored output publishes again (from an earlier position)
/// is dropped by JetStream as a duplicate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_is_read_in_order_and_written_once() {
    let server = Server::start().expect("a nats-server");
    let mut lines: Vec<String> = (0..500).map(|i| point_line(i, i % 3)).collect();
    lines.insert(3, "not json".to_owned());
    lines.push("{\"kind\":\"cti\",\"time\":\"inf\"}".to_owned());
    lines.push("{\"kind\":\"eof\"}".to_owned());
    server.stream("IN", 0, &lines).await.expect("made");
    let mut query = Query::new("nats");
    let s = query
        .create_stream::<_, i64, _, _>(
            point("in"),
            &NatsInput,
            &NatsConfig::new(server.url(), "IN", "in"),
        )
        .expect("binds");
    let out = CollectOutput::new();
    query.bind_output(&s, &out, &()).expect("binds");
    let report = query.start().expect("starts").wait().await.expect("runs");
    let c = report.counters("in").expect("stream");
    assert_eq!((c.events_in, c.malformed), (500, 1));
    let payloads: Vec<i64> = payloads(&out.items());
    assert_eq!(payloads, (0..500).map(|i| i % 3).collect::<Vec<_>>());

    // Written: a stream OUT takes what the output publishes.
    server.stream("OUT", 0, &[]).await.expect("made");
    let items = vec![
        StreamItem::point(Time::from_ticks(1), 7i64),
        StreamItem::point(Time::from_ticks(2), 8i64),
        StreamItem::Cti(Time::INF),
    ];
    for _ in 0..2 {
        // The second run publishes the same items from position 0: duplicates.
        let config = NatsConfig::new(server.url(), "", "out");
        common::write_items(&items, &NatsOutput, &config).await;
    }
    let js = server.jetstream().await.expect("connects");
    let mut stream = js.get_stream("OUT").await.expect("the stream");
    let info = stream.info().await.expect("info");
    assert_eq!(info.state.messages, 3, "each message once");
}

/// A query with checkpoints reading a stream, aborted and restarted, goes on at its sequence
/// (its output file ends as an uninterrupted run's); once retention has dropped the messages
/// after its snapshot, a restart fails naming how many are gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_goes_on_at_its_sequence_and_refuses_a_gap() {
    let server = Server::start().expect("a nats-server");
    let lines = points_then_end(3_000);
    server.stream("ALL", 0, &lines).await.expect("made");
    server.stream("KEPT", 0, &lines).await.expect("made");
    let dir = std::env::temp_dir().join(format!("punctual-nats-ckpt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let query = |stream: &str, out: &std::path::Path, state: Option<&std::path::Path>| {
        let config = NatsConfig::new(server.url(), stream, "");
        common::counts_query(&NatsInput, &config, state, out, &DeadLetterCollector::new())
    };
    let expected = dir.join("expected.jsonl");
    common::run_to_end(query("ALL", &expected, None)).await;
    let (out, state) = (dir.join("out.jsonl"), dir.join("state"));
    let running = query("KEPT", &out, Some(&state)).start().expect("starts");
    while !state.join("snapshot").exists() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    running.abort().await.expect("aborted");
    let whole = std::fs::read(&expected).expect("written");
    assert!(
        std::fs::read(&out).expect("written").len() < whole.len(),
        "aborted mid-run"
    );
    let (gap_state, gap_out) = (dir.join("gap-state"), dir.join("gap.jsonl"));
    copy_dir(&state, &gap_state);
    std::fs::copy(&out, &gap_out).expect("copied");
    common::run_to_end(query("KEPT", &out, Some(&state))).await;
    assert!(
        std::fs::read(&out).expect("written") == whole,
        "the same output"
    );

    // Retention drops the first 2,000 messages: the copy of the first snapshot is refused.
    let js = server.jetstream().await.expect("connects");
    let kept = js.get_stream("KEPT").await.expect("the stream");
    kept.purge().sequence(2_001).await.expect("purged");
    let failure = common::failure_of(query("KEPT", &gap_out, Some(&gap_state))).await;
    assert!(
        failure.contains("messages are gone (retention)"),
        "{failure}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A message of the stream gone before the input read it (deleted here; retention drops
/// messages the same way from under a reader that fell behind) fails the input, naming the
/// sequence and how many; with `allow_gap` the query goes on without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_gone_before_it_was_read_fails_the_input() {
    let server = Server::start().expect("a nats-server");
    let lines = points_then_end(100);
    server.stream("HOLED", 0, &lines).await.expect("made");
    let js = server.jetstream().await.expect("connects");
    let stream = js.get_stream("HOLED").await.expect("the stream");
    stream.delete_message(40).await.expect("deleted");
    let dir = std::env::temp_dir().join(format!("punctual-nats-hole-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let query = |allow_gap: bool| {
        let mut config = NatsConfig::new(server.url(), "HOLED", "");
        config.allow_gap = allow_gap;
        let out = dir.join(format!("out-{allow_gap}.jsonl"));
        common::counts_query(&NatsInput, &config, None, &out, &DeadLetterCollector::new())
    };
    let failure = common::failure_of(query(false)).await;
    assert!(
        failure.contains("1 messages from sequence 40 on are gone"),
        "{failure}"
    );
    common::run_to_end(query(true)).await;
    std::fs::remove_dir_all(&dir).ok();
}

/// `n` points 3 ticks apart over 7 keys, then the end of the input.
fn points_then_end(n: i64) -> Vec<String> {
    let mut lines: Vec<String> = (0..n).map(|i| point_line(i * 3, i % 7)).collect();
    lines.push("{\"kind\":\"eof\"}".to_owned());
    lines
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("made");
    for entry in std::fs::read_dir(from).expect("readable").flatten() {
        if entry.file_name() != "LOCK" {
            std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copied");
        }
    }
}
