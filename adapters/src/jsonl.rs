//! JSON-lines files: [`JsonLinesInput`] reads items, [`JsonLinesOutput`] writes them, one JSON
//! object per line in the form of [`crate::line`].
//!
//! Both are generic over the payload: a serde type for typed streams, or
//! [`Row`](punctual_rows::Row) for untyped ones whose fields are only known at run time.
//!
//! One input can be several partitions (inputs of their own, read on several workers): every
//! file a wildcard path names, and each file split by byte ranges
//! ([`JsonLinesInputConfig::split`]).
//!
//! A malformed line (not JSON, an unknown field, a missing time, a payload of the wrong shape)
//! is reported with the file and line number. With [`MalformedLines::Skip`] (the default) the
//! line is counted as `malformed`, sent to the stream's dead letters with its text, and reading
//! goes on; with [`MalformedLines::Fail`] the adapter fails with [`AdapterError::Malformed`], and
//! so does the query. A line of kind `eof` ends the input; `arrival`
//! times are read and ignored (they are for the watermark strategies). Neither adapter declares
//! advance-time settings: CTIs come from the file or from the stream's settings, and the input
//! enqueues `CTI(+inf)` at end of file unless told otherwise ([`ReplayOptions`]: also a speed
//! factor and follow mode). The path `-` is standard input (output).
//!
//! ```no_run
//! use punctual_adapters::{
//!     JsonLinesInput, JsonLinesInputConfig, JsonLinesOutput, JsonLinesOutputConfig,
//! };
//! use punctual_runtime::{InputOptions, Query};
//! use punctual_core::{EventShape};
//! use punctual_rows::{Row};
//! use punctual_policies::AdvanceTimeSettings;
//! # async fn demo() -> Result<(), punctual_runtime::QueryError> {
//! let mut query = Query::new("copy");
//! let input = query.create_stream::<_, Row, _, _>(
//!     InputOptions::new("in", EventShape::Point).settings(AdvanceTimeSettings::increasing_start_time()),
//!     &JsonLinesInput,
//!     &JsonLinesInputConfig::new("readings.jsonl"),
//! )?;
//! query.bind_output(&input, &JsonLinesOutput, &JsonLinesOutputConfig::stdout())?;
//! query.start()?.wait().await?;
//! # Ok(()) }
//! ```

use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncWrite, AsyncWriteExt, BufWriter};

use punctual_core::{Batch, EventShape};

use crate::layout::{RowLayout, Rows};
use crate::line::{parse_line, write_item_as, LineFormat, TimeFormat};
use crate::replay::{open_sink, FileFormat, FilePart, FileReader, LineRead, ReplayOptions};
use punctual_runtime::adapter::{
    InputAdapterFactory, OutputAdapter, OutputAdapterFactory, Payload,
};
use punctual_runtime::error::AdapterError;
use punctual_runtime::query::QueryReport;

pub use crate::replay::MalformedLines;

/// Configuration of [`JsonLinesInput`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JsonLinesInputConfig {
    /// The file to read; `-` is standard input. A file name with `*` (any characters) or `?`
    /// (one character) names every matching file of its directory, sorted by name: each is a
    /// partition of the source, an input of its own
    /// ([`InputAdapterFactory::partitions`]).
    pub path: PathBuf,
    /// What to do with malformed lines (default: skip, count and dead-letter them).
    #[serde(default = "skip")]
    pub malformed: MalformedLines,
    /// Speed, follow mode, final CTI at end of file (default: as fast as possible, no follow,
    /// a final CTI).
    #[serde(default)]
    pub replay: ReplayOptions,
    /// Items (the default), or flat records timed by one of their fields.
    #[serde(default)]
    pub lines: LineFormat,
    /// A multi-stream arrival log (each line names its `stream`): only this stream's lines
    /// are read; the others are counted as `skipped`.
    #[serde(default)]
    pub stream: Option<String>,
    /// Read each file as this many partitions, by byte range: partition `k` of `n` reads the
    /// lines that start in the `k`-th `n`-th of the file's bytes (a regular file; with a
    /// wildcard path, every file is split so). Line numbers in messages count from the start
    /// of the part.
    #[serde(default)]
    pub split: Option<usize>,
}

fn skip() -> MalformedLines {
    MalformedLines::Skip
}

