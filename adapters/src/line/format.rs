//! [`LineFormat`]: how an input reads each line of JSON (an item, a flat record timed by a
//! field, or a record of a static table).

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use punctual_core::{StreamItem, Time};

use super::{parse_line, Line, TimeFormat};

/// How an input reads each line of JSON: as an item in the form above (the default), or as a
/// flat record, a JSON object that is the payload, with its event time in one of its fields (a
/// point). Every line-reading input takes one: files, TCP, Kafka and MQTT.
///
/// ```
/// use punctual_adapters::line::{LineFormat, TimeFormat};
/// use punctual_core::{StreamItem, Time};
/// use punctual_rows::{Row};
/// let items = LineFormat::default();
/// let item = items.read::<Row>(r#"{"kind":"point","start":5,"payload":{"id":1}}"#).unwrap();
/// assert_eq!(item, Some(StreamItem::point(Time::from_ticks(5), Row::new().with("id", 1))));
/// // Flat records timed by `ts` in epoch milliseconds, read for the field `device` only.
/// let flat = LineFormat::flat("ts", TimeFormat::EpochMs).fields(["device"]);
/// let item = flat.read::<Row>(r#"{"ts":1000,"device":"a","v":3}"#).unwrap();
/// let at = Time::from_ticks(1000 * 10_000); // 1 s after the epoch
/// assert_eq!(item, Some(StreamItem::point(at, Row::new().with("device", "a"))));
/// assert_eq!(
///     flat.read::<Row>(r#"{"device":"a"}"#).unwrap_err(),
///     "no field `ts` (the event time)"
/// );
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LineFormat {
    /// Flat records: the field that holds each record's event time. `None`: items.
    #[serde(default)]
    pub time_field: Option<String>,
    /// How the time field is written (default: integers are ticks, text is RFC 3339).
    #[serde(default)]
    pub time_format: TimeFormat,
    /// Flat records: the fields each payload is read from (default: all; see
    /// [`LineFormat::fields`]).
    #[serde(default)]
    pub fields: Option<Vec<String>>,
    /// Flat records without a time (no `time_field`): a static table, each record valid for
    /// all time (an interval from the first finite time to the last), as reference data.
    #[serde(default)]
    pub table: bool,
    /// Flat records: the field that holds each record's arrival time (when it reached the
    /// source, written as the time field is), for Stream Analytics' arrival-time tolerances
    /// and substreams (see [`LineFormat::arrival`]). `None`: the records carry none.
    #[serde(default)]
    pub arrival: Option<String>,
}

impl LineFormat {
    /// Flat records (each line a JSON object, the payload) whose field `field` holds the event
    /// time, written in `format`.
    pub fn flat(field: impl Into<String>, format: TimeFormat) -> Self {
        LineFormat {
            time_field: Some(field.into()),
            time_format: format,
            fields: None,
            table: false,
            arrival: None,
        }
    }

    /// Flat records without a time: a static table, each record valid for all time.
    ///
    /// ```
    /// use punctual_adapters::line::LineFormat;
    /// use punctual_core::{StreamItem, Time};
    /// use punctual_rows::Row;
    /// let item = LineFormat::table().read::<Row>(r#"{"device":"a","max":30}"#).unwrap();
    /// let row = Row::new().with("device", "a").with("max", 30);
    /// assert_eq!(item, Some(StreamItem::interval(Time::MIN_FINITE, Time::MAX_FINITE, row)));
    /// ```
    pub fn table() -> Self {
        LineFormat {
            table: true,
            ..LineFormat::default()
        }
    }

    /// Flat records: reads each payload from these fields only (the time field is read for
    /// the event's time either way); the others are skipped as the line is read, not parsed
    /// into values. For a payload of dynamic fields (a `Row`), the fields a query reads: a
    /// narrow row is cheaper to build and to move. A line without one of them is read without
    /// it.
    pub fn fields<S: Into<String>>(mut self, fields: impl IntoIterator<Item = S>) -> Self {
        self.fields = Some(fields.into_iter().map(Into::into).collect());
        self
    }

