//! The query driver: what a plan refuses, how CTIs cascade down the import graph, clock
//! readings, the end of a query, handles of another plan.

use punctual_core::ops::Stream;
use punctual_core::{Batch, EventShape, Ordered, StreamItem, Time, TimeSpan};
use punctual_engine::{DeadLetterCollector, Error, InputId, InputOptions, Plan};
use punctual_policies::{
    AdvanceTimeGenerationSettings, AdvanceTimeImportSettings, AdvanceTimePolicy,
    AdvanceTimeSettings, DeadLetterReason, Watermark,
};

fn t(x: i64) -> Time {
    Time::from_ticks(x)
}

/// Settings that import the CTIs of `source` (Drop).
fn importing(source: &str) -> AdvanceTimeSettings {
    AdvanceTimeSettings::builder()
        .import(AdvanceTimeImportSettings::new(source))
        .build()
        .expect("valid settings")
}

fn input(
    plan: &mut Plan,
    name: &str,
    settings: AdvanceTimeSettings,
) -> (InputId<i64>, Stream<i64>) {
    plan.input::<i64, Ordered>(InputOptions::new(name, EventShape::Point).settings(settings))
        .expect("a valid input")
}

fn bind_error(result: Result<punctual_engine::Driver, Error>) -> String {
    match result {
        Err(Error::Bind(why)) => why,
        Err(other) => panic!("not a binding error: {other}"),
        Ok(_) => panic!("the plan was accepted"),
    }
}

#[test]
fn a_plan_refuses_unknown_import_sources_cycles_and_duplicate_names() {
    let mut plan = Plan::new("q");
    input(&mut plan, "a", importing("nowhere"));
    let why = bind_error(plan.build());
    assert!(why.contains("`a` imports CTIs from `nowhere`"), "{why}");

    let mut plan = Plan::new("q");
    input(&mut plan, "a", importing("b"));
    input(&mut plan, "b", importing("c"));
    input(&mut plan, "c", importing("a"));
    let why = bind_error(plan.build());
    assert!(
        why.contains("import cycle: a imports b imports c imports a"),
        "{why}"
    );

    let mut plan = Plan::new("q");
    input(&mut plan, "a", AdvanceTimeSettings::none());
    let again = plan.input::<i64, Ordered>(InputOptions::new("a", EventShape::Point));
    assert!(matches!(again, Err(Error::Bind(ref why)) if why.contains("already has")));
    let edges = plan.input::<i64, _>(InputOptions::new("e", EventShape::Edge).unordered());
    assert!(matches!(edges, Err(Error::Bind(ref why)) if why.contains("edge shape")));
    let foreign =
        Plan::new("other").input::<i64, Ordered>(InputOptions::new("x", EventShape::Point));
    let (_, foreign) = foreign.expect("a valid input");
    assert!(matches!(plan.output(&foreign), Err(Error::Bind(_))));
    let wrong = InputOptions::new("w", EventShape::Point)
        .watermark(Watermark::<String>::bounded(TimeSpan::from_ticks(1)));
    assert!(matches!(
        plan.input::<i64, Ordered>(wrong),
        Err(Error::Bind(_))
    ));
}

