//! The tokio runtime under a paused clock: backpressure, stopping, failures, imports.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::FutureExt;
use tokio::time::Instant;

use punctual_adapters::{channel_input, CollectOutput, MemoryInput};
use punctual_core::{Batch, EventShape, StreamItem, Time, TimeSpan};
use punctual_policies::{
    AdapterAdvanceTimeSettings, AdvanceTimeGenerationSettings, AdvanceTimeImportSettings,
    AdvanceTimePolicy, AdvanceTimeSettings, DeadLetterReason, Enqueued,
};
use punctual_runtime::{
    AdapterError, DeadLetterCollector, EnqueueError, InputAdapterFactory, InputOptions,
    OutputAdapter, Query, QueryError, QueryFailure,
};

mod common;
use common::{collected, given, input, memory, ordered, point, t};

/// An output that sleeps per batch and records how far the input ran ahead.
struct SlowOutput {
    per_batch: Duration,
    enqueued: Arc<AtomicUsize>,
    written: Arc<AtomicUsize>,
    max_in_flight: Arc<AtomicUsize>,
    saw_final: Arc<AtomicBool>,
}

#[async_trait]
impl OutputAdapter<i64> for SlowOutput {
    async fn write(&mut self, batch: &Batch<i64>) -> Result<(), AdapterError> {
        let in_flight = self
            .enqueued
            .load(Ordering::SeqCst)
            .saturating_sub(self.written.load(Ordering::SeqCst));
        self.max_in_flight.fetch_max(in_flight, Ordering::SeqCst);
        tokio::time::sleep(self.per_batch).await;
        self.written.fetch_add(batch.len(), Ordering::SeqCst);
        if batch.last_cti() == Some(Time::INF) {
            self.saw_final.store(true, Ordering::SeqCst);
        }
        Ok(())
    }
}

struct Probe {
    enqueued: Arc<AtomicUsize>,
    written: Arc<AtomicUsize>,
    max_in_flight: Arc<AtomicUsize>,
    saw_final: Arc<AtomicBool>,
}

fn slow_output(per_batch: Duration) -> (SlowOutput, Probe) {
    let probe = Probe {
        enqueued: Arc::default(),
        written: Arc::default(),
        max_in_flight: Arc::default(),
        saw_final: Arc::default(),
    };
    let out = SlowOutput {
        per_batch,
        enqueued: Arc::clone(&probe.enqueued),
        written: Arc::clone(&probe.written),
        max_in_flight: Arc::clone(&probe.max_in_flight),
        saw_final: Arc::clone(&probe.saw_final),
    };
    (out, probe)
}

#[tokio::test(start_paused = true)]
async fn a_slow_output_holds_the_input_back() {
    const CAPACITY: usize = 4;
    const PER_CALL: usize = 100;
    const TOTAL: usize = 100_000;
    let (out, probe) = slow_output(Duration::from_millis(1));
    let enqueued = Arc::clone(&probe.enqueued);
    let mut query = Query::new("backpressure").channel_capacity(CAPACITY);
    let s = query
        .create_stream(
            point("fast").settings(AdvanceTimeSettings::strictly_increasing_start_time()),
            &input(move |ctx| {
                async move {
                    for chunk in 0..TOTAL / PER_CALL {
                        let items = (0..PER_CALL).map(|i| {
                            let x = (chunk * PER_CALL + i) as i64;
                            StreamItem::point(t(x), x)
                        });
                        ctx.enqueue_batch(items).await?;
                        enqueued.fetch_add(PER_CALL, Ordering::SeqCst);
                    }
                    Ok(())
                }
                .boxed()
            }),
            &(),
        )
        .unwrap();
    query.bind_output(&s, &given(out), &()).unwrap();
    let report = query.start().unwrap().wait().await.unwrap();
    assert_eq!(probe.written.load(Ordering::SeqCst), TOTAL);
    assert!(probe.saw_final.load(Ordering::SeqCst));
    assert_eq!(report.counters("fast").unwrap().released, TOTAL as u64);
    let max = probe.max_in_flight.load(Ordering::SeqCst);
    // At most two full channels (stream to query task, query task to output), the batch in the
    // query task, the one being written and the one being sent.
    assert!(
        max <= (2 * CAPACITY + 3) * PER_CALL,
        "the input ran {max} events ahead of a slow output"
    );
    assert!(
        max >= CAPACITY * PER_CALL,
        "the output was never behind ({max}): the test did not exercise backpressure"
    );
}

