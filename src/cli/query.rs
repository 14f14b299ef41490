//! `punctual query`: a query in the query language over files, from the command line.

use std::io::Write;
use std::path::PathBuf;

use punctual_adapters::line::TimeFormat;
use punctual_core::TimeSpan;

use super::job::{InputOrder, Job, JobInput, JobOutput, Layout, Policy};
use super::EXIT_USAGE;

/// One `--input NAME=PATH[,end=FIELD][,time=FIELD][,order=arrival][,out_of_order=D][,policy=P]`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct InputArg {
    name: String,
    path: PathBuf,
    end: Option<String>,
    time: Option<String>,
    /// The field holding each record's arrival time (Stream Analytics' tolerances).
    arrival: Option<String>,
    /// The late-arrival tolerance, with `arrival`.
    late: Option<TimeSpan>,
    /// The UTC offset of times written without one.
    zone: Option<String>,
    order: InputOrder,
    /// This input's tolerance, over the command's `--out-of-order`.
    delay: Option<TimeSpan>,
    /// This input's policy, over the command's `--policy`.
    policy: Option<Policy>,
    /// A reference table of versions: its key columns.
    key: Option<Vec<String>>,
    /// CSV columns whose empty fields are NULL.
    nullable: Option<Vec<String>>,
}

/// The arguments of `punctual query`.
#[derive(Debug, clap::Args)]
pub(super) struct QueryArgs {
    /// The query, in the query language.
    #[arg(
        value_name = "QUERY",
        required_unless_present = "file",
        conflicts_with = "file"
    )]
    sql: Option<String>,
    /// Read the query from this file.
    #[arg(short, long, value_name = "QUERY.sql")]
    file: Option<PathBuf>,
    /// An input: its name in the query, its file, and options after commas: time=FIELD,
    /// end=FIELD, arrival=FIELD, late=DURATION, zone=OFFSET, order=arrival,
    /// out_of_order=DURATION, policy=adjust|drop, key=FIELD[+FIELD], nullable=COLUMN[+COLUMN].
    ///
    /// time= and end= name the time fields (over the query's TIMESTAMP BY); arrival= the field
    /// of each record's arrival time (JSON lines), which makes out_of_order= and late= (5s by
    /// default) Stream Analytics' tolerances and lets TIMESTAMP BY ... OVER work; zone= the UTC
    /// offset of times written without one (-08:00; such a time is refused otherwise);
    /// order=arrival lets
    /// the input's events go on as they come (filters, projections, tumbling and hopping
    /// windows and a join's left side take them so; the rest sort them first); out_of_order=
    /// and policy= are this input's own, over the command's; key= names a versioned reference
    /// table's key; nullable= the CSV columns whose empty fields are NULL.
    #[arg(short, long, value_name = "NAME=FILE[,OPTION...]", value_parser = input_arg)]
    input: Vec<InputArg>,
    /// Where the results go: FILE (for the query's only output; FILE.csv writes CSV), or
    /// NAME=FILE for each output the query writes INTO (standard output without it).
    #[arg(short, long, value_name = "FILE|NAME=FILE", value_parser = output_arg)]
    output: Vec<(Option<String>, PathBuf)>,
    /// How times are written, and how number time fields are read (rfc3339 by default; a
    /// number is refused unless a format says its unit: it is never guessed).
    #[arg(long, value_name = "FORMAT", value_parser = super::args::time_format())]
    time_format: Option<TimeFormat>,
    /// CTIs this far behind each input's newest event (0s); an event later than that is late.
    #[arg(long = "out-of-order", visible_alias = "delay", value_name = "DURATION", value_parser = super::args::delay, allow_hyphen_values = true)]
    delay: Option<TimeSpan>,
    /// What a late event becomes: moved up to the CTI and counted as adjusted (the default,
    /// Stream Analytics' adjust), or dropped, counted and dead-lettered.
    #[arg(long, value_name = "POLICY", value_enum)]
    policy: Option<Policy>,
    /// Write the CTIs among the rows (lines {"cti":TIME}).
    #[arg(long, conflicts_with = "items")]
    with_ctis: bool,
    /// Write items (kind, times, payload) with the CTIs among them, instead of rows.
    #[arg(long)]
    items: bool,
    /// Print the plan before the run and where each operator's CTI stood after it.
    #[arg(long)]
    explain: bool,
    /// How many events may wait for a CTI per input (1000000).
    #[arg(long, value_name = "N", value_parser = super::args::events)]
    max_buffered: Option<usize>,
    /// Write every dead letter (dropped, malformed, with the reason) as a JSON line to FILE.
    #[arg(long, value_name = "FILE")]
    dead_letters: Option<PathBuf>,
    /// Draw the inputs (what they released, what was dropped) and outputs (each result with
    /// its values) on one time axis as SVG.
    #[arg(long, value_name = "FILE.svg")]
    timeline: Option<PathBuf>,
}

impl QueryArgs {
    /// The query's text: as given, or read from --file.
    fn text(&self) -> Result<String, String> {
        match (&self.sql, &self.file) {
            (Some(text), _) => Ok(text.clone()),
            (None, Some(path)) => {
                std::fs::read_to_string(path).map_err(|e| format!("--file {}: {e}", path.display()))
            }
            (None, None) => {
                Err("give the query: punctual query 'SELECT ...' --input NAME=FILE".into())
            }
        }
    }
}

/// One `--output`: `FILE`, or `NAME=FILE`.
fn output_arg(text: &str) -> Result<(Option<String>, PathBuf), String> {
    Ok(match text.split_once('=') {
        Some((name, path)) if !name.is_empty() && !name.contains('/') => {
            (Some(name.to_owned()), PathBuf::from(path))
        }
        _ => (None, PathBuf::from(text)),
    })
}

