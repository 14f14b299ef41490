//! Property tests of the ingress (docs/semantics.md, section 6):
//! (a) CTIs are monotone; (b) nothing released after `CTI(t)` violates it, and nothing released
//! before it reaches it; (c) with explicit CTIs, permuting the events between two CTIs leaves
//! every released segment the same as a multiset; (d) every enqueued item is accounted for
//! exactly once (released, dropped, rejected, or unreleased).

use proptest::prelude::*;

use punctual_core::{Batch, EventKind, EventOrder, StreamItem, Time, TimeSpan};
use punctual_policies::{
    AdvanceTimeGenerationSettings, AdvanceTimePolicy, DeadLetterReason, Ingress, IngressConfig,
    IngressOutput,
};

/// `default` cases, or `PUNCTUAL_FUZZ_CASES` (`.ci/run` runs many more, as a bounded fuzz
/// run; a failing input is saved in `proptest-regressions/` and replayed first from then on).
fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("PUNCTUAL_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    ProptestConfig::with_cases(cases)
}

fn t(x: i64) -> Time {
    Time::from_ticks(x)
}

/// A raw operation; end edges refer to an earlier start edge by index.
#[derive(Clone, Debug)]
enum Op {
    Point(i64),
    Interval(i64, i64),
    Start(i64),
    End(usize, i64),
    Cti(i64),
}

fn op(with_ctis: bool) -> impl Strategy<Value = Op> {
    let cti_weight = if with_ctis { 2 } else { 0 };
    prop_oneof![
        4 => (0i64..60).prop_map(Op::Point),
        3 => (0i64..60, -2i64..20).prop_map(|(s, l)| Op::Interval(s, l)),
        2 => (0i64..60).prop_map(Op::Start),
        2 => (0usize..8, -3i64..25).prop_map(|(k, l)| Op::End(k, l)),
        cti_weight => (-5i64..70).prop_map(Op::Cti),
    ]
}

/// Turns ops into items; payloads are unique (the op's index), end edges copy their start's.
/// Each start edge gets at most one end edge (a second one would make "which end closes it"
/// depend on arrival order, outside the premise of guarantee 3).
fn items(ops: &[Op]) -> Vec<StreamItem<u32>> {
    let mut starts: Vec<(i64, u32, bool)> = Vec::new();
    let mut out = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let p = i as u32;
        out.push(match *op {
            Op::Point(s) => StreamItem::point(t(s), p),
            Op::Interval(s, l) => StreamItem::interval(t(s), t(s + l), p),
            Op::Start(s) => {
                starts.push((s, p, false));
                StreamItem::start_edge(t(s), p)
            }
            Op::End(k, l) => match starts.get_mut(k) {
                Some((s, sp, ended @ false)) => {
                    *ended = true;
                    StreamItem::end_edge(t(*s), t(*s + l), *sp)
                }
                _ => StreamItem::point(t(l.abs()), p),
            },
            Op::Cti(c) => StreamItem::Cti(t(c)),
        });
    }
    out
}

#[derive(Clone, Debug)]
struct Settings {
    policy: Option<AdvanceTimePolicy>,
    generation: Option<AdvanceTimeGenerationSettings>,
}

fn settings() -> impl Strategy<Value = Settings> {
    let policy = prop_oneof![
        Just(None),
        Just(Some(AdvanceTimePolicy::Drop)),
        Just(Some(AdvanceTimePolicy::Adjust)),
    ];
    let generation = prop_oneof![
        Just(None),
        (1u64..4, -2i64..6, any::<bool>()).prop_map(|(n, d, f)| {
            AdvanceTimeGenerationSettings::every_events(n)
                .delay(TimeSpan::from_ticks(d))
                .final_cti(f)
                .build()
                .ok()
        }),
        (1i64..15, -2i64..6, any::<bool>()).prop_map(|(n, d, f)| {
            AdvanceTimeGenerationSettings::every_duration(TimeSpan::from_ticks(n))
                .delay(TimeSpan::from_ticks(d))
                .final_cti(f)
                .build()
                .ok()
        }),
    ];
    (policy, generation).prop_map(|(policy, generation)| Settings { policy, generation })
}