#[tokio::test(start_paused = true)]
async fn stop_releases_an_adapter_blocked_in_enqueue_and_issues_the_final_cti() {
    let (out, probe) = slow_output(Duration::from_secs(10));
    let saw_stopping = Arc::new(AtomicBool::new(false));
    let saw = Arc::clone(&saw_stopping);
    let mut query = Query::new("stop")
        .channel_capacity(1)
        .stop_grace(Duration::from_secs(600));
    let s = query
        .create_stream(
            point("endless").settings(AdvanceTimeSettings::strictly_increasing_start_time()),
            &input(move |ctx| {
                async move {
                    for x in 0.. {
                        match ctx.enqueue_point(t(x), x).await {
                            Ok(_) => {}
                            Err(EnqueueError::Stopping) => {
                                saw.store(true, Ordering::SeqCst);
                                return Err(EnqueueError::Stopping.into());
                            }
                            Err(e) => return Err(e.into()),
                        }
                    }
                    Ok(())
                }
                .boxed()
            }),
            &(),
        )
        .unwrap();
    query.bind_output(&s, &given(out), &()).unwrap();
    let running = query.start().unwrap();
    tokio::time::sleep(Duration::from_secs(60)).await;
    let stopped_at = Instant::now();
    let report = running.stop().await.unwrap();
    assert!(
        saw_stopping.load(Ordering::SeqCst),
        "enqueue never returned Stopping"
    );
    assert!(
        probe.saw_final.load(Ordering::SeqCst),
        "no final CTI after stop"
    );
    assert!(
        stopped_at.elapsed() < Duration::from_secs(60),
        "stop waited {:?}",
        stopped_at.elapsed()
    );
    let c = report.counters("endless").unwrap();
    assert_eq!(c.released, c.events_in, "{c:?}");
}

#[tokio::test(start_paused = true)]
async fn an_adapter_that_ignores_stop_is_aborted_after_the_grace_period() {
    let mut query = Query::new("stubborn").stop_grace(Duration::from_secs(3));
    query
        .create_stream(
            point("deaf"),
            &input(|_ctx| {
                async {
                    futures::future::pending::<()>().await;
                    Ok(())
                }
                .boxed()
            }),
            &(),
        )
        .unwrap();
    let running = query.start().unwrap();
    let start = Instant::now();
    match running.stop().await {
        Err(QueryFailure {
            error: QueryError::StopTimeout { tasks, grace },
            ..
        }) => {
            assert_eq!(tasks, vec!["input `deaf`".to_owned()]);
            assert_eq!(grace, Duration::from_secs(3));
        }
        other => panic!("expected a stop timeout, got {other:?}"),
    }
    assert!(start.elapsed() >= Duration::from_secs(3));
}

