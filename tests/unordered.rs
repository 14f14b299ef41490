//! Unordered sources (`QueryGraph::unordered_source`, `IngressConfig::on_arrival`): windowed
//! aggregates over events released on arrival give the ordered path's results, segment by
//! segment, and filter, map and `ordered()` give exactly the ordered path's stream, on random
//! inputs in random arrival order with generated CTIs and either policy.

use proptest::prelude::*;

use punctual::core::ops::{Count, QueryGraph, Stream, Sum, WindowOutput};
use punctual::core::{Batch, StreamItem, Time, TimeSpan};
use punctual::policies::{
    AdvanceTimeGenerationSettings, AdvanceTimePolicy, Ingress, IngressConfig, IngressOutput,
};

/// (start, length: 0 for a point, key, value)
type In = (i64, i64, u8, i64);

/// A window result: the group key, the count and the sum.
type Res = (u8, (u64, f64));

/// (result sync, other, payload) of one output segment, sorted, and the CTI closing it.
type Segment = (Vec<(Time, Time, Res)>, Option<Time>);

/// Feeds a batch into the query's source.
type Feed = Box<dyn Fn(&mut Batch<(u8, i64)>)>;

fn segments(out: &Batch<Res>) -> Vec<Segment> {
    out.segments()
        .map(|(range, cti)| {
            let mut events: Vec<_> = range
                .map(|i| (out.sync()[i], out.other()[i], out.payloads()[i]))
                .collect();
            events.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
            (events, cti)
        })
        .collect()
}

/// An ingress with CTIs every `every` events, `delay` behind, a final CTI.
fn ingress(
    every: u64,
    delay: i64,
    policy: AdvanceTimePolicy,
    on_arrival: bool,
) -> Ingress<(u8, i64)> {
    Ingress::new(IngressConfig {
        generation: Some(
            AdvanceTimeGenerationSettings::every_events(every)
                .delay(TimeSpan::from_ticks(delay))
                .final_cti(true)
                .build()
                .expect("valid settings"),
        ),
        policy: Some(policy),
        on_arrival,
        ..IngressConfig::default()
    })
}

fn item((s, len, key, v): In) -> StreamItem<(u8, i64)> {
    if len == 0 {
        StreamItem::point(Time::from_ticks(s), (key, v))
    } else {
        StreamItem::interval(Time::from_ticks(s), Time::from_ticks(s + len), (key, v))
    }
}

/// Enqueues `events` one by one (then finishes the input), feeding what the ingress releases
/// to the query; returns everything `results` produced.
fn drive<O: punctual::core::ops::Payload>(
    events: &[In],
    ingress: &mut Ingress<(u8, i64)>,
    graph: &QueryGraph,
    results: &Stream<O>,
    feed: Feed,
) -> Batch<O> {
    graph.keep_output(results);
    let mut out = IngressOutput::new();
    let mut all = Batch::new();
    for &e in events {
        let _ = ingress.enqueue(item(e), &mut out);
        feed(&mut out.batch);
        graph.take_output(results, &mut all);
    }
    ingress.finish(&mut out);
    feed(&mut out.batch);
    graph.take_output(results, &mut all);
    all
}

/// `filter` and `map` on a stream, ordered or unordered (then made ordinary by `ordered()`):
/// every item of the result, in order.
fn run_select(
    events: &[In],
    every: u64,
    delay: i64,
    policy: AdvanceTimePolicy,
    on_arrival: bool,
) -> Vec<StreamItem<i64>> {
    let mut ingress = ingress(every, delay, policy, on_arrival);
    let graph = QueryGraph::new();
    let keep = |p: &(u8, i64)| p.0 != 1;
    let project = |p: &(u8, i64)| p.1 * 10 + i64::from(p.0);
    let (results, feed): (Stream<i64>, Feed) = if on_arrival {
        let source = graph.unordered_source::<(u8, i64)>();
        let r = source.filter(keep).map(project).ordered();
        let g = graph.clone();
        (r, Box::new(move |b| g.feed_unordered(&source, b)))
    } else {
        let source = graph.source::<(u8, i64)>();
        let r = source.filter(keep).map(project);
        let g = graph.clone();
        (r, Box::new(move |b| g.feed(&source, b)))
    };
    let all = drive(events, &mut ingress, &graph, &results, feed);
    all.items().map(|i| i.map(|p| *p)).collect()
}

