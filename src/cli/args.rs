//! The command line's grammar, on clap: the commands, their flags and their help (what
//! `punctual --help`, `punctual COMMAND --help` and the completion scripts show), and the
//! parsers of the values flags take (durations, time formats, counts).

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use super::cluster::{Placement, Spread};
use super::pipe::PipeArgs;
use super::query::QueryArgs;

/// `punctual --help`'s closing part: examples of every kind of run, then the exit codes.
const EXAMPLES: &str = "\
Examples:
  punctual query 'SELECT device, AVG(celsius) AS mean FROM readings TIMESTAMP BY time
                  GROUP BY device, TumblingWindow(minute, 1)' --input readings=readings.csv
  punctual job samples/alerts/alerts.toml
  punctual pipe -i samples/data/readings.jsonl --out-of-order 5s | head
  punctual check tests/conformance
  punctual completions bash > ~/.local/share/bash-completion/completions/punctual

Exit codes:
  0  success (for `check`: every case passed)
  1  a case or a query failed, or could not be run
  2  bad command line";

/// `punctual`: event-time stream processing from the command line.
#[derive(Debug, Parser)]
#[command(
    name = "punctual",
    version,
    about = "punctual: event-time stream processing from the command line.",
    long_about = "punctual: event-time stream processing from the command line.\n\n\
        Runs queries in a Stream Analytics-style language over files, standard input, \
        sockets and brokers (query, job), puts JSON lines or CSV in time order (pipe), and \
        runs, checks and draws the conformance cases of the temporal semantics (run, check, \
        explain, timeline). `punctual COMMAND --help` shows one command.",
    after_help = EXAMPLES,
    subcommand_required = true,
    arg_required_else_help = true,
    max_term_width = 100
)]
pub(super) struct Cli {
    #[command(subcommand)]
    pub(super) command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub(super) enum Command {
    /// Run a query in the query language over files.
    ///
    /// The query language is Stream Analytics-style SQL: WHERE, GROUP BY with TumblingWindow,
    /// HoppingWindow, SlidingWindow, SessionWindow or SnapshotWindow, LAG/LAST/ISFIRST, JOIN and
    /// LEFT JOIN, UNION, WITH. FILE.csv is read as
    /// CSV, anything else as JSON lines; records are timed by the query's TIMESTAMP BY field
    /// (or the input's time=); JSON lines without one are items (kind, start, payload). An
    /// input joined without DATEDIFF is reference data: a CSV without a time column is a
    /// table valid for all time, one with a start column and no end holds each row until the
    /// next row of its key; it imports the other input's CTIs.
    ///
    /// CTIs follow each input's latest time, --out-of-order behind; an event behind the CTI
    /// is moved up to it and counted as adjusted (Stream Analytics' adjust), or with --policy
    /// drop dropped, counted and dead-lettered. Results are flat rows: the result's time
    /// (`time`; `start` and `end` for intervals) and its fields, as JSON lines, or CSV to a
    /// FILE.csv. Counters and dead letters go to standard error; an input whose every line is
    /// malformed fails the run with its first bad line.
    #[command(after_help = concat!(
        "Examples:\n",
        "  punctual query 'SELECT device, AVG(celsius) AS mean FROM readings TIMESTAMP BY time\n",
        "                  GROUP BY device, TumblingWindow(minute, 1)' --input readings=readings.csv\n",
        "  punctual query --file alerts.sql --input readings=r.csv --input thresholds=t.csv \\\n",
        "                 --out-of-order 5s --output alerts.csv\n\n",
        "Exit codes:\n",
        "  0  success\n",
        "  1  the query failed, or could not be run\n",
        "  2  bad command line"
    ))]
    Query {
        #[command(flatten)]
        query: QueryArgs,
        #[command(flatten)]
        placement: Placement,
        #[command(flatten)]
        checkpointing: super::checkpoint::Checkpointing,
    },
    /// Run a job file: a query, its inputs and its outputs.
    ///
    /// A job file names the query, its inputs ([inputs.NAME]: path, connect or listen (TCP),
    /// kafka, mqtt or nats (with the features of those names), format, time, time_format, delay (or
    /// out_of_order), generate or watermark, policy (adjust, the default, or drop), import,
    /// reference, stream, fields, order, key, nullable) and its outputs ([outputs.NAME]: path,
    /// connect, kafka, mqtt or nats, format, time_format; for files layout (rows, the default, or
    /// items), with_ctis, time_field, start_field, end_field). Unknown keys are errors.
    #[command(after_help = concat!(
        "Examples:\n",
        "  punctual job samples/alerts/alerts.toml\n",
        "  punctual job samples/jobs/sensors.toml --workers 2\n\n",
        "Exit codes:\n",
        "  0  success\n",
        "  1  the job failed, or could not be run\n",
        "  2  bad command line or job file"
    ))]
    Job {
        /// The job file.
        #[arg(value_name = "JOB.toml")]
        file: PathBuf,
        /// Draw the inputs and outputs on one time axis as SVG (not on the cluster).
        #[arg(long, value_name = "FILE.svg")]
        timeline: Option<PathBuf>,
        #[command(flatten)]
        placement: Placement,
        #[command(flatten)]
        checkpointing: super::checkpoint::Checkpointing,
    },
    /// Put one input's events in time order as its CTIs allow.
    ///
    /// Reads events (JSON-lines items; flat JSON objects timed by --time-field; or CSV with
    /// the start time in the --csv column) from a file or standard input, puts them in time
    /// order as the CTIs allow (the input's own, a CTI after every event with --in-order, or
    /// --out-of-order behind the newest), and writes JSON lines. An event behind the CTI is
    /// dropped, or with --policy adjust moved up to it. Counters and a summary of the dead
    /// letters go to standard error; a progress bar shows on a terminal. Ctrl-C stops with a
    /// drain; a closed output (`| head`) ends quietly.
    #[command(after_help = concat!(
        "Examples:\n",
        "  punctual pipe -i samples/data/readings.jsonl --out-of-order 5s | head\n",
        "  cat readings.csv | punctual pipe --csv time --in-order > ordered.jsonl\n\n",
        "Exit codes:\n",
        "  0  success\n",
        "  1  the run failed, or every line was malformed\n",
        "  2  bad command line"
    ))]
    Pipe(PipeArgs),
    /// Run one conformance case; print its output and its counters.
    ///
    /// The output goes to standard output as JSON lines, each input stream's counters and
    /// dead letters to standard error.
    #[command(after_help = concat!(
        "Examples:\n",
        "  punctual run tests/conformance/ingress/unordered-with-delay\n",
        "  punctual run tests/conformance/operators/filter --workers 2\n\n",
        "Exit codes:\n",
        "  0  success\n",
        "  1  the case could not be run\n",
        "  2  bad command line"
    ))]
    Run {
        /// The case folder (with case.toml).
        #[arg(value_name = "CASE_DIR")]
        case: PathBuf,
        #[command(flatten)]
        placement: Placement,
    },
    /// Run every case at or below each path and compare it with what it expects.
    ///
    /// Prints PASS or FAIL with a diff for each case, then `N passed, N failed`. With
    /// --processes P each case runs as P processes of this program on free loopback ports
    /// (a 120 s deadline each).
    #[command(after_help = concat!(
        "Examples:\n",
        "  punctual check tests/conformance\n",
        "  punctual check --processes 2 --workers 2 tests/conformance\n\n",
        "Exit codes:\n",
        "  0  every case passed\n",
        "  1  a case failed or could not be run\n",
        "  2  bad command line"
    ))]
    Check {
        /// Case folders, or folders with cases below them.
        #[arg(value_name = "PATH", required = true)]
        paths: Vec<PathBuf>,
        #[command(flatten)]
        spread: Spread,
    },
    /// Say where a case's or a job's CTIs stood, and what held them back.
    ///
    /// Of a case folder: run it; for every input and operator print its CTI and the input
    /// holding it back (start here for "no output?"). Of a job file: print the job's plan (each
    /// input: how it is read, where its CTIs come from, what a late event becomes; each
    /// operator; each output), run it as `job` does, then say where each operator's CTI
    /// ended, which input held it back, and what was adjusted, dropped or malformed (on
    /// standard error). `query --explain` does the same for a query.
    #[command(after_help = concat!(
        "Examples:\n",
        "  punctual explain tests/conformance/import/without-import-the-join-never-releases\n",
        "  punctual explain samples/alerts/alerts.toml\n\n",
        "Exit codes:\n",
        "  0  success\n",
        "  1  the case or job failed, or could not be run\n",
        "  2  bad command line or job file"
    ))]
    Explain {
        /// A case folder or a job file.
        #[arg(value_name = "CASE_DIR|JOB.toml")]
        path: PathBuf,
    },
    /// Run one case and draw its inputs and output on one time axis as SVG.
    #[command(after_help = concat!(
        "Examples:\n",
        "  punctual timeline tests/conformance/operators/filter -o filter.svg\n\n",
        "Exit codes:\n",
        "  0  success\n",
        "  1  the case could not be run, or the picture not written\n",
        "  2  bad command line"
    ))]
    Timeline {
        /// The case folder.
        #[arg(value_name = "CASE_DIR")]
        case: PathBuf,
        /// Write the picture to this file (standard output without it).
        #[arg(short, long, value_name = "FILE.svg")]
        output: Option<PathBuf>,
    },
    /// Print a completion script for a shell.
    ///
    /// The script completes the commands, their flags and the values flags take:
    /// `source <(punctual completions bash)`, or save it where the shell loads completions
    /// from.
    #[command(after_help = concat!(
        "Examples:\n",
        "  source <(punctual completions bash)\n",
        "  punctual completions fish > ~/.config/fish/completions/punctual.fish\n\n",
        "Exit codes:\n",
        "  0  success\n",
        "  2  bad command line"
    ))]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// A duration: `5s`, `250ms`, `1h30m`, or a number of ticks.
