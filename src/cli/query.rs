//! `punctual query`: a query in the query language over files, from the command line.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use punctual_adapters::line::TimeFormat;
use punctual_core::TimeSpan;
use punctual_sql::{InputUse, SqlQuery};

use super::letters::DeadLetters;
use super::{closed_output, counters_line, EXIT_FAILED, EXIT_OK, EXIT_USAGE};

/// One `--input NAME=PATH[,end=FIELD][,time=FIELD]`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct InputArg {
    name: String,
    path: PathBuf,
    end: Option<String>,
    time: Option<String>,
}

/// The arguments of `punctual query`.
#[derive(Debug, Default, PartialEq)]
pub(super) struct QueryArgs {
    sql: Option<String>,
    inputs: Vec<InputArg>,
    /// `(output name or None for the only one, path)`.
    outputs: Vec<(Option<String>, PathBuf)>,
    time_format: Option<TimeFormat>,
    delay: Option<TimeSpan>,
    dead_letters: Option<PathBuf>,
}

impl QueryArgs {
    pub(super) fn parse(args: &[String]) -> Result<QueryArgs, String> {
        let mut q = QueryArgs::default();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = |name: &str| {
                it.next()
                    .cloned()
                    .ok_or_else(|| format!("{name} needs a value"))
            };
            match a.as_str() {
                "--file" | "-f" => {
                    let path = value("--file")?;
                    let text = std::fs::read_to_string(&path)
                        .map_err(|e| format!("--file {path}: {e}"))?;
                    if q.sql.replace(text).is_some() {
                        return Err("give the query once (text or --file)".into());
                    }
                }
                "--input" | "-i" => q.inputs.push(input_arg(&value("--input")?)?),
                "--output" | "-o" => {
                    let v = value("--output")?;
                    q.outputs.push(match v.split_once('=') {
                        Some((name, path)) if !name.is_empty() && !name.contains('/') => {
                            (Some(name.to_owned()), PathBuf::from(path))
                        }
                        _ => (None, PathBuf::from(v)),
                    });
                }
                "--time-format" => q.time_format = Some(value("--time-format")?.parse()?),
                "--delay" => q.delay = Some(super::duration("--delay", &value("--delay")?)?),
                "--dead-letters" => q.dead_letters = Some(PathBuf::from(value("--dead-letters")?)),
                flag if flag.starts_with('-') && flag.len() > 1 => {
                    return Err(format!("`query` does not take `{flag}`"))
                }
                text => {
                    if q.sql.replace(text.to_owned()).is_some() {
                        return Err("give the query once (text or --file)".into());
                    }
                }
            }
        }
        if q.sql.is_none() {
            return Err("give the query: punctual query 'SELECT ...' --input NAME=FILE".into());
        }
        Ok(q)
    }
}

fn input_arg(text: &str) -> Result<InputArg, String> {
    let mut parts = text.split(',');
    let first = parts.next().unwrap_or_default();
    let Some((name, path)) = first.split_once('=') else {
        return Err(format!("--input takes NAME=FILE, not `{text}`"));
    };
    let mut arg = InputArg {
        name: name.to_owned(),
        path: PathBuf::from(path),
        end: None,
        time: None,
    };
    for option in parts {
        match option.split_once('=') {
            Some(("end", field)) => arg.end = Some(field.to_owned()),
            Some(("time", field)) => arg.time = Some(field.to_owned()),
            _ => {
                return Err(format!(
                    "--input {name}: `{option}` is not an option (end=FIELD, time=FIELD)"
                ))
            }
        }
    }
    Ok(arg)
}

fn is_csv(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
}

/// The columns of a CSV file's header (a regular file only: a pipe is not read ahead).
fn csv_header(path: &Path) -> Option<Vec<String>> {
    use std::io::BufRead;
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let mut line = String::new();
    std::io::BufReader::new(std::fs::File::open(path).ok()?)
        .read_line(&mut line)
        .ok()?;
    let line = line.trim_end_matches(['\n', '\r']);
    let line = line.strip_prefix('\u{feff}').unwrap_or(line);
    punctual_adapters::csv::split_record(line, ',')
}

/// The first malformed line of each input: where and why.
type FirstBad = Arc<Mutex<std::collections::BTreeMap<String, String>>>;

