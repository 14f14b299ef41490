//! End to end through the tokio runtime: an input adapter enqueueing in batches, the ingress
//! (CTI every 1,000 events), the channel, and an output adapter that checksums.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

use punctual_adapters::{
    AdapterError, InputOptions, IterInput, OutputAdapter, OutputAdapterFactory, Query,
};
use punctual_core::{Batch, EventShape, StreamItem, Time, TimeSpan};
use punctual_policies::{AdvanceTimeGenerationSettings, AdvanceTimePolicy, AdvanceTimeSettings};

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

async fn run() -> u64 {
    let settings = AdvanceTimeSettings::builder()
        .generation(
            AdvanceTimeGenerationSettings::every_events(1000)
                .delay(TimeSpan::from_ticks(20_000))
                .final_cti(true)
                .build()
                .expect("valid settings"),
        )
        .policy(AdvanceTimePolicy::Drop)
        .build()
        .expect("valid settings");
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

fn bench(c: &mut Criterion) {
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
