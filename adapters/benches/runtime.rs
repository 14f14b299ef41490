//! End to end through the tokio runtime: an input adapter enqueueing in batches, the ingress
//! (CTI every 1,000 events), the channel, and an output adapter that checksums; and what the
//! runtime costs over driving the same query's engine by hand (`runtime_overhead`: a 1 s
//! tumbling count and sum per key over records in memory, through `Query` with a
//! `RecordsInput`, and through `Plan` and `Driver` with the same blocks).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use punctual_adapters::{IterInput, RecordsInput};
use punctual_core::ops::{Count, Sum};
use punctual_core::{Batch, EventShape, Ordered, StreamItem, Time, TimeSpan};
use punctual_engine::Plan;
use punctual_policies::{AdvanceTimeGenerationSettings, AdvanceTimePolicy, AdvanceTimeSettings};
use punctual_runtime::{AdapterError, InputOptions, OutputAdapter, OutputAdapterFactory, Query};

const N: i64 = 1_000_000;

#[derive(Clone)]
struct Checksum(Arc<AtomicU64>);

#[async_trait]
impl OutputAdapter<u64> for Checksum {
    async fn write(&mut self, batch: &Batch<u64>) -> Result<(), AdapterError> {
        let x = batch
            .payloads()
            .iter()
            .fold(0u64, |a, p| a.wrapping_add(*p));
        self.0.fetch_add(x, Ordering::Relaxed);
        Ok(())
    }
}

impl OutputAdapterFactory<(), u64> for Checksum {
    type Adapter = Checksum;
    fn create(&self, _: &(), _: EventShape) -> Result<Checksum, AdapterError> {
        Ok(self.clone())
    }
}

/// The benchmark's settings: a CTI every 1,000 events, `delay` behind, Drop, a final CTI.
fn settings(delay: TimeSpan) -> AdvanceTimeSettings {
    AdvanceTimeSettings::builder()
        .generation(
            AdvanceTimeGenerationSettings::every_events(1000)
                .delay(delay)
                .final_cti(true)
                .build()
                .expect("valid settings"),
        )
        .policy(AdvanceTimePolicy::Drop)
        .build()
        .expect("valid settings")
}

async fn run() -> u64 {
    let settings = settings(TimeSpan::from_ticks(20_000));
    let mut query = Query::new("bench");
    let input =
        IterInput::new((0..N).map(|i| StreamItem::point(Time::from_ticks(i * 1000), i as u64)));
    let s = query
        .create_stream(
            InputOptions::new("in", EventShape::Point).settings(settings),
            &input,
            &(),
        )
        .expect("binds");
    let sum = Checksum(Arc::default());
    query.bind_output(&s, &sum, &()).expect("binds");
    query.start().expect("starts").wait().await.expect("runs");
    sum.0.load(Ordering::Relaxed)
}

/// (milliseconds, value, key): 10,000 a simulated second, 1,000 keys, every 20th up to 2 s late.
type Record = (i64, i64, u32);

fn records() -> Vec<Record> {
    (0..N)
        .map(|i| {
            let at = i / 10 - if i % 20 == 7 { i % 2000 } else { 0 };
            (at, i * 7919 % 1_000_000, (i * 31 % 1000) as u32)
        })
        .collect()
}

fn at(r: &Record) -> Time {
    Time::from_ticks(r.0 * 10_000)
}

fn reading(r: &Record) -> (i64, u32) {
    (r.1, r.2)
}

/// Sum of counts and sums over the windows' results.
fn total(batch: &Batch<(u32, (u64, f64))>) -> u64 {
    batch.payloads().iter().fold(0u64, |a, (_, (n, s))| {
        a.wrapping_add(*n).wrapping_add(*s as u64)
    })
}

#[derive(Clone, Default)]
struct Totals(Arc<AtomicU64>);

#[async_trait]
impl OutputAdapter<(u32, (u64, f64))> for Totals {
    async fn write(&mut self, batch: &Batch<(u32, (u64, f64))>) -> Result<(), AdapterError> {
        self.0.fetch_add(total(batch), Ordering::Relaxed);
        Ok(())
    }
}

impl OutputAdapterFactory<(), (u32, (u64, f64))> for Totals {
    type Adapter = Totals;
    fn create(&self, _: &(), _: EventShape) -> Result<Totals, AdapterError> {
        Ok(self.clone())
    }
}

/// The window query through `Query` and a `RecordsInput` (blocks of 1,000 records).
async fn window_through_query(records: Arc<[Record]>) -> u64 {
    let mut query = Query::new("bench");
    let input = RecordsInput::new(records, at, reading).block(1000);
    let options =
        InputOptions::new("in", EventShape::Point).settings(settings(TimeSpan::from_secs(2)));
    let s = query.create_stream(options, &input, &()).expect("binds");
    let per_key = s
        .tumbling_window(TimeSpan::from_secs(1))
        .group_by(|p: &(i64, u32)| p.1)
        .aggregate((Count, Sum::of(|p: &(i64, u32)| p.0 as f64)));
    let out = Totals::default();
    query.bind_output(&per_key, &out, &()).expect("binds");
    query.start().expect("starts").wait().await.expect("runs");
    out.0.load(Ordering::Relaxed)
}

/// The same query through `Plan` and `Driver`, the same blocks, no runtime.
fn window_through_driver(records: &[Record]) -> u64 {
    let mut plan = Plan::new("bench");
    let options = punctual_engine::InputOptions::new("in", EventShape::Point)
        .settings(settings(TimeSpan::from_secs(2)));
    let (input, s) = plan.input::<(i64, u32), Ordered>(options).expect("binds");
    let per_key = s
        .tumbling_window(TimeSpan::from_secs(1))
        .group_by(|p: &(i64, u32)| p.1)
        .aggregate((Count, Sum::of(|p: &(i64, u32)| p.0 as f64)));
    let output = plan.output(&per_key).expect("binds");
    let mut driver = plan.build().expect("builds");
    let (mut out, mut sum) = (Batch::new(), 0u64);
    for block in records.chunks(1000) {
        driver
            .enqueue_point_records(input, block, at, reading)
            .expect("enqueues");
        driver.take_output(&output, &mut out);
        sum = sum.wrapping_add(total(&out));
        out.clear();
    }
    driver.finish(input.index());
    driver.take_output(&output, &mut out);
    sum.wrapping_add(total(&out))
}

fn bench(c: &mut Criterion) {
    let records: Arc<[Record]> = records().into();
    let want = window_through_driver(&records);
    let mut g = c.benchmark_group("runtime_overhead");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(10);
    g.bench_function("window/driver", |b| {
        b.iter(|| assert_eq!(window_through_driver(&records), want))
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    g.bench_function("window/query", |b| {
        b.iter(|| {
            assert_eq!(
                rt.block_on(window_through_query(Arc::clone(&records))),
                want
            )
        })
    });
    g.finish();

    let mut g = c.benchmark_group("runtime");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(10);
    for workers in [1usize, 2] {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_time()
            .build()
            .expect("runtime");
        g.bench_function(format!("iter_input_to_checksum/{workers}_workers"), |b| {
            b.iter(|| assert_eq!(rt.block_on(run()), (N as u64) * (N as u64 - 1) / 2))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