/// `c` imports `b`, which imports `a`: a CTI of `a` reaches both at once, after `a`'s own
/// release, and releases what they hold.
#[test]
fn a_cti_cascades_down_the_import_graph_at_once() {
    let mut plan = Plan::new("q");
    let (a, sa) = input(
        &mut plan,
        "a",
        AdvanceTimeSettings::policy_only(AdvanceTimePolicy::Drop),
    );
    let (b, sb) = input(&mut plan, "b", importing("a"));
    let (c, sc) = input(&mut plan, "c", importing("b"));
    let all = sa.union(&[&sb, &sc]);
    let out = plan.output(&all).expect("a stream of the plan");
    let mut driver = plan.build().expect("a valid plan");
    for (input, item) in [
        (c, StreamItem::point(t(3), 30)),
        (b, StreamItem::point(t(2), 20)),
        (a, StreamItem::point(t(1), 10)),
    ] {
        driver.enqueue(input, item).expect("valid");
    }
    let mut batch = Batch::new();
    driver.take_output(&out, &mut batch);
    assert!(batch.is_empty(), "nothing is released before a CTI");
    driver.enqueue(a, StreamItem::Cti(t(5))).expect("valid");
    driver.take_output(&out, &mut batch);
    assert_eq!(batch.payloads(), &[10, 20, 30]);
    assert_eq!(batch.last_cti(), Some(t(5)));
    for i in [b, c] {
        let counters = driver.counters(i.index()).expect("an input");
        assert_eq!((counters.cti, counters.released), (t(5), 1));
    }
    // A stale import is counted; the end of `a` (no final CTI) releases nothing more.
    driver.enqueue(b, StreamItem::Cti(t(7))).expect("valid");
    driver.enqueue(a, StreamItem::Cti(t(6))).expect("valid");
    assert_eq!(driver.counters(b.index()).map(|c| c.stale_ctis), Some(1));
    assert!(!driver.finish(a.index()));
}

/// A reference input keeps its own end: the final CTI of the stream it imports from waits
/// until its own input ends, so reference data that comes after the fast stream has ended is
/// still taken (an ordinary importer drops it as late); the finite CTIs apply as they come.
#[test]
fn a_reference_input_keeps_its_own_end() {
    let run = |reference: bool| {
        let mut plan = Plan::new("q");
        let fast = AdvanceTimeSettings::builder()
            .generation(
                AdvanceTimeGenerationSettings::every_events(1)
                    .final_cti(true)
                    .build()
                    .expect("valid settings"),
            )
            .policy(AdvanceTimePolicy::Drop)
            .build()
            .expect("valid settings");
        let (a, sa) = input(&mut plan, "fast", fast);
        let options = InputOptions::new("slow", EventShape::Point).settings(importing("fast"));
        let options = if reference {
            options.reference()
        } else {
            options
        };
        let (b, sb) = plan.input::<i64, Ordered>(options).expect("a valid input");
        let out = plan.output(sa.union(&[&sb])).expect("a stream of the plan");
        let mut driver = plan.build().expect("a valid plan");
        assert_eq!(driver.is_reference(b.index()), reference);
        driver
            .enqueue(a, StreamItem::point(t(4), 1))
            .expect("valid");
        driver
            .enqueue(a, StreamItem::point(t(6), 2))
            .expect("valid");
        driver.finish(a.index());
        let late = driver.enqueue(b, StreamItem::point(t(8), 80));
        driver.finish(b.index());
        let mut batch = Batch::new();
        driver.take_output(&out, &mut batch);
        (
            late.is_ok(),
            batch.payloads().to_vec(),
            driver.counters(b.index()),
        )
    };
    let (taken, payloads, counters) = run(true);
    assert!(taken);
    assert_eq!(payloads, vec![1, 2, 80]);
    assert_eq!(counters.map(|c| (c.cti, c.dropped)), Some((Time::INF, 0)));
    let (_, payloads, counters) = run(false);
    assert_eq!(
        payloads,
        vec![1, 2],
        "an ordinary importer has taken CTI(+inf)"
    );
    assert_eq!(counters.map(|c| c.dropped), Some(1));
}

