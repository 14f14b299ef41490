//! How a query ends, and what it tells its outputs and its caller: a stop with a drain
//! releases everything, an abort releases nothing as if final and reports what was open, a slow
//! sink keeps its report, a failed run's report keeps its counters and dead letters, and every
//! output's `finish` learns which of the four endings it was.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use futures::FutureExt;

use punctual_adapters::CollectOutput;
use punctual_core::ops::Count;
use punctual_core::{Batch, EventShape, StreamItem, Time, TimeSpan};
use punctual_policies::AdvanceTimeSettings;
use punctual_runtime::{
    AdapterError, DeadLetterCollector, Ending, InputContext, OutputAdapter, OutputAdapterFactory,
    OutputContext, Query, QueryError, QueryReport,
};

mod common;
use common::{every_events_then_drop, input, payloads, point, FnInput, Given, Run};

fn s(x: i64) -> Time {
    Time::from_ticks(x * 10_000_000)
}

/// A CTI after every event, 0 s behind, Drop, a final CTI.
fn settings() -> AdvanceTimeSettings {
    every_events_then_drop(1)
}

/// Points at 1 s .. 14 s, then waits for the stop: the 10 s window [10 s, 20 s) stays open.
fn points_then_wait() -> Given<FnInput<impl for<'a> FnOnce(&'a mut InputContext<i64>) -> Run<'a>>> {
    input(|ctx| {
        async move {
            ctx.enqueue_points((1..15).map(|x| (s(x), x))).await?;
            ctx.stopping().await;
            Ok(())
        }
        .boxed()
    })
}

/// Counts per 10 s tumbling window of the input, collected.
fn counting(query: &mut Query) -> CollectOutput<u64> {
    let points = query
        .create_stream(point("in").settings(settings()), &points_then_wait(), &())
        .expect("binds");
    let counts = points
        .tumbling_window(TimeSpan::from_secs(10))
        .aggregate(Count);
    let out = CollectOutput::new();
    query.bind_output(&counts, &out, &()).expect("binds");
    out
}

/// The counting query `name`, started and run for 10 ms (all its input in, the input
/// waiting for the stop).
async fn counting_a_while(name: &str) -> (punctual_runtime::RunningQuery, CollectOutput<u64>) {
    let mut query = Query::new(name);
    let out = counting(&mut query);
    let running = query.start().expect("starts");
    tokio::time::sleep(Duration::from_millis(10)).await;
    (running, out)
}

fn counts(out: &CollectOutput<u64>) -> Vec<u64> {
    payloads(&out.items())
}

/// A stop with a drain: every window is released (the open one too), the output ends with
/// CTI(+inf) and learns the query was drained.
#[tokio::test(start_paused = true)]
async fn a_stop_drains_every_window() {
    let (running, out) = counting_a_while("drain").await;
    let report = running.stop().await.expect("a clean stop");
    assert_eq!(counts(&out), vec![9, 5]);
    assert_eq!(out.items().last(), Some(&StreamItem::Cti(Time::INF)));
    assert_eq!(report.ending, Ending::Drained);
    assert_eq!(out.ending(), Some(Ending::Drained));
    assert!(report.held.is_empty(), "{:?}", report.held);
}

/// An abort: no final CTI, so the open window is not emitted as if final; the report names
/// the window operator and what it held, and the output learns the query was aborted.
#[tokio::test(start_paused = true)]
async fn an_abort_emits_nothing_as_final_and_reports_what_was_open() {
    let (running, out) = counting_a_while("abort").await;
    let report = running.abort().await.expect("a clean abort");
    assert_eq!(counts(&out), vec![9], "only the window the CTIs closed");
    assert!(!out.items().contains(&StreamItem::Cti(Time::INF)));
    assert_eq!(report.ending, Ending::Aborted);
    assert_eq!(out.ending(), Some(Ending::Aborted));
    assert!(
        report
            .held
            .iter()
            .any(|(label, n)| label.contains("window") && *n > 0),
        "{:?}",
        report.held
    );
    // Item by item: the open window [10 s, 20 s), its group (no key: `()`).
    let at = |s| Time::from_ticks(0) + TimeSpan::from_secs(s);
    let groups: Vec<_> = report
        .held_items
        .iter()
        .filter(|h| h.what == punctual_core::ops::HeldWhat::Group)
        .map(|h| (h.start, h.end, h.payload.as_deref()))
        .collect();
    assert_eq!(groups, vec![(at(10), at(20), Some("()"))]);
    // The last point (at 14 s, CTI 14 s) is still in the ingress: unreleased.
    let c = report.counters("in").expect("a stream");
    assert_eq!((c.events_in, c.released, c.unreleased), (14, 13, 1));
}

