//! The `punctual` command line, as a library function so that it can be tested: the binary
//! only calls [`main`] with the process's arguments and streams.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::conformance::{find_cases, run_case};

/// `punctual --help`.
pub const HELP: &str = "\
punctual: run Punctual conformance cases from the command line

USAGE:
    punctual run CASE_DIR        run one case; print its output as JSON lines (stdout)
                                 and each input stream's counters and dead letters (stderr)
    punctual check PATH...       run every case at or below each PATH, print a diff for
                                 each failing case and a closing line `N passed, N failed`
    punctual explain CASE_DIR    run one case; for every input and operator, print its CTI
                                 and the input holding it back (start here for 'no output?')
    punctual pipe [-i FILE] [-o FILE] [--csv TIME_COLUMN] [--delay TICKS | --in-order]
                  [--dead-letters FILE] [--checkpoint DIR [--checkpoint-every 1s]]
                                 read events (JSON lines, or CSV with the start time in
                                 TIME_COLUMN) from FILE or standard input, put them in time
                                 order as the CTIs allow, write JSON lines to FILE or standard
                                 output; counters and a summary of the dead letters (dropped,
                                 rejected, malformed, unreleased items with the reason) on
                                 stderr, every dead letter as a JSON line to the
                                 --dead-letters FILE; a progress bar on a terminal. Ctrl-C
                                 stops with a drain; a closed output (`| head`) ends quietly.
                                 --checkpoint DIR (with -i FILE and -o FILE): record
                                 checkpoints in DIR; killed and run again with the same
                                 arguments, it continues the output exactly where its last
                                 checkpoint was (no duplicate, no gap); at most one
                                 checkpoint per --checkpoint-every (`500ms`, `2s`; 1s)
    punctual timeline CASE_DIR [-o FILE.svg]
                                 run one case and draw its inputs and output on one time
                                 axis as SVG (to FILE, or standard output)
    punctual --help              this text

EXAMPLES:
    punctual run tests/conformance/ingress/unordered-with-delay
    punctual check tests/conformance
    punctual pipe -i samples/data/readings.jsonl --delay 50000000 | head
    cat readings.csv | punctual pipe --csv time --in-order > ordered.jsonl

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

/// Runs the command line `args` (without the program name), writing to `out` and `err`;
/// returns the exit code. Write errors on `out`/`err` are ignored (a closed pipe is no reason to
/// fail the run).
pub fn main(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    match args.first().map(String::as_str) {
        Some("run") if args.len() == 2 => cmd_run(Path::new(&args[1]), out, err),
        Some("explain") if args.len() == 2 => cmd_explain(Path::new(&args[1]), out, err),
        Some("pipe") => match PipeArgs::parse(&args[1..]) {
            Ok(pipe) => cmd_pipe(&pipe, err),
            Err(e) => {
                let _ = write!(err, "error: {e}\n\n{HELP}");
                EXIT_USAGE
            }
        },
        Some("timeline") if args.len() == 2 => cmd_timeline(Path::new(&args[1]), None, out, err),
        Some("timeline") if args.len() == 4 && args[2] == "-o" => {
            cmd_timeline(Path::new(&args[1]), Some(Path::new(&args[3])), out, err)
        }
        Some("check") if args.len() >= 2 => cmd_check(
            &args[1..].iter().map(PathBuf::from).collect::<Vec<_>>(),
            out,
            err,
        ),
        Some("--help" | "-h" | "help") => {
            let _ = write!(out, "{HELP}");
            EXIT_OK
        }
        _ => {
            let _ = write!(err, "error: bad command line: {args:?}\n\n{HELP}");
            EXIT_USAGE
        }
    }
}