/// Clock readings reach the inputs whose watermark strategy takes them, and only while they
/// have not finished; the end of the query counts what no CTI released.
#[test]
fn clock_readings_and_the_end_of_the_query() {
    let mut plan = Plan::new("q");
    let idle = Watermark::<i64>::bounded(TimeSpan::from_ticks(10))
        .idle_timeout(TimeSpan::from_ticks(100))
        .final_cti(false);
    let (w, sw) = plan
        .input::<i64, Ordered>(InputOptions::new("w", EventShape::Point).watermark(idle))
        .expect("a valid input");
    let (p, sp) = input(&mut plan, "p", AdvanceTimeSettings::none());
    let letters = DeadLetterCollector::new();
    plan.dead_letters(&sp, letters.clone()).expect("an input");
    let out = plan.output(&sw).expect("a stream of the plan");
    let mut driver = plan.build().expect("a valid plan");
    assert!(driver.has_watermark(w.index()) && !driver.has_watermark(p.index()));
    for (input, item) in [
        (w, StreamItem::point(t(990), 1)),
        (p, StreamItem::point(t(5), 2)),
    ] {
        driver.enqueue(input, item).expect("valid");
    }
    // The event gave CTI(980); a reading within the idle timeout changes nothing, one 500
    // ticks later gives CTI(1500 - 100).
    assert!(!driver.tick(t(1_000)));
    assert!(driver.tick(t(1_500)));
    assert_eq!(driver.counters(w.index()).map(|c| c.cti), Some(t(1_400)));
    // Recorded: the first reading after the event (it says when the event was seen), and the
    // one that issued the CTI.
    assert_eq!(driver.clock_record(w.index()).len(), 2);
    let mut batch = Batch::new();
    driver.take_output(&out, &mut batch);
    assert_eq!(batch.payloads(), &[1]);
    driver.finish(w.index());
    assert!(!driver.tick(t(5_000)), "a finished input takes no readings");
    driver.close();
    driver.close();
    let counters = driver.counters(p.index()).expect("an input");
    assert_eq!((counters.unreleased, counters.buffered), (1, 0));
    let letters = letters.letters();
    assert_eq!(letters.len(), 1);
    assert_eq!(letters[0].reason, DeadLetterReason::Unreleased);
}

#[test]
#[should_panic(expected = "an InputId of another plan")]
fn a_handle_of_another_plan_is_refused() {
    let mut other = Plan::new("other");
    let (foreign, _) = input(&mut other, "x", AdvanceTimeSettings::none());
    let mut plan = Plan::new("q");
    input(&mut plan, "x", AdvanceTimeSettings::none());
    let mut driver = plan.build().expect("a valid plan");
    let _ = driver.enqueue(foreign, StreamItem::point(t(1), 1));
}

/// A stream's shape is enforced: a point stream takes points only, an interval stream points
/// and intervals, an edge stream every kind; what a shape does not take is rejected with the
/// reason, counted and dead-lettered.
#[test]
fn a_stream_takes_the_events_of_its_shape() {
    let items = || {
        vec![
            StreamItem::point(t(1), 1),
            StreamItem::interval(t(2), t(5), 2),
            StreamItem::start_edge(t(3), 3),
            StreamItem::end_edge(t(3), t(6), 3),
        ]
    };
    for (shape, accepted) in [
        (EventShape::Point, 1),
        (EventShape::Interval, 2),
        (EventShape::Edge, 3),
    ] {
        let mut plan = Plan::new("q");
        let (i, s) = plan
            .input::<i64, Ordered>(InputOptions::new("in", shape))
            .expect("a valid input");
        let letters = DeadLetterCollector::new();
        plan.dead_letters(&s, letters.clone()).expect("an input");
        let mut driver = plan.build().expect("a valid plan");
        let mut errors = Vec::new();
        for item in items() {
            if let Err(e) = driver.enqueue(i, item) {
                errors.push(e);
            }
        }
        let counters = driver.counters(i.index()).expect("an input");
        // (The edge stream's end edge closes its start edge: one event, two items.)
        assert_eq!(
            counters.rejected as usize,
            4 - accepted - usize::from(shape == EventShape::Edge)
        );
        assert_eq!(errors.len(), counters.rejected as usize, "{shape:?}");
        for e in &errors {
            assert!(
                matches!(e, punctual_policies::Error::WrongShape { shape: s, .. } if *s == shape),
                "{e}"
            );
        }
        let reasons: Vec<String> = letters.reasons();
        assert_eq!(reasons.len(), errors.len());
        if shape == EventShape::Point {
            assert_eq!(
                reasons[0],
                "rejected: an interval on a stream of the Point shape, which takes points only"
            );
        }
    }
}

