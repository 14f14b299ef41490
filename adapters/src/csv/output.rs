//! CSV outputs: a header first, then one record per result (and per CTI where the layout has
//! them), every record with the header's columns, times in the configured format.

use std::marker::PhantomData;
use std::path::PathBuf;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncWrite, AsyncWriteExt, BufWriter};

use punctual_core::{Batch, EventKind, EventShape, StreamItem, Time};

use super::join_record;
use crate::jsonl::io_error;
use crate::layout::{time_text, RowLayout, Rows};
use crate::line::TimeFormat;
use crate::replay::open_sink;
use punctual_runtime::adapter::{OutputAdapter, OutputAdapterFactory, Payload};
use punctual_runtime::error::AdapterError;
use punctual_runtime::query::QueryReport;

/// Configuration of [`CsvOutput`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CsvOutputConfig {
    /// The file to write (created or truncated); `-` is standard output.
    pub path: PathBuf,
    /// How times are written (default: integer ticks).
    #[serde(default)]
    pub time_format: TimeFormat,
    /// Flat rows by this layout instead of items (default: items, CTIs included).
    #[serde(default)]
    pub rows: Option<RowLayout>,
}

impl CsvOutputConfig {
    /// Write to `path`, as items with times in ticks.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        CsvOutputConfig {
            path: path.into(),
            time_format: TimeFormat::Auto,
            rows: None,
        }
    }

    /// Times written in `format`.
    pub fn time_format(mut self, format: TimeFormat) -> Self {
        self.time_format = format;
        self
    }

    /// Each result as a flat row: its time columns, then its fields ([`crate::layout`]).
    ///
    /// ```
    /// use punctual_adapters::layout::RowLayout;
    /// use punctual_adapters::CsvOutputConfig;
    /// let config = CsvOutputConfig::new("out.csv").rows(RowLayout::default());
    /// assert!(config.rows.is_some());
    /// ```
    pub fn rows(mut self, layout: RowLayout) -> Self {
        self.rows = Some(layout);
        self
    }
}

/// Factory of CSV outputs. As items: a header `kind,start,end` and the payload's fields, one
/// record per event (`point`, `interval`, `start`, `end`) and per CTI (`cti,TIME,` and empty
/// fields). As rows ([`CsvOutputConfig::rows`]): the time columns and the payload's fields,
/// with a first column `kind` only if CTIs are written. The payload's fields are the first
/// result's (a payload that is not an object is one column, `payload`); a later result with a
/// field the header lacks fails the output (CSV has one set of columns: write JSON lines), one
/// without a field leaves its cell empty. CTIs before the first result wait for the header.
#[derive(Clone, Copy, Debug, Default)]
pub struct CsvOutput;

/// Writes a stream as CSV.
pub struct CsvWriter<P> {
    path: PathBuf,
    out: Option<BufWriter<Box<dyn AsyncWrite + Unpin + Send + Sync>>>,
    format: TimeFormat,
    rows: Option<Rows>,
    /// The payload's columns, once the header is written.
    columns: Option<Vec<String>>,
    /// CTIs before the header.
    waiting: Vec<Time>,
    /// The header's number of columns, once written.
    width: usize,
    _payload: PhantomData<fn(P)>,
}

impl<P> std::fmt::Debug for CsvWriter<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CsvWriter")
            .field("path", &self.path)
            .finish()
    }
}

impl<P: Payload + Serialize> OutputAdapterFactory<CsvOutputConfig, P> for CsvOutput {
    type Adapter = CsvWriter<P>;

    fn create(
        &self,
        config: &CsvOutputConfig,
        shape: EventShape,
    ) -> Result<CsvWriter<P>, AdapterError> {
        Ok(CsvWriter {
            path: config.path.clone(),
            out: None,
            format: config.time_format,
            rows: config
                .rows
                .clone()
                .map(|layout| Rows::new(layout, shape, config.time_format)),
            columns: None,
            waiting: Vec::new(),
            width: 0,
            _payload: PhantomData,
        })
    }
}

