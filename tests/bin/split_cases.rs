//! Runs random cases (`punctual_tests::split_cases`) as one process of a cluster, for the
//! tests that start it: `split-cases SPECS.json WORKERS PROCESS HOSTS REPORT.json`. Writes
//! what this process's workers report (the outputs on process 0) as JSON.

use std::process::ExitCode;

use punctual::cluster::ClusterConfig;
use punctual_tests::split_cases::{Cases, Spec};

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
    let cases = Cases::shared(specs.iter().map(Spec::case).collect());
    let config = ClusterConfig::processes(workers, process, hosts);
    let reports = punctual::cluster::run(cases, config).map_err(|e| e.to_string())?;
    let json = serde_json::to_string(&reports).map_err(|e| e.to_string())?;
    std::fs::write(report, json).map_err(|e| format!("{report}: {e}"))
}
