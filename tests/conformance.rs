//! Runs every conformance case: the project's own copy in `tests/conformance/` and, when it
//! exists, every case in `../shared/conformance/` (so newly published cases are picked up).
//!
//! Every case also runs on 2 and 3 workers through the cluster executor `punctual job
//! --workers` runs (`punctual::cluster::run_query`, threads of this process): the output as
//! `CaseRun::check` compares it on several workers, the counters and dead letters of the run
//! on one.
//!
//! Cases that need something this build does not have yet are listed in [`EXPECTED_UNSUPPORTED`]
//! with the reason. Each listed case must fail with an "unsupported" error (not a wrong result);
//! every other case must pass. A listed case that starts passing fails the test too, so the list
//! is kept exact.

use std::path::{Path, PathBuf};

use punctual::cluster::ClusterConfig;
use punctual::conformance::{
    find_cases, run_case, run_cluster, run_split, Case, CaseError, CaseRun,
};

/// Cases expected to be refused as unsupported, by path relative to the conformance root.
const EXPECTED_UNSUPPORTED: &[(&str, &str)] = &[];

fn relative(root: &Path, dir: &Path) -> String {
    dir.strip_prefix(root)
        .unwrap_or(dir)
        .to_string_lossy()
        .replace('\\', "/")
}

/// Runs a case on one worker, or on `workers`; split, its counters and dead letters must be
/// those of the run on one.
fn run_on(dir: &Path, workers: usize) -> Result<CaseRun, CaseError> {
    if workers == 1 {
        return run_case(dir);
    }
    let split = run_split(Case::load(dir)?, workers)?;
    let one = run_case(dir)?;
    if split.counters != one.counters {
        return Err(CaseError::Config(format!(
            "on {workers} workers the counters differ: {:?} against {:?} on one",
            split.counters, one.counters
        )));
    }
    let letters = |r: &CaseRun| -> Vec<(String, usize)> {
        r.dead_letters
            .iter()
            .map(|(n, l)| (n.clone(), l.len()))
            .collect()
    };
    if letters(&split) != letters(&one) {
        return Err(CaseError::Config(format!(
            "on {workers} workers the dead letters differ: {:?} against {:?} on one",
            letters(&split),
            letters(&one)
        )));
    }
    Ok(split)
}

fn run_tree_on(root: &Path, workers: usize) -> (usize, Vec<String>) {
    let cases = find_cases(root).expect("conformance folder is readable");
    assert!(!cases.is_empty(), "no cases under {}", root.display());
    let mut failures = Vec::new();
    let mut passed = 0;
    for dir in &cases {
        let name = relative(root, dir);
        let expected_unsupported = EXPECTED_UNSUPPORTED.iter().find(|(n, _)| *n == name);
        match (run_on(dir, workers), expected_unsupported) {
            (Err(CaseError::Unsupported(_)), Some(_)) => {}
            (Err(e), None) => failures.push(format!("{name}: {e}")),
            (Err(e), Some((_, why))) => {
                failures.push(format!("{name}: listed as unsupported ({why}) but failed otherwise: {e}"))
            }
            (Ok(_), Some((_, why))) => failures.push(format!(
                "{name}: listed as unsupported ({why}) but it runs now: take it off EXPECTED_UNSUPPORTED"
            )),
            (Ok(run), None) => match run.check() {
                Ok(()) => passed += 1,
                Err(ms) => failures.push(format!(
                    "{name}:\n  {}\n  actual output:\n    {}",
                    ms.iter().map(|m| m.to_string()).collect::<Vec<_>>().join("\n  "),
                    run.output_lines().join("\n    ")
                )),
            },
        }
    }
    (passed, failures)
}

fn check(root: &Path) {
    check_on(root, 1);
}

fn check_on(root: &Path, workers: usize) {
    let (passed, failures) = run_tree_on(root, workers);
    assert!(
        failures.is_empty(),
        "{} conformance case(s) failed under {} on {workers} worker(s):\n{}",
        failures.len(),
        root.display(),
        failures.join("\n")
    );
    assert!(
        passed >= 11,
        "only {passed} cases passed under {}",
        root.display()
    );
}

