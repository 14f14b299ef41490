//! The tables of a job file: an input's and an output's settings, as a job file and the
//! command line give them (see `docs/query-language.md`).

use std::path::PathBuf;

use serde::Deserialize;

use punctual_adapters::line::TimeFormat;
use punctual_core::TimeSpan;
use punctual_policies::AdvanceTimePolicy;

/// The format of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(in crate::cli) enum Format {
    /// JSON lines.
    Jsonl,
    /// CSV with a header.
    Csv,
}

/// What a job does with an event behind its input's CTI (docs/guarantees.md has the table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub(in crate::cli) enum Policy {
    /// Stream Analytics' adjust (the default): a late point moves to the CTI, a late
    /// interval or edge starts at it ([`AdvanceTimePolicy::AdjustPoints`]); counted as
    /// `adjusted`.
    #[value(
        help = "a late point moves to the CTI, a late interval or edge starts at it; counted as adjusted"
    )]
    Adjust,
    /// Dropped, counted as `dropped` and dead-lettered as `late`.
    #[value(help = "dropped, counted as dropped and dead-lettered as late")]
    Drop,
}

impl Policy {
    /// The engine's policy for it.
    pub(in crate::cli) fn engine(self) -> AdvanceTimePolicy {
        match self {
            Policy::Adjust => AdvanceTimePolicy::AdjustPoints,
            Policy::Drop => AdvanceTimePolicy::Drop,
        }
    }

    /// Reads `adjust` or `drop`, naming `what` in the error.
    pub(in crate::cli) fn parse(what: &str, text: &str) -> Result<Policy, String> {
        match text {
            "adjust" => Ok(Policy::Adjust),
            "drop" => Ok(Policy::Drop),
            other => Err(format!(
                "{what}: the policy is `adjust` (a late event moves to the CTI) or `drop`, not `{other}`"
            )),
        }
    }
}

/// CTIs every `every` events or every `duration` of application time, `delay` behind.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(in crate::cli) struct Generate {
    pub(in crate::cli) every: Option<u64>,
    pub(in crate::cli) duration: Option<TimeSpan>,
    #[serde(default)]
    pub(in crate::cli) delay: TimeSpan,
    #[serde(default = "yes", rename = "final")]
    pub(in crate::cli) final_cti: bool,
}

fn yes() -> bool {
    true
}

/// The order in which an input's events go on to the query.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(in crate::cli) enum InputOrder {
    /// Sorted by event time: each event held until a CTI passes it.
    #[default]
    Time,
    /// As they arrive: each event passes on once accepted; the operators that take events
    /// in any order (`WHERE`, the select list, tumbling and hopping windows, a join's left
    /// side) read them so, the others sort them first.
    Arrival,
}

/// One network address, or a list of them (a partition each).
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub(in crate::cli) enum Addresses {
    /// `"host:port"`.
    One(String),
    /// `["host:port", ...]`.
    Many(Vec<String>),
}

