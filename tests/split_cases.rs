//! Random queries run on one worker and split over several (`punctual::cluster`), shared by
//! `tests/cluster.rs` (threads) and the `split-cases` program it starts as processes.
//!
//! A [`Case`] is a query shape with its inputs (items in arrival order). Many cases run as one
//! plan ([`Cases`]): each case's inputs and output are its own, their steps one after the
//! other, so that one run of the cluster (one connection of its processes) checks them all.

use std::sync::Arc;

use punctual::adapters::{CollectOutput, MemoryInput};
use punctual::cluster::{Script, Step};
use punctual::core::ops::{Count, Stream, Sum, WindowOutput};
use punctual::core::{Batch, EventShape, Ordered, StreamItem, Time, TimeSpan};
use punctual::engine::{Driver, InputId, InputOptions, OutputId, Plan};
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

impl Case {
    /// Its steps: one item of each input in turn, `(input, item)`.
    fn order(&self) -> Vec<(usize, usize)> {
        let longest = self.inputs.iter().map(Vec::len).max().unwrap_or(0);
        (0..longest)
            .flat_map(|i| (0..self.inputs.len()).map(move |k| (k, i)))
            .filter(|&(k, i)| i < self.inputs[k].len())
            .collect()
    }
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

/// Runs one case through the driver alone.
pub fn local(case: &Case) -> Outcome {
    let run = Cases::new(vec![case.clone()]);
    let Ok((mut driver, w)) = run.build(0) else {
        return Outcome {
            output: vec!["cannot build".to_owned()],
            dropped: 0,
        };
    };
    let mut w = w;
    for step in 0..run.steps() {
        match run.step(step) {
            Step::Input(_) => run.run_step(step, &mut driver, &mut w),
            Step::Close => driver.close(),
            Step::Clock(_) => {}
        }
    }
    let owns = vec![true; driver.input_count()];
    run.finish(&mut driver, w, &owns).remove(0)
}

/// Many cases as one run: each case's inputs and output its own, their steps one case after
/// the other, then the end of every input (in order), then the end of the run.
pub struct Cases {
    cases: Vec<Case>,
    /// Step index to (case, input, item).
    order: Vec<(usize, usize, usize)>,
    /// The first input index of each case.
    first: Vec<usize>,
    inputs: usize,
}

/// What a worker keeps beside its driver.
pub struct Handles {
    ids: Vec<InputId<Pl>>,
    outputs: Vec<OutputId<String>>,
}

impl Cases {
    /// The run of `cases`.
    pub fn new(cases: Vec<Case>) -> Cases {
        let mut order = Vec::new();
        let mut first = Vec::new();
        let mut inputs = 0;
        for (c, case) in cases.iter().enumerate() {
            first.push(inputs);
            inputs += case.inputs.len();
            order.extend(case.order().into_iter().map(|(k, i)| (c, k, i)));
        }
        Cases {
            cases,
            order,
            first,
            inputs,
        }
    }

    /// The run as shared by every worker.
    pub fn shared(cases: Vec<Case>) -> Arc<Cases> {
        Arc::new(Cases::new(cases))
    }
}

impl Script for Cases {
    type Worker = Handles;
    type Output = Vec<Outcome>;

    fn build(&self, _worker: usize) -> Result<(Driver, Handles), String> {
        let mut plan = Plan::new("cases");
        let mut ids = Vec::new();
        let mut outputs = Vec::new();
        for (c, case) in self.cases.iter().enumerate() {
            let mut sources = Vec::new();
            for k in 0..case.inputs.len() {
                let (id, s) = plan
                    .input::<Pl, Ordered>(input_options(
                        format!("c{c}in{k}"),
                        case.shape.generated(),
                        k == 1 && case.shape.reference(),
                    ))
                    .map_err(|e| e.to_string())?;
                ids.push(id);
                sources.push(s);
            }
            let out = case.shape.build(&sources);
            outputs.push(plan.output(&out).map_err(|e| e.to_string())?);
        }
        let driver = plan.build().map_err(|e| e.to_string())?;
        Ok((driver, Handles { ids, outputs }))
    }

    fn steps(&self) -> usize {
        self.order.len() + self.inputs + 1
    }

    fn step(&self, step: usize) -> Step {
        match self.order.get(step) {
            Some(&(c, k, _)) => Step::Input(self.first[c] + k),
            None if step < self.order.len() + self.inputs => Step::Input(step - self.order.len()),
            None => Step::Close,
        }
    }

    fn run_step(&self, step: usize, driver: &mut Driver, w: &mut Handles) {
        match self.order.get(step) {
            Some(&(c, k, i)) => {
                let _ =
                    driver.enqueue(w.ids[self.first[c] + k], self.cases[c].inputs[k][i].clone());
            }
            None => {
                if let Some(id) = w.ids.get(step - self.order.len()) {
                    driver.finish(id.index());
                }
            }
        }
    }

    fn finish(&self, driver: &mut Driver, w: Handles, owns: &[bool]) -> Vec<Outcome> {
        self.cases
            .iter()
            .enumerate()
            .map(|(c, case)| {
                let mut batch = Batch::new();
                driver.take_output(&w.outputs[c], &mut batch);
                let mut output = Vec::new();
                batch.drain_items(|i| output.push(text(i)));
                let dropped = (0..case.inputs.len())
                    .map(|k| self.first[c] + k)
                    .filter(|&i| owns.get(i).copied().unwrap_or(false))
                    .filter_map(|i| driver.counters(i))
                    .map(|c| c.dropped)
                    .sum();
                Outcome { output, dropped }
            })
            .collect()
    }
}

/// The output cut at its CTIs, each segment's events sorted (the order between two CTIs is
/// free).
pub fn segments(items: &[String]) -> Vec<Vec<String>> {
    let mut out = vec![Vec::new()];
    for item in items {
        if item.starts_with("CTI ") {
            if let Some(last) = out.last_mut() {
                last.sort();
            }
            out.push(vec![item.clone()]);
        } else if let Some(last) = out.last_mut() {
            last.push(item.clone());
        }
    }
    if let Some(last) = out.last_mut() {
        last.sort();
    }
    out
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
