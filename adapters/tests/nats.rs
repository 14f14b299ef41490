//! NATS JetStream against a real nats-server on a loopback port (feature `nats`; `.ci/run`
//! installs Debian's nats-server). Each test starts a server of its own with JetStream and
//! stops it.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use punctual_adapters::nats::async_nats;
use punctual_adapters::{
    CollectOutput, JsonLinesOutput, JsonLinesOutputConfig, MemoryInput, NatsConfig, NatsInput,
    NatsOutput,
};
use punctual_core::{EventShape, StreamItem, Time, TimeSpan};
use punctual_policies::{AdvanceTimeGenerationSettings, AdvanceTimeSettings};
use punctual_runtime::{Checkpoints, DeadLetterCollector, InputOptions, Query};

/// A nats-server with JetStream on a free loopback port, stopped on drop.
struct Server {
    child: Child,
    port: u16,
    dir: std::path::PathBuf,
}

impl Server {
    fn start() -> Server {
        for _ in 0..10 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free port")
                .port();
            let dir =
                std::env::temp_dir().join(format!("punctual-nats-{}-{port}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            let mut child = Command::new("nats-server")
                .args(["-js", "-a", "127.0.0.1", "-p", &port.to_string(), "-sd"])
                .arg(&dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect(
                    "nats-server must be installed for the NATS test (apt-get install nats-server)",
                );
            for _ in 0..100 {
                if child.try_wait().ok().flatten().is_some() {
                    break; // the port was taken: another one
                }
                if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return Server { child, port, dir };
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("nats-server did not start on a free port in ten tries");
    }

    fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// A JetStream context on this server.
    async fn jetstream(&self) -> async_nats::jetstream::Context {
        let client = async_nats::connect(self.url()).await.expect("connects");
        async_nats::jetstream::new(client)
    }

    /// A stream named `name` on subject `name` keeping at most `max` messages (0: no limit),
    /// with `lines` published to it.
    async fn stream(&self, name: &str, max: i64, lines: &[String]) {
        let js = self.jetstream().await;
        js.create_stream(async_nats::jetstream::stream::Config {
            name: name.to_owned(),
            subjects: vec![name.to_owned()],
            max_messages: if max > 0 { max } else { -1 },
            ..Default::default()
        })
        .await
        .expect("stream created");
        let mut acks = Vec::new();
        for line in lines {
            acks.push(
                js.publish(name.to_owned(), line.clone().into())
                    .await
                    .expect("published"),
            );
        }
        for ack in acks {
            ack.await.expect("acknowledged");
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn point(t: i64, v: i64) -> String {
    format!("{{\"kind\":\"point\",\"start\":{t},\"payload\":{v}}}")
}

/// An input reads a stream in order to its `eof` message; an output publishes a stream's items
/// with message ids, and what a restored output publishes again (from an earlier position)
/// is dropped by JetStream as a duplicate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_is_read_in_order_and_written_once() {
    let server = Server::start();
    let mut lines: Vec<String> = (0..500).map(|i| point(i, i % 3)).collect();
    lines.insert(3, "not json".to_owned());
    lines.push("{\"kind\":\"cti\",\"time\":\"inf\"}".to_owned());
    lines.push("{\"kind\":\"eof\"}".to_owned());
    server.stream("IN", 0, &lines).await;
    let mut query = Query::new("nats");
    let s = query
        .create_stream::<_, i64, _, _>(
            InputOptions::new("in", EventShape::Point),
            &NatsInput,
            &NatsConfig::new(server.url(), "IN", "IN"),
        )
        .expect("binds");
    let out = CollectOutput::new();
    query.bind_output(&s, &out, &()).expect("binds");
    let report = query.start().expect("starts").wait().await.expect("runs");
    let c = report.counters("in").expect("stream");
    assert_eq!((c.events_in, c.malformed), (500, 1));
    let payloads: Vec<i64> = out
        .items()
        .iter()
        .filter_map(|i| match i {
            StreamItem::Insert(e) => Some(e.payload),
            StreamItem::Cti(_) => None,
        })
        .collect();
    assert_eq!(payloads, (0..500).map(|i| i % 3).collect::<Vec<_>>());

    // Written: a stream OUT takes what the output publishes.
    server.stream("OUT", 0, &[]).await;
    let items = vec![
        StreamItem::point(Time::from_ticks(1), 7i64),
        StreamItem::point(Time::from_ticks(2), 8i64),
        StreamItem::Cti(Time::INF),
    ];
    for _ in 0..2 {
        // The second run publishes the same items from position 0: duplicates.
        let mut query = Query::new("out");
        let s = query
            .create_stream(
                InputOptions::new("in", EventShape::Point),
                &MemoryInput,
                &items,
            )
            .expect("binds");
        query
            .bind_output(&s, &NatsOutput, &NatsConfig::new(server.url(), "", "OUT"))
            .expect("binds");
        query.start().expect("starts").wait().await.expect("runs");
    }
    let js = server.jetstream().await;
    let mut stream = js.get_stream("OUT").await.expect("the stream");
    let info = stream.info().await.expect("info");
    assert_eq!(info.state.messages, 3, "each message once");
}

/// A query with checkpoints reading a stream, aborted and restarted, goes on at its sequence
/// (its output file ends as an uninterrupted run's); once retention has dropped the messages
/// after its snapshot, a restart fails naming how many are gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_goes_on_at_its_sequence_and_refuses_a_gap() {
    let server = Server::start();
    let mut lines: Vec<String> = (0..3_000).map(|i| point(i * 3, i % 7)).collect();
    lines.push("{\"kind\":\"eof\"}".to_owned());
    server.stream("ALL", 0, &lines).await;
    server.stream("KEPT", 0, &lines).await;
    let dir = std::env::temp_dir().join(format!("punctual-nats-ckpt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let query = |stream: &str, out: &std::path::Path, state: Option<&std::path::Path>| {
        let mut q = Query::new("counts").clock_from_inputs();
        if let Some(state) = state {
            q = q.checkpoints(Checkpoints::new(state).every(Duration::ZERO));
        }
        let every = AdvanceTimeGenerationSettings::every_events(50)
            .final_cti(true)
            .build()
            .expect("valid");
        let settings = AdvanceTimeSettings::builder()
            .generation(every)
            .build()
            .expect("valid");
        let s = q
            .create_stream::<_, i64, _, _>(
                InputOptions::new("in", EventShape::Point).settings(settings),
                &NatsInput,
                &NatsConfig::new(server.url(), stream, ""),
            )
            .expect("binds");
        q.bind_dead_letters(&s, DeadLetterCollector::new())
            .expect("binds");
        let counts = s
            .tumbling_window(TimeSpan::from_ticks(100))
            .group_by(|v: &i64| *v)
            .count();
        q.bind_output(&counts, &JsonLinesOutput, &JsonLinesOutputConfig::new(out))
            .expect("binds");
        q
    };
    let expected = dir.join("expected.jsonl");
    query("ALL", &expected, None)
        .start()
        .expect("starts")
        .wait()
        .await
        .expect("runs");
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
    query("KEPT", &out, Some(&state))
        .start()
        .expect("starts")
        .wait()
        .await
        .expect("runs");
    assert!(
        std::fs::read(&out).expect("written") == whole,
        "the same output"
    );

    // Retention drops the first 2,000 messages: the copy of the first snapshot is refused.
    let js = server.jetstream().await;
    let kept = js.get_stream("KEPT").await.expect("the stream");
    kept.purge().sequence(2_001).await.expect("purged");
    let failure = query("KEPT", &gap_out, Some(&gap_state))
        .start()
        .expect("starts")
        .wait()
        .await
        .expect_err("refused")
        .to_string();
    assert!(
        failure.contains("messages are gone (retention)"),
        "{failure}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("made");
    for entry in std::fs::read_dir(from).expect("readable").flatten() {
        if entry.file_name() != "LOCK" {
            std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copied");
        }
    }
}
