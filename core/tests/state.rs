//! Operator state in snapshots: a graph saved at any point between two batches and restored
//! into a graph built the same way continues exactly as the one saved would have (the same
//! events, in the same order, and the same CTIs), for windows per key (with and without
//! allowed lateness), joins with reference data, unions, filters, maps and reorders, over
//! ordered and unordered inputs; and what cannot be restored is refused with the reason.

use proptest::prelude::*;
use punctual_core::ops::{Avg, Count, QueryGraph, StateError, Stream};
use punctual_core::{Batch, Ordered, Time, TimeSpan, Unordered};

type Reading = (u32, i64);

fn t(x: i64) -> Time {
    Time::from_ticks(x)
}

/// The query: readings (unordered) and a second ordered stream of readings, united, joined
/// with per-device factors (reference edges), filtered, averaged per device in hopping
/// windows; beside it, counts per device in tumbling windows with allowed lateness.
struct Query {
    graph: QueryGraph,
    readings: Stream<Reading, Unordered>,
    more: Stream<Reading, Ordered>,
    factors: Stream<(u32, i64), Ordered>,
    averages: Stream<(u32, f64), Ordered>,
    late: Stream<(u32, u64), Ordered>,
}

fn build() -> Query {
    let graph = QueryGraph::new();
    let readings = graph.source::<Reading, Unordered>();
    let more = graph.source::<Reading, Ordered>();
    let factors = graph.source::<(u32, i64), Ordered>();
    let all = readings.ordered().union(&[&more]);
    let averages = all
        .join_on(&factors, |r| r.0, |f| f.0, |r, f| (r.0, r.1 * f.1))
        .filter(|r| r.1 % 7 != 3)
        .map(|r| (r.0, r.1 + 1))
        .hopping_window(TimeSpan::from_ticks(10), TimeSpan::from_ticks(4))
        .group_by(|r| r.0)
        .aggregate(Avg::of(|r: &Reading| r.1 as f64));
    let late = readings
        .tumbling_window(TimeSpan::from_ticks(5))
        .allowed_lateness(TimeSpan::from_ticks(3))
        .group_by(|r| r.0)
        .aggregate(Count)
        .ordered();
    graph.keep_output(&averages);
    graph.keep_output(&late);
    Query {
        graph,
        readings,
        more,
        factors,
        averages,
        late,
    }
}

/// One step fed to the query.
#[derive(Clone, Debug)]
enum Step {
    Readings(Vec<(i64, Reading)>, i64),
    More(Vec<(i64, Reading)>, i64),
    Factor(u32, i64, i64),
}

/// An output item: an event `(sync, other, Some(payload))` or a CTI `(t, t, None)`.
type Item<P> = (i64, i64, Option<P>);

/// What came out: each output's items, in order.
#[derive(Debug, Default, PartialEq)]
struct Seen {
    averages: Vec<Item<(u32, f64)>>,
    late: Vec<Item<(u32, u64)>>,
}

fn take<P: punctual_core::ops::Payload>(
    graph: &QueryGraph,
    s: &Stream<P, Ordered>,
    into: &mut Vec<Item<P>>,
) {
    let mut b = Batch::new();
    graph.take_output(s, &mut b);
    for (range, cti) in b.segments() {
        for i in range {
            into.push((
                b.sync()[i].ticks(),
                b.other()[i].ticks(),
                Some(b.payloads()[i].clone()),
            ));
        }
        if let Some(c) = cti {
            into.push((c.ticks(), c.ticks(), None));
        }
    }
}

