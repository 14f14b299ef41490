//! The same query on one worker and split over several (`punctual::cluster`): on random
//! inputs (events permuted between CTIs, two inputs interleaved), every operator gives the
//! same output, CTI by CTI (the events between two CTIs compared as a multiset), on 1, 2 and
//! 3 workers as through the driver alone; and a policy's drops are counted the same.

use std::sync::Arc;

use proptest::prelude::*;

use punctual::cluster::{ClusterConfig, Script, Step};
use punctual::core::ops::{Count, Payload, Stream, Sum, WindowOutput};
use punctual::core::{Batch, EventShape, Ordered, StreamItem, Time, TimeSpan};
use punctual::engine::{Driver, InputId, InputOptions, OutputId, Plan};
use punctual::policies::{AdvanceTimeGenerationSettings, AdvanceTimePolicy, AdvanceTimeSettings};

/// A payload: a unique id, a group key and a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Pl {
    id: u32,
    key: u8,
    v: i64,
}

type Build<O> = Arc<dyn Fn(&[Stream<Pl>]) -> Stream<O> + Send + Sync>;

/// Inputs given item by item (`None`: the items are the input's own; a CTI generator with
/// the Drop policy otherwise), fed in a fixed interleaving: one item of each input in turn.
struct Run<O> {
    inputs: Vec<Vec<StreamItem<Pl>>>,
    generated: bool,
    build: Build<O>,
    /// Step index to (input, item).
    order: Vec<(usize, usize)>,
}

impl<O: Payload> Run<O> {
    fn new(inputs: Vec<Vec<StreamItem<Pl>>>, generated: bool, build: Build<O>) -> Self {
        let longest = inputs.iter().map(Vec::len).max().unwrap_or(0);
        let order = (0..longest)
            .flat_map(|i| (0..inputs.len()).map(move |k| (k, i)))
            .filter(|&(k, i)| i < inputs[k].len())
            .collect();
        Run {
            inputs,
            generated,
            build,
            order,
        }
    }

    fn plan(&self) -> (Driver, Vec<InputId<Pl>>, OutputId<O>) {
        let mut plan = Plan::new("cluster");
        let (ids, sources): (Vec<_>, Vec<Stream<Pl>>) = (0..self.inputs.len())
            .map(|k| {
                let mut options = InputOptions::new(format!("in{k}"), EventShape::Edge);
                if self.generated {
                    let generation = AdvanceTimeGenerationSettings::every_events(3)
                        .delay(TimeSpan::from_ticks(5))
                        .final_cti(true)
                        .build()
                        .expect("valid settings");
                    let settings = AdvanceTimeSettings::builder()
                        .generation(generation)
                        .policy(AdvanceTimePolicy::Drop)
                        .build()
                        .expect("valid settings");
                    options = options.settings(settings);
                }
                plan.input::<Pl, Ordered>(options).expect("a valid input")
            })
            .unzip();
        let output = plan
            .output(&(self.build)(&sources))
            .expect("a stream of the plan");
        (plan.build().expect("a valid plan"), ids, output)
    }

    /// Through the driver alone: the output and the total of dropped events.
    fn local(&self) -> (Vec<StreamItem<O>>, u64) {
        let (mut driver, ids, output) = self.plan();
        for &(k, i) in &self.order {
            let _ = driver.enqueue(ids[k], self.inputs[k][i].clone());
        }
        for id in &ids {
            driver.finish(id.index());
        }
        driver.close();
        let mut batch = Batch::new();
        driver.take_output(&output, &mut batch);
        let mut items = Vec::new();
        batch.drain_items(|i| items.push(i));
        let dropped = (0..ids.len())
            .filter_map(|i| driver.counters(i))
            .map(|c| c.dropped)
            .sum();
        (items, dropped)
    }
}

struct Worker<O> {
    ids: Vec<InputId<Pl>>,
    output: OutputId<O>,
}

impl<O: Payload> Script for Run<O> {
    type Worker = Worker<O>;
    type Output = (Vec<StreamItem<O>>, u64);

