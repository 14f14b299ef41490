//! Lifetime functions (StreamInsight's `AlterEventLifetime` with selectors, `ToPointEventStream`,
//! the `ToSignal` idiom): what they make of events and CTIs, and that a start function that
//! would move an event below the CTI or out of order cannot break the stream.

use punctual_core::ops::QueryGraph;
use punctual_core::{Batch, Ordered, Time, TimeSpan};

fn t(x: i64) -> Time {
    Time::from_ticks(x)
}

/// (start, end, payload) of each event, and the CTIs.
fn run(
    build: impl FnOnce(&punctual_core::ops::Stream<i64>) -> punctual_core::ops::Stream<i64>,
    input: Batch<i64>,
) -> (Vec<(i64, i64, i64)>, Vec<i64>) {
    let graph = QueryGraph::new();
    let source = graph.source::<i64, Ordered>();
    let out = build(&source);
    graph.keep_output(&out);
    let mut input = input;
    graph.feed(&source, &mut input);
    let mut b = Batch::new();
    graph.take_output(&out, &mut b);
    let events = (0..b.len())
        .map(|i| (b.sync()[i].ticks(), b.other()[i].ticks(), b.payloads()[i]))
        .collect();
    let ctis = b.ctis().iter().map(|m| m.time.ticks()).collect();
    (events, ctis)
}

#[test]
fn a_start_function_moves_events_and_ctis_and_a_duration_function_sets_ends() {
    let mut input = Batch::new();
    input.push_event(t(12), t(15), 1);
    input.push_point(t(19), 2);
    input.push_cti(t(20));
    input.push_event(t(21), t(40), 3);
    input.push_cti(t(30));
    // Round starts down to 10; durations: ten times the old.
    let (events, ctis) = run(
        |s| {
            s.alter_lifetime_with(
                |x| t(x.ticks() / 10 * 10),
                |_, d| TimeSpan::from_ticks(d.ticks() * 10),
            )
        },
        input,
    );
    assert_eq!(events, vec![(10, 40, 1), (10, 20, 2), (20, 210, 3)]);
    assert_eq!(ctis, vec![20, 30]);
}

#[test]
fn a_start_function_that_goes_back_is_clamped_to_the_cti_and_the_order() {
    let mut input = Batch::new();
    input.push_point(t(10), 1);
    input.push_cti(t(11));
    input.push_point(t(12), 2);
    input.push_point(t(13), 3);
    input.push_cti(t(20));
    // Not monotone: 12 maps below the CTI (11 -> 11), 13 maps before 12's result.
    let wild = |x: Time| match x.ticks() {
        12 => t(1),
        13 => t(5),
        _ => x,
    };
    let (events, ctis) = run(|s| s.alter_lifetime_with(wild, |_, d| d), input);
    assert_eq!(events, vec![(10, 11, 1), (11, 12, 2), (11, 12, 3)]);
    assert_eq!(ctis, vec![11, 20]);
}

#[test]
fn point_events_and_signals() {
    let mut input = Batch::new();
    input.push_event(t(1), t(9), 7);
    input.push_event(t(3), t(5), 8);
    input.push_cti(t(10));
    let (events, _) = run(|s| s.to_point_events(), input);
    assert_eq!(events, vec![(1, 2, 7), (3, 4, 8)]);

    // Readings of two sensors (key: the value's parity): each holds until the next of its key.
    let mut input = Batch::new();
    for (at, v) in [(1, 10), (2, 11), (4, 12), (7, 14), (8, 13)] {
        input.push_point(t(at), v);
    }
    // (The last of each key waits: a later reading could still end it. The end of input
    // tells it none will.)
    input.push_cti(Time::INF);
    let (mut events, _) = run(|s| s.to_signal(|v| v % 2), input);
    events.sort();
    assert_eq!(
        events,
        vec![
            (1, 4, 10),
            (2, 8, 11),
            (4, 7, 12),
            (7, Time::MAX_FINITE.ticks(), 14),
            (8, Time::MAX_FINITE.ticks(), 13)
        ]
    );
}
