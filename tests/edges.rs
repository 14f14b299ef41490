//! Many start edges at one start time, ended in one order or another (a snapshot of reference
//! data valid from one moment, each row later ended): each end edge is found without a scan
//! of the others, whatever order they end in: in the ingress (by the edge key) and in the
//! operators (the window and the join find a few edges of a start from both ends, many by
//! their payload's fingerprint). Counted in payload comparisons, not in seconds.

use std::sync::atomic::{AtomicU64, Ordering};

use punctual::adapters::{CollectOutput, MemoryInput};
use punctual::core::{EventShape, StreamItem, Time, TimeSpan};
use punctual::runtime::{InputOptions, Query};

/// Payload comparisons made so far (by every query of this test binary: its one test runs
/// them one after another).
static COMPARISONS: AtomicU64 = AtomicU64::new(0);

/// A row of reference data whose comparisons are counted.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
struct Row {
    id: u64,
}

impl PartialEq for Row {
    fn eq(&self, other: &Self) -> bool {
        COMPARISONS.fetch_add(1, Ordering::Relaxed);
        self.id == other.id
    }
}

const N: u64 = 100_000;

/// `N` start edges at time 1, then their end edges at time 5 in `ends` order, then the last
/// CTI.
fn edges(ends: impl Iterator<Item = u64>) -> Vec<StreamItem<Row>> {
    let t = Time::from_ticks;
    let mut items: Vec<StreamItem<Row>> = (0..N)
        .map(|id| StreamItem::start_edge(t(1), Row { id }))
        .collect();
    items.extend(ends.map(|id| StreamItem::end_edge(t(1), t(5), Row { id })));
    items.push(StreamItem::Cti(Time::INF));
    items
}

/// `0..N` in a scattered order (a permutation: 7919 is prime to `N`).
fn scattered() -> impl Iterator<Item = u64> {
    (0..N).map(|i| (i * 7919) % N)
}

/// Runs `edges` through a keyed (or not) input into a 10-tick tumbling count, and, joined by
/// id, against one reading per edge at time 3: the window's count and the join's results,
/// and the comparisons made.
fn run(edges: Vec<StreamItem<Row>>, keyed: bool) -> (Vec<StreamItem<u64>>, usize, u64) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let readings: Vec<StreamItem<u64>> = (0..N)
        .map(|id| StreamItem::point(Time::from_ticks(3), id))
        .chain([StreamItem::Cti(Time::INF)])
        .collect();
    let before = COMPARISONS.load(Ordering::Relaxed);
    let (counts, joined) = runtime.block_on(async {
        let mut query = Query::new("edges");
        let mut options = InputOptions::new("reference", EventShape::Edge);
        if keyed {
            options = options.edge_key(|r: &Row| r.id);
        }
        let reference = query
            .create_stream(options, &MemoryInput, &edges)
            .expect("created");
        let points = query
            .create_stream(
                InputOptions::new("readings", EventShape::Point),
                &MemoryInput,
                &readings,
            )
            .expect("created");
        let counts = CollectOutput::new();
        let window = reference.tumbling_window(TimeSpan::from_ticks(10)).count();
        query.bind_output(&window, &counts, &()).expect("bound");
        let joined = CollectOutput::new();
        let pairs = points.join_on(&reference, |p| *p, |r| r.id, |p, _| *p);
        query.bind_output(&pairs, &joined, &()).expect("bound");
        query.start().expect("started").wait().await.expect("ran");
        (counts.items(), joined.items())
    });
    let joined = joined
        .iter()
        .filter(|i| matches!(i, StreamItem::Insert(_)))
        .count();
    (counts, joined, COMPARISONS.load(Ordering::Relaxed) - before)
}

#[test]
fn end_edges_at_one_start_are_found_without_a_scan() {
    let t = Time::from_ticks;
    let one_window = vec![StreamItem::point(t(10), N), StreamItem::Cti(Time::INF)];
    // Ended last-first, first-first and scattered, with the edge key; first-first without it
    // (the ingress finds each at once; the window and the join need no key).
    // (The join's many open edges under one join key: `core`'s join tests.)
    for (name, ends, keyed) in [
        ("last-first, keyed", edges((0..N).rev()), true),
        ("first-first, keyed", edges(0..N), true),
        ("first-first, no key", edges(0..N), false),
        ("scattered, keyed", edges(scattered()), true),
    ] {
        let (counts, joined, comparisons) = run(ends, keyed);
        assert_eq!(counts, one_window, "{name}");
        assert_eq!(joined, N as usize, "{name}: every reading meets its row");
        // A scan would make about N * N / 2 (5,000,000,000) comparisons.
        assert!(
            comparisons <= 4 * N,
            "{name}: {comparisons} comparisons for {N} edges"
        );
    }
}