pub(super) fn duration(text: &str) -> Result<punctual_core::TimeSpan, String> {
    text.parse()
}

/// A tolerance for out-of-order events: a duration that is not negative (how far the CTIs stay
/// behind the newest event; below zero every event but the first would be late).
pub(super) fn delay(text: &str) -> Result<punctual_core::TimeSpan, String> {
    let d = duration(text)?;
    if d.ticks() < 0 {
        return Err(
            "a delay cannot be negative (it is how far the CTIs stay behind the newest event; 0s for events in order)"
                .to_owned(),
        );
    }
    Ok(d)
}

/// A duration above zero, as the standard library's.
pub(super) fn positive_duration(text: &str) -> Result<std::time::Duration, String> {
    let d = duration(text)?;
    d.to_duration()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("a duration above zero, not {d}"))
}

/// A number of workers or processes: 1 to [`punctual_cluster::MAX_WORKERS`].
pub(super) fn count(text: &str) -> Result<usize, String> {
    let max = punctual_cluster::MAX_WORKERS;
    text.parse::<usize>()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| format!("a number from 1 to {max}"))
}

/// A number of events, 1 or more.
pub(super) fn events(text: &str) -> Result<usize, String> {
    text.parse::<usize>()
        .ok()
        .filter(|&n| n >= 1)
        .ok_or_else(|| "a number of events, 1 or more".to_owned())
}

