//! The conformance runner: runs a case folder (`case.toml`, `arrivals.jsonl`, `expected.jsonl`;
//! format in `tests/conformance/README.md`) through the query driver (`punctual_engine::Driver`,
//! the one every runtime drives) and compares the output.
//!
//! The arrivals are fed deterministically in their global order; the driver imports each CTI a
//! stream emits, at that moment, into the streams that import it. When the arrivals end, every
//! stream that has not seen `eof` finishes, in declaration order; then the query ends and every
//! stream's unreleased events are counted.
//!
//! ```no_run
//! let run = punctual::conformance::run_case(std::path::Path::new("tests/conformance/ingress/increasing-start-time")).unwrap();
//! assert!(run.check().is_ok());
//! ```

mod case;
mod compare;
mod live;
mod plan;
mod replay;
mod restore;

use std::path::{Path, PathBuf};

pub use case::{
    read_items, Arrival as CaseArrival, Case, Compare, StepSpec, StreamSpec, WatermarkFile,
};
pub use compare::Mismatch;
pub use live::{run_cluster, run_split, ClusterRun};
pub use replay::{CaseSinks, Turns};
pub use restore::{run_restoring, RestoredRun};

use std::hash::{Hash, Hasher};

use punctual_adapters::line::item_to_json;
use punctual_core::ops::AnyStream;
use punctual_core::{Batch, Ordered, StreamItem, Time, Unordered};
use punctual_engine::{DeadLetterCollector, Driver, InputOptions, Plan};
use punctual_policies::{
    AdvanceTimeImportSettings, AdvanceTimePolicy, AdvanceTimeSettings, Arrival, DeadLetter,
    Enqueued, IngressCounters, Watermark,
};
use punctual_rows::Row;

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
    /// What the operators still held at the end (a stream without a final CTI under a join,
    /// say), item by item.
    pub held: Vec<punctual_runtime::HeldItem>,
    /// Where every node of the query stood at the end, and what held each back.
    pub explanations: Vec<punctual_core::ops::Explanation>,
    /// Per input stream, in declaration order: what happened to each arrival, and the CTIs
    /// the stream emitted (on one worker only).
    pub traces: Vec<StreamTrace>,
    /// How many workers ran it (in all processes): on several, [`CaseRun::check`] compares
    /// the output as [`Compare::Exact`] says only for the events and the last CTI.
    pub workers: usize,
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
    /// A clock reading; whether it issued a CTI on any stream.
    Clock {
        /// Whether it issued a CTI.
        issued: bool,
    },
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

/// Loads and runs the case in `dir`.
pub fn run_case(dir: &Path) -> Result<CaseRun, CaseError> {
    run(Case::load(dir)?)
}

impl StreamSpec {
    /// The options of this input stream: its shape, and its advance-time settings or its
    /// watermark strategy.
    pub fn options(&self) -> InputOptions {
        let settings = match (self.generation, &self.import, self.policy) {
            (None, None, Some(policy)) => AdvanceTimeSettings::policy_only(policy),
            (None, None, None) => AdvanceTimeSettings::none(),
            (generation, import, policy) => {
                let mut settings = AdvanceTimeSettings::builder();
                if let Some(g) = generation {
                    settings = settings.generation(g);
                }
                if let Some(source) = import {
                    settings = settings.import(AdvanceTimeImportSettings::new(source.clone()));
                }
                settings = match policy {
                    Some(p) => settings.policy(p),
                    None => settings.reject_violations(),
                };
                // With generation or import given, the builder refuses nothing.
                settings
                    .build()
                    .unwrap_or_else(|_| AdvanceTimeSettings::none())
            }
        };
        let options = InputOptions::new(self.name.clone(), self.shape).settings(settings);
        match self.watermark_strategy() {
            Some(w) => options.watermark(w),
            None => options,
        }
    }

    /// The stream's watermark strategy, if it has one.
    fn watermark_strategy(&self) -> Option<Watermark<Row>> {
        self.watermark.as_ref().map(WatermarkFile::strategy)
    }
}

