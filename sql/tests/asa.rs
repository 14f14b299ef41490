//! Stream Analytics' forms the language reads as Stream Analytics does (`GROUP BY
//! System.Timestamp()`, a column's alias in `HAVING`), and its constructs the language does
//! not have yet, refused with what they are.

use punctual_rows::Value;
use punctual_sql::SqlQuery;

mod common;
use common::*;

fn readings() -> Vec<punctual_core::StreamItem<punctual_rows::Row>> {
    ended(vec![
        reading(1.0, "a", 1),
        reading(1.0, "b", 2),
        reading(1.0, "a", 3),
        reading(2.0, "a", 4),
        reading(3.0, "b", 5),
        reading(3.0, "b", 6),
    ])
}

fn sorted(sql: &str) -> Vec<String> {
    let out = run(sql, &[("readings", readings())]);
    let mut rows: Vec<String> = events(&out["output"])
        .into_iter()
        .map(|(s, e, r)| format!("{s:?} {e:?} {r:?}"))
        .collect();
    rows.sort();
    rows
}

#[test]
fn group_by_system_timestamp_is_the_snapshot_window() {
    let asa = sorted(
        "SELECT System.Timestamp() AS t, COUNT(*) AS n FROM readings GROUP BY System.Timestamp()",
    );
    let ours = sorted(
        "SELECT System.Timestamp() AS t, COUNT(*) AS n FROM readings GROUP BY SnapshotWindow()",
    );
    // One result per moment: 3 events at 1 s, 1 at 2 s, 2 at 3 s.
    assert_eq!(asa.len(), 3, "{asa:?}");
    assert_eq!(asa, ours);
    let keyed =
        sorted("SELECT device, COUNT(*) AS n FROM readings GROUP BY device, System.Timestamp()");
    assert_eq!(keyed.len(), 4, "{keyed:?}");
}

#[test]
fn a_column_alias_in_having_is_the_columns_expression() {
    let by_alias = sorted(
        "SELECT device, COUNT(*) AS n, SUM(v) AS total FROM readings
         GROUP BY device, TumblingWindow(second, 10) HAVING n > 2 AND total < 100",
    );
    let written_out = sorted(
        "SELECT device, COUNT(*) AS n, SUM(v) AS total FROM readings
         GROUP BY device, TumblingWindow(second, 10) HAVING COUNT(*) > 2 AND SUM(v) < 100",
    );
    assert_eq!(by_alias.len(), 2, "{by_alias:?}");
    assert_eq!(by_alias, written_out);
    // Inside an aggregate, a name is the input's field, not an alias: `v` here.
    let inside = sorted(
        "SELECT device, MAX(v) AS v FROM readings
         GROUP BY device, TumblingWindow(second, 10) HAVING SUM(v) > 10",
    );
    assert_eq!(inside.len(), 1, "{inside:?}");
    assert!(inside[0].contains("\"b\""), "{inside:?}");
}

#[test]
fn count_distinct_counts_each_value_once() {
    let got = sorted(
        "SELECT COUNT(DISTINCT device) AS devices, COUNT(device) AS readings FROM readings
         GROUP BY TumblingWindow(second, 10)",
    );
    // One window: a, b, a, a, b, b: two devices in six readings.
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].contains("\"devices\": Int(2)") && got[0].contains("\"readings\": Int(6)"),
        "{got:?}"
    );
    // Per window of 1 s ending at 1, 2, 3: {a, b}, {a}, {b}.
    let per_second = sorted(
        "SELECT COUNT(DISTINCT device) AS devices FROM readings GROUP BY TumblingWindow(second, 1)",
    );
    let counts: Vec<bool> = per_second
        .iter()
        .map(|r| r.contains("\"devices\": Int(2)"))
        .collect();
    assert_eq!(counts, [true, false, false], "{per_second:?}");
    // NULL is not a value, and equal numbers are one.
    let values = ended(vec![
        punctual_core::StreamItem::point(t(1.0), row(&[("v", punctual_rows::Value::Int(4))])),
        punctual_core::StreamItem::point(t(1.0), row(&[("v", punctual_rows::Value::Float(4.0))])),
        punctual_core::StreamItem::point(t(1.0), row(&[("v", punctual_rows::Value::Null)])),
        punctual_core::StreamItem::point(t(1.0), row(&[("v", punctual_rows::Value::Int(5))])),
    ]);
    let out = run(
        "SELECT COUNT(DISTINCT v) AS n FROM r GROUP BY TumblingWindow(second, 10)",
        &[("r", values)],
    );
    let n: Vec<String> = events(&out["output"])
        .into_iter()
        .map(|e| format!("{:?}", e.2))
        .collect();
    assert_eq!(n.len(), 1);
    assert!(n[0].contains("\"n\": Int(2)"), "{n:?}");
    // Only COUNT takes DISTINCT.
    let e =
        build_error("SELECT SUM(DISTINCT v) AS s FROM readings GROUP BY TumblingWindow(second, 1)");
    assert!(e.contains("only COUNT takes DISTINCT, not SUM"), "{e}");
    let plan =
        plan_of("SELECT COUNT(DISTINCT device) AS n FROM readings GROUP BY SnapshotWindow()");
    assert!(
        plan.contains("select COUNT(DISTINCT device) AS n"),
        "{plan}"
    );
}

