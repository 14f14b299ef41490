//! The `punctual` command line, as a library function so that it can be tested: the binary
//! only calls [`main`] with the process's arguments and streams.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::conformance::{find_cases, run_case};

mod args;
mod brokers;
mod capture;
mod checkpoint;
mod cluster;
mod dead_letters;
mod first_time;
mod job;
mod paths;
mod pipe;
mod query;

use args::Command;
use pipe::cmd_pipe;
use query::cmd_query;

/// Exit code: success.
pub const EXIT_OK: u8 = 0;
/// Exit code: a case failed or could not be run.
pub const EXIT_FAILED: u8 = 1;
/// Exit code: bad command line.
pub const EXIT_USAGE: u8 = 2;

/// Sends the library's log (`tracing`) to standard error: warnings and errors by default (an
/// event an operator dropped, a TCP client over the limit closed), or what `RUST_LOG` asks
/// (`info`, `debug`, `punctual_adapters=debug,warn`: a level, or targets with levels). A
/// `RUST_LOG` that does not read is said on standard error, and the default kept. Call it
/// once, from a program's `main` (the `punctual` binary does).
pub fn install_logging() {
    use tracing_subscriber::filter::Targets;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let default = Targets::new().with_default(tracing_subscriber::filter::LevelFilter::WARN);
    let filter = match std::env::var("RUST_LOG") {
        Ok(text) if !text.trim().is_empty() => text.parse::<Targets>().unwrap_or_else(|e| {
            eprintln!("warning: RUST_LOG={text} does not read ({e}); logging warnings");
            default.clone()
        }),
        _ => default.clone(),
    };
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false)
        .without_time();
    let _ = tracing_subscriber::registry()
        .with(layer)
        .with(filter)
        .try_init();
}

/// Runs the command line `args` (without the program name), writing to `out` and `err`;
/// returns the exit code. Write errors on `out`/`err` are ignored (a closed pipe is no reason to
/// fail the run). `punctual --help` says what the commands are.
pub fn main(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    main_with(args, out, err, &punctual_sql::Functions::default())
}

/// [`main`] in a program that registers user-defined functions and aggregates: queries and
/// jobs it runs may call them (`udf.NAME(...)`, `uda.NAME(...)`). A job run on several
/// processes starts them as this same program, so each registers the same functions.
///
/// ```no_run
/// use punctual::rows::Value;
/// use punctual::sql::Functions;
///
/// let functions = Functions::new().function("double", |args: &[Value]| {
///     Ok(args[0].as_i64().map_or(Value::Null, |x| Value::Int(x * 2)))
/// });
/// let args: Vec<String> = std::env::args().skip(1).collect();
/// let code = punctual::cli::main_with(&args, &mut std::io::stdout(), &mut std::io::stderr(), &functions);
/// std::process::exit(i32::from(code));
/// ```
pub fn main_with(
    args: &[String],
    out: &mut dyn Write,
    err: &mut dyn Write,
    functions: &punctual_sql::Functions,
) -> u8 {
    let cli = match args::parse(args) {
        Ok(cli) => cli,
        Err(e) => return clap_exit(&e, out, err),
    };
    match cli.command {
        Command::Run { case, placement } => match placement.check() {
            Ok(()) => cmd_run(&case, &placement, out, err),
            Err(e) => clap_exit(&args::error("run", &e), out, err),
        },
        Command::Check { paths, spread } => {
            let placement = spread.placement();
            match placement.check() {
                Ok(()) => cmd_check(&paths, &placement, out, err),
                Err(e) => clap_exit(&args::error("check", &e), out, err),
            }
        }
        Command::Explain { path } => cmd_explain(&path, functions, out, err),
        Command::Completions { shell } => {
            let _ = out.write_all(&args::completions(shell));
            EXIT_OK
        }
        Command::Pipe(pipe) => match pipe.check() {
            Ok(()) => cmd_pipe(&pipe, err),
            Err(e) => clap_exit(&args::error("pipe", &e), out, err),
        },
        Command::Query {
            query,
            placement,
            checkpointing,
        } => match job_config(&placement) {
            Ok(config) => cmd_query(&query, (config, checkpointing), functions, err),
            Err(e) => clap_exit(&args::error("query", &e), out, err),
        },
        Command::Job {
            file,
            timeline,
            placement,
            checkpointing,
        } => {
            let config = match job_config(&placement) {
                Ok(c) => c,
                Err(e) => return clap_exit(&args::error("job", &e), out, err),
            };
            match job::Job::load(&file) {
                Ok(mut j) => {
                    if timeline.is_some() {
                        j.timeline = timeline;
                    }
                    j.checkpointing = checkpointing;
                    j.functions = functions.clone();
                    job::run(&j, config, err)
                }
                Err(e) => {
                    let _ = writeln!(err, "error: {e}");
                    EXIT_USAGE
                }
            }
        }
        Command::Timeline { case, output } => cmd_timeline(&case, output.as_deref(), out, err),
    }
}

