//! Every operator against a plain, slow reference written here (recompute from all events), on
//! random inputs whose events are permuted between CTIs and put in order by the real ingress.
//!
//! For each run: the output obeys the guarantees (CTIs strictly increase, nothing violates a CTI
//! already emitted, it ends with `CTI(+inf)` once); its results, with start/end edge pairs folded
//! into lifetimes, equal the reference's; and where the operator's CTI rule is a function of the
//! input CTIs, each result sits in the segment its sync time puts it in. Two permutations of the
//! same input give the same output, segment by segment.

use std::collections::HashMap;

use proptest::prelude::*;

use punctual::core::ops::{Count, Stream, Sum, WindowOutput};
use punctual::core::{Batch, EventKind, EventShape, Ordered, StreamItem, Time, TimeSpan};
use punctual::engine::{InputId, InputOptions, Plan};

/// A payload: a unique id, a group key and a value.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
struct Pl {
    id: u32,
    key: u8,
    v: i64,
}

/// An input event: `[s, e)`; `e = None` is a start edge never closed. `edge` says whether it
/// arrives as a start edge (and an end edge, if closed).
#[derive(Clone, Copy, Debug)]
struct Ev {
    s: i64,
    e: Option<i64>,
    edge: bool,
    p: Pl,
}

const INF: i64 = i64::MAX;

fn ev_strategy(open_edges: bool) -> impl Strategy<Value = (i64, i64, u8, u8, i64)> {
    // start, length, kind (0 point, 1 interval, 2 closed edge, 3 open edge), key, value
    let kinds = if open_edges { 0u8..4 } else { 0u8..3 };
    (0i64..80, 1i64..25, kinds, 0u8..3, -5i64..20)
}

#[derive(Clone, Debug)]
struct Input {
    events: Vec<Ev>,
    ctis: Vec<i64>,
}

fn input_strategy(open_edges: bool, id_base: u32) -> impl Strategy<Value = Input> {
    (
        prop::collection::vec(ev_strategy(open_edges), 0..25),
        prop::collection::btree_set(1i64..110, 0..8),
    )
        .prop_map(move |(raw, ctis)| {
            let events = raw
                .into_iter()
                .enumerate()
                .map(|(i, (s, len, kind, key, v))| Ev {
                    s,
                    e: match kind {
                        0 => Some(s + 1),
                        3 => None,
                        _ => Some(s + len),
                    },
                    edge: kind >= 2,
                    p: Pl {
                        id: id_base + i as u32,
                        key,
                        v,
                    },
                })
                .collect();
            Input {
                events,
                ctis: ctis.into_iter().collect(),
            }
        })
}

/// The arrivals of an input: each item in the segment its sync time falls in, segments shuffled
/// by `seed`, each closed by its CTI, then `CTI(+inf)`.
fn arrivals(input: &Input, seed: u64) -> Vec<StreamItem<Pl>> {
    let t = Time::from_ticks;
    let mut items: Vec<(i64, StreamItem<Pl>)> = Vec::new();
    for ev in &input.events {
        match (ev.edge, ev.e) {
            (false, Some(e)) => items.push((ev.s, StreamItem::interval(t(ev.s), t(e), ev.p))),
            (true, end) => {
                items.push((ev.s, StreamItem::start_edge(t(ev.s), ev.p)));
                if let Some(e) = end {
                    items.push((e, StreamItem::end_edge(t(ev.s), t(e), ev.p)));
                }
            }
            (false, None) => unreachable!("open events are edges"),
        }
    }
    let mut out = Vec::new();
    let mut from = i64::MIN;
    let mut state = seed | 1;
    for &c in input.ctis.iter().chain(std::iter::once(&INF)) {
        let mut seg: Vec<(u64, usize, StreamItem<Pl>)> = items
            .iter()
            .enumerate()
            .filter(|(_, (sync, _))| *sync >= from && *sync < c)
            .map(|(i, (_, item))| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state, i, item.clone())
            })
            .collect();
        seg.sort_by_key(|x| x.0);
        // An end edge stays after its start edge.
        seg.sort_by_key(|x| matches!(x.2, StreamItem::Insert(ref e) if matches!(e.kind, EventKind::EndEdge { .. })));
        out.extend(seg.into_iter().map(|x| x.2));
        out.push(StreamItem::Cti(if c == INF { Time::INF } else { t(c) }));
        from = c;
    }
    out
}

