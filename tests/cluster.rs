//! The same query on one worker and split over several (`punctual::cluster`): on random
//! inputs (two inputs interleaved, events in any order between CTIs), every operator gives
//! the same output, CTI by CTI (the events between two CTIs compared as a multiset), and the
//! same drops, on 1, 2 and 3 worker threads, and on 2 processes of 1 and of 2 workers over
//! loopback, as through the driver alone.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;

use punctual::cluster::ClusterConfig;
use punctual_tests::split_cases::strategy::spec;
use punctual_tests::split_cases::{local, segments, Cases, Outcome, Spec};

/// Compares one case's outcomes on a cluster (one per worker; worker 0 has the output) with
/// the driver's alone.
fn same(spec: &Spec, want: &Outcome, got: &[Outcome], how: &str) -> Result<(), String> {
    let output = &got[0].output;
    if segments(output) != segments(&want.output) {
        return Err(format!(
            "{how}: {:?}\nalone:    {:?}\nsplit:    {:?}",
            spec.shape, want.output, output
        ));
    }
    let dropped: u64 = got.iter().map(|o| o.dropped).sum();
    if dropped != want.dropped {
        return Err(format!("{how}: dropped {dropped}, alone {}", want.dropped));
    }
    if let Some(w) = got
        .iter()
        .skip(1)
        .position(|o| o.output.iter().any(|i| !i.starts_with("CTI ")))
    {
        return Err(format!("{how}: worker {} kept output events", w + 1));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Each case alone, on 1, 2 and 3 worker threads.
    #[test]
    fn one_case_on_threads(spec in spec()) {
        let case = spec.case();
        let want = local(&case);
        for workers in 1..=3 {
            let reports = punctual::cluster::run(Cases::shared(vec![case.clone()]), ClusterConfig::threads(workers))
                .map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(reports.len(), workers);
            let got: Vec<Outcome> = reports.into_iter().map(|mut r| r.remove(0)).collect();
            same(&spec, &want, &got, &format!("{workers} threads")).map_err(TestCaseError::fail)?;
        }
    }
}

/// `n` random cases, the same on every run (a fixed seed).
fn sample(n: usize) -> Vec<Spec> {
    let mut runner = TestRunner::deterministic();
    (0..n)
        .map(|_| spec().new_tree(&mut runner).expect("a case").current())
        .collect()
}

/// Many random cases as one run, on 3 worker threads: every case's output as alone.
#[test]
fn many_cases_in_one_run_on_threads() {
    let specs = sample(200);
    let cases: Vec<_> = specs.iter().map(Spec::case).collect();
    let reports = punctual::cluster::run(Cases::shared(cases.clone()), ClusterConfig::threads(3))
        .expect("runs");
    check_all(&specs, &reports, "3 threads");
}

fn check_all(specs: &[Spec], reports: &[Vec<Outcome>], how: &str) {
    let mut failures = Vec::new();
    for (c, spec) in specs.iter().enumerate() {
        let want = local(&spec.case());
        let got: Vec<Outcome> = reports.iter().map(|r| r[c].clone()).collect();
        if let Err(e) = same(spec, &want, &got, how) {
            failures.push(format!("case {c}: {e}"));
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

/// Runs the specs as `processes` processes of `workers` workers; every worker's outcomes, or
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
        let mine: Vec<Vec<Outcome>> = serde_json::from_str(&text).expect("a report");
        reports.extend(mine);
    }
    Ok(reports)
}
