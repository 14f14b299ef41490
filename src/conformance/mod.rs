//! The conformance runner: runs a case folder (`case.toml`, `arrivals.jsonl`, `expected.jsonl`;
//! format in `tests/conformance/README.md`) through the real ingress and compares the output.
//!
//! The arrivals are driven deterministically in their global order. After every item, each CTI
//! that a stream's ingress emitted is imported, at that moment, by the streams that import it
//! (and from them onward). When the arrivals end, every stream that has not seen `eof` finishes,
//! in declaration order; then every stream is closed and its unreleased events are counted.
//!
//! ```no_run
//! let run = punctual::conformance::run_case(std::path::Path::new("tests/conformance/ingress/increasing-start-time")).unwrap();
//! assert!(run.check().is_ok());
//! ```

mod case;
mod compare;
mod plan;

use std::path::{Path, PathBuf};

pub use case::{
    read_items, Arrival as CaseArrival, Case, Compare, StepSpec, StreamSpec, WatermarkFile,
};
pub use compare::Mismatch;

use punctual_adapters::line::item_to_json;
use punctual_core::{Batch, Row, StreamItem};
use std::hash::{Hash, Hasher};

use punctual_core::TimeSpan;
use punctual_policies::{
    AdvanceTimePolicy, Arrival, DeadLetter, Enqueued, Ingress, IngressConfig, IngressCounters,
    IngressOutput, Watermark,
};

/// Why a case could not be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CaseError {
    /// A file could not be read.
    #[error("{}: {message}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A file is malformed (line 0: somewhere in the file).
    #[error("{}:{line}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line, or 0 when unknown.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The case is well formed but its streams or query do not fit together.
    #[error("{0}")]
    Config(String),
    /// The case uses something this build does not support yet.
    #[error("unsupported: {0}")]
    Unsupported(String),
}

/// The outcome of running a case.
#[derive(Debug)]
pub struct CaseRun {
    /// The case that ran.
    pub case: Case,
    /// What the output adapter received, in order.
    pub output: Vec<StreamItem<Row>>,
    /// Each input stream's counters, in declaration order.
    pub counters: Vec<(String, IngressCounters)>,
    /// Each input stream's dead letters, in declaration order.
    pub dead_letters: Vec<(String, Vec<DeadLetter<Row>>)>,
    /// Where every node of the query stood at the end, and what held each back.
    pub explanations: Vec<punctual_core::ops::Explanation>,
    /// Per input stream, in declaration order: what happened to each arrival, and the CTIs
    /// the stream emitted.
    pub traces: Vec<StreamTrace>,
}

/// What happened to one arrival.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Accepted unchanged.
    Accepted,
    /// Accepted after an adjustment, with the kind and times it was accepted with.
    Adjusted(punctual_core::EventKind),
    /// Dropped by the policy or the watermark strategy.
    Dropped,
    /// Rejected (invalid, or violating with no policy).
    Rejected,
    /// A CTI that advanced the stream, or one that did not.
    Cti {
        /// Whether it advanced the stream.
        advanced: bool,
    },
    /// The end of the stream's input.
    Eof,
}

/// One input stream's arrivals with their outcomes, and the CTIs it emitted.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamTrace {
    /// The stream's name.
    pub name: String,
    /// Each arrival of this stream, in order, and what happened to it.
    pub arrivals: Vec<(Option<StreamItem<Row>>, Outcome)>,
    /// The CTIs it emitted (its own, generated, imported and final ones).
    pub ctis: Vec<punctual_core::Time>,
}

struct StreamRun {
    ingress: Ingress<Row>,
    out: IngressOutput<Row>,
    importers: Vec<usize>,
}

/// Loads and runs the case in `dir`.
pub fn run_case(dir: &Path) -> Result<CaseRun, CaseError> {
    run(Case::load(dir)?)
}

