//! Allowed lateness (`Windowed::allowed_lateness`): Flink's example of a 5 s tumbling window
//! per key with 2 s of lateness, hand-checked (on-time results, revisions, the side output);
//! and a property: with lateness at least the input's, every window's final value is the
//! result of the same window with a delay that admits every event.

use std::collections::BTreeMap;

use proptest::prelude::*;

use punctual::core::ops::{Count, Sum};
use punctual::core::{Batch, EventKind, EventOrder, EventShape, StreamItem, Time, TimeSpan};
use punctual::engine::{InputOptions, Plan};
use punctual::policies::{AdvanceTimeGenerationSettings, AdvanceTimePolicy, AdvanceTimeSettings};

/// Seconds (with tenths) as a time.
fn s(x: f64) -> Time {
    Time::from_ticks((x * 1e7).round() as i64)
}

/// An input whose CTI is `delay` behind the highest start, one per event, dropping
/// violations; unordered (events released as they come).
fn input(delay: TimeSpan) -> InputOptions<punctual::core::Unordered> {
    let generation = AdvanceTimeGenerationSettings::every_events(1)
        .delay(delay)
        .final_cti(true)
        .build()
        .expect("valid settings");
    let settings = AdvanceTimeSettings::builder()
        .generation(generation)
        .policy(AdvanceTimePolicy::Drop)
        .build()
        .expect("valid settings");
    InputOptions::new("readings", EventShape::Point)
        .unordered()
        .settings(settings)
}

/// What a run gives: the output, what the input dropped, the events the window took late
/// and on time.
struct Run<T> {
    out: Batch<T>,
    dropped: u64,
    late: u64,
    on_time: u64,
}

/// Counts per key of 5 s tumbling windows with `lateness`, over `events` (time, key) in that
/// order, through an input `delay` behind.
fn counts(events: &[(Time, char)], delay: TimeSpan, lateness: TimeSpan) -> Run<(char, u64)> {
    hopping_counts(events, (delay, lateness), TimeSpan::from_secs(5))
}

/// [`counts`] over hopping windows of 5 s every `hop`.
fn hopping_counts(
    events: &[(Time, char)],
    (delay, lateness): (TimeSpan, TimeSpan),
    hop: TimeSpan,
) -> Run<(char, u64)> {
    let mut plan = Plan::new("lateness");
    let (input, stream) = plan.input(input(delay)).expect("a valid input");
    let windows = stream
        .hopping_window(TimeSpan::from_secs(5), hop)
        .group_by(|k: &char| *k);
    let results = if lateness > TimeSpan::ZERO {
        plan.output(windows.allowed_lateness(lateness).aggregate(Count))
    } else {
        plan.output(windows.aggregate(Count))
    }
    .expect("a stream of the plan");
    let mut driver = plan.build().expect("a valid plan");
    let mut out = Batch::new();
    for &(t, key) in events {
        let _ = driver.enqueue(input, StreamItem::point(t, key));
        driver.take_output(&results, &mut out);
    }
    driver.finish(input.index());
    driver.take_output(&results, &mut out);
    let mut late = 0;
    let mut on_time = 0;
    driver.for_each_operator(|n| {
        late += n.lateness.late;
        on_time += n.lateness.on_time;
    });
    let dropped = driver.counters(input.index()).unwrap_or_default().dropped;
    Run {
        out,
        dropped,
        late,
        on_time,
    }
}