/// An end edge that comes after the stream's final CTI is late: dropped as late (its start
/// edge went out open-ended and dangles), not adjusted to +inf and left unreleased.
#[test]
fn an_end_edge_after_the_final_cti_is_dropped_as_late() {
    let mut plan = Plan::new("q");
    let (i, s) = plan
        .input::<i64, Ordered>(
            InputOptions::new("in", EventShape::Edge)
                .settings(AdvanceTimeSettings::policy_only(AdvanceTimePolicy::Adjust)),
        )
        .expect("a valid input");
    let letters = DeadLetterCollector::new();
    plan.dead_letters(&s, letters.clone()).expect("an input");
    let out = plan.output(&s).expect("a stream of the plan");
    let mut driver = plan.build().expect("a valid plan");
    for (input, item) in [
        (i, StreamItem::start_edge(t(3), 7)),
        (i, StreamItem::Cti(Time::INF)),
    ] {
        driver.enqueue(input, item).expect("valid");
    }
    let late = driver.enqueue(i, StreamItem::end_edge(t(3), t(9), 7));
    assert!(
        matches!(late, Ok(punctual_policies::Enqueued::Dropped)),
        "{late:?}"
    );
    driver.close();
    let c = driver.counters(i.index()).expect("an input");
    assert_eq!(
        (c.dropped, c.adjusted, c.unreleased, c.dangling_edges),
        (1, 0, 0, 1)
    );
    let letters = letters.letters();
    assert_eq!(letters.len(), 1);
    assert!(
        matches!(letters[0].reason, DeadLetterReason::Late),
        "{:?}",
        letters[0].reason
    );
    let mut batch = Batch::new();
    driver.take_output(&out, &mut batch);
    assert_eq!(batch.payloads(), &[7], "the start edge went out open-ended");
}

/// An operator's output has the shape its operator makes of its inputs': a filter keeps its
/// input's, a window's results are points (intervals with the window's lifetime), a join of
/// points with edges gives points, a union the widest of its inputs', a late-event side output
/// points.
#[test]
fn an_operators_output_has_the_shape_its_operator_makes() {
    let mut plan = Plan::new("q");
    let (_, points) = plan
        .input::<i64, Ordered>(InputOptions::new("points", EventShape::Point))
        .expect("a valid input");
    let (_, intervals) = plan
        .input::<i64, Ordered>(InputOptions::new("intervals", EventShape::Interval))
        .expect("a valid input");
    let (_, edges) = plan
        .input::<i64, Ordered>(InputOptions::new("edges", EventShape::Edge))
        .expect("a valid input");
    let window = || intervals.tumbling_window(TimeSpan::from_ticks(10));
    let shapes = [
        (
            plan.shape_of(&intervals.filter(|v| *v > 0)),
            EventShape::Interval,
        ),
        (
            plan.shape_of(&window().aggregate(punctual_core::ops::Count)),
            EventShape::Point,
        ),
        (
            plan.shape_of(
                &window()
                    .output(punctual_core::ops::WindowOutput::Window)
                    .aggregate(punctual_core::ops::Count),
            ),
            EventShape::Interval,
        ),
        (
            plan.shape_of(&points.join_on(&edges, |p| *p, |e| *e, |p, _| *p)),
            EventShape::Point,
        ),
        (
            plan.shape_of(&intervals.join_on(&edges, |p| *p, |e| *e, |p, _| *p)),
            EventShape::Edge,
        ),
        (
            plan.shape_of(&points.union(&[&intervals])),
            EventShape::Interval,
        ),
        (plan.shape_of(&points.union(&[&edges])), EventShape::Edge),
    ];
    for (i, (got, want)) in shapes.into_iter().enumerate() {
        assert_eq!(got, want, "case {i}");
    }
    let late = plan.late_events(&edges).expect("an input");
    assert_eq!(plan.shape_of(&late), EventShape::Point);
}

