//! `punctual pipe`: one input put in time order as its CTIs allow.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::dead_letters::DeadLetters;
use super::{counters_line, EXIT_FAILED};

/// The arguments of `punctual pipe`.
#[derive(Clone, Debug, clap::Args)]
pub(super) struct PipeArgs {
    /// Read from FILE (standard input without it, or with `-`).
    #[arg(short, long, value_name = "FILE")]
    input: Option<PathBuf>,
    /// Write JSON lines to FILE (standard output without it, or with `-`).
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Read CSV with the start time in this column.
    #[arg(
        long = "csv",
        value_name = "TIME_COLUMN",
        conflicts_with = "time_field"
    )]
    csv_time: Option<String>,
    /// Read flat JSON objects timed by this field.
    #[arg(long, value_name = "FIELD")]
    time_field: Option<String>,
    /// How times are written, and how time fields are read (rfc3339 by default; a number is
    /// refused unless a format says its unit: it is never guessed).
    #[arg(long, value_name = "FORMAT", value_parser = super::args::time_format())]
    time_format: Option<punctual_adapters::line::TimeFormat>,
    /// CTIs this far behind the newest event (`5s`); an event later than that is late.
    #[arg(
        long = "out-of-order",
        visible_alias = "delay",
        value_name = "DURATION",
        value_parser = super::args::delay,
        allow_hyphen_values = true,
        conflicts_with = "in_order"
    )]
    delay: Option<punctual_core::TimeSpan>,
    /// Match each end edge to its start edge by these fields' values (`id`, or `a+b`): a
    /// lookup instead of a scan of the edges open at its start (for many edges at one start).
    #[arg(long, value_name = "FIELD[+FIELD]", value_delimiter = '+')]
    edge_key: Vec<String>,
    /// A CTI after every event: the input is in time order.
    #[arg(long)]
    in_order: bool,
    /// What a late event becomes: dropped (the default here), or moved up to the CTI (with
    /// --out-of-order or --in-order).
    #[arg(long, value_name = "POLICY", value_enum)]
    policy: Option<super::job::Policy>,
    /// Write every dead letter (dropped, rejected, malformed, unreleased, with the reason) as
    /// a JSON line to FILE.
    #[arg(long, value_name = "FILE")]
    dead_letters: Option<PathBuf>,
    /// Draw the input (what it released, what was dropped) on a time axis as SVG.
    #[arg(long, value_name = "FILE.svg", conflicts_with = "checkpoint")]
    timeline: Option<PathBuf>,
    #[command(flatten)]
    checkpointing: super::checkpoint::Checkpointing,
}

impl PipeArgs {
    /// What clap cannot say: a policy without CTIs of the command's own, a checkpoint
    /// without files.
    pub(super) fn check(&self) -> Result<(), String> {
        if self.policy.is_some() && self.delay.is_none() && !self.in_order {
            return Err("--policy goes with --out-of-order (--delay) or --in-order: without them the input's own CTIs decide, and nothing is late by a policy".into());
        }
        let file = |f: &Option<PathBuf>| f.as_ref().is_some_and(|f| f.as_os_str() != "-");
        if self.checkpointing.checkpoint.is_some() && !(file(&self.input) && file(&self.output)) {
            return Err("--checkpoint needs -i FILE and -o FILE (a file can be read again and cut back; a pipe cannot)".into());
        }
        Ok(())
    }
}

/// The number of lines of `input`, for the progress bar: only when one is shown (standard error
/// is a terminal) and the input is a regular file, counted in a streaming pass (a pipe, a FIFO
/// or a device is never read ahead of the query: its data would be used up).
fn progress_total(input: &Path) -> Option<u64> {
    use std::io::{IsTerminal, Read};
    if input.as_os_str() == "-" || !std::io::stderr().is_terminal() {
        return None;
    }
    if !std::fs::metadata(input).ok()?.is_file() {
        return None;
    }
    let mut file = std::fs::File::open(input).ok()?;
    let (mut buf, mut lines) = (vec![0u8; 1 << 16], 0u64);
    loop {
        let n = file.read(&mut buf).ok()?;
        if n == 0 {
            return Some(lines);
        }
        lines += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
    }
}

/// Refuses a pipe whose output, dead letters or timeline collide with each other or the input.
fn check_files(p: &PipeArgs, input: &Path, output: &Path) -> Result<(), String> {
    let mut writes = vec![("the output".to_owned(), output)];
    writes.extend(
        p.dead_letters
            .as_deref()
            .map(|d| ("the dead letters".to_owned(), d)),
    );
    writes.extend(
        p.timeline
            .as_deref()
            .map(|t| ("the timeline".to_owned(), t)),
    );
    super::paths::check_collisions(&[("the input".to_owned(), input)], &writes)
}

