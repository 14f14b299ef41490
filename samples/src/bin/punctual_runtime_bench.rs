//! `punctual-runtime-bench`: the window query of the benchmark workload (see BENCHMARKS.md) end to
//! end through the tokio runtime, with a real input adapter, measuring what `punctual-bench`
//! does not: events/s through the runtime with 1 or 2 worker threads, peak memory, and the
//! latency from a CTI's issue to its arrival at the output adapter.
//!
//! ```text
//! punctual-runtime-bench [--source file|synthetic] [--data DIR] [--n N] [--workers W] [--reps R]
//!                        [--unordered]
//! ```
//!
//! - `--source file` (default): an input adapter that reads `DIR/events.bin` in 64 KiB chunks
//!   (24-byte records, as the peers read them), parses each 1,000 records into columns and
//!   enqueues them with [`InputContext::enqueue_point_columns`].
//! - `--source synthetic`: the same adapter fed by the workload generator's algorithm
//!   (SplitMix64, seed 42: 10,000 events per simulated second, 1,000 keys, 5% out of order by
//!   up to 2 s) instead of a file, so that `--n 100000000` needs no 2.4 GB file and peak memory
//!   shows the query's state alone.
//!
//! - `--unordered`: the input is an unordered stream ([`InputOptions::unordered`]):
//!   its events go to the window on arrival instead of through the reorder buffer.
//!
//! The stream's settings are the benchmark's: a CTI every 1,000 events, 2 s behind the highest
//! timestamp, `Drop`, a final CTI. The query is the 1 s tumbling count and sum per key. The
//! output adapter checksums and records, for each CTI it receives, the time since the input
//! adapter's enqueue call that issued it returned. Prints one `SUMMARY` line with the median
//! rate, the latency p50/p99 (over all reps) and the process' peak resident memory.

use std::process::ExitCode;

use punctual_samples::{arg, exit_code, ms};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use punctual::core::ops::{Count, Sum};
use punctual::prelude::*;
use punctual::runtime::{
    AdapterError, InputAdapter, InputAdapterFactory, InputContext, InputOptions, OutputAdapter,
    OutputAdapterFactory, Query,
};

/// (value, key): the payload of the fast stream.
type Reading = (i64, u32);
/// (key, (count, sum)): the window's results.
type Total = (u32, (u64, f64));

const CHUNK_EVENTS: usize = 1000;

/// The workload generator's random numbers (SplitMix64).
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Where the events come from.
#[derive(Clone)]
enum Source {
    File(String),
    Synthetic(u64),
}

/// Enqueue-return instants, one per CTI the input issued and the output has not seen yet.
type Issued = Arc<Mutex<std::collections::VecDeque<Instant>>>;

/// A latency histogram of fixed size (so that measuring does not grow with the run): 1 µs
/// buckets below 10 ms, 1 ms buckets up to 10 s.
struct Histogram {
    fine: Vec<u64>,
    coarse: Vec<u64>,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            fine: vec![0; 10_000],
            coarse: vec![0; 10_000],
        }
    }
}

impl Histogram {
    fn record(&mut self, d: Duration) {
        let us = d.as_micros() as usize;
        if us < self.fine.len() {
            self.fine[us] += 1;
        } else {
            let ms = (us / 1000).min(self.coarse.len() - 1);
            self.coarse[ms] += 1;
        }
    }

    fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.fine.iter_mut().zip(&other.fine) {
            *a += b;
        }
        for (a, b) in self.coarse.iter_mut().zip(&other.coarse) {
            *a += b;
        }
    }

    /// The `p` quantile in microseconds (bucket lower bound).
    fn quantile_us(&self, p: f64) -> u64 {
        let total: u64 = self.fine.iter().chain(&self.coarse).sum();
        if total == 0 {
            return 0;
        }
        let rank = ((total as f64) * p).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (us, n) in self.fine.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return us as u64;
            }
        }
        for (ms, n) in self.coarse.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return ms as u64 * 1000;
            }
        }
        u64::MAX
    }
}

struct BenchInput {
    source: Source,
    issued: Issued,
}

impl InputAdapterFactory<(), Reading> for BenchInput {
    type Adapter = BenchAdapter;
    fn create(&self, _: &(), _: EventShape) -> Result<BenchAdapter, AdapterError> {
        Ok(BenchAdapter {
            source: self.source.clone(),
            issued: Arc::clone(&self.issued),
        })
    }
}

struct BenchAdapter {
    source: Source,
    issued: Issued,
}