#[test]
fn a_tumbling_window_per_key_gives_on_time_results_then_revisions_then_final_ones() {
    // Watermark = highest time seen (no out-of-orderness); lateness 2 s, so the CTI trails
    // the watermark by 2 s.
    let events = [
        (s(1.0), 'a'),
        (s(2.0), 'b'),
        (s(4.0), 'a'),
        (s(6.0), 'a'),  // watermark 6: [0,5) given on time, CTI 4
        (s(4.5), 'a'),  // late by 1.5 s: taken, revises [0,5)
        (s(7.0), 'b'),  // CTI 5: [0,5) revised (under watermark 6), final at 5 + 2
        (s(4.9), 'b'),  // behind CTI 5 (late by 2.1 s): the side output
        (s(11.0), 'a'), // watermark 11: [5,10) given on time, CTI 9
        (s(9.0), 'b'),  // late by 2 s, the CTI allows it: taken
        (s(12.0), 'b'), // CTI 10: [5,10) revised and final
        (s(9.5), 'a'),  // the watermark is at [5,10)'s end + 2 s: the side output
    ];
    let run = counts(&events, TimeSpan::from_secs(2), TimeSpan::from_secs(2));
    let start = |t: f64, k: char, n: u64| StreamItem::start_edge(s(t), (k, n));
    let end = |a: f64, b: f64, k: char, n: u64| StreamItem::end_edge(s(a), s(b), (k, n));
    let cti = |t: f64| StreamItem::cti(s(t));
    let items: Vec<StreamItem<(char, u64)>> = run.out.items().map(|i| i.map(|p| *p)).collect();
    let expected = vec![
        cti(-1.0),
        cti(0.0),
        cti(2.0),
        // On time: [0,5) when the watermark (6) passed its end.
        start(5.0, 'a', 2),
        start(5.0, 'b', 1),
        cti(4.0),
        // 4.5 came under watermark 6: a's count revised there; final at 5 + 2 = 7.
        end(5.0, 6.0, 'a', 2),
        start(6.0, 'a', 3),
        end(6.0, 7.0, 'a', 3),
        end(5.0, 7.0, 'b', 1),
        cti(5.0),
        start(10.0, 'a', 1),
        start(10.0, 'b', 1),
        cti(9.0),
        // Each group's chain in the order the groups came; 9 came under watermark 11.
        end(10.0, 12.0, 'a', 1),
        end(10.0, 11.0, 'b', 1),
        start(11.0, 'b', 2),
        end(11.0, 12.0, 'b', 2),
        cti(10.0),
        // The end of the input (CTI +inf): [10,15) was never given, final at once.
        start(15.0, 'a', 1),
        end(15.0, 17.0, 'a', 1),
        start(15.0, 'b', 1),
        end(15.0, 17.0, 'b', 1),
        StreamItem::cti(Time::INF),
    ];
    assert_eq!(items, expected);
    assert_eq!(run.dropped, 2, "4.9 and 9.5 went to the side output");
    assert_eq!(run.late, 2, "4.5 and 9 were taken late");
    assert_eq!(run.on_time, 7, "the other seven on time");
    run.out
        .check(EventOrder::Arrival)
        .expect("every item at or past the CTI before it");
}

#[test]
fn without_lateness_the_same_input_loses_the_late_events() {
    // The same readings with the CTI at the watermark: 4.5 and 9 are behind it.
    let events = [(s(1.0), 'a'), (s(4.0), 'a'), (s(6.0), 'a'), (s(4.5), 'a')];
    let run = counts(&events, TimeSpan::ZERO, TimeSpan::ZERO);
    assert_eq!(run.dropped, 1);
    assert_eq!(run.late, 0);
    let first = run.out.items().find_map(|i| match i {
        StreamItem::Insert(e) => Some(*e.payload),
        StreamItem::Cti(_) => None,
    });
    assert_eq!(first, Some(('a', 2)));
}

/// The final value of each chain, by (anchor, key): the value of the end edge at the window's
/// end plus `lateness` (a window's end being a whole second); checks that each end edge
/// closes an open value and that none is left open.
fn finals(
    out: &Batch<(char, u64)>,
    lateness: TimeSpan,
) -> Result<BTreeMap<(Time, char), u64>, String> {
    let mut open: BTreeMap<char, Vec<(Time, u64)>> = BTreeMap::new();
    let mut finals = BTreeMap::new();
    for i in 0..out.len() {
        let (key, n) = out.payloads()[i];
        match out.kind(i) {
            EventKind::StartEdge(t) => open.entry(key).or_default().push((t, n)),
            EventKind::EndEdge { start, end } => {
                let list = open.entry(key).or_default();
                let at = list
                    .iter()
                    .position(|&(t, v)| t == start && v == n)
                    .ok_or(format!(
                        "end edge {start:?}..{end:?} of {key} with no start"
                    ))?;
                list.remove(at);
                // A window's end is a multiple of 5 s; the final edge ends at it plus lateness.
                let window_end = end - lateness;
                if window_end.ticks() % TimeSpan::from_secs(1).ticks() == 0 && start < end {
                    let anchor = window_end;
                    if finals.insert((anchor, key), n).is_some() {
                        return Err(format!("two final values for {key} at {anchor:?}"));
                    }
                }
            }
            other => return Err(format!("not an edge: {other:?}")),
        }
    }
    if open.values().any(|l| !l.is_empty()) {
        return Err(format!("values never ended: {open:?}"));
    }
    Ok(finals)
}

