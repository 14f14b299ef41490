//! Ingress throughput: in-order points, and points 5% out of order with a grace period,
//! CTIs generated every 1,000 events (the benchmark workload of BENCHMARKS.md, scaled down): one item
//! at a time, from an iterator, as columns, and as columns released on arrival (an unordered
//! source).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::hint::black_box;

use punctual_core::{EventOrder, StreamItem, Time, TimeSpan};
use punctual_policies::{
    AdvanceTimeGenerationSettings, AdvanceTimePolicy, Ingress, IngressConfig, IngressOutput,
};

const N: i64 = 1_000_000;

/// Event i at 1,000 ticks per event; every 20th is moved back by up to 20,000 ticks.
fn items(out_of_order: bool) -> Vec<StreamItem<u64>> {
    let mut state = 42u64;
    (0..N)
        .map(|i| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let mut t = i * 1000;
            if out_of_order && state >> 59 == 0 {
                t -= ((state >> 20) % 20_000) as i64;
            }
            StreamItem::point(Time::from_ticks(t), state)
        })
        .collect()
}

fn ingress(delay: i64, on_arrival: bool) -> Ingress<u64> {
    let generation = AdvanceTimeGenerationSettings::every_events(1000)
        .delay(TimeSpan::from_ticks(delay))
        .final_cti(true)
        .build()
        .expect("valid settings");
    Ingress::new(IngressConfig {
        generation: Some(generation),
        policy: Some(AdvanceTimePolicy::Drop),
        order: if on_arrival {
            EventOrder::Arrival
        } else {
            EventOrder::Sorted
        },
        ..IngressConfig::default()
    })
}

/// The same through [`Ingress::enqueue_point_columns`], 1,000 points a call.
fn run_columns(times: &[Time], payloads: &[u64], delay: i64, on_arrival: bool) -> u64 {
    let mut ingress = ingress(delay, on_arrival);
    let mut out = IngressOutput::new();
    let mut released = 0u64;
    for (t, p) in times.chunks(1000).zip(payloads.chunks(1000)) {
        let _ = ingress.enqueue_point_columns(t, p, &mut out);
        drain(&mut out, &mut released);
    }
    ingress.finish(&mut out);
    released ^ out.batch.len() as u64
}

/// The same through [`Ingress::enqueue_point_records`] on `(time, payload)` records, 1,000 a
/// call.
fn run_records(points: &[(Time, u64)], delay: i64, on_arrival: bool) -> u64 {
    let mut ingress = ingress(delay, on_arrival);
    let mut out = IngressOutput::new();
    let mut released = 0u64;
    for chunk in points.chunks(1000) {
        let _ = ingress.enqueue_point_records(chunk, |r| r.0, |r| r.1, &mut out);
        drain(&mut out, &mut released);
    }
    ingress.finish(&mut out);
    released ^ out.batch.len() as u64
}

/// The same with a filter fused into the ingress (half the payloads pass,
/// [`Ingress::fuse_filter`]).
fn run_records_filtered(points: &[(Time, u64)], delay: i64, on_arrival: bool) -> u64 {
    let mut ingress = ingress(delay, on_arrival);
    ingress.fuse_filter(Box::new(|p: &u64| {
        p.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 63 == 0
    }));
    let mut out = IngressOutput::new();
    let mut released = 0u64;
    for chunk in points.chunks(1000) {
        let _ = ingress.enqueue_point_records(chunk, |r| r.0, |r| r.1, &mut out);
        drain(&mut out, &mut released);
    }
    ingress.finish(&mut out);
    released ^ out.batch.len() as u64
}

/// Consumes what the ingress released once it is 4,096 events or more.
fn drain(out: &mut IngressOutput<u64>, released: &mut u64) {
    if out.batch.len() >= 4096 {
        *released += out.batch.payloads().iter().fold(0, |a, p| a ^ p);
        out.batch.clear();
        out.dead_letters.clear();
    }
}

