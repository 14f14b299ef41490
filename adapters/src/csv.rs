//! CSV files (one record per line, a header line first): [`CsvInput`] reads events from them,
//! [`CsvOutput`] writes events and CTIs.
//!
//! The input takes its start time (and, for intervals, its end time) from named columns, as
//! integer ticks or RFC 3339 text, and reads the payload from the record's columns (all, or
//! those [`CsvInputConfig::columns`] names), column names to fields, straight through serde:
//! a serde payload type gets what its fields ask for (a text field the column's text, even
//! `007`), an untyped [`Row`] (built from the fields with a schema made once from the header)
//! numbers where a field is one (`42`, `2.5`; not `007`), `true` and `false`, text otherwise.
//! Fields may be quoted (`"a, b"`, `""` for a quote).
//! Malformed records are skipped by default: counted as `malformed` and sent to the dead
//! letters with file, line and field (or, with [`MalformedLines::Fail`], they fail the query).
//! Replay options: as fast as possible or at a speed factor, follow mode, and a final CTI at end
//! of file by default ([`ReplayOptions`]). The path `-` is standard input / output. The factory
//! declares no advance-time settings: CTIs come from the stream's settings (or the final CTI).
//!
//! ```no_run
//! use punctual_adapters::{CsvInput, CsvInputConfig};
//! use punctual_runtime::{InputOptions, Query};
//! use punctual_core::{EventShape};
//! use punctual_rows::{Row};
//! # async fn demo() -> Result<(), punctual_runtime::QueryError> {
//! let mut query = Query::new("csv");
//! let readings = query.create_stream::<_, Row, _, _>(
//!     InputOptions::new("readings", EventShape::Point),
//!     &CsvInput,
//!     &CsvInputConfig::new("readings.csv", "time"),
//! )?;
//! # let _ = readings; Ok(()) }
//! ```

mod columns;
mod output;
mod record;
mod split;
mod table;

use columns::Columns;
pub use output::{CsvOutput, CsvOutputConfig, CsvWriter};
pub use table::Validity;

use std::any::Any;
use std::path::PathBuf;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use punctual_core::{Event, EventKind, EventShape, StreamItem};
use punctual_rows::Row;

use crate::jsonl::MalformedLines;
use crate::line::TimeFormat;
use crate::replay::{FileFormat, FilePart, FileReader, LineRead, ReplayOptions};
use punctual_runtime::adapter::{InputAdapterFactory, Payload};
use punctual_runtime::error::AdapterError;

/// Configuration of [`CsvInput`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CsvInputConfig {
    /// The file; `-` is standard input. A file name with `*` (any characters) or `?` (one
    /// character) names every matching file of its directory, sorted by name: each is a
    /// partition of the source, an input of its own
    /// ([`InputAdapterFactory::partitions`]).
    pub path: PathBuf,
    /// The column holding each event's start time.
    pub start: String,
    /// The column holding each event's end time, for interval events (absent: points).
    #[serde(default)]
    pub end: Option<String>,
    /// The field separator (default `,`).
    #[serde(default = "comma")]
    pub delimiter: char,
    /// What to do with malformed records (default: skip, count and dead-letter them).
    #[serde(default = "skip")]
    pub malformed: MalformedLines,
    /// Speed, follow mode, final CTI (`replay = { speed = 10.0, follow = false, final_cti = true }`).
    #[serde(default)]
    pub replay: ReplayOptions,
    /// How the time columns are written (default: integers are ticks, text is RFC 3339).
    #[serde(default)]
    pub time_format: TimeFormat,
    /// Read each file as this many partitions, by byte range (see [`CsvInputConfig::split`]).
    #[serde(default)]
    pub split: Option<usize>,
    /// The columns each payload is read from (default: all; see [`CsvInputConfig::columns`]).
    #[serde(default)]
    pub columns: Option<Vec<String>>,
    /// Reference data: how long each row is valid when the rows are a table rather than
    /// events (see [`CsvInputConfig::table`]; default: each row an event of its own).
    #[serde(default)]
    pub table: Option<Validity>,
    /// The columns whose empty fields are `NULL` (see [`CsvInputConfig::nullable`]).
    #[serde(default)]
    pub nullable: Vec<String>,
}

fn comma() -> char {
    ','
}

fn skip() -> MalformedLines {
    MalformedLines::Skip
}

