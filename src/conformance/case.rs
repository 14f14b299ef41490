//! Reading a case folder: `case.toml`, `arrivals.jsonl`, `expected.jsonl`.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use punctual_adapters::line::{parse_line, LineKind};
use punctual_core::{StreamItem, Time, TimeSpan};
use punctual_policies::{AdvanceTimeGenerationSettings, AdvanceTimePolicy};
use punctual_rows::Row;

use super::CaseError;

/// How output is compared with `expected.jsonl`.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Compare {
    /// CTIs exactly, events as a multiset per segment between CTIs.
    #[default]
    Exact,
    /// Only the multiset of all events.
    Events,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    #[serde(default)]
    description: String,
    #[serde(default)]
    compare: Compare,
    streams: toml::Table,
    #[serde(default)]
    query: QueryFile,
    #[serde(default)]
    expect: ExpectFile,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct QueryFile {
    output: Option<String>,
    sql: Option<String>,
    #[serde(default)]
    step: Vec<toml::Table>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ExpectFile {
    #[serde(default)]
    metrics: toml::Table,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StreamFile {
    shape: punctual_core::EventShape,
    policy: Option<AdvanceTimePolicy>,
    generate: Option<GenerateFile>,
    import: Option<String>,
    watermark: Option<WatermarkFile>,
    order: Option<String>,
}

/// The `watermark` stream setting (docs/semantics.md, section 5).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatermarkFile {
    /// Out-of-order tolerance.
    pub out_of_order: TimeSpan,
    /// Late-arrival tolerance.
    pub late: Option<TimeSpan>,
    /// Early-arrival tolerance.
    pub early: Option<TimeSpan>,
    /// `adjust` (default) or `drop`.
    pub policy: Option<AdvanceTimePolicy>,
    /// A payload field: one watermark per value.
    pub substream: Option<String>,
    /// Input partitions the stream has (numbered from 0; items say theirs in `partition`).
    pub partitions: Option<usize>,
    /// Whether end of input issues `CTI(+inf)` (default true).
    #[serde(rename = "final")]
    pub final_cti: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GenerateFile {
    every: Option<u64>,
    duration: Option<TimeSpan>,
    #[serde(default)]
    delay: TimeSpan,
    #[serde(default, rename = "final")]
    final_cti: bool,
}

/// One input stream of a case.
#[derive(Clone, Debug)]
pub struct StreamSpec {
    /// Its name.
    pub name: String,
    /// Declared shape.
    pub shape: punctual_core::EventShape,
    /// Violation policy (`None`: reject).
    pub policy: Option<AdvanceTimePolicy>,
    /// CTI generation.
    pub generation: Option<AdvanceTimeGenerationSettings>,
    /// Stream whose CTIs are imported.
    pub import: Option<String>,
    /// A watermark strategy.
    pub watermark: Option<WatermarkFile>,
    /// Whether its events are released as they come (`order = "arrival"`), not sorted at
    /// each CTI.
    pub arrival: bool,
}

/// A step of the query, kept as written; the runner turns it into an operator.
#[derive(Clone, Debug)]
pub struct StepSpec {
    /// The step's name.
    pub name: String,
    /// The op.
    pub op: String,
    /// The whole `[[query.step]]` table.
    pub table: toml::Table,
}

/// One arrival: a stream, and an item or the end of its input.
#[derive(Clone, Debug)]
pub struct Arrival {
    /// 1-based line number in `arrivals.jsonl`.
    pub line: usize,
    /// Index of the stream in [`Case::streams`].
    pub stream: usize,
    /// The item, or `None` for `eof` (and for a clock reading).
    pub item: Option<StreamItem<Row>>,
    /// Its arrival time, if the line gives one.
    pub arrival: Option<Time>,
    /// Its input partition, if the line gives one.
    pub partition: Option<usize>,
    /// For a `clock` line: the reading (handed to every stream with a watermark strategy).
    pub clock: Option<Time>,
}

/// A parsed case.
#[derive(Clone, Debug)]
pub struct Case {
    /// The folder.
    pub dir: PathBuf,
    /// What it shows.
    pub description: String,
    /// How output is compared.
    pub compare: Compare,
    /// Input streams in declaration order.
    pub streams: Vec<StreamSpec>,
    /// Query steps.
    pub steps: Vec<StepSpec>,
    /// The query in the query language (`[query] sql = "..."`), instead of steps.
    pub sql: Option<punctual_sql::SqlQuery>,
    /// The step or stream bound to the output.
    pub output: String,
    /// Arrivals in global order.
    pub arrivals: Vec<Arrival>,
    /// Expected output items.
    pub expected: Vec<StreamItem<Row>>,
    /// Expected counters: stream name, counter name, value.
    pub metrics: Vec<(String, String, u64)>,
}

fn read(path: &Path) -> Result<String, CaseError> {
    std::fs::read_to_string(path).map_err(|e| CaseError::Io {
        path: path.to_owned(),
        message: e.to_string(),
    })
}

fn bad(path: &Path, line: usize, message: impl Into<String>) -> CaseError {
    CaseError::Parse {
        path: path.to_owned(),
        line,
        message: message.into(),
    }
}

impl Case {
    /// Reads the case in `dir`.
    pub fn load(dir: &Path) -> Result<Case, CaseError> {
        let toml_path = dir.join("case.toml");
        let text = read(&toml_path)?;
        let file: CaseFile = toml::from_str(&text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text[..s.start].lines().count().max(1))
                .unwrap_or(0);
            bad(&toml_path, line, e.message().to_owned())
        })?;
        let mut streams = Vec::new();
        for (name, value) in file.streams {
            streams.push(stream_spec(name, value, &toml_path)?);
        }
        let mut steps = Vec::new();
        for step in &file.query.step {
            let field = |k: &str| step.get(k).and_then(|v| v.as_str()).map(str::to_owned);
            let (Some(name), Some(op)) = (field("name"), field("op")) else {
                return Err(bad(
                    &toml_path,
                    0,
                    "every [[query.step]] needs `name` and `op`",
                ));
            };
            steps.push(StepSpec {
                name,
                op,
                table: step.clone(),
            });
        }
        let sql =
            match &file.query.sql {
                Some(text) => {
                    if !steps.is_empty() {
                        return Err(bad(
                            &toml_path,
                            0,
                            "[query] has `sql` and steps: give one or the other",
                        ));
                    }
                    Some(punctual_sql::SqlQuery::parse(text).map_err(|e| {
                        bad(&toml_path, 0, format!("[query] sql: {}", e.show(text)))
                    })?)
                }
                None => None,
            };
        let output = match (file.query.output, &sql) {
            (Some(o), _) => o,
            (None, Some(q)) => q.outputs().into_iter().next().unwrap_or_default(),
            (None, None) => streams
                .first()
                .map(|s| s.name.clone())
                .ok_or_else(|| bad(&toml_path, 0, "a case needs at least one stream"))?,
        };
        let metrics = expected_metrics(file.expect.metrics, &toml_path)?;
        let arrivals = read_arrivals(&dir.join("arrivals.jsonl"), &streams)?;
        let expected = read_items(&dir.join("expected.jsonl"))?;
        Ok(Case {
            dir: dir.to_owned(),
            description: file.description,
            compare: file.compare,
            streams,
            steps,
            sql,
            output,
            arrivals,
            expected,
            metrics,
        })
    }
}

