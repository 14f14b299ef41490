//! How an output lays out its results: as items (`{"kind":"point","start":..,"payload":..}`
//! and CTIs, the form that round-trips through the inputs), or as flat rows, the form Stream
//! Analytics and Flink users expect: each result's fields beside its times, no CTIs unless
//! asked for ([`RowLayout`]).
//!
//! A flat row of a point stream has the point's time under [`RowLayout::time`]; of an interval
//! or edge stream, [`RowLayout::start`] and [`RowLayout::end`] (a start edge's end is empty:
//! still open; its end edge is a second row with the end). A result field with the name of a
//! time column is written as the result has it, in place of the time (the query named it).
//!
//! ```
//! use punctual_adapters::layout::{RowLayout, Rows};
//! use punctual_adapters::line::TimeFormat;
//! use punctual_core::{EventShape, StreamItem, Time};
//! use punctual_rows::{Row};
//! let mut rows = Rows::new(RowLayout::default(), EventShape::Point, TimeFormat::Rfc3339);
//! let mut line = Vec::new();
//! let row = Row::new().with("device", "a").with("n", 2);
//! rows.write_json(StreamItem::point(Time::from_ticks(10_000_000), &row), &mut line).unwrap();
//! assert_eq!(line, br#"{"time":"1970-01-01T00:00:01Z","device":"a","n":2}"#);
//! ```

use serde::{Deserialize, Serialize};

use punctual_core::{EventKind, EventShape, StreamItem, Time};

use crate::line::{TimeFormat, Written};

/// The names of a flat row's time columns, and whether CTIs are written among the rows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RowLayout {
    /// A point's time (default `time`).
    pub time: String,
    /// An interval's or edge's start (default `start`).
    pub start: String,
    /// An interval's or edge's end (default `end`; empty for a start edge).
    pub end: String,
    /// Whether CTIs are written too (default no): JSON lines `{"cti":TIME}`; CSV rows with a
    /// first column `kind` (`event` or `cti`), the CTI's time in the first time column.
    pub ctis: bool,
}

impl Default for RowLayout {
    fn default() -> Self {
        RowLayout {
            time: "time".into(),
            start: "start".into(),
            end: "end".into(),
            ctis: false,
        }
    }
}

/// Which time a column holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Column {
    /// A point's time, or an event's start.
    Start,
    /// An event's end.
    End,
}

/// A time column a row writes: which time, its name, and its name as a JSON key with its
/// colon (`"time":`), made once.
#[derive(Clone, Debug)]
struct TimeColumn {
    column: Column,
    name: String,
    key: Vec<u8>,
}

/// Writes results as flat rows by a [`RowLayout`]: the time columns are the stream's shape's
/// (a point stream's `time`, the others' `start` and `end`), less those the first result has
/// a field of the same name for.
#[derive(Clone, Debug)]
pub struct Rows {
    layout: RowLayout,
    shape: EventShape,
    format: TimeFormat,
    /// The time columns written, with their names (fixed at the first result).
    times: Option<Vec<TimeColumn>>,
    /// The payload as serialized, reused.
    scratch: Vec<u8>,
}

impl Rows {
    /// Rows of a stream of `shape`, times in `format`.
    pub fn new(layout: RowLayout, shape: EventShape, format: TimeFormat) -> Rows {
        Rows {
            layout,
            shape,
            format,
            times: None,
            scratch: Vec::new(),
        }
    }

    /// Whether CTIs are written.
    pub fn ctis(&self) -> bool {
        self.layout.ctis
    }

    /// The time columns for the shape, by name.
    fn all_times(&self) -> Vec<(Column, String)> {
        match self.shape {
            EventShape::Point => vec![(Column::Start, self.layout.time.clone())],
            EventShape::Interval | EventShape::Edge => vec![
                (Column::Start, self.layout.start.clone()),
                (Column::End, self.layout.end.clone()),
            ],
        }
    }

    /// The time columns, fixed by the first result's fields (`fields`) when there is one.
    fn times(&mut self, fields: Option<&[String]>) -> &[TimeColumn] {
        if self.times.is_none() {
            let mut all = self.all_times();
            if let Some(fields) = fields {
                all.retain(|(_, name)| !fields.contains(name));
            }
            let columns = all.into_iter().map(|(column, name)| {
                let mut key = serde_json::to_vec(&name).unwrap_or_default();
                key.push(b':');
                TimeColumn { column, name, key }
            });
            self.times = Some(columns.collect());
        }
        self.times.as_deref().unwrap_or_default()
    }

    /// The names of the time columns, as [`Rows::write_json`] and CSV headers write them:
    /// the first result's fields (`fields`) decide which are left out.
    pub fn time_names(&mut self, fields: Option<&[String]>) -> Vec<String> {
        self.times(fields).iter().map(|c| c.name.clone()).collect()
    }

    /// The text a time column holds for `kind` (empty for an open edge's end).
    pub fn time_cells(&mut self, kind: EventKind) -> Vec<String> {
        let format = self.format;
        self.times(None)
            .iter()
            .map(|c| match at(kind, c.column) {
                Some(t) => time_text(format, t),
                None => String::new(),
            })
            .collect()
    }

