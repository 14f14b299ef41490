//! One engine: every conformance case, run by the conformance runner (which feeds the query
//! driver from the case's arrivals) and by the tokio runtime (the case as a `Query`: one input
//! adapter per stream, each enqueueing its stream's arrivals and clock readings in the case's
//! global order, taking turns: `Case::runtime_query`), gives the same output, item for item,
//! the same counters and the same dead letters.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use punctual::conformance::{find_cases, run, Case, CaseSinks, Turns};
use punctual::policies::{DeadLetter, IngressCounters};
use punctual::prelude::*;

/// What one engine made of a case.
#[derive(Debug, PartialEq)]
struct Outcome {
    output: Vec<StreamItem<Row>>,
    counters: Vec<(String, IngressCounters)>,
    dead_letters: Vec<(String, Vec<DeadLetter<Row>>)>,
}

/// The case through the tokio runtime.
async fn on_runtime(case: &Arc<Case>) -> Outcome {
    let sinks = CaseSinks::new(case);
    let query = case
        .runtime_query(Turns::Global, &sinks)
        .expect("the runner accepted the case");
    let report = query
        .start()
        .expect("a runtime")
        .wait()
        .await
        .expect("no failure");
    Outcome {
        output: sinks.output(),
        counters: report.streams,
        dead_letters: sinks.dead_letters(case),
    }
}

fn check_tree(root: &Path) -> usize {
    let cases = find_cases(root).expect("conformance folder is readable");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    for dir in &cases {
        let case = Arc::new(Case::load(dir).expect("a well-formed case"));
        let by_runtime = runtime.block_on(on_runtime(&case));
        let case = Arc::try_unwrap(case).expect("the query is over");
        let by_runner = run(case).expect("the case runs");
        let by_runner = Outcome {
            output: by_runner.output,
            counters: by_runner.counters,
            dead_letters: by_runner.dead_letters,
        };
        assert_eq!(by_runtime, by_runner, "{}", dir.display());
    }
    cases.len()
}

#[test]
fn the_runner_and_the_runtime_give_the_same_output_counters_and_dead_letters() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("conformance");
    assert!(
        check_tree(&root) >= 20,
        "too few cases under {}",
        root.display()
    );
    let shared = root.join("../../../shared/conformance");
    if shared.is_dir() {
        check_tree(&shared);
    }
}
