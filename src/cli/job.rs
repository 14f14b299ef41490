//! Jobs: a query in the query language with its inputs and outputs named, from a job file
//! (`punctual job JOB.toml`) or from the command line (`punctual query`); both run here.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Deserialize;

use punctual_adapters::line::TimeFormat;
use punctual_adapters::replay::read_line_ahead;
use punctual_core::ops::Stream;
use punctual_core::{EventShape, Order, TimeSpan};
use punctual_policies::{
    AdvanceTimeGenerationSettings, AdvanceTimeImportSettings, AdvanceTimePolicy,
    AdvanceTimeSettings,
};
use punctual_rows::Row;
use punctual_runtime::QueryError;
use punctual_sql::{InputUse, RowStream, SqlQuery};

use punctual_cluster::ClusterConfig;

mod explain;
mod file;
mod input;
mod parts;
mod timing;
pub(super) use file::*;
pub(super) use input::fields_key;
use parts::{print_report, FirstBad, Parts, RunError};

use super::capture::Timeline;
use super::dead_letters::DeadLetters;
use super::{counters_line, EXIT_FAILED, EXIT_USAGE};

/// A job file (see `docs/query-language.md`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Job {
    /// The query.
    pub(super) query: String,
    /// The inputs by name (every input the query reads).
    #[serde(default)]
    pub(super) inputs: std::collections::BTreeMap<String, JobInput>,
    /// The outputs by name (every name the query writes INTO).
    #[serde(default)]
    pub(super) outputs: std::collections::BTreeMap<String, JobOutput>,
    /// Every dead letter as a JSON line to this file.
    #[serde(default)]
    pub(super) dead_letters: Option<PathBuf>,
    /// A timeline of the run (inputs and outputs on one time axis) as SVG to this file.
    #[serde(default)]
    pub(super) timeline: Option<PathBuf>,
    /// `punctual explain JOB.toml`, `query --explain`: the plan before the run, where the
    /// operators stood and what was dropped after it (on stderr).
    #[serde(skip)]
    pub(super) explain: bool,
    /// Where the query came from: the job file and the line of it the query starts on (for
    /// errors in the file's own lines); `None` for a query given on the command line.
    #[serde(skip)]
    pub(super) source: Option<(String, usize)>,
    /// The user-defined functions and aggregates the program running the job registered
    /// ([`super::main_with`]).
    #[serde(skip)]
    pub(super) functions: punctual_sql::Functions,
    /// `--checkpoint DIR`: snapshots of the run.
    #[serde(skip)]
    pub(super) checkpointing: super::checkpoint::Checkpointing,
}

impl Job {
    /// A query error as the user wrote the query: in the job file's lines, or the query's.
    pub(super) fn show_error(&self, e: &punctual_sql::SqlError) -> String {
        match &self.source {
            Some((file, line)) => e.show_in_file(&self.query, file, *line),
            None => e.show(&self.query),
        }
    }

    /// Reads a job file; paths in it are relative to its folder. Unknown keys are errors
    /// naming the key.
    pub(super) fn load(path: &Path) -> Result<Job, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut job: Job = toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        job.source = query_line(&text).map(|line| (path.display().to_string(), line));
        let dir = path.parent().unwrap_or(Path::new("."));
        let resolve = |p: &mut PathBuf| {
            if p.as_os_str() != "-" && !p.as_os_str().is_empty() && p.is_relative() {
                *p = dir.join(&*p);
            }
        };
        for input in job.inputs.values_mut() {
            resolve(&mut input.path);
        }
        for output in job.outputs.values_mut() {
            resolve(&mut output.path);
        }
        if let Some(d) = job.dead_letters.as_mut() {
            resolve(d);
        }
        if let Some(t) = job.timeline.as_mut() {
            resolve(t);
        }
        Ok(job)
    }
}

/// The line (from 1) of a job file's text on which its query's text starts: the line of
/// `query = "..."`, or the next one after an opening `"""` or `'''` that ends its line
/// (TOML leaves that line end out of the string); `None` if no line starts with `query =`.
fn query_line(text: &str) -> Option<usize> {
    text.lines().enumerate().find_map(|(i, line)| {
        let rest = line.trim_start().strip_prefix("query")?.trim_start();
        let value = rest.strip_prefix('=')?.trim();
        let opens_alone = value == "\"\"\"" || value == "'''";
        Some(i + 1 + usize::from(opens_alone))
    })
}

