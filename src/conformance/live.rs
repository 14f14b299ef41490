//! A case run on several workers through the cluster executor users run
//! ([`punctual_cluster::run_query`], as `punctual job --workers` does): the case's query is an
//! ordinary query whose input adapters replay the case's arrivals ([`Case::runtime_query`]),
//! each on the worker that owns its stream, what crosses between workers carried by timely.
//!
//! The arrivals of streams that import each other's CTIs (which the query places on one
//! worker) keep their global order ([`Turns::PerImportGroup`]): each stream's adapter takes
//! its next arrival only when the group's arrivals before it are in. Groups run side by
//! side, as live inputs do, so where an event falls between the output's CTIs, and which CTIs
//! come out in between, may differ from the run on one worker; the events, the last CTI and
//! every input's counters and dead letters may not ([`super::CaseRun::check`]).

use std::sync::Arc;

use punctual_cluster::{ClusterConfig, ClusterReport};

use super::replay::{CaseSinks, Turns};
use super::{Case, CaseError, CaseRun};

/// Runs a loaded case on `workers` workers (threads of this process, see
/// [`punctual_cluster::run_query`]): each input on the worker that owns it, events placed by
/// key where operators need them together, every CTI to every worker, the output gathered on
/// worker 0. The result is the case's output, counters and dead letters (the counters and dead
/// letters of each input from the worker that owns it; what operators held, from every
/// worker). Per-arrival traces are not kept.
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
    /// What the cluster executor reported: the one `punctual job --workers` runs on.
    pub report: ClusterReport,
}

/// Runs a loaded case as this process's part of a cluster run (see [`run_split`]; with
/// several processes, every process runs this with the same case and configuration but its
/// own process index, and says on stderr when they are all connected).
pub fn run_cluster(case: Case, config: &ClusterConfig) -> Result<ClusterRun, CaseError> {
    let case = Arc::new(case);
    let sinks = CaseSinks::new(&case);
    let announce = (config.process_count() > 1).then_some(config.workers);
    let build = {
        let (case, sinks) = (Arc::clone(&case), sinks.clone());
        move |worker: usize| {
            // Every process is connected once its workers run: the first of each says so.
            // (`%`, not `is_multiple_of`: the workspace builds on Rust 1.86.)
            #[allow(clippy::manual_is_multiple_of)]
            if announce.is_some_and(|per| worker % per.max(1) == 0) {
                eprintln!("all processes connected: running");
            }
            case.runtime_query(Turns::PerImportGroup, &sinks)
        }
    };
    let report = punctual_cluster::run_query(config.clone(), build)
        .map_err(|e| CaseError::Config(e.to_string()))?;
    let merged = report.report();
    let owned: Vec<bool> = (0..case.streams.len())
        .map(|i| {
            report.owners.get(i).is_some_and(|o| {
                o.checked_sub(report.first_worker)
                    .is_some_and(|w| w < report.workers.len())
            })
        })
        .collect();
    let counters = case
        .streams
        .iter()
        .map(|s| (s.name.clone(), merged.counters(&s.name).unwrap_or_default()))
        .collect();
    let dead_letters = sinks.dead_letters(&case);
    let first = (config.process == 0)
        .then(|| report.workers.first())
        .flatten();
    let explanations = first.map(|r| r.explanations.clone()).unwrap_or_default();
    let output = sinks.output();
    let case = Arc::try_unwrap(case).unwrap_or_else(|still| (*still).clone());
    Ok(ClusterRun {
        run: CaseRun {
            case,
            output,
            counters,
            dead_letters,
            held: merged.held_items,
            explanations,
            traces: Vec::new(),
            workers: config.workers * config.process_count(),
        },
        owned,
        report,
    })
}