fn input_arg(text: &str) -> Result<InputArg, String> {
    let mut parts = text.split(',');
    let first = parts.next().unwrap_or_default();
    let Some((name, path)) = first.split_once('=') else {
        return Err(format!("NAME=FILE, not `{text}`"));
    };
    let mut arg = InputArg {
        name: name.to_owned(),
        path: PathBuf::from(path),
        end: None,
        time: None,
        arrival: None,
        late: None,
        zone: None,
        order: InputOrder::Time,
        delay: None,
        policy: None,
        key: None,
        nullable: None,
    };
    for option in parts {
        match option.split_once('=') {
            Some(("end", field)) => arg.end = Some(field.to_owned()),
            Some(("time", field)) => arg.time = Some(field.to_owned()),
            Some(("arrival", field)) => arg.arrival = Some(field.to_owned()),
            Some(("zone", offset)) => arg.zone = Some(offset.to_owned()),
            Some(("late", d)) => {
                arg.late = Some(d.parse().map_err(|e| format!("{name}: late={d}: {e}"))?);
            }
            Some(("order", "time")) => arg.order = InputOrder::Time,
            Some(("order", "arrival")) => arg.order = InputOrder::Arrival,
            Some(("out_of_order" | "delay", d)) => {
                arg.delay = Some(
                    super::args::delay(d).map_err(|e| format!("{name}: out_of_order={d}: {e}"))?,
                );
            }
            Some(("key", k)) => arg.key = Some(k.split('+').map(str::to_owned).collect()),
            Some(("nullable", n)) => {
                arg.nullable = Some(n.split('+').map(str::to_owned).collect());
            }
            Some(("policy", p)) => {
                arg.policy = Some(Policy::parse(&format!("{name}: policy"), p)?);
            }
            Some(("order", other)) => {
                return Err(format!(
                    "{name}: order is `time` or `arrival`, not `{other}`"
                ))
            }
            _ => {
                return Err(format!(
                    "{name}: `{option}` is not an option (end=FIELD, time=FIELD, arrival=FIELD, late=DURATION, zone=OFFSET, order=arrival, out_of_order=DURATION, policy=adjust|drop, key=FIELD[+FIELD], nullable=COLUMN[+COLUMN])"
                ))
            }
        }
    }
    Ok(arg)
}

/// Runs `punctual query`: the arguments made into a job (one output without a name takes the
/// query's only output; standard output by default).
pub(super) fn cmd_query(
    q: &QueryArgs,
    (cluster, checkpointing): (
        Option<punctual_cluster::ClusterConfig>,
        super::checkpoint::Checkpointing,
    ),
    functions: &punctual_sql::Functions,
    err: &mut dyn Write,
) -> u8 {
    let text = match q.text() {
        Ok(text) => text,
        Err(e) => {
            let _ = writeln!(err, "error: {e}");
            return EXIT_USAGE;
        }
    };
    let outputs = match punctual_sql::SqlQuery::parse(&text) {
        Ok(sql) => sql.outputs(),
        Err(e) => {
            let _ = writeln!(err, "error: {}", e.show(&text));
            return EXIT_USAGE;
        }
    };
    let mut job = Job {
        query: text,
        dead_letters: q.dead_letters.clone(),
        timeline: q.timeline.clone(),
        explain: q.explain,
        functions: functions.clone(),
        checkpointing,
        ..Job::default()
    };
    for i in &q.input {
        let (delay, watermark) = match (&i.arrival, i.late) {
            // Stream Analytics' tolerances over the records' arrival times.
            (Some(_), late) => (
                None,
                Some(super::job::JobWatermark {
                    out_of_order: Some(i.delay.or(q.delay).unwrap_or(TimeSpan::ZERO)),
                    late: late.map(super::job::Late::Within),
                    final_cti: true,
                    ..super::job::JobWatermark::default()
                }),
            ),
            (None, Some(_)) => {
                let _ = writeln!(
                    err,
                    "error: --input {}: late= is the late-arrival tolerance, over arrival times: give arrival=FIELD too",
                    i.name
                );
                return EXIT_USAGE;
            }
            (None, None) => (i.delay.or(q.delay), None),
        };
        let input = JobInput {
            path: i.path.clone(),
            time: i.time.clone(),
            arrival: i.arrival.clone(),
            zone: i.zone.clone(),
            watermark,
            end: i.end.clone(),
            order: i.order,
            time_format: q.time_format,
            delay,
            policy: i.policy.or(q.policy),
            key: i.key.clone(),
            nullable: i.nullable.clone(),
            max_buffered: q.max_buffered,
            ..JobInput::default()
        };
        if job.inputs.insert(i.name.clone(), input).is_some() {
            let _ = writeln!(err, "error: --input {} is given twice", i.name);
            return EXIT_USAGE;
        }
    }
    let output = |path: &PathBuf| JobOutput {
        layout: q.items.then_some(Layout::Items),
        with_ctis: q.with_ctis,
        ..JobOutput::file(path.clone(), q.time_format.unwrap_or(TimeFormat::Rfc3339))
    };
    match (q.output.as_slice(), outputs.as_slice()) {
        ([], [only]) => {
            job.outputs
                .insert(only.clone(), output(&PathBuf::from("-")));
        }
        ([(None, path)], [only]) => {
            job.outputs.insert(only.clone(), output(path));
        }
        (given, _) => {
            for (name, path) in given {
                let Some(name) = name else {
                    let _ = writeln!(
                        err,
                        "error: the query writes INTO {}: give --output NAME=FILE for each",
                        outputs.join(", ")
                    );
                    return EXIT_USAGE;
                };
                job.outputs.insert(name.clone(), output(path));
            }
        }
    }
    super::job::run(&job, cluster, err)
}
