//! The JSON-lines form of stream items, shared by the JSON-lines adapters, the CLI and the
//! conformance runner.
//!
//! ```text
//! {"kind":"point","start":5,"payload":{...}}
//! {"kind":"interval","start":5,"end":9,"payload":{...}}
//! {"kind":"start","start":5,"payload":{...}}            start edge
//! {"kind":"end","start":5,"end":9,"payload":{...}}      end edge closing the start edge at 5
//! {"kind":"cti","time":10}
//! ```
//! Times are integer ticks, RFC 3339 text, or `"inf"`/`"-inf"`. Input lines may also carry
//! `"stream"` (the conformance runner's arrivals), `"arrival"` (an arrival time), `"partition"`
//! (the input partition it came from) and the kinds `"eof"` (that stream's input has ended) and
//! `"clock"` (a reading of the query's clock at `"time"`, conformance cases only); the adapters
//! refuse what they do not understand.
//!
//! ```
//! use punctual_adapters::line::{parse_line, item_to_json};
//! use punctual_core::{StreamItem, Time};
//! use punctual_rows::{Row};
//! let line = parse_line::<Row>(r#"{"kind":"interval","start":5,"end":"inf","payload":{"id":1}}"#).unwrap();
//! let item = line.into_item().unwrap().unwrap();
//! assert_eq!(item_to_json(item.as_ref()).to_string(), r#"{"kind":"start","start":5,"payload":{"id":1}}"#);
//! ```

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use punctual_core::{Event, EventKind, Rfc3339, StreamItem, Time};

/// The `kind` field of a line.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineKind {
    /// A point event.
    Point,
    /// An interval event.
    Interval,
    /// A start edge.
    Start,
    /// An end edge.
    End,
    /// A CTI.
    Cti,
    /// The end of one stream's input.
    Eof,
    /// A reading of the query's clock, at `time` (conformance arrivals: the watermark
    /// strategies' clock); not an item.
    Clock,
}

/// One parsed input line, before it becomes an item.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, bound(deserialize = "P: Deserialize<'de>"))]
pub struct Line<P> {
    /// The stream it belongs to (conformance arrivals).
    #[serde(default)]
    pub stream: Option<String>,
    /// What it is.
    pub kind: LineKind,
    /// Start time of an event.
    #[serde(default)]
    pub start: Option<Time>,
    /// End time of an interval or end edge.
    #[serde(default)]
    pub end: Option<Time>,
    /// Time of a CTI.
    #[serde(default)]
    pub time: Option<Time>,
    /// Payload of an event.
    #[serde(default = "none")]
    pub payload: Option<P>,
    /// Arrival time, for the watermark strategies.
    #[serde(default)]
    pub arrival: Option<Time>,
    /// The input partition it came from, for the watermark strategies.
    #[serde(default)]
    pub partition: Option<usize>,
}

fn none<P>() -> Option<P> {
    None
}

/// Why a line is not an item.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LineError {
    /// Not JSON, or not the shape of a line.
    #[error("{0}")]
    Json(String),
    /// A field that the kind needs is missing.
    #[error("a `{kind}` line needs the field `{field}`")]
    Missing {
        /// The line's kind.
        kind: &'static str,
        /// The missing field.
        field: &'static str,
    },
    /// A `clock` line: a reading of the query's clock in a conformance case, not an item.
    #[error("a `clock` line is a clock reading of a conformance case, not an item")]
    NotAnItem,
}

/// Parses one JSON line (not yet checked for the fields its kind needs).
pub fn parse_line<P: DeserializeOwned>(text: &str) -> Result<Line<P>, LineError> {
    serde_json::from_str(text).map_err(|e| LineError::Json(e.to_string()))
}

impl<P> Line<P> {
    /// The item the line describes, or `None` for an `eof` line. A missing payload is an error
    /// unless `P` has a default (use [`Line::into_item_or_default`]).
    pub fn into_item(self) -> Result<Option<StreamItem<P>>, LineError> {
        self.into_item_with(|| None)
    }