/// What can be checked of the input before the run: its CSV header has the time column, and
/// its first record's time says what it counts.
fn check_input(p: &PipeArgs, input: &Path) -> Result<(), String> {
    if let (Some(col), Some(header)) = (&p.csv_time, super::job::csv_header(input)) {
        if !header.contains(col) {
            return Err(format!(
                "--csv {col}: {} has no column `{col}` (its columns: {})",
                input.display(),
                header.join(", ")
            ));
        }
    }
    let time_in = match (&p.csv_time, &p.time_field) {
        (Some(column), _) => super::first_time::TimeIn::Column(column),
        (None, Some(field)) => super::first_time::TimeIn::Field(field),
        (None, None) => return Ok(()),
    };
    let declared = p
        .time_format
        .unwrap_or(punctual_adapters::line::TimeFormat::Auto);
    super::first_time::check(input, &time_in, declared)
}

/// The pipe's input: edges (any kind of event), matched by `--edge-key`, with CTIs as
/// `--out-of-order` or `--in-order` say (else the input's own) and `--policy`.
fn input_options(p: &PipeArgs) -> Result<punctual_runtime::InputOptions, String> {
    use punctual_core::EventShape;
    use punctual_policies::AdvanceTimeSettings;
    use punctual_runtime::InputOptions;
    let mut options = InputOptions::new("in", EventShape::Edge);
    if !p.edge_key.is_empty() {
        options = options.edge_key(super::job::fields_key(p.edge_key.clone()));
    }
    let settings = match (p.delay, p.in_order) {
        (Some(d), _) => Some(AdvanceTimeSettings::unordered_start_time(d)),
        (None, true) => Some(AdvanceTimeSettings::increasing_start_time()),
        (None, false) => None,
    };
    if let Some(settings) = settings {
        let settings = match (p.policy, settings.generation()) {
            (Some(policy), Some(g)) => AdvanceTimeSettings::builder()
                .generation(*g)
                .policy(policy.engine())
                .build()
                .map_err(|e| e.to_string())?,
            _ => settings,
        };
        options = options.settings(settings);
    }
    Ok(options)
}

pub(super) fn cmd_pipe(p: &PipeArgs, err: &mut dyn Write) -> u8 {
    use punctual_adapters::line::TimeFormat;
    let time_out = p.time_format.unwrap_or(TimeFormat::Rfc3339);
    let input = p.input.clone().unwrap_or_else(|| PathBuf::from("-"));
    let output = p.output.clone().unwrap_or_else(|| PathBuf::from("-"));
    if let Err(message) = check_files(p, &input, &output) {
        let _ = writeln!(err, "error: {message}");
        return super::EXIT_USAGE;
    }
    let letters = match DeadLetters::new(
        p.dead_letters.as_deref(),
        time_out,
        p.checkpointing.checkpoint.is_some(),
    ) {
        Ok(letters) => std::sync::Arc::new(std::sync::Mutex::new(letters)),
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return EXIT_FAILED;
        }
    };
    let total = progress_total(&input);
    if let Err(message) = check_input(p, &input) {
        let _ = writeln!(err, "error: {message}");
        return super::EXIT_USAGE;
    }
    let options = match input_options(p) {
        Ok(options) => options,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return super::EXIT_USAGE;
        }
    };
    let mut timeline = p
        .timeline
        .as_ref()
        .map(|_| super::capture::Timeline::default());
    let run = async {
        let query = build_query(p, options, (&input, &output), timeline.as_mut(), &letters)?;
        wait_with_progress(query.start()?, total).await
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return EXIT_FAILED;
        }
    };
    // Prints the counters and dead letters; says whether every line was malformed.
    let print_counters = |err: &mut dyn Write, report: &punctual_runtime::QueryReport| -> bool {
        for (name, c) in &report.streams {
            let _ = writeln!(err, "{}", counters_line(name, c, time_out));
        }
        let Ok(mut letters) = letters.lock() else {
            return false;
        };
        letters.summary(err);
        match report.streams.first() {
            Some((_, c)) if c.events_in == 0 && c.malformed > 0 => {
                let first = letters.first_malformed.clone().unwrap_or_default();
                let _ = writeln!(
                    err,
                    "error: every line ({}) was malformed; the first: {first}",
                    c.malformed
                );
                true
            }
            _ => false,
        }
    };
    let ran = runtime.block_on(run);
    // A read of standard input that never returns (stopped by Ctrl-C while waiting for a line)
    // is not waited for.
    runtime.shutdown_background();
    if let (Some(t), Some(path)) = (&timeline, &p.timeline) {
        if let Err(e) = t.write(&format!("punctual pipe {}", input.display()), path) {
            let _ = writeln!(err, "warning: the timeline was not written: {e}");
        }
    }
    match ran {
        Ok(ended) => super::exit_code(ended, err, print_counters),
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            EXIT_FAILED
        }
    }
}