impl BenchAdapter {
    /// Enqueues one chunk and records when the CTI it issued (one per 1,000 events) left.
    async fn chunk(
        &self,
        ctx: &mut InputContext<Reading>,
        columns: &mut Columns,
    ) -> Result<(), AdapterError> {
        let before = ctx.counters().ctis_out;
        ctx.enqueue_point_columns(&columns.times, &columns.payloads)
            .await?;
        columns.times.clear();
        columns.payloads.clear();
        let issued = ctx.counters().ctis_out - before;
        if issued > 0 {
            let now = Instant::now();
            let mut list = self.issued.lock().unwrap_or_else(PoisonError::into_inner);
            list.extend(std::iter::repeat_n(now, issued as usize));
        }
        Ok(())
    }
}

/// One chunk of parsed records, as columns.
#[derive(Default)]
struct Columns {
    times: Vec<Time>,
    payloads: Vec<Reading>,
}

impl Columns {
    fn push(&mut self, t: Time, p: Reading) {
        self.times.push(t);
        self.payloads.push(p);
    }

    fn len(&self) -> usize {
        self.times.len()
    }
}

#[async_trait]
impl InputAdapter<Reading> for BenchAdapter {
    async fn run(&mut self, ctx: &mut InputContext<Reading>) -> Result<(), AdapterError> {
        let mut points = Columns::default();
        match self.source.clone() {
            Source::File(path) => {
                use std::io::Read;
                let mut file = std::io::BufReader::with_capacity(
                    1 << 16,
                    std::fs::File::open(&path).map_err(|e| AdapterError::Io {
                        path: path.clone().into(),
                        error: e,
                    })?,
                );
                let mut record = [0u8; 24];
                loop {
                    match file.read_exact(&mut record) {
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
                        Err(e) => {
                            return Err(AdapterError::Io {
                                path: path.clone().into(),
                                error: e,
                            })
                        }
                    }
                    let field = |o: usize| {
                        let mut b = [0u8; 8];
                        b.copy_from_slice(&record[o..o + 8]);
                        i64::from_le_bytes(b)
                    };
                    let mut k = [0u8; 4];
                    k.copy_from_slice(&record[16..20]);
                    points.push(ms(field(0)), (field(8), u32::from_le_bytes(k)));
                    if points.len() == CHUNK_EVENTS {
                        self.chunk(ctx, &mut points).await?;
                    }
                }
            }
            Source::Synthetic(n) => {
                let mut rng = SplitMix64(42);
                let ooo = (0.05 * u64::MAX as f64) as u64;
                for i in 0..n {
                    let base = (i / 10) as i64;
                    let key = (rng.next() % 1000) as u32;
                    let value = (rng.next() % 1_000_000) as i64;
                    let mut ts = base;
                    if rng.next() < ooo {
                        ts = (base - 1 - (rng.next() % 2000) as i64).max(0);
                    }
                    points.push(ms(ts), (value, key));
                    if points.len() == CHUNK_EVENTS {
                        self.chunk(ctx, &mut points).await?;
                    }
                }
            }
        }
        self.chunk(ctx, &mut points).await
    }
}

#[derive(Default)]
struct Observed {
    out: u64,
    checksum: u64,
    ctis: usize,
    latencies: Histogram,
}

#[derive(Clone)]
struct BenchOutput {
    issued: Issued,
    observed: Arc<Mutex<Observed>>,
}

impl OutputAdapterFactory<(), Total> for BenchOutput {
    type Adapter = BenchOutput;
    fn create(&self, _: &(), _: EventShape) -> Result<BenchOutput, AdapterError> {
        Ok(self.clone())
    }
}

#[async_trait]
impl OutputAdapter<Total> for BenchOutput {
    async fn write(&mut self, batch: &Batch<Total>) -> Result<(), AdapterError> {
        let now = Instant::now();
        let mut sum = 0u64;
        for (_, (c, s)) in batch.payloads() {
            sum = sum.wrapping_add(*c).wrapping_add(*s as u64);
        }
        let mut issued = self.issued.lock().unwrap_or_else(PoisonError::into_inner);
        let mut o = self.observed.lock().unwrap_or_else(PoisonError::into_inner);
        o.out += batch.len() as u64;
        o.checksum = o.checksum.wrapping_add(sum);
        for _ in batch.ctis() {
            // The final CTI (+inf) comes from the end of input, not from an enqueue call.
            if let Some(at) = issued.pop_front() {
                o.latencies.record(now.saturating_duration_since(at));
            }
            o.ctis += 1;
        }
        Ok(())
    }
}