#[test]
fn stream_analytics_constructs_not_here_yet_are_refused_by_name() {
    for (sql, at, named) in [
        (
            "SELECT v FROM a RIGHT OUTER JOIN b ON a.k = b.k",
            17,
            "RIGHT OUTER JOIN",
        ),
        (
            "SELECT v FROM a\nRIGHT JOIN b ON a.k = b.k",
            1,
            "RIGHT JOIN",
        ),
        (
            "SELECT v FROM a FULL OUTER JOIN b ON a.k = b.k",
            17,
            "FULL OUTER JOIN",
        ),
    ] {
        let e = SqlQuery::parse(sql).map(|_| ()).expect_err(sql);
        let text = e.to_string();
        assert_eq!(e.pos().col, at, "{sql}: {text}");
        assert!(
            text.contains(named) && text.contains("does not have"),
            "{sql}: {text}"
        );
    }
    // Functions of Stream Analytics the language lacks: named, not "unknown".
    for (sql, name) in [
        ("SELECT STDEV(v) AS n FROM readings", "STDEV"),
        ("SELECT DATEADD(hour, 1, t) AS d FROM readings", "DATEADD"),
    ] {
        let text = build_error(sql);
        assert!(
            text.contains(&format!("`{name}` is")) && text.contains("does not have yet"),
            "{sql}: {text}"
        );
    }
}

fn build_error(sql: &str) -> String {
    refusal(sql, "readings", None)
}

/// Field names match in any ASCII case, as Stream Analytics' do: the field of exactly the
/// name first, else the first in another case; a computed column is named as the query
/// writes it.
#[test]
fn field_names_match_in_any_case() {
    let input = ended(vec![
        punctual_core::StreamItem::point(t(1.0), row(&[("Make", "Honda".into())])),
        punctual_core::StreamItem::point(
            t(2.0),
            row(&[("Make", "Toyota".into()), ("make", "exact".into())]),
        ),
    ]);
    let out = run(
        "SELECT make AS m, MAKE AS upper INTO out FROM readings WHERE MaKe <> 'Ford'",
        &[("readings", input)],
    );
    let got: Vec<(String, String)> = events(&out["out"])
        .into_iter()
        .map(|(_, _, r)| {
            let text = |n: &str| match r.get(n) {
                Some(punctual_rows::Value::Str(s)) => s.to_string(),
                other => format!("{other:?}"),
            };
            (text("m"), text("upper"))
        })
        .collect();
    assert_eq!(
        got,
        [
            ("Honda".to_owned(), "Honda".to_owned()),
            ("exact".to_owned(), "Toyota".to_owned()),
        ]
    );
}

/// Statements one after the other need no `;` between them, as Stream Analytics writes them.
#[test]
fn statements_need_no_semicolon_between_them() {
    let q = SqlQuery::parse(
        "SELECT * INTO archive FROM readings\n\nSELECT device INTO alerts FROM readings WHERE v > 2",
    )
    .expect("two statements");
    assert_eq!(q.outputs(), ["archive", "alerts"]);
    let with_semicolons = SqlQuery::parse(
        "SELECT * INTO archive FROM readings; SELECT device INTO alerts FROM readings;",
    )
    .expect("also with semicolons");
    assert_eq!(with_semicolons.outputs(), ["archive", "alerts"]);
}