/// The time formats a flag takes, for the help and the completions.
pub(super) fn time_format(
) -> impl clap::builder::TypedValueParser<Value = punctual_adapters::line::TimeFormat> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser as _};
    PossibleValuesParser::new([
        PossibleValue::new("rfc3339").help("RFC 3339 text: 2026-12-01T10:00:00Z"),
        PossibleValue::new("epoch-ms")
            .alias("ms")
            .help("milliseconds since 1970-01-01T00:00:00Z"),
        PossibleValue::new("epoch-s")
            .alias("s")
            .help("seconds since 1970-01-01T00:00:00Z"),
        PossibleValue::new("ticks").help("ticks of 100 ns since 1970-01-01T00:00:00Z"),
        // (The format an undeclared input reads; taken as before, not offered.)
        PossibleValue::new("auto").hide(true),
    ])
    .try_map(|text| text.parse())
}

/// Parses `args` (without the program name).
pub(super) fn parse(args: &[String]) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once("punctual".to_owned()).chain(args.iter().cloned()))
}

/// A bad command line found after parsing (two flags that do not go together in a way clap
/// cannot say): an error in clap's form for `command`, with its usage and the hint.
pub(super) fn error(command: &str, what: &str) -> clap::Error {
    use clap::CommandFactory as _;
    let mut cli = Cli::command();
    cli.build();
    match cli.find_subcommand_mut(command) {
        Some(sub) => sub.error(clap::error::ErrorKind::ArgumentConflict, what),
        None => cli.error(clap::error::ErrorKind::InvalidValue, what),
    }
}

/// `punctual completions SHELL`: the script for `shell`.
pub(super) fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    use clap::CommandFactory as _;
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "punctual", &mut script);
    script
}
