//! Unordered inputs (`InputOptions::unordered`): windowed aggregates over events released on
//! arrival give the ordered path's results, segment by segment; filter, map and `ordered()`
//! give exactly the ordered path's stream; the join of an unordered stream gives the ordered
//! join's segments. Random inputs in random arrival order, with generated CTIs and either
//! policy, all through the query driver.

use proptest::prelude::*;

mod lateness;

use punctual::core::ops::{Count, Payload, Stream, Sum, WindowOutput};
use punctual::core::{Batch, EventShape, Order, StreamItem, Time, TimeSpan};
use punctual::engine::{InputOptions, Plan};
use punctual::policies::{AdvanceTimeGenerationSettings, AdvanceTimePolicy, AdvanceTimeSettings};

/// (start, length: 0 for a point, key, value)
type In = (i64, i64, u8, i64);

/// A window result: the group key, the count and the sum.
type Res = (u8, (u64, f64));

/// (result sync, other, payload) of one output segment, sorted, and the CTI closing it.
type Segment = (Vec<(Time, Time, Res)>, Option<Time>);

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

/// An ordered input named `name`: CTIs every `every` events, `delay` behind, a final CTI.
fn input(name: &str, every: u64, delay: i64, policy: AdvanceTimePolicy) -> InputOptions {
    let generation = AdvanceTimeGenerationSettings::every_events(every)
        .delay(TimeSpan::from_ticks(delay))
        .final_cti(true)
        .build()
        .expect("valid settings");
    let settings = AdvanceTimeSettings::builder()
        .generation(generation)
        .policy(policy)
        .build()
        .expect("valid settings");
    InputOptions::new(name, EventShape::Interval).settings(settings)
}

fn item((s, len, key, v): In) -> StreamItem<(u8, i64)> {
    if len == 0 {
        StreamItem::point(Time::from_ticks(s), (key, v))
    } else {
        StreamItem::interval(Time::from_ticks(s), Time::from_ticks(s + len), (key, v))
    }
}

/// Runs `events` one by one through an input with these options and the query `query` builds
/// on it, then the end of the input; returns everything the query produced and how many
/// events the input dropped.
fn run_query<I: Order, R: Payload, RO: Order>(
    events: &[In],
    options: InputOptions<I>,
    query: impl FnOnce(&Stream<(u8, i64), I>) -> Stream<R, RO>,
) -> (Batch<R>, u64) {
    let mut plan = Plan::new("test");
    let (input, stream) = plan.input(options).expect("a valid input");
    let results = plan.output(query(&stream)).expect("a stream of the plan");
    let mut driver = plan.build().expect("a valid plan");
    let mut all = Batch::new();
    for &e in events {
        let _ = driver.enqueue(input, item(e));
        driver.take_output(&results, &mut all);
    }
    driver.finish(input.index());
    driver.take_output(&results, &mut all);
    (
        all,
        driver.counters(input.index()).unwrap_or_default().dropped,
    )
}

/// `filter` and `map` on a stream: what the query keeps and computes.
fn select<O: Order>(s: &Stream<(u8, i64), O>) -> Stream<i64, O> {
    s.filter(|p: &(u8, i64)| p.0 != 1)
        .map(|p: &(u8, i64)| p.1 * 10 + i64::from(p.0))
}