fn run(settings: &Settings, items: Vec<StreamItem<u32>>) -> (Ingress<u32>, IngressOutput<u32>) {
    let mut ing = Ingress::new(IngressConfig {
        policy: settings.policy,
        generation: settings.generation,
        ..IngressConfig::default()
    });
    let mut out = IngressOutput::new();
    for item in items {
        let _ = ing.enqueue(item, &mut out);
    }
    ing.finish(&mut out);
    (ing, out)
}

/// The events released by one CTI, as sorted `(sync, other, payload)`.
type Segment = (Time, Vec<(Time, Time, u32)>);

/// Released segments: the events released by each CTI.
fn segments(out: &IngressOutput<u32>) -> Vec<Segment> {
    let b = &out.batch;
    let mut start = 0;
    b.ctis()
        .iter()
        .map(|m| {
            let mut seg: Vec<_> = (start..m.after)
                .map(|i| (b.sync()[i], b.other()[i], b.payloads()[i]))
                .collect();
            seg.sort_by_key(|&(s, o, p)| (s, o, p));
            start = m.after;
            (m.time, seg)
        })
        .collect()
}

proptest! {
    #![proptest_config(cases(512))]

    #[test]
    fn ctis_are_monotone_and_never_violated(s in settings(), ops in prop::collection::vec(op(true), 0..60)) {
        let (ing, out) = run(&s, items(&ops));
        let b = &out.batch;
        let ctis: Vec<Time> = b.ctis().iter().map(|m| m.time).collect();
        // (a) strictly increasing.
        prop_assert!(ctis.windows(2).all(|w| w[0] < w[1]), "{ctis:?}");
        // (b) an event released just before CTI(t) has sync < t; after CTI(t), sync >= t.
        let mut prev = Time::NEG_INF;
        let mut start = 0;
        for m in b.ctis() {
            for i in start..m.after {
                prop_assert!(b.sync()[i] >= prev && b.sync()[i] < m.time,
                    "event {:?} released between CTI({prev:?}) and CTI({:?})", b.kind(i), m.time);
            }
            prev = m.time;
            start = m.after;
        }
        prop_assert_eq!(start, b.len(), "events are only released by a CTI");
        prop_assert_eq!(ing.app_time(), ctis.last().copied().unwrap_or(Time::NEG_INF));
        // Released lifetimes are well formed.
        for i in 0..b.len() {
            prop_assert!(b.kind(i).validate().is_ok(), "{:?}", b.kind(i));
        }
    }

    #[test]
    fn every_item_is_accounted_for_exactly_once(s in settings(), ops in prop::collection::vec(op(true), 0..60)) {
        let its = items(&ops);
        let n_events = its.iter().filter(|i| matches!(i, StreamItem::Insert(_))).count() as u64;
        let (mut ing, mut out) = run(&s, its);
        let before_close = ing.counters();
        prop_assert_eq!(before_close.events_in, n_events);
        prop_assert_eq!(
            before_close.released + before_close.dropped + before_close.rejected + before_close.buffered,
            n_events, "{:?}", before_close
        );
        ing.close(&mut out);
        let c = ing.counters();
        prop_assert_eq!(c.buffered, 0);
        prop_assert_eq!(c.released, out.batch.len() as u64);
        prop_assert_eq!(c.released + c.dropped + c.rejected + c.unreleased, n_events, "{:?}", c);
        // Every dropped event, every rejected item (events and CTIs) and every unreleased event
        // has a dead letter with the matching reason.
        let count = |f: fn(&DeadLetterReason) -> bool| out.dead_letters.iter().filter(|d| f(&d.reason)).count() as u64;
        prop_assert_eq!(count(|r| *r == DeadLetterReason::Late), c.dropped);
        prop_assert_eq!(count(|r| *r == DeadLetterReason::Unreleased), c.unreleased);
        prop_assert_eq!(count(|r| matches!(r, DeadLetterReason::Rejected(_))), c.rejected);
        // No payload is both released and dead-lettered, none twice.
        let mut seen: Vec<u32> = out.batch.payloads().to_vec();
        for d in &out.dead_letters {
            if let Some(StreamItem::Insert(e)) = &d.item {
                if !matches!(e.kind, EventKind::EndEdge { .. }) { seen.push(e.payload); }
            }
        }
        for i in 0..out.batch.len() {
            if matches!(out.batch.kind(i), EventKind::EndEdge { .. }) {
                let p = out.batch.payloads()[i];
                if let Some(pos) = seen.iter().rposition(|&x| x == p) { seen.remove(pos); }
            }
        }
        let mut sorted = seen.clone();
        sorted.sort_unstable();
        sorted.dedup();
        prop_assert_eq!(sorted.len(), seen.len(), "a payload was accounted for twice: {:?}", seen);
    }

    #[test]
    fn permuting_events_between_ctis_changes_no_segment(
        policy in prop_oneof![Just(None), Just(Some(AdvanceTimePolicy::Drop)), Just(Some(AdvanceTimePolicy::Adjust))],
        segs in prop::collection::vec((prop::collection::vec(op(false), 0..12), 1i64..15), 1..6),
        keys in prop::collection::vec(any::<u32>(), 80),
    ) {
        // Resolve end edges in the original order, then put explicit CTIs between segments.
        let mut flat_ops = Vec::new();
        let mut bounds = Vec::new();
        for (ops, _) in &segs {
            flat_ops.extend(ops.iter().cloned());
            bounds.push(flat_ops.len());
        }
        let resolved = items(&flat_ops);
        let mut original = Vec::new();
        let mut permuted = Vec::new();
        let mut cti = 0;
        let mut from = 0;
        for ((_, step), &to) in segs.iter().zip(&bounds) {
            let seg = &resolved[from..to];
            original.extend(seg.iter().cloned());
            let mut order: Vec<usize> = (0..seg.len()).collect();
            order.sort_by_key(|&i| keys[(from + i) % keys.len()]);
            let mut shuffled: Vec<StreamItem<u32>> = order.iter().map(|&i| seg[i].clone()).collect();
            // An end edge stays after its start edge.
            let mut i = 0;
            let mut moves = 0;
            while i < shuffled.len() && moves < 1000 {
                if let StreamItem::Insert(e) = &shuffled[i] {
                    if let EventKind::EndEdge { start, .. } = e.kind {
                        let p = e.payload;
                        let later_start = shuffled[i + 1..].iter().any(|x| matches!(x,
                            StreamItem::Insert(s) if s.kind == EventKind::StartEdge(start) && s.payload == p));
                        if later_start {
                            let end = shuffled.remove(i);
                            shuffled.push(end);
                            moves += 1;
                            continue;
                        }
                    }
                }
                i += 1;
            }
            permuted.extend(shuffled);
            cti += step;
            original.push(StreamItem::Cti(t(cti)));
            permuted.push(StreamItem::Cti(t(cti)));
            from = to;
        }
        let s = Settings { policy, generation: None };
        let (ia, a) = run(&s, original);
        let (ib, b) = run(&s, permuted);
        prop_assert_eq!(segments(&a), segments(&b));
        let (ca, cb) = (ia.counters(), ib.counters());
        prop_assert_eq!((ca.released, ca.dropped, ca.adjusted, ca.rejected, ca.buffered),
                        (cb.released, cb.dropped, cb.adjusted, cb.rejected, cb.buffered));
    }
}