impl JsonLinesInputConfig {
    /// Read `path`, skipping (counting and dead-lettering) malformed lines.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        JsonLinesInputConfig {
            path: path.into(),
            malformed: MalformedLines::Skip,
            replay: ReplayOptions::default(),
            lines: LineFormat::default(),
            stream: None,
            split: None,
        }
    }

    /// Flat lines: reads each payload from these fields only ([`LineFormat::fields`]).
    ///
    /// ```
    /// use punctual_adapters::JsonLinesInputConfig;
    /// use punctual_adapters::line::TimeFormat;
    /// let config = JsonLinesInputConfig::new("readings.jsonl")
    ///     .flat("time", TimeFormat::Rfc3339)
    ///     .fields(["device", "celsius"]);
    /// assert_eq!(config.lines.fields, Some(vec!["device".to_owned(), "celsius".to_owned()]));
    /// ```
    pub fn fields<S: Into<String>>(mut self, fields: impl IntoIterator<Item = S>) -> Self {
        self.lines = self.lines.fields(fields);
        self
    }

    /// Read each file as `parts` partitions, by byte range (see [`JsonLinesInputConfig::split`]).
    pub fn split(mut self, parts: usize) -> Self {
        self.split = Some(parts);
        self
    }

    /// Reads only the lines of `stream` from a multi-stream arrival log (each line names
    /// its `stream`, as the conformance cases' arrivals do).
    pub fn stream(mut self, stream: impl Into<String>) -> Self {
        self.stream = Some(stream.into());
        self
    }

    /// Flat lines (each a JSON object, the payload) whose field `field` holds the event time,
    /// written in `format`.
    ///
    /// ```
    /// use punctual_adapters::JsonLinesInputConfig;
    /// use punctual_adapters::line::TimeFormat;
    /// // {"time": "2026-12-01T10:00:00Z", "device": "a", "celsius": 21.5}
    /// let config = JsonLinesInputConfig::new("readings.jsonl").flat("time", TimeFormat::Rfc3339);
    /// # drop(config);
    /// ```
    pub fn flat(mut self, field: impl Into<String>, format: TimeFormat) -> Self {
        let fields = self.lines.fields.take();
        let arrival = self.lines.arrival.take();
        self.lines = LineFormat {
            fields,
            arrival,
            ..LineFormat::flat(field, format)
        };
        self
    }

    /// Flat records: the field that holds each record's arrival time ([`LineFormat::arrival`]),
    /// each event enqueued with it for a watermark strategy that judges events by their
    /// arrival (Stream Analytics' tolerances and substreams, `Watermark::arrival`).
    pub fn arrival(mut self, field: impl Into<String>) -> Self {
        self.lines.arrival = Some(field.into());
        self
    }

    /// Replay options.
    pub fn replay(mut self, replay: ReplayOptions) -> Self {
        self.replay = replay;
        self
    }

    /// Sets what to do with malformed lines.
    pub fn malformed(mut self, m: MalformedLines) -> Self {
        self.malformed = m;
        self
    }
}

/// Factory of JSON-lines file inputs; see the module doc.
#[derive(Clone, Copy, Debug, Default)]
pub struct JsonLinesInput;

/// Reads one JSON-lines file into a stream: the file reader with the JSON-lines format
/// ([`JsonLines`]).
pub type JsonLinesReader<P> = FileReader<P, JsonLines<P>>;

/// The JSON-lines format of a file input: one item (or, flat, one record) per line.
#[derive(Debug)]
pub struct JsonLines<P> {
    config: JsonLinesInputConfig,
    _payload: PhantomData<fn() -> P>,
}

impl<P: Payload + DeserializeOwned> InputAdapterFactory<JsonLinesInputConfig, P>
    for JsonLinesInput
{
    type Adapter = JsonLinesReader<P>;

    /// A regular file read to its end (not standard input, a FIFO or follow mode).
    fn resumable(&self, config: &JsonLinesInputConfig) -> bool {
        crate::replay::resumable(&config.path, config.replay)
    }

    fn source_files(&self, config: &JsonLinesInputConfig) -> Vec<std::path::PathBuf> {
        crate::replay::source_files(&config.path)
    }

    /// A file name with `*` or `?` in it names several files: one partition each.
    fn partitions(&self, config: &JsonLinesInputConfig) -> usize {
        FilePart::count(&config.path, config.split)
    }

    fn create(
        &self,
        config: &JsonLinesInputConfig,
        shape: EventShape,
    ) -> Result<Self::Adapter, AdapterError> {
        self.create_partition(config, shape, 0)
    }

    fn create_partition(
        &self,
        config: &JsonLinesInputConfig,
        _shape: EventShape,
        partition: usize,
    ) -> Result<Self::Adapter, AdapterError> {
        let source = FilePart::of(&config.path, config.replay, config.split, partition)?;
        let format = JsonLines {
            config: config.clone(),
            _payload: PhantomData,
        };
        Ok(FileReader::new(
            source,
            config.replay,
            config.malformed,
            format,
        ))
    }
}

