//! The query language on random inputs against the equivalent Rust query, and random text
//! against the parser and compiler (an error, never a panic).

use proptest::prelude::*;

use punctual_core::ops::Stream;
use punctual_core::{Batch, EventShape, Ordered, StreamItem, Time};
use punctual_engine::{InputOptions, Plan};
use punctual_rows::{Row, Value};
use punctual_sql::{SqlInput, SqlQuery};

mod common;
use common::*;

fn readings() -> impl Strategy<Value = Vec<StreamItem<Row>>> {
    prop::collection::vec((0i64..200, 0i64..4, -50i64..50), 0..60).prop_map(|mut raw| {
        raw.sort_by_key(|r| r.0);
        let mut items: Vec<StreamItem<Row>> = raw
            .into_iter()
            .map(|(at, k, v)| {
                StreamItem::point(
                    Time::from_ticks(at),
                    row(&[("k", Value::Int(k)), ("v", Value::Int(v))]),
                )
            })
            .collect();
        items.push(StreamItem::Cti(Time::INF));
        items
    })
}

/// The same query through the Rust API over the same items.
fn run_rust(
    items: &[StreamItem<Row>],
    build: impl FnOnce(&Stream<Row>) -> Stream<Row>,
) -> Vec<StreamItem<Row>> {
    let mut plan = Plan::new("rust");
    let (id, s) = plan
        .input::<Row, Ordered>(InputOptions::new("readings", EventShape::Point))
        .expect("input");
    let out = plan.output(build(&s)).expect("output");
    let mut driver = plan.build().expect("plan");
    for item in items {
        driver.enqueue(id, item.clone()).expect("valid");
    }
    let mut batch = Batch::new();
    driver.take_output(&out, &mut batch);
    let mut got = Vec::new();
    batch.drain_items(|i| got.push(i));
    got
}

fn int(r: &Row, f: &str) -> i64 {
    r.get(f).and_then(Value::as_i64).unwrap_or_default()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A filter and a projection: the same items, CTIs and all.
    #[test]
    fn filter_and_projection_match_the_rust_query(items in readings(), threshold in -50i64..50) {
        let sql = run(&format!("SELECT k, v * 3 AS w FROM readings WHERE v >= {threshold}"), &[("readings", items.clone())]);
        let rust = run_rust(&items, |s| {
            s.filter(move |r| int(r, "v") >= threshold)
                .map(|r| Row::new().with("k", int(r, "k")).with("w", int(r, "v") * 3))
        });
        prop_assert_eq!(&sql["output"], &rust);
    }

    /// A tumbling window per key, as Stream Analytics defines it: each window ending at `end`
    /// holds the events after `end - size` up to `end`, its result at `end`.
    #[test]
    fn a_grouped_window_holds_what_stream_analytics_says(items in readings(), size in 1i64..50) {
        let sql = run(&format!("SELECT k, SUM(v) AS total FROM readings GROUP BY k, TumblingWindow(tick, {size})"), &[("readings", items.clone())]);
        let got: Vec<(i64, i64, Vec<i64>)> = events(&sql["output"]).into_iter().map(|e| (e.0.ticks(), int(&e.2, "k"), vec![int(&e.2, "total")])).collect();
        let expected: Vec<(i64, i64, Vec<i64>)> = asa_windows(&items, size, size).into_iter().map(|((end, k), vs)| (end, k, vec![vs.iter().sum()])).collect();
        prop_assert_eq!(sorted(got), expected);
        prop_assert_eq!(sql["output"].last(), Some(&StreamItem::Cti(Time::INF)));
    }

    /// Several aggregates per key over hopping windows (the select's row made as each group's
    /// aggregates are), each window as Stream Analytics defines it.
    #[test]
    fn several_aggregates_over_hopping_windows_hold_what_stream_analytics_says(items in readings(), size in 1i64..40, hop in 1i64..40) {
        let sql = run(&format!("SELECT k, COUNT(*) AS n, SUM(v) AS total, MIN(v) AS lo, MAX(v) - MIN(v) AS spread FROM readings GROUP BY k, HoppingWindow(tick, {size}, {hop})"), &[("readings", items.clone())]);
        let got: Vec<(i64, i64, Vec<i64>)> = events(&sql["output"]).into_iter().map(|e| {
            let r = &e.2;
            (e.0.ticks(), int(r, "k"), vec![int(r, "n"), int(r, "total"), int(r, "lo"), int(r, "spread")])
        }).collect();
        let expected: Vec<(i64, i64, Vec<i64>)> = asa_windows(&items, size, hop).into_iter().map(|((end, k), vs)| {
            let (lo, hi) = (vs.iter().min().copied().unwrap_or_default(), vs.iter().max().copied().unwrap_or_default());
            (end, k, vec![vs.len() as i64, vs.iter().sum(), lo, hi - lo])
        }).collect();
        prop_assert_eq!(sorted(got), expected);
    }

    /// A DATEDIFF join against a join written with lifetimes: the same pairs.
    #[test]
    fn a_datediff_join_matches_the_rust_query(a in readings(), b in readings(), lo in -20i64..10, width in 0i64..20) {
        let hi = lo + width;
        let sql = run(&format!("SELECT x.v AS l, y.v AS r FROM a x JOIN b y ON x.k = y.k AND DATEDIFF(tick, x, y) BETWEEN {lo} AND {hi}"), &[("a", a.clone()), ("b", b.clone())]);
        // Reference: every pair with equal keys and b's time - a's time in [lo, hi], at b's time.
        let points = |items: &[StreamItem<Row>]| -> Vec<(i64, Row)> {
            items.iter().filter_map(|i| match i { StreamItem::Insert(e) => Some((e.kind.start().ticks(), e.payload.clone())), _ => None }).collect()
        };
        let mut expected: Vec<(i64, i64, i64)> = Vec::new();
        for (ta, ra) in points(&a) {
            for (tb, rb) in points(&b) {
                if int(&ra, "k") == int(&rb, "k") && (lo..=hi).contains(&(tb - ta)) {
                    expected.push((tb, int(&ra, "v"), int(&rb, "v")));
                }
            }
        }
        let mut got: Vec<(i64, i64, i64)> = events(&sql["output"]).into_iter().map(|e| (e.0.ticks(), int(&e.2, "l"), int(&e.2, "r"))).collect();
        expected.sort_unstable();
        got.sort_unstable();
        prop_assert_eq!(got, expected);
    }
}

