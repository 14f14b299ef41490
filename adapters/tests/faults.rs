//! Fault injection: what the other test files do not already break. An output that panics, an
//! input that spins without awaiting, and a TCP peer that sends garbage, half a line, a line a
//! byte at a time, or a line over the limit. Each run ends in bounded time with a typed error
//! or a clean stop, and its report intact. (Adapters that fail, panic, ignore the stop or block
//! a thread, slow and failing outputs, and inputs without CTIs are in runtime.rs and
//! endings.rs; docs/guarantees.md lists them all.)

use std::time::Duration;

use async_trait::async_trait;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use punctual_adapters::{CollectOutput, MemoryInput, MAX_LINE_BYTES};
use punctual_core::{Batch, EventShape, StreamItem, Time};
use punctual_policies::DeadLetterReason;
use punctual_runtime::{
    AdapterError, DeadLetterCollector, InputAdapter, InputAdapterFactory, InputContext,
    OutputAdapter, OutputAdapterFactory, Query, QueryError, QueryFailure,
};

mod common;
use common::{ordered, point, tcp_server_query};

const LIMIT: Duration = Duration::from_secs(60);

fn t(x: i64) -> Time {
    Time::from_ticks(x)
}

/// An output that panics on its first batch.
struct PanickingOutput;

#[async_trait]
impl OutputAdapter<i64> for PanickingOutput {
    async fn write(&mut self, _batch: &Batch<i64>) -> Result<(), AdapterError> {
        panic!("the sink broke");
    }
}

impl OutputAdapterFactory<(), i64> for PanickingOutput {
    type Adapter = PanickingOutput;
    fn create(&self, _: &(), _: EventShape) -> Result<PanickingOutput, AdapterError> {
        Ok(PanickingOutput)
    }
}

#[tokio::test]
async fn an_output_that_panics_fails_the_query_with_its_name_and_the_report() {
    tokio::time::timeout(LIMIT, async {
        let mut query = Query::new("panicking-output");
        let items: Vec<_> = (0..100).map(|x| StreamItem::point(t(x), x)).collect();
        let s = query
            .create_stream(ordered("in"), &MemoryInput, &items)
            .expect("binds");
        query.bind_output(&s, &PanickingOutput, &()).expect("binds");
        let failure = query.start().expect("starts").wait().await.unwrap_err();
        match &failure.error {
            QueryError::Panicked { task, message } => {
                assert_eq!(task, "output `in`");
                assert!(message.contains("the sink broke"), "{message}");
            }
            other => panic!("expected a panic report, got {other:?}"),
        }
        let c = failure
            .report
            .counters("in")
            .expect("the report has the stream");
        assert!(c.events_in > 0, "{c:?}");
    })
    .await
    .expect("ends in bounded time");
}

/// An input that spins without ever awaiting (a bug): on a multi-thread runtime the stop
/// still ends, naming it.
struct Spinning;

#[async_trait]
impl InputAdapter<i64> for Spinning {
    async fn run(&mut self, ctx: &mut InputContext<i64>) -> Result<(), AdapterError> {
        let _ = ctx.enqueue(StreamItem::point(t(1), 1)).await;
        let started = std::time::Instant::now();
        // Spins (bounded, so that the test process can end) and never looks at the stop.
        while started.elapsed() < Duration::from_secs(8) {
            std::hint::spin_loop();
        }
        Ok(())
    }
}

impl InputAdapterFactory<(), i64> for Spinning {
    type Adapter = Spinning;
    fn create(&self, _: &(), _: EventShape) -> Result<Spinning, AdapterError> {
        Ok(Spinning)
    }
}