/// `n` edge inputs `in0`, `in1`, ... of `plan`: their ids and streams.
fn edge_inputs(plan: &mut Plan, n: usize) -> (Vec<InputId<Pl>>, Vec<Stream<Pl>>) {
    let input = |k| InputOptions::new(format!("in{k}"), EventShape::Edge);
    let inputs = (0..n).map(|k| plan.input::<Pl, Ordered>(input(k)).expect("a valid input"));
    inputs.unzip()
}

/// Runs arrivals of one or two inputs through the query driver; the second input's items are
/// interleaved after every first-input item (a fixed interleaving).
fn run<O: punctual::core::ops::Payload>(
    inputs: &[Vec<StreamItem<Pl>>],
    build: impl FnOnce(&[Stream<Pl>]) -> Stream<O>,
) -> Vec<StreamItem<O>> {
    let mut plan = Plan::new("operators");
    let (ids, sources) = edge_inputs(&mut plan, inputs.len());
    let output = plan.output(build(&sources)).expect("a stream of the plan");
    let mut driver = plan.build().expect("a valid plan");
    let longest = inputs.iter().map(Vec::len).max().unwrap_or(0);
    for step in 0..longest {
        for (k, items) in inputs.iter().enumerate() {
            if let Some(item) = items.get(step) {
                driver
                    .enqueue(ids[k], item.clone())
                    .expect("generated inputs are valid");
            }
        }
    }
    let mut batch = Batch::new();
    driver.take_output(&output, &mut batch);
    let mut items = Vec::new();
    batch.drain_items(|i| items.push(i));
    items
}

type Life<O> = (i64, i64, O);

fn ticks(t: Time) -> i64 {
    t.ticks()
}

/// Checks the guarantees and folds start/end edge pairs into lifetimes; returns the output CTIs
/// and the results with the index of the segment their start was released in.
fn fold<O: Clone + PartialEq + std::fmt::Debug>(
    items: &[StreamItem<O>],
) -> (Vec<i64>, Vec<(usize, Life<O>)>) {
    let mut ctis: Vec<i64> = Vec::new();
    let mut results: Vec<(usize, Life<O>)> = Vec::new();
    let mut open: Vec<(usize, i64, O)> = Vec::new();
    for item in items {
        let last = ctis.last().copied().unwrap_or(i64::MIN);
        match item {
            StreamItem::Cti(t) => {
                assert!(ticks(*t) > last, "CTIs must strictly increase: {items:?}");
                ctis.push(ticks(*t));
            }
            StreamItem::Insert(e) => {
                assert!(
                    ticks(e.kind.sync_time()) >= last,
                    "{e:?} violates CTI {last}"
                );
                let seg = ctis.len();
                match e.kind {
                    EventKind::StartEdge(s) => open.push((seg, ticks(s), e.payload.clone())),
                    EventKind::EndEdge { start, end } => {
                        let pos = open
                            .iter()
                            .position(|(_, s, p)| *s == ticks(start) && *p == e.payload)
                            .expect("an end edge closes an emitted start edge");
                        let (seg, s, p) = open.remove(pos);
                        results.push((seg, (s, ticks(end), p)));
                    }
                    kind => {
                        let (s, o) = kind.encode();
                        results.push((seg, (ticks(s), ticks(o), e.payload.clone())));
                    }
                }
            }
        }
    }
    assert_eq!(
        ctis.last(),
        Some(&INF),
        "the output ends with CTI(+inf): {items:?}"
    );
    assert_eq!(ctis.iter().filter(|&&c| c == INF).count(), 1);
    results.extend(open.into_iter().map(|(seg, s, p)| (seg, (s, INF, p))));
    (ctis, results)
}

/// Sorts for multiset comparison.
fn sorted<O: PartialOrd + Clone>(mut v: Vec<O>) -> Vec<O> {
    v.sort_by(|a, b| a.partial_cmp(b).expect("comparable"));
    v
}

