//! A query built with the ordinary API (`Query`, input and output adapters) run on the
//! cluster executor (`punctual::cluster::run_query`) with its own adapters: on random inputs,
//! every query shape gives the output it gives on the local runtime (`Query::start`), with the
//! same drops, on 1, 2 and 3 worker threads: the same events, the same last CTI, a valid
//! stream (no event before a CTI above its sync time). Where an event falls between the CTIs
//! is not compared: the inputs' adapters run side by side, so the order in which one input's
//! events meet the other's CTIs differs from run to run (on the runtime too); and the CTIs in
//! between differ: the workers' CTIs are merged as they come (the least every worker has
//! passed), so a CTI one worker's operators hold back and the others do not shows up on its
//! own where the runtime jumps over it, and CTIs that reach an operator together are passed
//! on as the last of them.

use proptest::prelude::*;

use punctual::adapters::CollectOutput;
use punctual::cluster::{run_query, ClusterConfig};
use punctual_tests::split_cases::strategy::spec;
use punctual_tests::split_cases::{
    on_runtime, outcome, parse, query, released, same, text, Outcome, Shape, Spec,
};

/// The case on `workers` worker threads of the cluster executor.
fn on_cluster(spec: &Spec, workers: usize) -> Outcome {
    let case = spec.case();
    let out = CollectOutput::new();
    let sink = out.clone();
    let report = run_query(ClusterConfig::threads(workers), move |_| {
        query(&case, &sink)
    })
    .expect("the query runs on the cluster");
    outcome(&out, &report.report())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn a_query_gives_on_the_cluster_what_it_gives_on_the_runtime(spec in spec()) {
        let want = on_runtime(&spec);
        for workers in [1, 2, 3] {
            let got = on_cluster(&spec, workers);
            if let Err(why) = same(&got, &want) {
                prop_assert!(
                    false,
                    "{:?} on {} workers: {}\n cluster {:?}\n runtime {:?}",
                    spec.shape, workers, why, got.output, want.output
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// An output written by every worker: each worker's share is a valid stream that ends
    /// with the runtime's last CTI, and the shares hold the runtime's events between them.
    #[test]
    fn each_worker_writes_its_share_of_a_per_worker_output(spec in spec()) {
        let want = on_runtime(&spec);
        let (_, want_ctis) = released(&want.output).map_err(TestCaseError::fail)?;
        let mut want_events: Vec<String> = released(&want.output)
            .map_err(TestCaseError::fail)?
            .0
            .into_iter()
            .map(|e| e.0)
            .collect();
        want_events.sort();
        let case = spec.case();
        let shares: Vec<CollectOutput<String>> = (0..2).map(|_| CollectOutput::new()).collect();
        let sinks = shares.clone();
        run_query(ClusterConfig::threads(2), move |worker| {
            query(&case, &sinks[worker].clone().each_worker())
        })
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut events = Vec::new();
        for (worker, share) in shares.iter().enumerate() {
            let items: Vec<String> = share.items().into_iter().map(text).collect();
            let (e, ctis) = released(&items)
                .map_err(|why| TestCaseError::fail(format!("worker {worker}: {why}")))?;
            prop_assert_eq!(ctis.last(), want_ctis.last(), "worker {}'s last CTI", worker);
            events.extend(e.into_iter().map(|e| e.0));
        }
        events.sort();
        prop_assert_eq!(events, want_events, "{:?}", spec.shape);
    }
}

/// The report says who owns each input, and one report has each input's counters from its
/// owner: a join's two inputs (one imports nothing) on two workers.
#[test]
fn the_report_takes_each_input_s_counters_from_its_owner() {
    let spec = Spec {
        shape: Shape::AntiJoin,
        inputs: vec![
            (vec![(1, 0, 1, 1), (2, 0, 2, 2), (3, 0, 1, 3)], vec![10]),
            (vec![(1, 5, 1, 7)], vec![10]),
        ],
    };
    let case = spec.case();
    let out = CollectOutput::new();
    let sink = out.clone();
    let report =
        run_query(ClusterConfig::threads(2), move |_| query(&case, &sink)).expect("the query runs");
    assert_eq!(report.owners, vec![0, 1], "two inputs, round robin");
    assert_eq!(report.workers.len(), 2);
    let merged = report.report();
    assert_eq!(merged.counters("in0").map(|c| c.events_in), Some(3));
    assert_eq!(merged.counters("in1").map(|c| c.events_in), Some(1));
    // Each worker's own report has only its input's events.
    assert_eq!(
        report.workers[0].counters("in1").map(|c| c.events_in),
        Some(0)
    );
    assert_eq!(
        report.workers[1].counters("in0").map(|c| c.events_in),
        Some(0)
    );
}

/// The comparison finds what it should: an event after a CTI above it, an event missing or
/// different, a missing final CTI; other CTIs in between are allowed.
#[test]
fn the_comparison_fails_when_it_should() {
    let out = |items: &[&str]| Outcome {
        output: items.iter().map(|s| (*s).to_owned()).collect(),
        dropped: 0,
    };
    let want = out(&["CTI 0", "Point(3) a", "CTI 5", "CTI +inf"]);
    assert!(same(
        &out(&["CTI 0", "Point(3) a", "CTI 4", "CTI 5", "CTI +inf"]),
        &want
    )
    .is_ok());
    assert!(same(&out(&["CTI 0", "CTI 4", "Point(3) a", "CTI +inf"]), &want).is_err());
    // Other CTIs in between: the same.
    assert!(same(
        &out(&["CTI 0", "CTI 2", "Point(3) a", "CTI 6", "CTI +inf"]),
        &want
    )
    .is_ok());
    assert!(same(&out(&["CTI 0", "Point(3) b", "CTI 5", "CTI +inf"]), &want).is_err());
    assert!(same(&out(&["CTI 0", "Point(3) a", "CTI 5"]), &want).is_err());
    assert_eq!(parse("EndEdge { start: 1, end: 7 } x"), (Some(7), 0));
    assert_eq!(parse("Interval { start: 2, end: 7 } x"), (Some(2), 0));
    assert_eq!(parse("CTI +inf"), (None, i64::MAX));
}

/// An input adapter that enqueues a few points and then fails, as a source that breaks does.
struct Breaks;

#[async_trait::async_trait]
impl punctual::runtime::InputAdapter<i64> for Breaks {
    async fn run(
        &mut self,
        ctx: &mut punctual::runtime::InputContext<i64>,
    ) -> Result<(), punctual::runtime::AdapterError> {
        for i in 0..3 {
            ctx.enqueue_point(punctual::core::Time::from_ticks(i), i)
                .await?;
        }
        Err(punctual::runtime::AdapterError::Config(
            "the source broke".to_owned(),
        ))
    }
}

impl punctual::runtime::InputAdapterFactory<(), i64> for Breaks {
    type Adapter = Breaks;
    fn create(
        &self,
        _: &(),
        _: punctual::core::EventShape,
    ) -> Result<Breaks, punctual::runtime::AdapterError> {
        Ok(Breaks)
    }
}

/// An input whose adapter fails on one worker fails the run (nothing looks complete): the
/// error names the worker and says why, while the other worker's input ran to its end.
#[test]
fn an_input_that_fails_on_one_worker_fails_the_run() {
    use punctual::adapters::MemoryInput;
    use punctual::core::{EventShape, StreamItem, Time};
    use punctual::runtime::{InputOptions, Query};
    let out = CollectOutput::new();
    let sink = out.clone();
    let result = run_query(ClusterConfig::threads(2), move |_| {
        let mut query = Query::new("breaks");
        let items: Vec<StreamItem<i64>> = (0..5)
            .map(|i| StreamItem::point(Time::from_ticks(i), i))
            .collect();
        // Both issue a CTI after each event and a final one when they end well.
        let settings = punctual::policies::AdvanceTimeSettings::increasing_start_time;
        let good = query.create_stream(
            InputOptions::new("good", EventShape::Point).settings(settings()),
            &MemoryInput,
            &items,
        )?;
        let bad = query.create_stream(
            InputOptions::new("bad", EventShape::Point).settings(settings()),
            &Breaks,
            &(),
        )?;
        query.bind_output(good.union(&[&bad]), &sink, &())?;
        Ok(query)
    });
    match result {
        Err(punctual::cluster::Error::Query { worker, message }) => {
            assert_eq!(worker, 1, "the second input is on the second worker");
            assert!(message.contains("the source broke"), "{message}");
        }
        other => panic!("expected the run to fail, got {other:?}"),
    }
    // What the CTIs released went through (the union's CTI is the broken input's last, 2:
    // the points at 0 and 1 of each input); no final CTI: the output does not look complete.
    let events = out
        .items()
        .iter()
        .filter(|i| matches!(i, StreamItem::Insert(_)))
        .count();
    assert_eq!(events, 4, "{:?}", out.items());
    assert!(
        !out.items().contains(&StreamItem::Cti(Time::INF)),
        "{:?}",
        out.items()
    );
}

/// Advance-time settings: a CTI every `events` events, `delay` ticks behind the highest start
/// time, late events dropped, a final CTI.
fn dropping_every(
    events: u64,
    delay: i64,
) -> Result<punctual::policies::AdvanceTimeSettings, punctual::runtime::QueryError> {
    use punctual::policies::{
        AdvanceTimeGenerationSettings, AdvanceTimePolicy, AdvanceTimeSettings,
    };
    let bind = |e: punctual::policies::Error| punctual::runtime::QueryError::Bind(e.to_string());
    let generation = AdvanceTimeGenerationSettings::every_events(events)
        .delay(punctual::core::TimeSpan::from_ticks(delay))
        .final_cti(true)
        .build()
        .map_err(bind)?;
    AdvanceTimeSettings::builder()
        .generation(generation)
        .policy(AdvanceTimePolicy::Drop)
        .build()
        .map_err(bind)
}

/// Keys counted over tumbling windows of `size` ticks, each result as text.
fn counts_per_key<O: punctual::core::Order>(
    keys: &punctual::core::ops::Stream<u32, O>,
    size: i64,
) -> punctual::core::ops::Stream<String> {
    use punctual::core::ops::{Count, WindowOutput};
    keys.tumbling_window(punctual::core::TimeSpan::from_ticks(size))
        .output(WindowOutput::Window)
        .group_by(|k: &u32| *k)
        .aggregate(Count)
        .map(|r| format!("{r:?}"))
}

/// A source of partitions: each partition's `(time, key)` points in arrival order, with CTIs
/// generated per partition (every 3 events, 5 behind, Drop), read as one stream and counted
/// per key over tumbling windows of 10.
fn partitioned_query(
    partitions: &[Vec<(i64, u32)>],
    out: &CollectOutput<String>,
) -> Result<punctual::runtime::Query, punctual::runtime::QueryError> {
    use punctual::adapters::MemoryInput;
    use punctual::core::{EventShape, StreamItem, Time};
    use punctual::runtime::{InputOptions, Query};
    let settings = dropping_every(3, 5)?;
    let items: Vec<Vec<StreamItem<u32>>> = partitions
        .iter()
        .map(|p| {
            p.iter()
                .map(|&(t, k)| StreamItem::point(Time::from_ticks(t), k))
                .collect()
        })
        .collect();

    let mut query = Query::new("partitions");
    let options = InputOptions::new("readings", EventShape::Point).settings(settings);
    let readings = query.create_stream(
        options,
        &punctual::runtime::Partitioned(MemoryInput),
        &items,
    )?;
    query.bind_output(counts_per_key(&readings, 10), out, &())?;
    Ok(query)
}

/// Events as text, sorted; the last CTI; the events the partitions dropped.
fn partitioned_outcome(out: &CollectOutput<String>, dropped: u64) -> (Vec<String>, i64, u64) {
    let items: Vec<String> = out.items().into_iter().map(text).collect();
    let (events, ctis) = released(&items).unwrap_or_default();
    let mut events: Vec<String> = events.into_iter().map(|e| e.0).collect();
    events.sort();
    (events, ctis.last().copied().unwrap_or(i64::MIN), dropped)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// A source of several partitions: each partition is an input of its own, its CTIs and
    /// drops its own; on 2 and 3 workers, the partitions go round-robin over the workers
    /// (each worker reads its own), and the counts, the final CTI and the drops are the
    /// runtime's.
    #[test]
    fn a_partitioned_source_gives_on_the_cluster_what_it_gives_on_the_runtime(
        events in proptest::collection::vec((0i64..120, 0u32..4), 1..60),
        n in 1usize..5,
    ) {
        let mut partitions = vec![Vec::new(); n];
        for (i, e) in events.iter().enumerate() {
            partitions[i % n].push(*e);
        }
        let out = CollectOutput::new();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let report = runtime
            .block_on(async {
                let query = partitioned_query(&partitions, &out).map_err(|e| e.to_string())?;
                let running = query.start().map_err(|e| e.to_string())?;
                running.wait().await.map_err(|e| e.to_string())
            })
            .map_err(TestCaseError::fail)?;
        let names: Vec<String> = report.streams.iter().map(|(n, _)| n.clone()).collect();
        let want_names: Vec<String> = match n {
            1 => vec!["readings".to_owned()],
            _ => (0..n).map(|p| format!("readings#{p}")).collect(),
        };
        prop_assert_eq!(names, want_names);
        let dropped = report.streams.iter().map(|(_, c)| c.dropped).sum();
        let want = partitioned_outcome(&out, dropped);
        prop_assert_eq!(want.1, i64::MAX, "the runtime's output ends");
        for workers in [2, 3] {
            let got = CollectOutput::new();
            let sink = got.clone();
            let parts = partitions.clone();
            let report = run_query(ClusterConfig::threads(workers), move |_| {
                partitioned_query(&parts, &sink)
            })
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
            let owners: Vec<usize> = (0..n).map(|p| p % workers).collect();
            prop_assert_eq!(&report.owners, &owners, "round robin");
            // Each worker read its own partitions only.
            for (w, r) in report.workers.iter().enumerate() {
                let read: u64 = r.streams.iter().map(|(_, c)| c.events_in).sum();
                let own: usize = (0..n).filter(|p| p % workers == w).map(|p| partitions[p].len()).sum();
                prop_assert_eq!(read, own as u64, "worker {}", w);
            }
            let dropped = report.report().streams.iter().map(|(_, c)| c.dropped).sum();
            let got = partitioned_outcome(&got, dropped);
            prop_assert_eq!(&got, &want, "{} workers", workers);
        }
    }
}

/// A clock that moves 100 ms of application time at every reading.
#[derive(Clone)]
struct SteppingClock(std::sync::Arc<std::sync::atomic::AtomicI64>);

impl punctual::runtime::Clock for SteppingClock {
    fn now(&self) -> punctual::core::Time {
        let step = punctual::core::TimeSpan::from_millis(100).ticks();
        punctual::core::Time::from_ticks(
            self.0.fetch_add(step, std::sync::atomic::Ordering::SeqCst),
        )
    }
}

/// A live source of two partitions: partition 0 enqueues points at 1 s to 5 s, partition 1
/// nothing; both stay open until `done` is set (or the query stops).
struct Live {
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
    partition: usize,
}

#[async_trait::async_trait]
impl punctual::runtime::InputAdapter<u32> for Live {
    async fn run(
        &mut self,
        ctx: &mut punctual::runtime::InputContext<u32>,
    ) -> Result<(), punctual::runtime::AdapterError> {
        use punctual::core::{Time, TimeSpan};
        if self.partition == 0 {
            for s in 1..=5 {
                ctx.enqueue_point(Time::EPOCH + TimeSpan::from_secs(s), s as u32)
                    .await?;
            }
        }
        while !self.done.load(std::sync::atomic::Ordering::SeqCst) && !ctx.is_stopping() {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        Ok(())
    }
}

impl punctual::runtime::InputAdapterFactory<(), u32> for Live {
    type Adapter = Live;
    fn create(
        &self,
        _: &(),
        _: punctual::core::EventShape,
    ) -> Result<Live, punctual::runtime::AdapterError> {
        self.create_partition(&(), punctual::core::EventShape::Point, 0)
    }
    fn partitions(&self, _: &()) -> usize {
        2
    }
    fn create_partition(
        &self,
        _: &(),
        _: punctual::core::EventShape,
        partition: usize,
    ) -> Result<Live, punctual::runtime::AdapterError> {
        Ok(Live {
            done: std::sync::Arc::clone(&self.done),
            partition,
        })
    }
}

/// Runs the live source on two workers (a partition each) with a bounded watermark (1 s) and
/// an idle timeout of `idle` seconds, the stepping clock read every millisecond; ends the
/// sources once the output holds the five events, or after 20 s of waiting for them. Returns
/// whether they came before the end, and the output before the end.
fn quiet_partition_run(idle: i64) -> (bool, Vec<punctual::core::StreamItem<u32>>) {
    use punctual::core::{EventShape, StreamItem, Time, TimeSpan};
    use punctual::policies::Watermark;
    use punctual::runtime::{InputOptions, Query};
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let source = Live {
        done: std::sync::Arc::clone(&done),
        partition: 0,
    };
    let out = CollectOutput::new();
    let sink = out.clone();
    let start = (Time::EPOCH + TimeSpan::from_secs(10)).ticks();
    let run = std::thread::spawn(move || {
        run_query(ClusterConfig::threads(2), move |_| {
            let strategy = Watermark::<u32>::bounded(TimeSpan::from_secs(1))
                .idle_timeout(TimeSpan::from_secs(idle));
            let clock = SteppingClock(std::sync::Arc::new(std::sync::atomic::AtomicI64::new(
                start,
            )));
            let mut query = Query::new("quiet")
                .clock(clock)
                .clock_interval(std::time::Duration::from_millis(1));
            let options = InputOptions::new("readings", EventShape::Point).watermark(strategy);
            let readings = query.create_stream(options, &source, &())?;
            query.bind_output(&readings, &sink, &())?;
            Ok(query)
        })
    });
    // Wait for the five points before the end of the input (a guard against a hang, not a
    // measurement: the clock moves at every reading, however fast the machine is).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let count = |items: &[StreamItem<u32>]| {
        items
            .iter()
            .filter(|i| matches!(i, StreamItem::Insert(_)))
            .count()
    };
    let mut in_time = false;
    while std::time::Instant::now() < deadline {
        if count(&out.items()) == 5 {
            in_time = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let before_end = out.items();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let ran = run.join().expect("the run does not panic");
    assert!(ran.is_ok(), "{ran:?}");
    (in_time, before_end)
}

/// One partition of a source stays quiet while the other has events: with an idle timeout,
/// the quiet one advances by the injected clock (`CTI(now - timeout)`), so the union of the
/// two (read on two workers) releases the events before the input ends.
#[test]
fn a_quiet_partition_advances_by_the_clock_and_does_not_hold_the_cluster_back() {
    use punctual::core::{StreamItem, Time, TimeSpan};
    let (in_time, items) = quiet_partition_run(2);
    assert!(
        in_time,
        "the events were not released while the input was open: {items:?}"
    );
    let events: Vec<u32> = items
        .iter()
        .filter_map(|i| match i {
            StreamItem::Insert(e) => Some(e.payload),
            StreamItem::Cti(_) => None,
        })
        .collect();
    assert_eq!(events, [1, 2, 3, 4, 5]);
    // Released by a CTI past them, from the clock, not the final one.
    let past = Time::EPOCH + TimeSpan::from_secs(5);
    assert!(
        items
            .iter()
            .any(|i| matches!(i, StreamItem::Cti(t) if *t > past && *t < Time::INF)),
        "{items:?}"
    );
}

/// Records `(time, key)` replayed in blocks of 7 as `partitions` partitions, CTIs every 10
/// events 20 behind (Drop), counted per key over tumbling windows of 50: events as text,
/// sorted, and the last CTI.
fn replayed_counts(
    records: &[(i64, u32)],
    partitions: usize,
    cluster: Option<ClusterConfig>,
) -> (Vec<String>, i64) {
    use punctual::adapters::RecordsInput;
    use punctual::core::{EventShape, Time};
    use punctual::runtime::{InputOptions, Query, QueryError};
    let records: std::sync::Arc<[(i64, u32)]> = records.into();
    let out = CollectOutput::new();
    let sink = out.clone();
    let build = move |_| -> Result<Query, QueryError> {
        let settings = dropping_every(10, 20)?;
        let replay = RecordsInput::new(
            std::sync::Arc::clone(&records),
            |r: &(i64, u32)| Time::from_ticks(r.0),
            |r: &(i64, u32)| r.1,
        )
        .block(7)
        .partitions(partitions);
        let mut query = Query::new("replayed");
        let options = InputOptions::new("readings", EventShape::Point).settings(settings);
        let readings = query.create_stream(options, &replay, &())?;
        query.bind_output(counts_per_key(&readings, 50), &sink, &())?;
        Ok(query)
    };
    match cluster {
        Some(config) => {
            run_query(config, build).expect("the query runs on the cluster");
        }
        None => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            runtime
                .block_on(async { build(0)?.start()?.wait().await.map_err(QueryError::from) })
                .expect("the query runs");
        }
    }
    let items: Vec<String> = out.items().into_iter().map(text).collect();
    let (events, ctis) = released(&items).expect("a valid stream");
    let mut events: Vec<String> = events.into_iter().map(|e| e.0).collect();
    events.sort();
    (events, ctis.last().copied().unwrap_or(i64::MIN))
}

/// Inputs that must wait for their worker's operators after nearly every call (a backlog of
/// 3 events, blocks of 7) still give the runtime's output, on two and three workers: the
/// wait lets the operators catch up, never blocks them.
#[test]
fn inputs_that_wait_for_the_operators_give_the_same_output() {
    let records: Vec<(i64, u32)> = (0..3000i64)
        .map(|i| (i * 3 - (i * 7919 % 13), (i * 31 % 5) as u32))
        .collect();
    let want = replayed_counts(&records, 3, None);
    assert_eq!(want.1, i64::MAX, "the runtime's output ends");
    assert!(want.0.len() > 100, "{} windows", want.0.len());
    for workers in [2, 3] {
        let mut config = ClusterConfig::threads(workers);
        config.backlog = 3;
        assert_eq!(
            replayed_counts(&records, 3, Some(config)),
            want,
            "{workers} workers, a backlog of 3"
        );
        assert_eq!(
            replayed_counts(&records, 3, Some(ClusterConfig::threads(workers))),
            want,
            "{workers} workers, the default backlog"
        );
    }
}
