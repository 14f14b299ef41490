//! Random queries run on the local runtime and on the cluster executor
//! (`punctual::cluster::run_query`), shared by `tests/cluster_query.rs`, `tests/cluster.rs`
//! and the `split-cases` program the latter starts as processes.
//!
//! A [`Case`] is a query shape with its inputs (items in arrival order). Many cases run as one
//! query ([`queries`]): each case's inputs and output are its own, so that one run of the
//! cluster (one connection of its processes) checks them all.

use punctual::adapters::{CollectOutput, MemoryInput};
use punctual::core::ops::{Count, Stream, Sum, WindowOutput};
use punctual::core::{EventShape, StreamItem, Time, TimeSpan};
use punctual::engine::InputOptions;
use punctual::policies::{AdvanceTimeGenerationSettings, AdvanceTimePolicy, AdvanceTimeSettings};
use punctual::runtime::{OutputAdapterFactory, Query, QueryError, QueryReport};
use serde::{Deserialize, Serialize};

/// A payload: a unique id, a group key and a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Pl {
    /// Unique per input event.
    pub id: u32,
    /// A group key.
    pub key: u8,
    /// A value.
    pub v: i64,
}

/// A query over one or two inputs of [`Pl`]; every result is shown as text (one output type
/// for every shape).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Shape {
    /// Filter and map on the first input, unioned with the second shifted.
    StatelessUnion,
    /// An equijoin by key, then hopping windows per another key.
    JoinThenWindow,
    /// Tumbling windows per key (window lifetimes), of this size.
    TumblingPerKey(i64),
    /// Hopping windows over all keys (a sum), of this size and a hop of 1.
    HoppingAll(i64),
    /// Snapshot windows per key (boundaries from every key's events).
    SnapshotPerKey,
    /// Count windows of 2 events per key.
    CountPerKey,
    /// Left anti-semi-join by key.
    AntiJoin,
    /// Clip each left event at the next right event of its key.
    Clip,
    /// Group-and-apply: a tumbling count per key.
    GroupApply,
    /// An equijoin by key of inputs whose CTIs are generated (every 3 events, 5 behind), with
    /// the Drop policy.
    GeneratedJoin,
    /// An equijoin by key with filtered reference data (the second input, replicated to
    /// every worker), then tumbling windows per another key.
    ReferenceJoin,
}

impl Shape {
    /// How many inputs it reads.
    pub fn inputs(self) -> usize {
        match self {
            Shape::TumblingPerKey(_)
            | Shape::HoppingAll(_)
            | Shape::SnapshotPerKey
            | Shape::CountPerKey => 1,
            _ => 2,
        }
    }

    /// Whether its inputs generate their CTIs (their own CTIs are dropped from the items).
    pub fn generated(self) -> bool {
        matches!(self, Shape::GeneratedJoin)
    }

    /// Whether its second input is reference data ([`InputOptions::reference`]).
    pub fn reference(self) -> bool {
        matches!(self, Shape::ReferenceJoin)
    }