/// The pipe's query: its input (CSV or JSON lines) straight to a JSON-lines output, with its
/// dead letters counted and, with `timeline`, captured for the picture.
fn build_query(
    p: &PipeArgs,
    options: punctual_runtime::InputOptions,
    (input, output): (&Path, &Path),
    timeline: Option<&mut super::capture::Timeline>,
    letters: &std::sync::Arc<std::sync::Mutex<DeadLetters>>,
) -> Result<punctual_runtime::Query, punctual_runtime::QueryError> {
    use punctual_adapters::line::TimeFormat;
    use punctual_adapters::{
        CsvInput, CsvInputConfig, JsonLinesInput, JsonLinesInputConfig, JsonLinesOutput,
        JsonLinesOutputConfig,
    };
    use punctual_rows::Row;
    use punctual_runtime::Query;
    let time_in = p.time_format.unwrap_or(TimeFormat::Auto);
    let time_out = p.time_format.unwrap_or(TimeFormat::Rfc3339);
    let mut query = Query::new("pipe");
    // What the run is, but for where and how often it takes snapshots.
    let identity = PipeArgs {
        checkpointing: super::checkpoint::Checkpointing::default(),
        ..p.clone()
    };
    if let Some(c) = p.checkpointing.checkpoints(format!("{identity:?}")) {
        query = query.checkpoints(c);
    }
    let stream = match &p.csv_time {
        Some(col) => query.create_stream::<_, Row, _, _>(
            options,
            &CsvInput,
            &CsvInputConfig::new(input, col.clone()).time_format(time_in),
        )?,
        None => {
            let mut config =
                JsonLinesInputConfig::new(input).malformed(punctual_adapters::MalformedLines::Skip);
            if let Some(field) = &p.time_field {
                config = config.flat(field.clone(), time_in);
            }
            query.create_stream::<_, Row, _, _>(options, &JsonLinesInput, &config)?
        }
    };
    query.bind_output(
        &stream,
        &JsonLinesOutput,
        &JsonLinesOutputConfig::new(output).time_format(time_out),
    )?;
    let capture = match timeline {
        Some(t) => {
            t.output(&mut query, "out", &stream)?;
            Some(t.input(&mut query, "in", &stream)?)
        }
        None => None,
    };
    let sink = std::sync::Arc::clone(letters);
    query.bind_dead_letters(&stream, move |letter| {
        if let Some(c) = &capture {
            c.letter(&letter);
        }
        if let Ok(mut letters) = sink.lock() {
            letters.add(&letter);
        }
    })?;
    Ok(query)
}

/// Waits for the pipe's query with a progress bar on standard error (of `total` lines, when
/// the input's length is known); Ctrl-C stops it with a drain, a second one aborts it.
async fn wait_with_progress(
    running: punctual_runtime::RunningQuery,
    total: Option<u64>,
) -> Result<
    Result<punctual_runtime::QueryReport, punctual_runtime::QueryFailure>,
    punctual_runtime::QueryError,
> {
    let stop = running.stop_handle();
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    let mut interrupts = 0;
    let bar = match total {
        Some(n) => indicatif::ProgressBar::new(n),
        None => indicatif::ProgressBar::new_spinner(),
    };
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    let monitor = running.monitor();
    let done = running.wait();
    tokio::pin!(done);
    loop {
        tokio::select! {
            r = &mut done => {
                bar.finish_and_clear();
                return Ok::<_, punctual_runtime::QueryError>(r);
            }
            _ = &mut interrupted, if interrupts < 2 => {
                // Ctrl-C: stop with a drain (what is held comes out); again: abort.
                interrupts += 1;
                interrupted.set(tokio::signal::ctrl_c());
                if interrupts == 1 { stop.stop() } else { stop.abort() }
            }
            _ = tokio::time::sleep(std::time::Duration::from_millis(100)) => {
                // The input's lines read (every partition's, for a wildcard path).
                let read = monitor.streams().iter().map(|(_, c)| c.events_in + c.malformed).sum();
                bar.set_position(read);
            }
        }
    }
}
