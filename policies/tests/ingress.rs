//! Ingress corners that the conformance cases do not reach: edge adjustments that leave nothing,
//! dangling edges, duplicate edges, the buffer cap, generation by duration with a delay,
//! imports, unreleased events, and the dead-letter reasons.

use punctual_core::{EventKind, StreamItem, Time, TimeSpan};
use punctual_policies::{
    AdvanceTimeGenerationSettings, AdvanceTimePolicy, DeadLetterReason, Enqueued, Error, Ingress,
    IngressConfig, IngressOutput,
};

fn t(x: i64) -> Time {
    Time::from_ticks(x)
}

fn ingress(policy: Option<AdvanceTimePolicy>) -> Ingress<u32> {
    Ingress::new(IngressConfig {
        policy,
        ..IngressConfig::default()
    })
}

fn items(out: &IngressOutput<u32>) -> Vec<StreamItem<u32>> {
    out.batch.items().map(|i| i.map(|p| *p)).collect()
}

/// An ingress with `policy` that released the start edge S(2) of payload 7, then CTI(10).
fn released_start_then_cti(policy: AdvanceTimePolicy) -> (Ingress<u32>, IngressOutput<u32>) {
    let (mut ing, mut out) = (ingress(Some(policy)), IngressOutput::new());
    for item in [StreamItem::start_edge(t(2), 7), StreamItem::Cti(t(10))] {
        ing.enqueue(item, &mut out).expect("accepted");
    }
    (ing, out)
}

#[test]
fn adjust_removes_an_edge_left_empty_by_clamping() {
    let mut ing = ingress(Some(AdvanceTimePolicy::Adjust));
    let mut out = IngressOutput::new();
    ing.enqueue(StreamItem::Cti(t(10)), &mut out).unwrap();
    // S(3) is late: becomes S(10). Its end at 8 is late too: clamped to 10, nothing is left.
    assert_eq!(
        ing.enqueue(StreamItem::start_edge(t(3), 1), &mut out),
        Ok(Enqueued::Adjusted(EventKind::StartEdge(t(10))))
    );
    assert_eq!(
        ing.enqueue(StreamItem::end_edge(t(3), t(8), 1), &mut out),
        Ok(Enqueued::Dropped)
    );
    ing.enqueue(StreamItem::Cti(Time::INF), &mut out).unwrap();
    assert_eq!(
        items(&out),
        vec![StreamItem::Cti(t(10)), StreamItem::Cti(Time::INF)]
    );
    let c = ing.counters();
    assert_eq!(
        (c.events_in, c.dropped, c.adjusted, c.released),
        (2, 2, 1, 0)
    );
    assert_eq!(out.dead_letters.len(), 2);
    assert!(out
        .dead_letters
        .iter()
        .all(|d| d.reason == DeadLetterReason::Late));
}

#[test]
fn adjust_clamps_an_end_edge_of_a_released_start() {
    let (mut ing, mut out) = released_start_then_cti(AdvanceTimePolicy::Adjust);
    assert_eq!(
        ing.enqueue(StreamItem::end_edge(t(2), t(5), 7), &mut out),
        Ok(Enqueued::Adjusted(EventKind::EndEdge {
            start: t(2),
            end: t(10)
        }))
    );
    ing.enqueue(StreamItem::Cti(Time::INF), &mut out).unwrap();
    assert_eq!(
        items(&out),
        vec![
            StreamItem::start_edge(t(2), 7),
            StreamItem::Cti(t(10)),
            StreamItem::end_edge(t(2), t(10), 7),
            StreamItem::Cti(Time::INF),
        ]
    );
}

#[test]
fn drop_leaves_a_dangling_edge_that_a_later_end_can_still_close() {
    let (mut ing, mut out) = released_start_then_cti(AdvanceTimePolicy::Drop);
    assert_eq!(
        ing.enqueue(StreamItem::end_edge(t(2), t(5), 7), &mut out),
        Ok(Enqueued::Dropped)
    );
    assert_eq!(ing.counters().dangling_edges, 1);
    assert_eq!(
        ing.enqueue(StreamItem::end_edge(t(2), t(12), 7), &mut out),
        Ok(Enqueued::Accepted)
    );
    assert_eq!(ing.counters().dangling_edges, 0);
}