    /// Like [`Line::into_item`], with `P::default()` for a missing payload.
    pub fn into_item_or_default(self) -> Result<Option<StreamItem<P>>, LineError>
    where
        P: Default,
    {
        self.into_item_with(|| Some(P::default()))
    }

    fn into_item_with(
        self,
        default: impl FnOnce() -> Option<P>,
    ) -> Result<Option<StreamItem<P>>, LineError> {
        let name = self.kind_name();
        let need = |v: Option<Time>, field| v.ok_or(LineError::Missing { kind: name, field });
        let kind = match self.kind {
            LineKind::Eof => return Ok(None),
            LineKind::Clock => return Err(LineError::NotAnItem),
            LineKind::Cti => return Ok(Some(StreamItem::Cti(need(self.time, "time")?))),
            LineKind::Point => EventKind::Point(need(self.start, "start")?),
            LineKind::Interval => EventKind::Interval {
                start: need(self.start, "start")?,
                end: need(self.end, "end")?,
            },
            LineKind::Start => EventKind::StartEdge(need(self.start, "start")?),
            LineKind::End => EventKind::EndEdge {
                start: need(self.start, "start")?,
                end: need(self.end, "end")?,
            },
        };
        let payload = self.payload.or_else(default).ok_or(LineError::Missing {
            kind: name,
            field: "payload",
        })?;
        Ok(Some(StreamItem::Insert(Event { kind, payload })))
    }

    fn kind_name(&self) -> &'static str {
        match self.kind {
            LineKind::Point => "point",
            LineKind::Interval => "interval",
            LineKind::Start => "start",
            LineKind::End => "end",
            LineKind::Cti => "cti",
            LineKind::Eof => "eof",
            LineKind::Clock => "clock",
        }
    }
}

#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum OutLine<'a, P> {
    Point {
        start: Stamp,
        payload: &'a P,
    },
    Interval {
        start: Stamp,
        end: Stamp,
        payload: &'a P,
    },
    Start {
        start: Stamp,
        payload: &'a P,
    },
    End {
        start: Stamp,
        end: Stamp,
        payload: &'a P,
    },
    Cti {
        time: Stamp,
    },
}

/// A time as a format writes it ([`TimeFormat::write`]; ticks as the time writes itself).
struct Stamp(Time, TimeFormat);

impl Serialize for Stamp {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.1.written(self.0).serialize(s)
    }
}

/// The output line of an item, its times in `format`. An event one tick long is a `point`,
/// an interval ending at `+inf` a `start` edge (see [`punctual_core::event`]).
fn out_line<P>(item: StreamItem<&P>, format: TimeFormat) -> OutLine<'_, P> {
    let at = |t| Stamp(t, format);
    match item {
        StreamItem::Cti(time) => OutLine::Cti { time: at(time) },
        StreamItem::Insert(e) => {
            let (sync, other) = e.kind.encode();
            match EventKind::decode(sync, other) {
                EventKind::Point(start) => OutLine::Point {
                    start: at(start),
                    payload: e.payload,
                },
                EventKind::Interval { start, end } => OutLine::Interval {
                    start: at(start),
                    end: at(end),
                    payload: e.payload,
                },
                EventKind::StartEdge(start) => OutLine::Start {
                    start: at(start),
                    payload: e.payload,
                },
                EventKind::EndEdge { start, end } => OutLine::End {
                    start: at(start),
                    end: at(end),
                    payload: e.payload,
                },
            }
        }
    }
}

/// The JSON form of an output item. An event one tick long is written as a `point`, an interval
/// ending at `+inf` as a `start` edge (see [`punctual_core::event`]).
pub fn item_to_json<P: Serialize>(item: StreamItem<&P>) -> serde_json::Value {
    item_to_json_as(item, TimeFormat::Auto)
}

