//! Many random queries as one query on the cluster executor (`punctual::cluster::run_query`,
//! what `punctual job --workers` runs): on 3 worker threads, and on 2 processes of 1 and of 2
//! workers over loopback, every case gives what it gives on the local runtime (the same
//! events, the same last CTI, a valid stream, the same drops: see
//! `punctual_tests::split_cases::same`). Each case alone on 1, 2 and 3 threads is in
//! `tests/cluster_query.rs`.

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;

use punctual::adapters::CollectOutput;
use punctual::cluster::{run_query, ClusterConfig};
use punctual_tests::split_cases::strategy::spec;
use punctual_tests::split_cases::{on_runtime, outcomes, queries, same, Case, Outcome, Spec};

/// `n` random cases, the same on every run (a fixed seed).
fn sample(n: usize) -> Vec<Spec> {
    let mut runner = TestRunner::deterministic();
    (0..n)
        .map(|_| spec().new_tree(&mut runner).expect("a case").current())
        .collect()
}

/// Many random cases as one query, on 3 worker threads: every case's output as on the runtime.
#[test]
fn many_cases_in_one_run_on_threads() {
    let specs = sample(200);
    let cases: Vec<Case> = specs.iter().map(Spec::case).collect();
    let outs: Vec<CollectOutput<String>> = cases.iter().map(|_| CollectOutput::new()).collect();
    let (built, sinks) = (cases.clone(), outs.clone());
    let report =
        run_query(ClusterConfig::threads(3), move |_| queries(&built, &sinks)).expect("runs");
    check_all(
        &specs,
        &[outcomes(&cases, &outs, &report.report())],
        "3 threads",
    );
}

/// Checks each case's outcome in every process (the output on the first, the drops of the
/// inputs each owns) against the runtime's.
fn check_all(specs: &[Spec], processes: &[Vec<Outcome>], how: &str) {
    let mut failures = Vec::new();
    for (c, spec) in specs.iter().enumerate() {
        let want = on_runtime(spec);
        let got = Outcome {
            output: processes[0][c].output.clone(),
            dropped: processes.iter().map(|p| p[c].dropped).sum(),
        };
        if let Some(p) = processes
            .iter()
            .skip(1)
            .position(|p| !p[c].output.is_empty())
        {
            failures.push(format!("case {c}: process {} has output", p + 1));
        }
        if let Err(e) = same(&got, &want) {
            failures.push(format!("case {c} ({:?}, {how}): {e}", spec.shape));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The same 200 random cases on 2 processes of 1 worker, and of 2, over loopback: each
/// process is the `split-cases` program, on free ports, with a deadline.
#[test]
fn many_cases_on_two_processes() {
    let specs = sample(200);
    let dir = std::env::temp_dir().join(format!("punctual-split-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("specs.json");
    std::fs::write(&file, serde_json::to_string(&specs).expect("json")).expect("written");
    for workers in [1, 2] {
        // A port found free may be taken before a process binds it: then again, on others.
        let reports = (0..3)
            .find_map(|_| on_processes(&dir, &file, workers, 2).ok())
            .expect("the processes ran");
        check_all(&specs, &reports, &format!("2 processes x {workers}"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs the specs as `processes` processes of `workers` workers; each process's outcomes, or
/// `Err` when a port was taken before a process could bind it (any other failure panics).
fn on_processes(
    dir: &std::path::Path,
    specs: &std::path::Path,
    workers: usize,
    processes: usize,
) -> Result<Vec<Vec<Outcome>>, ()> {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let listeners: Vec<std::net::TcpListener> = (0..processes)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("a free port"))
        .collect();
    let hosts: Vec<String> = listeners
        .iter()
        .map(|l| format!("127.0.0.1:{}", l.local_addr().expect("bound").port()))
        .collect();
    drop(listeners);
    let hosts_file = dir.join(format!("hosts-{workers}"));
    std::fs::write(&hosts_file, hosts.join("\n")).expect("written");
    let mut children: Vec<_> = (0..processes)
        .map(|i| {
            let report = dir.join(format!("report-{workers}-{i}.json"));
            let child = Command::new(env!("CARGO_BIN_EXE_split-cases"))
                .arg(specs)
                .arg(workers.to_string())
                .arg(i.to_string())
                .arg(&hosts_file)
                .arg(&report)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("starts");
            (child, report)
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut reports = Vec::new();
    for (i, (child, report)) in children.iter_mut().enumerate() {
        loop {
            if let Some(status) = child.try_wait().expect("waits") {
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                if !status.success() && err.contains("Address already in use") {
                    for (other, _) in children.iter_mut() {
                        let _ = other.kill();
                        let _ = other.wait();
                    }
                    return Err(());
                }
                assert!(status.success(), "process {i} failed: {err}");
                break;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("process {i} did not finish in time");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let text = std::fs::read_to_string(report).expect("a report");
        let mine: Vec<Outcome> = serde_json::from_str(&text).expect("a report");
        reports.push(mine);
    }
    Ok(reports)
}
