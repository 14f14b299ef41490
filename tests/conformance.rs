//! Runs every conformance case: the project's own copy in `tests/conformance/` and, when it
//! exists, every case in `../shared/conformance/` (so newly published cases are picked up).
//!
//! Cases that need something this build does not have yet are listed in [`EXPECTED_UNSUPPORTED`]
//! with the reason. Each listed case must fail with an "unsupported" error (not a wrong result);
//! every other case must pass. A listed case that starts passing fails the test too, so the list
//! is kept exact.

use std::path::{Path, PathBuf};

use punctual::conformance::{find_cases, run_case, CaseError};

/// Cases expected to be refused as unsupported, by path relative to the conformance root.
const EXPECTED_UNSUPPORTED: &[(&str, &str)] = &[];

fn relative(root: &Path, dir: &Path) -> String {
    dir.strip_prefix(root)
        .unwrap_or(dir)
        .to_string_lossy()
        .replace('\\', "/")
}

fn run_tree(root: &Path) -> (usize, Vec<String>) {
    let cases = find_cases(root).expect("conformance folder is readable");
    assert!(!cases.is_empty(), "no cases under {}", root.display());
    let mut failures = Vec::new();
    let mut passed = 0;
    for dir in &cases {
        let name = relative(root, dir);
        let expected_unsupported = EXPECTED_UNSUPPORTED.iter().find(|(n, _)| *n == name);
        match (run_case(dir), expected_unsupported) {
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
    let (passed, failures) = run_tree(root);
    assert!(
        failures.is_empty(),
        "{} conformance case(s) failed under {}:\n{}",
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
fn shared_cases_when_present() {
    let shared = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/conformance");
    if shared.is_dir() {
        check(&shared);
    } else {
        eprintln!("no {} here: only the project's copy runs", shared.display());
    }
}