/// How event times are written in a record's field (flat JSON lines, CSV columns) and in
/// output lines.
///
/// ```
/// use punctual_adapters::line::TimeFormat;
/// use punctual_core::Time;
/// let t = TimeFormat::EpochMs.read_text("1500").unwrap();
/// assert_eq!(t, Time::from_ticks(15_000_000));
/// assert_eq!(TimeFormat::Rfc3339.write(t), serde_json::json!("1970-01-01T00:00:01.5Z"));
/// assert_eq!("ms".parse::<TimeFormat>(), Ok(TimeFormat::EpochMs));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TimeFormat {
    /// What an input whose format is not declared reads: RFC 3339 text. A number is refused
    /// with the fix named ([`NUMBER_WITHOUT_UNIT`]): whether it counts milliseconds, seconds or
    /// ticks is never guessed. Written as integer ticks (the items format's own).
    #[default]
    Auto,
    /// RFC 3339 text (`2026-12-01T10:00:00Z`, offsets and fractions allowed).
    Rfc3339,
    /// Milliseconds since 1970-01-01T00:00:00Z.
    EpochMs,
    /// Seconds since 1970-01-01T00:00:00Z (fractions allowed when read).
    EpochS,
    /// Ticks of 100 ns since 1970-01-01T00:00:00Z.
    Ticks,
    /// RFC 3339 text, where a time written without an offset (`2014-01-01T06:01:00`) is at
    /// this many seconds east of UTC (`-28800`: eight hours behind), as the input declares
    /// it (`zone = "-08:00"`); a time with an offset keeps its own. Written as `Rfc3339`.
    ///
    /// ```
    /// use punctual_adapters::line::TimeFormat;
    /// let pacific = TimeFormat::Rfc3339At(-8 * 3600);
    /// let t = pacific.read_text("2014-01-01T06:01:00").unwrap();
    /// assert_eq!(t.rfc3339(), "2014-01-01T14:01:00Z");
    /// assert_eq!(pacific.read_text("2014-01-01T06:01:00Z").unwrap().rfc3339(), "2014-01-01T06:01:00Z");
    /// ```
    Rfc3339At(i32),
}

/// A UTC offset as written after a time: `Z`, `+01:00`, `-08:00`, in seconds east of UTC.
///
/// ```
/// use punctual_adapters::line::utc_offset;
/// assert_eq!(utc_offset("-08:00"), Ok(-28_800));
/// assert_eq!(utc_offset("Z"), Ok(0));
/// assert!(utc_offset("PST").unwrap_err().contains("+HH:MM"));
/// ```
pub fn utc_offset(text: &str) -> Result<i32, String> {
    let bad = || format!("`{text}` is not a UTC offset: write Z, +HH:MM or -HH:MM (-08:00)");
    if text.eq_ignore_ascii_case("z") {
        return Ok(0);
    }
    let (sign, rest) = match text.as_bytes().first() {
        Some(b'+') => (1, &text[1..]),
        Some(b'-') => (-1, &text[1..]),
        _ => return Err(bad()),
    };
    let (h, m) = rest.split_once(':').ok_or_else(bad)?;
    let h: i32 = h.parse().map_err(|_| bad())?;
    let m: i32 = m.parse().map_err(|_| bad())?;
    if h.to_string().len() > 2 || h > 23 || !(0..60).contains(&m) || rest.len() != 5 {
        return Err(bad());
    }
    Ok(sign * (h * 3600 + m * 60))
}

/// `text` read as RFC 3339, at `offset` seconds east of UTC when it gives no offset.
fn rfc3339_at(text: &str, offset: i32) -> Result<Time, String> {
    match Time::parse_rfc3339(text) {
        Ok(t) => Ok(t),
        Err(first) => {
            let (sign, abs) = if offset < 0 {
                ('-', -offset)
            } else {
                ('+', offset)
            };
            let zoned = format!("{text}{sign}{:02}:{:02}", abs / 3600, abs % 3600 / 60);
            Time::parse_rfc3339(&zoned).map_err(|_| first.to_string())
        }
    }
}

impl std::str::FromStr for TimeFormat {
    type Err = String;

    /// `auto`, `rfc3339`, `epoch-ms` (or `ms`), `epoch-s` (or `s`), `ticks`.
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "auto" => TimeFormat::Auto,
            "rfc3339" => TimeFormat::Rfc3339,
            "epoch-ms" | "ms" => TimeFormat::EpochMs,
            "epoch-s" | "s" => TimeFormat::EpochS,
            "ticks" => TimeFormat::Ticks,
            other => {
                return Err(format!(
                    "`{other}` is not a time format (rfc3339, epoch-ms, epoch-s, ticks, auto)"
                ))
            }
        })
    }
}