fn format_of(path: &Path, format: Option<Format>) -> Format {
    format.unwrap_or_else(|| {
        if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
        {
            Format::Csv
        } else {
            Format::Jsonl
        }
    })
}

/// The columns of a CSV file's header (a regular file only: a pipe is not read ahead).
pub(super) fn csv_header(path: &Path) -> Option<Vec<String>> {
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    header_of(&mut std::io::BufReader::new(
        std::fs::File::open(path).ok()?,
    ))
}

/// The columns of the header `reader` starts with: `None` if there is none, or it is over the
/// line limit (the run reports why), or it does not split.
fn header_of(reader: &mut impl std::io::BufRead) -> Option<Vec<String>> {
    let line = read_line_ahead(reader, true).ok()??.ok()?;
    punctual_adapters::csv::split_record(&line, ',')
}

/// How many lines of a JSON-lines file are read ahead for its fields.
const SAMPLED_LINES: usize = 1_000;

/// The fields seen in the first lines of a JSON-lines file (a regular file only): the keys of
/// each flat object, or of each item's payload (of `stream`'s lines, for an arrival log).
/// `None` if no line says (then references are not checked).
fn json_fields(path: &Path, flat: bool, stream: Option<&str>) -> Option<Vec<String>> {
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let mut file = std::io::BufReader::new(std::fs::File::open(path).ok()?);
    fields_of(&mut file, flat, stream)
}

/// Whether a JSON-lines file holds flat records (its first line a JSON object without
/// `kind`), not items: reference data without a time is then a static table.
pub(super) fn json_records(path: &Path) -> bool {
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut reader = std::io::BufReader::new(file);
    match read_line_ahead(&mut reader, true) {
        Ok(Some(Ok(line))) => matches!(
            serde_json::from_str::<serde_json::Value>(&line),
            Ok(serde_json::Value::Object(o)) if !o.contains_key("kind")
        ),
        _ => false,
    }
}

/// [`json_fields`] of what `reader` reads: at most [`SAMPLED_LINES`] lines, each held only up
/// to the line limit (the sample ends at a line over it, which the run reports malformed).
fn fields_of(
    reader: &mut impl std::io::BufRead,
    flat: bool,
    stream: Option<&str>,
) -> Option<Vec<String>> {
    let mut fields: Vec<String> = Vec::new();
    let mut seen = false;
    for number in 0..SAMPLED_LINES {
        let Ok(Some(Ok(line))) = read_line_ahead(reader, number == 0) else {
            break;
        };
        let Ok(serde_json::Value::Object(o)) = serde_json::from_str::<serde_json::Value>(&line)
        else {
            continue;
        };
        if let Some(s) = stream {
            if o.get("stream").and_then(|v| v.as_str()) != Some(s) {
                continue;
            }
        }
        let record = if flat {
            Some(&o)
        } else {
            o.get("payload").and_then(|p| p.as_object())
        };
        if let Some(record) = record {
            seen = true;
            for k in record.keys() {
                if !fields.contains(k) {
                    fields.push(k.clone());
                }
            }
        }
    }
    seen.then_some(fields)
}

/// What a job cannot do on the cluster `cluster` describes, if anything.
fn refused_on(job: &Job, cluster: Option<&ClusterConfig>) -> Option<&'static str> {
    let cluster = cluster?;
    if job.timeline.is_some() || job.explain {
        return Some(
            "a timeline and explain run on one worker only (without --workers and --processes)",
        );
    }
    if cluster.process_count() > 1 && job.checkpointing.checkpoint.is_some() {
        return Some(
            "checkpoints run on the workers of one process: use --workers N without --processes",
        );
    }
    None
}

/// A snapshot that several workers took splits the keys into as many parts: a job run again
/// on it without `--workers` goes on on the cluster, one worker running every part.
fn parted(job: &Job) -> Option<ClusterConfig> {
    let dir = job.checkpointing.checkpoint.as_ref()?;
    let parts = punctual_runtime::Checkpoints::new(dir).workers().ok()??;
    (parts > 1).then(|| ClusterConfig::threads(1))
}