impl Addresses {
    /// The addresses, in order.
    pub(in crate::cli) fn list(&self) -> Vec<String> {
        match self {
            Addresses::One(a) => vec![a.clone()],
            Addresses::Many(list) => list.clone(),
        }
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(in crate::cli) struct JobInput {
    /// The file; `-` is standard input.
    pub(in crate::cli) path: PathBuf,
    /// Or a TCP server to connect to (`host:port`), reading the JSON lines it sends (flat
    /// records with a time field, else items); a list of servers is a partition each.
    pub(in crate::cli) connect: Option<Addresses>,
    /// Or an address to listen on (`127.0.0.1:7000`), reading the JSON lines clients send
    /// (flat records with a time field, else items); the job then runs until stopped (Ctrl-C). A list of addresses is a partition
    /// each, listening where it is read.
    pub(in crate::cli) listen: Option<Addresses>,
    /// Or a Kafka topic (`{ brokers, topic, group_id, until_end }`; the `kafka` feature).
    pub(in crate::cli) kafka: Option<toml::Table>,
    /// Or an MQTT topic (`{ host, port, topic, client_id, qos }`; the `mqtt` feature).
    pub(in crate::cli) mqtt: Option<toml::Table>,
    /// Or a NATS JetStream stream (`{ server, stream, subject, allow_gap }`; the `nats`
    /// feature).
    pub(in crate::cli) nats: Option<toml::Table>,
    /// `jsonl` or `csv` (default: by the file's extension).
    pub(in crate::cli) format: Option<Format>,
    /// The field holding each record's event time (default: the query's `TIMESTAMP BY`);
    /// JSON lines and messages without one are items.
    pub(in crate::cli) time: Option<String>,
    /// JSON lines: the field holding each record's arrival time (when it reached its source,
    /// as Event Hubs' `EventEnqueuedUtcTime`), for Stream Analytics' tolerances in
    /// `watermark = { out_of_order = ... }` and the query's `TIMESTAMP BY ... OVER`.
    pub(in crate::cli) arrival: Option<String>,
    /// A multi-stream arrival log (JSON lines naming their `stream`): read this stream's
    /// lines only.
    pub(in crate::cli) stream: Option<String>,
    /// The field holding each record's end (intervals; CSV).
    pub(in crate::cli) end: Option<String>,
    /// Read the file as this many partitions, by byte range (JSON lines or CSV).
    pub(in crate::cli) split: Option<usize>,
    /// How times are written (default: integers are ticks, text RFC 3339).
    pub(in crate::cli) time_format: Option<TimeFormat>,
    /// The UTC offset of RFC 3339 times written without one (`"-08:00"`); without it such a
    /// time is refused (never guessed).
    pub(in crate::cli) zone: Option<String>,
    /// CTIs after every event, this far behind the latest (default `0s`); or `generate`.
    /// `out_of_order` is the same key under Stream Analytics' name.
    #[serde(alias = "out_of_order")]
    pub(in crate::cli) delay: Option<TimeSpan>,
    /// CTI generation in full.
    pub(in crate::cli) generate: Option<Generate>,
    /// CSV: the columns whose empty fields are NULL (elsewhere an empty field of a number or
    /// boolean column makes its record malformed).
    pub(in crate::cli) nullable: Option<Vec<String>>,
    /// The fields naming a row's key: in reference data in CSV with a start column and no end,
    /// each row is valid until the next row with the same key; in any input of edges, an end
    /// edge is matched to its start edge by it (a lookup, not a scan). Default for reference
    /// data: the fields the join compares.
    pub(in crate::cli) key: Option<Vec<String>>,
    /// `adjust` (default: a late event moves to the CTI, as in Stream Analytics) or `drop`.
    pub(in crate::cli) policy: Option<Policy>,
    /// Import the CTIs of this input (default: the input it is reference data for).
    pub(in crate::cli) import: Option<String>,
    /// Reference data: read before the other inputs start (default: a join's right side
    /// without DATEDIFF).
    pub(in crate::cli) reference: Option<bool>,
    /// The records' fields, for checking the query's references to them (default: a CSV
    /// file's header, or the fields seen in the first lines of a JSON-lines file).
    pub(in crate::cli) fields: Option<Vec<String>>,
    /// A watermark strategy instead of `delay` or `generate`.
    pub(in crate::cli) watermark: Option<JobWatermark>,
    /// `time` (default: events sorted between CTIs) or `arrival`.
    pub(in crate::cli) order: InputOrder,
    /// How many events may wait for a CTI in the input's reorder buffer (default 1,000,000).
    pub(in crate::cli) max_buffered: Option<usize>,
}

/// A watermark strategy of a job input: Flink's bounded out-of-orderness (the CTI follows the
/// highest time, `bounded` behind), or Stream Analytics' tolerances (`out_of_order`, `late`,
/// `early`, over each event's arrival time: a Kafka input's, or a JSON-lines file's `arrival`
/// field), with an idle timeout read from
/// the clock.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(in crate::cli) struct JobWatermark {
    /// How far behind the highest time the CTI follows (`0s`: ascending times).
    pub(in crate::cli) bounded: Option<TimeSpan>,
    /// Stream Analytics' out-of-order tolerance.
    pub(in crate::cli) out_of_order: Option<TimeSpan>,
    /// Stream Analytics' late-arrival tolerance (default 5s), or `"indefinite"` (its -1).
    pub(in crate::cli) late: Option<Late>,
    /// Stream Analytics' early-arrival tolerance (default 5 minutes).
    pub(in crate::cli) early: Option<TimeSpan>,
    /// After this long without events (by the clock) the input counts as idle.
    pub(in crate::cli) idle_timeout: Option<TimeSpan>,
    /// Whether the end of the input issues `CTI(+inf)` (default: yes).
    #[serde(default = "yes", rename = "final")]
    pub(in crate::cli) final_cti: bool,
}

/// Stream Analytics' late-arrival tolerance as a job writes it: a span (`"5s"`), or
/// `"indefinite"` (Stream Analytics' -1: no event is moved for arriving late, and a quiet
/// input does not advance the CTI by the clock; for replaying a topic's history).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(in crate::cli) enum Late {
    Within(TimeSpan),
    Indefinite,
}