/// A point time for the batched-path test, including the edges of the time line.
fn point_time() -> impl Strategy<Value = Time> {
    prop_oneof![
        12 => (-3i64..60).prop_map(t),
        1 => Just(Time::NEG_INF),
        1 => Just(Time::MIN_FINITE),
        1 => Just(Time::MAX_FINITE),
        1 => Just(Time::INF),
    ]
}

/// Generation settings for the batched-path test: by count (with a delay), by duration, none.
fn generation() -> impl Strategy<Value = Option<AdvanceTimeGenerationSettings>> {
    prop_oneof![
        (1u64..6, 0i64..10).prop_map(|(n, d)| Some(
            AdvanceTimeGenerationSettings::every_events(n)
                .delay(TimeSpan::from_ticks(d))
                .build()
                .expect("valid settings")
        )),
        (1i64..8, 0i64..10).prop_map(|(every, d)| Some(
            AdvanceTimeGenerationSettings::every_duration(TimeSpan::from_ticks(every))
                .delay(TimeSpan::from_ticks(d))
                .build()
                .expect("valid settings")
        )),
        Just(None),
    ]
}

proptest! {
    #![proptest_config(cases(256))]

    /// `enqueue_points` and `enqueue_point_columns` give exactly what enqueuing each point as
    /// an item gives: the same
    /// released events and CTIs, dead letters, counters and rejections (a full buffer
    /// included).
    #[test]
    fn batched_points_match_items_one_by_one(
        times in proptest::collection::vec(point_time(), 0..120),
        generation in generation(),
        policy in prop_oneof![Just(None), Just(Some(AdvanceTimePolicy::Drop)), Just(Some(AdvanceTimePolicy::Adjust))],
        max_buffered in prop_oneof![Just(1_000_000usize), 1usize..20],
        chunk in 1usize..40,
    ) {
        let config = IngressConfig { generation, policy, max_buffered, order: EventOrder::Sorted, ..IngressConfig::default() };
        let points: Vec<(Time, u32)> = times.iter().enumerate().map(|(i, &s)| (s, i as u32)).collect();

        let mut one = Ingress::new(config);
        let mut one_out = IngressOutput::new();
        let mut one_rejected = 0;
        let mut one_full = false;
        for &(s, p) in &points {
            match one.enqueue(StreamItem::point(s, p), &mut one_out) {
                Ok(_) => {}
                Err(punctual_policies::Error::BufferFull { .. }) => { one_full = true; break; }
                Err(_) => one_rejected += 1,
            }
        }
        one.finish(&mut one_out);

        let mut batched = Ingress::new(config);
        let mut batched_out = IngressOutput::new();
        let mut batched_rejected = 0;
        let mut batched_full = false;
        for part in points.chunks(chunk) {
            match batched.enqueue_points(part.iter().copied(), &mut batched_out) {
                Ok(summary) => batched_rejected += summary.rejected,
                Err(punctual_policies::Error::BufferFull { .. }) => { batched_full = true; break; }
                Err(e) => prop_assert!(false, "unexpected error {e}"),
            }
        }
        batched.finish(&mut batched_out);

        let mut columns = Ingress::new(config);
        let mut columns_out = IngressOutput::new();
        let mut columns_rejected = 0;
        let mut columns_full = false;
        for part in points.chunks(chunk) {
            let times: Vec<Time> = part.iter().map(|p| p.0).collect();
            let payloads: Vec<u32> = part.iter().map(|p| p.1).collect();
            match columns.enqueue_point_columns(&times, &payloads, &mut columns_out) {
                Ok(summary) => columns_rejected += summary.rejected,
                Err(punctual_policies::Error::BufferFull { .. }) => { columns_full = true; break; }
                Err(e) => prop_assert!(false, "unexpected error {e}"),
            }
        }
        columns.finish(&mut columns_out);

        let mut records = Ingress::new(config);
        let mut records_out = IngressOutput::new();
        let mut records_full = false;
        for part in points.chunks(chunk) {
            match records.enqueue_point_records(part, |p| p.0, |p| p.1, &mut records_out) {
                Ok(_) => {}
                Err(punctual_policies::Error::BufferFull { .. }) => { records_full = true; break; }
                Err(e) => prop_assert!(false, "unexpected error {e}"),
            }
        }
        records.finish(&mut records_out);
        prop_assert_eq!(one_full, records_full);
        prop_assert_eq!(
            columns_out.batch.items().map(|i| i.map(|p| *p)).collect::<Vec<_>>(),
            records_out.batch.items().map(|i| i.map(|p| *p)).collect::<Vec<_>>()
        );
        prop_assert_eq!(&columns_out.dead_letters, &records_out.dead_letters);
        prop_assert_eq!(columns.counters(), records.counters());

        prop_assert_eq!(one_full, columns_full);
        if !one_full {
            prop_assert_eq!(one_rejected, columns_rejected);
        }
        prop_assert_eq!(
            one_out.batch.items().map(|i| i.map(|p| *p)).collect::<Vec<_>>(),
            columns_out.batch.items().map(|i| i.map(|p| *p)).collect::<Vec<_>>()
        );
        prop_assert_eq!(&one_out.dead_letters, &columns_out.dead_letters);
        prop_assert_eq!(one.counters(), columns.counters());

        prop_assert_eq!(one_full, batched_full);
        if !one_full {
            // (A call that fails on a full buffer reports no count; the counters have it.)
            prop_assert_eq!(one_rejected, batched_rejected);
        }
        let released = |out: &IngressOutput<u32>| -> Vec<StreamItem<u32>> {
            out.batch.items().map(|i| i.map(|p| *p)).collect()
        };
        prop_assert_eq!(released(&one_out), released(&batched_out));
        prop_assert_eq!(one_out.dead_letters, batched_out.dead_letters);
        prop_assert_eq!(one.counters(), batched.counters());
    }

    /// Released on arrival, a stream of points carries the same events between the same CTIs
    /// as released in order (as multisets per CTI segment), with the same dead letters; the
    /// events after its last CTI are the ones the ordered ingress still holds. Enqueued one by
    /// one or as columns alike.
    #[test]
    fn on_arrival_release_has_the_ordered_segments(
        times in proptest::collection::vec(point_time(), 0..120),
        generation in generation(),
        policy in prop_oneof![Just(None), Just(Some(AdvanceTimePolicy::Drop)), Just(Some(AdvanceTimePolicy::Adjust))],
        chunk in 1usize..40,
        final_cti in proptest::bool::ANY,
    ) {
        let ordered_config = IngressConfig { generation, policy, ..IngressConfig::default() };
        let arrival_config = IngressConfig { order: EventOrder::Arrival, ..ordered_config };
        let points: Vec<(Time, u32)> = times.iter().enumerate().map(|(i, &s)| (s, i as u32)).collect();

        let mut ordered = Ingress::new(ordered_config);
        let mut ordered_out = IngressOutput::new();
        let mut each = Ingress::new(arrival_config);
        let mut each_out = IngressOutput::new();
        for &(s, p) in &points {
            let a = ordered.enqueue(StreamItem::point(s, p), &mut ordered_out).is_ok();
            let b = each.enqueue(StreamItem::point(s, p), &mut each_out).is_ok();
            prop_assert_eq!(a, b);
        }
        let mut columns = Ingress::new(arrival_config);
        let mut columns_out = IngressOutput::new();
        for part in points.chunks(chunk) {
            let times: Vec<Time> = part.iter().map(|p| p.0).collect();
            let payloads: Vec<u32> = part.iter().map(|p| p.1).collect();
            prop_assert!(columns.enqueue_point_columns(&times, &payloads, &mut columns_out).is_ok());
        }
        let mut records = Ingress::new(arrival_config);
        let mut records_out = IngressOutput::new();
        for part in points.chunks(chunk) {
            prop_assert!(records.enqueue_point_records(part, |p| p.0, |p| p.1, &mut records_out).is_ok());
        }
        if final_cti {
            ordered.finish(&mut ordered_out);
            each.finish(&mut each_out);
            columns.finish(&mut columns_out);
            records.finish(&mut records_out);
        }
        // Segments as (sorted events, closing CTI).
        type Segment = (Vec<(Time, Time, u32)>, Option<Time>);
        let segments = |out: &IngressOutput<u32>| -> Vec<Segment> {
            out.batch
                .segments()
                .map(|(range, cti)| {
                    let mut events: Vec<_> = range
                        .map(|i| (out.batch.sync()[i], out.batch.other()[i], out.batch.payloads()[i]))
                        .collect();
                    events.sort();
                    (events, cti)
                })
                .collect()
        };
        let held = ordered.counters().buffered as usize;
        let want = segments(&ordered_out);
        for out in [&each_out, &columns_out, &records_out] {
            // Released on arrival, an event may come before the CTI it will be under, but
            // never after a CTI above it.
            let mut cti = Time::NEG_INF;
            for item in out.batch.items() {
                match item {
                    StreamItem::Cti(t) => cti = t,
                    StreamItem::Insert(e) => prop_assert!(e.kind.encode().0 >= cti),
                }
            }
            // Put each event under the first CTI above it: the ordered segments, plus the
            // events the ordered ingress still holds after its last CTI.
            let marks: Vec<Time> = out.batch.segments().filter_map(|(_, c)| c).collect();
            let mut got: Vec<Segment> = marks.iter().map(|&c| (Vec::new(), Some(c))).collect();
            got.push((Vec::new(), None));
            for i in 0..out.batch.len() {
                let s = out.batch.sync()[i];
                let k = marks.partition_point(|&c| c <= s);
                got[k].0.push((s, out.batch.other()[i], out.batch.payloads()[i]));
            }
            for g in &mut got {
                g.0.sort();
            }
            let (tail, _) = got.pop().unwrap_or_default();
            prop_assert_eq!(tail.len(), held);
            // (The ordered ingress releases only at CTIs: nothing after its last one.)
            prop_assert!(want.last().is_none_or(|w| w.1.is_some()));
            prop_assert_eq!(&got, &want);
            prop_assert_eq!(&out.dead_letters, &ordered_out.dead_letters);
        }
        let (o, e, c) = (ordered.counters(), each.counters(), columns.counters());
        prop_assert_eq!(e, c);
        prop_assert_eq!((e.events_in, e.dropped, e.adjusted, e.rejected, e.ctis_out), (o.events_in, o.dropped, o.adjusted, o.rejected, o.ctis_out));
        prop_assert_eq!(e.released, o.released + held as u64);
    }

    /// A filter fused into the ingress (one, or a chain of two) gives what filtering its
    /// output gives: the same CTIs, the kept events in the same places, the same dead letters
    /// and the same counts, the refused events counted as `filtered`; in order or released on
    /// arrival, through every entry point (items, points, columns, records).
    #[test]
    fn a_fused_filter_is_the_filtered_output(
        times in proptest::collection::vec(point_time(), 0..120),
        generation in generation(),
        policy in prop_oneof![Just(None), Just(Some(AdvanceTimePolicy::Drop)), Just(Some(AdvanceTimePolicy::Adjust))],
        on_arrival in proptest::bool::ANY,
        chunk in 1usize..90,
        modulus in 1u32..4,
        chain in proptest::bool::ANY,
        entry in 0u8..4,
        final_cti in proptest::bool::ANY,
    ) {
        let config = IngressConfig { generation, policy, order: if on_arrival { EventOrder::Arrival } else { EventOrder::Sorted }, ..IngressConfig::default() };
        let points: Vec<(Time, u32)> = times.iter().enumerate().map(|(i, &s)| (s, i as u32)).collect();
        let first = move |p: &u32| p.is_multiple_of(modulus);
        let second = move |p: &u32| !chain || p % 5 != 2;
        let keep = |p: &u32| first(p) && second(p);

        let mut all = Ingress::new(config);
        let mut all_out = IngressOutput::new();
        let mut all_rejected = 0;
        let mut pushed = Ingress::new(config);
        pushed.fuse_filter(Box::new(first));
        if chain {
            pushed.fuse_filter(Box::new(second));
        }
        let mut pushed_out = IngressOutput::new();
        let mut pushed_rejected = 0;
        for part in points.chunks(chunk) {
            match all.enqueue_point_records(part, |p| p.0, |p| p.1, &mut all_out) {
                Ok(summary) => all_rejected += summary.rejected,
                Err(e) => prop_assert!(false, "unexpected error {e}"),
            }
            let summary = match entry {
                0 => pushed.enqueue_point_records(part, |p| p.0, |p| p.1, &mut pushed_out),
                1 => {
                    let (times, payloads): (Vec<Time>, Vec<u32>) = part.iter().copied().unzip();
                    pushed.enqueue_point_columns(&times, &payloads, &mut pushed_out)
                }
                2 => pushed.enqueue_points(part.iter().copied(), &mut pushed_out),
                _ => pushed.enqueue_items(part.iter().map(|&(t, p)| StreamItem::point(t, p)), &mut pushed_out),
            };
            match summary {
                Ok(summary) => pushed_rejected += summary.rejected,
                Err(e) => prop_assert!(false, "unexpected error {e}"),
            }
        }
        if final_cti {
            all.finish(&mut all_out);
            pushed.finish(&mut pushed_out);
        }
        let mut filtered = all_out.batch.clone();
        filtered.retain(keep);
        let items = |b: &Batch<u32>| -> Vec<StreamItem<u32>> { b.items().map(|i| i.map(|p| *p)).collect() };
        prop_assert_eq!(items(&pushed_out.batch), items(&filtered));
        prop_assert_eq!(&pushed_out.dead_letters, &all_out.dead_letters);
        prop_assert_eq!(pushed_rejected, all_rejected);
        let (a, p) = (all.counters(), pushed.counters());
        prop_assert_eq!(
            (a.events_in, a.dropped, a.adjusted, a.rejected, a.ctis_out, a.cti, a.max_start),
            (p.events_in, p.dropped, p.adjusted, p.rejected, p.ctis_out, p.cti, p.max_start)
        );
        prop_assert_eq!(p.events_in, p.released + p.dropped + p.rejected + p.buffered + p.unreleased + p.filtered);
        // A refused event is held until a CTI passes it, as in front of the filter: filtered
        // are exactly the events the unfiltered stream released that the filter refused.
        prop_assert_eq!(p.buffered, a.buffered);
        prop_assert_eq!(p.filtered, a.released - p.released);
        prop_assert_eq!(p.released, filtered.len() as u64);
        // Closed, what no CTI passed is unreleased, refused or not, and dead-lettered alike: a
        // kept event with its item, a refused one without (only its times were kept).
        let (a_letters, p_letters) = (all_out.dead_letters.len(), pushed_out.dead_letters.len());
        all.close(&mut all_out);
        pushed.close(&mut pushed_out);
        let unreleased = |letters: &[punctual_policies::DeadLetter<u32>], keeps: bool| {
            let mut held: Vec<(Time, u32)> = letters
                .iter()
                .filter_map(|d| match (&d.reason, &d.item) {
                    (DeadLetterReason::Unreleased, Some(StreamItem::Insert(e))) if !keeps || keep(&e.payload) => Some((e.kind.start(), e.payload)),
                    _ => None,
                })
                .collect();
            held.sort();
            held
        };
        let (all_closed, pushed_closed) = (&all_out.dead_letters[a_letters..], &pushed_out.dead_letters[p_letters..]);
        prop_assert_eq!(unreleased(pushed_closed, false), unreleased(all_closed, true));
        let without_item = pushed_closed.iter().filter(|d| d.reason == DeadLetterReason::Unreleased && d.item.is_none()).count();
        prop_assert_eq!(without_item + unreleased(pushed_closed, false).len(), unreleased(all_closed, false).len());
        let (a, p) = (all.counters(), pushed.counters());
        prop_assert_eq!((p.unreleased, p.buffered), (a.unreleased, 0));
        prop_assert_eq!(p.events_in, p.released + p.dropped + p.rejected + p.unreleased + p.filtered);
    }
}