    /// The query on `s`, its results as text.
    pub fn build(self, s: &[Stream<Pl>]) -> Stream<String> {
        let text = |x: &dyn std::fmt::Debug| format!("{x:?}");
        match self {
            Shape::StatelessUnion => s[0]
                .filter(|p| p.v % 2 == 0)
                .map(|p| Pl { v: p.v * 3, ..*p })
                .union(&[&s[1].shift(TimeSpan::from_ticks(2))])
                .map(move |p| text(p)),
            Shape::JoinThenWindow => s[0]
                .join_on(
                    &s[1],
                    |p| p.key,
                    |p| p.key,
                    |x, y| Pl {
                        id: x.id,
                        key: y.v.rem_euclid(3) as u8,
                        v: x.v + y.v,
                    },
                )
                .hopping_window(TimeSpan::from_ticks(10), TimeSpan::from_ticks(5))
                .group_by(|p| p.key)
                .aggregate((Count, Sum::of(|p: &Pl| p.v as f64)))
                .map(move |r| text(r)),
            Shape::TumblingPerKey(size) => s[0]
                .tumbling_window(TimeSpan::from_ticks(size))
                .output(WindowOutput::Window)
                .group_by(|p| p.key)
                .aggregate(Count)
                .map(move |r| text(r)),
            Shape::HoppingAll(size) => s[0]
                .hopping_window(TimeSpan::from_ticks(size), TimeSpan::from_ticks(1))
                .aggregate(Sum::of(|p: &Pl| p.v as f64))
                .map(move |r| text(r)),
            Shape::SnapshotPerKey => s[0]
                .snapshot_window()
                .group_by(|p| p.key)
                .aggregate(Count)
                .map(move |r| text(r)),
            Shape::CountPerKey => s[0]
                .count_window(2)
                .group_by(|p| p.key)
                .aggregate(Count)
                .map(move |r| text(r)),
            Shape::AntiJoin => s[0]
                .anti_join_on(&s[1], |p| p.key, |p| p.key)
                .map(move |p| text(p)),
            Shape::Clip => s[0]
                .clip_duration_on(&s[1], |p| p.key, |p| p.key)
                .map(move |p| text(p)),
            Shape::GroupApply => s[0]
                .group_apply(
                    |p| p.key,
                    |k, g| {
                        let k = *k;
                        g.tumbling_window(TimeSpan::from_ticks(7))
                            .aggregate(Count)
                            .map(move |c| (k, *c))
                    },
                )
                .map(move |r| text(r)),
            Shape::GeneratedJoin => s[0]
                .join_on(&s[1], |p| p.key, |p| p.key, |x, y| (x.id, y.id))
                .map(move |r| text(r)),
            Shape::ReferenceJoin => s[0]
                .join_on(
                    &s[1].filter(|p| p.v % 3 != 0),
                    |p| p.key,
                    |p| p.key,
                    |x, y| Pl {
                        id: x.id,
                        key: (x.v + y.v).rem_euclid(2) as u8,
                        v: x.v * y.v,
                    },
                )
                .tumbling_window(TimeSpan::from_ticks(6))
                .group_by(|p| p.key)
                .aggregate((Count, Sum::of(|p: &Pl| p.v as f64)))
                .map(move |r| text(r)),
        }
    }
}

/// One input, raw: events (start, length (0: a point), key, value) and CTIs.
pub type RawInput = (Vec<(i64, u8, u8, i64)>, Vec<i64>);

/// One query and its inputs, raw (see [`items`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Spec {
    /// The query.
    pub shape: Shape,
    /// Each input.
    pub inputs: Vec<RawInput>,
}

impl Spec {
    /// The case: its inputs as items in arrival order.
    pub fn case(&self) -> Case {
        let inputs = self
            .inputs
            .iter()
            .enumerate()
            .map(|(k, (raw, ctis))| items(raw, ctis, 1000 * k as u32, self.shape.generated()))
            .collect();
        Case {
            shape: self.shape,
            inputs,
        }
    }
}

/// One query and its inputs, item by item in arrival order.
#[derive(Clone, Debug)]
pub struct Case {
    /// The query.
    pub shape: Shape,
    /// Each input's items.
    pub inputs: Vec<Vec<StreamItem<Pl>>>,
}

/// What a run gives for one case: its output as text (an event's debug text, `CTI t`), and
/// the events its inputs dropped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The output, item by item.
    pub output: Vec<String>,
    /// Dropped events (of the inputs this process owns).
    pub dropped: u64,
}

fn input_options(name: String, generated: bool, reference: bool) -> InputOptions {
    let mut options = InputOptions::new(name, EventShape::Edge);
    if reference {
        options = options.reference();
    }
    if generated {
        let generation = AdvanceTimeGenerationSettings::every_events(3)
            .delay(TimeSpan::from_ticks(5))
            .final_cti(true)
            .build();
        if let Ok(generation) = generation {
            let settings = AdvanceTimeSettings::builder()
                .generation(generation)
                .policy(AdvanceTimePolicy::Drop)
                .build();
            if let Ok(settings) = settings {
                options = options.settings(settings);
            }
        }
    }
    options
}

/// An output item as text: an event's debug text, `CTI t`.
pub fn text(item: StreamItem<String>) -> String {
    match item {
        StreamItem::Cti(t) => format!("CTI {t:?}"),
        StreamItem::Insert(e) => format!("{:?} {}", e.kind, e.payload),
    }
}

/// The case as a user writes it: a [`Query`] whose inputs replay the case's items
/// ([`MemoryInput`]) and whose output goes to an adapter `out` makes (a [`CollectOutput`]).
pub fn query<F: OutputAdapterFactory<(), String>>(
    case: &Case,
    out: &F,
) -> Result<Query, QueryError> {
    let mut query = Query::new("case");
    let mut sources = Vec::new();
    for (k, items) in case.inputs.iter().enumerate() {
        let options = input_options(
            format!("in{k}"),
            case.shape.generated(),
            k == 1 && case.shape.reference(),
        );
        sources.push(query.create_stream(options, &MemoryInput, items)?);
    }
    let results = case.shape.build(&sources);
    query.bind_output(&results, out, &())?;
    Ok(query)
}