/// The members (`v`) of each Stream Analytics window with members, by its end and key: the
/// windows end every `hop` ticks (from 0), each holding the points after `end - size` up to
/// `end`.
fn asa_windows(
    items: &[StreamItem<Row>],
    size: i64,
    hop: i64,
) -> std::collections::BTreeMap<(i64, i64), Vec<i64>> {
    let mut windows = std::collections::BTreeMap::new();
    for item in items {
        let StreamItem::Insert(e) = item else {
            continue;
        };
        let t = e.kind.start().ticks();
        // The first end at or after t, then every hop while the window still reaches back to t.
        let mut end = -((-t).div_euclid(hop)) * hop;
        while end - size < t {
            windows
                .entry((end, int(&e.payload, "k")))
                .or_insert_with(Vec::new)
                .push(int(&e.payload, "v"));
            end += hop;
        }
    }
    windows
}

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

/// Query text from a vocabulary of the language's words and symbols, in any order.
fn token_soup() -> impl Strategy<Value = String> {
    let words = prop::sample::select(vec![
        "SELECT",
        "FROM",
        "WHERE",
        "GROUP",
        "BY",
        "HAVING",
        "INTO",
        "AS",
        "JOIN",
        "ON",
        "AND",
        "OR",
        "NOT",
        "UNION",
        "WITH",
        "TIMESTAMP",
        "OVER",
        "CASE",
        "WHEN",
        "THEN",
        "ELSE",
        "END",
        "CAST",
        "IS",
        "NULL",
        "BETWEEN",
        "IN",
        "LIKE",
        "COUNT",
        "SUM",
        "AVG",
        "TopOne",
        "ORDER",
        "DESC",
        "TumblingWindow",
        "HoppingWindow",
        "SlidingWindow",
        "SnapshotWindow",
        "DATEDIFF",
        "System.Timestamp",
        "second",
        "tick",
        "bigint",
        "readings",
        "r",
        "v",
        "k",
        "x",
        "*",
        ",",
        "(",
        ")",
        ";",
        ".",
        "=",
        "<>",
        "<",
        ">=",
        "+",
        "-",
        "/",
        "%",
        "0",
        "1",
        "-5",
        "2.5",
        "'a'",
        "''",
        "[odd name]",
        "UPPER",
        "SUBSTRING",
        "COALESCE",
        "--",
        "/*",
        "*/",
    ]);
    prop::collection::vec(words, 0..40).prop_map(|w| w.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Any text, and any soup of the language's words: parsing and building never panic;
    /// an error always says where, within the text.
    #[test]
    fn no_text_makes_the_compiler_panic(text in prop_oneof![token_soup(), ".{0,80}"]) {
        match SqlQuery::parse(&text) {
            Err(e) => {
                let pos = e.pos();
                prop_assert!(pos.line >= 1 && pos.line <= text.lines().count().max(1), "{e} in {text:?}");
                let _ = e.show(&text);
            }
            Ok(q) => {
                let mut plan = Plan::new("fuzz");
                let (_, s) = plan.input::<Row, Ordered>(InputOptions::new("readings", EventShape::Edge)).expect("input");
                let (_, r) = plan.input::<Row, Ordered>(InputOptions::new("r", EventShape::Edge)).expect("input");
                let fields = vec!["v".to_owned(), "k".to_owned()];
                let built = q.build(&[SqlInput::new("readings", &s).fields(&fields), SqlInput::new("r", &r)]);
                if let Err(e) = built {
                    prop_assert!(e.pos().line >= 1, "{e} in {text:?}");
                }
                let _ = (q.inputs(), q.outputs());
            }
        }
    }
}

/// Expressions of the language, any shape, over the fields `v` and `k`.
fn expression() -> impl Strategy<Value = String> {
    let leaf = prop::sample::select(vec![
        "v",
        "k",
        "0",
        "1",
        "-3",
        "2.5",
        "9223372036854775807",
        "'a'",
        "''",
        "NULL",
        "TRUE",
        "FALSE",
        "1e308",
    ])
    .prop_map(str::to_owned);
    leaf.prop_recursive(4, 32, 3, |inner| {
        let op = prop::sample::select(vec![
            "+", "-", "*", "/", "%", "=", "<>", "<", ">=", "AND", "OR",
        ]);
        prop_oneof![
            (inner.clone(), op, inner.clone()).prop_map(|(a, o, b)| format!("({a} {o} {b})")),
            inner.clone().prop_map(|a| format!("(NOT ({a}))")),
            inner.clone().prop_map(|a| format!("(-({a}))")),
            (inner.clone(), inner.clone())
                .prop_map(|(a, b)| format!("(CASE WHEN {a} THEN {b} ELSE {a} END)")),
            inner.clone().prop_map(|a| format!("CAST({a} AS bigint)")),
            inner.clone().prop_map(|a| format!("CAST({a} AS float)")),
            inner
                .clone()
                .prop_map(|a| format!("CAST({a} AS nvarchar(max))")),
            inner.clone().prop_map(|a| format!("UPPER({a})")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(a, b, c)| format!("SUBSTRING({a}, {b}, {c})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("ROUND({a}, {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("POWER({a}, {b})")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(a, b, c)| format!("({a} BETWEEN ({b}) AND ({c}))")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} IN ({b}, {a}))")),
            inner.clone().prop_map(|a| format!("({a} IS NULL)")),
            (inner.clone(), inner).prop_map(|(a, b)| format!("({a} LIKE ({b}))")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// Any expression, over rows with extreme values: the query runs to its end (no panic,
    /// no overflow); in WHERE, in the select list and inside aggregates.
    #[test]
    fn any_expression_evaluates_without_panicking(e in expression(), f in expression()) {
        let rows = [
            (Value::Int(i64::MAX), Value::Str("x".into())),
            (Value::Int(i64::MIN), Value::Null),
            (Value::Float(f64::MAX), Value::Int(0)),
            (Value::Null, Value::Float(-0.0)),
            (Value::Str("%_".into()), Value::Bool(true)),
        ];
        let items: Vec<StreamItem<Row>> = rows
            .iter()
            .enumerate()
            .map(|(i, (v, k))| StreamItem::point(Time::from_ticks(i as i64), row(&[("v", v.clone()), ("k", k.clone())])))
            .chain(std::iter::once(StreamItem::Cti(Time::INF)))
            .collect();
        let sql = format!(
            "SELECT {e} AS a, {f} AS b INTO plain FROM readings WHERE {f};
             SELECT MIN({e}) AS lo, MAX({f}) AS hi, SUM({e}) AS s, AVG({f}) AS m, COUNT({e}) AS n
             INTO grouped FROM readings GROUP BY TumblingWindow(tick, 2)"
        );
        let out = run(&sql, &[("readings", items)]);
        prop_assert_eq!(out["grouped"].last(), Some(&StreamItem::Cti(Time::INF)));
        prop_assert_eq!(out["plain"].last(), Some(&StreamItem::Cti(Time::INF)));
    }
}