/// An edge key matches end edges by key: the same results as without, and a key for another
/// payload type is refused when the input is declared.
#[test]
fn an_edge_key_is_for_the_streams_payload_type() {
    let mut plan = Plan::new("q");
    let refused = plan.input::<i64, Ordered>(
        InputOptions::new("a", EventShape::Edge).edge_key(|p: &String| p.len() as u64),
    );
    assert!(
        matches!(&refused, Err(punctual_engine::Error::Bind(why)) if why.contains("edge key of `a`")),
        "{refused:?}"
    );
    let mut plan = Plan::new("q");
    let (a, s) = plan
        .input::<i64, Ordered>(
            InputOptions::new("a", EventShape::Edge)
                .settings(AdvanceTimeSettings::increasing_start_time())
                .edge_key(|p: &i64| *p as u64),
        )
        .expect("binds");
    let _ = s;
    let mut driver = plan.build().expect("builds");
    for p in 0..100 {
        driver
            .enqueue(a, StreamItem::start_edge(t(1), p))
            .expect("taken");
    }
    for p in (0..100).rev() {
        driver
            .enqueue(a, StreamItem::end_edge(t(1), t(5), p))
            .expect("matched through the key");
    }
    assert_eq!(driver.counters(0).map(|c| c.rejected), Some(0));
}

/// A partitioned source: an input per partition, each with its own CTIs and its own drops
/// (Drop against its own CTI); a stream importing the source's name follows its first
/// partition; the source's late events and dead letters are every partition's; its name is
/// taken.
#[test]
fn a_partitioned_source_is_an_input_per_partition() {
    let mut plan = Plan::new("q");
    let options = InputOptions::new("fast", EventShape::Point)
        .settings(AdvanceTimeSettings::increasing_start_time());
    let (parts, fast) = plan
        .partitioned_input::<i64, Ordered>(options, 3)
        .expect("a valid source");
    assert_eq!(parts.len(), 3);
    let again = plan.input::<i64, Ordered>(InputOptions::new("fast", EventShape::Point));
    assert!(
        matches!(&again, Err(Error::Bind(why)) if why.contains("already has a stream named `fast`")),
        "{again:?}"
    );
    let (slow, _) = input(&mut plan, "slow", importing("fast"));
    let letters = DeadLetterCollector::new();
    plan.dead_letters(&fast, letters.clone()).expect("a source");
    let late = plan.late_events(&fast).expect("a source");
    let (late_out, out) = (
        plan.output(&late).expect("a stream"),
        plan.output(&fast).expect("a stream"),
    );
    let mut driver = plan.build().expect("a valid plan");
    let names: Vec<&str> = (0..4).filter_map(|i| driver.input_name(i)).collect();
    assert_eq!(names, ["fast#0", "fast#1", "fast#2", "slow"]);
    assert_eq!(driver.importers(parts[0].index()), &[slow.index()]);
    // Partition 0 moves to 10, partition 1 to 4: a point at 6 is late in partition 0 only,
    // one at 3 in partition 1.
    for (p, at) in [(0, 10), (1, 4), (2, 20), (0, 6), (1, 6), (1, 3)] {
        let _ = driver.enqueue(parts[p], StreamItem::point(t(at), at));
    }
    assert_eq!(driver.counters(slow.index()).map(|c| c.cti), Some(t(10)));
    let dropped: Vec<u64> = (0..3)
        .filter_map(|p| driver.counters(p).map(|c| c.dropped))
        .collect();
    assert_eq!(dropped, [1, 1, 0], "each partition against its own CTI");
    assert_eq!(letters.letters().len(), 2, "one sink for every partition");
    for p in &parts {
        driver.finish(p.index());
    }
    let mut late_events = Batch::new();
    driver.take_output(&late_out, &mut late_events);
    assert_eq!(late_events.len(), 2, "late events of every partition");
    let mut events = Batch::new();
    driver.take_output(&out, &mut events);
    assert_eq!(
        events.payloads(),
        &[4, 6, 10, 20],
        "the union, in time order"
    );
}
