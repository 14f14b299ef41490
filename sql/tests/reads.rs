//! The fields a query reads of each input (`InputUse::fields_read`): what they are, and that
//! rows with only those fields give the results the whole rows give.

use punctual_core::{StreamItem, Time};
use punctual_rows::{Row, Value};
use punctual_sql::SqlQuery;

mod common;
use common::*;

fn read(sql: &str, input: &str) -> Option<Vec<String>> {
    let q = SqlQuery::parse(sql).unwrap_or_else(|e| panic!("{}", e.show(sql)));
    q.inputs()
        .into_iter()
        .find(|u| u.name == input)
        .unwrap_or_else(|| panic!("`{input}` is no input of {sql}"))
        .fields_read
}

fn names(list: &[&str]) -> Option<Vec<String>> {
    Some(list.iter().map(|s| (*s).to_owned()).collect())
}

#[test]
fn the_fields_read_are_those_named_and_none_for_whole_records() {
    let cases: &[(&str, &str, Option<Vec<String>>)] = &[
        (
            "SELECT device, AVG(celsius) AS m FROM r TIMESTAMP BY time GROUP BY device, TumblingWindow(second, 1)",
            "r",
            names(&["device", "celsius"]),
        ),
        ("SELECT COUNT(*) AS n FROM r GROUP BY SnapshotWindow()", "r", names(&[])),
        ("SELECT * FROM r WHERE v > 1", "r", None),
        ("SELECT x.* FROM r x", "r", None),
        ("SELECT x AS whole FROM r x", "r", None),
        (
            "SELECT TopOne() OVER (ORDER BY v) AS top FROM r GROUP BY TumblingWindow(second, 1)",
            "r",
            None,
        ),
        // A join: each side's own fields (qualified), unqualified names on both sides.
        (
            "SELECT a.v * b.rate AS x, note FROM r a JOIN rates b ON a.k = b.k WHERE b.valid",
            "r",
            names(&["v", "a", "note", "k"]),
        ),
        (
            "SELECT a.v * b.rate AS x, note FROM r a JOIN rates b ON a.k = b.k WHERE b.valid",
            "rates",
            names(&["rate", "b", "note", "valid", "k"]),
        ),
        // A step reads the input; the outer query reads the step.
        (
            "WITH big AS (SELECT k, v FROM r WHERE v > 0) SELECT * FROM big",
            "r",
            names(&["k", "v"]),
        ),
        ("SELECT v FROM r TIMESTAMP BY t OVER device", "r", names(&["v", "device"])),
    ];
    for (sql, input, want) in cases {
        assert_eq!(&read(sql, input), want, "{sql}");
    }
}

/// Rows with fields no query reads, and the same rows with only the fields read: every
/// query gives the same items.
#[test]
fn rows_of_the_fields_read_give_what_whole_rows_give() {
    let queries = [
        "SELECT k, v * 3 AS w FROM readings WHERE v >= 0",
        "SELECT k, SUM(v) AS total, COUNT(*) AS n, MAX(v) AS top FROM readings GROUP BY k, TumblingWindow(tick, 7)",
        "SELECT COUNT(*) AS n FROM readings GROUP BY SlidingWindow(tick, 5)",
        "SELECT x.v AS v, y.v AS rate FROM readings x JOIN r y ON x.k = y.k",
        "WITH big AS (SELECT k, v FROM readings WHERE v > 0) SELECT k, SUM(v) AS s FROM big GROUP BY k, TumblingWindow(tick, 20)",
        "SELECT UPPER(note) AS n FROM readings WHERE v % 2 = 0",
    ];
    let readings: Vec<StreamItem<Row>> = (0..40)
        .map(|i: i64| {
            StreamItem::point(
                Time::from_ticks(i * 3),
                row(&[
                    ("k", Value::Int(i % 3)),
                    ("v", Value::Int((i * 7) % 11 - 5)),
                    ("note", Value::Str(format!("n{i}").into())),
                    ("unread", Value::Int(i)),
                ]),
            )
        })
        .chain([StreamItem::Cti(Time::INF)])
        .collect();
    let rates: Vec<StreamItem<Row>> = (0..3)
        .map(|k| {
            StreamItem::interval(
                Time::from_ticks(0),
                Time::from_ticks(200),
                row(&[
                    ("k", Value::Int(k)),
                    ("v", Value::Int(k + 1)),
                    ("unread", Value::Int(0)),
                ]),
            )
        })
        .chain([StreamItem::Cti(Time::INF)])
        .collect();
    for sql in queries {
        let keep = read(sql, "readings").expect("named fields");
        assert!(!keep.iter().any(|f| f == "unread"), "{sql}: {keep:?}");
        let pruned: Vec<StreamItem<Row>> = readings
            .iter()
            .map(|i| match i {
                StreamItem::Insert(e) => {
                    let fields = keep
                        .iter()
                        .filter_map(|f| e.payload.get(f).map(|v| (f.clone(), v.clone())));
                    StreamItem::point(e.kind.start(), Row::new().with_all(fields))
                }
                StreamItem::Cti(t) => StreamItem::Cti(*t),
            })
            .collect();
        let whole = run(sql, &[("readings", readings.clone()), ("r", rates.clone())]);
        let narrow = run(sql, &[("readings", pruned), ("r", rates.clone())]);
        assert_eq!(narrow["output"], whole["output"], "{sql}");
        assert!(
            whole["output"]
                .iter()
                .any(|i| matches!(i, StreamItem::Insert(_))),
            "{sql}: no results to compare"
        );
    }
}