/// `filter` and `map` on an unordered source, kept unordered (`keep_unordered_output`): the
/// output as released.
fn run_select_unordered(
    events: &[In],
    every: u64,
    delay: i64,
    policy: AdvanceTimePolicy,
) -> Batch<i64> {
    let mut ingress = ingress(every, delay, policy, true);
    let graph = QueryGraph::new();
    let source = graph.unordered_source::<(u8, i64)>();
    let results = source
        .filter(|p: &(u8, i64)| p.0 != 1)
        .map(|p: &(u8, i64)| p.1 * 10 + i64::from(p.0));
    graph.keep_unordered_output(&results);
    let mut out = IngressOutput::new();
    let mut all = Batch::new();
    for &e in events {
        let _ = ingress.enqueue(item(e), &mut out);
        graph.feed_unordered(&source, &mut out.batch);
        graph.take_unordered_output(&results, &mut all);
    }
    ingress.finish(&mut out);
    graph.feed_unordered(&source, &mut out.batch);
    graph.take_unordered_output(&results, &mut all);
    all
}

/// (sync, other, payload) of events.
type Events<T = i64> = Vec<(Time, Time, T)>;

/// An unordered stream's events, each moved to the segment of the first CTI above it (and
/// checked to come after every earlier CTI), sorted within each segment; and the CTIs.
fn normalize_unordered<T: Ord + Clone>(out: &Batch<T>) -> Result<Vec<Events<T>>, String> {
    let ctis: Vec<Time> = out.ctis().iter().map(|m| m.time).collect();
    let mut segments = vec![Vec::new(); ctis.len() + 1];
    for (k, (range, _)) in out.segments().enumerate() {
        for i in range {
            let s = out.sync()[i];
            if k > 0 && s < ctis[k - 1] {
                return Err(format!("event at {s:?} after CTI {:?}", ctis[k - 1]));
            }
            let seg = ctis.partition_point(|&c| c <= s);
            segments[seg].push((s, out.other()[i], out.payloads()[i].clone()));
        }
    }
    for seg in &mut segments {
        seg.sort();
    }
    Ok(segments)
}

/// An ordered stream's segments, each sorted (ties of equal sync time in any order).
fn normalize_ordered<T: Ord + Clone>(out: &Batch<T>) -> Vec<Events<T>> {
    let mut segments: Vec<Events<T>> = out
        .segments()
        .map(|(range, _)| {
            range
                .map(|i| (out.sync()[i], out.other()[i], out.payloads()[i].clone()))
                .collect()
        })
        .collect();
    if out.segments().last().is_none_or(|(_, cti)| cti.is_some()) {
        segments.push(Vec::new());
    }
    for seg in &mut segments {
        seg.sort();
    }
    segments
}

