//! One engine: every conformance case, run by the conformance runner (which feeds the query
//! driver from the case's arrivals) and by the tokio runtime (one input adapter per stream,
//! each enqueueing its stream's arrivals in the case's global order, taking turns), gives the
//! same output, item for item, the same counters and the same dead letters.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::watch;

use punctual::adapters::CollectOutput;
use punctual::conformance::{find_cases, run, Case, CaseArrival};
use punctual::core::ops::Stream;
use punctual::policies::{Arrival, DeadLetter, IngressCounters};
use punctual::prelude::*;
use punctual::runtime::{
    AdapterError, DeadLetterCollector, EnqueueError, InputAdapter, InputAdapterFactory,
    InputContext, Query,
};

/// The arrivals of every stream in their global order, then the end of every stream that had
/// none, in declaration order (what the runner does when the arrivals run out), and whose turn
/// it is.
struct Turns {
    arrivals: Vec<CaseArrival>,
    next: watch::Sender<usize>,
}

impl Turns {
    fn new(case: &Case) -> Arc<Self> {
        let mut arrivals = case.arrivals.clone();
        for stream in 0..case.streams.len() {
            if !arrivals
                .iter()
                .any(|a| a.stream == stream && a.item.is_none())
            {
                arrivals.push(CaseArrival {
                    line: 0,
                    stream,
                    item: None,
                    arrival: None,
                    partition: None,
                    clock: None,
                });
            }
        }
        Arc::new(Turns {
            arrivals,
            next: watch::channel(0).0,
        })
    }
}

/// Feeds one stream its arrivals, each when its turn comes. At its `eof` it returns; the turn
/// passes on only when the adapter is dropped, which the runtime does after it has ended the
/// stream's input.
struct TurnInput {
    turns: Arc<Turns>,
    stream: usize,
}

struct TurnAdapter {
    turns: Arc<Turns>,
    stream: usize,
    ended: bool,
}

impl InputAdapterFactory<(), Row> for TurnInput {
    type Adapter = TurnAdapter;
    fn create(&self, _: &(), _: EventShape) -> Result<TurnAdapter, AdapterError> {
        Ok(TurnAdapter {
            turns: Arc::clone(&self.turns),
            stream: self.stream,
            ended: false,
        })
    }
}

#[async_trait]
impl InputAdapter<Row> for TurnAdapter {
    async fn run(&mut self, ctx: &mut InputContext<Row>) -> Result<(), AdapterError> {
        let mut next = self.turns.next.subscribe();
        loop {
            let (arrivals, me) = (&self.turns.arrivals, self.stream);
            let at = *next
                .wait_for(|&k| k >= arrivals.len() || arrivals[k].stream == me)
                .await
                .map_err(AdapterError::other)?;
            let Some(arrival) = arrivals.get(at) else {
                return Ok(());
            };
            let Some(item) = arrival.item.clone() else {
                self.ended = true;
                return Ok(());
            };
            let from = Arrival {
                time: arrival.arrival,
                partition: arrival.partition,
            };
            match ctx.enqueue_with(item, from).await {
                Ok(_) | Err(EnqueueError::Rejected { .. }) => {}
                Err(e) => return Err(e.into()),
            }
            self.turns.next.send_modify(|k| *k += 1);
        }
    }
}

impl Drop for TurnAdapter {
    fn drop(&mut self) {
        if self.ended {
            self.turns.next.send_modify(|k| *k += 1);
        }
    }
}

/// What one engine made of a case.
#[derive(Debug, PartialEq)]
struct Outcome {
    output: Vec<StreamItem<Row>>,
    counters: Vec<(String, IngressCounters)>,
    dead_letters: Vec<(String, Vec<DeadLetter<Row>>)>,
}

/// The case through the tokio runtime.
async fn on_runtime(case: &Case) -> Outcome {
    let turns = Turns::new(case);
    // No clock readings: the runner gives none either (cases with `clock` lines are left out).
    let mut query = Query::new("case").clock_interval(std::time::Duration::from_secs(365 * 86_400));
    let mut streams: Vec<Stream<Row>> = Vec::new();
    let mut letters = Vec::new();
    for (i, spec) in case.streams.iter().enumerate() {
        let input = TurnInput {
            turns: Arc::clone(&turns),
            stream: i,
        };
        let stream = query
            .create_stream(spec.options(), &input, &())
            .expect("the runner accepted the stream");
        let collector = DeadLetterCollector::new();
        query
            .bind_dead_letters(&stream, collector.clone())
            .expect("an input stream");
        streams.push(stream);
        letters.push(collector);
    }
    let output = case.query(&streams).expect("the runner accepted the query");
    let out = CollectOutput::new();
    query
        .bind_output(&output, &out, &())
        .expect("a stream of the query");
    let report = query
        .start()
        .expect("a runtime")
        .wait()
        .await
        .expect("no failure");
    Outcome {
        output: out.items(),
        counters: report.streams,
        dead_letters: case
            .streams
            .iter()
            .zip(&letters)
            .map(|(s, c)| (s.name.clone(), c.letters()))
            .collect(),
    }
}

fn check_tree(root: &Path) -> usize {
    let cases = find_cases(root).expect("conformance folder is readable");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    for dir in &cases {
        let case = Case::load(dir).expect("a well-formed case");
        if case.arrivals.iter().any(|a| a.clock.is_some()) {
            // Scripted clock readings: the runtime reads its clock on its own schedule, and a
            // reading after events changes what the arrival strategy estimates, so the two
            // cannot be lined up reading for reading. The runner checks these cases alone.
            continue;
        }
        let by_runtime = runtime.block_on(on_runtime(&case));
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
