//! Operators release their state as CTIs pass: a long stream through a join with a slowly
//! changing reference and a hopping window keeps the retained state bounded by the CTI lag and
//! the number of keys, not by the length of the stream.

use punctual::core::ops::{Count, Payload, QueryGraph, Stream};
use punctual::core::{Batch, Order, Ordered, Time, TimeSpan, Unordered};

const EVENTS: i64 = 2_000_000;
const KEYS: i64 = 100;
const CTI_EVERY: i64 = 1_000;
const VERSION_EVERY: i64 = 100_000;

/// How many items `graph` has for `stream`'s output now (taken through `out`, left empty).
fn taken<P: Payload, O: Order>(
    graph: &QueryGraph,
    stream: &Stream<P, O>,
    out: &mut Batch<P>,
) -> usize {
    graph.take_output(stream, out);
    let n = out.len();
    out.clear();
    n
}

#[test]
fn join_and_window_state_stays_bounded_over_millions_of_events() {
    let t = Time::from_ticks;
    let graph = QueryGraph::new();
    let fast = graph.source::<(i64, i64), Ordered>(); // (key, value), a point per tick
    let reference = graph.source::<(i64, i64), Ordered>(); // (key, version), edges
    let counts = fast
        .join_on(&reference, |r| r.0, |c| c.0, |r, c| (r.0, r.1 * c.1))
        .hopping_window(TimeSpan::from_ticks(10_000), TimeSpan::from_ticks(5_000))
        .group_by(|x: &(i64, i64)| x.0)
        .aggregate(Count);
    graph.keep_output(&counts);

    let (mut f, mut r, mut out) = (Batch::new(), Batch::new(), Batch::new());
    let (mut results, mut max_state, mut last_state) = (0usize, 0usize, 0usize);
    for chunk in 0..EVENTS / CTI_EVERY {
        let base = chunk * CTI_EVERY;
        if base % VERSION_EVERY == 0 {
            // Every key's reference value changes: close the old version, open the new one.
            for k in 0..KEYS {
                let version = base / VERSION_EVERY;
                if version > 0 {
                    r.push_event(t(base), t(base - VERSION_EVERY), (k, version - 1 + 1));
                }
            }
            for k in 0..KEYS {
                r.push_event(t(base), Time::INF, (k, base / VERSION_EVERY + 1));
            }
        }
        for i in base..base + CTI_EVERY {
            f.push_event(t(i), t(i + 1), (i % KEYS, i));
        }
        let cti = t(base + CTI_EVERY);
        f.push_cti(cti);
        r.push_cti(cti);
        graph.feed(&reference, &mut r);
        graph.feed(&fast, &mut f);
        results += taken(&graph, &counts, &mut out);
        let state: usize = graph.state_sizes().iter().map(|s| s.2).sum();
        max_state = max_state.max(state);
        last_state = state;
    }
    // Windows of 10,000 ticks every 5,000 over 2,000,000 ticks, one result per key each.
    assert!(results > 390 * KEYS as usize, "only {results} results");
    // One CTI lag of fast events, the open reference edges, two open windows per key, the join
    // results waiting: far below the 2,000,000 events that went through.
    assert!(
        max_state <= 5_000,
        "operators held {max_state} items at most"
    );
    assert!(
        last_state <= 5_000,
        "operators hold {last_state} items at the end"
    );
}

/// The unordered join holds each point only until the reference's CTI passes it: over two
/// million points, its state stays one CTI lag of points plus the reference's open edges, and
/// every point meets exactly one version.
#[test]
fn unordered_join_state_stays_bounded_over_millions_of_events() {
    let t = Time::from_ticks;
    let graph = QueryGraph::new();
    let fast = graph.source::<(i64, i64), Unordered>(); // (key, value), a point per tick
    let reference = graph.source::<(i64, i64), Ordered>(); // (key, version), edges
    let joined = fast.join_on(&reference, |r| r.0, |c| c.0, |r, c| (r.0, r.1 * c.1));
    graph.keep_output(&joined);

    let (mut f, mut r, mut out) = (Batch::new(), Batch::new(), Batch::new());
    let (mut results, mut max_state) = (0usize, 0usize);
    for chunk in 0..EVENTS / CTI_EVERY {
        let base = chunk * CTI_EVERY;
        // The reference's CTI is the fast stream's (as if imported), before its new edges.
        r.push_cti(t(base));
        if base % VERSION_EVERY == 0 {
            let version = base / VERSION_EVERY;
            for k in 0..KEYS {
                if version > 0 {
                    r.push_event(t(base), t(base - VERSION_EVERY), (k, version));
                }
            }
            for k in 0..KEYS {
                r.push_event(t(base), Time::INF, (k, version + 1));
            }
        }
        // This chunk's points arrive (in reverse, to exercise the out-of-order hold) while
        // the CTI is one chunk behind: they wait for the next CTIs.
        for i in (base..base + CTI_EVERY).rev() {
            f.push_event(t(i), t(i + 1), (i % KEYS, i));
        }
        f.push_cti(t(base));
        graph.feed(&reference, &mut r);
        graph.feed(&fast, &mut f);
        results += taken(&graph, &joined, &mut out);
        let state: usize = graph.state_sizes().iter().map(|s| s.2).sum();
        max_state = max_state.max(state);
    }
    f.push_cti(Time::INF);
    r.push_cti(Time::INF);
    graph.feed(&reference, &mut r);
    graph.feed(&fast, &mut f);
    graph.take_output(&joined, &mut out);
    results += out.len();
    assert_eq!(results, EVENTS as usize, "each point meets one version");
    assert_eq!(out.last_cti(), Some(Time::INF));
    // Two chunks of points at most (the one arriving and the one behind the CTI), and the
    // reference's open edges (plus the closed ones not yet passed).
    assert!(
        max_state <= 2 * CTI_EVERY as usize + 3 * KEYS as usize,
        "held {max_state}"
    );
    let end: usize = graph.state_sizes().iter().map(|s| s.2).sum();
    assert!(end <= 2 * KEYS as usize, "holds {end} at the end");
}
