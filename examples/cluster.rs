//! One query on several workers (`punctual::cluster`): readings joined with a reference
//! stream that imports their CTIs, counted per key in tumbling windows, run on one worker
//! and on three (threads of this process); the results are the same, CTI by CTI.
//!
//! `cargo run --example cluster`

use std::sync::Arc;

use punctual::cluster::{ClusterConfig, Script, Step};
use punctual::core::ops::Count;
use punctual::core::{Batch, EventShape, Ordered, StreamItem, Time, TimeSpan};
use punctual::engine::{Driver, InputId, InputOptions, OutputId, Plan};
use punctual::policies::{AdvanceTimeImportSettings, AdvanceTimeSettings};

/// The run, step by step: reference versions, then readings with their CTIs.
struct Readings {
    names: Vec<StreamItem<(u32, &'static str)>>,
    readings: Vec<StreamItem<(u32, i64)>>,
}

/// What each worker keeps beside its driver.
struct Handles {
    names: InputId<(u32, &'static str)>,
    readings: InputId<(u32, i64)>,
    out: OutputId<(&'static str, u64)>,
}

impl Script for Readings {
    type Worker = Handles;
    type Output = Vec<StreamItem<(&'static str, u64)>>;

    /// Every worker builds the same query.
    fn build(&self, _worker: usize) -> Result<(Driver, Handles), String> {
        let mut plan = Plan::new("per-name counts");
        let e = |e: punctual::engine::Error| e.to_string();
        let (readings, fast) = plan
            .input::<(u32, i64), Ordered>(InputOptions::new("readings", EventShape::Point))
            .map_err(e)?;
        let import = AdvanceTimeSettings::builder()
            .import(AdvanceTimeImportSettings::new("readings"))
            .build()
            .map_err(|e| e.to_string())?;
        let (names, slow) = plan
            .input::<(u32, &'static str), Ordered>(
                InputOptions::new("names", EventShape::Edge).settings(import),
            )
            .map_err(e)?;
        let counts = fast
            .join_on(&slow, |r| r.0, |n| n.0, |_, n| n.1)
            .tumbling_window(TimeSpan::from_ticks(10))
            .group_by(|name: &&'static str| *name)
            .aggregate(Count);
        let out = plan.output(&counts).map_err(e)?;
        let driver = plan.build().map_err(e)?;
        Ok((
            driver,
            Handles {
                names,
                readings,
                out,
            },
        ))
    }

    fn steps(&self) -> usize {
        self.names.len() + self.readings.len() + 1
    }

    /// The reference versions first, then the readings; then the end.
    fn step(&self, step: usize) -> Step {
        if step < self.names.len() {
            Step::Input(1)
        } else if step < self.names.len() + self.readings.len() {
            Step::Input(0)
        } else {
            Step::Close
        }
    }

    fn run_step(&self, step: usize, driver: &mut Driver, w: &mut Handles) {
        let result = match self.names.get(step) {
            Some(item) => driver.enqueue(w.names, item.clone()),
            None => driver.enqueue(w.readings, self.readings[step - self.names.len()].clone()),
        };
        if let Err(e) = result {
            eprintln!("rejected: {e}");
        }
    }

    /// Worker 0 has the output.
    fn finish(&self, driver: &mut Driver, w: Handles, _owns: &[bool]) -> Self::Output {
        let mut batch = Batch::new();
        driver.take_output(&w.out, &mut batch);
        let mut items = Vec::new();
        batch.drain_items(|i| items.push(i));
        items
    }
}

fn main() -> Result<(), punctual::cluster::Error> {
    let t = Time::from_ticks;
    let names = ["ada", "bo", "cy", "di"];
    let mut readings = Vec::new();
    for i in 0..200i64 {
        readings.push(StreamItem::point(t(i / 2), ((i % 4) as u32, i)));
        if i % 10 == 9 {
            readings.push(StreamItem::Cti(t(i / 2)));
        }
    }
    readings.push(StreamItem::Cti(Time::INF));
    let script = Arc::new(Readings {
        names: names
            .iter()
            .enumerate()
            .map(|(k, n)| StreamItem::start_edge(t(0), (k as u32, *n)))
            .collect(),
        readings,
    });
    let one = punctual::cluster::run(Arc::clone(&script), ClusterConfig::threads(1))?;
    let three = punctual::cluster::run(Arc::clone(&script), ClusterConfig::threads(3))?;
    // Between two CTIs the order is free: compare each segment as a set.
    let segments = |items: &[StreamItem<(&str, u64)>]| {
        let mut out = vec![Vec::new()];
        for item in items {
            match item {
                StreamItem::Cti(c) => out.push(vec![format!("CTI {c:?}")]),
                StreamItem::Insert(e) => {
                    if let Some(last) = out.last_mut() {
                        last.push(format!("{:?}", e));
                        last.sort();
                    }
                }
            }
        }
        out
    };
    assert_eq!(segments(&one[0]), segments(&three[0]));
    let results = one[0]
        .iter()
        .filter(|i| matches!(i, StreamItem::Insert(_)))
        .count();
    assert_eq!(results, 40); // 4 names x 10 windows of 10 ticks
    println!(
        "{results} window results, the same on 1 worker and on 3 ({} items each)",
        one[0].len()
    );
    Ok(())
}
