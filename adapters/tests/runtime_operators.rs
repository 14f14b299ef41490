//! The runtime with operators, under a paused clock: multicast, explain, bulk enqueue, fused
//! filters, unordered streams, `try_enqueue`, budgets and limits, what a query held at its end.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::FutureExt;

use punctual_adapters::{channel_input, CollectOutput, MemoryInput, RecordsInput};
use punctual_core::{Batch, EventShape, StreamItem, Time, TimeSpan, Unordered};
use punctual_policies::{AdvanceTimeSettings, DeadLetterReason};
use punctual_runtime::{
    AdapterError, DeadLetterCollector, InputOptions, OutputAdapter, Query, QueryError,
    QueryFailure, TryEnqueueError,
};

mod common;
use common::{
    collected, every_events_then_drop, given, input, memory, ordered, payloads, point,
    starts_and_payloads, t,
};

#[tokio::test(start_paused = true)]
async fn operators_run_on_the_query_task_and_multicast() {
    use punctual_core::ops::Sum;
    let mut query = Query::new("ops");
    // Readings: (device, value) points; calibration: (device, factor) edges.
    let readings: Vec<StreamItem<(u32, f64)>> = vec![
        StreamItem::point(t(1), (1, 10.0)),
        StreamItem::point(t(2), (2, 5.0)),
        StreamItem::point(t(12), (1, 1.0)),
        StreamItem::Cti(Time::INF),
    ];
    let calibration: Vec<StreamItem<(u32, f64)>> = vec![
        StreamItem::start_edge(t(0), (1, 2.0)),
        StreamItem::start_edge(t(0), (2, 3.0)),
        StreamItem::end_edge(t(0), t(10), (1, 2.0)),
        StreamItem::start_edge(t(10), (1, 4.0)),
        StreamItem::Cti(Time::INF),
    ];
    let r = memory(&mut query, point("readings"), &readings);
    let c = memory(
        &mut query,
        InputOptions::new("calibration", EventShape::Edge),
        &calibration,
    );
    let sums = r
        .join_on(&c, |x| x.0, |y| y.0, |x, y| (x.0, x.1 * y.1))
        .tumbling_window(TimeSpan::from_ticks(10))
        .group_by(|x: &(u32, f64)| x.0)
        .aggregate(Sum::of(|x: &(u32, f64)| x.1));
    let (out, raw) = (CollectOutput::new(), CollectOutput::new());
    query.bind_output(&sums, &out, &()).unwrap();
    query.bind_output(&r, &raw, &()).unwrap();
    let e = query.bind_output(&sums, &out, &()).unwrap_err();
    assert!(e.to_string().contains("already has an output"), "{e}");
    query.start().unwrap().wait().await.unwrap();
    let mut results = starts_and_payloads(&out.items());
    results.sort_by(|a, b| a.partial_cmp(b).unwrap());
    assert_eq!(
        results,
        vec![(t(10), (1, 20.0)), (t(10), (2, 15.0)), (t(20), (1, 4.0))]
    );
    assert_eq!(out.items().last(), Some(&StreamItem::Cti(Time::INF)));
    assert_eq!(
        raw.items(),
        readings,
        "the input itself, multicast to a second output"
    );
}

