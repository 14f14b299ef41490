//! `punctual-bench`: Punctual on the shared benchmark workload, written as a user writes a
//! query, with the timely peer's command line and output format, so that `bench/compare.sh`
//! can pair them.
//!
//! ```text
//! punctual-bench --query filter|window|join --data DIR [--order arrival|ordered] [--reps N]
//!                [--cti N] [--delay-ms N] [--sql | --rows] [--workers N [--step-blocks N]]
//! ```
//!
//! Each query is built with the public API only: a [`Query`], the fast stream created from the
//! library's [`RecordsInput`] (the decoded records, replayed from memory in blocks of `--cti`
//! records) with advance-time settings (a CTI every `--cti` events, `--delay-ms` behind the
//! highest timestamp, `Drop`, a final CTI), the typed operators (`.filter`, the tumbling window
//! with group-by and aggregate, the join), and an output adapter that counts and checksums.
//! `--order arrival` (the default) makes the fast stream unordered (its events go on in
//! arrival order, since none of the three queries needs them sorted); `--order ordered` holds
//! and sorts them in the reorder buffer (StreamInsight's model). For the join, the reference
//! stream is every version as a start edge, closed by an end edge when the key's next version
//! starts, from the library's [`MemoryInput`]; it imports the fast stream's CTIs (`Adjust`).
//! It is created first, and the query runs on a current-thread runtime, so that every version
//! is in before the fast stream's first CTI.
//!
//! With `--sql`, each query is written in the query language instead (`punctual::sql`), over
//! rows (`Row` payloads with the fields `value` and `key`): the same operators, with dynamic
//! payloads and compiled expressions in place of typed closures. It measures what a user of
//! `punctual query` or a job file gets, apart from reading the files. With `--rows`, the
//! same queries over the same rows are written with the Rust API instead (closures reading
//! the fields by position, the results rows of the language's fields): the difference from
//! `--sql` is what the language costs, the difference from the typed queries what rows cost.
//!
//! With `--workers N` (window and join), the same query runs on the cluster executor with N
//! worker threads, as a user runs a `Query` there: `punctual::cluster::run_query` with a
//! function that builds it on every worker. The fast stream is one source of N partitions
//! ([`RecordsInput::partitions`]: block `b` of `--step-blocks` x `--cti` records in partition
//! `b % N`, as the timely peer splits its input by block; 16 blocks by default), each an input
//! of its own (`fast#0`, `fast#1`, ...) with its own settings, the stream the query reads
//! their union; the reference stream (reference data, read whole by every worker) imports
//! the first partition's CTIs. Each input's adapter
//! runs on the worker that owns it, and each worker's checksum adapter folds the results of
//! its own operators into the shared totals (`OutputAdapterFactory::per_worker`: a sum needs
//! no gathering).
//!
//! Timestamps are the files' milliseconds converted to ticks. Loading the files is not timed;
//! the timing covers building the query, replaying and draining, in wall-clock and in CPU time
//! (the process' user and system time). The checksums for the default 10 M events are
//! verified: a mismatch exits with 1.

use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use async_trait::async_trait;
use cpu_time::ProcessTime;
use punctual::adapters::{MemoryInput, RecordsInput};
use punctual::cluster::ClusterConfig;
use punctual::core::ops::{Count, Sum, WindowOutput};
use punctual::prelude::*;
use punctual::rows::FieldRef;
use punctual::rows::Schema;
use punctual::runtime::{AdapterError, InputOptions, OutputAdapter, OutputAdapterFactory, Query};
use punctual::sql::RowStream;
use punctual_samples::{arg, exit_code, ms};

/// (ts ms, value, key): a decoded record of the workload's files.
type Record = (i64, i64, u32);
/// (value, key): the fast stream's payload.
type Reading = (i64, u32);

