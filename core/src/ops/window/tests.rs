//! The window operator's limits: long members kept once, events over the limit dropped.

use super::*;
use crate::ops::{AnyBatch, Count, UnaryOperator, MAX_KEPT_DROPS};
use crate::time::{TimeSpan, TICKS_PER_SECOND};

fn counting(spec: WindowSpec) -> impl UnaryOperator<u8, (i64, u64)> {
    HoppingWindow::new(spec, |_: &u8| 0u8, Count, |_: &u8, n: u64| (0i64, n))
}

fn second(n: i64) -> Time {
    Time::from_ticks(n * TICKS_PER_SECOND)
}

fn results(out: &Batch<(i64, u64)>) -> Vec<(Time, u64)> {
    out.sync()
        .iter()
        .zip(out.payloads())
        .map(|(t, p)| (*t, p.1))
        .collect()
}

/// An open start edge and a CTI far in the future: the edge would count in about a
/// million million windows; it is dropped with the reason, and nothing is allocated for
/// those windows.
#[test]
fn a_start_edge_and_a_cti_far_ahead_are_dropped_not_allocated() {
    let mut w = counting(WindowSpec::tumbling(TimeSpan::from_ticks(TICKS_PER_SECOND)));
    let mut input = Batch::new();
    input.push(EventKind::StartEdge(second(0)), 1u8);
    input.push_cti(Time::from_ticks(9_000_000_000_000_000_000));
    let mut out = Batch::new();
    w.on_batch(&input, &mut out);
    assert_eq!(out.events(), 0);
    assert_eq!(w.dropped(), 1);
    let mut drops = Vec::new();
    w.take_drops(&mut drops);
    assert!(drops[0].reason.contains("over the limit"), "{drops:?}");
    assert_eq!(w.state_size(), 0);
}

/// "Valid forever" (`[0, 9999-12-31)`) in 1 s windows: over the limit, dropped when it
/// arrives; a long interval under the limit is kept once, not once per window, and counts
/// in every window it overlaps as they close.
#[test]
fn a_long_interval_is_kept_once_and_one_too_long_is_dropped() {
    let spec = WindowSpec::tumbling(TimeSpan::from_ticks(TICKS_PER_SECOND));
    let mut w = counting(spec);
    let mut input = Batch::new();
    input.push(
        EventKind::Interval {
            start: second(0),
            end: Time::parse_rfc3339("9999-12-31T00:00:00Z").expect("valid"),
        },
        1u8,
    );
    input.push(
        EventKind::Interval {
            start: second(0),
            end: second(500_000),
        },
        2u8,
    );
    let mut out = Batch::new();
    w.on_batch(&input, &mut out);
    assert_eq!(w.dropped(), 1);
    assert_eq!(w.state_size(), 1, "one kept member, no window allocated");
    let mut input = Batch::new();
    input.push_point(second(2), 3u8);
    input.push_cti(second(4));
    w.on_batch(&input, &mut out);
    assert_eq!(
        results(&out),
        vec![(second(1), 1), (second(2), 1), (second(3), 2)],
        "the long interval in every window, the point in its own"
    );
    let mut input = Batch::new();
    input.push_cti(Time::INF);
    let mut out = Batch::new();
    w.on_batch(&input, &mut out);
    assert_eq!(out.events(), 500_000 - 3, "one result per remaining window");
    assert_eq!(w.state_size(), 0);
}

