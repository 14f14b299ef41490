//! Records and arrays in rows, as Stream Analytics reads them: `path.*`, `GetArrayElement`,
//! `GetArrayLength`, `GetRecordPropertyValue`, and `CROSS APPLY` / `OUTER APPLY` with
//! `GetArrayElements` and `GetRecordProperties`; what each does with `NULL` and with a value
//! of another kind (dropped with the reason, never guessed at); refusals.

use std::sync::Arc;

use punctual_core::StreamItem;
use punctual_rows::{Row, Value};
use punctual_sql::SqlQuery;

mod common;
use common::*;

fn list(values: &[i64]) -> Value {
    Value::List(Arc::new(values.iter().map(|v| Value::Int(*v)).collect()))
}

fn record(fields: &[(&str, Value)]) -> Value {
    Value::Row(Arc::new(row(fields)))
}

fn device(at: f64, id: &str, readings: Value, tags: Value) -> StreamItem<Row> {
    StreamItem::point(
        t(at),
        row(&[
            ("id", Value::from(id)),
            ("readings", readings),
            ("tags", tags),
        ]),
    )
}

fn input() -> Vec<StreamItem<Row>> {
    ended(vec![
        device(
            1.0,
            "a",
            record(&[("temp", Value::Int(20)), ("hum", Value::Int(50))]),
            list(&[7, 8]),
        ),
        device(2.0, "b", Value::Null, list(&[])),
        device(3.0, "c", record(&[("temp", Value::Int(30))]), Value::Null),
    ])
}

/// The rows of the one output, `(time in seconds, row)`, in order.
fn rows(sql: &str) -> Vec<(f64, Row)> {
    let out = run(sql, &[("input", input())]);
    let (_, items) = out.into_iter().next().expect("one output");
    events(&items)
        .into_iter()
        .map(|(s, _, r)| (s.ticks() as f64 / S as f64, r))
        .collect()
}

fn field(r: &Row, name: &str) -> Value {
    r.get(name)
        .cloned()
        .unwrap_or(Value::Str("<missing>".into()))
}

#[test]
fn cross_apply_gives_an_event_per_element_at_the_events_time() {
    let got: Vec<(f64, Value, Value, Value)> = rows(
        "SELECT id, e.ArrayIndex, e.ArrayValue FROM input CROSS APPLY GetArrayElements(tags) AS e",
    )
    .into_iter()
    .map(|(at, r)| {
        (
            at,
            field(&r, "id"),
            field(&r, "ArrayIndex"),
            field(&r, "ArrayValue"),
        )
    })
    .collect();
    // b's empty array and c's NULL give no event.
    assert_eq!(
        got,
        [
            (1.0, Value::from("a"), Value::Int(0), Value::Int(7)),
            (1.0, Value::from("a"), Value::Int(1), Value::Int(8)),
        ]
    );
}

#[test]
fn outer_apply_keeps_an_event_without_elements_once_with_nulls() {
    let got: Vec<(Value, Value)> =
        rows("SELECT id, e.ArrayValue AS v FROM input OUTER APPLY GetArrayElements(tags) AS e")
            .into_iter()
            .map(|(_, r)| (field(&r, "id"), field(&r, "v")))
            .collect();
    assert_eq!(
        got,
        [
            (Value::from("a"), Value::Int(7)),
            (Value::from("a"), Value::Int(8)),
            (Value::from("b"), Value::Null),
            (Value::from("c"), Value::Null),
        ]
    );
}

#[test]
fn record_properties_become_events_and_can_be_grouped() {
    let got: Vec<(Value, Value, Value)> = rows(
        "SELECT i.id, p.PropertyName AS name, p.PropertyValue AS value
         FROM input i CROSS APPLY GetRecordProperties(i.readings) AS p",
    )
    .into_iter()
    .map(|(_, r)| (field(&r, "id"), field(&r, "name"), field(&r, "value")))
    .collect();
    assert_eq!(
        got,
        [
            (Value::from("a"), Value::from("temp"), Value::Int(20)),
            (Value::from("a"), Value::from("hum"), Value::Int(50)),
            (Value::from("c"), Value::from("temp"), Value::Int(30)),
        ]
    );
    let grouped = rows(
        "SELECT p.PropertyName AS name, SUM(p.PropertyValue) AS total
         FROM input CROSS APPLY GetRecordProperties(readings) AS p
         GROUP BY p.PropertyName, TumblingWindow(second, 10)",
    );
    let mut totals: Vec<(Value, Value)> = grouped
        .iter()
        .map(|(_, r)| (field(r, "name"), field(r, "total")))
        .collect();
    totals.sort_by_key(|(n, _)| n.as_str().map(str::to_owned));
    assert_eq!(
        totals,
        [
            (Value::from("hum"), Value::Int(50)),
            (Value::from("temp"), Value::Int(50)),
        ]
    );
}