fn load(path: &str) -> Result<Vec<Record>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
    if bytes.len() % 24 != 0 {
        return Err(format!(
            "{path}: {} bytes is not a whole number of 24-byte records",
            bytes.len()
        ));
    }
    Ok(bytes
        .chunks_exact(24)
        .map(|c| {
            let i64_at = |o: usize| {
                let mut b = [0u8; 8];
                b.copy_from_slice(&c[o..o + 8]);
                i64::from_le_bytes(b)
            };
            let mut k = [0u8; 4];
            k.copy_from_slice(&c[16..20]);
            (i64_at(0), i64_at(8), u32::from_le_bytes(k))
        })
        .collect())
}

/// Out count and checksum.
type Totals = (u64, u64);

/// An output adapter that counts what it receives and folds each payload into a checksum.
struct Checksum<F> {
    fold: F,
    totals: Arc<Mutex<Totals>>,
}

impl<F: Clone> Clone for Checksum<F> {
    fn clone(&self) -> Self {
        Checksum {
            fold: self.fold.clone(),
            totals: Arc::clone(&self.totals),
        }
    }
}

impl<F> Checksum<F> {
    fn new(fold: F) -> Self {
        Checksum {
            fold,
            totals: Arc::default(),
        }
    }

    fn totals(&self) -> Totals {
        *self.totals.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl<P, F> OutputAdapter<P> for Checksum<F>
where
    P: Payload,
    F: Fn(u64, &P) -> u64 + Send + Sync + 'static,
{
    async fn write(&mut self, batch: &Batch<P>) -> Result<(), AdapterError> {
        let sum = batch.payloads().iter().fold(0u64, &self.fold);
        let mut totals = self.totals.lock().unwrap_or_else(PoisonError::into_inner);
        totals.0 += batch.len() as u64;
        totals.1 = totals.1.wrapping_add(sum);
        Ok(())
    }
}

impl<P, F> OutputAdapterFactory<(), P> for Checksum<F>
where
    P: Payload,
    F: Fn(u64, &P) -> u64 + Clone + Send + Sync + 'static,
{
    type Adapter = Checksum<F>;
    fn create(&self, _: &(), _: EventShape) -> Result<Checksum<F>, AdapterError> {
        Ok(self.clone())
    }
    /// A count and a wrapping sum add up over shares: on the cluster, each worker folds its
    /// own results (as the timely peer's sink does), nothing is gathered.
    fn per_worker(&self, _: &()) -> bool {
        true
    }
}

/// The fast stream's settings: a CTI every `cti` events, `delay` behind, `Drop`, a final CTI.
fn settings(cti: u64, delay: TimeSpan) -> Result<AdvanceTimeSettings, String> {
    let generation = AdvanceTimeGenerationSettings::every_events(cti)
        .delay(delay)
        .final_cti(true)
        .build()
        .map_err(|e| e.to_string())?;
    AdvanceTimeSettings::builder()
        .generation(generation)
        .policy(AdvanceTimePolicy::Drop)
        .build()
        .map_err(|e| e.to_string())
}

/// A window result: the key, the count and the sum.
type PerKey = (u32, (u64, f64));

/// The window query: a 1 s tumbling count and sum of the values per key.
fn per_key<O: Order>(readings: &punctual::core::ops::Stream<Reading, O>) -> Stream<PerKey> {
    readings
        .tumbling_window(TimeSpan::from_secs(1))
        .group_by(|p: &Reading| p.1)
        .aggregate((Count, Sum::of(|p: &Reading| p.0 as f64)))
}

/// The join query: each reading with its key's reference version in force, (value, version).
fn joined<O: Order>(
    readings: &punctual::core::ops::Stream<Reading, O>,
    reference: &Stream<Reading>,
) -> punctual::core::ops::Stream<(i64, i64), O> {
    readings.join_on(reference, |p| p.1, |r| r.1, |p, r| (p.0, r.0))
}

/// The query in Rust over rows of the fields `value` and `key` (by position: the rows'
/// schema is the bench's), with the query language's results: `value`; `key` and `x` (count
/// plus sum); `x` (value times version).
fn over_rows<O: Order>(
    name: &str,
    readings: &punctual::core::ops::Stream<Row, O>,
    reference: &Option<Stream<Row>>,
) -> Result<RowStream, String> {
    let schema = |names: &[&str]| Schema::new(names.iter().copied()).map_err(|e| e.to_string());
    let int = |r: &Row, i: usize| r.values()[i].as_i64().unwrap_or(0);
    Ok(match (name, reference) {
        ("filter", _) => {
            let out = schema(&["value"])?;
            readings
                .filter(move |r: &Row| int(r, 0) >= 500_000)
                .map(move |r: &Row| out.row([r.values()[0].clone()]))
                .into()
        }
        ("window", _) => {
            let out = schema(&["key", "x"])?;
            // What the language's window above compiles to: [start, end) windows, each result
            // at the window's last tick.
            readings
                .tumbling_window(TimeSpan::from_secs(1))
                .output(WindowOutput::PointAtLastTick)
                .group_by(|r: &Row| r.values()[1].clone())
                .aggregate((Count, Sum::of(move |r: &Row| int(r, 0) as f64)))
                .map(move |(key, (count, sum)): &(Value, (u64, f64))| {
                    out.row([key.clone(), Value::Int(*count as i64 + *sum as i64)])
                })
                .into()
        }
        ("join", Some(reference)) => {
            let out = schema(&["x"])?;
            let key = |r: &Row| r.values()[1].clone();
            readings
                .join_on(reference, key, key, move |f: &Row, r: &Row| {
                    out.row([Value::Int(int(f, 0) * int(r, 0))])
                })
                .into()
        }
        (other, _) => return Err(format!("unknown query `{other}` (filter, window or join)")),
    })
}

/// The window query's checksum: count plus sum, over the results.
fn window_fold(sum: u64, p: &PerKey) -> u64 {
    sum.wrapping_add(p.1 .0).wrapping_add(p.1 .1 as u64)
}

/// The join query's checksum: value times version, over the results.
fn join_fold(sum: u64, p: &(i64, i64)) -> u64 {
    sum.wrapping_add((p.0 * p.1) as u64)
}

/// The query's parts: the data, its settings, and which query.
struct Run<'a> {
    events: &'a Arc<[Record]>,
    reference: &'a [Record],
    cti: u64,
    delay: TimeSpan,
    /// On the cluster: blocks of `cti` records per enqueue call.
    step_blocks: usize,
}

impl Run<'_> {
    /// Builds and runs one query with the fast stream of order `O`; returns its totals.
    async fn query<O: Order>(&self, name: &str, fast: InputOptions<O>) -> Result<Totals, String> {
        let e = |e: punctual::runtime::QueryError| e.to_string();
        let mut query = Query::new(name);
        // The reference stream first: every version is in before the fast stream's first CTI.
        let reference = if name == "join" {
            let import = AdvanceTimeSettings::builder()
                .import(AdvanceTimeImportSettings::new("fast"))
                .policy(AdvanceTimePolicy::Adjust)
                .build()
                .map_err(|e| e.to_string())?;
            let options = InputOptions::new("reference", EventShape::Edge).settings(import);
            Some(
                query
                    .create_stream(options, &MemoryInput, &versions(self.reference))
                    .map_err(e)?,
            )
        } else {
            None
        };
        let replay = RecordsInput::new(
            Arc::clone(self.events),
            |r: &Record| ms(r.0),
            |r: &Record| (r.1, r.2),
        )
        .block(self.cti as usize);
        let fast = fast.settings(settings(self.cti, self.delay)?);
        let readings = query.create_stream(fast, &replay, &()).map_err(e)?;
        let totals = match (name, reference) {
            ("filter", _) => {
                let out = Checksum::new(|sum: u64, p: &Reading| sum.wrapping_add(p.0 as u64));
                let big = readings.filter(|p: &Reading| p.0 >= 500_000);
                query.bind_output(&big, &out, &()).map_err(e)?;
                run(query).await?;
                out.totals()
            }
            ("window", _) => {
                let out = Checksum::new(window_fold);
                query
                    .bind_output(per_key(&readings), &out, &())
                    .map_err(e)?;
                run(query).await?;
                out.totals()
            }
            ("join", Some(reference)) => {
                let out = Checksum::new(join_fold);
                query
                    .bind_output(joined(&readings, &reference), &out, &())
                    .map_err(e)?;
                run(query).await?;
                out.totals()
            }
            (other, _) => return Err(format!("unknown query `{other}` (filter, window or join)")),
        };
        Ok(totals)
    }
}