/// Asserts the output's results equal the reference's (as multisets), and, when `ctis` is
/// given, that the output CTIs are those and each result sits in the segment of its sync time.
fn check<O: Clone + PartialEq + PartialOrd + std::fmt::Debug>(
    items: &[StreamItem<O>],
    reference: Vec<Life<O>>,
    ctis: Option<Vec<i64>>,
    sync_of: impl Fn(&Life<O>) -> i64,
) -> Result<(), TestCaseError> {
    let (got_ctis, got) = fold(items);
    let lifetimes: Vec<Life<O>> = got.iter().map(|(_, l)| l.clone()).collect();
    prop_assert_eq!(
        sorted(lifetimes),
        sorted(reference),
        "results differ; output: {:?}",
        items
    );
    if let Some(expected) = ctis {
        prop_assert_eq!(&got_ctis, &expected, "output CTIs");
        for (seg, life) in &got {
            let want = expected.iter().filter(|&&c| c <= sync_of(life)).count();
            prop_assert_eq!(*seg, want, "{:?} released in the wrong segment", life);
        }
    }
    Ok(())
}

/// The CTIs an ingress emits for an input (explicit, strictly increasing, then +inf).
fn input_ctis(input: &Input) -> Vec<i64> {
    input
        .ctis
        .iter()
        .copied()
        .chain(std::iter::once(INF))
        .collect()
}

/// The output CTIs of a min-of-inputs rule under the fixed interleaving of [`run`].
fn min_ctis(a: &[StreamItem<Pl>], b: &[StreamItem<Pl>]) -> Vec<i64> {
    let (mut ca, mut cb, mut out) = (i64::MIN, i64::MIN, Vec::new());
    for step in 0..a.len().max(b.len()) {
        for (k, items) in [a, b].into_iter().enumerate() {
            if let Some(StreamItem::Cti(t)) = items.get(step) {
                if k == 0 {
                    ca = ticks(*t)
                } else {
                    cb = ticks(*t)
                }
                let m = ca.min(cb);
                if out.last().is_none_or(|&l| m > l) && m > i64::MIN {
                    out.push(m);
                }
            }
        }
    }
    out
}

fn life(ev: &Ev) -> (i64, i64) {
    (ev.s, ev.e.unwrap_or(INF))
}