/// Each window's result without lateness, by (window end, key).
fn results(out: &Batch<(char, u64)>) -> BTreeMap<(Time, char), u64> {
    (0..out.len())
        .map(|i| {
            let (key, n) = out.payloads()[i];
            ((out.sync()[i], key), n)
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Readings at odd tenths of a second, each arriving at most `lateness` (an even number of
    /// tenths) after the watermark (the highest time before it) passed it: with that
    /// lateness, no reading is lost, and every window's final value is its count with a delay
    /// that admits them all, for tumbling and hopping windows. (The CTIs are at odd tenths, so
    /// a revision's end, a CTI plus the lateness, is never a window's end, a whole second,
    /// plus the lateness.)
    #[test]
    fn the_final_value_of_each_window_is_the_result_with_every_event_admitted(
        steps in proptest::collection::vec((0i64..15, 0i64..12, 0u8..3), 1..60),
        half_lateness in 1i64..20,
    ) {
        let lateness_tenths = 2 * half_lateness;
        let lateness = TimeSpan::from_millis(lateness_tenths * 100);
        let mut high = 1i64;
        let mut events = Vec::new();
        for (ahead, behind, key) in steps {
            high += 2 * ahead;
            // At most `lateness` behind the highest time so far.
            let t = high - 2 * behind.min(half_lateness);
            events.push((Time::from_ticks(t * 1_000_000), char::from(b'a' + key)));
        }
        // Tumbling windows of 5 s, and hopping ones of 5 s every second.
        for hop in [5, 1].map(TimeSpan::from_secs) {
        let late = hopping_counts(&events, (lateness, lateness), hop);
        prop_assert_eq!(late.dropped, 0);
        late.out.check(EventOrder::Arrival).map_err(TestCaseError::fail)?;
        let finals = finals(&late.out, lateness).map_err(TestCaseError::fail)?;
        let all_in = hopping_counts(&events, (TimeSpan::from_secs(1_000), TimeSpan::ZERO), hop);
        prop_assert_eq!(finals, results(&all_in.out));
        }
    }
}

#[test]
fn sums_are_revised_too() {
    // Another aggregate, ungrouped, to show the chain is the aggregate's and not the count's.
    let mut plan = Plan::new("lateness");
    let options = input(TimeSpan::from_ticks(3));
    let (input, stream) = plan.input(options).expect("a valid input");
    let sums = stream
        .tumbling_window(TimeSpan::from_ticks(10))
        .allowed_lateness(TimeSpan::from_ticks(3))
        .aggregate(Sum::of(|v: &i64| *v as f64));
    let results = plan.output(sums).expect("a stream of the plan");
    let mut driver = plan.build().expect("a valid plan");
    for (t, v) in [(2, 5), (11, 1), (8, 10), (14, 1)] {
        driver
            .enqueue(input, StreamItem::point(Time::from_ticks(t), v))
            .expect("within the CTI");
    }
    let mut out = Batch::new();
    driver.take_output(&results, &mut out);
    let t = Time::from_ticks;
    let items: Vec<StreamItem<f64>> = out.items().map(|i| i.map(|p| *p)).collect();
    assert_eq!(
        items,
        vec![
            StreamItem::cti(t(-1)),
            // 11 makes the watermark 11, past [0,10)'s end: given on time.
            StreamItem::start_edge(t(10), 5.0),
            StreamItem::cti(t(8)),
            // 8 came under watermark 11 (CTI 8 + 3); 14 moves the CTI to 11, closing [0,10).
            StreamItem::end_edge(t(10), t(11), 5.0),
            StreamItem::start_edge(t(11), 15.0),
            StreamItem::end_edge(t(11), t(13), 15.0),
            StreamItem::cti(t(11)),
        ]
    );
}

#[test]
fn a_union_takes_the_chain_sorted() {
    // The chain through `ordered()` (a union needs sorted inputs) beside another stream: the
    // union holds every item of both, each chain item released once the CTI passes it.
    let mut plan = Plan::new("lateness");
    let (input, stream) = plan
        .input(input(TimeSpan::from_ticks(5)))
        .expect("a valid input");
    let (other_input, other) = plan
        .input::<(char, u64), punctual::core::Ordered>(
            InputOptions::new("other", EventShape::Point)
                .settings(AdvanceTimeSettings::increasing_start_time()),
        )
        .expect("a valid input");
    let chain = stream
        .tumbling_window(TimeSpan::from_ticks(10))
        .group_by(|k: &char| *k)
        .allowed_lateness(TimeSpan::from_ticks(5))
        .aggregate(Count);
    let both = chain.ordered().union(&[&other]);
    let results = plan.output(&both).expect("a stream of the plan");
    let mut driver = plan.build().expect("a valid plan");
    let t = Time::from_ticks;
    for (at, key) in [(3, 'a'), (12, 'a'), (7, 'a'), (16, 'a')] {
        driver
            .enqueue(input, StreamItem::point(t(at), key))
            .expect("within the CTI");
    }
    driver
        .enqueue(other_input, StreamItem::point(t(13), ('z', 9)))
        .expect("in order");
    driver.finish(input.index());
    driver.finish(other_input.index());
    let mut out = Batch::new();
    driver.take_output(&results, &mut out);
    out.check(EventOrder::Sorted)
        .expect("sorted, sealed by CTIs");
    let events: Vec<StreamItem<(char, u64)>> = out
        .items()
        .map(|i| i.map(|p| *p))
        .filter(|i| matches!(i, StreamItem::Insert(_)))
        .collect();
    assert_eq!(
        events,
        [
            StreamItem::start_edge(t(10), ('a', 1)),
            StreamItem::end_edge(t(10), t(12), ('a', 1)),
            StreamItem::start_edge(t(12), ('a', 2)),
            StreamItem::point(t(13), ('z', 9)),
            StreamItem::end_edge(t(12), t(15), ('a', 2)),
            // [10,20) holds 12 and 16: never given before the end.
            StreamItem::start_edge(t(20), ('a', 2)),
            StreamItem::end_edge(t(20), t(25), ('a', 2)),
        ]
    );
}

#[test]
fn what_a_window_with_lateness_holds_is_reported_item_by_item() {
    // No final CTI: the window still holds [0,5)'s given values and its members.
    let run_until = [(s(1.0), 'a'), (s(2.0), 'b'), (s(6.0), 'a')];
    let mut plan = Plan::new("lateness");
    let (input, stream) = plan
        .input(input(TimeSpan::from_secs(2)))
        .expect("a valid input");
    let counts = stream
        .tumbling_window(TimeSpan::from_secs(5))
        .group_by(|k: &char| *k)
        .allowed_lateness(TimeSpan::from_secs(2))
        .aggregate(Count);
    let results = plan.output(&counts).expect("a stream of the plan");
    let mut driver = plan.build().expect("a valid plan");
    for (t, key) in run_until {
        driver
            .enqueue(input, StreamItem::point(t, key))
            .expect("within the CTI");
    }
    let mut out = Batch::new();
    driver.take_output(&results, &mut out);
    let (mut state, mut results_held, mut items) = (0, 0, 0);
    driver.for_each_operator(|n| state += n.state);
    driver.for_each_held(|_, h| {
        items += 1;
        if h.what == punctual::core::ops::HeldWhat::Result {
            results_held += 1;
        }
    });
    assert_eq!(items, state, "every item counted is visited");
    assert_eq!(results_held, 2, "a's and b's values given for [0,5)");
}