fn cmd_run(dir: &Path, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    let run = match run_case(dir) {
        Ok(run) => run,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return EXIT_FAILED;
        }
    };
    for line in run.output_lines() {
        let _ = writeln!(out, "{line}");
    }
    for (name, c) in &run.counters {
        let _ = writeln!(err, "{}", counters_line(name, c));
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
/// declared order.
fn counters_line(name: &str, c: &punctual_policies::IngressCounters) -> String {
    let mut line = format!("stream {name}:");
    if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(c) {
        for (key, value) in fields {
            if let Some(n) = value.as_u64() {
                line.push_str(&format!(" {key}={n}"));
            }
        }
    }
    line
}

/// The arguments of `punctual pipe`.
#[derive(Debug, Default, PartialEq)]
struct PipeArgs {
    input: Option<PathBuf>,
    output: Option<PathBuf>,
    csv_time: Option<String>,
    delay: Option<i64>,
    in_order: bool,
    dead_letters: Option<PathBuf>,
    checkpoint: Option<PathBuf>,
    checkpoint_every: Option<std::time::Duration>,
}

impl PipeArgs {
    fn parse(args: &[String]) -> Result<PipeArgs, String> {
        let mut p = PipeArgs::default();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = |name: &str| {
                it.next()
                    .cloned()
                    .ok_or_else(|| format!("{name} needs a value"))
            };
            match a.as_str() {
                "-i" => p.input = Some(PathBuf::from(value("-i")?)),
                "-o" => p.output = Some(PathBuf::from(value("-o")?)),
                "--csv" => p.csv_time = Some(value("--csv")?),
                "--delay" => {
                    let v = value("--delay")?;
                    p.delay = Some(
                        v.parse()
                            .map_err(|_| format!("--delay takes ticks, not `{v}`"))?,
                    );
                }
                "--in-order" => p.in_order = true,
                "--dead-letters" => p.dead_letters = Some(PathBuf::from(value("--dead-letters")?)),
                "--checkpoint" => p.checkpoint = Some(PathBuf::from(value("--checkpoint")?)),
                "--checkpoint-every" => {
                    let v = value("--checkpoint-every")?;
                    p.checkpoint_every = Some(parse_duration(&v).ok_or_else(|| {
                        format!(
                            "--checkpoint-every takes a duration like `500ms` or `2s`, not `{v}`"
                        )
                    })?);
                }
                other => return Err(format!("`pipe` does not take `{other}`")),
            }
        }
        if p.delay.is_some() && p.in_order {
            return Err("give --delay or --in-order, not both".into());
        }
        let file = |f: &Option<PathBuf>| f.as_ref().is_some_and(|f| f.as_os_str() != "-");
        if p.checkpoint.is_some() && !(file(&p.input) && file(&p.output)) {
            return Err("--checkpoint needs -i FILE and -o FILE (a file can be read again and cut back; a pipe cannot)".into());
        }
        Ok(p)
    }
}