fn window_reference(
    events: &[Ev],
    size: i64,
    hop: i64,
    output: WindowOutput,
) -> Vec<Life<(u8, (u64, f64))>> {
    let mut out = Vec::new();
    if events.is_empty() {
        return out;
    }
    let lo = events
        .iter()
        .map(|e| e.s)
        .min()
        .unwrap_or(0)
        .div_euclid(hop)
        - size / hop
        - 2;
    let hi = events
        .iter()
        .map(|e| life(e).1)
        .max()
        .unwrap_or(0)
        .div_euclid(hop)
        + 2;
    for n in lo..=hi {
        let (ws, we) = (n * hop, n * hop + size);
        let mut groups: HashMap<u8, (u64, f64)> = HashMap::new();
        for ev in events {
            let (s, e) = life(ev);
            if s < we && e > ws {
                let g = groups.entry(ev.p.key).or_default();
                g.0 += 1;
                g.1 += ev.p.v as f64;
            }
        }
        for (k, v) in groups {
            out.push(match output {
                WindowOutput::PointAtEnd => (we, we + 1, (k, v)),
                WindowOutput::Window => (ws, we, (k, v)),
                WindowOutput::PointAtLastTick => (we - 1, we, (k, v)),
            });
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn filter_map_shift_alter(input in input_strategy(true, 0), seed in any::<u64>(), d in -20i64..20) {
        let a = arrivals(&input, seed);
        let evs = &input.events;
        let out = run(std::slice::from_ref(&a), |s| s[0].filter(|p| p.v % 2 == 0));
        let reference = evs.iter().filter(|e| e.p.v % 2 == 0).map(|e| (life(e).0, life(e).1, e.p)).collect();
        check(&out, reference, Some(input_ctis(&input)), |l| l.0)?;

        // Two filters on one source: the first reads the batch, the last owns (compacts) it.
        let out = run(std::slice::from_ref(&a), |s| {
            s[0].filter(|p| p.v % 2 == 0).union(&[&s[0].filter(|p| p.v % 3 == 0)])
        });
        let reference = evs
            .iter()
            .filter(|e| e.p.v % 2 == 0)
            .chain(evs.iter().filter(|e| e.p.v % 3 == 0))
            .map(|e| (life(e).0, life(e).1, e.p))
            .collect();
        check(&out, reference, Some(input_ctis(&input)), |l| l.0)?;

        let out = run(std::slice::from_ref(&a), |s| s[0].map(|p| p.v * 3));
        let reference = evs.iter().map(|e| (life(e).0, life(e).1, e.p.v * 3)).collect();
        check(&out, reference, Some(input_ctis(&input)), |l| l.0)?;

        let out = run(std::slice::from_ref(&a), move |s| s[0].shift(TimeSpan::from_ticks(d)));
        let reference = evs.iter().map(|e| (e.s + d, e.e.map_or(INF, |x| x + d), e.p)).collect();
        let shifted = input_ctis(&input).into_iter().map(|c| if c == INF { c } else { c + d }).collect();
        check(&out, reference, Some(shifted), |l| l.0)?;

        let out = run(&[a], |s| s[0].alter_duration(TimeSpan::from_ticks(4)));
        let reference = evs.iter().map(|e| (e.s, e.s + 4, e.p)).collect();
        check(&out, reference, Some(input_ctis(&input)), |l| l.0)?;
    }

    #[test]
    fn union_and_join(l in input_strategy(true, 0), r in input_strategy(true, 1000), s1 in any::<u64>(), s2 in any::<u64>()) {
        let (a, b) = (arrivals(&l, s1), arrivals(&r, s2));
        let ctis = min_ctis(&a, &b);
        let out = run(&[a.clone(), b.clone()], |s| s[0].union(&[&s[1]]));
        let reference = l.events.iter().chain(&r.events).map(|e| (life(e).0, life(e).1, e.p)).collect();
        check(&out, reference, Some(ctis.clone()), |x| x.0)?;

        let out = run(&[a.clone(), b.clone()], |s| s[0].join_on(&s[1], |p| p.key, |p| p.key, |x, y| (*x, *y)));
        let mut reference = Vec::new();
        for x in &l.events {
            for y in &r.events {
                let (xs, xe) = life(x);
                let (ys, ye) = life(y);
                if x.p.key == y.p.key && xs < ye && ys < xe {
                    reference.push((xs.max(ys), xe.min(ye), (x.p, y.p)));
                }
            }
        }
        check(&out, reference, Some(ctis), |x| x.0)?;
        // The same input permuted differently between CTIs: the same output, segment by segment.
        let again = run(&[arrivals(&l, s1 ^ 0x9e37), arrivals(&r, s2 ^ 0x79b9)], |s| s[0].join_on(&s[1], |p| p.key, |p| p.key, |x, y| (*x, *y)));
        let (c1, r1) = fold(&out);
        let (c2, r2) = fold(&again);
        prop_assert_eq!(c1, c2);
        prop_assert_eq!(sorted(r1), sorted(r2));
    }

    #[test]
    fn anti_join_and_clip(l in input_strategy(false, 0), r in input_strategy(true, 1000), s1 in any::<u64>(), s2 in any::<u64>()) {
        let (a, b) = (arrivals(&l, s1), arrivals(&r, s2));
        let out = run(&[a.clone(), b.clone()], |s| s[0].anti_join_on(&s[1], |p| p.key, |p| p.key));
        let mut reference = Vec::new();
        for x in &l.events {
            let (xs, xe) = life(x);
            for t in xs..xe {
                let covered = r.events.iter().any(|y| y.p.key == x.p.key && life(y).0 <= t && t < life(y).1);
                if !covered {
                    match reference.last_mut() {
                        Some((_, e, p)) if *e == t && *p == x.p => *e = t + 1,
                        _ => reference.push((t, t + 1, x.p)),
                    }
                }
            }
        }
        check(&out, reference, None, |x| x.0)?;

        let out = run(&[a, b], |s| s[0].clip_duration_on(&s[1], |p| p.key, |p| p.key));
        let reference = l.events.iter().map(|x| {
            let (xs, xe) = life(x);
            let clip = r.events.iter().filter(|y| y.p.key == x.p.key && y.s > xs && y.s < xe).map(|y| y.s).min();
            (xs, clip.unwrap_or(xe), x.p)
        }).collect();
        check(&out, reference, None, |x| x.0)?;
    }

    #[test]
    fn hopping_windows(input in input_strategy(false, 0), seed in any::<u64>(), size in 1i64..25, hop_div in 1i64..5) {
        let hop = (size / hop_div).max(1);
        let a = arrivals(&input, seed);
        for output in [WindowOutput::PointAtEnd, WindowOutput::Window, WindowOutput::PointAtLastTick] {
            let out = run(std::slice::from_ref(&a), move |s| {
                s[0].hopping_window(TimeSpan::from_ticks(size), TimeSpan::from_ticks(hop))
                    .output(output)
                    .group_by(|p| p.key)
                    .aggregate((Count, Sum::of(|p: &Pl| p.v as f64)))
            });
            let reference = window_reference(&input.events, size, hop, output);
            let ctis: Vec<i64> = match output {
                WindowOutput::PointAtEnd | WindowOutput::PointAtLastTick => input_ctis(&input),
                WindowOutput::Window => {
                    let mut v: Vec<i64> = Vec::new();
                    for c in input_ctis(&input) {
                        // The earliest window that can still change: the first ending after c.
                        let first = if c == INF { INF } else { ((c - size).div_euclid(hop) + 1) * hop };
                        let t = c.min(first);
                        if v.last().is_none_or(|&l| t > l) { v.push(t); }
                    }
                    v
                }
            };
            check(&out, reference, Some(ctis), |x| x.0)?;
        }
    }

    #[test]
    fn snapshot_and_count_windows(input in input_strategy(false, 0), seed in any::<u64>(), n in 1usize..4) {
        let a = arrivals(&input, seed);
        let out = run(std::slice::from_ref(&a), |s| s[0].snapshot_window().group_by(|p| p.key).aggregate(Count));
        let mut points: Vec<i64> = input.events.iter().flat_map(|e| [life(e).0, life(e).1]).collect();
        points.sort_unstable();
        points.dedup();
        let mut reference = Vec::new();
        for w in points.windows(2) {
            let mut groups: HashMap<u8, u64> = HashMap::new();
            for e in &input.events {
                if life(e).0 <= w[0] && life(e).1 >= w[1] {
                    *groups.entry(e.p.key).or_default() += 1;
                }
            }
            reference.extend(groups.into_iter().map(|(k, c)| (w[0], w[1], (k, c))));
        }
        check(&out, reference, None, |x| x.0)?;

        let out = run(&[a], move |s| s[0].count_window(n).group_by(|p| p.key).aggregate(Count));
        let mut reference = Vec::new();
        for key in 0u8..3 {
            let mut starts: Vec<i64> = input.events.iter().filter(|e| e.p.key == key).map(|e| e.s).collect();
            starts.sort_unstable();
            starts.dedup();
            for w in starts.windows(n) {
                let members = input.events.iter().filter(|e| e.p.key == key && w.contains(&e.s)).count() as u64;
                let end = w[n - 1] + 1;
                reference.push((end, end + 1, (key, members)));
            }
        }
        check(&out, reference, Some(input_ctis(&input)), |x| x.0)?;
    }

    #[test]
    fn group_apply_matches_grouped_windows(input in input_strategy(false, 0), seed in any::<u64>(), size in 1i64..20) {
        let a = arrivals(&input, seed);
        let out = run(&[a], move |s| {
            s[0].group_apply(|p| p.key, move |k, g| {
                let k = *k;
                g.tumbling_window(TimeSpan::from_ticks(size))
                    .output(WindowOutput::Window)
                    .aggregate((Count, Sum::of(|p: &Pl| p.v as f64)))
                    .map(move |v| (k, *v))
            })
        });
        let reference = window_reference(&input.events, size, size, WindowOutput::Window);
        check(&out, reference, None, |x| x.0)?;
    }
}

/// A query cut short (a prefix of its inputs, no final CTI): what every operator reports it
/// holds (the engine's `for_each_held`) is exactly what
/// it counts in its state, each with a lifetime that is not empty.
fn held_matches_state(
    inputs: &[Vec<StreamItem<Pl>>],
    build: impl FnOnce(&[Stream<Pl>]) -> Stream<Pl>,
) -> Result<(), TestCaseError> {
    let ended = inputs
        .iter()
        .all(|items| items.last() == Some(&StreamItem::Cti(Time::INF)));
    let mut plan = Plan::new("held");
    let (ids, sources) = edge_inputs(&mut plan, inputs.len());
    plan.output(build(&sources)).expect("a stream of the plan");
    let mut driver = plan.build().expect("a valid plan");
    for (k, items) in inputs.iter().enumerate() {
        for item in items {
            driver
                .enqueue(ids[k], item.clone())
                .expect("generated inputs are valid");
        }
    }
    let mut counted: HashMap<usize, (usize, &'static str)> = HashMap::new();
    driver.for_each_operator(|n| {
        counted.insert(n.node, (n.state, n.operator));
    });
    let mut visited: HashMap<usize, usize> = HashMap::new();
    let mut bad = Vec::new();
    driver.for_each_held(|n, h| {
        *visited.entry(n.node).or_default() += 1;
        if h.start >= h.end {
            bad.push((n.operator, h.what, h.start, h.end));
        }
    });
    prop_assert!(bad.is_empty(), "empty lifetimes: {bad:?}");
    for (node, (state, operator)) in counted {
        prop_assert_eq!(
            visited.get(&node).copied().unwrap_or(0),
            state,
            "{} {}",
            operator,
            node
        );
        if ended {
            prop_assert_eq!(
                state,
                0,
                "{} {} holds state after CTI(+inf)",
                operator,
                node
            );
        }
    }
    Ok(())
}

/// Cuts arrivals after `keep` items (the final CTI never comes).
fn prefix(items: Vec<StreamItem<Pl>>, keep: usize) -> Vec<StreamItem<Pl>> {
    items.into_iter().take(keep).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn what_operators_hold_is_what_they_count(l in input_strategy(true, 0), r in input_strategy(true, 1000), s1 in any::<u64>(), s2 in any::<u64>(), cut in 0usize..80) {
        // `cut` past the end: every input ends with CTI(+inf), and nothing may be held.
        let (a, b) = (prefix(arrivals(&l, s1), cut), prefix(arrivals(&r, s2), cut / 2 + 3 + cut / 40 * 40));
        let two = [a.clone(), b.clone()];
        let one = std::slice::from_ref(&a);
        held_matches_state(&two, |s| s[0].join_on(&s[1], |p| p.key, |p| p.key, |x, _| *x))?;
        held_matches_state(&two, |s| s[0].anti_join_on(&s[1], |p| p.key, |p| p.key))?;
        held_matches_state(&two, |s| s[0].clip_duration_on(&s[1], |p| p.key, |p| p.key))?;
        held_matches_state(&two, |s| s[0].union(&[&s[1]]))?;
        held_matches_state(one, |s| {
            s[0].hopping_window(TimeSpan::from_ticks(10), TimeSpan::from_ticks(3))
                .group_by(|p| p.key)
                .aggregate(Count)
                .map(|(k, c)| Pl { id: 0, key: *k, v: *c as i64 })
        })?;
        held_matches_state(one, |s| {
            s[0].snapshot_window().group_by(|p| p.key).aggregate(Count)
                .map(|(k, c)| Pl { id: 0, key: *k, v: *c as i64 })
        })?;
        held_matches_state(one, |s| {
            s[0].count_window(2).group_by(|p| p.key).aggregate(Count)
                .map(|(k, c)| Pl { id: 0, key: *k, v: *c as i64 })
        })?;
        held_matches_state(one, |s| {
            s[0].group_apply(|p| p.key, |_, g| {
                g.tumbling_window(TimeSpan::from_ticks(7)).aggregate(Count).map(|c| Pl { id: 0, key: 0, v: *c as i64 })
            })
        })?;
    }
}

/// A left start edge that never ends lasts forever once the left input has ended: at the
/// final CTI the anti-semi-join emits what no right event covers (before, it held the edge
/// for good and its output CTI never reached `+inf`).
#[test]
fn an_open_left_edge_is_anti_joined_at_the_end() {
    let t = Time::from_ticks;
    let p = Pl {
        id: 1,
        key: 0,
        v: 0,
    };
    let q = Pl {
        id: 2,
        key: 0,
        v: 0,
    };
    let left = vec![StreamItem::start_edge(t(0), p), StreamItem::Cti(Time::INF)];
    let right = vec![
        StreamItem::interval(t(3), t(5), q),
        StreamItem::Cti(Time::INF),
    ];
    let out = run(&[left, right], |s| {
        s[0].anti_join_on(&s[1], |p| p.key, |p| p.key)
    });
    assert_eq!(
        out,
        vec![
            StreamItem::interval(t(0), t(3), p),
            StreamItem::start_edge(t(5), p),
            StreamItem::Cti(Time::INF),
        ]
    );
}