pub(crate) fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> AdapterError + '_ {
    move |source| AdapterError::Io {
        path: path.to_owned(),
        error: source,
    }
}

impl<P: Payload + DeserializeOwned> FileFormat<P> for JsonLines<P> {
    fn read(&mut self, text: &str) -> Result<LineRead<P>, String> {
        if self.config.lines.is_flat() {
            return Ok(match self.config.lines.read_arrived::<P>(text)? {
                (Some(item), Some(at)) => LineRead::Arrived(item, at),
                (Some(item), None) => LineRead::Item(item),
                (None, _) => LineRead::Nothing,
            });
        }
        let line = parse_line::<P>(text).map_err(|e| e.to_string())?;
        match (self.config.stream.as_deref(), line.stream.as_deref()) {
            (Some(wanted), Some(s)) if s != wanted => return Ok(LineRead::Nothing),
            (Some(wanted), None) => {
                return Err(format!(
                    "no field `stream`: a line of a multi-stream log names its stream (`{wanted}` is read)"
                ))
            }
            (None, Some(_)) => {
                return Err(
                    "the field `stream` belongs to conformance arrivals; a JSON-lines input reads one stream".into(),
                )
            }
            _ => {}
        }
        Ok(match line.into_item().map_err(|e| e.to_string())? {
            Some(item) => LineRead::Item(item),
            None => LineRead::End,
        })
    }
}

/// Configuration of [`JsonLinesOutput`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JsonLinesOutputConfig {
    /// The file to write (created or truncated); `-` is standard output.
    pub path: PathBuf,
    /// How times are written (default: integer ticks).
    #[serde(default)]
    pub time_format: TimeFormat,
    /// Flat rows by this layout instead of items (default: items, CTIs included).
    #[serde(default)]
    pub rows: Option<RowLayout>,
}

impl JsonLinesOutputConfig {
    /// Write to `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        JsonLinesOutputConfig {
            path: path.into(),
            time_format: TimeFormat::Auto,
            rows: None,
        }
    }

    /// Each result as a flat row (its fields beside its times), CTIs only if the layout asks
    /// ([`crate::layout`]).
    ///
    /// ```
    /// use punctual_adapters::layout::RowLayout;
    /// use punctual_adapters::JsonLinesOutputConfig;
    /// let config = JsonLinesOutputConfig::new("out.jsonl").rows(RowLayout::default());
    /// assert_eq!(config.rows, Some(RowLayout::default()));
    /// ```
    pub fn rows(mut self, layout: RowLayout) -> Self {
        self.rows = Some(layout);
        self
    }

    /// Write to standard output.
    pub fn stdout() -> Self {
        Self::new("-")
    }

    /// Times written in `format` (RFC 3339 for people, say).
    pub fn time_format(mut self, format: TimeFormat) -> Self {
        self.time_format = format;
        self
    }
}

/// Factory of JSON-lines outputs; see the module doc.
#[derive(Clone, Copy, Debug, Default)]
pub struct JsonLinesOutput;

/// How many bytes of lines [`JsonLinesWriter`] gathers before it writes them.
const WRITE_SIZE: usize = 64 * 1024;

/// Writes a stream's events and CTIs as JSON lines.
pub struct JsonLinesWriter<P> {
    path: PathBuf,
    out: Option<BufWriter<Box<dyn AsyncWrite + Unpin + Send + Sync>>>,
    /// With checkpoints: the file, to sync it.
    file: Option<tokio::fs::File>,
    /// Bytes in the file so far.
    written: u64,
    /// Lines written, not handed to `out` yet.
    line: Vec<u8>,
    time_format: TimeFormat,
    /// Flat rows instead of items.
    rows: Option<Rows>,
    _payload: PhantomData<fn(P)>,
}