/// Feeds `steps` (the factors' open edges ended and replaced as they change), saving the
/// state after step `cut` and going on in a new query restored from it.
fn run(steps: &[Step], cut: Option<usize>) -> Seen {
    let mut q = build();
    let mut seen = Seen::default();
    let mut factor: Vec<Option<(i64, i64)>> = vec![None; 4];
    let mut cti = [0i64; 3];
    for (i, step) in steps.iter().enumerate() {
        match step {
            Step::Readings(events, advance) => {
                let mut b = Batch::new();
                for &(at, r) in events {
                    b.push_point(t(cti[0] + at), r);
                }
                cti[0] += advance;
                b.push_cti(t(cti[0]));
                q.graph.feed(&q.readings, &mut b);
            }
            Step::More(events, advance) => {
                // Ordered: each event below the CTI that follows it.
                let mut times: Vec<(i64, Reading)> = events
                    .iter()
                    .map(|&(at, r)| (cti[1] + at % advance, r))
                    .collect();
                times.sort_by_key(|e| e.0);
                let mut b = Batch::new();
                for (at, r) in times {
                    b.push_point(t(at), r);
                }
                cti[1] += advance;
                b.push_cti(t(cti[1]));
                q.graph.feed(&q.more, &mut b);
            }
            Step::Factor(device, value, advance) => {
                let now = cti[2];
                let mut b = Batch::new();
                let d = *device as usize;
                if let Some((start, old)) = factor[d] {
                    b.push_event(t(now), t(start), (*device, old)); // the end edge
                }
                b.push_event(t(now), Time::INF, (*device, *value));
                factor[d] = Some((now, *value));
                cti[2] = now + advance;
                b.push_cti(t(cti[2]));
                q.graph.feed(&q.factors, &mut b);
            }
        }
        take(&q.graph, &q.averages, &mut seen.averages);
        take(&q.graph, &q.late, &mut seen.late);
        if cut == Some(i) {
            let bytes = q
                .graph
                .save_state()
                .expect("every operator saves its state");
            q = build();
            q.graph.restore_state(&bytes).expect("restored");
        }
    }
    let mut b = Batch::new();
    b.push_cti(Time::INF);
    q.graph.feed(&q.readings, &mut b);
    let mut b = Batch::new();
    b.push_cti(Time::INF);
    q.graph.feed(&q.more, &mut b);
    let mut b = Batch::new();
    b.push_cti(Time::INF);
    q.graph.feed(&q.factors, &mut b);
    take(&q.graph, &q.averages, &mut seen.averages);
    take(&q.graph, &q.late, &mut seen.late);
    seen
}

fn events() -> impl Strategy<Value = Vec<(i64, Reading)>> {
    prop::collection::vec((0i64..12, (0u32..4, -20i64..20)), 0..6)
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (events(), 0i64..6).prop_map(|(e, a)| Step::Readings(e, a)),
        2 => (events(), 1i64..6).prop_map(|(e, a)| Step::More(e, a)),
        1 => (0u32..4, 1i64..4, 1i64..8).prop_map(|(d, v, a)| Step::Factor(d, v, a)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_restored_graph_continues_as_the_one_saved(
        steps in prop::collection::vec(step(), 1..40),
        cut in 0usize..40,
    ) {
        let whole = run(&steps, None);
        let cut = cut % steps.len();
        prop_assert_eq!(run(&steps, Some(cut)), whole);
    }
}

/// The test above would pass if nothing were saved and the outputs were empty: this input
/// gives results on both outputs, across the cut.
#[test]
fn the_query_gives_results_on_both_outputs_across_the_cut() {
    let steps = vec![
        Step::Factor(1, 2, 1),
        Step::Readings(vec![(1, (1, 5)), (3, (1, 6)), (2, (2, 9))], 4),
        Step::More(vec![(2, (1, 4))], 6),
        Step::Readings(vec![(0, (1, 1))], 9),
        Step::Readings(vec![(1, (1, 1)), (2, (1, 3))], 9),
        Step::Factor(1, 3, 20),
        Step::More(vec![(9, (1, 4))], 20),
        Step::Readings(vec![(0, (1, 2))], 12),
    ];
    let whole = run(&steps, None);
    assert!(
        whole.averages.iter().filter(|e| e.2.is_some()).count() >= 3,
        "{whole:?}"
    );
    assert!(
        whole.late.iter().filter(|e| e.2.is_some()).count() >= 3,
        "{whole:?}"
    );
    for cut in 0..steps.len() {
        assert_eq!(run(&steps, Some(cut)), whole, "cut after step {cut}");
    }
}

/// An operator that cannot save its state yet is named; bytes of another graph, or damaged
/// ones, are refused.
#[test]
fn what_cannot_be_saved_or_restored_is_refused_with_the_reason() {
    let graph = QueryGraph::new();
    let input = graph.source::<Reading, Ordered>();
    let counts = input.count_window(3).count();
    graph.keep_output(&counts);
    assert_eq!(
        graph.save_state().unwrap_err(),
        StateError::Unsupported("count window")
    );

    let q = build();
    let bytes = q.graph.save_state().unwrap();
    let other = QueryGraph::new();
    let s = other.source::<Reading, Ordered>();
    other.keep_output(&s.filter(|_| true));
    assert!(matches!(
        other.restore_state(&bytes),
        Err(StateError::Mismatch(_))
    ));
    let fresh = build();
    let err = fresh
        .graph
        .restore_state(&bytes[..bytes.len() / 2])
        .unwrap_err();
    assert!(matches!(err, StateError::Unreadable { .. }), "{err}");
}
