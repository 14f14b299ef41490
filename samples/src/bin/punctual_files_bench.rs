//! `punctual-files-bench`: the benchmark's three queries over CSV files, as users run them:
//! `punctual job` with the query in the query language, against the same query written in
//! Rust with typed payloads over the library's CSV input and JSON-lines output.
//!
//! ```text
//! punctual-files-bench --dir DIR [--make N] [--query filter|window|join|all] [--reps N]
//!                      [--order time|arrival]
//! ```
//!
//! `--make N` first writes `DIR/events.csv` (`ts,value,key`: N events, ten per millisecond,
//! each up to half a second late, values below 1,000,000, keys below 1,000) and
//! `DIR/reference.csv` (`valid_from,valid_to,value,key`: each key's version for every ten
//! seconds) from a fixed seed. Each run reads the files, runs the query (a CTI every 1,000
//! events, 2 s behind, the language's default policy `AdjustPoints`, a final CTI; the
//! reference imports the events' CTIs) and writes flat JSON rows (the job's default) with
//! RFC 3339 times to `DIR/<query>-<form>.jsonl`. The two forms are run
//! alternately, `--reps` times each; each run's output must have the lines of the other
//! form's (compared sorted: results of one time may come in another order), or the run
//! fails. The summary gives the median events per CPU second of each form and their ratio.
//! `--order arrival` reads the events in arrival order in both forms (the job's input with
//! `order = "arrival"`, the Rust query's with `InputOptions::unordered`): none of the three
//! queries needs them sorted.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use cpu_time::ProcessTime;
use punctual::adapters::layout::RowLayout;
use punctual::adapters::line::TimeFormat;
use punctual::adapters::{CsvInput, CsvInputConfig, JsonLinesOutput, JsonLinesOutputConfig};
use punctual::core::ops::{Count, Sum, WindowOutput};
use punctual::prelude::*;
use punctual::runtime::{InputOptions, Query};
use punctual_samples::{arg, exit_code};
use serde::{Deserialize, Serialize};

/// A reading as the CSV file has it (the time column is the event's start, not a field).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Reading {
    value: i64,
    key: u32,
}

/// The filter's result: the value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Kept {
    value: i64,
}

/// The window's result: the key, and count plus sum.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct PerKey {
    key: u32,
    x: i64,
}

/// The join's result: value times version.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Product {
    x: i64,
}

/// The query language's form of each query, and what its job adds for the reference input.
fn sql(query: &str) -> Option<(&'static str, &'static str)> {
    Some(match query {
        "filter" => (
            "SELECT value FROM events TIMESTAMP BY ts WHERE value >= 500000",
            "",
        ),
        "window" => (
            "SELECT key, COUNT(*) + CAST(SUM(value) AS bigint) AS x FROM events TIMESTAMP BY ts GROUP BY key, TumblingWindow(second, 1)",
            "",
        ),
        "join" => (
            "SELECT e.value * r.value AS x FROM events e TIMESTAMP BY ts JOIN reference r ON e.key = r.key",
            "[inputs.reference]\npath = \"reference.csv\"\ntime = \"valid_from\"\nend = \"valid_to\"\ntime_format = \"epoch-ms\"\n",
        ),
        _ => return None,
    })
}

/// Runs the query with `punctual job`, as a user does.
fn run_job(dir: &Path, query: &str, order: &str, out: &Path) -> Result<(), String> {
    let (text, more) = sql(query).ok_or_else(|| format!("unknown query `{query}`"))?;
    let job = format!(
        "query = \"{text}\"\n[inputs.events]\npath = \"events.csv\"\ntime_format = \"epoch-ms\"\ngenerate = {{ every = 1000, delay = \"2s\" }}\norder = \"{order}\"\n{more}[outputs.output]\npath = \"{}\"\ntime_format = \"rfc3339\"\n",
        out.display()
    );
    let file = dir.join(format!("{query}.toml"));
    std::fs::write(&file, job).map_err(|e| e.to_string())?;
    let args = vec!["job".to_owned(), file.display().to_string()];
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    match punctual::cli::main(&args, &mut stdout, &mut stderr) {
        0 => Ok(()),
        code => Err(format!(
            "punctual job exited with {code}: {}",
            String::from_utf8_lossy(&stderr)
        )),
    }
}