#[test]
fn an_input_that_spins_cannot_hang_the_stop() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let result = runtime.block_on(async {
        let mut query = Query::new("spinning").stop_grace(Duration::from_millis(300));
        query
            .create_stream(point("spins"), &Spinning, &())
            .expect("binds");
        let running = query.start().expect("starts");
        tokio::time::sleep(Duration::from_millis(50)).await;
        tokio::time::timeout(LIMIT, running.stop())
            .await
            .expect("the stop ends")
    });
    runtime.shutdown_background();
    match result {
        Err(QueryFailure {
            error: QueryError::StopTimeout { tasks, .. },
            report,
        }) => {
            assert_eq!(tasks, vec!["input `spins`".to_owned()]);
            assert_eq!(report.counters("spins").map(|c| c.events_in), Some(1));
        }
        other => panic!("expected a stop timeout, got {other:?}"),
    }
}

/// What bad TCP peers send: each bad line is one malformed line (with the peer and the
/// reason), the good lines around it go through, and the query stops cleanly.
#[tokio::test]
async fn bad_tcp_peers_are_malformed_lines_and_the_query_stops_cleanly() {
    tokio::time::timeout(LIMIT, async {
        let (mut query, s, addr) = tcp_server_query("bad-peers", Duration::from_secs(5));
        let letters = DeadLetterCollector::new();
        query.bind_dead_letters(&s, letters.clone()).expect("binds");
        let out = CollectOutput::new();
        query.bind_output(&s, &out, &()).expect("binds");
        let running = query.start().expect("starts");
        let good = |x: i64| format!("{{\"kind\":\"point\",\"start\":{x},\"payload\":{x}}}\n");

        // Garbage: binary bytes, invalid UTF-8, then a good line.
        let mut garbage: Vec<u8> = (0u8..=255).filter(|b| *b != b'\n').collect();
        garbage.push(b'\n');
        garbage.extend_from_slice(good(1).as_bytes());
        // Half a line, then the peer goes away.
        let half = b"{\"kind\":\"point\",\"sta".to_vec();
        // Over the line limit, then a good line on the same connection.
        let mut huge = vec![b'x'; MAX_LINE_BYTES + 100];
        huge.push(b'\n');
        huge.extend_from_slice(good(2).as_bytes());
        for bytes in [garbage, half, huge] {
            let mut conn = TcpStream::connect(addr).await.expect("connects");
            conn.write_all(&bytes).await.expect("writes");
            conn.shutdown().await.expect("closes");
        }
        // Slow-loris: a good line one byte at a time.
        let mut slow = TcpStream::connect(addr).await.expect("connects");
        for b in good(3).bytes() {
            slow.write_all(&[b]).await.expect("writes");
            slow.flush().await.expect("flushes");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        slow.shutdown().await.expect("closes");
        // Every line is in: three good ones, three malformed ones.
        let monitor = running.monitor();
        loop {
            let c = monitor.counters("in").expect("the stream");
            if c.events_in + c.malformed >= 6 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let report = running.stop().await.expect("a clean stop");
        let c = report.counters("in").expect("the stream");
        assert_eq!((c.events_in, c.malformed), (3, 3), "{c:?}");
        let reasons: Vec<String> = letters
            .letters()
            .iter()
            .filter(|d| matches!(d.reason, DeadLetterReason::Malformed(_)))
            .map(|d| d.reason.to_string())
            .collect();
        assert!(
            reasons.iter().any(|r| r.contains("not UTF-8")),
            "{reasons:?}"
        );
        assert!(
            reasons.iter().any(|r| r.contains("over the limit")),
            "{reasons:?}"
        );
        assert_eq!(reasons.len(), 3, "{reasons:?}");
        // No CTI ever came (the stream has no settings, the peers sent none): the three events
        // are reported unreleased, with their dead letters, not lost.
        assert_eq!((c.released, c.unreleased), (0, 3), "{c:?}");
        assert!(out.items().iter().all(|i| matches!(i, StreamItem::Cti(_))));
        let unreleased = letters
            .letters()
            .iter()
            .filter(|d| d.reason == DeadLetterReason::Unreleased)
            .count();
        assert_eq!(unreleased, 3);
    })
    .await
    .expect("ends in bounded time");
}