/// Runs a loaded case.
pub fn run(case: Case) -> Result<CaseRun, CaseError> {
    let index = |name: &str| case.streams.iter().position(|s| s.name == name);
    let names: Vec<String> = case.streams.iter().map(|s| s.name.clone()).collect();
    let plan = plan::build(&names, &case.steps, &case.output)?;
    let mut streams: Vec<StreamRun> = case
        .streams
        .iter()
        .map(|s| StreamRun {
            ingress: ingress_for(s),
            out: IngressOutput::new(),
            importers: Vec::new(),
        })
        .collect();
    for (i, s) in case.streams.iter().enumerate() {
        if let Some(source) = &s.import {
            let j = index(source).ok_or_else(|| {
                CaseError::Config(format!(
                    "stream `{}` imports unknown stream `{source}`",
                    s.name
                ))
            })?;
            streams[j].importers.push(i);
        }
    }
    check_import_cycles(&case)?;
    let mut ended = vec![false; streams.len()];
    let mut traces: Vec<StreamTrace> = case
        .streams
        .iter()
        .map(|s| StreamTrace {
            name: s.name.clone(),
            arrivals: Vec::new(),
            ctis: Vec::new(),
        })
        .collect();
    for arrival in &case.arrivals {
        let i = arrival.stream;
        let before = streams[i].out.batch.ctis().len();
        match &arrival.item {
            // A rejected item is counted and dead-lettered by the ingress; the run goes on.
            Some(item) => {
                let s = &mut streams[i];
                let from = Arrival {
                    time: arrival.arrival,
                    partition: None,
                };
                let outcome = match s.ingress.enqueue_with(item.clone(), from, &mut s.out) {
                    Ok(Enqueued::Accepted) => Outcome::Accepted,
                    Ok(Enqueued::Adjusted) => match s.ingress.last_adjustment() {
                        Some((_, to)) => Outcome::Adjusted(to),
                        None => Outcome::Accepted,
                    },
                    Ok(Enqueued::Dropped) => Outcome::Dropped,
                    Ok(Enqueued::Cti) => Outcome::Cti { advanced: true },
                    Ok(Enqueued::StaleCti) => Outcome::Cti { advanced: false },
                    Err(_) => Outcome::Rejected,
                };
                traces[i].arrivals.push((Some(item.clone()), outcome));
            }
            None => {
                ended[i] = true;
                let s = &mut streams[i];
                s.ingress.finish(&mut s.out);
                traces[i].arrivals.push((None, Outcome::Eof));
            }
        }
        propagate(&mut streams, i, before);
        record_ctis(&streams, &mut traces);
        feed(&plan, &mut streams);
    }
    for i in 0..streams.len() {
        if !ended[i] {
            let s = &mut streams[i];
            let before = s.out.batch.ctis().len();
            s.ingress.finish(&mut s.out);
            propagate(&mut streams, i, before);
            record_ctis(&streams, &mut traces);
            feed(&plan, &mut streams);
        }
    }
    for s in &mut streams {
        s.ingress.close(&mut s.out);
    }
    let explanations = plan.graph.explain();
    let mut released = Batch::new();
    plan.graph.take_output(&plan.output, &mut released);
    let mut out_items = Vec::new();
    released.drain_items(|item| out_items.push(item));
    let counters = names
        .iter()
        .cloned()
        .zip(&streams)
        .map(|(n, s)| (n, s.ingress.counters()))
        .collect();
    let dead_letters = names
        .into_iter()
        .zip(&mut streams)
        .map(|(n, s)| (n, std::mem::take(&mut s.out.dead_letters)))
        .collect();
    Ok(CaseRun {
        case,
        output: out_items,
        counters,
        dead_letters,
        explanations,
        traces,
    })
}

/// The ingress a stream's settings describe.
fn ingress_for(s: &StreamSpec) -> Ingress<Row> {
    let config = IngressConfig {
        generation: s.generation,
        policy: s.policy,
        ..IngressConfig::default()
    };
    let Some(w) = &s.watermark else {
        return Ingress::new(config);
    };
    let mut strategy = Watermark::<Row>::arrival(TimeSpan::from_ticks(w.out_of_order))
        .policy(w.policy.unwrap_or(AdvanceTimePolicy::Adjust))
        .final_cti(w.final_cti.unwrap_or(true));
    if let Some(late) = w.late {
        strategy = strategy.late(TimeSpan::from_ticks(late));
    }
    if let Some(early) = w.early {
        strategy = strategy.early(TimeSpan::from_ticks(early));
    }
    if let Some(field) = w.substream.clone() {
        strategy = strategy.substream(move |r: &Row| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            r.get(&field).hash(&mut h);
            h.finish()
        });
    }
    Ingress::with_watermark(config, strategy)
}

