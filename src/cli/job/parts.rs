//! What builds a job's query (its inputs, the query's operators, its outputs), once on the
//! runtime or once per worker on the cluster, and what a run reports at its end.

use super::input::create_input;
use super::*;

/// Why a job could not start: the job or the query (exit 2), or the run.
pub(super) enum RunError {
    Usage(String),
    Query(QueryError),
    Cluster(punctual_cluster::Error),
}

impl From<QueryError> for RunError {
    fn from(e: QueryError) -> Self {
        RunError::Query(e)
    }
}

/// The first malformed line of each input: where and why.
pub(super) type FirstBad = Arc<Mutex<std::collections::BTreeMap<String, String>>>;

/// What builds a job's query: on the runtime once, on the cluster once per worker.
pub(super) struct Parts {
    pub(super) job: Job,
    pub(super) sql: SqlQuery,
    pub(super) uses: Vec<InputUse>,
    pub(super) letters: Arc<Mutex<DeadLetters>>,
    pub(super) first_bad: FirstBad,
    /// The plan of the last build, as `explain` prints it.
    pub(super) plan: Mutex<Vec<String>>,
}

/// A build error's text.
pub(super) fn run_error_text(e: &RunError) -> String {
    match e {
        RunError::Usage(m) => m.clone(),
        RunError::Query(e) => e.to_string(),
        RunError::Cluster(e) => e.to_string(),
    }
}