/// Reads a file of output items (`expected.jsonl`); a missing file is an empty output.
pub fn read_items(path: &Path) -> Result<Vec<StreamItem<Row>>, CaseError> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let mut items = Vec::new();
    for (i, text) in read(path)?.lines().enumerate() {
        if text.trim().is_empty() {
            continue;
        }
        let item = parse_line::<Row>(text)
            .and_then(|l| l.into_item_or_default())
            .map_err(|e| bad(path, i + 1, e.to_string()))?
            .ok_or_else(|| bad(path, i + 1, "`eof` is not an output item"))?;
        items.push(item);
    }
    Ok(items)
}

/// A short text for a time in messages.
pub(crate) fn show_time(t: Time) -> String {
    t.to_string()
}

/// One `[streams.NAME]` table of a case: its shape, policy, CTI generation, import and
/// watermark strategy.
fn stream_spec(name: String, value: toml::Value, path: &Path) -> Result<StreamSpec, CaseError> {
    let s: StreamFile = value
        .try_into()
        .map_err(|e: toml::de::Error| bad(path, 0, format!("[streams.{name}]: {e}")))?;
    let generation = s
        .generate
        .map(|g| {
            let builder = match (g.every, g.duration) {
                (Some(n), None) => AdvanceTimeGenerationSettings::every_events(n),
                (None, Some(d)) => AdvanceTimeGenerationSettings::every_duration(d),
                _ => {
                    return Err(bad(
                        path,
                        0,
                        format!(
                            "[streams.{name}] generate needs exactly one of `every` and `duration`"
                        ),
                    ))
                }
            };
            builder
                .delay(g.delay)
                .final_cti(g.final_cti)
                .build()
                .map_err(|e| bad(path, 0, format!("[streams.{name}]: {e}")))
        })
        .transpose()?;
    let arrival = match s.order.as_deref() {
        None | Some("sorted") => false,
        Some("arrival") => true,
        Some(other) => {
            return Err(bad(
                path,
                0,
                format!("[streams.{name}] order `{other}` is not `sorted` or `arrival`"),
            ))
        }
    };
    Ok(StreamSpec {
        arrival,
        watermark: s.watermark,
        name,
        shape: s.shape,
        policy: s.policy,
        generation,
        import: s.import,
    })
}