pub(super) fn cmd_query(q: &QueryArgs, err: &mut dyn Write) -> u8 {
    let text = q.sql.clone().unwrap_or_default();
    let sql = match SqlQuery::parse(&text) {
        Ok(sql) => sql,
        Err(e) => {
            let _ = writeln!(err, "error: {}", e.show(&text));
            return EXIT_USAGE;
        }
    };
    let uses = sql.inputs();
    for u in &uses {
        if !q.inputs.iter().any(|i| i.name == u.name) {
            let _ = writeln!(
                err,
                "error: the query reads `{0}`: give --input {0}=FILE",
                u.name
            );
            return EXIT_USAGE;
        }
    }
    for i in &q.inputs {
        if !uses.iter().any(|u| u.name == i.name) {
            let names: Vec<&str> = uses.iter().map(|u| u.name.as_str()).collect();
            let _ = writeln!(
                err,
                "error: --input {}: the query does not read it (it reads {})",
                i.name,
                names.join(", ")
            );
            return EXIT_USAGE;
        }
    }
    let names = sql.outputs();
    let outputs: Vec<(String, PathBuf)> = match q.outputs.as_slice() {
        [] if names.len() == 1 => vec![(names[0].clone(), PathBuf::from("-"))],
        [(None, path)] if names.len() == 1 => vec![(names[0].clone(), path.clone())],
        given => {
            let mut out = Vec::new();
            for n in &names {
                match given.iter().find(|(g, _)| g.as_deref() == Some(n.as_str())) {
                    Some((_, path)) => out.push((n.clone(), path.clone())),
                    None => {
                        let _ = writeln!(
                            err,
                            "error: the query writes INTO {}: give --output NAME=FILE for each",
                            names.join(", ")
                        );
                        return EXIT_USAGE;
                    }
                }
            }
            if let Some((g, _)) = given
                .iter()
                .find(|(g, _)| g.as_ref().is_none_or(|g| !names.contains(g)))
            {
                let _ = writeln!(
                    err,
                    "error: --output {}: the query writes INTO {}",
                    g.as_deref().unwrap_or("FILE"),
                    names.join(", ")
                );
                return EXIT_USAGE;
            }
            out
        }
    };
    let letters = match DeadLetters::new(q.dead_letters.as_deref()) {
        Ok(l) => Arc::new(Mutex::new(l)),
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return EXIT_FAILED;
        }
    };
    let first_bad: FirstBad = Arc::default();
    let time_in = q.time_format.unwrap_or(TimeFormat::Auto);
    let time_out = q.time_format.unwrap_or(TimeFormat::Rfc3339);
    let run = async {
        let mut query = punctual_adapters::Query::new("query");
        let mut streams = Vec::new();
        for u in &uses {
            let arg = q.inputs.iter().find(|i| i.name == u.name).cloned();
            let Some(arg) = arg else { continue };
            let (stream, fields) = create_input(&mut query, u, &arg, q.delay, time_in)?;
            let sink_letters = Arc::clone(&letters);
            let sink_bad = Arc::clone(&first_bad);
            let name = u.name.clone();
            query.bind_dead_letters(
                &stream,
                move |letter: punctual_policies::DeadLetter<punctual_core::Row>| {
                    if let punctual_policies::DeadLetterReason::Malformed(m) = &letter.reason {
                        if let Ok(mut bad) = sink_bad.lock() {
                            bad.entry(name.clone())
                                .or_insert_with(|| format!("{}: {}", m.location, m.message));
                        }
                    }
                    if let Ok(mut l) = sink_letters.lock() {
                        l.add(&letter);
                    }
                },
            )?;
            streams.push((u.name.clone(), stream, fields));
        }
        let inputs: Vec<punctual_sql::SqlInput<'_>> = streams
            .iter()
            .map(|(n, s, f)| {
                let i = punctual_sql::SqlInput::new(n, s);
                match f {
                    Some(f) => i.fields(f),
                    None => i,
                }
            })
            .collect();
        let built = sql
            .build(&inputs)
            .map_err(|e| RunError::Usage(e.show(&text)))?;
        for (name, stream) in &built {
            if let Some((_, path)) = outputs.iter().find(|(n, _)| n == name) {
                query.bind_output(
                    stream,
                    &punctual_adapters::JsonLinesOutput,
                    &punctual_adapters::JsonLinesOutputConfig::new(path).time_format(time_out),
                )?;
            }
        }
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
                    interrupts += 1;
                    interrupted.set(tokio::signal::ctrl_c());
                    if interrupts == 1 { stop.stop() } else { stop.abort() }
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
    let ran = runtime.block_on(run);
    runtime.shutdown_background();
    let report = |err: &mut dyn Write, report: &punctual_adapters::QueryReport| -> bool {
        for (name, c) in &report.streams {
            let _ = writeln!(err, "{}", counters_line(name, c, time_out));
        }
        if let Ok(mut l) = letters.lock() {
            l.summary(err);
        }
        for h in &report.held_items {
            let _ = writeln!(err, "not emitted at the end: {h}");
        }
        // Nothing read at all, but lines that were all wrong: say so, and fail.
        let mut all_bad = false;
        for (name, c) in &report.streams {
            if c.events_in == 0 && c.malformed > 0 {
                all_bad = true;
                let first = first_bad
                    .lock()
                    .ok()
                    .and_then(|b| b.get(name).cloned())
                    .unwrap_or_default();
                let _ = writeln!(
                    err,
                    "error: input `{name}`: every line ({}) was malformed; the first: {first}",
                    c.malformed
                );
            }
        }
        all_bad
    };
    match ran {
        Ok(Ok(r)) => {
            if report(err, &r) {
                EXIT_FAILED
            } else {
                EXIT_OK
            }
        }
        Ok(Err(failure)) if closed_output(&failure.error) => {
            report(err, &failure.report);
            EXIT_OK
        }
        Ok(Err(failure)) => {
            report(err, &failure.report);
            let _ = writeln!(err, "error: {}", failure.error);
            EXIT_FAILED
        }
        Err(RunError::Usage(message)) => {
            let _ = writeln!(err, "error: {message}");
            EXIT_USAGE
        }
        Err(RunError::Query(e)) => {
            let _ = writeln!(err, "error: {e}");
            EXIT_FAILED
        }
    }
}