/// The cluster configuration of `query` and `job`: none without `--workers` or `--processes`.
fn job_config(
    placement: &cluster::Placement,
) -> Result<Option<punctual_cluster::ClusterConfig>, String> {
    placement.check()?;
    placement.job_config()
}

/// What a command line clap did not take becomes: help or the version on `out` (exit 0), an
/// error with the usage on `err` (exit 2).
fn clap_exit(e: &clap::Error, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    use clap::error::ErrorKind;
    let text = e.render().to_string();
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = out.write_all(text.as_bytes());
            EXIT_OK
        }
        _ => {
            let _ = err.write_all(text.as_bytes());
            EXIT_USAGE
        }
    }
}

fn cmd_run(
    dir: &Path,
    placement: &cluster::Placement,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let (run, owned) = match cluster::run(dir, placement) {
        Ok(run) => run,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return EXIT_FAILED;
        }
    };
    for line in run.output_lines() {
        let _ = writeln!(out, "{line}");
    }
    cluster::note_share(err, placement);
    for ((name, c), _) in run.counters.iter().zip(&owned).filter(|(_, o)| **o) {
        let _ = writeln!(
            err,
            "{}",
            counters_line(name, c, punctual_adapters::line::TimeFormat::Ticks)
        );
    }
    for (name, letters) in &run.dead_letters {
        for d in letters {
            let item = d
                .item
                .as_ref()
                .map(|i| punctual_adapters::line::item_to_json(i.as_ref()).to_string())
                .unwrap_or_default();
            let _ = writeln!(
                err,
                "dead letter on {name} (CTI {}): {} {item}",
                d.cti, d.reason
            );
        }
    }
    for h in &run.held {
        let _ = writeln!(err, "not emitted at the end: {h}");
    }
    EXIT_OK
}

/// `stream NAME: events_in=.. released=.. ...`: every count of a stream's counters, in their
/// declared order, and its times (`cti`, `max_start`) in `times` (when it has had any).
fn counters_line(
    name: &str,
    c: &punctual_policies::IngressCounters,
    times: punctual_adapters::line::TimeFormat,
) -> String {
    let mut line = format!("stream {name}:");
    if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(c) {
        for (key, value) in fields {
            if key == "cti" || key == "max_start" {
                if let Some(t) = value.as_i64().map(punctual_core::Time::from_ticks) {
                    // (A static table's rows start at the first finite time: no news.)
                    if t.is_finite() && t != punctual_core::Time::MIN_FINITE {
                        let shown = times.write(t);
                        let shown = shown
                            .as_str()
                            .map_or_else(|| shown.to_string(), str::to_owned);
                        line.push_str(&format!(" {key}={shown}"));
                    }
                }
            } else if let Some(n) = value.as_u64() {
                line.push_str(&format!(" {key}={n}"));
            }
        }
    }
    line
}

/// The exit code of a query that ran: `report` prints what it did (counters, dead letters) and
/// says whether it read nothing but malformed lines (a failure). A closed output (the reader of
/// a pipe went away, as `| head` does) is a normal end.
fn exit_code(
    ended: Result<punctual_runtime::QueryReport, punctual_runtime::QueryFailure>,
    err: &mut dyn Write,
    report: impl Fn(&mut dyn Write, &punctual_runtime::QueryReport) -> bool,
) -> u8 {
    match ended {
        Ok(r) => {
            if report(err, &r) {
                EXIT_FAILED
            } else {
                EXIT_OK
            }
        }
        Err(failure) if closed_output(&failure.error) => {
            report(err, &failure.report);
            EXIT_OK
        }
        Err(failure) => {
            // What the run did until it failed, then why.
            report(err, &failure.report);
            let _ = writeln!(err, "error: {}", failure.error);
            EXIT_FAILED
        }
    }
}