impl Parts {
    /// The job's query: its inputs, the query's operators, its outputs; with `timeline`,
    /// captured for the picture.
    pub(super) fn build(
        &self,
        mut timeline: Option<&mut Timeline>,
    ) -> Result<punctual_runtime::Query, RunError> {
        let mut query = punctual_runtime::Query::new("job");
        let Parts { job, sql, uses, .. } = self;
        // A snapshot of another job (another query, other inputs or outputs) is refused.
        let identity = format!("{}\n{:?}\n{:?}", job.query, job.inputs, job.outputs);
        if let Some(c) = job.checkpointing.checkpoints(identity) {
            query = query.checkpoints(c);
        }
        let mut streams = Vec::new();
        for u in uses {
            let Some(input) = job.inputs.get(&u.name) else {
                continue;
            };
            let (stream, fields): (RowStream, _) = match input.order {
                InputOrder::Time => {
                    let (s, f) = create_input(&mut query, u, input, |o| o)?;
                    watch_input(&mut query, &u.name, &s, timeline.as_deref_mut(), self)?;
                    (s.into(), f)
                }
                InputOrder::Arrival => {
                    let (s, f) = create_input(&mut query, u, input, |o| o.unordered())?;
                    watch_input(&mut query, &u.name, &s, timeline.as_deref_mut(), self)?;
                    (s.into(), f)
                }
            };
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
            .map_err(|e| RunError::Usage(job.show_error(&e)))?;
        for (name, stream) in &built {
            let Some(out) = job.outputs.get(name) else {
                continue;
            };
            bind_output(&mut query, name, out, stream, timeline.as_deref_mut())?;
        }
        if job.explain {
            let logical = sql
                .plan(&inputs)
                .map_err(|e| RunError::Usage(job.show_error(&e)))?;
            if let Ok(mut plan) = self.plan.lock() {
                *plan = super::explain::plan(job, uses, &logical, &built);
            }
        }
        Ok(query)
    }
}

/// Binds the dead letters of input `name` (counted, the first malformed line kept, each
/// written where the job says) and, with `timeline`, captures what it releases.
fn watch_input<O: Order>(
    query: &mut punctual_runtime::Query,
    name: &str,
    stream: &Stream<Row, O>,
    timeline: Option<&mut Timeline>,
    parts: &Parts,
) -> Result<(), RunError> {
    let capture = match timeline {
        Some(t) => Some(t.input(query, name, stream)?),
        None => None,
    };
    let sink_letters = Arc::clone(&parts.letters);
    let sink_bad = Arc::clone(&parts.first_bad);
    let name = name.to_owned();
    query.bind_dead_letters(stream, move |letter: punctual_policies::DeadLetter<Row>| {
        if let punctual_policies::DeadLetterReason::Malformed(m) = &letter.reason {
            if let Ok(mut bad) = sink_bad.lock() {
                bad.entry(name.clone())
                    .or_insert_with(|| format!("{}: {}", m.location, m.message));
            }
        }
        if let Some(c) = &capture {
            c.letter(&letter);
        }
        if let Ok(mut l) = sink_letters.lock() {
            l.add(&letter);
        }
    })?;
    Ok(())
}

/// Binds output `name` of the query to its target (a file, standard output, TCP, Kafka or
/// MQTT) and, with `timeline`, captures what it receives.
fn bind_output(
    query: &mut punctual_runtime::Query,
    name: &str,
    out: &JobOutput,
    stream: &RowStream,
    timeline: Option<&mut Timeline>,
) -> Result<(), RunError> {
    // The stream is named for its output: an error of the output says which.
    let label = name.to_owned();
    let stream: &RowStream = &match stream.clone() {
        punctual_core::ops::AnyStream::Ordered(s) => s.named(label).into(),
        punctual_core::ops::AnyStream::Arrival(s) => s.named(label).into(),
    };
    if let Some(t) = timeline {
        t.output(query, name, stream)?;
    }
    let times = out.time_format.unwrap_or(TimeFormat::Rfc3339);
    let targets = [
        !out.path.as_os_str().is_empty(),
        out.connect.is_some(),
        out.kafka.is_some(),
        out.mqtt.is_some(),
        out.nats.is_some(),
    ];
    if targets.iter().filter(|&&t| t).count() != 1 {
        return Err(RunError::Usage(format!(
            "output `{name}`: give one target: `path` (a file, or \"-\"), `connect`, `kafka`, `mqtt` or `nats`"
        )));
    }
    let bad = |m: String| RunError::Usage(format!("output `{name}`: {m}"));
    let rows = out.rows().map_err(bad)?;
    let to_file = !out.path.as_os_str().is_empty();
    if !to_file && (out.layout.is_some() || rows.as_ref().is_some_and(|r| r.ctis)) {
        return Err(bad(
            "TCP, Kafka, MQTT and NATS outputs write items (CTIs among them, for the query that reads them); `layout` and `with_ctis` are for files".into(),
        ));
    }
    if let Some(table) = &out.kafka {
        crate::cli::brokers::kafka_output(query, stream, table).map_err(bad)?;
        return Ok(());
    }
    if let Some(table) = &out.mqtt {
        crate::cli::brokers::mqtt_output(query, stream, table).map_err(bad)?;
        return Ok(());
    }
    if let Some(table) = &out.nats {
        crate::cli::brokers::nats_output(query, stream, table).map_err(bad)?;
        return Ok(());
    }
    if let Some(addr) = &out.connect {
        if out.format == Some(Format::Csv) {
            return Err(RunError::Usage(format!(
                "output `{name}`: a TCP output writes JSON lines"
            )));
        }
        query.bind_output(
            stream,
            &punctual_adapters::TcpOutput,
            &punctual_adapters::TcpOutputConfig {
                connect: addr.clone(),
            },
        )?;
        return Ok(());
    }
    match format_of(&out.path, out.format) {
        Format::Jsonl => {
            let mut config =
                punctual_adapters::JsonLinesOutputConfig::new(&out.path).time_format(times);
            config.rows = rows;
            query.bind_output(stream, &punctual_adapters::JsonLinesOutput, &config)?;
        }
        Format::Csv => {
            let mut config = punctual_adapters::CsvOutputConfig::new(&out.path).time_format(times);
            config.rows = rows;
            query.bind_output(stream, &punctual_adapters::CsvOutput, &config)?;
        }
    }
    Ok(())
}

/// Writes a run's report on `err`: each input's counters, the dead letters' summary, what the
/// operators held at the end; returns whether an input read nothing but malformed lines.
pub(super) fn print_report(
    err: &mut dyn Write,
    report: &punctual_runtime::QueryReport,
    (letters, first_bad): (&Arc<Mutex<DeadLetters>>, &FirstBad),
    shown_times: TimeFormat,
) -> bool {
    for (name, c) in &report.streams {
        let _ = writeln!(err, "{}", counters_line(name, c, shown_times));
    }
    // A count that reads like a fault and is not one.
    for (name, c) in &report.streams {
        if c.stale_ctis > 0 {
            let _ = writeln!(
                err,
                "note: stream {name}: stale_ctis={} are CTIs that came at or behind its time and were ignored (normal where an input ended first or imports another's CTIs); nothing is lost",
                c.stale_ctis
            );
        }
    }
    for (operator, n) in &report.dropped {
        let _ = writeln!(err, "{operator}: dropped={n}");
    }
    for (operator, n) in &report.lateness {
        let _ = writeln!(
            err,
            "{operator}: on_time={} late_accepted={} (within the allowed lateness: they revised results)",
            n.on_time, n.late
        );
    }
    if let Ok(mut l) = letters.lock() {
        for drop in &report.drops {
            l.add_operator_drop(drop);
        }
        l.summary(err);
    }
    for h in &report.held_items {
        let at = |t| {
            let v = shown_times.write(t);
            v.as_str().map_or_else(|| v.to_string(), str::to_owned)
        };
        let payload = h
            .payload
            .as_deref()
            .map(|p| format!(" {p}"))
            .unwrap_or_default();
        let _ = writeln!(
            err,
            "not emitted at the end: {} held {} [{}, {}){payload}",
            h.operator,
            h.what.as_str(),
            at(h.start),
            at(h.end)
        );
    }
    // Nothing read, but lines that were all wrong: say so, and fail.
    let mut all_bad = false;
    for (name, c) in &report.streams {
        if c.events_in == 0 && c.malformed > 0 {
            all_bad = true;
            let first = first_bad
                .lock()
                .ok()
                .and_then(|b| {
                    // A partition (`NAME#p`) of a source read from several files.
                    let source = name.rsplit_once('#').map_or(name.as_str(), |(n, _)| n);
                    b.get(name).or_else(|| b.get(source)).cloned()
                })
                .unwrap_or_default();
            let _ = writeln!(
                err,
                "error: input `{name}`: every line ({}) was malformed; the first: {first}",
                c.malformed
            );
        }
    }
    all_bad
}