#[test]
fn end_edges_match_by_start_and_payload() {
    let mut ing = ingress(None);
    let mut out = IngressOutput::new();
    ing.enqueue(StreamItem::start_edge(t(2), 7), &mut out)
        .unwrap();
    ing.enqueue(StreamItem::start_edge(t(2), 7), &mut out)
        .unwrap();
    let wrong = ing.enqueue(StreamItem::end_edge(t(2), t(5), 8), &mut out);
    assert!(matches!(wrong, Err(Error::Invalid(_))), "{wrong:?}");
    // Two equal open edges: two ends close them; a third end has nothing left to close.
    ing.enqueue(StreamItem::end_edge(t(2), t(5), 7), &mut out)
        .unwrap();
    ing.enqueue(StreamItem::end_edge(t(2), t(6), 7), &mut out)
        .unwrap();
    assert!(ing
        .enqueue(StreamItem::end_edge(t(2), t(7), 7), &mut out)
        .is_err());
    assert_eq!(ing.counters().rejected, 2);
}

#[test]
fn the_buffer_cap_rejects_with_a_clear_error() {
    let mut ing = Ingress::new(IngressConfig {
        max_buffered: 3,
        ..IngressConfig::default()
    });
    let mut out = IngressOutput::new();
    for x in 0..3 {
        ing.enqueue(StreamItem::point(t(x), 0u32), &mut out)
            .unwrap();
    }
    let e = ing
        .enqueue(StreamItem::point(t(3), 0), &mut out)
        .unwrap_err();
    assert_eq!(
        e,
        Error::BufferFull {
            cap: 3,
            app: Time::NEG_INF,
            earliest: t(0),
        }
    );
    assert!(
        e.to_string().contains(
            "3 events wait for a CTI (the input's buffer cap): the last CTI is at -inf, the earliest event held is at 1970-01-01T00:00:00Z"
        ),
        "{e}"
    );
    // A CTI frees the buffer and the stream goes on.
    ing.enqueue(StreamItem::Cti(t(10)), &mut out).unwrap();
    ing.enqueue(StreamItem::point(t(11), 0), &mut out).unwrap();
    let c = ing.counters();
    assert_eq!((c.released, c.rejected, c.buffered), (3, 1, 1));
}

#[test]
fn every_duration_with_a_delay_and_an_import() {
    let g = AdvanceTimeGenerationSettings::every_duration(TimeSpan::from_ticks(10))
        .delay(TimeSpan::from_ticks(2))
        .build()
        .unwrap();
    let mut ing = Ingress::new(IngressConfig {
        generation: Some(g),
        policy: Some(AdvanceTimePolicy::Drop),
        ..IngressConfig::default()
    });
    let mut out = IngressOutput::new();
    for x in [5, 9, 16, 17, 30] {
        ing.enqueue(StreamItem::point(t(x), x as u32), &mut out)
            .unwrap();
    }
    // CTI(3) at the first event; 16-2=14 >= 3+10; 17-2=15 < 24; 30-2=28 >= 24.
    assert!(
        !ing.import_cti(t(20), &mut out),
        "a stale import does not advance time"
    );
    assert!(
        ing.import_cti(t(35), &mut out),
        "this one releases the event at 30"
    );
    ing.enqueue(StreamItem::point(t(40), 40), &mut out).unwrap();
    assert!(!ing.finish(&mut out), "no final CTI was asked for");
    ing.close(&mut out);
    let ctis: Vec<Time> = out.batch.ctis().iter().map(|m| m.time).collect();
    assert_eq!(ctis, vec![t(3), t(14), t(28), t(35)]);
    let c = ing.counters();
    assert_eq!((c.released, c.unreleased, c.stale_ctis), (5, 1, 1));
    assert!(out
        .dead_letters
        .iter()
        .any(|d| d.reason == DeadLetterReason::Unreleased
            && d.item == Some(StreamItem::point(t(40), 40))));
}

#[test]
fn ties_are_released_in_arrival_order() {
    let mut ing = ingress(None);
    let mut out = IngressOutput::new();
    for (x, p) in [(5, 1), (3, 2), (5, 3), (3, 4), (4, 5)] {
        ing.enqueue(StreamItem::point(t(x), p), &mut out).unwrap();
    }
    ing.enqueue(StreamItem::Cti(Time::INF), &mut out).unwrap();
    let payloads: Vec<u32> = out.batch.payloads().to_vec();
    assert_eq!(payloads, vec![2, 4, 5, 1, 3]);
}

#[test]
fn invalid_items_never_panic() {
    let mut ing = ingress(Some(AdvanceTimePolicy::Adjust));
    let mut out = IngressOutput::new();
    for item in [
        StreamItem::point(Time::INF, 0u32),
        StreamItem::point(Time::MAX_FINITE, 0),
        StreamItem::point(Time::NEG_INF, 0),
        StreamItem::interval(t(5), t(4), 0),
        StreamItem::interval(Time::NEG_INF, t(4), 0),
        StreamItem::start_edge(Time::INF, 0),
        StreamItem::end_edge(t(1), t(1), 0),
        StreamItem::Cti(Time::NEG_INF),
    ] {
        assert!(ing.enqueue(item, &mut out).is_err());
    }
    let c = ing.counters();
    assert_eq!((c.events_in, c.rejected, c.rejected_ctis), (7, 7, 1));
    assert_eq!(out.dead_letters.len(), 8);
}