/// Runs a job: counters, dead letters and what was left held on `err`; the exit code.
pub(super) fn run(job: &Job, cluster: Option<ClusterConfig>, err: &mut dyn Write) -> u8 {
    let cluster = cluster.or_else(|| parted(job));
    let text = job.query.clone();
    let sql = match SqlQuery::parse(&text) {
        Ok(sql) => sql.with_functions(job.functions.clone()),
        Err(e) => {
            let _ = writeln!(err, "error: {}", job.show_error(&e));
            return EXIT_USAGE;
        }
    };
    let uses = sql.inputs();
    if let Err(message) = check_names(job, &sql, &uses).and_then(|()| check_files(job)) {
        let _ = writeln!(err, "error: {message}");
        return EXIT_USAGE;
    }
    let shown_times = job
        .outputs
        .values()
        .next()
        .and_then(|o| o.time_format)
        .unwrap_or(TimeFormat::Rfc3339);
    let appended = job.checkpointing.checkpoint.is_some();
    let letters = match DeadLetters::new(job.dead_letters.as_deref(), shown_times, appended) {
        Ok(l) => Arc::new(Mutex::new(l)),
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return EXIT_FAILED;
        }
    };
    let first_bad: FirstBad = Arc::default();
    let mut timeline = job.timeline.as_ref().map(|_| Timeline::default());
    let parts = Parts {
        job: job.clone(),
        sql: sql.clone(),
        uses: uses.clone(),
        letters: Arc::clone(&letters),
        first_bad: Arc::clone(&first_bad),
        plan: Mutex::default(),
    };
    if let Some(why) = refused_on(job, cluster.as_ref()) {
        let _ = writeln!(err, "error: {why}");
        return EXIT_USAGE;
    }
    if job.explain {
        if let Err(code) = explain::print_plan(&parts, err) {
            return code;
        }
    }
    let ran = match cluster {
        Some(config) => {
            let build = move |_| {
                parts.build(None).map_err(|e| match e {
                    RunError::Usage(m) => QueryError::Bind(m),
                    RunError::Query(e) => e,
                    RunError::Cluster(e) => QueryError::Bind(e.to_string()),
                })
            };
            // Listens for Ctrl-C while the run lasts (dropped at the end of this arm).
            let _interrupts = interrupts_stop(config.stop.clone());
            match punctual_cluster::run_query(config, build) {
                Ok(r) => Ok(Ok(r.report())),
                Err(e) => Err(RunError::Cluster(e)),
            }
        }
        None => match run_local(&parts, timeline.as_mut()) {
            Ok(ran) => ran,
            Err(e) => {
                let _ = writeln!(err, "error: {e}");
                return EXIT_FAILED;
            }
        },
    };
    if let (Some(t), Some(path)) = (&timeline, &job.timeline) {
        let title = job.query.split_whitespace().collect::<Vec<_>>().join(" ");
        if let Err(e) = t.write(&title, path) {
            let _ = writeln!(err, "warning: the timeline was not written: {e}");
        }
    }
    let report = |err: &mut dyn Write, report: &punctual_runtime::QueryReport| -> bool {
        let all_bad = print_report(err, report, (&letters, &first_bad), shown_times);
        if job.explain {
            for line in explain::after(report) {
                let _ = writeln!(err, "{line}");
            }
        }
        all_bad
    };
    match ran {
        Ok(ended) => super::exit_code(ended, err, report),
        Err(RunError::Usage(message)) => {
            let _ = writeln!(err, "error: {message}");
            EXIT_USAGE
        }
        Err(e) => {
            let _ = writeln!(err, "error: {}", parts::run_error_text(&e));
            EXIT_FAILED
        }
    }
}