impl WatermarkFile {
    /// The watermark strategy this setting describes (Stream Analytics' arrival strategy:
    /// out-of-order, late and early tolerances, a policy, substreams by a field's value,
    /// input partitions, a final CTI).
    pub fn strategy(&self) -> Watermark<Row> {
        let w = self;
        let mut strategy = Watermark::<Row>::arrival(w.out_of_order)
            .policy(w.policy.unwrap_or(AdvanceTimePolicy::Adjust))
            .final_cti(w.final_cti.unwrap_or(true));
        if let Some(late) = w.late {
            strategy = strategy.late(late);
        }
        if let Some(early) = w.early {
            strategy = strategy.early(early);
        }
        if let Some(n) = w.partitions {
            strategy = strategy.input_partitions(n);
        }
        if let Some(field) = w.substream.clone() {
            strategy = strategy.substream(move |r: &Row| {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                r.get(&field).hash(&mut h);
                h.finish()
            });
        }
        strategy
    }
}

impl Case {
    /// Builds the case's query steps on its input streams (given in declaration order) and
    /// returns the stream its output adapter reads.
    pub fn query(&self, inputs: &[AnyStream<Row>]) -> Result<AnyStream<Row>, CaseError> {
        let names: Vec<String> = self.streams.iter().map(|s| s.name.clone()).collect();
        let Some(sql) = &self.sql else {
            return plan::build(&names, inputs, &self.steps, &self.output);
        };
        if let Some(u) = sql.inputs().iter().find(|u| u.timestamp_field.is_some()) {
            return Err(CaseError::Config(format!(
                "[query] sql: stream `{}` has TIMESTAMP BY, but a case's events carry their times",
                u.name
            )));
        }
        let sql_inputs: Vec<punctual_sql::SqlInput<'_>> = names
            .iter()
            .zip(inputs)
            .map(|(n, s)| punctual_sql::SqlInput::new(n, s))
            .collect();
        let outputs = sql
            .build(&sql_inputs)
            .map_err(|e| CaseError::Config(format!("[query] sql: {}", e.show(sql.text()))))?;
        outputs
            .into_iter()
            .find(|(n, _)| *n == self.output)
            .map(|(_, s)| AnyStream::from(s.ordered()))
            .ok_or_else(|| {
                CaseError::Config(format!(
                    "[query] output `{}` is none of the query's outputs ({})",
                    self.output,
                    sql.outputs().join(", ")
                ))
            })
    }
}

/// A plan that does not fit together, as a case error.
fn bind(e: punctual_engine::Error) -> CaseError {
    match e {
        punctual_engine::Error::Bind(message) => CaseError::Config(message),
        other => CaseError::Config(other.to_string()),
    }
}

/// A case's query built into a driver, with what feeds and reads it.
pub(crate) struct Built {
    pub(crate) driver: Driver,
    pub(crate) inputs: Vec<punctual_engine::InputId<Row>>,
    pub(crate) letters: Vec<DeadLetterCollector<Row>>,
    pub(crate) output: punctual_engine::OutputId<Row>,
}

/// Builds a case's query: its streams (each with a dead-letter collector), its steps or SQL
/// query, its output.
pub(crate) fn build(case: &Case) -> Result<Built, CaseError> {
    let mut plan = Plan::new(case.dir.display().to_string());
    let mut inputs = Vec::new();
    let mut streams = Vec::new();
    let mut letters = Vec::new();
    for spec in &case.streams {
        let collector = DeadLetterCollector::new();
        let (id, stream) = if spec.arrival {
            let (id, s) = plan
                .input::<Row, Unordered>(spec.options().unordered())
                .map_err(bind)?;
            plan.dead_letters(&s, collector.clone()).map_err(bind)?;
            (id, AnyStream::from(s))
        } else {
            let (id, s) = plan.input::<Row, Ordered>(spec.options()).map_err(bind)?;
            plan.dead_letters(&s, collector.clone()).map_err(bind)?;
            (id, AnyStream::from(s))
        };
        inputs.push(id);
        streams.push(stream);
        letters.push(collector);
    }
    let output = plan.output(&case.query(&streams)?).map_err(bind)?;
    let driver = plan.build().map_err(bind)?;
    Ok(Built {
        driver,
        inputs,
        letters,
        output,
    })
}