/// Why a number in a time field whose format is not declared is refused, with the fix.
pub const NUMBER_WITHOUT_UNIT: &str = "is a number, and what it counts is not declared: \
     set the input's time format to epoch-ms, epoch-s or ticks \
     (`time_format = \"epoch-ms\"` on a job's input, `--time-format epoch-ms` on `query` \
     and `pipe`), or write the times as RFC 3339 text";

impl TimeFormat {
    fn scaled(n: f64, per: f64) -> Result<Time, String> {
        let ticks = (n * per).round();
        if ticks.is_finite() && ticks.abs() < 9.2e18 {
            Ok(Time::from_ticks(ticks as i64))
        } else {
            Err(format!("{n} is out of the range of times"))
        }
    }

    /// A time from text (a CSV field).
    pub fn read_text(self, text: &str) -> Result<Time, String> {
        let text = crate::numbers::trim(text);
        let number = |what: &str| {
            text.parse::<f64>()
                .map_err(|_| format!("`{text}` is not {what}"))
        };
        match self {
            TimeFormat::Auto => Time::parse_rfc3339(text).map_err(|e| {
                if text.parse::<f64>().is_ok() {
                    format!("`{text}` {NUMBER_WITHOUT_UNIT}")
                } else {
                    e.to_string()
                }
            }),
            TimeFormat::Rfc3339 => Time::parse_rfc3339(text).map_err(|e| e.to_string()),
            TimeFormat::Rfc3339At(offset) => rfc3339_at(text, offset),
            TimeFormat::EpochMs => match crate::numbers::parse_i64(text) {
                Ok(ms) => ms
                    .checked_mul(10_000)
                    .map(Time::from_ticks)
                    .ok_or_else(|| format!("{ms} ms is out of the range of times")),
                Err(_) => Self::scaled(number("a number of milliseconds")?, 1e4),
            },
            TimeFormat::EpochS => match crate::numbers::parse_i64(text) {
                Ok(s) => s
                    .checked_mul(10_000_000)
                    .map(Time::from_ticks)
                    .ok_or_else(|| format!("{s} s is out of the range of times")),
                Err(_) => Self::scaled(number("a number of seconds")?, 1e7),
            },
            TimeFormat::Ticks => crate::numbers::parse_i64(text)
                .map(Time::from_ticks)
                .map_err(|_| format!("`{text}` is not a whole number of ticks")),
        }
    }

    /// A time from a JSON value (a field of a flat JSON line).
    pub fn read(self, v: &serde_json::Value) -> Result<Time, String> {
        match v {
            serde_json::Value::String(s) => match self {
                TimeFormat::Auto | TimeFormat::Rfc3339 => {
                    Time::parse_rfc3339(s).map_err(|e| e.to_string())
                }
                _ => self.read_text(s),
            },
            serde_json::Value::Number(n) => match self {
                TimeFormat::Rfc3339 | TimeFormat::Rfc3339At(_) => {
                    Err(format!("{n} is a number, not RFC 3339 text"))
                }
                _ => self.read_text(&n.to_string()),
            },
            other => Err(format!("{other} is not a time")),
        }
    }

    /// A time as this format writes it (`Auto` as ticks); the infinities as `"inf"` and
    /// `"-inf"`.
    pub fn write(self, t: Time) -> serde_json::Value {
        match self.written(t) {
            Written::Int(i) => serde_json::Value::from(i),
            Written::Float(x) => serde_json::Value::from(x),
            Written::Text(text) => serde_json::Value::from(text.as_str()),
            Written::Word(w) => serde_json::Value::from(w),
        }
    }