#[test]
fn edges_are_rejected_when_released_on_arrival() {
    let t = Time::from_ticks;
    let mut ingress: Ingress<u32> = Ingress::new(IngressConfig {
        order: EventOrder::Arrival,
        policy: Some(AdvanceTimePolicy::Drop),
        ..IngressConfig::default()
    });
    let mut out = IngressOutput::new();
    assert_eq!(
        ingress.enqueue(StreamItem::start_edge(t(1), 7), &mut out),
        Err(punctual_policies::Error::EdgeOnArrival)
    );
    assert_eq!(
        ingress.enqueue(StreamItem::interval(t(2), t(5), 8), &mut out),
        Ok(punctual_policies::Enqueued::Accepted)
    );
    assert_eq!(
        out.batch.payloads(),
        &[8],
        "released at once, before any CTI"
    );
    assert_eq!(ingress.counters().rejected, 1);
    assert_eq!(out.dead_letters.len(), 1);
}

proptest! {
    #![proptest_config(cases(256))]

    /// `enqueue_items` on blocks of mixed items (points in runs through the bulk loop, the
    /// rest one by one) gives exactly what `enqueue` on each item gives, on both orders and
    /// with or without a fused filter: the same released events and CTIs, dead letters,
    /// counters, summaries and rejections (a full buffer included).
    #[test]
    fn blocks_of_items_match_items_one_by_one(
        ops in proptest::collection::vec(op(true), 0..150),
        settings in settings(),
        arrival in any::<bool>(),
        filter in any::<bool>(),
        max_buffered in prop_oneof![Just(1_000_000usize), 1usize..20],
        block in 1usize..40,
    ) {
        let config = IngressConfig {
            policy: settings.policy,
            generation: settings.generation,
            max_buffered,
            order: if arrival { EventOrder::Arrival } else { EventOrder::Sorted },
            ..IngressConfig::default()
        };
        let all = items(&ops);
        blocks_match(&all, config, filter.then_some(|p: &u32| p % 3 != 1), block)?;
        // Payloads with drop glue take another path of the bulk loop (moved, not copied).
        let text: Vec<StreamItem<String>> = all.iter().map(|i| i.clone().map(|p| p.to_string())).collect();
        let keep = |p: &String| p.parse::<u32>().map_or(true, |v| v % 3 != 1);
        blocks_match(&text, config, filter.then_some(keep), block)?;
    }
}