/// An output that sleeps per batch, and records how the query ended.
struct SlowSink {
    per_batch: Duration,
    written: Arc<AtomicUsize>,
    ending: Arc<Mutex<Option<Ending>>>,
    name: Arc<Mutex<String>>,
}

#[async_trait]
impl OutputAdapter<i64> for SlowSink {
    async fn open(&mut self, ctx: &OutputContext) -> Result<(), AdapterError> {
        *self.name.lock().unwrap_or_else(PoisonError::into_inner) =
            format!("{} {:?}", ctx.name(), ctx.shape());
        Ok(())
    }

    async fn write(&mut self, batch: &Batch<i64>) -> Result<(), AdapterError> {
        tokio::time::sleep(self.per_batch).await;
        self.written.fetch_add(batch.len(), Ordering::SeqCst);
        Ok(())
    }

    async fn finish(&mut self, report: &QueryReport) -> Result<(), AdapterError> {
        *self.ending.lock().unwrap_or_else(PoisonError::into_inner) = Some(report.ending.clone());
        Ok(())
    }
}

struct Once<A>(Mutex<Option<A>>);

impl<A: OutputAdapter<i64> + 'static> OutputAdapterFactory<(), i64> for Once<A> {
    type Adapter = A;
    fn create(&self, _: &(), _: EventShape) -> Result<A, AdapterError> {
        let a = self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
        a.ok_or_else(|| AdapterError::Config("used".into()))
    }
}

/// A sink slower than the grace period under `stop()`: as long as it writes, the stop waits
/// for it; it drains every event, is finished, and the report is returned.
#[tokio::test(start_paused = true)]
async fn a_slow_sink_under_stop_keeps_its_report() {
    let mut query = Query::new("slow")
        .stop_grace(Duration::from_secs(2))
        .channel_capacity(4);
    let points = query
        .create_stream(
            point("in").settings(settings()),
            &input(|ctx| {
                async move {
                    for x in 0..40 {
                        ctx.enqueue_point(s(x), x).await?;
                    }
                    ctx.stopping().await;
                    Ok(())
                }
                .boxed()
            }),
            &(),
        )
        .expect("binds");
    let (written, ending, name) = (Arc::default(), Arc::default(), Arc::default());
    let sink = SlowSink {
        per_batch: Duration::from_secs(1),
        written: Arc::clone(&written),
        ending: Arc::clone(&ending),
        name: Arc::clone(&name),
    };
    query
        .bind_output(&points, &Once(Mutex::new(Some(sink))), &())
        .expect("binds");
    let running = query.start().expect("starts");
    tokio::time::sleep(Duration::from_millis(10)).await;
    let stopped_at = tokio::time::Instant::now();
    let report = running
        .stop()
        .await
        .expect("the stop waits for a sink that writes");
    assert!(
        stopped_at.elapsed() > Duration::from_secs(4),
        "longer than the grace period"
    );
    assert_eq!(report.ending, Ending::Drained);
    // Everything the input enqueued before it stopped is written, the last batch with the
    // final CTI.
    let released = report.counters("in").map_or(0, |c| c.released as usize);
    assert!(released > 4, "{released}");
    assert_eq!(written.load(Ordering::SeqCst), released);
    assert_eq!(
        *ending.lock().unwrap_or_else(PoisonError::into_inner),
        Some(Ending::Drained)
    );
    assert_eq!(
        *name.lock().unwrap_or_else(PoisonError::into_inner),
        "in Point"
    );
}