/// What a run of [`query`] gave: its output as text, and the events its inputs dropped.
pub fn outcome(out: &CollectOutput<String>, report: &QueryReport) -> Outcome {
    Outcome {
        output: out.items().into_iter().map(text).collect(),
        dropped: report.streams.iter().map(|(_, c)| c.dropped).sum(),
    }
}

/// An output item: an event's sync time (`None` for a CTI), and a CTI's time.
pub fn parse(item: &str) -> (Option<i64>, i64) {
    let number = |s: &str| -> i64 {
        let digits: String = s
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '-' || *c == '+')
            .collect();
        match digits.as_str() {
            "+" => i64::MAX,
            "-" => i64::MIN,
            d => d.parse().unwrap_or(i64::MAX),
        }
    };
    match item.strip_prefix("CTI ") {
        Some(t) => (None, number(t)),
        None => {
            // Its sync time: an end edge's end, every other event's start.
            let after = |key: &str| item.split(key).nth(1).map(number);
            let sync = if item.starts_with("EndEdge") {
                after("end: ")
            } else {
                after("start: ")
                    .or_else(|| after("Point("))
                    .or_else(|| after("StartEdge("))
            };
            (Some(sync.unwrap_or(i64::MIN)), 0)
        }
    }
}

/// Events with the CTI after each, and the CTIs.
pub type Released = (Vec<(String, i64)>, Vec<i64>);

/// Each event with the CTI that follows it (`i64::MAX` if none), and the stream's CTIs; fails
/// if an event comes after a CTI above its start, or the CTIs go back.
pub fn released(output: &[String]) -> Result<Released, String> {
    let mut events: Vec<(String, i64)> = Vec::new();
    let mut ctis = Vec::new();
    let mut open = Vec::new();
    let mut last = i64::MIN;
    for item in output {
        match parse(item) {
            (None, t) => {
                if t < last {
                    return Err(format!("CTI {t} after CTI {last}"));
                }
                last = t;
                ctis.push(t);
                for e in open.drain(..) {
                    events.push((e, t));
                }
            }
            (Some(start), _) => {
                if start < last {
                    return Err(format!("{item} after CTI {last}"));
                }
                open.push(item.clone());
            }
        }
    }
    events.extend(open.into_iter().map(|e| (e, i64::MAX)));
    events.sort();
    Ok((events, ctis))
}

/// Whether `got` (on the cluster) is `want` (on the runtime): the same events, the same last
/// CTI, a valid stream (no event after a CTI above its sync time), the same drops. Where an
/// event falls between the CTIs is not compared: the inputs' adapters run side by side, so
/// the order in which one input's events meet the other's CTIs differs from run to run (on
/// the runtime too); and the CTIs in between differ: the workers' CTIs are merged as they
/// come (the least every worker has passed).
pub fn same(got: &Outcome, want: &Outcome) -> Result<(), String> {
    let (g, g_ctis) = released(&got.output)?;
    let (w, w_ctis) = released(&want.output)?;
    let names = |v: &[(String, i64)]| v.iter().map(|e| e.0.clone()).collect::<Vec<_>>();
    if names(&g) != names(&w) {
        return Err(format!(
            "events differ:\n cluster {:?}\n runtime {:?}",
            g, w
        ));
    }
    if g_ctis.last() != w_ctis.last() {
        return Err(format!(
            "last CTI {:?}, on the runtime {:?}",
            g_ctis.last(),
            w_ctis.last()
        ));
    }
    if got.dropped != want.dropped {
        return Err(format!(
            "dropped {}, on the runtime {}",
            got.dropped, want.dropped
        ));
    }
    Ok(())
}

/// The case on the local runtime.
pub fn on_runtime(spec: &Spec) -> Outcome {
    let case = spec.case();
    let out = CollectOutput::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let report = runtime.block_on(async {
        let query = query(&case, &out).expect("the query builds");
        query.start().expect("it starts").wait().await
    });
    outcome(&out, &report.expect("the query runs"))
}