impl Run<'_> {
    /// The query written in the query language, over rows; returns its totals.
    ///
    /// With `rows`, the same queries written with the Rust API over the same rows instead
    /// (what the query language compiles to, with closures in place of compiled
    /// expressions): what the language itself costs over its payload.
    async fn sql<O: Order>(
        &self,
        name: &str,
        fast: InputOptions<O>,
        rows: bool,
    ) -> Result<Totals, String> {
        use punctual::sql::{SqlInput, SqlQuery};
        let e = |e: punctual::runtime::QueryError| e.to_string();
        let text = match name {
            "filter" => "SELECT value FROM fast WHERE value >= 500000",
            // The workload's windows hold [start, end), as its peers count them: Stream
            // Analytics' windows (end - size, end] ending one tick before each whole second.
            "window" => "SELECT key, COUNT(*) + SUM(value) AS x FROM fast GROUP BY key, TumblingWindow(tick, 10000000, 9999999)",
            "join" => "SELECT f.value * r.value AS x FROM fast f JOIN reference r ON f.key = r.key",
            other => return Err(format!("unknown query `{other}` (filter, window or join)")),
        };
        let sql = SqlQuery::parse(text).map_err(|e| e.show(text))?;
        let mut query = Query::new(name);
        // The rows' names made once: each row is its schema and two values, inline.
        let schema = Schema::new(["value", "key"]).map_err(|e| e.to_string())?;
        let row =
            move |value: i64, key: u32| schema.row([Value::Int(value), Value::Int(i64::from(key))]);
        let reference = if name == "join" {
            let import = AdvanceTimeSettings::builder()
                .import(AdvanceTimeImportSettings::new("fast"))
                .policy(AdvanceTimePolicy::Adjust)
                .build()
                .map_err(|e| e.to_string())?;
            let versions: Vec<StreamItem<Row>> = versions(self.reference)
                .into_iter()
                .map(|i| match i {
                    StreamItem::Insert(ev) => StreamItem::Insert(Event {
                        kind: ev.kind,
                        payload: row(ev.payload.0, ev.payload.1),
                    }),
                    StreamItem::Cti(t) => StreamItem::Cti(t),
                })
                .collect();
            let options = InputOptions::new("reference", EventShape::Edge).settings(import);
            Some(
                query
                    .create_stream(options, &MemoryInput, &versions)
                    .map_err(e)?,
            )
        } else {
            None
        };
        let replay = RecordsInput::new(
            Arc::clone(self.events),
            |r: &Record| ms(r.0),
            move |r: &Record| row(r.1, r.2),
        )
        .block(self.cti as usize);
        let fast = fast.settings(settings(self.cti, self.delay)?);
        let readings = query.create_stream(fast, &replay, &()).map_err(e)?;
        let mut inputs = vec![SqlInput::new("fast", &readings)];
        if let Some(r) = &reference {
            inputs.push(SqlInput::new("reference", r));
        }
        let outputs = match (rows, &reference) {
            (false, _) => sql.build(&inputs).map_err(|e| e.show(text))?,
            (true, reference) => vec![(String::new(), over_rows(name, &readings, reference)?)],
        };
        // The output's field read as Rust code over rows reads one: through a `FieldRef`,
        // which remembers where the rows' schema has it.
        let field = FieldRef::new(if name == "filter" { "value" } else { "x" });
        let out = Checksum::new(move |sum: u64, r: &Row| {
            let v = r.field_ref(&field).and_then(Value::as_i64);
            sum.wrapping_add(v.unwrap_or(0) as u64)
        });
        for (_, stream) in &outputs {
            query.bind_output(stream, &out, &()).map_err(e)?;
        }
        run(query).await?;
        Ok(out.totals())
    }
}