impl CsvInputConfig {
    /// Read `path`, taking point events' times from column `start`.
    pub fn new(path: impl Into<PathBuf>, start: impl Into<String>) -> Self {
        CsvInputConfig {
            path: path.into(),
            start: start.into(),
            end: None,
            delimiter: ',',
            malformed: MalformedLines::Skip,
            replay: ReplayOptions::default(),
            time_format: TimeFormat::Auto,
            split: None,
            columns: None,
            table: None,
            nullable: Vec::new(),
        }
    }

    /// The columns whose empty fields are read as `NULL`, for a payload of dynamic fields (a
    /// `Row`). Each column of such a row holds one type, fixed by its first field that is not
    /// empty: numbers, `true`/`false`, or text (then a later field that looks like a number
    /// is text too). A later field of another type, or an empty field in a number or boolean
    /// column not listed here, makes its record malformed (counted, dead-lettered with line
    /// and field); an empty field of a text column is empty text.
    ///
    /// ```
    /// use punctual_adapters::CsvInputConfig;
    /// let config = CsvInputConfig::new("readings.csv", "time").nullable(["celsius"]);
    /// assert_eq!(config.nullable, vec!["celsius".to_owned()]);
    /// ```
    pub fn nullable<S: Into<String>>(mut self, columns: impl IntoIterator<Item = S>) -> Self {
        self.nullable = columns.into_iter().map(Into::into).collect();
        self
    }

    /// Reads the file as a reference table: with [`Validity::Always`] each row is valid for
    /// all time (the file needs no time column: `start` may be empty); with
    /// [`Validity::UntilNext`] each row from its `start` column until the next row of its key
    /// (start and end edges: an [`EventShape::Edge`] stream).
    ///
    /// ```
    /// use punctual_adapters::csv::Validity;
    /// use punctual_adapters::CsvInputConfig;
    /// let statics = CsvInputConfig::new("thresholds.csv", "").table(Validity::Always);
    /// let versions = CsvInputConfig::new("thresholds.csv", "valid_from")
    ///     .table(Validity::UntilNext { key: vec!["device".into()] });
    /// # let _ = (statics, versions);
    /// ```
    pub fn table(mut self, validity: Validity) -> Self {
        self.table = Some(validity);
        self
    }

    /// Reads each payload from these columns only (the time columns are read for the
    /// event's lifetime either way): the others are skipped, not parsed. A column the file's
    /// header does not have is an error of the file. For a payload of dynamic fields (a
    /// `Row`), the fields a query reads: a narrow row is cheaper to build and to move.
    ///
    /// ```
    /// use punctual_adapters::CsvInputConfig;
    /// let config = CsvInputConfig::new("readings.csv", "time").columns(["device", "celsius"]);
    /// assert_eq!(config.columns, Some(vec!["device".to_owned(), "celsius".to_owned()]));
    /// ```
    pub fn columns<S: Into<String>>(mut self, columns: impl IntoIterator<Item = S>) -> Self {
        self.columns = Some(columns.into_iter().map(Into::into).collect());
        self
    }

    /// Reads each file as `parts` partitions, each an input of its own
    /// ([`InputAdapterFactory::partitions`]): part `k` reads the records whose line starts in
    /// the `k`-th share of the file's bytes (every record in exactly one part), with the
    /// header of the file's first line. A record is one line (a quoted field does not hold a
    /// line end), which is what makes the split exact. A regular file only: not standard
    /// input or follow mode.
    ///
    /// ```
    /// use punctual_adapters::CsvInputConfig;
    /// let config = CsvInputConfig::new("readings.csv", "time").split(4);
    /// assert_eq!(config.split, Some(4));
    /// ```
    pub fn split(mut self, parts: usize) -> Self {
        self.split = Some(parts);
        self
    }

    /// Time columns written in `format`.
    pub fn time_format(mut self, format: TimeFormat) -> Self {
        self.time_format = format;
        self
    }

    /// Interval events ending at column `end`.
    pub fn end(mut self, end: impl Into<String>) -> Self {
        self.end = Some(end.into());
        self
    }

    /// Replay options.
    pub fn replay(mut self, replay: ReplayOptions) -> Self {
        self.replay = replay;
        self
    }

    /// What to do with malformed records.
    pub fn malformed(mut self, m: MalformedLines) -> Self {
        self.malformed = m;
        self
    }
}

/// Splits one CSV record; `None` for an unterminated quote.
pub fn split_record(line: &str, delimiter: char) -> Option<Vec<String>> {
    let mut split = split::Split::default();
    split
        .read(line, delimiter)
        .then(|| split.fields(line).iter().map(str::to_owned).collect())
}

