//! A case run on several workers ([`punctual_cluster`]): the same arrivals, the same query,
//! each input on the worker that owns it, what crosses between workers exchanged by timely.

use std::sync::Arc;

use punctual_cluster::{ClusterConfig, Script, Step};
use punctual_core::{Batch, StreamItem};
use punctual_engine::Driver;
use punctual_policies::{DeadLetter, IngressCounters};
use punctual_rows::Row;

use super::{build, feed, unended, Built, Case, CaseError, CaseRun};

/// The arrivals, then the end of each stream no arrival ended, then the end of the query.
struct CaseScript {
    case: Case,
    unended: Vec<usize>,
    /// With several processes of this many workers each: say on stderr when they are
    /// connected (once per process).
    announce: Option<usize>,
}

/// What a worker keeps beside its driver.
struct Handles {
    inputs: Vec<punctual_engine::InputId<Row>>,
    letters: Vec<punctual_engine::DeadLetterCollector<Row>>,
    output: punctual_engine::OutputId<Row>,
}

/// What a worker reports: the output (all of it on worker 0), and the counters and dead
/// letters of the inputs it owned.
struct Report {
    output: Vec<StreamItem<Row>>,
    counters: Vec<Option<IngressCounters>>,
    letters: Vec<Option<Vec<DeadLetter<Row>>>>,
    held: Vec<punctual_runtime::HeldItem>,
    explanations: Vec<punctual_core::ops::Explanation>,
}

impl Script for CaseScript {
    type Worker = Handles;
    type Output = Result<Report, String>;

    fn build(&self, _worker: usize) -> Result<(Driver, Handles), String> {
        let Built {
            driver,
            inputs,
            letters,
            output,
        } = build(&self.case).map_err(|e| e.to_string())?;
        Ok((
            driver,
            Handles {
                inputs,
                letters,
                output,
            },
        ))
    }

    fn started(&self, worker: usize, workers: usize) {
        // (`%`, not `is_multiple_of`: the workspace builds on Rust 1.86.)
        #[allow(clippy::manual_is_multiple_of)]
        let first_of_process = self.announce.is_some_and(|per| worker % per.max(1) == 0);
        if first_of_process {
            eprintln!("all processes connected ({workers} workers): running");
        }
    }

    fn steps(&self) -> usize {
        self.case.arrivals.len() + self.unended.len() + 1
    }

    fn step(&self, step: usize) -> Step {
        let arrivals = self.case.arrivals.len();
        if let Some(a) = self.case.arrivals.get(step) {
            return match a.clock {
                Some(now) => Step::Clock(now),
                None => Step::Input(a.stream),
            };
        }
        match self.unended.get(step - arrivals) {
            Some(&i) => Step::Input(i),
            None => Step::Close,
        }
    }

    fn run_step(&self, step: usize, driver: &mut Driver, w: &mut Handles) {
        match self.case.arrivals.get(step) {
            Some(a) => {
                feed(driver, &w.inputs, a);
            }
            None => {
                if let Some(&i) = self.unended.get(step - self.case.arrivals.len()) {
                    driver.finish(w.inputs[i].index());
                }
            }
        }
    }

    fn finish(&self, driver: &mut Driver, w: Handles, owns: &[bool]) -> Result<Report, String> {
        let mut out = Batch::new();
        driver.take_output(&w.output, &mut out);
        let mut output = Vec::new();
        out.drain_items(|item| output.push(item));
        let counters = w
            .inputs
            .iter()
            .enumerate()
            .map(|(i, id)| {
                owns.get(i)
                    .copied()
                    .unwrap_or(false)
                    .then(|| driver.counters(id.index()).unwrap_or_default())
            })
            .collect();
        let letters = w
            .letters
            .iter()
            .enumerate()
            .map(|(i, c)| owns.get(i).copied().unwrap_or(false).then(|| c.letters()))
            .collect();
        Ok(Report {
            output,
            counters,
            letters,
            held: punctual_runtime::query::held_items(driver),
            explanations: driver.explain(),
        })
    }
}

/// Runs a loaded case on `workers` workers (threads of this process, see
/// [`punctual_cluster`]): each input on the worker that owns it, events placed by key where
/// operators need them together, every CTI to every worker, the output gathered on worker 0.
/// The result is the case's output, counters and dead letters as [`super::run`] gives them
/// (the counters and dead letters of each input from the worker that owns it; what operators
/// held, from every worker). Per-arrival traces are not kept.
pub fn run_split(case: Case, workers: usize) -> Result<CaseRun, CaseError> {
    run_cluster(case, &ClusterConfig::threads(workers)).map(|r| r.run)
}

/// This process's share of a case run on a cluster ([`run_cluster`]).
#[derive(Debug)]
pub struct ClusterRun {
    /// The output (all of it on the process of worker 0, none elsewhere), the counters and
    /// dead letters of the inputs this process's workers own (default elsewhere), what its
    /// operators held.
    pub run: CaseRun,
    /// For each input stream, whether this process's workers own it.
    pub owned: Vec<bool>,
}

/// Runs a loaded case as this process's part of a cluster run (see [`run_split`]; with
/// several processes, every process runs this with the same case and configuration but its
/// own process index).
pub fn run_cluster(case: Case, config: &ClusterConfig) -> Result<ClusterRun, CaseError> {
    let unended = unended(&case);
    let names: Vec<String> = case.streams.iter().map(|s| s.name.clone()).collect();
    let script = Arc::new(CaseScript {
        case,
        unended,
        announce: (config.process_count() > 1).then_some(config.workers),
    });
    let reports = punctual_cluster::run(Arc::clone(&script), config.clone())
        .map_err(|e| CaseError::Config(e.to_string()))?;
    let mut reports = reports
        .into_iter()
        .collect::<Result<Vec<Report>, String>>()
        .map_err(CaseError::Config)?;
    let case = Arc::try_unwrap(script)
        .map(|s| s.case)
        .map_err(|_| CaseError::Config("the cluster kept the case".to_owned()))?;
    let mut counters = Vec::new();
    let mut dead_letters = Vec::new();
    let mut owned = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let owner = reports.iter().position(|r| r.counters[i].is_some());
        let c = owner
            .and_then(|w| reports[w].counters[i])
            .unwrap_or_default();
        let l = owner
            .and_then(|w| reports[w].letters[i].take())
            .unwrap_or_default();
        counters.push((name.clone(), c));
        dead_letters.push((name.clone(), l));
        owned.push(owner.is_some());
    }
    let held = reports.iter_mut().flat_map(|r| r.held.drain(..)).collect();
    let first = if config.process == 0 {
        reports.first_mut()
    } else {
        None
    };
    let output = first.as_ref().map(|r| r.output.clone()).unwrap_or_default();
    let explanations = first
        .map(|r| std::mem::take(&mut r.explanations))
        .unwrap_or_default();
    Ok(ClusterRun {
        run: CaseRun {
            case,
            output,
            counters,
            dead_letters,
            held,
            explanations,
            traces: Vec::new(),
        },
        owned,
    })
}