/// Runs the query written in Rust with typed payloads, the events in arrival order if
/// `arrival`.
async fn run_typed(dir: &Path, query: &str, arrival: bool, out: &Path) -> Result<(), String> {
    let e = |e: punctual::runtime::QueryError| e.to_string();
    let mut q = Query::new(query);
    let reference = if query == "join" {
        let import = AdvanceTimeSettings::builder()
            .import(AdvanceTimeImportSettings::new("events"))
            .policy(AdvanceTimePolicy::Adjust)
            .build()
            .map_err(|e| e.to_string())?;
        let options = InputOptions::new("reference", EventShape::Interval)
            .settings(import)
            .reference();
        let config = CsvInputConfig::new(dir.join("reference.csv"), "valid_from")
            .end("valid_to")
            .time_format(TimeFormat::EpochMs);
        Some(
            q.create_stream::<_, Reading, _, _>(options, &CsvInput, &config)
                .map_err(e)?,
        )
    } else {
        None
    };
    let generation = AdvanceTimeGenerationSettings::every_events(1000)
        .delay(TimeSpan::from_secs(2))
        .final_cti(true)
        .build()
        .map_err(|e| e.to_string())?;
    let settings = AdvanceTimeSettings::builder()
        .generation(generation)
        .policy(AdvanceTimePolicy::AdjustPoints)
        .build()
        .map_err(|e| e.to_string())?;
    let options = InputOptions::new("events", EventShape::Point).settings(settings);
    let config = CsvInputConfig::new(dir.join("events.csv"), "ts").time_format(TimeFormat::EpochMs);
    let output = JsonLinesOutputConfig::new(out)
        .time_format(TimeFormat::Rfc3339)
        .rows(RowLayout::default());
    if arrival {
        let readings = q
            .create_stream::<_, Reading, _, _>(options.unordered(), &CsvInput, &config)
            .map_err(e)?;
        typed(&mut q, query, &readings, &reference, output.clone())?;
    } else {
        let readings = q
            .create_stream::<_, Reading, _, _>(options, &CsvInput, &config)
            .map_err(e)?;
        typed(&mut q, query, &readings, &reference, output.clone())?;
    }
    let running = q.start().map_err(|e| e.to_string())?;
    running.wait().await.map_err(|e| e.to_string())?;
    Ok(())
}

/// The query's operators and output, on `readings` of either order.
fn typed<O: Order>(
    q: &mut Query,
    query: &str,
    readings: &punctual::core::ops::Stream<Reading, O>,
    reference: &Option<Stream<Reading>>,
    output: JsonLinesOutputConfig,
) -> Result<(), String> {
    let e = |e: punctual::runtime::QueryError| e.to_string();
    match (query, reference) {
        ("filter", _) => {
            let kept = readings
                .filter(|r: &Reading| r.value >= 500_000)
                .map(|r: &Reading| Kept { value: r.value });
            q.bind_output(&kept, &JsonLinesOutput, &output).map_err(e)?;
        }
        ("window", _) => {
            // Stream Analytics' windows, as the job's query language has them: each holds
            // (end - 1 s, end], its result at its end.
            let per_key = readings
                .tumbling_window(TimeSpan::from_secs(1))
                .alignment(Time::EPOCH + TimeSpan::from_ticks(1))
                .output(WindowOutput::PointAtLastTick)
                .group_by(|r: &Reading| r.key)
                .aggregate((Count, Sum::of(|r: &Reading| r.value as f64)))
                .map(|(key, (n, sum)): &(u32, (u64, f64))| PerKey {
                    key: *key,
                    x: *n as i64 + *sum as i64,
                });
            q.bind_output(&per_key, &JsonLinesOutput, &output)
                .map_err(e)?;
        }
        ("join", Some(reference)) => {
            let products = readings.join_on(
                reference,
                |r: &Reading| r.key,
                |v: &Reading| v.key,
                |r: &Reading, v: &Reading| Product {
                    x: r.value * v.value,
                },
            );
            q.bind_output(&products, &JsonLinesOutput, &output)
                .map_err(e)?;
        }
        (other, _) => return Err(format!("unknown query `{other}`")),
    }
    Ok(())
}

/// A digest of the output's lines, sorted (equal for the same lines in any order), and how
/// many are events.
fn lines(path: &Path) -> Result<(u64, usize), String> {
    use std::hash::{Hash, Hasher};
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    // The lines as slices of the text, not a string each: millions of small frees here would
    // leave the allocator consolidating them inside the next timed run.
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    let events = lines.iter().filter(|l| !l.contains("\"cti\"")).count();
    let mut digest = std::collections::hash_map::DefaultHasher::new();
    lines.hash(&mut digest);
    Ok((digest.finish(), events))
}