/// Many cases as one query: each case's inputs (`c{case}in{k}`) and output (`outs[case]`) its
/// own, so that one run of the cluster (one connection of its processes) checks them all.
pub fn queries<F: OutputAdapterFactory<(), String>>(
    cases: &[Case],
    outs: &[F],
) -> Result<Query, QueryError> {
    let mut query = Query::new("cases");
    for (c, (case, out)) in cases.iter().zip(outs).enumerate() {
        let mut sources = Vec::new();
        for (k, items) in case.inputs.iter().enumerate() {
            let options = input_options(
                format!("c{c}in{k}"),
                case.shape.generated(),
                k == 1 && case.shape.reference(),
            );
            sources.push(query.create_stream(options, &MemoryInput, items)?);
        }
        query.bind_output(case.shape.build(&sources), out, &())?;
    }
    Ok(query)
}

/// What each case of a run of [`queries`] gave in this process: its output (on the process of
/// worker 0), and the events the inputs this process owns dropped.
pub fn outcomes(
    cases: &[Case],
    outs: &[CollectOutput<String>],
    report: &QueryReport,
) -> Vec<Outcome> {
    cases
        .iter()
        .zip(outs)
        .enumerate()
        .map(|(c, (case, out))| Outcome {
            output: out.items().into_iter().map(text).collect(),
            dropped: (0..case.inputs.len())
                .filter_map(|k| report.counters(&format!("c{c}in{k}")))
                .map(|n| n.dropped)
                .sum(),
        })
        .collect()
}

/// Items of one input: each event (start, length (0: a point), key, value) before the first
/// of `ctis` above its start, then that CTI; `CTI(+inf)` last. With `generated`, no CTI.
pub fn items(
    raw: &[(i64, u8, u8, i64)],
    ctis: &[i64],
    base: u32,
    generated: bool,
) -> Vec<StreamItem<Pl>> {
    let t = Time::from_ticks;
    let evs: Vec<(i64, StreamItem<Pl>)> = raw
        .iter()
        .enumerate()
        .map(|(i, &(s, len, key, v))| {
            let p = Pl {
                id: base + i as u32,
                key,
                v,
            };
            let item = if len == 0 {
                StreamItem::point(t(s), p)
            } else {
                StreamItem::interval(t(s), t(s + i64::from(len)), p)
            };
            (s, item)
        })
        .collect();
    if generated {
        return evs.into_iter().map(|(_, i)| i).collect();
    }
    let mut out = Vec::new();
    let mut from = i64::MIN;
    for &c in ctis.iter().chain(std::iter::once(&i64::MAX)) {
        out.extend(
            evs.iter()
                .filter(|(s, _)| *s >= from && *s < c)
                .map(|(_, i)| i.clone()),
        );
        out.push(StreamItem::Cti(if c == i64::MAX {
            Time::INF
        } else {
            t(c)
        }));
        from = c;
    }
    out
}

/// Random specs for the property tests (`tests/cluster.rs`, `tests/cluster_query.rs`): a query
/// shape and its inputs.
pub mod strategy {
    use proptest::prelude::*;

    use super::{RawInput, Shape, Spec};

    /// One input: up to 20 events and up to 6 CTIs.
    pub fn input() -> impl Strategy<Value = RawInput> {
        (
            prop::collection::vec((0i64..60, 0u8..12, 0u8..5, -5i64..20), 0..20),
            prop::collection::btree_set(1i64..70, 0..6).prop_map(|s| s.into_iter().collect()),
        )
    }

    /// Any shape.
    pub fn shape() -> impl Strategy<Value = Shape> {
        prop_oneof![
            Just(Shape::StatelessUnion),
            Just(Shape::JoinThenWindow),
            (1i64..15).prop_map(Shape::TumblingPerKey),
            (1i64..15).prop_map(Shape::HoppingAll),
            Just(Shape::SnapshotPerKey),
            Just(Shape::CountPerKey),
            Just(Shape::AntiJoin),
            Just(Shape::Clip),
            Just(Shape::GroupApply),
            Just(Shape::GeneratedJoin),
            Just(Shape::ReferenceJoin),
        ]
    }

    /// A shape with as many inputs as it reads.
    pub fn spec() -> impl Strategy<Value = Spec> {
        (shape(), input(), input()).prop_map(|(shape, a, b)| Spec {
            shape,
            inputs: if shape.inputs() == 1 {
                vec![a]
            } else {
                vec![a, b]
            },
        })
    }
}