#[tokio::test(start_paused = true)]
async fn an_adapter_error_fails_the_query_and_stops_the_others() {
    let mut query = Query::new("failing");
    query
        .create_stream(
            point("broken"),
            &input(|ctx| {
                async move {
                    ctx.enqueue_point(t(1), 1).await?;
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    Err(AdapterError::Config("the sensor went away".into()))
                }
                .boxed()
            }),
            &(),
        )
        .unwrap();
    query
        .create_stream(
            point("forever"),
            &input(|ctx| {
                async move {
                    ctx.stopping().await;
                    Ok(())
                }
                .boxed()
            }),
            &(),
        )
        .unwrap();
    let err = query.start().unwrap().wait().await.unwrap_err().error;
    match &err {
        QueryError::Adapter { role, stream, .. } => {
            assert_eq!((*role, stream.as_str()), ("input", "broken"))
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(err.to_string().contains("the sensor went away"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn a_panicking_adapter_is_reported_not_hung() {
    let mut query = Query::new("panicky");
    query
        .create_stream(
            point("p"),
            &input(|_ctx| {
                async {
                    if true {
                        panic!("adapter bug");
                    }
                    Ok(())
                }
                .boxed()
            }),
            &(),
        )
        .unwrap();
    match query.start().unwrap().wait().await {
        Err(QueryFailure {
            error: QueryError::Panicked { task, message },
            ..
        }) => {
            assert_eq!(task, "input `p`");
            assert_eq!(message, "adapter bug");
        }
        other => panic!("unexpected {other:?}"),
    }
}

struct FailingOutput;

#[async_trait]
impl OutputAdapter<i64> for FailingOutput {
    async fn write(&mut self, _batch: &Batch<i64>) -> Result<(), AdapterError> {
        Err(AdapterError::Config("disk full".into()))
    }
}

#[tokio::test(start_paused = true)]
async fn an_output_error_fails_the_query() {
    let mut query = Query::new("out-fails");
    let items: Vec<_> = (0..10_000).map(|x| StreamItem::point(t(x), x)).collect();
    let s = memory(&mut query, ordered("in"), &items);
    query.bind_output(&s, &given(FailingOutput), &()).unwrap();
    let err = query.start().unwrap().wait().await.unwrap_err().error;
    assert!(
        matches!(&err, QueryError::Adapter { role: "output", stream, .. } if stream == "in"),
        "{err:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_stream_without_ctis_hits_the_buffer_cap_with_a_clear_error() {
    let mut query = Query::new("no-ctis");
    let items: Vec<_> = (0..1000).map(|x| StreamItem::point(t(x), x)).collect();
    memory(&mut query, point("silent").max_buffered(100), &items);
    let err = query.start().unwrap().wait().await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("silent") && text.contains("100 events wait for a CTI"),
        "{text}"
    );
}

#[tokio::test(start_paused = true)]
async fn enqueue_returns_typed_errors_and_the_stream_goes_on() {
    let letters = DeadLetterCollector::new();
    let mut query = Query::new("errors");
    let s = query
        .create_stream(
            InputOptions::new("in", EventShape::Edge),
            &input(|ctx| {
                async move {
                    let invalid = ctx.enqueue_interval(t(5), t(5), 1).await;
                    assert!(
                        matches!(invalid, Err(EnqueueError::Rejected { .. })),
                        "{invalid:?}"
                    );
                    let unmatched = ctx.enqueue_end_edge(t(2), t(9), 2).await.unwrap_err();
                    assert!(
                        unmatched.to_string().contains("matches no open start edge"),
                        "{unmatched}"
                    );
                    assert_eq!(ctx.enqueue_cti(t(10)).await, Ok(Enqueued::Cti));
                    let late = ctx.enqueue_point(t(3), 3).await.unwrap_err();
                    assert!(late.to_string().contains("no violation policy"), "{late}");
                    assert_eq!(ctx.enqueue_cti(t(5)).await, Ok(Enqueued::StaleCti));
                    ctx.enqueue_point(t(12), 4).await?;
                    ctx.enqueue_cti(Time::INF).await?;
                    Ok(())
                }
                .boxed()
            }),
            &(),
        )
        .unwrap();
    let (out, report) = collected(query, &s, &letters).await;
    assert_eq!(
        out.items(),
        vec![
            StreamItem::Cti(t(10)),
            StreamItem::point(t(12), 4),
            StreamItem::Cti(Time::INF)
        ]
    );
    let c = report.counters("in").unwrap();
    assert_eq!((c.rejected, c.stale_ctis, c.released), (3, 1, 1));
    let reasons: Vec<_> = letters.letters().into_iter().map(|d| d.reason).collect();
    assert_eq!(reasons.len(), 3);
    assert!(reasons
        .iter()
        .all(|r| matches!(r, DeadLetterReason::Rejected(_))));
}

#[tokio::test(start_paused = true)]
async fn a_slow_reference_stream_imports_the_fast_streams_ctis() {
    let (fast_tx, fast) = channel_input::<i64>(16);
    let (slow_tx, slow) = channel_input::<i64>(16);
    let mut query = Query::new("import");
    query.create_stream(ordered("fast"), &fast, &()).unwrap();
    let reference = query
        .create_stream(
            InputOptions::new("reference", EventShape::Edge).settings(
                AdvanceTimeSettings::builder()
                    .import(AdvanceTimeImportSettings::new("fast"))
                    .policy(AdvanceTimePolicy::Adjust)
                    .build()
                    .unwrap(),
            ),
            &slow,
            &(),
        )
        .unwrap();
    let out = CollectOutput::new();
    query.bind_output(&reference, &out, &()).unwrap();
    let running = query.start().unwrap();
    slow_tx
        .send(StreamItem::start_edge(t(0), 100))
        .await
        .unwrap();
    // Let the reference adapter enqueue it before the fast stream moves time on.
    tokio::time::sleep(Duration::from_millis(10)).await;
    for x in [5, 6, 8] {
        fast_tx.send(StreamItem::point(t(x), x)).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(10)).await;
    // The reference adapter is idle, yet its start edge was released by the imported CTI(5).
    assert_eq!(
        out.items(),
        vec![
            StreamItem::start_edge(t(0), 100),
            StreamItem::Cti(t(5)),
            StreamItem::Cti(t(6)),
            StreamItem::Cti(t(8)),
        ]
    );
    // A late reference edge is adjusted up to the imported CTI.
    slow_tx
        .send(StreamItem::start_edge(t(2), 200))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(10)).await;
    drop(slow_tx);
    drop(fast_tx);
    let report = running.wait().await.unwrap();
    let items = out.items();
    assert_eq!(
        &items[4..],
        &[
            StreamItem::start_edge(t(8), 200),
            StreamItem::Cti(Time::INF)
        ]
    );
    assert_eq!(report.counters("reference").unwrap().adjusted, 1);
    assert!(out.is_finished());
}

#[tokio::test(start_paused = true)]
async fn binding_settings_replace_declared_settings() {
    /// Declares IncreasingStartTime-like settings with a delay of 100.
    struct Declaring;
    impl InputAdapterFactory<Vec<StreamItem<i64>>, i64> for Declaring {
        type Adapter = <MemoryInput as InputAdapterFactory<Vec<StreamItem<i64>>, i64>>::Adapter;
        fn create(
            &self,
            c: &Vec<StreamItem<i64>>,
            s: EventShape,
        ) -> Result<Self::Adapter, AdapterError> {
            MemoryInput.create(c, s)
        }
        fn declare_advance_time_properties(
            &self,
            _: &Vec<StreamItem<i64>>,
            _: EventShape,
        ) -> Option<AdapterAdvanceTimeSettings> {
            let g = AdvanceTimeGenerationSettings::every_events(1)
                .delay(TimeSpan::from_ticks(100))
                .final_cti(true)
                .build()
                .unwrap();
            Some(AdapterAdvanceTimeSettings::new(g, AdvanceTimePolicy::Drop))
        }
    }
    let items = vec![StreamItem::point(t(1000), 1)];
    let run = |settings: Option<AdvanceTimeSettings>| {
        let items = items.clone();
        async move {
            let mut query = Query::new("precedence");
            let mut opts = point("in");
            if let Some(s) = settings {
                opts = opts.settings(s);
            }
            let s = query.create_stream(opts, &Declaring, &items).unwrap();
            let out = CollectOutput::new();
            query.bind_output(&s, &out, &()).unwrap();
            query.start().unwrap().wait().await.unwrap();
            out.items()
        }
    };
    assert_eq!(
        run(None).await[0],
        StreamItem::Cti(t(900)),
        "declared delay 100"
    );
    let replaced = run(Some(AdvanceTimeSettings::strictly_increasing_start_time())).await;
    assert_eq!(
        replaced[1],
        StreamItem::Cti(t(1001)),
        "binding settings win: {replaced:?}"
    );
}

#[tokio::test]
async fn bind_errors_name_the_problem() {
    let mut query = Query::new("bad");
    let none: Vec<StreamItem<i64>> = Vec::new();
    let import = |from: &str| {
        InputOptions::new(format!("from-{from}"), EventShape::Point).settings(
            AdvanceTimeSettings::builder()
                .import(AdvanceTimeImportSettings::new(from))
                .build()
                .unwrap(),
        )
    };
    memory(&mut query, point("a"), &none);
    let dup = query
        .create_stream(point("a"), &MemoryInput, &none)
        .unwrap_err();
    assert!(
        dup.to_string().contains("already has a stream named `a`"),
        "{dup}"
    );
    memory(&mut query, import("nowhere"), &none);
    let e = query.start().unwrap_err();
    assert!(
        e.to_string().contains("`nowhere`, which is not a stream"),
        "{e}"
    );

    let mut query = Query::new("cycle");
    memory(&mut query, import("from-x"), &none);
    let opts = point("from-x")
        .settings(
            AdvanceTimeSettings::builder()
                .import(AdvanceTimeImportSettings::new("from-from-x"))
                .build()
                .unwrap(),
        )
        .max_buffered(10);
    memory(&mut query, opts, &none);
    let e = query.start().unwrap_err();
    assert!(e.to_string().contains("import cycle"), "{e}");
}

#[tokio::test(start_paused = true)]
async fn a_failed_query_issues_no_final_ctis() {
    let mut query = Query::new("no-final-after-failure");
    let items: Vec<_> = (0..10).map(|x| StreamItem::point(t(x), x)).collect();
    let healthy = query
        .create_stream(
            ordered("healthy"),
            &input(move |ctx| {
                async move {
                    ctx.enqueue_batch(items).await?;
                    // Still running when the other stream fails.
                    ctx.stopping().await;
                    Ok(())
                }
                .boxed()
            }),
            &(),
        )
        .unwrap();
    query
        .create_stream(
            point("broken"),
            &input(|_ctx| async { Err(AdapterError::Config("gone".into())) }.boxed()),
            &(),
        )
        .unwrap();
    let out = CollectOutput::new();
    query.bind_output(&healthy, &out, &()).unwrap();
    assert!(query.start().unwrap().wait().await.is_err());
    let items = out.items();
    assert_eq!(items.last(), Some(&StreamItem::Cti(t(9))), "{items:?}");
    assert!(out.is_finished());
}

#[tokio::test(start_paused = true)]
async fn iterator_and_stream_inputs_feed_streams() {
    use punctual_adapters::{IterInput, StreamInput};
    let mut query = Query::new("sources");
    let from_iter = query
        .create_stream(
            ordered("iter"),
            &IterInput::new((0..3000).map(|x| StreamItem::point(t(x), x))),
            &(),
        )
        .unwrap();
    let from_stream = query
        .create_stream(
            ordered("stream"),
            &StreamInput::new(futures::stream::iter(
                (0..3000).map(|x| StreamItem::point(t(x), x)),
            )),
            &(),
        )
        .unwrap();
    let (a, b) = (CollectOutput::new(), CollectOutput::new());
    query.bind_output(&from_iter, &a, &()).unwrap();
    query.bind_output(&from_stream, &b, &()).unwrap();
    let report = query.start().unwrap().wait().await.unwrap();
    assert_eq!(report.counters("iter").unwrap().released, 3000);
    assert_eq!(a.items(), b.items());
    assert_eq!(a.items().last(), Some(&StreamItem::Cti(Time::INF)));
    // A factory that wraps a one-shot source refuses a second stream with a clear error.
    let once = IterInput::new(std::iter::empty::<StreamItem<i64>>());
    let mut query = Query::new("twice");
    query.create_stream(point("a"), &once, &()).unwrap();
    let e = query.create_stream(point("b"), &once, &()).unwrap_err();
    assert!(e.to_string().contains("can feed only one stream"), "{e}");
}

#[test]
fn starting_without_a_suitable_runtime_is_an_error_not_a_panic() {
    let make = || {
        let mut query = Query::new("where");
        memory(&mut query, point("in"), &Vec::<StreamItem<i64>>::new());
        query
    };
    let e = make().start().unwrap_err();
    assert!(e.to_string().contains("within a tokio runtime"), "{e}");
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let e = rt.block_on(async { make().start().unwrap_err() });
    assert!(e.to_string().contains("has no timer"), "{e}");
}