    /// What [`TimeFormat::write`] writes, not made a JSON value yet (nothing allocated).
    pub(crate) fn written(self, t: Time) -> Written {
        if t == Time::INF {
            return Written::Word("inf");
        }
        if t == Time::NEG_INF {
            return Written::Word("-inf");
        }
        match self {
            TimeFormat::Auto | TimeFormat::Ticks => Written::Int(t.ticks()),
            TimeFormat::Rfc3339 | TimeFormat::Rfc3339At(_) => Written::Text(t.rfc3339()),
            TimeFormat::EpochMs => Written::Int(t.ticks().div_euclid(10_000)),
            TimeFormat::EpochS => {
                let ticks = t.ticks();
                if ticks % 10_000_000 == 0 {
                    Written::Int(ticks / 10_000_000)
                } else {
                    Written::Float(ticks as f64 / 1e7)
                }
            }
        }
    }
}

/// A time as a format writes it ([`TimeFormat::write`]), serialized as it is.
pub(crate) enum Written {
    Int(i64),
    Float(f64),
    Text(Rfc3339),
    Word(&'static str),
}

impl Serialize for Written {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Written::Int(i) => s.serialize_i64(*i),
            Written::Float(x) => s.serialize_f64(*x),
            Written::Text(text) => s.serialize_str(text),
            Written::Word(w) => s.serialize_str(w),
        }
    }
}

/// [`item_to_json`] with its times (`start`, `end`, `time`) written in `format`.
pub fn item_to_json_as<P: Serialize>(
    item: StreamItem<&P>,
    format: TimeFormat,
) -> serde_json::Value {
    serde_json::to_value(out_line(item, format)).unwrap_or(serde_json::Value::Null)
}

/// Appends the line of [`item_to_json_as`] to `out` (without its line end), written as it
/// is serialized: no JSON value in between.
///
/// ```
/// use punctual_adapters::line::{write_item_as, TimeFormat};
/// use punctual_core::{StreamItem, Time};
/// let mut line = Vec::new();
/// write_item_as(StreamItem::point(Time::from_ticks(10_000), &7), TimeFormat::EpochMs, &mut line).unwrap();
/// assert_eq!(line, br#"{"kind":"point","start":1,"payload":7}"#);
/// ```
pub fn write_item_as<P: Serialize>(
    item: StreamItem<&P>,
    format: TimeFormat,
    out: &mut Vec<u8>,
) -> Result<(), serde_json::Error> {
    // The line's frame is written as bytes (its keys and times need no escaping), the payload
    // by serde: per output line, serializing the frame through serde cost a sixth of a
    // job's time.
    let stamp = |out: &mut Vec<u8>, key: &[u8], t: Time| {
        out.extend_from_slice(key);
        format.written(t).write_json(out)
    };
    let e = match item {
        StreamItem::Cti(t) => {
            out.extend_from_slice(br#"{"kind":"cti""#);
            stamp(out, br#","time":"#, t)?;
            out.push(b'}');
            return Ok(());
        }
        StreamItem::Insert(e) => e,
    };
    let (sync, other) = e.kind.encode();
    let (kind, start, end): (&[u8], _, _) = match EventKind::decode(sync, other) {
        EventKind::Point(start) => (b"point", start, None),
        EventKind::Interval { start, end } => (b"interval", start, Some(end)),
        EventKind::StartEdge(start) => (b"start", start, None),
        EventKind::EndEdge { start, end } => (b"end", start, Some(end)),
    };
    out.extend_from_slice(br#"{"kind":"#);
    quoted(out, kind);
    stamp(out, br#","start":"#, start)?;
    if let Some(end) = end {
        stamp(out, br#","end":"#, end)?;
    }
    out.extend_from_slice(br#","payload":"#);
    serde_json::to_writer(&mut *out, e.payload)?;
    out.push(b'}');
    Ok(())
}

/// Appends `text` (which needs no escaping) as a JSON string.
impl Written {
    /// Appends the time as a JSON value: text needs no escaping (digits, `-:.TZ+`, `inf`).
    pub(crate) fn write_json(self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        match self {
            Written::Text(text) => quoted(out, text.as_bytes()),
            Written::Word(word) => quoted(out, word.as_bytes()),
            number => serde_json::to_writer(&mut *out, &number)?,
        }
        Ok(())
    }
}

fn quoted(out: &mut Vec<u8>, text: &[u8]) {
    out.push(b'"');
    out.extend_from_slice(text);
    out.push(b'"');
}

mod format;
pub use format::LineFormat;

#[cfg(test)]
mod tests;