/// The join (on the key, or a cross join) of `left` (ordered, or unordered with an unordered
/// output) with `right`, each through its ingress, the arrivals interleaved by `schedule`
/// (true: the next left item).
fn run_join(
    left: &[In],
    right: &[In],
    schedule: &[bool],
    (every, delay): (u64, i64),
    keyed: bool,
    on_arrival: bool,
) -> Batch<(i64, i64)> {
    let mut li = ingress(every, delay, AdvanceTimePolicy::Drop, on_arrival);
    let mut ri = ingress(every + 2, delay + 3, AdvanceTimePolicy::Adjust, false);
    let graph = QueryGraph::new();
    let reference = graph.source::<(u8, i64)>();
    let combine = |l: &(u8, i64), r: &(u8, i64)| (l.1, r.1);
    let (unordered, ordered) = if on_arrival {
        let fast = graph.unordered_source::<(u8, i64)>();
        let out = if keyed {
            fast.join_on(&reference, |l| l.0, |r| r.0, combine)
        } else {
            fast.join(&reference, combine)
        };
        graph.keep_unordered_output(&out);
        (Some((fast, out)), None)
    } else {
        let fast = graph.source::<(u8, i64)>();
        let out = if keyed {
            fast.join_on(&reference, |l| l.0, |r| r.0, combine)
        } else {
            fast.join(&reference, combine)
        };
        graph.keep_output(&out);
        (None, Some((fast, out)))
    };
    let mut all = Batch::new();
    let mut out = IngressOutput::new();
    let feed_left = |b: &mut Batch<(u8, i64)>, all: &mut Batch<(i64, i64)>| {
        if let Some((fast, o)) = &unordered {
            graph.feed_unordered(fast, b);
            graph.take_unordered_output(o, all);
        } else if let Some((fast, o)) = &ordered {
            graph.feed(fast, b);
            graph.take_output(o, all);
        }
    };
    let feed_right = |b: &mut Batch<(u8, i64)>, all: &mut Batch<(i64, i64)>| {
        graph.feed(&reference, b);
        if let Some((_, o)) = &unordered {
            graph.take_unordered_output(o, all);
        } else if let Some((_, o)) = &ordered {
            graph.take_output(o, all);
        }
    };
    let (mut l, mut r) = (left.iter(), right.iter());
    for &take_left in schedule {
        if take_left {
            if let Some(&e) = l.next() {
                let _ = li.enqueue(item(e), &mut out);
                feed_left(&mut out.batch, &mut all);
            }
        } else if let Some(&e) = r.next() {
            let _ = ri.enqueue(item(e), &mut out);
            feed_right(&mut out.batch, &mut all);
        }
    }
    for &e in l {
        let _ = li.enqueue(item(e), &mut out);
        feed_left(&mut out.batch, &mut all);
    }
    for &e in r {
        let _ = ri.enqueue(item(e), &mut out);
        feed_right(&mut out.batch, &mut all);
    }
    li.finish(&mut out);
    feed_left(&mut out.batch, &mut all);
    ri.finish(&mut out);
    feed_right(&mut out.batch, &mut all);
    all
}

/// Runs `events` (in arrival order) through an ingress and a grouped window over `size`/`hop`,
/// released in order or on arrival, and returns the window's output.
fn run(
    events: &[In],
    every: u64,
    delay: i64,
    policy: AdvanceTimePolicy,
    (size, hop): (i64, i64),
    output: WindowOutput,
    on_arrival: bool,
) -> (Batch<Res>, u64) {
    let mut ingress = ingress(every, delay, policy, on_arrival);
    let graph = QueryGraph::new();
    let window = |s: &Stream<(u8, i64)>| {
        s.hopping_window(TimeSpan::from_ticks(size), TimeSpan::from_ticks(hop))
    };
    let (results, feed): (Stream<Res>, Feed) = if on_arrival {
        let source = graph.unordered_source::<(u8, i64)>();
        let r = source
            .hopping_window(TimeSpan::from_ticks(size), TimeSpan::from_ticks(hop))
            .output(output)
            .group_by(|p: &(u8, i64)| p.0)
            .aggregate((Count, Sum::of(|p: &(u8, i64)| p.1 as f64)));
        let g = graph.clone();
        (r, Box::new(move |b| g.feed_unordered(&source, b)))
    } else {
        let source = graph.source::<(u8, i64)>();
        let r = window(&source)
            .output(output)
            .group_by(|p: &(u8, i64)| p.0)
            .aggregate((Count, Sum::of(|p: &(u8, i64)| p.1 as f64)));
        let g = graph.clone();
        (r, Box::new(move |b| g.feed(&source, b)))
    };
    let all = drive(events, &mut ingress, &graph, &results, feed);
    (all, ingress.counters().dropped)
}

/// Up to 150 points and intervals (starts 0..200, lengths up to 30, 4 keys), in arrival order.
fn inputs() -> impl Strategy<Value = Vec<In>> {
    proptest::collection::vec(
        (
            0i64..200,
            prop_oneof![Just(0i64), 1i64..30],
            0u8..4,
            -50i64..50,
        ),
        0..150,
    )
}

