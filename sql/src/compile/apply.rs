//! `CROSS APPLY` and `OUTER APPLY` with Stream Analytics' row functions: each event made into
//! one event per element of an array (`GetArrayElements(e)`: `ArrayIndex`, `ArrayValue`) or
//! per property of a record (`GetRecordProperties(e)`: `PropertyName`, `PropertyValue`), at
//! the event's time, its record and the row side by side (as a join's sources are).
//!
//! A `NULL` (or missing) array or record gives no row (`OUTER APPLY`: one, with `NULL` under
//! the alias); any other value is not guessed at: the event is dropped with the reason.

use super::*;

/// Which rows the function gives.
#[derive(Clone, Copy)]
enum RowsOf {
    /// `GetArrayElements`.
    Elements,
    /// `GetRecordProperties`.
    Properties,
}

impl Compiler<'_> {
    /// A [`Node::Apply`] over what `built` gives.
    pub(super) fn apply(
        &self,
        built: Built,
        function: &Expr,
        alias: &Ident,
        outer: bool,
    ) -> Result<Built, SqlError> {
        let ExprKind::Call { name, args, .. } = &function.kind else {
            return Err(not_a_row_function(function.pos));
        };
        let what = match name.name.to_ascii_lowercase().as_str() {
            "getarrayelements" => RowsOf::Elements,
            "getrecordproperties" => RowsOf::Properties,
            _ => return Err(not_a_row_function(name.pos)),
        };
        let [arg] = &args[..] else {
            return Err(err(name.pos, format!("{} takes one argument", name.name)));
        };
        let arg = RowExpr::new(compile(arg, &built.scope, None, false)?);
        if built
            .scope
            .sources
            .iter()
            .any(|(r, _)| r.eq_ignore_ascii_case(&alias.name))
        {
            return Err(err(
                alias.pos,
                format!("`{}` already names a source of this select", alias.name),
            ));
        }
        let columns = match what {
            RowsOf::Elements => ["ArrayIndex", "ArrayValue"],
            RowsOf::Properties => ["PropertyName", "PropertyValue"],
        };
        let made = Schema::new(columns).map_err(|e| err(alias.pos, e.to_string()))?;
        let mut sources = built.scope.sources.clone();
        sources.push((
            alias.name.clone(),
            Some(columns.iter().map(|c| (*c).to_owned()).collect()),
        ));
        // The event's record and the function's row side by side: a new pair, or one more
        // source beside those of an earlier apply.
        let nested = built.scope.nested;
        let pair =
            Schema::new([&sources[0].0, &alias.name]).map_err(|e| err(alias.pos, e.to_string()))?;
        let name = field_name(&alias.name);
        let with = move |r: &Row, v: Value| {
            if nested {
                r.clone().with(&name, v)
            } else {
                pair.row([Value::from(r.clone()), v])
            }
        };
        let rows = move |r: &Row| -> Vec<Result<Row, String>> {
            arg.with(r, |v| {
                let made_rows: Vec<Value> = match (what, v) {
                    (_, Value::Null) => Vec::new(),
                    (RowsOf::Elements, Value::List(items)) => items
                        .iter()
                        .enumerate()
                        .map(|(i, x)| Value::from(made.row([Value::Int(i as i64), x.clone()])))
                        .collect(),
                    (RowsOf::Properties, Value::Row(record)) => record
                        .fields()
                        .map(|(k, x)| Value::from(made.row([Value::from(k), x.clone()])))
                        .collect(),
                    (RowsOf::Elements, _) => {
                        return vec![Err(
                            "GetArrayElements of a value that is not an array".to_owned()
                        )]
                    }
                    (RowsOf::Properties, _) => {
                        return vec![Err(
                            "GetRecordProperties of a value that is not a record".to_owned()
                        )]
                    }
                };
                if made_rows.is_empty() && outer {
                    return vec![Ok(with(r, Value::Null))];
                }
                made_rows.into_iter().map(|m| Ok(with(r, m))).collect()
            })
        };
        let label = format!("{}: apply {}", self.label.borrow(), alias.name);
        let stream = built.stream.flat_map_ok(rows).named(label);
        Ok(Built {
            stream,
            scope: Scope {
                sources,
                nested: true,
            },
            fields: None,
            timed: Vec::new(),
        })
    }
}

fn not_a_row_function(at: Pos) -> SqlError {
    err(
        at,
        "APPLY reads GetArrayElements(array) or GetRecordProperties(record)",
    )
}