/// Checks that the job gives an input for each input the query reads and an output for each
/// it writes, and nothing else; the message names what is missing or extra.
fn check_names(job: &Job, sql: &SqlQuery, uses: &[InputUse]) -> Result<(), String> {
    for u in uses {
        if !job.inputs.contains_key(&u.name) {
            return Err(format!(
                "the query reads `{0}`: give it an input ([inputs.{0}], or --input {0}=FILE)",
                u.name
            ));
        }
    }
    for name in job.inputs.keys() {
        if !uses.iter().any(|u| u.name == *name) {
            let names: Vec<&str> = uses.iter().map(|u| u.name.as_str()).collect();
            return Err(format!(
                "input `{name}`: the query does not read it (it reads {})",
                names.join(", ")
            ));
        }
    }
    let names = sql.outputs();
    for n in &names {
        if !job.outputs.contains_key(n) {
            return Err(format!(
                "the query writes INTO {}: give each an output ([outputs.NAME], or --output NAME=FILE)",
                names.join(", ")
            ));
        }
    }
    if let Some(extra) = job.outputs.keys().find(|o| !names.contains(o)) {
        return Err(format!(
            "output `{extra}`: the query writes INTO {}",
            names.join(", ")
        ));
    }
    Ok(())
}

/// Refuses a job whose files collide: two outputs (or the dead letters, or the timeline) on
/// one file, or one of them on a file an input reads.
fn check_files(job: &Job) -> Result<(), String> {
    let file = |p: &PathBuf| !p.as_os_str().is_empty();
    let reads: Vec<(String, &Path)> = (job.inputs.iter())
        .filter(|(_, i)| file(&i.path))
        .map(|(name, i)| (format!("input `{name}`"), i.path.as_path()))
        .collect();
    let mut writes: Vec<(String, &Path)> = (job.outputs.iter())
        .filter(|(_, o)| file(&o.path))
        .map(|(name, o)| (format!("output `{name}`"), o.path.as_path()))
        .collect();
    writes.extend(
        job.dead_letters
            .as_deref()
            .map(|p| ("the dead letters".to_owned(), p)),
    );
    writes.extend(
        job.timeline
            .as_deref()
            .map(|p| ("the timeline".to_owned(), p)),
    );
    super::paths::check_collisions(&reads, &writes)
}

/// Runs the job's query on this thread's runtime; Ctrl-C stops it with a drain, a second one
/// aborts it. The error is the runtime's, if it cannot start.
fn run_local(
    parts: &Parts,
    mut timeline: Option<&mut Timeline>,
) -> std::io::Result<
    Result<Result<punctual_runtime::QueryReport, punctual_runtime::QueryFailure>, RunError>,
> {
    let run = async {
        let query = parts.build(timeline.as_deref_mut())?;
        let running = query.start()?;
        let stop = running.stop_handle();
        let done = running.wait();
        tokio::pin!(done);
        let interrupted = tokio::signal::ctrl_c();
        tokio::pin!(interrupted);
        let mut interrupts = 0;
        loop {
            tokio::select! {
                r = &mut done => return Ok::<_, RunError>(r),
                _ = &mut interrupted, if interrupts < 2 => {
                    // Ctrl-C: stop with a drain (what is held comes out); again: abort.
                    interrupts += 1;
                    interrupted.set(tokio::signal::ctrl_c());
                    if interrupts == 1 { stop.stop() } else { stop.abort() }
                }
            }
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let ran = runtime.block_on(run);
    // A read of standard input that never returns is not waited for.
    runtime.shutdown_background();
    Ok(ran)
}

/// Ctrl-C stops a run on the cluster with a drain, on every process of it (the run's
/// `StopSignal`); a second Ctrl-C exits at once (the other processes then stop with the
/// lost peer's name). It listens until the returned sender is dropped (the run is over), so a
/// process that runs several jobs does not keep a listener per run.
fn interrupts_stop(stop: punctual_cluster::StopSignal) -> tokio::sync::oneshot::Sender<()> {
    let (done, finished) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        runtime.block_on(async {
            tokio::pin!(finished);
            // The run may end first (the sender dropped): the thread ends with it.
            tokio::select! {
                r = tokio::signal::ctrl_c() => if r.is_ok() { stop.stop() } else { return },
                _ = &mut finished => return,
            }
            tokio::select! {
                r = tokio::signal::ctrl_c() => if r.is_ok() { std::process::exit(130) },
                _ = &mut finished => {}
            }
        });
    });
    done
}

#[cfg(test)]
mod tests;