impl<'de> Deserialize<'de> for Late {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Late, D::Error> {
        use punctual_core::time::TicksOrText;
        match TicksOrText::deserialize(d)? {
            TicksOrText::Ticks(t) => Ok(Late::Within(TimeSpan::from_ticks(t))),
            TicksOrText::Text(s) if s == "indefinite" => Ok(Late::Indefinite),
            TicksOrText::Text(s) => s.parse().map(Late::Within).map_err(|e| {
                serde::de::Error::custom(format!("{e}; or \"indefinite\" (no limit)"))
            }),
        }
    }
}

/// One output of a job.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(in crate::cli) struct JobOutput {
    /// The file; `-` is standard output.
    pub(in crate::cli) path: PathBuf,
    /// Or a TCP server to connect to (`host:port`) and write the JSON lines to.
    pub(in crate::cli) connect: Option<String>,
    /// Or a Kafka topic (the `kafka` feature).
    pub(in crate::cli) kafka: Option<toml::Table>,
    /// Or an MQTT topic (the `mqtt` feature).
    pub(in crate::cli) mqtt: Option<toml::Table>,
    /// Or a NATS subject (`{ server, subject }`; the `nats` feature).
    pub(in crate::cli) nats: Option<toml::Table>,
    /// `jsonl` (default) or `csv`.
    pub(in crate::cli) format: Option<Format>,
    /// How times are written (default: RFC 3339).
    pub(in crate::cli) time_format: Option<TimeFormat>,
    /// `rows` (default for files: each result a flat row, its times beside its fields) or
    /// `items` (kind, times and payload, CTIs among them: the form inputs read back, and what
    /// TCP, Kafka and MQTT outputs write).
    pub(in crate::cli) layout: Option<Layout>,
    /// Rows: write CTIs too (`{"cti":TIME}`; in CSV a first column `kind`).
    pub(in crate::cli) with_ctis: bool,
    /// Rows: the name of a point's time column (default `time`).
    pub(in crate::cli) time_field: Option<String>,
    /// Rows: the name of an interval's or edge's start column (default `start`).
    pub(in crate::cli) start_field: Option<String>,
    /// Rows: the name of an interval's or edge's end column (default `end`).
    pub(in crate::cli) end_field: Option<String>,
}

/// How an output lays out results.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(in crate::cli) enum Layout {
    /// Flat rows.
    Rows,
    /// Items, CTIs among them.
    Items,
}

impl JobOutput {
    /// A file output with every default but its path and time format.
    pub(in crate::cli) fn file(path: PathBuf, time_format: TimeFormat) -> JobOutput {
        JobOutput {
            path,
            connect: None,
            kafka: None,
            mqtt: None,
            nats: None,
            format: None,
            time_format: Some(time_format),
            layout: None,
            with_ctis: false,
            time_field: None,
            start_field: None,
            end_field: None,
        }
    }

    /// The row layout of a file output (`None`: items), or why the settings do not agree.
    pub(in crate::cli) fn rows(
        &self,
    ) -> Result<Option<punctual_adapters::layout::RowLayout>, String> {
        let row_keys = self.with_ctis
            || self.time_field.is_some()
            || self.start_field.is_some()
            || self.end_field.is_some();
        if self.layout == Some(Layout::Items) {
            if row_keys {
                return Err("`with_ctis`, `time_field`, `start_field` and `end_field` lay out rows; items carry their CTIs and times already (leave `layout = \"items\"` out for rows)".into());
            }
            return Ok(None);
        }
        let mut layout = punctual_adapters::layout::RowLayout {
            ctis: self.with_ctis,
            ..Default::default()
        };
        for (name, given) in [
            (&mut layout.time, &self.time_field),
            (&mut layout.start, &self.start_field),
            (&mut layout.end, &self.end_field),
        ] {
            if let Some(g) = given {
                if g.is_empty() {
                    return Err("a time column's name cannot be empty".into());
                }
                *name = g.clone();
            }
        }
        if layout.start == layout.end {
            return Err(format!(
                "`start_field` and `end_field` are both `{}`: give them two names",
                layout.start
            ));
        }
        Ok(Some(layout))
    }
}