/// Feeds one arrival (an item, a stream's end or a clock reading) to the driver.
pub(crate) fn feed(
    driver: &mut Driver,
    inputs: &[punctual_engine::InputId<Row>],
    arrival: &CaseArrival,
) -> Outcome {
    let i = arrival.stream;
    match (&arrival.item, arrival.clock) {
        (_, Some(now)) => Outcome::Clock {
            issued: driver.tick(now),
        },
        // A rejected item is counted and dead-lettered by the ingress; the run goes on.
        (Some(item), None) => {
            let from = Arrival {
                time: arrival.arrival,
                partition: arrival.partition,
            };
            match driver.enqueue_with(inputs[i], item.clone(), from) {
                Ok(Enqueued::Accepted) => Outcome::Accepted,
                Ok(Enqueued::Adjusted(to)) => Outcome::Adjusted(to),
                Ok(Enqueued::Dropped) => Outcome::Dropped,
                Ok(Enqueued::Cti) => Outcome::Cti { advanced: true },
                Ok(Enqueued::StaleCti) => Outcome::Cti { advanced: false },
                Err(_) => Outcome::Rejected,
            }
        }
        (None, None) => {
            driver.finish(inputs[i].index());
            Outcome::Eof
        }
    }
}

/// Runs a loaded case through the query driver: the arrivals in their global order, each
/// stream's `eof` as the end of its input, then the end of every other stream in declaration
/// order, then the end of the query.
pub fn run(case: Case) -> Result<CaseRun, CaseError> {
    let Built {
        mut driver,
        inputs,
        letters,
        output,
    } = build(&case)?;
    let mut traces: Vec<StreamTrace> = case
        .streams
        .iter()
        .map(|s| StreamTrace {
            name: s.name.clone(),
            arrivals: Vec::new(),
            ctis: Vec::new(),
        })
        .collect();
    // Each call issues at most one CTI on each stream (an item, a generated candidate, an
    // import, or a final CTI): a stream's CTIs are the changes of its application time.
    let record = |driver: &Driver, traces: &mut [StreamTrace]| {
        for (i, trace) in traces.iter_mut().enumerate() {
            let cti = driver.counters(i).map_or(Time::NEG_INF, |c| c.cti);
            if cti > trace.ctis.last().copied().unwrap_or(Time::NEG_INF) {
                trace.ctis.push(cti);
            }
        }
    };
    for arrival in &case.arrivals {
        let outcome = feed(&mut driver, &inputs, arrival);
        traces[arrival.stream]
            .arrivals
            .push((arrival.item.clone(), outcome));
        record(&driver, &mut traces);
    }
    for i in unended(&case) {
        driver.finish(inputs[i].index());
        record(&driver, &mut traces);
    }
    driver.close();
    let explanations = driver.explain();
    let held = punctual_runtime::query::held_items(&driver);
    let mut out = Batch::new();
    driver.take_output(&output, &mut out);
    let mut out_items = Vec::new();
    out.drain_items(|item| out_items.push(item));
    let counters = case
        .streams
        .iter()
        .zip(&inputs)
        .map(|(s, id)| {
            (
                s.name.clone(),
                driver.counters(id.index()).unwrap_or_default(),
            )
        })
        .collect();
    let dead_letters = case
        .streams
        .iter()
        .zip(&letters)
        .map(|(s, c)| (s.name.clone(), c.letters()))
        .collect();
    Ok(CaseRun {
        case,
        output: out_items,
        counters,
        dead_letters,
        held,
        explanations,
        traces,
        workers: 1,
    })
}

/// The streams no arrival ends, in declaration order: they end after the arrivals.
pub(crate) fn unended(case: &Case) -> Vec<usize> {
    (0..case.streams.len())
        .filter(|&i| {
            !case
                .arrivals
                .iter()
                .any(|a| a.stream == i && a.item.is_none() && a.clock.is_none())
        })
        .collect()
}

impl CaseRun {
    /// Compares the output and the expected counters with the case's expectations. On several
    /// workers, a case compared [`Compare::Exact`] must give the expected events and last CTI,
    /// and a valid stream (no event after a CTI above its sync time), but where an event falls
    /// between the CTIs, and the CTIs in between, are free: the workers' inputs run side by
    /// side and their CTIs are merged as they come.
    pub fn check(&self) -> Result<(), Vec<Mismatch>> {
        let mode = match self.case.compare {
            Compare::Exact if self.workers > 1 => compare::Mode::Released,
            Compare::Exact => compare::Mode::Segments,
            Compare::Events => compare::Mode::Events,
        };
        let mut problems = compare::compare(mode, &self.case.expected, &self.output);
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