fn items(b: &Batch<i64>) -> Vec<StreamItem<i64>> {
    b.items().map(|i| i.map(|p| *p)).collect()
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
/// output) with `right`, through the driver, the arrivals interleaved by `schedule` (true: the
/// next left item).
fn run_join<O: Order>(
    (left, right, schedule): (&[In], &[In], &[bool]),
    left_options: InputOptions<O>,
    (every, delay): (u64, i64),
    keyed: bool,
) -> Batch<(i64, i64)> {
    let mut plan = Plan::new("join");
    let (li, fast) = plan.input::<(u8, i64), O>(left_options).expect("an input");
    let right_options = input("right", every + 2, delay + 3, AdvanceTimePolicy::Adjust);
    let (ri, reference) = plan.input::<(u8, i64), _>(right_options).expect("an input");
    let combine = |l: &(u8, i64), r: &(u8, i64)| (l.1, r.1);
    let joined = if keyed {
        fast.join_on(&reference, |l| l.0, |r| r.0, combine)
    } else {
        fast.join(&reference, combine)
    };
    let out = plan.output(&joined).expect("a stream of the plan");
    let mut driver = plan.build().expect("a valid plan");
    let mut all = Batch::new();
    let (mut l, mut r) = (left.iter(), right.iter());
    for &take_left in schedule {
        if take_left {
            if let Some(&e) = l.next() {
                let _ = driver.enqueue(li, item(e));
            }
        } else if let Some(&e) = r.next() {
            let _ = driver.enqueue(ri, item(e));
        }
        driver.take_output(&out, &mut all);
    }
    for &e in l {
        let _ = driver.enqueue(li, item(e));
    }
    for &e in r {
        let _ = driver.enqueue(ri, item(e));
    }
    driver.finish(li.index());
    driver.finish(ri.index());
    driver.take_output(&out, &mut all);
    all
}

/// Runs `events` (in arrival order) through an input and a grouped window over `size`/`hop`,
/// and returns the window's output and how many events the input dropped.
fn run_window<O: Order>(
    events: &[In],
    options: InputOptions<O>,
    (size, hop): (i64, i64),
    output: WindowOutput,
) -> (Batch<Res>, u64) {
    run_query(events, options, |s| {
        s.hopping_window(TimeSpan::from_ticks(size), TimeSpan::from_ticks(hop))
            .output(output)
            .group_by(|p: &(u8, i64)| p.0)
            .aggregate((Count, Sum::of(|p: &(u8, i64)| p.1 as f64)))
    })
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

/// The input `in`: a CTI every 1-19 events, -1 to 39 ticks behind, `Drop` or `Adjust`.
fn options() -> impl Strategy<Value = InputOptions> {
    (1u64..20, -1i64..40, proptest::bool::ANY).prop_map(|(every, delay, adjust)| {
        let policy = if adjust {
            AdvanceTimePolicy::Adjust
        } else {
            AdvanceTimePolicy::Drop
        };
        input("in", every, delay, policy)
    })
}

proptest! {
    #[test]
    fn windows_over_an_unordered_source_equal_the_ordered_ones(
        events in inputs(),
        options in options(),
        (size, hop) in (1i64..40, 1i64..40).prop_map(|(a, b)| (a.max(b), a.min(b))),
        as_window in proptest::bool::ANY,
    ) {
        let output = if as_window { WindowOutput::Window } else { WindowOutput::PointAtEnd };
        let (ordered, dropped_o) = run_window(&events, options.clone(), (size, hop), output);
        let (unordered, dropped_u) = run_window(&events, options.unordered(), (size, hop), output);
        prop_assert_eq!(dropped_o, dropped_u);
        prop_assert_eq!(segments(&ordered), segments(&unordered));
        prop_assert_eq!(ordered.last_cti(), Some(Time::INF));
    }

    #[test]
    fn filter_map_and_ordered_over_an_unordered_source_equal_the_ordered_stream(
        events in inputs(),
        options in options(),
    ) {
        let (ordered, _) = run_query(&events, options.clone(), select);
        let (unordered, _) = run_query(&events, options.unordered(), |s| select(s).ordered());
        prop_assert_eq!(ordered.last_cti(), Some(Time::INF));
        prop_assert_eq!(items(&ordered), items(&unordered));
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
        let arrivals = (&left[..], &right[..], &schedule[..]);
        let options = input("left", every, delay, AdvanceTimePolicy::Drop);
        let ordered = run_join(arrivals, options.clone(), (every, delay), keyed);
        let unordered = run_join(arrivals, options.unordered(), (every, delay), keyed);
        let times = |b: &Batch<(i64, i64)>| b.ctis().iter().map(|m| m.time).collect::<Vec<_>>();
        prop_assert_eq!(times(&ordered), times(&unordered));
        prop_assert_eq!(ordered.last_cti(), Some(Time::INF));
        prop_assert_eq!(normalize_unordered(&unordered), Ok(normalize_ordered(&ordered)));
    }

    #[test]
    fn an_unordered_output_holds_the_ordered_segments_in_arrival_order(
        events in inputs(),
        options in options(),
    ) {
        let (ordered, _) = run_query(&events, options.clone(), select);
        let (unordered, _) = run_query(&events, options.unordered(), select);
        let times = |b: &Batch<i64>| b.ctis().iter().map(|m| m.time).collect::<Vec<_>>();
        prop_assert_eq!(times(&ordered), times(&unordered));
        prop_assert_eq!(ordered.last_cti(), Some(Time::INF));
        prop_assert_eq!(normalize_unordered(&unordered), Ok(normalize_ordered(&ordered)));
    }
}