/// The `[expect.metrics.STREAM]` tables of a case: `(stream, counter, value)`.
fn expected_metrics(
    tables: toml::Table,
    path: &Path,
) -> Result<Vec<(String, String, u64)>, CaseError> {
    let mut metrics = Vec::new();
    for (stream, table) in tables {
        let Some(table) = table.as_table() else {
            return Err(bad(
                path,
                0,
                format!("[expect.metrics.{stream}] must be a table"),
            ));
        };
        for (counter, value) in table {
            let v = value
                .as_integer()
                .and_then(|v| u64::try_from(v).ok())
                .ok_or_else(|| {
                    bad(
                        path,
                        0,
                        format!("expect.metrics.{stream}.{counter} must be a non-negative integer"),
                    )
                })?;
            metrics.push((stream.clone(), counter.clone(), v));
        }
    }
    Ok(metrics)
}

/// The arrivals of a case (`arrivals.jsonl`), each naming one of `streams`.
fn read_arrivals(path: &Path, streams: &[StreamSpec]) -> Result<Vec<Arrival>, CaseError> {
    let mut arrivals = Vec::new();
    for (i, text) in read(path)?.lines().enumerate() {
        if text.trim().is_empty() {
            continue;
        }
        let line = parse_line::<Row>(text).map_err(|e| bad(path, i + 1, e.to_string()))?;
        let Some(stream_name) = line.stream.clone() else {
            return Err(bad(path, i + 1, "an arrival needs `stream`"));
        };
        let stream = streams
            .iter()
            .position(|s| s.name == stream_name)
            .ok_or_else(|| bad(path, i + 1, format!("unknown stream `{stream_name}`")))?;
        let (arrival, partition) = (line.arrival, line.partition);
        if line.kind == LineKind::Clock {
            let Some(now) = line.time else {
                return Err(bad(path, i + 1, "a `clock` line needs `time`"));
            };
            arrivals.push(Arrival {
                line: i + 1,
                stream,
                item: None,
                arrival,
                partition,
                clock: Some(now),
            });
            continue;
        }
        let is_eof = line.kind == LineKind::Eof;
        let item = line
            .into_item_or_default()
            .map_err(|e| bad(path, i + 1, e.to_string()))?;
        debug_assert_eq!(item.is_none(), is_eof);
        arrivals.push(Arrival {
            line: i + 1,
            stream,
            item,
            arrival,
            partition,
            clock: None,
        });
    }
    Ok(arrivals)
}