#[test]
fn a_start_edge_after_the_final_cti_is_dropped_not_moved_to_infinity() {
    let mut ing = ingress(Some(AdvanceTimePolicy::Adjust));
    let mut out = IngressOutput::new();
    ing.enqueue(StreamItem::Cti(Time::INF), &mut out).unwrap();
    assert_eq!(
        ing.enqueue(StreamItem::start_edge(t(0), 1), &mut out),
        Ok(Enqueued::Dropped)
    );
    assert_eq!(
        ing.enqueue(StreamItem::end_edge(t(0), t(5), 1), &mut out),
        Ok(Enqueued::Dropped)
    );
    let c = ing.counters();
    assert_eq!((c.dropped, c.buffered, c.adjusted), (2, 0, 0));
}

/// A fused filter refuses both edges (their payload), and the end edge still removes its
/// start edge: both counted dropped and dead-lettered, as in front of the filter; a refused
/// point that no CTI passes is unreleased (its dead letter without the item: the ingress kept
/// only its times), one that a CTI passes is filtered.
#[test]
fn a_fused_filter_leaves_the_counts_of_the_stream_in_front_of_it() {
    let mut ing = ingress(Some(AdvanceTimePolicy::Adjust));
    ing.fuse_filter(Box::new(|p: &u32| *p != 1));
    let mut out = IngressOutput::new();
    ing.enqueue(StreamItem::Cti(t(10)), &mut out).unwrap();
    ing.enqueue(StreamItem::start_edge(t(3), 1), &mut out)
        .unwrap();
    assert_eq!(
        ing.enqueue(StreamItem::end_edge(t(3), t(8), 1), &mut out),
        Ok(Enqueued::Dropped)
    );
    for at in [12, 20] {
        ing.enqueue(StreamItem::point(t(at), 1), &mut out).unwrap();
    }
    ing.enqueue(StreamItem::point(t(13), 2), &mut out).unwrap();
    let c = ing.counters();
    assert_eq!(
        (c.dropped, c.adjusted, c.buffered, c.filtered),
        (2, 1, 3, 0)
    );
    ing.enqueue(StreamItem::Cti(t(15)), &mut out).unwrap();
    let c = ing.counters();
    assert_eq!((c.released, c.filtered, c.buffered), (1, 1, 1));
    ing.close(&mut out);
    let c = ing.counters();
    assert_eq!((c.unreleased, c.buffered), (1, 0));
    assert_eq!(
        c.events_in,
        c.released + c.filtered + c.dropped + c.rejected + c.buffered + c.unreleased,
        "{c:?}"
    );
    let reasons: Vec<(DeadLetterReason, Option<StreamItem<u32>>)> = out
        .dead_letters
        .iter()
        .map(|d| (d.reason.clone(), d.item.clone()))
        .collect();
    assert_eq!(
        reasons,
        vec![
            (
                DeadLetterReason::Late,
                Some(StreamItem::start_edge(t(10), 1))
            ),
            (
                DeadLetterReason::Late,
                Some(StreamItem::end_edge(t(3), t(8), 1))
            ),
            (DeadLetterReason::Unreleased, None),
        ]
    );
}

#[test]
fn a_cti_at_minus_infinity_is_a_rejected_cti_not_a_rejected_event() {
    let mut ing = ingress(None);
    let mut out = IngressOutput::new();
    ing.enqueue(StreamItem::point(t(5), 1), &mut out).unwrap();
    assert!(ing
        .enqueue(StreamItem::Cti(Time::NEG_INF), &mut out)
        .is_err());
    ing.enqueue(StreamItem::Cti(t(6)), &mut out).unwrap();
    let c = ing.counters();
    assert_eq!((c.ctis_in, c.rejected_ctis, c.rejected), (2, 1, 0));
    assert_eq!(
        c.events_in,
        c.released + c.filtered + c.dropped + c.rejected + c.buffered + c.unreleased,
        "{c:?}"
    );
    assert!(out
        .dead_letters
        .iter()
        .any(|d| d.item == Some(StreamItem::Cti(Time::NEG_INF))));
}