proptest! {
    #[test]
    fn windows_over_an_unordered_source_equal_the_ordered_ones(
        events in inputs(),
        every in 1u64..20,
        delay in -1i64..40,
        adjust in proptest::bool::ANY,
        (size, hop) in (1i64..40, 1i64..40).prop_map(|(a, b)| (a.max(b), a.min(b))),
        as_window in proptest::bool::ANY,
    ) {
        let policy = if adjust { AdvanceTimePolicy::Adjust } else { AdvanceTimePolicy::Drop };
        let output = if as_window { WindowOutput::Window } else { WindowOutput::PointAtEnd };
        let (ordered, dropped_o) = run(&events, every, delay, policy, (size, hop), output, false);
        let (unordered, dropped_u) = run(&events, every, delay, policy, (size, hop), output, true);
        prop_assert_eq!(dropped_o, dropped_u);
        prop_assert_eq!(segments(&ordered), segments(&unordered));
        prop_assert_eq!(ordered.last_cti(), Some(Time::INF));
    }

    #[test]
    fn filter_map_and_ordered_over_an_unordered_source_equal_the_ordered_stream(
        events in inputs(),
        every in 1u64..20,
        delay in -1i64..40,
        adjust in proptest::bool::ANY,
    ) {
        let policy = if adjust { AdvanceTimePolicy::Adjust } else { AdvanceTimePolicy::Drop };
        let ordered = run_select(&events, every, delay, policy, false);
        let unordered = run_select(&events, every, delay, policy, true);
        prop_assert_eq!(ordered.last(), Some(&StreamItem::Cti(Time::INF)));
        prop_assert_eq!(ordered, unordered);
    }

    #[test]
    fn an_unordered_join_gives_the_ordered_join_segments(
        left in proptest::collection::vec((0i64..200, prop_oneof![3 => Just(0i64), 1 => 1i64..30], 0u8..4, -50i64..50), 0..120),
        right in proptest::collection::vec((0i64..200, prop_oneof![Just(0i64), 1i64..60], 0u8..4, -50i64..50), 0..40),
        schedule in proptest::collection::vec(proptest::bool::ANY, 0..160),
        every in 1u64..20,
        delay in -1i64..40,
        keyed in proptest::bool::ANY,
    ) {
        let ordered = run_join(&left, &right, &schedule, (every, delay), keyed, false);
        let unordered = run_join(&left, &right, &schedule, (every, delay), keyed, true);
        let times = |b: &Batch<(i64, i64)>| b.ctis().iter().map(|m| m.time).collect::<Vec<_>>();
        prop_assert_eq!(times(&ordered), times(&unordered));
        prop_assert_eq!(ordered.last_cti(), Some(Time::INF));
        prop_assert_eq!(normalize_unordered(&unordered), Ok(normalize_ordered(&ordered)));
    }

    #[test]
    fn an_unordered_output_holds_the_ordered_segments_in_arrival_order(
        events in inputs(),
        every in 1u64..20,
        delay in -1i64..40,
        adjust in proptest::bool::ANY,
    ) {
        let policy = if adjust { AdvanceTimePolicy::Adjust } else { AdvanceTimePolicy::Drop };
        let mut ingress = ingress(every, delay, policy, false);
        let graph = QueryGraph::new();
        let source = graph.source::<(u8, i64)>();
        let results = source
            .filter(|p: &(u8, i64)| p.0 != 1)
            .map(|p: &(u8, i64)| p.1 * 10 + i64::from(p.0));
        let g = graph.clone();
        let ordered = drive(&events, &mut ingress, &graph, &results, Box::new(move |b| g.feed(&source, b)));
        let unordered = run_select_unordered(&events, every, delay, policy);
        let times = |b: &Batch<i64>| b.ctis().iter().map(|m| m.time).collect::<Vec<_>>();
        prop_assert_eq!(times(&ordered), times(&unordered));
        prop_assert_eq!(ordered.last_cti(), Some(Time::INF));
        prop_assert_eq!(normalize_unordered(&unordered), Ok(normalize_ordered(&ordered)));
    }
}