/// Notes the CTIs every stream's ingress emitted since the last feed.
fn record_ctis(streams: &[StreamRun], traces: &mut [StreamTrace]) {
    for (s, trace) in streams.iter().zip(traces) {
        trace.ctis.extend(s.out.batch.ctis().iter().map(|m| m.time));
    }
}

/// Feeds what every stream's ingress released into the graph.
fn feed(plan: &plan::Plan, streams: &mut [StreamRun]) {
    for (s, source) in streams.iter_mut().zip(&plan.sources) {
        if !s.out.batch.is_empty() {
            plan.graph.feed(source, &mut s.out.batch);
        }
    }
}

/// Imports every CTI that stream `i` emitted since it had `before` CTIs into its importers, and
/// onward from them.
fn propagate(streams: &mut [StreamRun], i: usize, before: usize) {
    let new: Vec<_> = streams[i].out.batch.ctis()[before..]
        .iter()
        .map(|m| m.time)
        .collect();
    for t in new {
        for j in streams[i].importers.clone() {
            let before_j = streams[j].out.batch.ctis().len();
            let s = &mut streams[j];
            s.ingress.import_cti(t, &mut s.out);
            propagate(streams, j, before_j);
        }
    }
}

fn check_import_cycles(case: &Case) -> Result<(), CaseError> {
    for start in &case.streams {
        let mut seen = vec![start.name.as_str()];
        let mut cur = start;
        while let Some(src) = &cur.import {
            if seen.contains(&src.as_str()) {
                seen.push(src);
                return Err(CaseError::Config(format!(
                    "import cycle: {}",
                    seen.join(" imports ")
                )));
            }
            seen.push(src);
            match case.streams.iter().find(|s| &s.name == src) {
                Some(s) => cur = s,
                None => break,
            }
        }
    }
    Ok(())
}

impl CaseRun {
    /// Compares the output and the expected counters with the case's expectations.
    pub fn check(&self) -> Result<(), Vec<Mismatch>> {
        let mut problems = compare::compare(self.case.compare, &self.case.expected, &self.output);
        for (stream, counter, want) in &self.case.metrics {
            let got = self
                .counters
                .iter()
                .find(|(n, _)| n == stream)
                .and_then(|(_, c)| counter_value(c, counter));
            if got != Some(*want) {
                problems.push(Mismatch::Counter {
                    stream: stream.clone(),
                    counter: counter.clone(),
                    expected: *want,
                    actual: got,
                });
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }

    /// The output as JSON lines.
    pub fn output_lines(&self) -> Vec<String> {
        self.output
            .iter()
            .map(|i| item_to_json(i.as_ref()).to_string())
            .collect()
    }
}

/// A counter by its conformance name (`dropped`, `adjusted`, `rejected`, `stale_ctis`,
/// `unreleased`, `dangling_edges`, ...); `None` for a name it does not know.
pub fn counter_value(c: &IngressCounters, name: &str) -> Option<u64> {
    serde_json::to_value(c)
        .ok()?
        .get(name)
        .and_then(serde_json::Value::as_u64)
}

/// Every case folder (one holding `case.toml`) at or below `root`, sorted by path.
pub fn find_cases(root: &Path) -> Result<Vec<PathBuf>, CaseError> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        if dir.join("case.toml").is_file() {
            found.push(dir);
            continue;
        }
        let entries = std::fs::read_dir(&dir).map_err(|e| CaseError::Io {
            path: dir.clone(),
            message: e.to_string(),
        })?;
        for entry in entries.flatten() {
            if entry.path().is_dir() {
                stack.push(entry.path());
            }
        }
    }
    found.sort();
    Ok(found)
}