async fn run_once(source: Source, unordered: bool) -> Result<Observed, String> {
    let settings = AdvanceTimeSettings::builder()
        .generation(
            AdvanceTimeGenerationSettings::every_events(CHUNK_EVENTS as u64)
                .delay(TimeSpan::from_millis(2000))
                .final_cti(true)
                .build()
                .map_err(|e| e.to_string())?,
        )
        .policy(AdvanceTimePolicy::Drop)
        .build()
        .map_err(|e| e.to_string())?;
    let issued = Issued::default();
    let input = BenchInput {
        source,
        issued: Arc::clone(&issued),
    };
    let mut query = Query::new("runtime-bench");
    let options = InputOptions::new("fast", EventShape::Point).settings(settings);
    fn per_key<O: Order>(readings: Stream<Reading, O>) -> Stream<(u32, (u64, f64))> {
        readings
            .tumbling_window(TimeSpan::from_secs(1))
            .group_by(|p: &Reading| p.1)
            .aggregate((Count, Sum::of(|p: &Reading| p.0 as f64)))
    }
    let totals = if unordered {
        let options = options.unordered();
        per_key(
            query
                .create_stream(options, &input, &())
                .map_err(|e| e.to_string())?,
        )
    } else {
        per_key(
            query
                .create_stream(options, &input, &())
                .map_err(|e| e.to_string())?,
        )
    };
    let output = BenchOutput {
        issued,
        observed: Arc::default(),
    };
    query
        .bind_output(&totals, &output, &())
        .map_err(|e| e.to_string())?;
    query
        .start()
        .map_err(|e| e.to_string())?
        .wait()
        .await
        .map_err(|e| e.to_string())?;
    let observed = std::mem::take(
        &mut *output
            .observed
            .lock()
            .unwrap_or_else(PoisonError::into_inner),
    );
    Ok(observed)
}

/// The process' peak resident memory in MiB (`VmHWM`), if the platform reports it.
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn main_inner() -> Result<bool, String> {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!(
            "punctual-runtime-bench [--source file|synthetic] [--data DIR] [--n N] [--workers W] [--reps R] [--unordered]"
        );
        return Ok(true);
    }
    let kind: String = arg(&args, "--source", "file".to_string())?;
    let dir: String = arg(&args, "--data", "data".to_string())?;
    let n: u64 = arg(&args, "--n", 10_000_000)?;
    let workers: usize = arg(&args, "--workers", 1)?;
    let reps: usize = arg(&args, "--reps", 3)?;
    let unordered = args.iter().any(|a| a == "--unordered");
    let source = match kind.as_str() {
        "file" => Source::File(format!("{dir}/events.bin")),
        "synthetic" => Source::Synthetic(n),
        other => return Err(format!("unknown source `{other}` (file or synthetic)")),
    };
    let events = match &source {
        Source::File(path) => {
            std::fs::metadata(path)
                .map_err(|e| format!("{path}: {e}"))?
                .len()
                / 24
        }
        Source::Synthetic(n) => *n,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers.max(1))
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let mut rates = Vec::new();
    let mut latencies = Histogram::default();
    let mut ok = true;
    for rep in 0..reps.max(1) {
        let start = Instant::now();
        let observed = rt.block_on(run_once(source.clone(), unordered))?;
        let secs = start.elapsed().as_secs_f64();
        let rate = events as f64 / secs;
        rates.push(rate);
        let verdict = if events == 10_000_000 {
            if (observed.out, observed.checksum) == (999_964, 5_000_969_865_020) {
                "checksum=ok"
            } else {
                ok = false;
                "checksum=MISMATCH"
            }
        } else {
            "checksum=unverified"
        };
        println!(
            "source={kind} workers={workers} rep={rep} secs={secs:.3} events_per_s={rate:.0} out={} checksum={} ctis={} {verdict}",
            observed.out, observed.checksum, observed.ctis
        );
        latencies.merge(&observed.latencies);
    }
    rates.sort_by(f64::total_cmp);
    println!(
        "SUMMARY peer=punctual-runtime query=window source={kind} unordered={unordered} events={events} workers={workers} median_events_per_s={:.0} cti_latency_p50_us={} cti_latency_p99_us={} peak_rss_mib={:.1}",
        rates[rates.len() / 2],
        latencies.quantile_us(0.5),
        latencies.quantile_us(0.99),
        peak_rss_mib().unwrap_or(f64::NAN)
    );
    Ok(ok)
}

fn main() -> ExitCode {
    exit_code(main_inner())
}
