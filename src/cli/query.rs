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
#[derive(Debug, Default, PartialEq)]
pub(super) struct QueryArgs {
    sql: Option<String>,
    inputs: Vec<InputArg>,
    /// `(output name or None for the only one, path)`.
    outputs: Vec<(Option<String>, PathBuf)>,
    time_format: Option<TimeFormat>,
    delay: Option<TimeSpan>,
    policy: Option<Policy>,
    max_buffered: Option<usize>,
    dead_letters: Option<PathBuf>,
    timeline: Option<PathBuf>,
    /// `--items`: results as items, CTIs among them.
    items: bool,
    /// `--with-ctis`: rows, and CTIs among them.
    with_ctis: bool,
    /// `--explain`: the plan before the run, where it stood after it.
    explain: bool,
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
                // Stream Analytics' name, and the one `pipe` and job files share.
                "--out-of-order" | "--delay" => q.delay = Some(super::delay(a, &value(a)?)?),
                "--policy" => q.policy = Some(Policy::parse("--policy", &value("--policy")?)?),
                "--max-buffered" => {
                    let v = value("--max-buffered")?;
                    let n = v.parse::<usize>().ok().filter(|&n| n >= 1);
                    q.max_buffered = Some(n.ok_or_else(|| {
                        format!("--max-buffered {v}: a number of events, 1 or more")
                    })?);
                }
                "--dead-letters" => q.dead_letters = Some(PathBuf::from(value("--dead-letters")?)),
                "--timeline" => q.timeline = Some(PathBuf::from(value("--timeline")?)),
                "--items" => q.items = true,
                "--with-ctis" => q.with_ctis = true,
                "--explain" => q.explain = true,
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
        if q.items && q.with_ctis {
            return Err(
                "--items writes CTIs among the items already; --with-ctis is for rows".into(),
            );
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
            Some(("order", "time")) => arg.order = InputOrder::Time,
            Some(("order", "arrival")) => arg.order = InputOrder::Arrival,
            Some(("out_of_order" | "delay", d)) => {
                arg.delay = Some(super::delay(&format!("--input {name}: out_of_order"), d)?);
            }
            Some(("key", k)) => arg.key = Some(k.split('+').map(str::to_owned).collect()),
            Some(("nullable", n)) => {
                arg.nullable = Some(n.split('+').map(str::to_owned).collect());
            }
            Some(("policy", p)) => {
                arg.policy = Some(Policy::parse(&format!("--input {name}: policy"), p)?);
            }
            Some(("order", other)) => {
                return Err(format!(
                    "--input {name}: order is `time` or `arrival`, not `{other}`"
                ))
            }
            _ => {
                return Err(format!(
                    "--input {name}: `{option}` is not an option (end=FIELD, time=FIELD, order=arrival, out_of_order=DURATION, policy=adjust|drop, key=FIELD[+FIELD], nullable=COLUMN[+COLUMN])"
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
    cluster: Option<punctual_cluster::ClusterConfig>,
    err: &mut dyn Write,
) -> u8 {
    let text = q.sql.clone().unwrap_or_default();
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
        ..Job::default()
    };
    for i in &q.inputs {
        let input = JobInput {
            path: i.path.clone(),
            time: i.time.clone(),
            end: i.end.clone(),
            order: i.order,
            time_format: q.time_format,
            delay: i.delay.or(q.delay),
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
    match (q.outputs.as_slice(), outputs.as_slice()) {
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