impl Run<'_> {
    /// The window or join query on the cluster executor with `workers` threads: see the
    /// module doc.
    fn cluster<O: Order>(
        &self,
        name: &str,
        workers: usize,
        order: fn(InputOptions) -> InputOptions<O>,
    ) -> Result<Totals, String> {
        if name != "window" && name != "join" {
            return Err(format!("--workers runs window or join, not `{name}`"));
        }
        let events = Arc::clone(self.events);
        let versions = versions(self.reference);
        let fast = settings(self.cti, self.delay)?;
        let block = self.cti as usize * self.step_blocks.max(1);
        let join = name == "join";
        let (window_out, join_out) = (Checksum::new(window_fold), Checksum::new(join_fold));
        let (w, j) = (window_out.clone(), join_out.clone());
        let name = name.to_owned();
        let build = move |_worker: usize| -> Result<Query, punctual::runtime::QueryError> {
            let bind = |e: String| punctual::runtime::QueryError::Bind(e);
            let mut query = Query::new(name.clone());
            // The reference data first: the partition whose CTIs it imports waits for it.
            let reference = if join {
                let import = AdvanceTimeSettings::builder()
                    .import(AdvanceTimeImportSettings::new("fast"))
                    .policy(AdvanceTimePolicy::Adjust)
                    .build()
                    .map_err(|e| bind(e.to_string()))?;
                let options = InputOptions::new("reference", EventShape::Edge)
                    .settings(import)
                    .reference();
                Some(query.create_stream(options, &MemoryInput, &versions)?)
            } else {
                None
            };
            let replay = RecordsInput::new(
                Arc::clone(&events),
                |r: &Record| ms(r.0),
                |r: &Record| (r.1, r.2),
            )
            .block(block)
            .partitions(workers);
            let options =
                order(InputOptions::new("fast", EventShape::Point).settings(fast.clone()));
            let readings = query.create_stream(options, &replay, &())?;
            match &reference {
                Some(r) => query.bind_output(joined(&readings, r), &j, &())?,
                None => query.bind_output(per_key(&readings), &w, &())?,
            }
            Ok(query)
        };
        punctual::cluster::run_query(ClusterConfig::threads(workers), build)
            .map_err(|e| e.to_string())?;
        Ok(if join {
            join_out.totals()
        } else {
            window_out.totals()
        })
    }
}

