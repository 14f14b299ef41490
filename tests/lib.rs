//! Integration and conformance tests of Punctual live in this package's test targets; what
//! several of them share is here.

pub mod split_cases;

/// The configuration of a fuzz harness: `PUNCTUAL_FUZZ_CASES` cases, or `default` (a few, for
/// `cargo test`); a failing input is saved next to the harness's source (`NAME.regressions`)
/// and replayed first by every later run.
pub fn fuzz_config(default: u32) -> proptest::test_runner::Config {
    let cases = std::env::var("PUNCTUAL_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    proptest::test_runner::Config {
        cases,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("regressions"),
        )),
        ..proptest::test_runner::Config::default()
    }
}
