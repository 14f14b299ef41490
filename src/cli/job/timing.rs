//! How a job input's records are timed: their time field (the job's `time`, or the query's
//! `TIMESTAMP BY`), the zone of times written without an offset, their arrival time, and the
//! query's `OVER` key.

use punctual_adapters::csv::Validity;
use punctual_sql::InputUse;

use super::*;

/// How an input's times are read: its `time_format` (undeclared: `Auto`), at its `zone`
/// when it gives one (RFC 3339 only).
pub(super) fn time_format(input: &JobInput) -> Result<TimeFormat, String> {
    match (&input.zone, input.time_format.unwrap_or(TimeFormat::Auto)) {
        (None, format) => Ok(format),
        (Some(zone), TimeFormat::Auto | TimeFormat::Rfc3339 | TimeFormat::Rfc3339At(_)) => {
            let offset = punctual_adapters::line::utc_offset(zone)
                .map_err(|e| format!("zone = \"{zone}\": {e}"))?;
            Ok(TimeFormat::Rfc3339At(offset))
        }
        (Some(zone), _) => Err(format!(
            "zone = \"{zone}\" says where RFC 3339 times without an offset are; epoch and tick times count from the epoch in UTC"
        )),
    }
}

/// How a line or message is read: a flat record timed by its field (and its arrival time
/// from `arrival`), with the fields the query reads only (all, if it reads whole records); a
/// record of a static table; or an item.
pub(super) fn line_format(
    u: &InputUse,
    input: &JobInput,
    (time, table): (Option<&str>, Option<&Validity>),
    time_format: TimeFormat,
) -> Result<punctual_adapters::line::LineFormat, String> {
    use punctual_adapters::line::LineFormat;
    let only_read = |lines: LineFormat| match &u.fields_read {
        Some(read) => lines.fields(read.iter().cloned()),
        None => lines,
    };
    let lines = match time {
        Some(time) => only_read(LineFormat::flat(time, time_format)),
        // A static table of JSON records (CSV tables are read by the CSV reader).
        None if matches!(table, Some(Validity::Always)) => only_read(LineFormat::table()),
        None => LineFormat::default(),
    };
    match (&input.arrival, time) {
        (Some(field), Some(_)) => Ok(lines.arrival(field.clone())),
        (Some(field), None) => Err(format!(
            "`arrival = \"{field}\"` judges each event's time by its arrival: name the time field (the query's TIMESTAMP BY, or `time`; `time = \"{field}\"` times events by their arrival)"
        )),
        (None, _) => Ok(lines),
    }
}

/// An input's `OVER` field (a watermark per key, which needs each event's arrival time, as
/// Stream Analytics' substreams: a Kafka input's, with the tolerances of its `watermark`) and
/// its time field (`time`, or the query's `TIMESTAMP BY`).
pub(super) fn over_and_time(
    u: &InputUse,
    input: &JobInput,
) -> Result<(Option<String>, Option<String>), String> {
    let over = match &u.over_field {
        None => None,
        Some(over) => {
            let tolerances = input
                .watermark
                .as_ref()
                .is_some_and(|w| w.out_of_order.is_some());
            if (input.kafka.is_none() && input.arrival.is_none()) || !tolerances {
                return Err(format!(
                    "TIMESTAMP BY ... OVER {} (a watermark per key) needs arrival times and Stream Analytics' tolerances: a Kafka input (its messages' timestamps) or a JSON-lines file with `arrival = \"FIELD\"` (`--input NAME=FILE,arrival=FIELD` on `query`), with watermark = {{ out_of_order = \"2s\" }}; or leave OVER out (one watermark, `delay` behind)",
                    over.join(".")
                ));
            }
            match over.as_slice() {
                [field] => Some(field.clone()),
                _ => {
                    return Err(format!(
                        "OVER {}: a nested field; name a field of the record",
                        over.join(".")
                    ))
                }
            }
        }
    };
    let time = match (&input.time, &u.timestamp_field) {
        (Some(t), _) => Some(t.clone()),
        (None, Some(path)) if path.len() == 1 => Some(path[0].clone()),
        (None, Some(path)) => {
            return Err(format!(
                "TIMESTAMP BY {} is a nested field; name the time field (time = \"FIELD\", or --input {}=FILE,time=FIELD)",
                path.join("."),
                u.name
            ))
        }
        (None, None) => None,
    };
    Ok((over, time))
}