#[tokio::test(start_paused = true)]
async fn explain_names_the_input_holding_a_join_back() {
    let (fast_tx, fast) = channel_input::<i64>(16);
    let (_slow_tx, slow) = channel_input::<i64>(16);
    let mut query = Query::new("explain");
    let f = query.create_stream(ordered("fast"), &fast, &()).unwrap();
    let s = query
        .create_stream(InputOptions::new("reference", EventShape::Edge), &slow, &())
        .unwrap();
    let joined = f.join(&s, |a, b| a + b).named("enriched");
    query
        .bind_output(&joined, &CollectOutput::new(), &())
        .unwrap();
    let running = query.start().unwrap();
    for x in 1..=3 {
        fast_tx.send(StreamItem::point(t(x), x)).await.unwrap();
    }
    tokio::time::sleep(Duration::from_secs(45)).await;
    let lines: Vec<String> = running
        .explain()
        .await
        .iter()
        .map(|e| e.to_string())
        .collect();
    let join = lines
        .iter()
        .find(|l| l.starts_with("join `enriched`"))
        .unwrap();
    assert!(
        join.contains("held at no CTI yet by input `reference`: no new CTI for 45 s"),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("input `fast`: CTI 3 (no new CTI for 45 s)")),
        "{lines:?}"
    );
    running.stop().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn points_enqueued_in_bulk_go_through_the_same_ingress() {
    let letters = DeadLetterCollector::new();
    let settings = every_events_then_drop(2);
    let mut query = Query::new("bulk");
    let s = query
        .create_stream(
            point("in").settings(settings),
            &input(|ctx| {
                async move {
                    // Columns: CTI(3) after the second point; 2 then breaks it and is dropped.
                    let rejected = ctx
                        .enqueue_point_columns(&[t(1), t(3), t(2), t(4)], &[1, 3, 2, 4])
                        .await?;
                    assert_eq!(rejected.rejected, 0);
                    let lengths = ctx.enqueue_point_columns(&[t(5)], &[]).await.unwrap_err();
                    assert!(lengths.to_string().contains("equal lengths"), "{lengths}");
                    // Pairs from an iterator: CTI(6) after 6 (4 and 6 since the last one).
                    let rejected = ctx.enqueue_points([(t(6), 6), (t(7), 7)]).await?;
                    assert_eq!(rejected.rejected, 0);
                    // Records read in place: CTI(8) after 8; 5 then breaks it and is dropped.
                    let records: [(i64, i64); 3] = [(8, 8), (5, 5), (9, 9)];
                    let rejected = ctx
                        .enqueue_point_records(&records, |r| t(r.0), |r| r.1)
                        .await?;
                    assert_eq!(rejected.rejected, 0);
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
            StreamItem::point(t(1), 1),
            StreamItem::Cti(t(3)),
            StreamItem::point(t(3), 3),
            StreamItem::point(t(4), 4),
            StreamItem::Cti(t(6)),
            StreamItem::point(t(6), 6),
            StreamItem::point(t(7), 7),
            StreamItem::Cti(t(8)),
            StreamItem::point(t(8), 8),
            StreamItem::point(t(9), 9),
            StreamItem::Cti(Time::INF),
        ]
    );
    let c = report.counters("in").unwrap();
    assert_eq!((c.events_in, c.released, c.dropped), (9, 7, 2));
    let reasons: Vec<_> = letters.letters().into_iter().map(|d| d.reason).collect();
    assert_eq!(
        reasons,
        vec![DeadLetterReason::Late, DeadLetterReason::Late]
    );
}

/// A user's `.filter` right after an input runs fused into the input's ingress: the events it
/// refuses are counted as `filtered` there (an operator after the ingress would leave them
/// `released`), and still count for CTI generation. With the input read elsewhere too, the
/// filter stays an operator: the same filtered stream, nothing `filtered` in the counters.
#[tokio::test(start_paused = true)]
async fn a_filter_after_an_input_runs_fused_into_its_ingress() {
    let settings = every_events_then_drop(2);
    for (unordered, also_raw) in [(false, false), (true, false), (false, true)] {
        let mut query = Query::new("fused");
        let options = point("in").settings(settings.clone());
        // Odd values stay out, but every accepted record counts for generation: CTI(3) after
        // the second; the record at 2 breaks it and is dropped; CTI(8) after the last two (9
        // is odd: filtered, yet it moves the CTI).
        let records: Vec<(i64, i64)> = vec![(1, 1), (3, 2), (2, 4), (7, 6), (8, 9)];
        let replay = RecordsInput::new(records, |r: &(i64, i64)| t(r.0), |r: &(i64, i64)| r.1);
        let out = CollectOutput::new();
        let raw = CollectOutput::new();
        let even = |v: &i64| v % 2 == 0;
        if unordered {
            let s = query
                .create_stream(options.unordered(), &replay, &())
                .unwrap();
            query.bind_output(s.filter(even), &out, &()).unwrap();
        } else {
            let s = query.create_stream(options, &replay, &()).unwrap();
            query.bind_output(s.filter(even), &out, &()).unwrap();
            if also_raw {
                query.bind_output(&s, &raw, &()).unwrap();
            }
        }
        let report = query.start().unwrap().wait().await.unwrap();
        let (p3, p7) = (StreamItem::point(t(3), 2), StreamItem::point(t(7), 6));
        let mut expected = if unordered {
            // Released on arrival: 3 goes out before the CTI its record generated.
            vec![p3, StreamItem::Cti(t(3)), p7, StreamItem::Cti(t(8))]
        } else {
            vec![StreamItem::Cti(t(3)), p3, p7, StreamItem::Cti(t(8))]
        };
        expected.push(StreamItem::Cti(Time::INF));
        let case = format!("unordered: {unordered}, raw stream read: {also_raw}");
        assert_eq!(out.items(), expected, "{case}");
        let c = report.counters("in").unwrap();
        let want = if also_raw { (5, 4, 1, 0) } else { (5, 2, 1, 2) };
        assert_eq!(
            (c.events_in, c.released, c.dropped, c.filtered),
            want,
            "{case}"
        );
        // The README's identity: every event is in exactly one of these.
        assert_eq!(
            c.events_in,
            c.released + c.filtered + c.dropped + c.rejected + c.buffered + c.unreleased,
            "{case}"
        );
        assert_eq!(raw.items().len(), if also_raw { 7 } else { 0 }, "{case}");
    }
}

#[tokio::test(start_paused = true)]
async fn an_unordered_stream_refuses_the_edge_shape_and_rejects_edges() {
    let mut query = Query::new("unordered");
    let items: Vec<StreamItem<i64>> = vec![];
    let refused = query.create_stream(
        InputOptions::new("edges", EventShape::Edge).unordered(),
        &MemoryInput,
        &items,
    );
    assert!(
        matches!(refused, Err(QueryError::Bind(ref why)) if why.contains("edge")),
        "{refused:?}"
    );

    let items: Vec<StreamItem<i64>> = vec![
        StreamItem::point(t(1), 10),
        StreamItem::start_edge(t(2), 20), // cannot be released on arrival: rejected
        StreamItem::point(t(3), 30),
    ];
    let input = memory(&mut query, ordered("in").unordered(), &items);
    let big = input.filter(|v| *v >= 20).ordered();
    let out = CollectOutput::new();
    query.bind_output(&big, &out, &()).unwrap();
    let report = query.start().unwrap().wait().await.unwrap();
    let counters = report.counters("in").unwrap();
    assert_eq!((counters.events_in, counters.rejected), (3, 1));
    let kept: Vec<i64> = payloads(&out.items());
    assert_eq!(kept, vec![30]);
}

/// An unordered output gets the events as released, in arrival order, with the input's CTIs;
/// binding it twice, or to another query's stream, is refused.
#[tokio::test]
async fn an_unordered_output_receives_events_in_arrival_order() {
    let mut query = Query::new("unordered output");
    let items: Vec<StreamItem<i64>> = [(5, 50), (2, 20), (9, 90), (4, 40), (12, 7)]
        .into_iter()
        .map(|(at, v)| StreamItem::point(t(at), v))
        .collect();
    let input = memory(
        &mut query,
        point("in")
            .settings(AdvanceTimeSettings::unordered_start_time(
                TimeSpan::from_ticks(4),
            ))
            .unordered(),
        &items,
    );
    let big = input.filter(|v| *v >= 10);
    let out = CollectOutput::new();
    query.bind_output(&big, &out, &()).unwrap();
    let again = query.bind_output(&big, &CollectOutput::<i64>::new(), &());
    assert!(matches!(again, Err(QueryError::Bind(_))), "{again:?}");
    let mut other = Query::new("other");
    let foreign = punctual_core::ops::QueryGraph::new().source::<i64, Unordered>();
    let refused = other.bind_output(&foreign, &CollectOutput::<i64>::new(), &());
    assert!(matches!(refused, Err(QueryError::Bind(_))), "{refused:?}");

    let report = query.start().unwrap().wait().await.unwrap();
    assert_eq!(report.counters("in").unwrap().dropped, 1); // 4 after CTI(5)
    let seen: Vec<(Time, Option<i64>)> = out
        .items()
        .into_iter()
        .map(|i| match i {
            StreamItem::Insert(e) => (e.kind.start(), Some(e.payload)),
            StreamItem::Cti(c) => (c, None),
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            (t(5), Some(50)),
            (t(1), None),
            (t(2), Some(20)),
            (t(9), Some(90)),
            (t(5), None),
            (t(8), None),
            (Time::INF, None),
        ]
    );
}

/// An unordered input joined with a reference stream through the runtime: every reading meets
/// its key's name, the late one is dropped, and the output (unordered) ends with CTI(+inf).
#[tokio::test]
async fn an_unordered_join_runs_through_the_runtime() {
    let mut query = Query::new("unordered join");
    let readings: Vec<StreamItem<(u8, i64)>> =
        [(5, 1, 50), (2, 2, 20), (9, 1, 90), (1, 2, 10), (12, 3, 7)]
            .into_iter()
            .map(|(at, k, v)| StreamItem::point(t(at), (k, v)))
            .collect();
    let fast = memory(
        &mut query,
        point("readings")
            .settings(AdvanceTimeSettings::unordered_start_time(
                TimeSpan::from_ticks(3),
            ))
            .unordered(),
        &readings,
    );
    let names: Vec<StreamItem<(u8, String)>> = vec![
        StreamItem::interval(t(0), t(100), (1, "one".to_owned())),
        StreamItem::interval(t(0), t(100), (2, "two".to_owned())),
    ];
    let reference = memory(
        &mut query,
        InputOptions::new("names", EventShape::Interval)
            .settings(AdvanceTimeSettings::increasing_start_time()),
        &names,
    );
    let named = fast.join_on(&reference, |r| r.0, |n| n.0, |r, n| (n.1.clone(), r.1));
    let out = CollectOutput::new();
    query.bind_output(&named, &out, &()).unwrap();
    let report = query.start().unwrap().wait().await.unwrap();
    assert_eq!(report.counters("readings").unwrap().dropped, 1); // 1 after CTI(2)
    let items = out.items();
    assert_eq!(items.last(), Some(&StreamItem::Cti(Time::INF)));
    let mut results = starts_and_payloads(&items);
    results.sort();
    // Key 3 has no name: no result.
    assert_eq!(
        results,
        [(2, "two", 20), (5, "one", 50), (9, "one", 90)]
            .map(|(at, name, v)| (t(at), (name.to_owned(), v)))
    );
}

/// An output that holds each batch until it is let go.
struct GatedOutput {
    gate: Arc<tokio::sync::Semaphore>,
    written: Arc<AtomicUsize>,
}

#[async_trait]
impl OutputAdapter<i64> for GatedOutput {
    async fn write(&mut self, batch: &Batch<i64>) -> Result<(), AdapterError> {
        let permit = self.gate.acquire().await;
        permit.map(|p| p.forget()).ok();
        self.written.fetch_add(batch.len(), Ordering::SeqCst);
        Ok(())
    }
}

/// `try_enqueue_batch` never waits: while the output is behind (its queue full) it gives the
/// items back untouched; once the output catches up, they go in.
#[tokio::test(start_paused = true)]
async fn try_enqueue_gives_the_items_back_while_the_output_is_behind() {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let written = Arc::new(AtomicUsize::new(0));
    let output = GatedOutput {
        gate: Arc::clone(&gate),
        written: Arc::clone(&written),
    };
    let opened = Arc::clone(&gate);
    let mut query = Query::new("try").channel_capacity(1);
    let s = query
        .create_stream(
            ordered("in"),
            &input(move |ctx| {
                async move {
                    let mut full = 0;
                    let mut next = 0;
                    while next < 6 {
                        let items = vec![StreamItem::point(t(next), next)];
                        match ctx.try_enqueue_batch(items) {
                            Ok(summary) => {
                                assert_eq!(summary.accepted, 1);
                                next += 1;
                            }
                            Err(TryEnqueueError::Full(back)) => {
                                assert_eq!(back, vec![StreamItem::point(t(next), next)]);
                                full += 1;
                                // Let the output write one batch, then try again.
                                opened.add_permits(1);
                                tokio::time::sleep(Duration::from_millis(1)).await;
                            }
                            Err(TryEnqueueError::Enqueue(e)) => return Err(e.into()),
                        }
                    }
                    assert!(full > 0, "the queue of one batch filled up");
                    opened.add_permits(100);
                    Ok(())
                }
                .boxed()
            }),
            &(),
        )
        .unwrap();
    query.bind_output(&s, &given(output), &()).unwrap();
    let report = query.start().unwrap().wait().await.unwrap();
    assert_eq!(report.counters("in").map(|c| c.released), Some(6));
    assert_eq!(written.load(Ordering::SeqCst), 6);
}

/// An input adapter that blocks its thread and ignores the stop cannot hang `stop()`: on a
/// multi-thread runtime the stop ends after the grace period with a timeout that names it.
#[test]
fn a_blocking_adapter_cannot_hang_the_stop() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let outcome = runtime.block_on(async {
        let mut query = Query::new("blocking").stop_grace(Duration::from_millis(300));
        query
            .create_stream(
                point("stuck"),
                &input(|_ctx| {
                    async {
                        // A bug: a blocking call on the runtime's thread.
                        std::thread::sleep(Duration::from_secs(10));
                        Ok(())
                    }
                    .boxed()
                }),
                &(),
            )
            .unwrap();
        let running = query.start().unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        let started = std::time::Instant::now();
        let result = running.stop().await;
        (result, started.elapsed())
    });
    runtime.shutdown_background();
    let (result, took) = outcome;
    assert!(took < Duration::from_secs(5), "the stop took {took:?}");
    match result {
        Err(QueryFailure {
            error: QueryError::StopTimeout { tasks, .. },
            ..
        }) => assert_eq!(tasks, vec!["input `stuck`".to_owned()]),
        other => panic!("expected a stop timeout, got {other:?}"),
    }
}

/// "Valid forever" into a 1 s tumbling window: over the window limit, the event is dropped
/// (counted in the query report by operator, logged with the reason); the other events give
/// their results, and memory stays small.
#[tokio::test(start_paused = true)]
async fn an_event_over_the_window_limit_is_dropped_and_reported() {
    let mut query = Query::new("forever");
    let forever = Time::parse_rfc3339("9999-12-31T23:59:59Z").unwrap();
    let items = vec![
        StreamItem::interval(t(0), forever, 1),
        StreamItem::point(t(5), 2),
        StreamItem::Cti(Time::INF),
    ];
    let s = memory(
        &mut query,
        InputOptions::new("in", EventShape::Interval),
        &items,
    );
    let counts = s
        .tumbling_window(TimeSpan::from_secs(1))
        .count()
        .named("per second");
    let out = CollectOutput::new();
    query.bind_output(&counts, &out, &()).unwrap();
    let report = query.start().unwrap().wait().await.unwrap();
    assert_eq!(
        report.dropped,
        vec![("tumbling window `per second`".to_owned(), 1)]
    );
    // The drop itself, with the event's lifetime and the reason (the operator's dead letter).
    assert_eq!(report.drops.len(), 1, "{:?}", report.drops);
    let drop = &report.drops[0];
    assert_eq!(drop.operator, "tumbling window `per second`");
    assert_eq!((drop.start, drop.end), (t(0), forever));
    assert!(drop.reason.contains("windows per event"), "{}", drop.reason);
    let events = out
        .items()
        .into_iter()
        .filter(|i| matches!(i, StreamItem::Insert(_)))
        .count();
    assert_eq!(events, 1, "the point's window only");
}

/// A join whose other input never gets a CTI holds everything the first sends: over the
/// query's budget the query fails, naming the join and the input it waits for, instead of
/// growing without bound.
#[tokio::test(start_paused = true)]
async fn a_query_over_its_budget_fails_naming_the_input_it_waits_for() {
    let mut query = Query::new("budget").max_held(1_000);
    let fast: Vec<_> = (0..5_000).map(|x| StreamItem::point(t(x), x)).collect();
    let silent = vec![StreamItem::point(t(0), 0i64)];
    let f = memory(&mut query, ordered("fast"), &fast);
    let s = memory(&mut query, point("silent"), &silent);
    let joined = f.join_on(&s, |x| *x, |y| *y, |x, y| x + y).named("pairs");
    query
        .bind_output(&joined, &CollectOutput::new(), &())
        .unwrap();
    let failure = query.start().unwrap().wait().await.unwrap_err();
    let text = failure.error.to_string();
    assert!(
        text.contains("over its budget of 1000")
            && text.contains("join `pairs`")
            && text.contains("input `silent`"),
        "{text}"
    );
    assert!(matches!(
        failure.error,
        QueryError::Stream(punctual_runtime::EnqueueError::OverBudget(ref o)) if o.held > 1_000
    ));
}

/// Start edges whose end never comes are held (to match their end edges): they count against
/// the query's budget, and the error names the input.
#[tokio::test(start_paused = true)]
async fn open_start_edges_count_against_the_budget() {
    let mut query = Query::new("edges").max_held(1_000);
    let edges: Vec<_> = (0..2_000)
        .map(|x| StreamItem::start_edge(t(x), x))
        .collect();
    let s = memory(
        &mut query,
        InputOptions::new("forever", EventShape::Edge)
            .settings(AdvanceTimeSettings::increasing_start_time()),
        &edges,
    );
    query.bind_output(&s, &CollectOutput::new(), &()).unwrap();
    let failure = query.start().unwrap().wait().await.unwrap_err();
    let text = failure.error.to_string();
    assert!(
        text.contains("over its budget of 1000") && text.contains("input `forever`"),
        "{text}"
    );
    let c = failure.report.counters("forever").unwrap();
    assert!(c.open_edges > 1_000, "{c:?}");
}

/// A payload the report can show only when asked to.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Reading {
    device: i64,
}