/// `enqueue_items` on blocks of `block` items gives what `enqueue` on each gives: see
/// `blocks_of_items_match_items_one_by_one`.
fn blocks_match<P: Clone + PartialEq + std::fmt::Debug + Send + Sync + 'static>(
    all: &[StreamItem<P>],
    config: IngressConfig,
    filter: Option<impl Fn(&P) -> bool + Clone + Send + Sync + 'static>,
    block: usize,
) -> Result<(), TestCaseError> {
    let make = || {
        let mut ingress = Ingress::new(config);
        if let Some(f) = filter.clone() {
            ingress.fuse_filter(Box::new(f));
        }
        ingress
    };
    let (mut one, mut one_out) = (make(), IngressOutput::new());
    let (mut one_summary, mut one_full) = (punctual_policies::EnqueueSummary::default(), false);
    for item in all.iter().cloned() {
        let r = one.enqueue(item, &mut one_out);
        if matches!(r, Err(punctual_policies::Error::BufferFull { .. })) {
            one_full = true;
            break;
        }
        let _ = one_summary.record(r);
    }
    one.finish(&mut one_out);

    let (mut blocks, mut blocks_out) = (make(), IngressOutput::new());
    let (mut blocks_summary, mut blocks_full) =
        (punctual_policies::EnqueueSummary::default(), false);
    for part in all.chunks(block) {
        match blocks.enqueue_items(part.iter().cloned(), &mut blocks_out) {
            Ok(s) => blocks_summary.add(s),
            Err(punctual_policies::Error::BufferFull { .. }) => {
                blocks_full = true;
                break;
            }
            Err(e) => prop_assert!(false, "unexpected error {e}"),
        }
    }
    blocks.finish(&mut blocks_out);

    prop_assert_eq!(one_full, blocks_full);
    let released = |out: &IngressOutput<P>| -> Vec<StreamItem<P>> {
        out.batch.items().map(|i| i.map(P::clone)).collect()
    };
    prop_assert_eq!(released(&one_out), released(&blocks_out));
    prop_assert_eq!(&one_out.dead_letters, &blocks_out.dead_letters);
    prop_assert_eq!(one.counters(), blocks.counters());
    if !one_full {
        // (A call that fails on a full buffer reports no summary; the counters have it.)
        prop_assert_eq!(one_summary, blocks_summary);
    }
    Ok(())
}