/// Every output's `finish` sees how the query ended: completed, drained, aborted, failed.
#[tokio::test(start_paused = true)]
async fn finish_sees_each_of_the_four_endings() {
    for want in ["completed", "drained", "aborted", "failed"] {
        let mut query = Query::new(want);
        let points = query
            .create_stream(
                point("in").settings(settings()),
                &input(move |ctx| {
                    async move {
                        ctx.enqueue_point(s(1), 1).await?;
                        match want {
                            "completed" => Ok(()),
                            "failed" => Err(AdapterError::Config("the sensor went away".into())),
                            _ => {
                                ctx.stopping().await;
                                Ok(())
                            }
                        }
                    }
                    .boxed()
                }),
                &(),
            )
            .expect("binds");
        let out = CollectOutput::new();
        query.bind_output(&points, &out, &()).expect("binds");
        let running = query.start().expect("starts");
        tokio::time::sleep(Duration::from_millis(10)).await;
        let result = match want {
            "drained" => running.stop().await,
            "aborted" => running.abort().await,
            _ => running.wait().await,
        };
        let ending = match result {
            Ok(report) => report.ending,
            Err(failure) => {
                assert!(matches!(failure.error, QueryError::Adapter { .. }));
                failure.report.ending.clone()
            }
        };
        assert_eq!(out.ending(), Some(ending.clone()), "{want}");
        let expected = match want {
            "completed" => Ending::Completed,
            "drained" => Ending::Drained,
            "aborted" => Ending::Aborted,
            _ => Ending::Failed(
                "the input adapter of `in` failed: bad adapter configuration: the sensor went away"
                    .into(),
            ),
        };
        assert_eq!(ending, expected);
        assert_eq!(
            ending.is_complete(),
            want == "completed" || want == "drained"
        );
    }
}

/// A failed run's `wait` gives the error and the report: the counters up to the failure, the
/// dead letters (sent to the sink, counted in the report), what the operators held; the
/// monitor, taken before the query started, reads the same counters.
#[tokio::test(start_paused = true)]
async fn a_failed_run_keeps_its_report() {
    let mut query = Query::new("fails");
    let monitor = query.monitor();
    assert!(monitor.counters("in").is_none(), "not started yet");
    let points = query
        .create_stream(
            point("in").settings(settings()),
            &input(|ctx| {
                async move {
                    ctx.enqueue_points([(s(5), 1), (s(6), 2)]).await?;
                    // Behind the CTI: dropped and dead-lettered.
                    ctx.enqueue_point(s(2), 3).await?;
                    // Not a point: rejected and dead-lettered.
                    let _ = ctx.enqueue(StreamItem::interval(s(7), s(8), 4)).await;
                    Err(AdapterError::Config("the sensor went away".into()))
                }
                .boxed()
            }),
            &(),
        )
        .expect("binds");
    let letters = DeadLetterCollector::new();
    query
        .bind_dead_letters(&points, letters.clone())
        .expect("binds");
    let windows = points
        .tumbling_window(TimeSpan::from_secs(10))
        .aggregate(Count);
    let out = CollectOutput::new();
    query.bind_output(&windows, &out, &()).expect("binds");
    let failure = query
        .start()
        .expect("starts")
        .wait()
        .await
        .expect_err("the adapter failed");
    assert!(
        failure.to_string().contains("the sensor went away"),
        "{failure}"
    );
    let c = failure.report.counters("in").expect("a stream");
    assert_eq!(
        (c.events_in, c.released, c.dropped, c.rejected, c.unreleased),
        (4, 1, 1, 1, 1)
    );
    assert_eq!(letters.letters().len(), 3, "dropped, rejected, unreleased");
    assert!(matches!(failure.report.ending, Ending::Failed(_)));
    assert!(!failure.report.held.is_empty(), "the window of 5 s is open");
    assert_eq!(monitor.counters("in"), Some(c));
    assert!(counts(&out).is_empty(), "no window is emitted as if final");
}

/// An error's message names its cause once: printed link by link (`source()`), the chain does
/// not repeat it.
#[test]
fn an_error_chain_names_each_cause_once() {
    use std::error::Error as _;
    let error = QueryError::Adapter {
        role: "input",
        stream: "in".into(),
        error: AdapterError::Enqueue(punctual_runtime::EnqueueError::Rejected {
            stream: "in".into(),
            error: punctual_policies::Error::Invalid(punctual_core::InvalidEvent::CtiAtNegInf),
        }),
    };
    let mut chain = vec![error.to_string()];
    let mut cause = error.source();
    while let Some(c) = cause {
        chain.push(c.to_string());
        cause = c.source();
    }
    assert_eq!(
        chain.join(" / "),
        "the input adapter of `in` failed: stream `in` rejected the item: invalid event: a CTI at -inf is meaningless"
    );
}