/// With a small limit: an interval over it is dropped; a start edge counts while under
/// it, and is dropped when a CTI would take it over.
#[test]
fn the_limit_is_per_event_and_can_be_set() {
    let spec = WindowSpec::tumbling(TimeSpan::from_ticks(10)).max_windows_per_event(3);
    let mut w = counting(spec);
    let mut input = Batch::new();
    input.push(
        EventKind::Interval {
            start: Time::from_ticks(0),
            end: Time::from_ticks(40),
        },
        1u8,
    );
    input.push(EventKind::StartEdge(Time::from_ticks(0)), 2u8);
    input.push_cti(Time::from_ticks(30));
    let mut out = Batch::new();
    w.on_batch(&input, &mut out);
    assert_eq!(w.dropped(), 1, "the interval over 4 windows");
    // (The edge counts in windows 0, 1 and 2; the third's result, a point at 30, waits
    // for a CTI after 30.)
    assert_eq!(out.events(), 2);
    let mut input = Batch::new();
    input.push_cti(Time::from_ticks(40));
    w.on_batch(&input, &mut out);
    assert_eq!(w.dropped(), 2, "a fourth window is over the limit");
    assert_eq!(out.events(), 3, "no result for the fourth window");
}

/// An operator keeps a bounded number of unread drop records; its count goes on.
#[test]
fn drop_records_are_capped_and_the_count_goes_on() {
    let spec = WindowSpec::tumbling(TimeSpan::from_ticks(1)).max_windows_per_event(1);
    let mut w = counting(spec);
    let mut input = Batch::new();
    for _ in 0..MAX_KEPT_DROPS + 10 {
        input.push(
            EventKind::Interval {
                start: Time::from_ticks(0),
                end: Time::from_ticks(5),
            },
            1u8,
        );
    }
    let mut out = Batch::new();
    w.on_batch(&input, &mut out);
    assert_eq!(w.dropped(), (MAX_KEPT_DROPS + 10) as u64);
    let mut drops = Vec::new();
    w.take_drops(&mut drops);
    assert_eq!(drops.len(), MAX_KEPT_DROPS);
    w.take_drops(&mut drops);
    assert_eq!(drops.len(), MAX_KEPT_DROPS, "taken once");
}

/// With allowed lateness, members kept once (an interval over 100 windows, an open start
/// edge) count in the values given early and revised, as in the final ones: each window's
/// chain ends with the value the window has without lateness.
#[test]
fn kept_members_count_in_values_given_early() {
    let spec = WindowSpec::tumbling(TimeSpan::from_ticks(10));
    let late = spec.allowed_lateness(TimeSpan::from_ticks(30));
    let t = Time::from_ticks;
    let mut input = Batch::new();
    input.push(
        EventKind::Interval {
            start: t(0),
            end: t(1000),
        },
        1u8,
    );
    input.push(EventKind::StartEdge(t(15)), 1u8);
    input.push_point(t(25), 1u8);
    input.push_cti(t(21)); // watermark 51: [0,10) .. [40,50) given
    input.push_point(t(22), 1u8); // late: [20,30) revised
    input.push(
        EventKind::EndEdge {
            start: t(15),
            end: t(35),
        },
        1u8,
    );
    input.push_cti(t(45));
    input.push_cti(Time::INF);
    let (mut with, mut without) = (counting(late), counting(spec));
    let (mut chains, mut points) = (Batch::new(), Batch::new());
    with.on_batch(&input, &mut chains);
    without.on_batch(&input, &mut points);
    // The final values: the end edges at a window's end plus 30.
    let finals: Vec<(Time, u64)> = (0..chains.len())
        .filter_map(|i| match chains.kind(i) {
            EventKind::EndEdge { end, .. } if (end.ticks() - 30) % 10 == 0 => {
                Some((end - TimeSpan::from_ticks(30), chains.payloads()[i].1))
            }
            _ => None,
        })
        .collect();
    assert_eq!(finals, results(&points));
    // [20,30) was given with the interval, the edge and 25 (3), then revised with 22 (4)
    // under watermark 51; [40,50), given with the open edge (2), lost it when it ended at 35.
    let starts = |at: i64| -> Vec<u64> {
        (0..chains.len())
            .filter(|&i| chains.kind(i) == EventKind::StartEdge(t(at)))
            .map(|i| chains.payloads()[i].1)
            .collect::<std::collections::BTreeSet<u64>>()
            .into_iter()
            .collect()
    };
    assert_eq!(
        (starts(30), starts(50), starts(51)),
        (vec![3], vec![2], vec![1, 4])
    );
}