/// `500ms`, `2s`, `1m`: a whole number and a unit.
fn parse_duration(text: &str) -> Option<std::time::Duration> {
    let digits = text.find(|c: char| !c.is_ascii_digit())?;
    let n: u64 = text[..digits].parse().ok()?;
    match &text[digits..] {
        "ms" => Some(std::time::Duration::from_millis(n)),
        "s" => Some(std::time::Duration::from_secs(n)),
        "m" => Some(std::time::Duration::from_secs(n.checked_mul(60)?)),
        _ => None,
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

fn cmd_pipe(p: &PipeArgs, err: &mut dyn Write) -> u8 {
    use punctual_adapters::{
        CsvInput, CsvInputConfig, InputOptions, JsonLinesInput, JsonLinesInputConfig,
        JsonLinesOutput, JsonLinesOutputConfig, Query,
    };
    use punctual_core::{EventShape, Row, TimeSpan};
    use punctual_policies::AdvanceTimeSettings;

    let letters = match DeadLetters::new(p.dead_letters.as_deref()) {
        Ok(letters) => std::sync::Arc::new(std::sync::Mutex::new(letters)),
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return EXIT_FAILED;
        }
    };
    let input = p.input.clone().unwrap_or_else(|| PathBuf::from("-"));
    let output = p.output.clone().unwrap_or_else(|| PathBuf::from("-"));
    let total = progress_total(&input);
    let mut options = InputOptions::new("in", EventShape::Edge);
    if let Some(d) = p.delay {
        options = options.settings(AdvanceTimeSettings::unordered_start_time(
            TimeSpan::from_ticks(d),
        ));
    } else if p.in_order {
        options = options.settings(AdvanceTimeSettings::increasing_start_time());
    }
    let run = async {
        let mut query = Query::new("pipe");
        if let Some(dir) = &p.checkpoint {
            let mut checkpoints = punctual_adapters::Checkpoints::new(dir);
            if let Some(every) = p.checkpoint_every {
                checkpoints = checkpoints.every(every);
            }
            query = query.checkpoints(checkpoints);
        }
        let stream = match &p.csv_time {
            Some(col) => query.create_stream::<_, Row, _, _>(
                options,
                &CsvInput,
                &CsvInputConfig::new(&input, col.clone()),
            )?,
            None => query.create_stream::<_, Row, _, _>(
                options,
                &JsonLinesInput,
                &JsonLinesInputConfig::new(&input)
                    .malformed(punctual_adapters::MalformedLines::Skip),
            )?,
        };
        query.bind_output(
            &stream,
            &JsonLinesOutput,
            &JsonLinesOutputConfig::new(&output),
        )?;
        let sink = std::sync::Arc::clone(&letters);
        query.bind_dead_letters(&stream, move |letter| {
            if let Ok(mut letters) = sink.lock() {
                letters.add(&letter);
            }
        })?;
        let running = query.start()?;
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
                    return Ok::<_, punctual_adapters::QueryError>(r);
                }
                _ = &mut interrupted, if interrupts < 2 => {
                    // Ctrl-C: stop with a drain (what is held comes out); again: abort.
                    interrupts += 1;
                    interrupted.set(tokio::signal::ctrl_c());
                    if interrupts == 1 { stop.stop() } else { stop.abort() }
                }
                _ = tokio::time::sleep(std::time::Duration::from_millis(100)) => {
                    if let Some(c) = monitor.counters("in") {
                        bar.set_position(c.events_in + c.malformed);
                    }
                }
            }
        }
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
    let print_counters = |err: &mut dyn Write, report: &punctual_adapters::QueryReport| {
        for (name, c) in &report.streams {
            let _ = writeln!(err, "{}", counters_line(name, c));
        }
        if let Ok(mut letters) = letters.lock() {
            letters.summary(err);
        }
    };
    let ran = runtime.block_on(run);
    // A read of standard input that never returns (stopped by Ctrl-C while waiting for a line)
    // is not waited for.
    runtime.shutdown_background();
    match ran {
        Ok(Ok(report)) => {
            print_counters(err, &report);
            EXIT_OK
        }
        Ok(Err(failure)) if closed_output(&failure.error) => {
            // The reader of the output went away (`| head`): a normal end, as for any filter.
            print_counters(err, &failure.report);
            EXIT_OK
        }
        Ok(Err(failure)) => {
            // What the run did until it failed, then why.
            print_counters(err, &failure.report);
            let _ = writeln!(err, "error: {}", failure.error);
            EXIT_FAILED
        }
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
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

/// The dead letters of `pipe`: counted by reason, the first few kept for the summary, every one
/// written as a JSON line to a file if one was asked for.
struct DeadLetters {
    file: Option<(PathBuf, std::io::BufWriter<std::fs::File>)>,
    by_reason: std::collections::BTreeMap<&'static str, u64>,
    first: Vec<String>,
    write_error: Option<String>,
}

impl DeadLetters {
    /// How many dead letters the summary shows.
    const SHOWN: usize = 5;

    fn new(path: Option<&Path>) -> Result<Self, String> {
        let file = match path {
            None => None,
            Some(p) => {
                let f = std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()))?;
                Some((p.to_owned(), std::io::BufWriter::new(f)))
            }
        };
        Ok(DeadLetters {
            file,
            by_reason: std::collections::BTreeMap::new(),
            first: Vec::new(),
            write_error: None,
        })
    }

    fn add(&mut self, letter: &punctual_policies::DeadLetter<punctual_core::Row>) {
        use punctual_policies::DeadLetterReason as R;
        let kind = match &letter.reason {
            R::Late => "late",
            R::Rejected(_) => "rejected",
            R::Unreleased => "unreleased",
            R::Malformed(_) => "malformed",
            R::Watermark(_) => "dropped by the watermark",
            _ => "other",
        };
        *self.by_reason.entry(kind).or_default() += 1;
        let item = letter
            .item
            .as_ref()
            .map(|i| punctual_adapters::line::item_to_json(i.as_ref()));
        if self.first.len() < Self::SHOWN {
            let shown = item.as_ref().map(|i| format!(" {i}")).unwrap_or_default();
            self.first.push(format!("{}{shown}", letter.reason));
        }
        if let Some((path, out)) = self.file.as_mut() {
            let mut line = serde_json::json!({
                "reason": letter.reason.to_string(),
                "cti": letter.cti,
                "item": item,
            });
            if let R::Malformed(m) = &letter.reason {
                line["text"] = serde_json::Value::String(m.text.clone());
            }
            if let Err(e) = writeln!(out, "{line}") {
                self.write_error
                    .get_or_insert_with(|| format!("{}: {e}", path.display()));
            }
        }
    }

    /// `dead letters: N (late 3, malformed 1)` and the first few, on `err`; the file flushed.
    fn summary(&mut self, err: &mut dyn Write) {
        if let Some((path, out)) = self.file.as_mut() {
            if let Err(e) = out.flush() {
                self.write_error
                    .get_or_insert_with(|| format!("{}: {e}", path.display()));
            }
        }
        let total: u64 = self.by_reason.values().sum();
        if total > 0 {
            let kinds: Vec<String> = self
                .by_reason
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            let _ = writeln!(err, "dead letters: {total} ({})", kinds.join(", "));
            for shown in &self.first {
                let _ = writeln!(err, "  {shown}");
            }
            if total > self.first.len() as u64 {
                let more = total - self.first.len() as u64;
                match &self.file {
                    Some((path, _)) => {
                        let _ = writeln!(err, "  ... {more} more, all in {}", path.display());
                    }
                    None => {
                        let _ =
                            writeln!(err, "  ... {more} more (--dead-letters FILE has them all)");
                    }
                }
            }
        }
        if let Some(e) = &self.write_error {
            let _ = writeln!(err, "warning: dead letters not all written: {e}");
        }
    }
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

fn cmd_explain(dir: &Path, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
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

fn cmd_check(roots: &[PathBuf], out: &mut dyn Write, err: &mut dyn Write) -> u8 {
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
            let problems: Vec<String> = match run_case(&dir) {
                Err(e) => vec![e.to_string()],
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
