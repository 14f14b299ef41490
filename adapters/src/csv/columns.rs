//! Which columns of a CSV file time each event and which go into its payload.

use std::any::TypeId;

use punctual_rows::{Row, Schema};

use super::{CsvInputConfig, Validity};

/// How a file's records are read, from its header: which columns time each event, which go
/// into the payload, and for a `Row` payload its schema, made once.
#[derive(Debug)]
pub(super) struct Columns {
    pub(super) header: Vec<String>,
    /// The payload's columns, if not all (by the header's positions).
    pub(super) keep: Option<Vec<bool>>,
    /// The start and end columns' positions, if the header has them.
    pub(super) start: Option<usize>,
    pub(super) end: Option<usize>,
    /// A table of versions: its key columns' positions.
    pub(super) key: Vec<usize>,
    /// Whether each column's empty fields are `NULL` (by the header's positions).
    pub(super) nullable: Vec<bool>,
    /// For a `Row` payload: its schema and the columns of its fields, in order.
    pub(super) row: Option<(Schema, Vec<usize>)>,
}

impl Columns {
    pub(super) fn new<P: 'static>(
        header: Vec<String>,
        config: &CsvInputConfig,
    ) -> Result<Columns, String> {
        // Names match in any ASCII case (the query language's `make` reads `Make`), the
        // exact name first.
        let same = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
        let has = |name: &str| header.iter().any(|h| same(h, name));
        let keep: Option<Vec<bool>> = match &config.columns {
            None => None,
            Some(columns) => {
                if let Some(missing) = columns.iter().find(|c| !has(c)) {
                    return Err(format!(
                        "no column `{missing}` (its columns: {})",
                        header.join(", ")
                    ));
                }
                Some(
                    header
                        .iter()
                        .map(|h| columns.iter().any(|c| same(c, h)))
                        .collect(),
                )
            }
        };
        let at = |name: &str| {
            header
                .iter()
                .position(|h| h == name)
                .or_else(|| header.iter().position(|h| same(h, name)))
        };
        let mut key = Vec::new();
        if let Some(Validity::UntilNext { key: columns }) = &config.table {
            for column in columns {
                key.push(at(column).ok_or_else(|| {
                    format!(
                        "no column `{column}` for the key (its columns: {})",
                        header.join(", ")
                    )
                })?);
            }
        }
        // A row is built straight from its fields (as serde would build it: each field what
        // it reads as), unless the names repeat (then serde's way: the last one counts).
        let row = (TypeId::of::<P>() == TypeId::of::<Row>())
            .then(|| {
                let kept: Vec<usize> = (0..header.len())
                    .filter(|&i| keep.as_ref().is_none_or(|k| k[i]))
                    .collect();
                let schema = Schema::new(kept.iter().map(|&i| header[i].as_str())).ok()?;
                Some((schema, kept))
            })
            .flatten();
        if let Some(missing) = config.nullable.iter().find(|c| !has(c)) {
            return Err(format!(
                "no column `{missing}` to read as nullable (its columns: {})",
                header.join(", ")
            ));
        }
        Ok(Columns {
            nullable: header
                .iter()
                .map(|h| config.nullable.iter().any(|c| same(c, h)))
                .collect(),
            key,
            start: at(&config.start),
            end: config.end.as_deref().and_then(at),
            keep,
            row,
            header,
        })
    }
}