/// Joins fields into a CSV record, quoting where needed.
pub fn join_record(fields: &[String], delimiter: char) -> String {
    fields
        .iter()
        .map(|f| {
            if f.contains(delimiter) || f.contains('"') || f.contains('\n') || f.starts_with(' ') {
                format!("\"{}\"", f.replace('"', "\"\""))
            } else {
                f.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(&delimiter.to_string())
}

/// Factory of CSV file inputs; see the module doc.
#[derive(Clone, Copy, Debug, Default)]
pub struct CsvInput;

impl<P: Payload + DeserializeOwned> InputAdapterFactory<CsvInputConfig, P> for CsvInput {
    type Adapter = CsvReader<P>;

    /// A regular file read to its end (not standard input, a FIFO or follow mode).
    fn resumable(&self, config: &CsvInputConfig) -> bool {
        crate::replay::resumable(&config.path, config.replay)
    }

    fn source_files(&self, config: &CsvInputConfig) -> Vec<std::path::PathBuf> {
        crate::replay::source_files(&config.path)
    }

    /// A file name with `*` or `?` in it names several files: one partition each, times
    /// [`CsvInputConfig::split`] parts per file.
    fn partitions(&self, config: &CsvInputConfig) -> usize {
        FilePart::count(&config.path, config.split)
    }

    fn create(
        &self,
        config: &CsvInputConfig,
        shape: EventShape,
    ) -> Result<CsvReader<P>, AdapterError> {
        self.create_partition(config, shape, 0)
    }

    fn create_partition(
        &self,
        config: &CsvInputConfig,
        shape: EventShape,
        partition: usize,
    ) -> Result<CsvReader<P>, AdapterError> {
        let timeless = config.table == Some(Validity::Always);
        if config.start.is_empty() && !timeless {
            return Err(AdapterError::Config(
                "`start` must name a column (or the file is a static table: `table = always`)"
                    .into(),
            ));
        }
        let versions = matches!(config.table, Some(Validity::UntilNext { .. }));
        if versions && config.split.is_some_and(|p| p > 1) {
            return Err(AdapterError::Config(
                "a table of versions is read whole (each key's versions in order): not split"
                    .into(),
            ));
        }
        if versions && shape != EventShape::Edge {
            return Err(AdapterError::Config(
                "a table of versions (`until_next`) is read as start and end edges: an edge stream"
                    .into(),
            ));
        }
        let source = FilePart::of(&config.path, config.replay, config.split, partition)?;
        let format = CsvRecords {
            columns: None,
            split: split::Split::default(),
            records: Records {
                config: config.clone(),
                shape,
                versions: table::Versions::default(),
                types: Vec::new(),
                ended: None,
                as_payload: row_payload::<P>(),
            },
        };
        Ok(FileReader::new(
            source,
            config.replay,
            config.malformed,
            format,
        ))
    }
}

/// Reads one CSV file into a stream: the file reader with the CSV format ([`CsvRecords`]).
pub type CsvReader<P> = FileReader<P, CsvRecords<P>>;

/// The CSV format of a file input: a header, then one record per line.
#[derive(Debug)]
pub struct CsvRecords<P> {
    /// The columns, once the header is read.
    columns: Option<Columns>,
    /// A record's fields, reused for each.
    split: split::Split,
    records: Records<P>,
}

/// What reads a record of a [`CsvRecords`] beside its columns.
#[derive(Debug)]
struct Records<P> {
    config: CsvInputConfig,
    /// The stream's shape (an empty end is a start edge in an edge stream).
    shape: EventShape,
    /// A table of versions: each key's open version.
    versions: table::Versions<P>,
    /// Each column's type, for a row payload (by the header's positions).
    types: Vec<record::ColumnType>,
    /// The end edge of the version the last record replaced, fed before that record.
    ended: Option<StreamItem<P>>,
    /// A row as the payload, when the payload is `Row` ([`row_payload`]).
    as_payload: Option<fn(Row) -> P>,
}

/// A row as a payload of type `P`, when `P` is `Row`: found once for a reader, not checked
/// per record.
fn row_payload<P: 'static>() -> Option<fn(Row) -> P> {
    let same: fn(Row) -> Row = std::convert::identity;
    (&same as &dyn Any).downcast_ref::<fn(Row) -> P>().copied()
}

impl<P: DeserializeOwned + 'static> Records<P> {
    /// Parses one record into its items (a table of versions ends the key's version before
    /// it), or says which field is wrong.
    fn item(
        &mut self,
        columns: &Columns,
        line: &str,
        split: &mut split::Split,
    ) -> Result<StreamItem<P>, String>
    where
        P: Clone,
    {
        if !split.read(line, self.config.delimiter) {
            return Err("an unterminated quote".into());
        }
        let fields = split.fields(line);
        let header = &columns.header[..];
        if fields.len() != header.len() {
            return Err(format!(
                "{} fields, the header has {}",
                fields.len(),
                header.len()
            ));
        }
        let field = |at: Option<usize>, name: &str| {
            at.map(|i| fields.get(i))
                .ok_or_else(|| format!("no column `{name}`"))
        };
        let parse_time = |text: &str| self.config.time_format.read_text(text);
        let kind = if self.config.table == Some(Validity::Always) {
            EventKind::Interval {
                start: punctual_core::Time::MIN_FINITE,
                end: punctual_core::Time::MAX_FINITE,
            }
        } else {
            let start = parse_time(field(columns.start, &self.config.start)?)
                .map_err(|e| format!("field `{}`: {e}", self.config.start))?;
            match &self.config.end {
                None => EventKind::Point(start),
                Some(end_col) => match field(columns.end, end_col)? {
                    // An empty end: still valid, until further notice.
                    "" if self.shape == EventShape::Edge => EventKind::StartEdge(start),
                    "" => {
                        return Err(format!(
                            "field `{end_col}` is empty: a row valid until further notice is a start edge, which only an edge stream takes (reference data is one)"
                        ))
                    }
                    text => EventKind::Interval {
                        start,
                        end: parse_time(text).map_err(|e| format!("field `{end_col}`: {e}"))?,
                    },
                },
            }
        };
        let payload = match &columns.row {
            Some((schema, kept)) => {
                // Each field as its column's type: the first that is not stops the record.
                let mut wrong = None;
                let types = &mut self.types;
                let row = schema.row(kept.iter().map(|&i| {
                    let text = fields.get(i);
                    match record::typed(text, &mut types[i], columns.nullable[i]) {
                        Ok(v) => v,
                        Err(why) => {
                            wrong.get_or_insert((i, why));
                            punctual_rows::Value::Null
                        }
                    }
                }));
                if let Some((i, why)) = wrong {
                    let name = &header[i];
                    return Err(if fields.get(i).is_empty() {
                        format!("field `{name}` {why}: list it in `nullable` to read an empty field as NULL")
                    } else {
                        format!("field `{name}`: `{}` {why}", fields.get(i))
                    });
                }
                let as_payload = self.as_payload.ok_or("a row payload that is not a row")?;
                as_payload(row)
            }
            None => P::deserialize(record::Record {
                header,
                fields,
                keep: columns.keep.as_deref(),
            })
            .map_err(|e| e.to_string())?,
        };
        if matches!(self.config.table, Some(Validity::UntilNext { .. })) {
            let key = columns
                .key
                .iter()
                .map(|&i| fields.get(i).to_owned())
                .collect();
            let [ended, begun] = self.versions.next(key, kind.start(), payload)?;
            self.ended = ended;
            return begun.ok_or_else(|| "a version without its start".to_owned());
        }
        Ok(StreamItem::Insert(Event { kind, payload }))
    }
}

impl<P: Payload + DeserializeOwned> FileFormat<P> for CsvRecords<P> {
    fn has_header(&self) -> bool {
        true
    }

    fn header(&mut self, line: &str) -> Result<(), String> {
        let config = &self.records.config;
        let header =
            split_record(line, config.delimiter).ok_or("the header has an unterminated quote")?;
        let columns = Columns::new::<P>(header, config)?;
        // Each column's type is fixed by its first value in this file (or part).
        self.records.types = vec![record::ColumnType::Unknown; columns.header.len()];
        self.columns = Some(columns);
        Ok(())
    }

    fn read(&mut self, line: &str) -> Result<LineRead<P>, String> {
        let columns = self.columns.as_ref().ok_or("a record before the header")?;
        let item = self.records.item(columns, line, &mut self.split)?;
        // A new version ends the one before it of its key first.
        Ok(match self.records.ended.take() {
            Some(ended) => LineRead::Two(ended, item),
            None => LineRead::Item(item),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_split_and_join_with_quotes() {
        let f = split_record(r#"a,"b, c","say ""hi""",,x"#, ',').unwrap();
        assert_eq!(f, vec!["a", "b, c", r#"say "hi""#, "", "x"]);
        assert_eq!(split_record(r#"a,"open"#, ','), None);
        assert_eq!(join_record(&f, ','), r#"a,"b, c","say ""hi""",,x"#);
    }
}