/// Why a query could not start: the command line or the query (exit 2), or the run.
enum RunError {
    Usage(String),
    Query(punctual_adapters::QueryError),
}

impl From<punctual_adapters::QueryError> for RunError {
    fn from(e: punctual_adapters::QueryError) -> Self {
        RunError::Query(e)
    }
}

/// Creates one input stream as the query reads it: CSV or JSON lines by the file's
/// extension; flat records timed by `TIMESTAMP BY` (or `time=`), or items in the JSON-lines
/// form; CTIs generated per event (`--delay` behind), or imported from the input it is
/// reference data for.
#[allow(clippy::type_complexity)]
fn create_input(
    query: &mut punctual_adapters::Query,
    u: &InputUse,
    arg: &InputArg,
    delay: Option<TimeSpan>,
    time_format: TimeFormat,
) -> Result<
    (
        punctual_core::ops::Stream<punctual_core::Row>,
        Option<Vec<String>>,
    ),
    RunError,
> {
    use punctual_adapters::{
        CsvInput, CsvInputConfig, InputOptions, JsonLinesInput, JsonLinesInputConfig,
    };
    use punctual_core::{EventShape, Row};
    use punctual_policies::{AdvanceTimeImportSettings, AdvanceTimePolicy, AdvanceTimeSettings};

    let time = match (&arg.time, &u.timestamp_field) {
        (Some(t), _) => Some(t.clone()),
        (None, Some(path)) if path.len() == 1 => Some(path[0].clone()),
        (None, Some(path)) => {
            return Err(RunError::Usage(format!(
                "input `{}`: TIMESTAMP BY {} is a nested field; give --input {}=FILE,time=FIELD",
                u.name,
                path.join("."),
                u.name
            )))
        }
        (None, None) => None,
    };
    let shape = match (&time, &arg.end) {
        (Some(_), None) => EventShape::Point,
        (Some(_), Some(_)) => EventShape::Interval,
        (None, _) => EventShape::Edge,
    };
    let settings = match &u.reference_of {
        Some(left) => AdvanceTimeSettings::builder()
            .import(AdvanceTimeImportSettings::new(left.clone()))
            .policy(AdvanceTimePolicy::Adjust)
            .build()
            .map_err(|e| RunError::Usage(e.to_string()))?,
        None => AdvanceTimeSettings::unordered_start_time(delay.unwrap_or(TimeSpan::ZERO)),
    };
    let mut options = InputOptions::new(u.name.clone(), shape).settings(settings);
    if u.reference_of.is_some() {
        // Read first: the other inputs start once it is in.
        options = options.reference();
    }
    if is_csv(&arg.path) {
        let Some(time) = time else {
            return Err(RunError::Usage(format!(
                "input `{}` is CSV: its time column is needed (TIMESTAMP BY column, or --input {}=FILE,time=COLUMN)",
                u.name, u.name
            )));
        };
        let header = csv_header(&arg.path);
        if let Some(h) = &header {
            for column in std::iter::once(&time).chain(arg.end.as_ref()) {
                if !h.contains(column) {
                    return Err(RunError::Usage(format!(
                        "input `{}`: {} has no column `{column}` (its columns: {})",
                        u.name,
                        arg.path.display(),
                        h.join(", ")
                    )));
                }
            }
        }
        let mut config = CsvInputConfig::new(&arg.path, time).time_format(time_format);
        if let Some(end) = &arg.end {
            config = config.end(end.clone());
        }
        let stream = query.create_stream::<_, Row, _, _>(options, &CsvInput, &config)?;
        return Ok((stream, header));
    }
    if arg.end.is_some() {
        return Err(RunError::Usage(format!(
            "input `{}`: end=FIELD is for CSV inputs; JSON lines give intervals as items",
            u.name
        )));
    }
    let mut config = JsonLinesInputConfig::new(&arg.path);
    if let Some(time) = time {
        config = config.flat(time, time_format);
    }
    let stream = query.create_stream::<_, Row, _, _>(options, &JsonLinesInput, &config)?;
    Ok((stream, None))
}