    /// Appends `item` as one JSON line (without its line end) and returns `true`, or writes
    /// nothing for a CTI the layout leaves out and returns `false`. A payload that is not a
    /// JSON object is written under `payload`.
    pub fn write_json<P: Serialize>(
        &mut self,
        item: StreamItem<&P>,
        out: &mut Vec<u8>,
    ) -> Result<bool, serde_json::Error> {
        let e = match item {
            StreamItem::Cti(t) => {
                if !self.layout.ctis {
                    return Ok(false);
                }
                out.extend_from_slice(br#"{"cti":"#);
                serde_json::to_writer(&mut *out, &self.format.written(t))?;
                out.push(b'}');
                return Ok(true);
            }
            StreamItem::Insert(e) => e,
        };
        self.scratch.clear();
        serde_json::to_writer(&mut self.scratch, e.payload)?;
        if self.times.is_none() {
            let fields = match serde_json::from_slice::<serde_json::Value>(&self.scratch) {
                Ok(serde_json::Value::Object(m)) => Some(m.keys().cloned().collect::<Vec<_>>()),
                _ => None,
            };
            self.times(fields.as_deref());
        }
        out.push(b'{');
        let mut first = true;
        let times = self.times.as_deref().unwrap_or_default();
        for c in times {
            if !first {
                out.push(b',');
            }
            first = false;
            out.extend_from_slice(&c.key);
            match at(e.kind, c.column) {
                Some(t) => self.format.written(t).write_json(out)?,
                None => out.extend_from_slice(b"null"),
            }
        }
        match self.scratch.as_slice() {
            [b'{', b'}'] => {}
            [b'{', rest @ ..] => {
                if !first {
                    out.push(b',');
                }
                // The object's fields, its closing brace closing the row.
                out.extend_from_slice(rest);
                return Ok(true);
            }
            payload => {
                if !first {
                    out.push(b',');
                }
                out.extend_from_slice(br#""payload":"#);
                out.extend_from_slice(payload);
            }
        }
        out.push(b'}');
        Ok(true)
    }
}

/// The time of `column` for an event of `kind`: a point's end is its next tick, an open
/// edge's end none.
fn at(kind: EventKind, column: Column) -> Option<Time> {
    match (column, kind) {
        (Column::Start, k) => Some(k.start()),
        (Column::End, EventKind::Point(t)) => Some(t.next_tick()),
        (Column::End, EventKind::Interval { end, .. } | EventKind::EndEdge { end, .. }) => {
            Some(end)
        }
        (Column::End, EventKind::StartEdge(_)) => None,
    }
}

/// A time as text in `format` (a CSV cell).
pub fn time_text(format: TimeFormat, t: Time) -> String {
    match format.written(t) {
        Written::Int(i) => i.to_string(),
        Written::Float(x) => x.to_string(),
        Written::Text(text) => text.as_str().to_owned(),
        Written::Word(w) => w.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use punctual_rows::Row;

    fn line<P: Serialize>(rows: &mut Rows, item: StreamItem<&P>) -> Option<String> {
        let mut out = Vec::new();
        rows.write_json(item, &mut out)
            .unwrap()
            .then(|| String::from_utf8(out).unwrap())
    }

    #[test]
    fn each_shape_has_its_time_columns() {
        let t = Time::from_ticks;
        let row = Row::new().with("v", 1);
        let mut points = Rows::new(RowLayout::default(), EventShape::Point, TimeFormat::Ticks);
        assert_eq!(
            line(&mut points, StreamItem::point(t(5), &row)).unwrap(),
            r#"{"time":5,"v":1}"#
        );
        assert_eq!(line(&mut points, StreamItem::<&Row>::cti(t(6))), None);
        let layout = RowLayout {
            start: "from".into(),
            end: "to".into(),
            ctis: true,
            ..RowLayout::default()
        };
        let mut edges = Rows::new(layout, EventShape::Edge, TimeFormat::Ticks);
        assert_eq!(
            line(&mut edges, StreamItem::start_edge(t(5), &row)).unwrap(),
            r#"{"from":5,"to":null,"v":1}"#
        );
        assert_eq!(
            line(&mut edges, StreamItem::end_edge(t(5), t(9), &row)).unwrap(),
            r#"{"from":5,"to":9,"v":1}"#
        );
        assert_eq!(
            line(&mut edges, StreamItem::point(t(7), &row)).unwrap(),
            r#"{"from":7,"to":8,"v":1}"#
        );
        assert_eq!(
            line(&mut edges, StreamItem::<&Row>::cti(Time::INF)).unwrap(),
            r#"{"cti":"inf"}"#
        );
        assert_eq!(edges.time_cells(EventKind::StartEdge(t(5))), ["5", ""]);
    }

    #[test]
    fn a_field_named_as_a_time_column_is_the_results_own() {
        let t = Time::from_ticks;
        let row = Row::new().with("time", "mine").with("v", 1);
        let mut rows = Rows::new(RowLayout::default(), EventShape::Point, TimeFormat::Ticks);
        assert_eq!(
            line(&mut rows, StreamItem::point(t(5), &row)).unwrap(),
            r#"{"time":"mine","v":1}"#
        );
        assert!(rows.time_names(None).is_empty());
        // Not an object, and an empty one.
        let mut rows = Rows::new(RowLayout::default(), EventShape::Point, TimeFormat::Ticks);
        assert_eq!(
            line(&mut rows, StreamItem::point(t(5), &7)).unwrap(),
            r#"{"time":5,"payload":7}"#
        );
        assert_eq!(
            line(&mut rows, StreamItem::point(t(5), &Row::new())).unwrap(),
            r#"{"time":5}"#
        );
    }
}