/// Whether a query failed because its output's reader is gone (a broken pipe).
fn closed_output(error: &punctual_runtime::QueryError) -> bool {
    use punctual_runtime::{AdapterError, QueryError};
    matches!(error, QueryError::Adapter {
        role: "output",
        error: AdapterError::Io { error, .. },
        ..
    } if error.kind() == std::io::ErrorKind::BrokenPipe)
}

fn cmd_timeline(dir: &Path, to: Option<&Path>, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let run = match run_case(dir) {
        Ok(run) => run,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return EXIT_FAILED;
        }
    };
    let svg = crate::timeline::render(&run);
    match to {
        None => {
            let _ = out.write_all(svg.as_bytes());
            EXIT_OK
        }
        Some(path) => match std::fs::write(path, svg) {
            Ok(()) => EXIT_OK,
            Err(e) => {
                let _ = writeln!(err, "error: {}: {e}", path.display());
                EXIT_FAILED
            }
        },
    }
}

/// `punctual explain`: of a job file (its plan, its run, where it stood), or of a case.
fn cmd_explain(
    dir: &Path,
    functions: &punctual_sql::Functions,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    if dir.is_file() {
        return match job::Job::load(dir) {
            Ok(mut j) => {
                j.explain = true;
                j.functions = functions.clone();
                job::run(&j, None, err)
            }
            Err(e) => {
                let _ = writeln!(err, "error: {e}");
                EXIT_USAGE
            }
        };
    }
    let run = match run_case(dir) {
        Ok(run) => run,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return EXIT_FAILED;
        }
    };
    for e in &run.explanations {
        let _ = writeln!(out, "{e}");
        if let Some((input, t)) = &e.held_by {
            if *t == punctual_core::Time::NEG_INF {
                let _ = writeln!(
                    out,
                    "  `{input}` has never had a CTI, so `{}` can release nothing: give `{input}` \
                     advance-time settings, a watermark, or import another stream's CTIs",
                    e.label
                );
            }
        }
    }
    for (name, c) in &run.counters {
        if c.unreleased > 0 {
            let _ = writeln!(
                out,
                "input `{name}`: {} events were never released (no CTI passed them)",
                c.unreleased
            );
        }
    }
    EXIT_OK
}

fn cmd_check(
    roots: &[PathBuf],
    placement: &cluster::Placement,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> u8 {
    let (mut passed, mut failed) = (0usize, 0usize);
    for root in roots {
        let cases = match find_cases(root) {
            Ok(c) if c.is_empty() => {
                let _ = writeln!(
                    err,
                    "error: no case (a folder with case.toml) at or below {}",
                    root.display()
                );
                failed += 1;
                continue;
            }
            Ok(c) => c,
            Err(e) => {
                let _ = writeln!(err, "error: {e}");
                failed += 1;
                continue;
            }
        };
        for dir in cases {
            let ran = if placement.processes > 1 {
                cluster::check_on_processes(&dir, placement.workers, placement.processes)
            } else {
                cluster::run(&dir, placement)
                    .map(|r| r.0)
                    .map_err(|e| e.to_string())
            };
            let problems: Vec<String> = match ran {
                Err(e) => vec![e],
                Ok(run) => match run.check() {
                    Ok(()) => Vec::new(),
                    Err(ms) => ms
                        .iter()
                        .map(|m| m.to_string())
                        .chain(std::iter::once(format!(
                            "actual output:\n  {}",
                            run.output_lines().join("\n  ")
                        )))
                        .collect(),
                },
            };
            if problems.is_empty() {
                passed += 1;
                let _ = writeln!(out, "PASS {}", dir.display());
            } else {
                failed += 1;
                let _ = writeln!(out, "FAIL {}", dir.display());
                for p in problems {
                    let _ = writeln!(out, "  {}", p.replace('\n', "\n  "));
                }
            }
        }
    }
    let _ = writeln!(out, "{passed} passed, {failed} failed");
    if failed == 0 {
        EXIT_OK
    } else {
        EXIT_FAILED
    }
}