    fn build(&self, _worker: usize) -> Result<(Driver, Worker<O>), String> {
        let (driver, ids, output) = self.plan();
        Ok((driver, Worker { ids, output }))
    }

    fn steps(&self) -> usize {
        self.order.len() + self.inputs.len() + 1
    }

    fn step(&self, step: usize) -> Step {
        match self.order.get(step) {
            Some(&(k, _)) => Step::Input(k),
            None if step < self.order.len() + self.inputs.len() => {
                Step::Input(step - self.order.len())
            }
            None => Step::Close,
        }
    }

    fn run_step(&self, step: usize, driver: &mut Driver, w: &mut Worker<O>) {
        match self.order.get(step) {
            Some(&(k, i)) => {
                let _ = driver.enqueue(w.ids[k], self.inputs[k][i].clone());
            }
            None => {
                driver.finish(w.ids[step - self.order.len()].index());
            }
        }
    }

    fn finish(&self, driver: &mut Driver, w: Worker<O>, owns: &[bool]) -> Self::Output {
        let mut batch = Batch::new();
        driver.take_output(&w.output, &mut batch);
        let mut items = Vec::new();
        batch.drain_items(|i| items.push(i));
        let dropped = (0..w.ids.len())
            .filter(|&i| owns[i])
            .filter_map(|i| driver.counters(i))
            .map(|c| c.dropped)
            .sum();
        (items, dropped)
    }
}

/// The output cut at its CTIs: each segment's events sorted (by their debug text), then its CTI.
fn segments<O: std::fmt::Debug>(items: &[StreamItem<O>]) -> Vec<(Vec<String>, Option<Time>)> {
    let mut out = Vec::new();
    let mut seg = Vec::new();
    for item in items {
        match item {
            StreamItem::Insert(e) => seg.push(format!("{e:?}")),
            StreamItem::Cti(t) => {
                seg.sort();
                out.push((std::mem::take(&mut seg), Some(*t)));
            }
        }
    }
    seg.sort();
    out.push((seg, None));
    out
}

/// Runs on 1, 2 and 3 workers; each must give the local output and drop count.
fn same_everywhere<O: Payload + std::fmt::Debug>(run: Run<O>) -> Result<(), TestCaseError> {
    let (local, dropped) = run.local();
    let want = segments(&local);
    let run = Arc::new(run);
    for workers in 1..=3 {
        let reports = punctual::cluster::run(Arc::clone(&run), ClusterConfig::threads(workers))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(reports.len(), workers);
        let got = segments(&reports[0].0);
        prop_assert_eq!(&got, &want, "{} workers", workers);
        let total: u64 = reports.iter().map(|r| r.1).sum();
        prop_assert_eq!(total, dropped, "dropped on {} workers", workers);
        for (w, r) in reports.iter().enumerate().skip(1) {
            let events =
                r.0.iter()
                    .filter(|i| matches!(i, StreamItem::Insert(_)))
                    .count();
            prop_assert_eq!(events, 0, "worker {} kept output events", w);
        }
    }
    Ok(())
}

fn items(raw: &[(i64, u8, u8, i64)], ctis: &[i64], base: u32) -> Vec<StreamItem<Pl>> {
    let t = Time::from_ticks;
    let mut evs: Vec<(i64, StreamItem<Pl>)> = raw
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
    // Each event before the first CTI above it (its order within a segment as generated).
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
    evs.clear();
    out
}

/// Raw events (start, length (0: a point), key, value) and CTIs.
type RawInput = (Vec<(i64, u8, u8, i64)>, Vec<i64>);