#[test]
fn a_refusal_names_the_nearest_name_the_query_may_have_meant() {
    use punctual_core::{EventShape, Ordered};
    use punctual_engine::{InputOptions, Plan};
    let fields = vec!["device".to_owned(), "temperature".to_owned()];
    let refused = |sql: &str| {
        let query = SqlQuery::parse(sql).expect(sql);
        let mut plan = Plan::new("near");
        let (_, s) = plan
            .input::<punctual_rows::Row, Ordered>(InputOptions::new("readings", EventShape::Point))
            .expect("input");
        let stream: punctual_sql::RowStream = s.into();
        query
            .build(&[punctual_sql::SqlInput::new("readings", &stream).fields(&fields)])
            .map(|_| ())
            .expect_err(sql)
            .to_string()
    };
    let e = refused("SELECT UPER(device) AS d FROM readings");
    assert!(
        e.contains("unknown function `UPER` (did you mean UPPER?"),
        "{e}"
    );
    let e = refused("SELECT temprature FROM readings");
    assert!(e.contains("did you mean `temperature`?"), "{e}");
    let e = refused("SELECT r.devise FROM readings r");
    assert!(e.contains("did you mean `device`?"), "{e}");
    // Nothing near: no suggestion.
    let e = refused("SELECT FROBNICATE(device) AS d FROM readings");
    assert!(!e.contains("did you mean"), "{e}");
}

#[test]
fn window_lengths_may_be_named_as_stream_analytics_names_them() {
    for (named, positional) in [
        (
            "TumblingWindow(Duration(second, 10), Offset(millisecond, -1))",
            "TumblingWindow(millisecond, 10000, -1)",
        ),
        (
            "HoppingWindow(Duration(second, 20), Hop(second, 10), Offset(millisecond, -1))",
            "HoppingWindow(millisecond, 20000, 10000, -1)",
        ),
        (
            "HoppingWindow(Hop(second, 1), Duration(second, 2))",
            "HoppingWindow(second, 2, 1)",
        ),
    ] {
        let q = |w: &str| {
            sorted(&format!(
                "SELECT COUNT(*) AS n, System.Timestamp() AS t FROM readings GROUP BY device, {w}"
            ))
        };
        assert_eq!(q(named), q(positional), "{named}");
        assert!(!q(named).is_empty());
    }
    for (sql, says) in [
        (
            "TumblingWindow(Duration(second, 1), Hop(second, 1))",
            "Hop(...) is a hopping window's",
        ),
        (
            "HoppingWindow(Duration(second, 2))",
            "expected Hop(unit, n)",
        ),
        (
            "TumblingWindow(Duration(second, 1), Duration(second, 2))",
            "duration is given twice",
        ),
    ] {
        let text = format!("SELECT COUNT(*) AS n FROM readings GROUP BY {sql}");
        let e = SqlQuery::parse(&text).map(|_| ()).expect_err(&text);
        assert!(e.to_string().contains(says), "{sql}: {e}");
    }
}

/// Text in double quotes is text, as Stream Analytics' pages write it (a doubled quote is
/// one); a column may be named by quoted text; a missing comma between columns is named.
#[test]
fn double_quoted_text_and_quoted_column_names() {
    let input = ended(vec![punctual_core::StreamItem::point(
        t(1.0),
        row(&[("Make", "Make1".into())]),
    )]);
    let sql = r#"SELECT CASE WHEN Make = "Make1" THEN "A" ELSE 'B' END AS lane,
                    "say ""hi""" AS 'quoted name', 'it''s' AS [bracketed]
                 FROM readings"#;
    let out = run(sql, &[("readings", input)]);
    let rows = events(&out["output"]);
    let r = &rows[0].2;
    assert_eq!(r.get("lane"), Some(&Value::from("A")));
    assert_eq!(r.get("quoted name"), Some(&Value::from("say \"hi\"")));
    assert_eq!(r.get("bracketed"), Some(&Value::from("it's")));
    let e = SqlQuery::parse("SELECT Make CASE WHEN Make = 'a' THEN 1 END AS x FROM r")
        .map(|_| ())
        .expect_err("a missing comma");
    assert!(e.to_string().contains("`,`"), "{e}");
}