#[test]
fn an_end_edge_at_infinity_is_rejected_and_its_start_edge_stays_open() {
    let mut ing = ingress(None);
    let mut out = IngressOutput::new();
    ing.enqueue(StreamItem::start_edge(t(1), 7), &mut out)
        .unwrap();
    assert_eq!(
        ing.enqueue(StreamItem::end_edge(t(1), Time::INF, 7), &mut out),
        Err(Error::Invalid(
            punctual_core::InvalidEvent::EndEdgeAtInfinity(t(1))
        ))
    );
    ing.enqueue(StreamItem::Cti(Time::INF), &mut out).unwrap();
    ing.close(&mut out);
    let c = ing.counters();
    assert_eq!(
        (c.events_in, c.released, c.rejected, c.unreleased),
        (2, 1, 1, 0)
    );
    assert_eq!(
        items(&out),
        vec![StreamItem::start_edge(t(1), 7), StreamItem::Cti(Time::INF)]
    );
}

/// The point entry points (items, points, columns, records) agree after edges: an end edge
/// whose end is later than the points that follow does not keep them from advancing the
/// highest start (and so from generating CTIs).
#[test]
fn bulk_points_after_an_end_edge_generate_as_one_by_one() {
    let config = IngressConfig {
        generation: Some(
            AdvanceTimeGenerationSettings::every_events(1)
                .build()
                .expect("valid"),
        ),
        policy: Some(AdvanceTimePolicy::Drop),
        ..IngressConfig::default()
    };
    let prefix = [
        StreamItem::start_edge(t(0), 9u32),
        StreamItem::end_edge(t(0), t(100), 9),
    ];
    let points = [(t(10), 1u32), (t(20), 2), (t(30), 3)];
    let run = |how: usize| {
        let mut ing = Ingress::new(config);
        let mut out = IngressOutput::new();
        for item in prefix.iter().cloned() {
            ing.enqueue(item, &mut out).expect("valid");
        }
        match how {
            0 => {
                for &(s, p) in &points {
                    let _ = ing.enqueue(StreamItem::point(s, p), &mut out);
                }
            }
            1 => {
                ing.enqueue_points(points.iter().copied(), &mut out)
                    .expect("taken");
            }
            2 => {
                let times: Vec<Time> = points.iter().map(|p| p.0).collect();
                let payloads: Vec<u32> = points.iter().map(|p| p.1).collect();
                ing.enqueue_point_columns(&times, &payloads, &mut out)
                    .expect("taken");
            }
            _ => {
                ing.enqueue_point_records(&points, |p| p.0, |p| p.1, &mut out)
                    .expect("taken");
            }
        }
        (items(&out), ing.counters())
    };
    let one = run(0);
    assert!(
        one.0.ends_with(&[
            StreamItem::Cti(t(20)),
            StreamItem::point(t(20), 2),
            StreamItem::Cti(t(30))
        ]),
        "{one:?}"
    );
    for how in 1..4 {
        assert_eq!(run(how), one, "entry point {how}");
    }
}

/// An open start edge is held once: in `buffered` while the reorder buffer holds it, in
/// `open_edges` once a CTI releases it (until its end edge comes); one whose end edge comes
/// while it is still held leaves `open_edges` alone. (It was counted in both, so a query's
/// budget refused as many open edges as it allows.)
#[test]
fn an_open_edge_is_counted_once_held_or_released() {
    let mut ing = ingress(None);
    let mut out = IngressOutput::new();
    let held = |ing: &Ingress<u32>| {
        let c = ing.counters();
        (c.buffered, c.open_edges)
    };
    for id in 0..3 {
        ing.enqueue(StreamItem::start_edge(t(2), id), &mut out)
            .unwrap();
    }
    ing.enqueue(StreamItem::start_edge(t(4), 9), &mut out)
        .unwrap();
    assert_eq!(held(&ing), (4, 0));
    // An end edge while its start edge is still held: both held, nothing open.
    ing.enqueue(StreamItem::end_edge(t(4), t(6), 9), &mut out)
        .unwrap();
    assert_eq!(held(&ing), (5, 0));
    ing.enqueue(StreamItem::Cti(t(3)), &mut out).unwrap();
    assert_eq!(held(&ing), (2, 3), "the three at 2 are released and open");
    ing.enqueue(StreamItem::end_edge(t(2), t(5), 1), &mut out)
        .unwrap();
    assert_eq!(held(&ing), (3, 2));
    ing.enqueue(StreamItem::Cti(t(7)), &mut out).unwrap();
    assert_eq!(held(&ing), (0, 2));
    ing.enqueue(StreamItem::end_edge(t(2), t(8), 0), &mut out)
        .unwrap();
    ing.enqueue(StreamItem::end_edge(t(2), t(8), 2), &mut out)
        .unwrap();
    ing.enqueue(StreamItem::Cti(Time::INF), &mut out).unwrap();
    assert_eq!(held(&ing), (0, 0));
}