async fn run(query: Query) -> Result<(), String> {
    let running = query.start().map_err(|e| e.to_string())?;
    running.wait().await.map_err(|e| e.to_string())?;
    Ok(())
}

/// The reference versions as edges: each version's start edge, and its end edge when the
/// key's next version starts; sorted by time, then a final CTI.
fn versions(reference: &[Record]) -> Vec<StreamItem<Reading>> {
    let mut current: Vec<Option<(i64, i64)>> = Vec::new();
    let mut items = Vec::new();
    for &(start, value, key) in reference {
        let k = key as usize;
        if current.len() <= k {
            current.resize(k + 1, None);
        }
        if let Some((prev_start, prev_value)) = current[k] {
            items.push(StreamItem::end_edge(
                ms(prev_start),
                ms(start),
                (prev_value, key),
            ));
        }
        items.push(StreamItem::start_edge(ms(start), (value, key)));
        current[k] = Some((start, value));
    }
    items
}

/// The published checksums for the default 10 M events: (out, checksum).
fn expected(query: &str, n: usize) -> Option<Totals> {
    if n != 10_000_000 {
        return None;
    }
    match query {
        "filter" => Some((4_999_874, 3_750_355_147_595)),
        "window" => Some((999_964, 5_000_969_865_020)),
        "join" => Some((10_000_000, 2_561_554_183_133_202)),
        _ => None,
    }
}