fn cell(v: Option<&serde_json::Value>) -> String {
    match v {
        None | Some(serde_json::Value::Null) => String::new(),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

impl<P> CsvWriter<P> {
    /// Whether CTIs are written.
    fn ctis(&self) -> bool {
        self.rows.as_ref().is_none_or(Rows::ctis)
    }

    /// The header's line for payload columns `columns` (their names when the first result
    /// has them, to leave out time columns of the same names).
    fn header(&mut self, columns: &[String], fields: Option<&[String]>) -> Vec<String> {
        let mut header = match self.rows.as_mut() {
            None => ["kind", "start", "end"].map(String::from).to_vec(),
            Some(rows) => {
                let kind = rows.ctis().then(|| "kind".to_owned());
                kind.into_iter().chain(rows.time_names(fields)).collect()
            }
        };
        header.extend(columns.iter().cloned());
        header
    }

    /// A CTI's record: its kind, its time in the first time column, the rest empty.
    fn cti_record(&mut self, t: Time, width: usize) -> Vec<String> {
        let mut fields = vec!["cti".to_owned(), time_text(self.format, t)];
        fields.resize(width.max(2), String::new());
        fields
    }

    /// An event's record: its kind (as items, or as rows with CTIs) and time cells.
    fn event_cells(&mut self, kind: EventKind) -> Vec<String> {
        let format = self.format;
        match self.rows.as_mut() {
            None => {
                let (name, start, end) = match kind {
                    EventKind::Point(t) => ("point", t, None),
                    EventKind::Interval { start, end } => ("interval", start, Some(end)),
                    EventKind::StartEdge(s) => ("start", s, None),
                    EventKind::EndEdge { start, end } => ("end", start, Some(end)),
                };
                vec![
                    name.to_owned(),
                    time_text(format, start),
                    end.map(|e| time_text(format, e)).unwrap_or_default(),
                ]
            }
            Some(rows) => {
                let kind_cell = rows.ctis().then(|| "event".to_owned());
                kind_cell.into_iter().chain(rows.time_cells(kind)).collect()
            }
        }
    }
}

#[async_trait]
impl<P: Payload + Serialize> OutputAdapter<P> for CsvWriter<P> {
    async fn write(&mut self, batch: &Batch<P>) -> Result<(), AdapterError> {
        if self.out.is_none() {
            self.out = Some(open_sink(&self.path).await?);
        }
        let mut text = String::new();
        let line = |fields: &[String], text: &mut String| {
            text.push_str(&join_record(fields, ','));
            text.push('\n');
        };
        for item in batch.items() {
            match item {
                StreamItem::Cti(_) if !self.ctis() => {}
                StreamItem::Cti(t) if self.columns.is_none() => self.waiting.push(t),
                StreamItem::Cti(t) => {
                    let width = self.width;
                    line(&self.cti_record(t, width), &mut text);
                }
                StreamItem::Insert(e) => {
                    let value = serde_json::to_value(e.payload).map_err(AdapterError::other)?;
                    if self.columns.is_none() {
                        let (columns, fields) = match &value {
                            serde_json::Value::Object(m) => {
                                let keys: Vec<String> = m.keys().cloned().collect();
                                (keys.clone(), Some(keys))
                            }
                            _ => (vec!["payload".to_owned()], None),
                        };
                        let header = self.header(&columns, fields.as_deref());
                        line(&header, &mut text);
                        self.columns = Some(columns);
                        self.width = header.len();
                        let width = self.width;
                        for t in std::mem::take(&mut self.waiting) {
                            line(&self.cti_record(t, width), &mut text);
                        }
                    }
                    let mut fields = self.event_cells(e.kind);
                    let columns = self.columns.as_deref().unwrap_or_default();
                    match &value {
                        serde_json::Value::Object(m) => {
                            if let Some(extra) = m.keys().find(|k| !columns.contains(k)) {
                                return Err(AdapterError::Config(format!(
                                    "{}: a result has a field `{extra}` that the first result (the header: {}) does not have; CSV writes one set of columns, so give every result the same fields or write JSON lines",
                                    self.path.display(),
                                    columns.join(", ")
                                )));
                            }
                            fields.extend(columns.iter().map(|c| cell(m.get(c))));
                        }
                        v => fields.push(cell(Some(v))),
                    }
                    line(&fields, &mut text);
                }
            }
        }
        if let Some(out) = self.out.as_mut() {
            out.write_all(text.as_bytes())
                .await
                .map_err(io_error(&self.path))?;
        }
        Ok(())
    }

    async fn idle(&mut self) -> Result<(), AdapterError> {
        if let Some(out) = self.out.as_mut() {
            out.flush().await.map_err(io_error(&self.path))?;
        }
        Ok(())
    }

    /// With no result at all, the header of the time columns (and the CTIs) is still written.
    async fn finish(&mut self, _report: &QueryReport) -> Result<(), AdapterError> {
        if self.columns.is_none() {
            if self.out.is_none() {
                self.out = Some(open_sink(&self.path).await?);
            }
            let header = self.header(&[], None);
            self.columns = Some(Vec::new());
            self.width = header.len();
            let width = self.width;
            let mut text = join_record(&header, ',');
            text.push('\n');
            for t in std::mem::take(&mut self.waiting) {
                text.push_str(&join_record(&self.cti_record(t, width), ','));
                text.push('\n');
            }
            if let Some(out) = self.out.as_mut() {
                out.write_all(text.as_bytes())
                    .await
                    .map_err(io_error(&self.path))?;
            }
        }
        self.idle().await
    }
}