proptest! {
    #![proptest_config(cases(256))]

    /// Matching end edges through an edge key gives exactly what the scan gives (equal payloads
    /// have equal keys; here many payloads share a key, and many edges share a start).
    #[test]
    fn an_edge_key_matches_as_the_scan_does(
        ops in proptest::collection::vec(op(true), 0..150),
        settings in settings(),
    ) {
        let config = IngressConfig {
            policy: settings.policy,
            generation: settings.generation,
            ..IngressConfig::default()
        };
        // Payloads repeat (p % 5), so equal payloads at one start exist too.
        let all: Vec<StreamItem<u32>> = items(&ops).into_iter().map(|i| i.map(|p| p % 5)).collect();
        let run = |keyed: bool| {
            let mut ingress = Ingress::new(config);
            if keyed {
                ingress.index_edges_by(std::sync::Arc::new(|p: &u32| u64::from(*p % 2)));
            }
            let mut out = IngressOutput::new();
            let results: Vec<bool> = all
                .iter()
                .cloned()
                .map(|item| ingress.enqueue(item, &mut out).is_ok())
                .collect();
            ingress.finish(&mut out);
            let released: Vec<StreamItem<u32>> = out.batch.items().map(|i| i.map(|p| *p)).collect();
            (results, released, out.dead_letters, ingress.counters())
        };
        prop_assert_eq!(run(true), run(false));
    }
}