fn main_inner() -> Result<bool, String> {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!(
            "punctual-bench --query filter|window|join --data DIR [--order arrival|ordered] [--reps N] [--cti N] [--delay-ms N] [--sql | --rows] [--workers N [--step-blocks N]]"
        );
        return Ok(true);
    }
    let query: String = arg(&args, "--query", "window".to_string())?;
    let order: String = arg(&args, "--order", "arrival".to_string())?;
    let dir: String = arg(&args, "--data", "data".to_string())?;
    let reps: usize = arg(&args, "--reps", 5)?;
    let rows = args.iter().any(|a| a == "--rows");
    let sql = rows || args.iter().any(|a| a == "--sql");
    let workers: Option<usize> = match args.iter().position(|a| a == "--workers") {
        Some(_) => Some(arg(&args, "--workers", 1)?),
        None => None,
    };
    let t = Instant::now();
    let events: Arc<[Record]> = load(&format!("{dir}/events.bin"))?.into();
    let reference = load(&format!("{dir}/reference.bin"))?;
    eprintln!(
        "loaded {} events, {} reference records in {:.2?}",
        events.len(),
        reference.len(),
        t.elapsed()
    );
    let cti: u64 = arg(&args, "--cti", 1000)?;
    let step_blocks: usize = arg(&args, "--step-blocks", 16)?;
    let run = Run {
        events: &events,
        reference: &reference,
        cti,
        delay: TimeSpan::from_millis(arg(&args, "--delay-ms", 2000)?),
        step_blocks,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| e.to_string())?;
    let (mut rates, mut cpu_rates) = (Vec::new(), Vec::new());
    let mut ok = true;
    for rep in 0..reps.max(1) {
        let start = Instant::now();
        let cpu = ProcessTime::now();
        let fast = InputOptions::new("fast", EventShape::Point);
        let (out, checksum) = match (order.as_str(), sql) {
            _ if workers.is_some() => match order.as_str() {
                "ordered" => run.cluster(&query, workers.unwrap_or(1), |o| o)?,
                "arrival" => run.cluster(&query, workers.unwrap_or(1), |o| o.unordered())?,
                other => return Err(format!("unknown order `{other}` (arrival or ordered)")),
            },
            ("arrival", false) => runtime.block_on(run.query(&query, fast.unordered()))?,
            ("ordered", false) => runtime.block_on(run.query(&query, fast))?,
            ("arrival", true) => runtime.block_on(run.sql(&query, fast.unordered(), rows))?,
            ("ordered", true) => runtime.block_on(run.sql(&query, fast, rows))?,
            (other, _) => return Err(format!("unknown order `{other}` (arrival or ordered)")),
        };
        let secs = start.elapsed().as_secs_f64();
        let cpu_s = cpu.elapsed().as_secs_f64();
        let rate = events.len() as f64 / secs;
        rates.push(rate);
        cpu_rates.push(events.len() as f64 / cpu_s);
        let verdict = match expected(&query, events.len()) {
            Some(e) if e == (out, checksum) => "checksum=ok",
            Some(_) => {
                ok = false;
                "checksum=MISMATCH"
            }
            None => "checksum=unverified",
        };
        println!(
            "query={query} order={order} rep={rep} secs={secs:.3} cpu_s={cpu_s:.3} events_per_s={rate:.0} out={out} checksum={checksum} {verdict}"
        );
        if let (false, Some(e)) = (ok, expected(&query, events.len())) {
            eprintln!("expected out={} checksum={}", e.0, e.1);
        }
    }
    rates.sort_by(f64::total_cmp);
    cpu_rates.sort_by(f64::total_cmp);
    println!(
        "SUMMARY peer={} query={query} order={order} workers={} cti={} median_events_per_s={:.0} median_events_per_cpu_s={:.0} min={:.0} max={:.0}",
        match (workers, sql) {
            (Some(_), _) => "punctual-cluster",
            (None, true) if rows => "punctual-rows",
            (None, true) => "punctual-sql",
            (None, false) => "punctual",
        },
        workers.unwrap_or(1),
        run.cti,
        rates[rates.len() / 2],
        cpu_rates[cpu_rates.len() / 2],
        rates[0],
        rates[rates.len() - 1]
    );
    Ok(ok)
}

fn main() -> ExitCode {
    exit_code(main_inner())
}