/// A query that ends while a join still holds what one input sent (its other input never
/// got a CTI): the report counts what the join held and lists it item by item, with the
/// lifetimes and the payloads of a type given to `show_held`; the other input's own events
/// are `unreleased` dead letters of its stream.
#[tokio::test(start_paused = true)]
async fn what_a_join_held_at_the_end_is_listed_item_by_item() {
    let mut query = Query::new("held").show_held::<Reading>();
    let fast: Vec<_> = (0..5)
        .map(|x| StreamItem::point(t(10 * x), Reading { device: x }))
        .collect();
    let silent = vec![StreamItem::point(t(0), Reading { device: 0 })];
    let f = memory(&mut query, ordered("fast"), &fast);
    let s = memory(&mut query, point("silent"), &silent);
    let joined = f
        .join_on(&s, |x| x.device, |y| y.device, |x, _| x.clone())
        .named("pairs");
    let out = CollectOutput::new();
    query.bind_output(&joined, &out, &()).unwrap();
    let report = query.start().unwrap().wait().await.unwrap();
    let held: usize = report.held.iter().map(|h| h.1).sum();
    assert!(held >= 4, "{:?}", report.held);
    assert_eq!(report.held_items.len(), held, "{:?}", report.held_items);
    for item in &report.held_items {
        assert_eq!(item.operator, "join `pairs`");
        assert_eq!(item.what, punctual_core::ops::HeldWhat::Event);
        assert_eq!(item.end, item.start + punctual_core::TimeSpan::TICK);
    }
    let mut devices: Vec<_> = report
        .held_items
        .iter()
        .filter_map(|h| h.payload.clone())
        .collect();
    devices.sort();
    assert!(
        devices.contains(&"Reading { device: 4 }".to_owned()),
        "{devices:?}"
    );
    assert_eq!(report.counters("silent").unwrap().unreleased, 1);
    assert!(report.held_items[0]
        .to_string()
        .starts_with("join `pairs` held event ["));
}