fn input() -> impl Strategy<Value = RawInput> {
    (
        prop::collection::vec((0i64..60, 0u8..12, 0u8..5, -5i64..20), 0..20),
        prop::collection::btree_set(1i64..70, 0..6).prop_map(|s| s.into_iter().collect()),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn stateless_and_union(a in input(), b in input()) {
        let inputs = vec![items(&a.0, &a.1, 0), items(&b.0, &b.1, 1000)];
        same_everywhere(Run::new(inputs, false, Arc::new(|s: &[Stream<Pl>]| {
            s[0].filter(|p| p.v % 2 == 0).map(|p| Pl { v: p.v * 3, ..*p }).union(&[&s[1].shift(TimeSpan::from_ticks(2))])
        })))?;
    }

    #[test]
    fn equijoin_then_window_on_another_key(a in input(), b in input()) {
        let inputs = vec![items(&a.0, &a.1, 0), items(&b.0, &b.1, 1000)];
        same_everywhere(Run::new(inputs, false, Arc::new(|s: &[Stream<Pl>]| {
            s[0].join_on(&s[1], |p| p.key, |p| p.key, |x, y| Pl { id: x.id, key: (y.v.rem_euclid(3)) as u8, v: x.v + y.v })
                .hopping_window(TimeSpan::from_ticks(10), TimeSpan::from_ticks(5))
                .group_by(|p| p.key)
                .aggregate((Count, Sum::of(|p: &Pl| p.v as f64)))
        })))?;
    }

    #[test]
    fn windows_with_and_without_keys(a in input(), size in 1i64..15) {
        let inputs = vec![items(&a.0, &a.1, 0)];
        same_everywhere(Run::new(inputs.clone(), false, Arc::new(move |s: &[Stream<Pl>]| {
            s[0].tumbling_window(TimeSpan::from_ticks(size)).output(WindowOutput::Window).group_by(|p| p.key).aggregate(Count)
        })))?;
        same_everywhere(Run::new(inputs.clone(), false, Arc::new(move |s: &[Stream<Pl>]| {
            s[0].hopping_window(TimeSpan::from_ticks(size), TimeSpan::from_ticks(1)).aggregate(Sum::of(|p: &Pl| p.v as f64))
        })))?;
        same_everywhere(Run::new(inputs.clone(), false, Arc::new(|s: &[Stream<Pl>]| {
            s[0].snapshot_window().group_by(|p| p.key).aggregate(Count)
        })))?;
        same_everywhere(Run::new(inputs, false, Arc::new(|s: &[Stream<Pl>]| {
            s[0].count_window(2).group_by(|p| p.key).aggregate(Count)
        })))?;
    }

    #[test]
    fn anti_join_clip_and_group_apply(a in input(), b in input()) {
        let inputs = vec![items(&a.0, &a.1, 0), items(&b.0, &b.1, 1000)];
        same_everywhere(Run::new(inputs.clone(), false, Arc::new(|s: &[Stream<Pl>]| {
            s[0].anti_join_on(&s[1], |p| p.key, |p| p.key)
        })))?;
        same_everywhere(Run::new(inputs.clone(), false, Arc::new(|s: &[Stream<Pl>]| {
            s[0].clip_duration_on(&s[1], |p| p.key, |p| p.key)
        })))?;
        same_everywhere(Run::new(inputs, false, Arc::new(|s: &[Stream<Pl>]| {
            s[0].group_apply(|p| p.key, |k, g| {
                let k = *k;
                g.tumbling_window(TimeSpan::from_ticks(7)).aggregate(Count).map(move |c| (k, *c))
            })
        })))?;
    }

    #[test]
    fn generated_ctis_and_drops(a in input(), b in input()) {
        // The inputs' own CTIs are ignored by a generator: events arrive in generated order
        // and late ones are dropped, counted once, on the worker that owns the input.
        let strip = |v: Vec<StreamItem<Pl>>| v.into_iter().filter(|i| matches!(i, StreamItem::Insert(_))).collect::<Vec<_>>();
        let inputs = vec![strip(items(&a.0, &[], 0)), strip(items(&b.0, &[], 1000))];
        same_everywhere(Run::new(inputs, true, Arc::new(|s: &[Stream<Pl>]| {
            s[0].join_on(&s[1], |p| p.key, |p| p.key, |x, y| (x.id, y.id))
        })))?;
    }
}