impl<P> std::fmt::Debug for JsonLinesWriter<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonLinesWriter")
            .field("path", &self.path)
            .finish()
    }
}

impl<P: Payload + Serialize> OutputAdapterFactory<JsonLinesOutputConfig, P> for JsonLinesOutput {
    type Adapter = JsonLinesWriter<P>;

    fn create(
        &self,
        config: &JsonLinesOutputConfig,
        shape: EventShape,
    ) -> Result<Self::Adapter, AdapterError> {
        Ok(JsonLinesWriter {
            path: config.path.clone(),
            out: None,
            file: None,
            written: 0,
            line: Vec::new(),
            time_format: config.time_format,
            rows: config
                .rows
                .clone()
                .map(|layout| Rows::new(layout, shape, config.time_format)),
            _payload: PhantomData,
        })
    }
}

#[async_trait]
impl<P: Payload + Serialize> OutputAdapter<P> for JsonLinesWriter<P> {
    async fn write(&mut self, batch: &Batch<P>) -> Result<(), AdapterError> {
        if self.out.is_none() {
            self.out = Some(open_sink(&self.path).await?);
        }
        let Some(out) = self.out.as_mut() else {
            return Ok(());
        };
        // The batch's lines are written out together (in pieces of about `WRITE_SIZE`), not
        // one write call per line.
        self.line.clear();
        for item in batch.items() {
            let written = match self.rows.as_mut() {
                Some(rows) => rows.write_json(item, &mut self.line),
                None => write_item_as(item, self.time_format, &mut self.line).map(|()| true),
            };
            if written.map_err(AdapterError::other)? {
                self.line.push(b'\n');
            }
            if self.line.len() >= WRITE_SIZE {
                out.write_all(&self.line)
                    .await
                    .map_err(io_error(&self.path))?;
                self.written += self.line.len() as u64;
                self.line.clear();
            }
        }
        out.write_all(&self.line)
            .await
            .map_err(io_error(&self.path))?;
        self.written += self.line.len() as u64;
        Ok(())
    }

    async fn idle(&mut self) -> Result<(), AdapterError> {
        if let Some(out) = self.out.as_mut() {
            out.flush().await.map_err(io_error(&self.path))?;
        }
        Ok(())
    }

    /// A file (not standard output) can.
    fn can_checkpoint(&self) -> bool {
        self.path.as_os_str() != "-"
    }

    async fn checkpoint(&mut self) -> Result<u64, AdapterError> {
        self.idle().await?;
        if let Some(file) = self.file.as_ref() {
            file.sync_data().await.map_err(io_error(&self.path))?;
        }
        Ok(self.written)
    }

    /// Opens the file without emptying it and cuts it at `position`: a file that is not
    /// there, or shorter than `position`, is refused (it was changed since the checkpoint;
    /// going on would leave a gap or fill one with zero bytes).
    async fn rewind(&mut self, position: u64) -> Result<(), AdapterError> {
        use tokio::io::AsyncSeekExt;
        if position > 0 {
            let length = match tokio::fs::metadata(&self.path).await {
                Ok(meta) => Some(meta.len()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(io_error(&self.path)(e)),
            };
            if length.is_none_or(|l| l < position) {
                let has =
                    length.map_or_else(|| "is not there".to_owned(), |l| format!("has {l} bytes"));
                return Err(AdapterError::Config(format!(
                    "the checkpoint says {} had {position} bytes written, but it {has}: it was changed since; restore it, or remove the checkpoint directory to start over",
                    self.path.display()
                )));
            }
        }
        let mut file = tokio::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&self.path)
            .await
            .map_err(io_error(&self.path))?;
        file.set_len(position).await.map_err(io_error(&self.path))?;
        file.seek(std::io::SeekFrom::Start(position))
            .await
            .map_err(io_error(&self.path))?;
        self.file = Some(file.try_clone().await.map_err(io_error(&self.path))?);
        self.out = Some(BufWriter::with_capacity(
            crate::replay::FILE_BUFFER,
            Box::new(file),
        ));
        self.written = position;
        Ok(())
    }

    async fn finish(&mut self, _report: &QueryReport) -> Result<(), AdapterError> {
        if self.out.is_none() && self.path.as_os_str() != "-" {
            // An empty output still leaves an (empty) file behind.
            self.write(&Batch::new()).await?;
        }
        self.idle().await
    }
}