    /// Flat records: the field `field` holds each record's arrival time (as a broker stamps
    /// it, Event Hubs' `EventEnqueuedUtcTime`), written in the time field's format; an input
    /// reads it with [`LineFormat::read_arrived`] and enqueues each event with it, for a
    /// watermark strategy that judges events by their arrival (`Watermark::arrival`). The
    /// field stays in the payload when the payload reads it.
    ///
    /// ```
    /// use punctual_adapters::line::{LineFormat, TimeFormat};
    /// use punctual_core::Time;
    /// use punctual_rows::Row;
    /// let lines = LineFormat::flat("t", TimeFormat::Rfc3339).arrival("arrived");
    /// let text = r#"{"t":"2026-12-01T10:00:00Z","arrived":"2026-12-01T10:00:40Z","v":1}"#;
    /// let (_item, at) = lines.read_arrived::<Row>(text).unwrap();
    /// assert_eq!(at, Some(Time::parse_rfc3339("2026-12-01T10:00:40Z").unwrap()));
    /// let missing = lines.read_arrived::<Row>(r#"{"t":"2026-12-01T10:00:00Z"}"#);
    /// assert_eq!(missing.unwrap_err(), "no field `arrived` (the arrival time)");
    /// ```
    pub fn arrival(mut self, field: impl Into<String>) -> Self {
        self.arrival = Some(field.into());
        self
    }

    /// [`LineFormat::read`], and the line's arrival time when the format names its field
    /// ([`LineFormat::arrival`]): a line without it, or with a value that is not a time, is
    /// an error that says so.
    pub fn read_arrived<P: DeserializeOwned>(
        &self,
        text: &str,
    ) -> Result<(Option<StreamItem<P>>, Option<Time>), String> {
        let item = self.read(text)?;
        let Some(field) = &self.arrival else {
            return Ok((item, None));
        };
        // Read aside from the payload: a second look at the line, for this field only.
        let mut at = None;
        let mut de = serde_json::Deserializer::from_str(text);
        serde::de::IgnoredAny::deserialize(crate::picked_fields::Only {
            de: &mut de,
            pick: crate::picked_fields::Pick::new(Some(&[]), Some((field, &mut at))),
        })
        .map_err(|e| e.to_string())?;
        let at = at.ok_or_else(|| format!("no field `{field}` (the arrival time)"))?;
        let at = self
            .time_format
            .read(&at)
            .map_err(|e| format!("field `{field}`: {e}"))?;
        Ok((item, Some(at)))
    }

    /// Whether lines are flat records (not items).
    pub fn is_flat(&self) -> bool {
        self.time_field.is_some() || self.table
    }

    /// The item one line gives; `None` for an item line of kind `eof` (the input has
    /// ended). An error says what is wrong with the line.
    pub fn read<P: DeserializeOwned>(&self, text: &str) -> Result<Option<StreamItem<P>>, String> {
        match &self.time_field {
            Some(field) => self.record(text, field).map(Some),
            None if self.table => {
                let mut de = serde_json::Deserializer::from_str(text);
                let payload = P::deserialize(crate::picked_fields::Only {
                    de: &mut de,
                    pick: crate::picked_fields::Pick::new(self.fields.as_deref(), None),
                })
                .and_then(|p| {
                    de.end()?;
                    Ok(p)
                })
                .map_err(|e| e.to_string())?;
                Ok(Some(StreamItem::interval(
                    Time::MIN_FINITE,
                    Time::MAX_FINITE,
                    payload,
                )))
            }
            None => parse_line::<P>(text)
                .and_then(Line::into_item)
                .map_err(|e| e.to_string()),
        }
    }

    /// One flat record, read once: the time on the way (a kept time field read once for
    /// both), with no JSON tree in between.
    fn record<P: DeserializeOwned>(
        &self,
        text: &str,
        field: &str,
    ) -> Result<StreamItem<P>, String> {
        let mut time = None;
        let mut de = serde_json::Deserializer::from_str(text);
        let payload = P::deserialize(crate::picked_fields::Only {
            de: &mut de,
            pick: crate::picked_fields::Pick::new(self.fields.as_deref(), Some((field, &mut time))),
        })
        .and_then(|p| {
            de.end()?;
            Ok(p)
        })
        .map_err(|e| e.to_string())?;
        let time = time.ok_or_else(|| format!("no field `{field}` (the event time)"))?;
        let at = self
            .time_format
            .read(&time)
            .map_err(|e| format!("field `{field}`: {e}"))?;
        Ok(StreamItem::point(at, payload))
    }
}
