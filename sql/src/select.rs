//! A plain select list (no aggregates): its items, and the projection they make of each
//! row.

use std::sync::Arc;

use punctual_core::Time;
use punctual_rows::{Row, Schema, Value};

use crate::eval::{Ctx, E};
use crate::row_expr::{row_of, RowExpr};
use crate::stream::Rows;
use crate::RowStream;

/// `stream` with each row made into the select list's `items`, at the event's start time.
pub(crate) fn projection(items: Vec<Item>, stream: &RowStream) -> RowStream {
    let may_fault = items.iter().any(|i| match i {
        Item::Expr(_, e) => e.may_fault(),
        // A value that is not a record cannot be spread.
        Item::Record(_) => true,
        _ => false,
    });
    if may_fault {
        // A row whose values cannot be computed (an overflow, a division by zero, a failed
        // cast, a text over the limit) is dropped with the reason.
        return stream.try_map_with_time(move |t, r| {
            crate::limits::checked("its select list", || project(&items, r, t))
        });
    }
    // Named columns only: every result has the same names, made once.
    let schema = items
        .iter()
        .map(|i| match i {
            Item::Copy(n, _) | Item::Expr(n, _) => Some(n),
            Item::All | Item::Spread(_) | Item::Record(_) => None,
        })
        .collect::<Option<Vec<_>>>()
        .and_then(|names| Schema::new(names).ok());
    let columns: Option<Vec<RowExpr>> = items
        .iter()
        .map(|i| match i {
            Item::Expr(_, e) => Some(RowExpr::new(e.clone())),
            _ => None,
        })
        .collect();
    match (schema, columns) {
        // Computed columns only (the usual select list): each a field read in place or an
        // expression, the row built from them at once.
        (Some(schema), Some(columns)) => stream.map_with_time(move |t, r| {
            row_of(
                &schema,
                &columns,
                #[inline(always)]
                |c| c.value_at(r, t),
            )
        }),
        (Some(schema), None) => stream.map_with_time(move |t, r| {
            schema.row(items.iter().filter_map(|i| column(i, r, t).map(|c| c.1)))
        }),
        (None, _) => stream.map_with_time(move |t, r| project(&items, r, t)),
    }
}

/// One part of a plain select list.
pub(crate) enum Item {
    /// `*` over a flat row: every field.
    All,
    /// `source.*`: every field of the source's record (the row itself if `None`).
    Spread(Option<E>),
    /// `path.*`: every field of the record there; a `NULL` gives none, any other value that
    /// is not a record is a fault.
    Record(E),
    /// A whole source's record under a name (`*` after a join).
    Copy(Arc<str>, crate::eval::Path),
    /// A computed column.
    Expr(Arc<str>, E),
}

/// A column of the result: its name and value (`None` for `*` and `source.*`).
fn column<'i>(item: &'i Item, r: &Row, t: Time) -> Option<(&'i Arc<str>, Value)> {
    column_in(item, r, &Ctx::row(r, t))
}

/// [`column`] with the expressions evaluated in `cx` (over `r`).
fn column_in<'i>(item: &'i Item, r: &Row, cx: &Ctx<'_>) -> Option<(&'i Arc<str>, Value)> {
    match item {
        Item::Copy(name, path) => {
            let v = path.first().and_then(|p| r.field(p)).cloned();
            Some((name, v.unwrap_or(Value::Null)))
        }
        Item::Expr(name, e) => Some((name, e.with(cx, Value::clone))),
        Item::All | Item::Spread(_) | Item::Record(_) => None,
    }
}

fn project(items: &[Item], r: &Row, t: Time) -> Row {
    project_in(items, r, &Ctx::row(r, t))
}

/// The select list's row over `r`, its expressions evaluated in `cx` (which reads `r`, and
/// what else the select computed: an analytic function's value).
pub(crate) fn project_in(items: &[Item], r: &Row, cx: &Ctx<'_>) -> Row {
    if let [Item::All] = items {
        // The row as it is: shared, not copied.
        return r.clone();
    }
    let mut out = Row::new();
    for item in items {
        match item {
            Item::All => out.extend(r),
            Item::Spread(None) => out.extend(r),
            Item::Spread(Some(source)) => source.with(cx, |v| {
                if let Value::Row(inner) = v {
                    out.extend(inner);
                }
            }),
            Item::Record(record) => record.with(cx, |v| match v {
                Value::Row(inner) => out.extend(inner),
                Value::Null => {}
                _ => crate::limits::fault("a `.*` of a value that is not a record"),
            }),
            Item::Copy(..) | Item::Expr(..) => {
                if let Some((name, v)) = column_in(item, r, cx) {
                    out.set(name, v);
                }
            }
        }
    }
    out
}
