//! Operator throughput on sorted batches (as ingress releases them): union of two streams, an
//! equi-join of fast points with slow edges (ordered, and unordered: the fast points fed to an
//! unordered source and the results taken as released), and a 1 s tumbling count and sum per
//! key; the same window over an unordered source where one event in 20 comes a batch late,
//! without allowed lateness (the CTI waits for the late ones) and with it (results given at
//! the CTI plus the lateness, revised by the late ones).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;

use punctual::core::ops::{Count, QueryGraph, Stream, Sum};
use punctual::core::{Batch, Order, Ordered, Time, TimeSpan, Unordered};

const N: i64 = 1_000_000;
const PER_BATCH: i64 = 1_000;
const KEYS: i64 = 1_000;

/// Points every 1,000 ticks with (key, value), in batches of 1,000 sealed by a CTI.
fn fast_batches(offset: i64) -> Vec<Batch<(i64, i64)>> {
    (0..N / PER_BATCH)
        .map(|b| {
            let mut batch = Batch::with_capacity(PER_BATCH as usize);
            for i in b * PER_BATCH..(b + 1) * PER_BATCH {
                let t = Time::from_ticks(i * 1000 + offset);
                batch.push_event(t, t.next_tick(), (i % KEYS, i));
            }
            batch.push_cti(Time::from_ticks((b + 1) * PER_BATCH * 1000));
            batch
        })
        .collect()
}

/// Every key's reference value as a start edge at 0, then only CTIs.
fn reference_batches() -> Vec<Batch<(i64, i64)>> {
    (0..N / PER_BATCH)
        .map(|b| {
            let mut batch = Batch::new();
            if b == 0 {
                for k in 0..KEYS {
                    batch.push_event(Time::from_ticks(0), Time::INF, (k, k + 1));
                }
            }
            batch.push_cti(Time::from_ticks((b + 1) * PER_BATCH * 1000));
            batch
        })
        .collect()
}

/// [`fast_batches`] with one event in 20 held back to the next batch (late by about a
/// batch), each batch's CTI `lag` ticks behind its newest event.
fn late_batches(lag: i64) -> Vec<Batch<(i64, i64)>> {
    let mut held: Vec<(Time, (i64, i64))> = Vec::new();
    (0..N / PER_BATCH)
        .map(|b| {
            let mut batch = Batch::with_capacity(PER_BATCH as usize);
            for (t, p) in held.drain(..) {
                batch.push_event(t, t.next_tick(), p);
            }
            for i in b * PER_BATCH..(b + 1) * PER_BATCH {
                let t = Time::from_ticks(i * 1000);
                if i % 20 == 7 {
                    held.push((t, (i % KEYS, i)));
                } else {
                    batch.push_event(t, t.next_tick(), (i % KEYS, i));
                }
            }
            batch.push_cti(Time::from_ticks((b + 1) * PER_BATCH * 1000 - lag));
            batch
        })
        .collect()
}

/// The 1 s tumbling count and sum per key over an unordered source fed `batches`, with
/// `lateness` if given; returns how many items came out.
fn late_window(batches: &[Batch<(i64, i64)>], lateness: Option<TimeSpan>) -> usize {
    let graph = QueryGraph::new();
    let fast = graph.source::<(i64, i64), Unordered>();
    let windows = fast
        .tumbling_window(TimeSpan::from_secs(1))
        .group_by(|x: &(i64, i64)| x.0);
    let agg = (Count, Sum::of(|x: &(i64, i64)| x.1 as f64));
    match lateness {
        Some(l) => pump(
            &graph,
            (&fast, &windows.allowed_lateness(l).aggregate(agg)),
            batches,
        ),
        None => pump(&graph, (&fast, &windows.aggregate(agg)), batches),
    }
}

/// An unordered source of (key, value) points.
type Fast = Stream<(i64, i64), Unordered>;

/// Feeds `batches` to `input`, taking `out` after each; returns how many items came out.
fn pump<P: punctual::core::ops::Payload, O: Order>(
    graph: &QueryGraph,
    (input, out): (&Fast, &Stream<P, O>),
    batches: &[Batch<(i64, i64)>],
) -> usize {
    graph.keep_output(out);
    let mut sink = Batch::new();
    let mut n = 0;
    for b in batches {
        graph.feed(input, &mut b.clone());
        graph.take_output(out, &mut sink);
        n += sink.len();
        sink.clear();
    }
    n
}

fn drive<O: punctual::core::ops::Payload>(
    inputs: &[Vec<Batch<(i64, i64)>>],
    build: impl FnOnce(&[Stream<(i64, i64)>]) -> Stream<O>,
) -> usize {
    let graph = QueryGraph::new();
    let sources: Vec<_> = inputs
        .iter()
        .map(|_| graph.source::<(i64, i64), Ordered>())
        .collect();
    let out = build(&sources);
    graph.keep_output(&out);
    let mut sink = Batch::new();
    let mut n = 0;
    for b in 0..inputs[0].len() {
        for (k, input) in inputs.iter().enumerate() {
            let mut batch = input[b].clone();
            graph.feed(&sources[k], &mut batch);
        }
        graph.take_output(&out, &mut sink);
        n += sink.len();
        sink.clear();
    }
    n
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("operators");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(10);
    let (a, b, r) = (fast_batches(0), fast_batches(500), reference_batches());
    g.bench_function("union", |bench| {
        bench.iter(|| black_box(drive(&[a.clone(), b.clone()], |s| s[0].union(&[&s[1]]))))
    });
    g.bench_function("equi_join_with_reference_edges", |bench| {
        bench.iter(|| {
            black_box(drive(&[a.clone(), r.clone()], |s| {
                s[0].join_on(&s[1], |x| x.0, |y| y.0, |x, y| x.1 * y.1)
            }))
        })
    });
    g.bench_function("unordered_equi_join_with_reference_edges", |bench| {
        bench.iter(|| {
            let graph = QueryGraph::new();
            let fast = graph.source::<(i64, i64), Unordered>();
            let reference = graph.source::<(i64, i64), Ordered>();
            let out = fast.join_on(&reference, |x| x.0, |y| y.0, |x, y| x.1 * y.1);
            graph.keep_output(&out);
            let mut sink = Batch::new();
            let mut n = 0;
            for (f, rb) in a.iter().zip(&r) {
                // The reference's CTI first (as an imported CTI comes), then the fast points.
                graph.feed(&reference, &mut rb.clone());
                graph.feed(&fast, &mut f.clone());
                graph.take_output(&out, &mut sink);
                n += sink.len();
                sink.clear();
            }
            black_box(n)
        })
    });
    g.bench_function("tumbling_count_sum_per_key", |bench| {
        bench.iter(|| {
            black_box(drive(std::slice::from_ref(&a), |s| {
                s[0].tumbling_window(TimeSpan::from_secs(1))
                    .group_by(|x: &(i64, i64)| x.0)
                    .aggregate((Count, Sum::of(|x: &(i64, i64)| x.1 as f64)))
            }))
        })
    });
    // One event in 20 a batch (1,000,000 ticks) late: the CTI 2,000,000 ticks behind.
    let late = late_batches(2_000_000);
    g.bench_function("unordered_tumbling_late_events_waited_for", |bench| {
        bench.iter(|| black_box(late_window(&late, None)))
    });
    g.bench_function("unordered_tumbling_with_allowed_lateness", |bench| {
        bench.iter(|| black_box(late_window(&late, Some(TimeSpan::from_ticks(2_000_000)))))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