#[test]
fn two_applies_read_side_by_side() {
    let got: Vec<(Value, Value)> = rows(
        "SELECT e.ArrayValue AS tag, p.PropertyName AS name FROM input
         CROSS APPLY GetArrayElements(tags) AS e
         CROSS APPLY GetRecordProperties(readings) AS p",
    )
    .into_iter()
    .map(|(_, r)| (field(&r, "tag"), field(&r, "name")))
    .collect();
    assert_eq!(got.len(), 4, "{got:?}");
    assert!(
        got.contains(&(Value::Int(8), Value::from("hum"))),
        "{got:?}"
    );
}

#[test]
fn element_length_and_property_functions() {
    let got: Vec<(Value, Value, Value, Value)> = rows(
        "SELECT GetArrayElement(tags, 1) AS second, GetArrayElement(tags, 5) AS beyond,
                GetArrayLength(tags) AS n, GetRecordPropertyValue(readings, 'TEMP') AS temp
         FROM input",
    )
    .into_iter()
    .map(|(_, r)| {
        (
            field(&r, "second"),
            field(&r, "beyond"),
            field(&r, "n"),
            field(&r, "temp"),
        )
    })
    .collect();
    assert_eq!(
        got,
        [
            (Value::Int(8), Value::Null, Value::Int(2), Value::Int(20)),
            (Value::Null, Value::Null, Value::Int(0), Value::Null),
            (Value::Null, Value::Null, Value::Null, Value::Int(30)),
        ]
    );
}

#[test]
fn a_record_path_spreads_its_fields() {
    let got: Vec<Row> = rows("SELECT id, readings.* FROM input")
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    assert_eq!(got.len(), 3);
    assert_eq!(field(&got[0], "temp"), Value::Int(20));
    assert_eq!(field(&got[0], "hum"), Value::Int(50));
    // A NULL record spreads nothing.
    assert_eq!(got[1].len(), 1, "{:?}", got[1]);
}

#[test]
fn a_value_of_another_kind_drops_the_event_with_the_reason() {
    // `id` is a text: not an array, not a record.
    for sql in [
        "SELECT e.ArrayValue AS v FROM input CROSS APPLY GetArrayElements(id) AS e",
        "SELECT p.PropertyName AS v FROM input CROSS APPLY GetRecordProperties(id) AS p",
        "SELECT GetArrayLength(id) AS v FROM input",
        "SELECT GetRecordPropertyValue(id, 'x') AS v FROM input",
        "SELECT id.* FROM input",
    ] {
        assert!(rows(sql).is_empty(), "{sql}: nothing made of a text");
    }
}

#[test]
fn what_apply_cannot_read_is_refused_with_the_reason() {
    for (sql, says) in [
        (
            "SELECT e.v FROM input CROSS APPLY UPPER(id) AS e",
            "APPLY reads GetArrayElements(array) or GetRecordProperties(record)",
        ),
        (
            "SELECT e.ArrayValue FROM input i CROSS APPLY GetArrayElements(tags) AS i",
            "`i` already names a source",
        ),
        (
            "SELECT GetArrayElements(tags) AS x FROM input",
            "gives rows, not a value",
        ),
    ] {
        let e = build_error(sql);
        assert!(e.contains(says), "{sql}: {e}");
    }
    let e = SqlQuery::parse(
        "SELECT e.ArrayValue FROM input CROSS APPLY GetArrayElements(tags) AS e
         JOIN other o ON e.ArrayValue = o.v",
    )
    .expect("parses")
    .plan(&[])
    .map(|_| ())
    .expect_err("APPLY and JOIN");
    assert!(
        e.to_string().contains("APPLY and JOIN in one select"),
        "{e}"
    );
}

fn build_error(sql: &str) -> String {
    refusal(sql, "input", None)
}
