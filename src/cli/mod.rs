//! The `punctual` command line, as a library function so that it can be tested: the binary
//! only calls [`main`] with the process's arguments and streams.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::conformance::{find_cases, run_case};

mod brokers;
mod capture;
mod cluster;
mod first_time;
mod job;
mod letters;
mod paths;
mod pipe;
mod query;

use pipe::{cmd_pipe, PipeArgs};
use query::{cmd_query, QueryArgs};

/// `punctual --help`.
pub const HELP: &str = "\
punctual: event-time stream processing from the command line. Runs queries in a Stream
Analytics-style language over files, standard input, sockets and brokers (query, job),
puts JSON lines or CSV in time order (pipe), and runs, checks and draws the conformance
cases of the temporal semantics (run, check, explain, timeline). `punctual COMMAND --help`
shows one command.

USAGE:
    punctual run CASE_DIR [--workers W] [--processes P --process I --hosts FILE]
                                 run one case; print its output as JSON lines (stdout)
                                 and each input stream's counters and dead letters (stderr).
                                 --workers W: split over W worker threads (same results);
                                 --processes P: this is process I of P, each running the
                                 same command with its own I; FILE has one host:port per
                                 process (line I is this one); the output is on process 0;
                                 --connect-timeout 60s: how long the processes may take
                                 to connect (then the run fails naming the missing one);
                                 --peer-timeout 30s: how long another process may send
                                 nothing, not even its heartbeat, before the run fails
                                 naming it (a stopped or frozen process);
                                 at most 128 workers in all
    punctual check [--workers W] [--processes P] PATH...
                                 run every case at or below each PATH, print a diff for
                                 each failing case and a closing line `N passed, N failed`;
                                 with --processes P, each case runs as P processes of this
                                 program on free loopback ports (a 120 s deadline each)
    punctual explain CASE_DIR    run one case; for every input and operator, print its CTI
                                 and the input holding it back (start here for 'no output?')
    punctual explain JOB.toml    print the job's plan (each input: how it is read, where its
                                 CTIs come from, what a late event becomes; each operator;
                                 each output), run it as `job` does, then say where each
                                 operator's CTI ended, which input held it back, and what was
                                 adjusted, dropped or malformed (on stderr; `query --explain`
                                 does the same for a query)
    punctual pipe [-i FILE] [-o FILE] [--csv TIME_COLUMN | --time-field FIELD]
                  [--time-format FORMAT] [--delay DURATION | --in-order]
                  [--dead-letters FILE] [--timeline FILE.svg]
                  [--checkpoint DIR [--checkpoint-every 1s]]
                                 read events (JSON-lines items; flat JSON objects timed by
                                 FIELD; or CSV with the start time in TIME_COLUMN) from FILE
                                 or standard input, put them in time order as the CTIs
                                 allow, write JSON lines to FILE or standard output (times
                                 in --time-format: rfc3339 by default, epoch-ms, epoch-s,
                                 ticks; also how time fields are read; by default RFC
                                 3339 text, a number refused: its unit is never guessed);
                                 counters and a summary
                                 of the dead letters (dropped,
                                 rejected, malformed, unreleased items with the reason) on
                                 stderr, every dead letter as a JSON line to the
                                 --dead-letters FILE; a progress bar on a terminal. Ctrl-C
                                 stops with a drain; a closed output (`| head`) ends quietly.
                                 --checkpoint DIR (with -i FILE and -o FILE): record
                                 checkpoints in DIR; killed and run again with the same
                                 arguments, it continues the output exactly where its last
                                 checkpoint was (no duplicate, no gap); at most one
                                 checkpoint per --checkpoint-every (`500ms`, `2s`; 1s)
    punctual query 'SELECT ...' | --file QUERY.sql
                  --input NAME=FILE[,time=FIELD][,end=FIELD][,order=arrival]
                                   [,out_of_order=DURATION][,policy=adjust|drop]...
                  [--output FILE | --output NAME=FILE...] [--time-format FORMAT]
                  [--out-of-order DURATION] [--policy adjust|drop] [--with-ctis | --items]
                  [--explain]
                  [--max-buffered N] [--dead-letters FILE]
                  [--timeline FILE.svg] [--workers W] [--processes P --process I --hosts FILE]
                                 run a query in the query language (Stream Analytics-style
                                 SQL: WHERE, GROUP BY with TumblingWindow, HoppingWindow,
                                 SlidingWindow or SnapshotWindow, JOIN, UNION, WITH) over
                                 files: FILE.csv is CSV, anything else JSON lines; records
                                 are timed by the query's TIMESTAMP BY field (or time=),
                                 JSON lines without one are items (kind, start, payload);
                                 an input joined without DATEDIFF is reference data that
                                 imports the other input's CTIs. CTIs follow each input's
                                 latest time, --out-of-order behind (default 0s; --delay is
                                 the same flag); an event behind the CTI is moved up to it
                                 and counted as adjusted (Stream Analytics' adjust), or with
                                 --policy drop dropped, counted and dead-lettered;
                                 --max-buffered: how many events may wait for a CTI per
                                 input (1000000). Results as JSON lines (or CSV to FILE.csv)
                                 to FILE or standard output, one flat row each: the result's
                                 time (`time`; `start` and `end` for intervals) and its
                                 fields; --with-ctis adds the CTIs (lines {\"cti\":TIME}), --items
                                 writes items (kind, times, payload) with CTIs. Times in
                                 --time-format (rfc3339 by default; epoch-ms, epoch-s,
                                 ticks); counters and dead letters on stderr. An input whose
                                 every line is malformed fails the run with its first bad line.
                                 order=arrival: the input's events go on as they come
                                 (filters, projections, tumbling and hopping windows and a
                                 join's left side take them so; the rest sort them first).
                                 --timeline FILE.svg (query, job, pipe): the inputs (what
                                 they released, what was dropped or rejected) and outputs
                                 (each result with its values) on one time axis, the first
                                 500 events of each. --workers, --processes: on the
                                 cluster, as for `job`
    punctual job JOB.toml [--timeline FILE.svg]
                  [--workers W] [--processes P --process I --hosts FILE]
                                 the same from a job file naming the query, its inputs
                                 ([inputs.NAME]: path, connect or listen (TCP), kafka or
                                 mqtt (with the features of those names), format, time,
                                 time_format, delay (or out_of_order), generate or
                                 watermark, policy (adjust, the default, or drop), import,
                                 reference, stream, fields, order) and outputs ([outputs.NAME]:
                                 path, connect, kafka or mqtt, format, time_format; for
                                 files layout (rows, the default, or items), with_ctis,
                                 time_field, start_field, end_field);
                                 unknown keys are errors. --workers, --processes: on the
                                 cluster, as for `run` (each input read where its owner
                                 runs, the outputs written by process 0; no timeline)
    punctual timeline CASE_DIR [-o FILE.svg]
                                 run one case and draw its inputs and output on one time
                                 axis as SVG (to FILE, or standard output)
    punctual --help              this text
    punctual --version           the version

EXAMPLES:
    punctual run tests/conformance/ingress/unordered-with-delay
    punctual check tests/conformance
    punctual check --processes 2 --workers 2 tests/conformance
    punctual pipe -i samples/data/readings.jsonl --delay 5s | head
    cat readings.csv | punctual pipe --csv time --in-order > ordered.jsonl
    punctual query 'SELECT device, AVG(celsius) AS mean FROM readings TIMESTAMP BY time
                    GROUP BY device, TumblingWindow(minute, 1)' --input readings=readings.csv

EXIT CODES:
    0  success (for `check`: every case passed)
    1  a case failed or could not be run
    2  bad command line
";

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
/// fail the run).
pub fn main(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let asks_help = args[1..].iter().any(|a| a == "--help" || a == "-h");
    let helped = match args.first().map(String::as_str) {
        Some("help") => args.get(1).map(String::as_str),
        Some(command) if asks_help => Some(command),
        _ => None,
    };
    if let Some(command) = helped {
        return match command_help(command) {
            Some(text) => {
                let _ = write!(out, "{text}");
                EXIT_OK
            }
            None => usage(err, &format!("`{command}` is not a command"), ""),
        };
    }
    match args.first().map(String::as_str) {
        Some("run") if args.len() >= 2 => match cluster::Placement::parse(&args[1..]) {
            Ok((placement, rest)) if rest.len() == 1 => {
                cmd_run(Path::new(&rest[0]), &placement, out, err)
            }
            Ok(_) => usage(err, "`run` takes one case folder", "run"),
            Err(e) => usage(err, &e, "run"),
        },
        Some("explain") if args.len() == 2 => cmd_explain(Path::new(&args[1]), out, err),
        Some("pipe") => match PipeArgs::parse(&args[1..]) {
            Ok(pipe) => cmd_pipe(&pipe, err),
            Err(e) => usage(err, &e, "pipe"),
        },
        Some("query") => {
            let parsed = cluster::Placement::parse(&args[1..]).and_then(|(placement, rest)| {
                Ok((placement.job_config()?, QueryArgs::parse(&rest)?))
            });
            match parsed {
                Ok((config, q)) => cmd_query(&q, config, err),
                Err(e) => usage(err, &e, "query"),
            }
        }
        Some("job") if args.len() >= 2 => match cluster::Placement::parse(&args[1..]) {
            Ok((placement, rest))
                if rest.len() == 1 || (rest.len() == 3 && rest[1] == "--timeline") =>
            {
                let config = match placement.job_config() {
                    Ok(c) => c,
                    Err(e) => return usage(err, &e, "job"),
                };
                match job::Job::load(Path::new(&rest[0])) {
                    Ok(mut j) => {
                        if let Some(t) = rest.get(2) {
                            j.timeline = Some(PathBuf::from(t));
                        }
                        job::run(&j, config, err)
                    }
                    Err(e) => {
                        let _ = writeln!(err, "error: {e}");
                        EXIT_USAGE
                    }
                }
            }
            Ok(_) => usage(
                err,
                "`job` takes one job file, and --timeline FILE.svg if you like",
                "job",
            ),
            Err(e) => usage(err, &e, "job"),
        },
        Some("timeline") if args.len() == 2 => cmd_timeline(Path::new(&args[1]), None, out, err),
        Some("timeline") if args.len() == 4 && args[2] == "-o" => {
            cmd_timeline(Path::new(&args[1]), Some(Path::new(&args[3])), out, err)
        }
        Some("check") if args.len() >= 2 => match cluster::Placement::parse(&args[1..]) {
            Ok((placement, rest)) if !rest.is_empty() => cmd_check(
                &rest.iter().map(PathBuf::from).collect::<Vec<_>>(),
                &placement,
                out,
                err,
            ),
            Ok(_) => usage(err, "`check` takes one or more paths", "check"),
            Err(e) => usage(err, &e, "check"),
        },
        Some("--help" | "-h" | "help") => {
            let _ = write!(out, "{HELP}");
            EXIT_OK
        }
        Some("--version" | "-V") => {
            let _ = writeln!(out, "punctual {}", env!("CARGO_PKG_VERSION"));
            EXIT_OK
        }
        Some(command @ ("run" | "explain" | "job" | "timeline" | "check")) => {
            let takes = match command {
                "run" => "one case folder",
                "explain" => "one case folder or job file",
                "job" => "one job file",
                "timeline" => "one case folder, and -o FILE.svg if you like",
                _ => "one or more paths",
            };
            usage(err, &format!("`{command}` takes {takes}"), command)
        }
        Some(other) => usage(err, &format!("`{other}` is not a command"), ""),
        None => usage(err, "no command given", ""),
    }
}

/// What `punctual COMMAND --help` prints: the command's lines of [`HELP`], its examples and
/// the exit codes; `None` if it is not a command.
fn command_help(command: &str) -> Option<String> {
    let usage = HELP.split("\nEXAMPLES:").next().unwrap_or_default();
    let head = format!("    punctual {command}");
    let mut lines = usage.lines().skip_while(|l| !l.starts_with(&head));
    let first = lines.next()?;
    // The command's own lines: up to the next command.
    let own = lines.take_while(|l| !l.starts_with("    punctual "));
    let mut text = format!("USAGE:\n{first}\n");
    for line in own {
        text.push_str(line);
        text.push('\n');
    }
    let examples = HELP
        .split("\nEXAMPLES:\n")
        .nth(1)
        .and_then(|rest| rest.split("\n\n").next())
        .unwrap_or_default();
    // An example is its line and the more indented lines that go on with it.
    let mut mine: Vec<&str> = Vec::new();
    let mut going_on = false;
    for line in examples.lines() {
        going_on = if line.starts_with("     ") {
            going_on
        } else {
            line.contains(&format!("punctual {command} "))
        };
        if going_on {
            mine.push(line);
        }
    }
    if !mine.is_empty() {
        text.push_str("\nEXAMPLES:\n");
        text.push_str(&mine.join("\n"));
        text.push('\n');
    }
    if let Some(codes) = HELP.split("\nEXIT CODES:\n").nth(1) {
        text.push_str("\nEXIT CODES:\n");
        text.push_str(codes);
    }
    Some(text)
}

/// A bad command line: one line saying what is wrong, one with a hint; exit code 2.
fn usage(err: &mut dyn Write, what: &str, command: &str) -> u8 {
    let _ = writeln!(err, "error: {what}");
    if command.is_empty() {
        let _ = writeln!(err, "hint: `punctual --help` shows the commands");
    } else {
        let _ = writeln!(err, "hint: `punctual {command} --help` shows how to use it");
    }
    EXIT_USAGE
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

/// A duration flag's value: `5s`, `250ms`, `1h30m`, or a number of ticks.
fn duration(flag: &str, text: &str) -> Result<punctual_core::TimeSpan, String> {
    text.parse().map_err(|e| format!("{flag}: {e}"))
}

/// A `--delay` flag's value: a duration that is not negative (how far the CTIs stay behind the
/// newest event; below zero every event but the first would be late).
fn delay(flag: &str, text: &str) -> Result<punctual_core::TimeSpan, String> {
    let d = duration(flag, text)?;
    if d.ticks() < 0 {
        return Err(format!(
            "{flag} {text}: a delay cannot be negative (it is how far the CTIs stay behind the newest event; 0s for events in order)"
        ));
    }
    Ok(d)
}

/// The exit code of a query that ran: `report` prints what it did (counters, dead letters) and
/// says whether it read nothing but malformed lines (a failure). A closed output (the reader of
/// a pipe went away, as `| head` does) is a normal end.
fn exit_code(
    ended: Result<punctual_adapters::QueryReport, punctual_adapters::QueryFailure>,
    err: &mut dyn Write,
    report: impl Fn(&mut dyn Write, &punctual_adapters::QueryReport) -> bool,
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
fn closed_output(error: &punctual_adapters::QueryError) -> bool {
    use punctual_adapters::{AdapterError, QueryError};
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
fn cmd_explain(dir: &Path, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    if dir.is_file() {
        return match job::Job::load(dir) {
            Ok(mut j) => {
                j.explain = true;
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
