//! Runs random cases (`punctual_tests::split_cases`) as one process of a cluster, for the
//! tests that start it: `split-cases SPECS.json WORKERS PROCESS HOSTS REPORT.json`. Writes
//! what each case gave in this process (the outputs on process 0) as JSON.

use std::process::ExitCode;

use punctual::adapters::CollectOutput;
use punctual::cluster::{run_query, ClusterConfig};
use punctual_tests::split_cases::{outcomes, queries, Case, Spec};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let [specs, workers, process, hosts, report] = args else {
        return Err("usage: split-cases SPECS.json WORKERS PROCESS HOSTS REPORT.json".to_owned());
    };
    let text = std::fs::read_to_string(specs).map_err(|e| format!("{specs}: {e}"))?;
    let specs: Vec<Spec> = serde_json::from_str(&text).map_err(|e| format!("{specs}: {e}"))?;
    let workers: usize = workers.parse().map_err(|_| format!("workers: {workers}"))?;
    let process: usize = process.parse().map_err(|_| format!("process: {process}"))?;
    let hosts: Vec<String> = std::fs::read_to_string(hosts)
        .map_err(|e| format!("{hosts}: {e}"))?
        .lines()
        .map(str::to_owned)
        .collect();
    let cases: Vec<Case> = specs.iter().map(Spec::case).collect();
    let outs: Vec<CollectOutput<String>> = cases.iter().map(|_| CollectOutput::new()).collect();
    let config = ClusterConfig::processes(workers, process, hosts);
    let (built, sinks) = (cases.clone(), outs.clone());
    let ran = run_query(config, move |_| queries(&built, &sinks)).map_err(|e| e.to_string())?;
    let json = serde_json::to_string(&outcomes(&cases, &outs, &ran.report()))
        .map_err(|e| e.to_string())?;
    std::fs::write(report, json).map_err(|e| format!("{report}: {e}"))
}
