//! The check before a run that a file input's times say what they count: a time field read
//! without a declared format must hold RFC 3339 text, and a first record whose time is a
//! number is refused with the fix named (the unit of a number is never guessed).

use std::path::Path;

use punctual_adapters::line::TimeFormat;
use punctual_adapters::replay::read_line_ahead;

/// Where a file input's time is, for [`check`].
pub(super) enum TimeIn<'a> {
    /// The column of a CSV file with a header.
    Column(&'a str),
    /// The field of a flat JSON-lines record.
    Field(&'a str),
}

/// `Err(why)` when `path` (a regular file) is read with `format` (undeclared: `Auto`) and its
/// first record's time is a number: the message names the file, the line and the field, and
/// the fix. Anything else (a declared format, a pipe, a record that does not parse) is left
/// to the run, which reports each bad record.
pub(super) fn check(path: &Path, time: &TimeIn<'_>, format: TimeFormat) -> Result<(), String> {
    if format != TimeFormat::Auto || !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return Ok(());
    }
    let Ok(file) = std::fs::File::open(path) else {
        return Ok(());
    };
    let mut reader = std::io::BufReader::new(file);
    let mut next = |first: bool| match read_line_ahead(&mut reader, first) {
        Ok(Some(Ok(line))) => Some(line),
        _ => None,
    };
    let (line_number, field, refused) = match time {
        TimeIn::Column(column) => {
            let (Some(header), Some(record)) = (next(true), next(false)) else {
                return Ok(());
            };
            let split = |line: &str| punctual_adapters::csv::split_record(line, ',');
            let (Some(header), Some(record)) = (split(&header), split(&record)) else {
                return Ok(());
            };
            let Some(text) = header
                .iter()
                .position(|h| h == column)
                .and_then(|i| record.get(i))
            else {
                return Ok(());
            };
            (2, column, format.read_text(text).err())
        }
        TimeIn::Field(field) => {
            let Some(line) = next(true) else {
                return Ok(());
            };
            let Ok(serde_json::Value::Object(record)) = serde_json::from_str(&line) else {
                return Ok(());
            };
            let Some(value) = record.get(*field) else {
                return Ok(());
            };
            (1, field, format.read(value).err())
        }
    };
    match refused {
        Some(why) if why.contains(punctual_adapters::line::NUMBER_WITHOUT_UNIT) => Err(format!(
            "{}:{line_number}: the time field `{field}`: {why}",
            path.display()
        )),
        _ => Ok(()),
    }
}