/// Without `show_held`, a payload of a type the query does not know is listed without it;
/// a union holds what one input released (its final CTI released all) until the other's CTI
/// passes it.
#[tokio::test(start_paused = true)]
async fn held_items_of_an_unknown_type_have_no_payload() {
    let mut query = Query::new("held");
    let items: Vec<_> = (5..8)
        .map(|x| StreamItem::point(t(x), Reading { device: x }))
        .collect();
    let s = memory(&mut query, ordered("in"), &items);
    let other = memory(&mut query, point("other"), &vec![]);
    let u = s.union(&[&other]).named("both");
    query.bind_output(&u, &CollectOutput::new(), &()).unwrap();
    let report = query.start().unwrap().wait().await.unwrap();
    assert_eq!(report.held, vec![("union `both`".to_owned(), 3)]);
    let held: Vec<_> = report
        .held_items
        .iter()
        .map(|h| (h.start, h.payload.clone()))
        .collect();
    assert_eq!(held, vec![(t(5), None), (t(6), None), (t(7), None)]);
}

/// The report lists at most `MAX_REPORTED_HELD` held items; `held` still counts them all.
#[tokio::test(start_paused = true)]
async fn held_items_are_listed_up_to_the_limit_and_counted_beyond() {
    let mut query = Query::new("many");
    let n = punctual_runtime::MAX_REPORTED_HELD as i64 + 500;
    let fast: Vec<_> = (0..n).map(|x| StreamItem::point(t(x), x)).collect();
    let f = memory(&mut query, ordered("fast"), &fast);
    let s = memory(&mut query, point("silent"), &vec![]);
    let joined = f.join_on(&s, |x| *x, |y: &i64| *y, |x, y| x + y);
    query
        .bind_output(&joined, &CollectOutput::new(), &())
        .unwrap();
    let report = query.start().unwrap().wait().await.unwrap();
    let held: usize = report.held.iter().map(|h| h.1).sum();
    assert_eq!(held, n as usize, "{:?}", report.held);
    assert_eq!(report.held_items.len(), punctual_runtime::MAX_REPORTED_HELD);
}