/// Writes the two files of `--make`: a fixed sequence from a fixed seed.
fn make(dir: &Path, n: u64) -> Result<(), String> {
    use std::io::Write;
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move |below: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % below
    };
    let t0: u64 = 1_764_547_200_000; // 2025-12-01T00:00:00Z, in milliseconds
    let create = |name: &str| {
        std::fs::File::create(dir.join(name))
            .map(|f| std::io::BufWriter::with_capacity(1 << 20, f))
            .map_err(|e| e.to_string())
    };
    let mut events = create("events.csv")?;
    writeln!(events, "ts,value,key").map_err(|e| e.to_string())?;
    for i in 0..n {
        let late = next(500);
        let ts = (t0 + i / 10).saturating_sub(late);
        let (value, key) = (next(1_000_000), next(1000));
        writeln!(events, "{ts},{value},{key}").map_err(|e| e.to_string())?;
    }
    events.flush().map_err(|e| e.to_string())?;
    let mut reference = create("reference.csv")?;
    writeln!(reference, "valid_from,valid_to,value,key").map_err(|e| e.to_string())?;
    let span = n / 10 + 10_000;
    for from in (0..span).step_by(10_000) {
        for key in 0..1000 {
            let (start, end) = (t0 + from, t0 + from + 10_000);
            writeln!(reference, "{start},{end},{},{key}", next(100) + 1)
                .map_err(|e| e.to_string())?;
        }
    }
    reference.flush().map_err(|e| e.to_string())
}

fn main_inner() -> Result<bool, String> {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!(
            "punctual-files-bench --dir DIR [--make N] [--query filter|window|join|all] [--reps N] [--order time|arrival]"
        );
        return Ok(true);
    }
    let dir = PathBuf::from(arg(&args, "--dir", "files".to_string())?);
    let reps: usize = arg(&args, "--reps", 3)?;
    let which: String = arg(&args, "--query", "all".to_string())?;
    let order: String = arg(&args, "--order", "time".to_string())?;
    let arrival = match order.as_str() {
        "time" => false,
        "arrival" => true,
        other => return Err(format!("--order is time or arrival, not `{other}`")),
    };
    if args.iter().any(|a| a == "--make") {
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        make(&dir, arg(&args, "--make", 5_000_000)?)?;
    }
    let events = std::fs::read_to_string(dir.join("events.csv"))
        .map_err(|e| format!("{}: {e} (make the files with --make N)", dir.display()))?
        .lines()
        .count()
        .saturating_sub(1);
    let queries: Vec<&str> = match which.as_str() {
        "all" => vec!["filter", "window", "join"],
        q => vec![q],
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let mut ok = true;
    for query in queries {
        let (mut typed, mut job) = (Vec::new(), Vec::new());
        for rep in 0..reps.max(1) {
            for form in ["typed", "job"] {
                let out = dir.join(format!("{query}-{form}.jsonl"));
                let (start, cpu) = (Instant::now(), ProcessTime::now());
                match form {
                    "typed" => runtime.block_on(run_typed(&dir, query, arrival, &out))?,
                    _ => run_job(&dir, query, &order, &out)?,
                }
                let (secs, cpu_s) = (start.elapsed().as_secs_f64(), cpu.elapsed().as_secs_f64());
                let rate = events as f64 / cpu_s;
                if form == "typed" {
                    &mut typed
                } else {
                    &mut job
                }
                .push(rate);
                let (mine, results) = lines(&out)?;
                let other = dir.join(format!(
                    "{query}-{}.jsonl",
                    if form == "typed" { "job" } else { "typed" }
                ));
                let verdict = match lines(&other) {
                    Ok((theirs, _)) if theirs == mine => "same-output",
                    Ok(_) => {
                        ok = false;
                        "OUTPUT-DIFFERS"
                    }
                    Err(_) => "first",
                };
                println!(
                    "query={query} form={form} rep={rep} secs={secs:.3} cpu_s={cpu_s:.3} events_per_cpu_s={rate:.0} results={results} {verdict}"
                );
            }
        }
        typed.sort_by(f64::total_cmp);
        job.sort_by(f64::total_cmp);
        let (t, j) = (typed[typed.len() / 2], job[job.len() / 2]);
        println!(
            "SUMMARY query={query} order={order} events={events} typed_events_per_cpu_s={t:.0} job_events_per_cpu_s={j:.0} job_over_typed={:.2}",
            j / t
        );
    }
    Ok(ok)
}

fn main() -> ExitCode {
    exit_code(main_inner())
}