#[test]
fn project_copy_of_the_cases() {
    check(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("conformance"));
}

#[test]
fn project_copy_of_the_cases_on_two_and_three_workers() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("conformance");
    check_on(&root, 2);
    check_on(&root, 3);
}

#[test]
fn shared_cases_when_present() {
    let shared = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance");
    if shared.is_dir() {
        check(&shared);
        check_on(&shared, 2);
        check_on(&shared, 3);
    } else {
        eprintln!("no {} here: only the project's copy runs", shared.display());
    }
}

/// A case on several workers runs through the executor `punctual job --workers` runs
/// (`run_query`): its report is that executor's, one per worker, with the worker that owns
/// each input (the live placement: inputs that import each other's CTIs on one worker,
/// others round robin).
#[test]
fn a_case_on_two_workers_runs_through_the_job_executor() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("conformance");
    let synced = Case::load(&root.join("import/slow-reference-synced-to-fast-stream"))
        .expect("the case loads");
    let ran = run_cluster(synced, &ClusterConfig::threads(2)).expect("it runs");
    assert_eq!(ran.report.workers.len(), 2);
    assert_eq!(ran.report.owners.len(), 2);
    assert_eq!(
        ran.report.owners[0], ran.report.owners[1],
        "a stream and the one it imports from on one worker"
    );
    assert_eq!(ran.run.workers, 2);
    assert!(ran.run.check().is_ok(), "{:?}", ran.run.check());
    let union = Case::load(&root.join("operators/union-releases-at-min-cti")).expect("loads");
    let ran = run_cluster(union, &ClusterConfig::threads(2)).expect("it runs");
    assert_eq!(
        ran.report.owners,
        vec![0, 1],
        "two independent inputs, round robin"
    );
    assert!(ran.run.check().is_ok(), "{:?}", ran.run.check());
}

/// The functions the cases under `tests/conformance-functions` call, as a program that runs
/// them registers them: `udf.Scaled(v, k)` is `v * k` (integers), `uda.Product` the product
/// of its argument's values.
fn case_functions() -> punctual::sql::Functions {
    use punctual::rows::Value;
    struct Product;
    impl punctual::sql::UserAggregate for Product {
        fn init(&self) -> Value {
            Value::Float(1.0)
        }
        fn accumulate(&self, state: &mut Value, args: &[Value]) {
            let factor = args.first().and_then(Value::as_f64).unwrap_or(1.0);
            *state = Value::Float(state.as_f64().unwrap_or(1.0) * factor);
        }
        fn result(&self, state: &Value) -> Value {
            state.clone()
        }
    }
    punctual::sql::Functions::new()
        .function("Scaled", |args: &[Value]| match args {
            [Value::Int(v), Value::Int(k)] => v
                .checked_mul(*k)
                .map(Value::Int)
                .ok_or_else(|| "out of range".to_owned()),
            _ => Err(format!("Scaled reads two integers, not {args:?}")),
        })
        .aggregate("Product", Product)
}

/// The cases whose queries call user-defined functions, with the functions registered, on
/// one worker and on two.
#[test]
fn cases_with_user_defined_functions_on_one_and_two_workers() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("conformance-functions");
    let mut cases = 0;
    for entry in std::fs::read_dir(&root).expect("the cases").flatten() {
        let dir = entry.path();
        if !dir.join("case.toml").is_file() {
            continue;
        }
        let load = || {
            let mut case = Case::load(&dir).expect("a well-formed case");
            case.sql = case.sql.map(|q| q.with_functions(case_functions()));
            case
        };
        let one = punctual::conformance::run(load()).expect("runs");
        let two = punctual::conformance::run_split(load(), 2).expect("runs on two workers");
        for (run, on) in [(one, "one worker"), (two, "two workers")] {
            if let Err(ms) = run.check() {
                panic!(
                    "{} on {on}: {ms:?}\nactual:\n{}",
                    dir.display(),
                    run.output_lines().join("\n")
                );
            }
        }
        cases += 1;
    }
    assert!(cases >= 1, "no case under {}", root.display());
}