/// The same through [`Ingress::enqueue_points`], 1,000 points a call.
fn run_points(points: &[(Time, u64)], delay: i64) -> u64 {
    let mut ingress = ingress(delay, false);
    let mut out = IngressOutput::new();
    let mut released = 0u64;
    for chunk in points.chunks(1000) {
        let _ = ingress.enqueue_points(chunk.iter().copied(), &mut out);
        drain(&mut out, &mut released);
    }
    ingress.finish(&mut out);
    released ^ out.batch.len() as u64
}

fn run(items: &[StreamItem<u64>], delay: i64) -> u64 {
    let mut ingress = ingress(delay, false);
    let mut out = IngressOutput::new();
    let mut released = 0u64;
    for item in items {
        let _ = ingress.enqueue(item.clone(), &mut out);
        drain(&mut out, &mut released);
    }
    ingress.finish(&mut out);
    released ^ out.batch.len() as u64
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("ingress");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(10);
    for (name, ooo, delay) in [
        ("in_order", false, 0),
        ("five_pct_out_of_order", true, 20_000),
    ] {
        let data = items(ooo);
        g.bench_with_input(BenchmarkId::from_parameter(name), &data, |b, d| {
            b.iter(|| black_box(run(d, delay)))
        });
        let points: Vec<(Time, u64)> = data
            .iter()
            .filter_map(|item| match item {
                StreamItem::Insert(e) => Some((e.kind.start(), e.payload)),
                StreamItem::Cti(_) => None,
            })
            .collect();
        g.bench_with_input(
            BenchmarkId::from_parameter(format!("{name}/enqueue_points")),
            &points,
            |b, p| b.iter(|| black_box(run_points(p, delay))),
        );
        let (times, payloads): (Vec<Time>, Vec<u64>) = points.iter().copied().unzip();
        for (variant, on_arrival) in [("columns", false), ("columns_on_arrival", true)] {
            g.bench_function(
                BenchmarkId::from_parameter(format!("{name}/{variant}")),
                |b| b.iter(|| black_box(run_columns(&times, &payloads, delay, on_arrival))),
            );
        }
        for (variant, on_arrival) in [("records", false), ("records_on_arrival", true)] {
            g.bench_function(
                BenchmarkId::from_parameter(format!("{name}/{variant}")),
                |b| b.iter(|| black_box(run_records(&points, delay, on_arrival))),
            );
        }
        for (variant, on_arrival) in [
            ("records_filtered", false),
            ("records_filtered_on_arrival", true),
        ] {
            g.bench_function(
                BenchmarkId::from_parameter(format!("{name}/{variant}")),
                |b| b.iter(|| black_box(run_records_filtered(&points, delay, on_arrival))),
            );
        }
    }
    g.finish();
}

/// Many start edges at one start time (a snapshot of reference data), ended last first: the
/// scan of the open edges at that start against a lookup through an edge key.
fn edges(c: &mut Criterion) {
    const N: u64 = 10_000;
    let mut g = c.benchmark_group("edges at one start");
    g.sample_size(10);
    g.throughput(Throughput::Elements(N));
    for keyed in [false, true] {
        g.bench_function(if keyed { "keyed" } else { "scan" }, |b| {
            b.iter(|| {
                let mut ingress = Ingress::new(IngressConfig::default());
                if keyed {
                    ingress.index_edges_by(std::sync::Arc::new(|p: &u64| *p));
                }
                let mut out = IngressOutput::new();
                for p in 0..N {
                    let _ =
                        ingress.enqueue(StreamItem::start_edge(Time::from_ticks(0), p), &mut out);
                }
                for p in (0..N).rev() {
                    let _ = ingress.enqueue(
                        StreamItem::end_edge(Time::from_ticks(0), Time::from_ticks(10), p),
                        &mut out,
                    );
                }
                ingress.counters().events_in
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench, edges);
criterion_main!(benches);
