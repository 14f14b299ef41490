//! The query language end to end: every construct on small inputs through the query driver,
//! and errors with their positions (random inputs and random text: `random.rs`).

use punctual_core::{EventShape, Ordered, StreamItem, Time, TimeSpan};
use punctual_engine::{InputOptions, Plan};
use punctual_rows::{Row, Value};
use punctual_sql::{SqlError, SqlInput, SqlQuery};

mod common;
use common::*;

#[test]
fn where_and_projection_with_expressions() {
    let out = run(
        "SELECT UPPER(device) AS d, v * 2 + 1 AS w, CASE WHEN v > 5 THEN 'big' ELSE 'small' END AS size,
                CAST(v AS float) / 4 AS q, System.Timestamp() AS at
         FROM readings WHERE v >= 3 AND device LIKE 's%'",
        &[("readings", ended(vec![reading(1.0, "s1", 2), reading(2.0, "s2", 3), reading(3.0, "x", 9), reading(4.0, "s1", 8)]))],
    );
    let got = events(&out["output"]);
    assert_eq!(
        got,
        vec![
            (
                t(2.0),
                t(2.0) + TimeSpan::TICK,
                row(&[
                    ("d", Value::Str("S2".into())),
                    ("w", Value::Int(7)),
                    ("size", Value::Str("small".into())),
                    ("q", Value::Float(0.75)),
                    ("at", Value::Str("1970-01-01T00:00:02Z".into()))
                ])
            ),
            (
                t(4.0),
                t(4.0) + TimeSpan::TICK,
                row(&[
                    ("d", Value::Str("S1".into())),
                    ("w", Value::Int(17)),
                    ("size", Value::Str("big".into())),
                    ("q", Value::Float(2.0)),
                    ("at", Value::Str("1970-01-01T00:00:04Z".into()))
                ])
            ),
        ]
    );
}

#[test]
fn tumbling_window_per_key_with_the_window_end() {
    let out = run(
        "SELECT device, COUNT(*) AS n, SUM(v) AS total, AVG(v) AS mean, MIN(v) AS lo, MAX(v) AS hi,
                System.Timestamp() AS window_end
         INTO per_device
         FROM readings
         GROUP BY device, TumblingWindow(second, 10)",
        &[(
            "readings",
            ended(vec![
                reading(1.0, "a", 2),
                reading(2.0, "b", 3),
                reading(5.0, "a", 4),
                reading(12.0, "a", 1),
            ]),
        )],
    );
    let mut got = events(&out["per_device"]);
    got.sort_by_key(|e| {
        (
            e.0,
            e.2.get("device").and_then(Value::as_str).map(str::to_owned),
        )
    });
    let expect = |end: f64, d: &str, n: i64, total: i64, mean: f64, lo: i64, hi: i64| {
        (
            t(end),
            t(end) + TimeSpan::TICK,
            row(&[
                ("device", Value::Str(d.into())),
                ("n", Value::Int(n)),
                ("total", Value::Int(total)),
                ("mean", Value::Float(mean)),
                ("lo", Value::Int(lo)),
                ("hi", Value::Int(hi)),
                ("window_end", Value::from(&*t(end).rfc3339())),
            ]),
        )
    };
    assert_eq!(
        got,
        vec![
            expect(10.0, "a", 2, 6, 3.0, 2, 4),
            expect(10.0, "b", 1, 3, 3.0, 3, 3),
            expect(20.0, "a", 1, 1, 1.0, 1, 1),
        ]
    );
}

/// A window's group key that is a field, one that is an expression, and none: each group's
/// count and sum are its members', with the key's value (a key function of its own reads
/// a field).
#[test]
fn windows_grouped_by_a_field_an_expression_or_nothing() {
    let items = ended(vec![
        reading(1.0, "a", 2),
        reading(2.0, "b", 3),
        reading(3.0, "a", 5),
        reading(4.0, "c", 8),
        reading(5.0, "b", 13),
    ]);
    let out = run(
        "SELECT device, COUNT(*) AS n, SUM(v) AS s INTO by_field FROM r
             GROUP BY device, TumblingWindow(second, 10);
         SELECT v % 2 AS odd, COUNT(*) AS n, SUM(v) AS s INTO by_expression FROM r
             GROUP BY v % 2, TumblingWindow(second, 10);
         SELECT COUNT(*) AS n, SUM(v) AS s INTO whole FROM r GROUP BY TumblingWindow(second, 10)",
        &[("r", items)],
    );
    let groups = |name: &str| -> Vec<Vec<Value>> {
        let mut g: Vec<Vec<Value>> = events(&out[name])
            .into_iter()
            .map(|e| e.2.values().to_vec())
            .collect();
        g.sort_by_key(|v| format!("{v:?}"));
        g
    };
    let (s, i) = (|x: &str| Value::Str(x.into()), Value::Int);
    assert_eq!(
        groups("by_field"),
        vec![
            vec![s("a"), i(2), i(7)],
            vec![s("b"), i(2), i(16)],
            vec![s("c"), i(1), i(8)]
        ]
    );
    assert_eq!(
        groups("by_expression"),
        vec![vec![i(0), i(2), i(10)], vec![i(1), i(3), i(21)]]
    );
    assert_eq!(groups("whole"), vec![vec![i(5), i(31)]]);
}

#[test]
fn hopping_having_and_top_one() {
    let out = run(
        "SELECT COUNT(*) AS n, TopOne() OVER (ORDER BY v DESC) AS top
         FROM readings
         GROUP BY HoppingWindow(second, 10, 5)
         HAVING COUNT(*) > 1",
        &[(
            "readings",
            ended(vec![
                reading(1.0, "a", 2),
                reading(6.0, "b", 7),
                reading(7.0, "c", 5),
            ]),
        )],
    );
    let got = events(&out["output"]);
    // Windows [-5, 5) has one member (left out), [0, 10) three, [5, 15) two.
    let top = |d: &str, v: i64| {
        Value::from(row(&[
            ("device", Value::Str(d.into())),
            ("v", Value::Int(v)),
        ]))
    };
    assert_eq!(
        got.iter().map(|e| (e.0, e.2.clone())).collect::<Vec<_>>(),
        vec![
            (t(10.0), row(&[("n", Value::Int(3)), ("top", top("b", 7))])),
            (t(15.0), row(&[("n", Value::Int(2)), ("top", top("b", 7))])),
        ]
    );
}

#[test]
fn sliding_and_snapshot_windows_report_each_change() {
    let items = ended(vec![
        reading(1.0, "a", 1),
        reading(3.0, "a", 1),
        reading(3.0, "b", 1),
    ]);
    let out = run(
        "SELECT COUNT(*) AS n FROM r GROUP BY SlidingWindow(second, 5)",
        &[("r", items.clone())],
    );
    let got: Vec<(Time, Value)> = events(&out["output"])
        .into_iter()
        .map(|e| (e.0, e.2.get("n").cloned().unwrap_or(Value::Null)))
        .collect();
    // Changes at 1 s (one in), 3 s (two in), 6 s (the first out), 8 s (all out: no group).
    assert_eq!(
        got,
        vec![
            (t(1.0), Value::Int(1)),
            (t(3.0), Value::Int(3)),
            (t(6.0), Value::Int(2))
        ]
    );
    let out = run(
        "SELECT device, COUNT(*) AS n FROM r GROUP BY device, SnapshotWindow()",
        &[("r", items)],
    );
    let mut got: Vec<(Time, Row)> = events(&out["output"])
        .into_iter()
        .map(|e| (e.0, e.2))
        .collect();
    got.sort_by_key(|e| {
        (
            e.0,
            e.1.get("device").and_then(Value::as_str).map(str::to_owned),
        )
    });
    assert_eq!(
        got,
        vec![
            (
                t(1.0),
                row(&[("device", Value::Str("a".into())), ("n", Value::Int(1))])
            ),
            (
                t(3.0),
                row(&[("device", Value::Str("a".into())), ("n", Value::Int(1))])
            ),
            (
                t(3.0),
                row(&[("device", Value::Str("b".into())), ("n", Value::Int(1))])
            ),
        ]
    );
}

#[test]
fn datediff_join_pairs_events_within_the_range() {
    let clicks = ended(vec![reading(1.0, "a", 1), reading(20.0, "a", 2)]);
    let buys = ended(vec![
        reading(3.0, "a", 10),
        reading(4.0, "b", 11),
        reading(30.0, "a", 12),
    ]);
    let out = run(
        "SELECT c.v AS click, b.v AS buy FROM clicks c JOIN buys b
         ON c.device = b.device AND DATEDIFF(second, c, b) BETWEEN 0 AND 5",
        &[("clicks", clicks), ("buys", buys)],
    );
    let got: Vec<(Time, Row)> = events(&out["output"])
        .into_iter()
        .map(|e| (e.0, e.2))
        .collect();
    assert_eq!(
        got,
        vec![(
            t(3.0),
            row(&[("click", Value::Int(1)), ("buy", Value::Int(10))])
        )]
    );
}

#[test]
fn a_join_selecting_fields_gives_what_its_joined_rows_give() {
    // Columns over fields of the two sources are computed as each pair is found; through a
    // step of joined rows (`SELECT *`) the same columns come from the joined rows.
    let a = || {
        ended(vec![
            reading(1.0, "a", 4),
            reading(2.0, "a", 7),
            reading(3.0, "b", 8),
            reading(4.0, "a", 10),
            reading(5.0, "c", 3),
        ])
    };
    let b = || {
        ended(vec![
            reading(1.0, "a", 5),
            reading(3.0, "b", 1),
            reading(4.0, "a", 2),
            reading(5.0, "c", 9),
        ])
    };
    let direct = run(
        "SELECT x.v * 10 + y.v AS p, y.device AS d FROM a x JOIN b y
         ON x.device = y.device AND x.v > y.v AND DATEDIFF(second, x, y) BETWEEN -3 AND 3
         WHERE x.v % 2 = 0",
        &[("a", a()), ("b", b())],
    );
    let stepped = run(
        "WITH j AS (SELECT * FROM a x JOIN b y
         ON x.device = y.device AND x.v > y.v AND DATEDIFF(second, x, y) BETWEEN -3 AND 3)
         SELECT x.v * 10 + y.v AS p, y.device AS d FROM j WHERE x.v % 2 = 0",
        &[("a", a()), ("b", b())],
    );
    let got = events(&direct["output"]);
    assert_eq!(got, events(&stepped["output"]));
    // Results at one time in any order (the order between two CTIs is free).
    let mut values: Vec<(Time, i64)> = got
        .iter()
        .map(|e| (e.0, e.2.get("p").and_then(Value::as_i64).unwrap_or(-1)))
        .collect();
    values.sort();
    // At y's times: (10, 5) 3 s apart, (8, 1), (4, 2) 3 s apart and (10, 2); (4, 5) fails
    // x.v > y.v, 7 is odd, c's 3 is below 9.
    assert_eq!(
        values,
        [(t(1.0), 105), (t(3.0), 81), (t(4.0), 42), (t(4.0), 102)]
    );
}

#[test]
fn null_keys_match_nothing_and_equal_numbers_are_one_key() {
    // Keys 4 and 4.0 are equal (one group, one match); a missing key is NULL, which matches
    // nothing, not even another NULL.
    let point = |at: f64, k: Option<Value>, v: i64| {
        let mut fields = vec![("v", Value::Int(v))];
        if let Some(k) = k {
            fields.push(("k", k));
        }
        StreamItem::point(t(at), row(&fields))
    };
    let a = || {
        ended(vec![
            point(1.0, Some(Value::Int(4)), 1),
            point(2.0, Some(Value::Float(4.0)), 2),
            point(3.0, None, 3),
            point(4.0, Some(Value::Int(7)), 4),
        ])
    };
    let b = || {
        ended(vec![
            point(1.0, Some(Value::Float(4.0)), 10),
            point(3.0, None, 30),
            point(4.0, Some(Value::Int(8)), 40),
        ])
    };
    let joined = run(
        "SELECT x.v AS l, y.v AS r FROM a x JOIN b y
         ON x.k = y.k AND DATEDIFF(second, x, y) BETWEEN -5 AND 5",
        &[("a", a()), ("b", b())],
    );
    assert_eq!(
        sorted_pairs(&joined["output"], "l", "r"),
        [
            (Value::Int(1), Value::Int(10)),
            (Value::Int(2), Value::Int(10))
        ]
    );
    let grouped = run(
        "SELECT k, COUNT(*) AS n FROM a GROUP BY k, TumblingWindow(second, 10)",
        &[("a", a())],
    );
    assert_eq!(
        sorted_pairs(&grouped["output"], "k", "n"),
        [
            (Value::Int(4), Value::Int(2)),
            (Value::Int(7), Value::Int(1)),
            (Value::Null, Value::Int(1)),
        ]
    );
}

#[test]
fn a_reference_join_finds_the_value_valid_at_each_event() {
    let rates = vec![
        StreamItem::interval(
            t(0.0),
            t(10.0),
            row(&[("device", Value::Str("a".into())), ("rate", Value::Int(2))]),
        ),
        StreamItem::interval(
            t(10.0),
            t(20.0),
            row(&[("device", Value::Str("a".into())), ("rate", Value::Int(3))]),
        ),
        StreamItem::Cti(Time::INF),
    ];
    let out = run(
        "SELECT r.device, r.v * k.rate AS scaled, k.* FROM readings r JOIN rates k ON r.device = k.device",
        &[("readings", ended(vec![reading(5.0, "a", 1), reading(15.0, "a", 1), reading(16.0, "b", 1)])), ("rates", rates)],
    );
    let got: Vec<Value> = events(&out["output"])
        .into_iter()
        .map(|e| e.2.get("scaled").cloned().unwrap_or(Value::Null))
        .collect();
    assert_eq!(got, vec![Value::Int(2), Value::Int(3)]);
    let query = SqlQuery::parse("SELECT * FROM readings r JOIN rates k ON r.device = k.device")
        .expect("parses");
    let uses = query.inputs();
    assert_eq!(uses[1].name, "rates");
    assert_eq!(uses[1].reference_of.as_deref(), Some("readings"));
    assert_eq!(uses[0].reference_of, None);
}

/// The conditions of `WHERE` that the plan moves below a join (onto the readings, onto the
/// reference data) give the same rows as the same conditions applied after the join (in a
/// step that reads the joined rows, where nothing is moved).
#[test]
fn conditions_pushed_below_a_join_keep_its_rows() {
    let rates = || {
        let rate = |from: f64, to: f64, device: &str, rate: i64| {
            StreamItem::interval(
                t(from),
                t(to),
                row(&[
                    ("device", Value::Str(device.into())),
                    ("rate", Value::Int(rate)),
                ]),
            )
        };
        vec![
            rate(0.0, 10.0, "a", 2),
            rate(10.0, 20.0, "a", 3),
            rate(0.0, 20.0, "b", 1),
            rate(0.0, 20.0, "c", 5),
            StreamItem::Cti(Time::INF),
        ]
    };
    let readings = || {
        ended(
            (0..40)
                .map(|i| {
                    reading(
                        f64::from(i) * 0.5,
                        ["a", "b", "c"][i as usize % 3],
                        i64::from(i % 7),
                    )
                })
                .collect(),
        )
    };
    let inputs = || [("readings", readings()), ("rates", rates())];
    let sorted = |out: &std::collections::HashMap<String, Vec<StreamItem<Row>>>| {
        let mut rows: Vec<String> = events(&out["output"])
            .into_iter()
            .map(|e| format!("{:?} {:?}", e.0, e.2))
            .collect();
        rows.sort();
        rows
    };
    let pushed = run(
        "SELECT r.device, r.v * k.rate AS scaled FROM readings r JOIN rates k ON r.device = k.device
         WHERE k.rate > 1 AND r.v >= 2 AND r.v * k.rate < 15",
        &inputs(),
    );
    let after = run(
        "WITH j AS (SELECT * FROM readings r JOIN rates k ON r.device = k.device)
         SELECT r.device AS device, r.v * k.rate AS scaled FROM j
         WHERE k.rate > 1 AND r.v >= 2 AND r.v * k.rate < 15",
        &inputs(),
    );
    let plan = plan_of("SELECT r.device, r.v * k.rate AS scaled FROM readings r JOIN rates k ON r.device = k.device
         WHERE k.rate > 1 AND r.v >= 2 AND r.v * k.rate < 15");
    assert!(plan.contains("filter k.rate > 1 (pushed down)"), "{plan}");
    assert!(plan.contains("filter r.v >= 2 (pushed down)"), "{plan}");
    let rows = sorted(&pushed);
    assert!(rows.len() > 5, "{rows:?}");
    assert_eq!(rows, sorted(&after));
}

#[test]
fn with_steps_union_and_several_outputs() {
    let out = run(
        "WITH big AS (SELECT device, v FROM readings WHERE v > 5),
              small AS (SELECT device, v FROM readings WHERE v <= 5)
         SELECT device, v INTO everything FROM big UNION SELECT device, v FROM small;
         SELECT device INTO only_big FROM big",
        &[(
            "readings",
            ended(vec![reading(1.0, "a", 2), reading(2.0, "b", 9)]),
        )],
    );
    assert_eq!(events(&out["everything"]).len(), 2);
    let big: Vec<Row> = events(&out["only_big"]).into_iter().map(|e| e.2).collect();
    assert_eq!(big, vec![row(&[("device", Value::Str("b".into()))])]);
    assert_eq!(
        SqlQuery::parse("SELECT a INTO x FROM i; SELECT b INTO y FROM i")
            .expect("parses")
            .outputs(),
        vec!["x", "y"]
    );
}

#[test]
fn nulls_follow_three_valued_logic() {
    let items = ended(vec![
        StreamItem::point(t(1.0), row(&[("v", Value::Int(1))])),
        StreamItem::point(t(2.0), row(&[("v", Value::Null)])),
        StreamItem::point(t(3.0), Row::new()),
    ]);
    let out = run(
        "SELECT v, v IS NULL AS missing, COALESCE(v, 0) AS z FROM r WHERE v > 0 OR v IS NULL",
        &[("r", items)],
    );
    let got: Vec<Row> = events(&out["output"]).into_iter().map(|e| e.2).collect();
    assert_eq!(
        got,
        vec![
            row(&[
                ("v", Value::Int(1)),
                ("missing", Value::Bool(false)),
                ("z", Value::Int(1))
            ]),
            row(&[
                ("v", Value::Null),
                ("missing", Value::Bool(true)),
                ("z", Value::Int(0))
            ]),
            row(&[
                ("v", Value::Null),
                ("missing", Value::Bool(true)),
                ("z", Value::Int(0))
            ]),
        ]
    );
}

/// `WHERE field op integer`, which gets a filter of its own per operator, keeps what the same
/// comparison written the other way round keeps (`integer op' field`, evaluated as any
/// condition is): every operator, over integers below, at and above the literal, floats,
/// text, booleans, `NULL` and a missing field.
#[test]
fn a_field_compared_with_an_integer_keeps_what_any_comparison_keeps() {
    let values = [
        Value::Int(4),
        Value::Int(5),
        Value::Int(6),
        Value::Int(i64::MIN),
        Value::Float(5.0),
        Value::Float(5.5),
        Value::Float(f64::NAN),
        Value::Str("5".into()),
        Value::Bool(true),
        Value::Null,
    ];
    let mut items: Vec<StreamItem<Row>> = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let fields = [("i", Value::Int(i as i64)), ("v", v.clone())];
            StreamItem::point(t(i as f64), row(&fields))
        })
        .collect();
    items.push(StreamItem::point(t(20.0), row(&[("i", Value::Int(20))])));
    let items = ended(items);
    let kept = |cond: &str| -> Vec<Value> {
        let sql = format!("SELECT i FROM r WHERE {cond}");
        events(&run(&sql, &[("r", items.clone())])["output"])
            .into_iter()
            .map(|e| e.2.values()[0].clone())
            .collect()
    };
    let mut some = 0;
    for (op, mirrored) in [
        ("=", "="),
        ("<>", "<>"),
        ("<", ">"),
        ("<=", ">="),
        (">", "<"),
        (">=", "<="),
    ] {
        for k in [5, -7] {
            let got = kept(&format!("v {op} {k}"));
            assert_eq!(got, kept(&format!("{k} {mirrored} v")), "v {op} {k}");
            some += got.len();
        }
    }
    assert!(some > 0);
}

fn parse_err(sql: &str) -> SqlError {
    SqlQuery::parse(sql).expect_err("a syntax error")
}

fn build_err(sql: &str, fields: &[&str]) -> String {
    let query = SqlQuery::parse(sql).unwrap_or_else(|e| panic!("{e}"));
    let mut plan = Plan::new("errors");
    let (_, s) = plan
        .input::<Row, Ordered>(InputOptions::new("readings", EventShape::Point))
        .expect("input");
    let (_, r) = plan
        .input::<Row, Ordered>(InputOptions::new("rates", EventShape::Edge))
        .expect("input");
    let fields: Vec<String> = fields.iter().map(|f| f.to_string()).collect();
    let inputs = [
        SqlInput::new("readings", &s).fields(&fields),
        SqlInput::new("rates", &r).fields(&fields),
    ];
    match query.build(&inputs) {
        Ok(_) => panic!("`{sql}` compiled"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn syntax_errors_say_where_and_what_was_expected() {
    assert_eq!(
        parse_err("SELECT x FROM").to_string(),
        "syntax error at line 1, column 14: expected a name"
    );
    let e = parse_err("SELECT x,\n  y +\nFROM r");
    assert_eq!(e.pos().line, 3, "{e}");
    assert!(e.to_string().contains("expected an expression"), "{e}");
    let e = parse_err("SELECT COUNT(*) FROM r GROUP BY TumblingWindow(fortnight, 1)");
    assert!(
        e.to_string().contains("column 48") && e.to_string().contains("time unit"),
        "{e}"
    );
    let e = parse_err("SELECT a FROM r WHERE a = 1 GROUP");
    assert!(e.to_string().contains("expected BY"), "{e}");
    assert_eq!(
        parse_err("SELECT a FROM r WHERE").show("SELECT a FROM r WHERE"),
        "syntax error at line 1, column 22: expected an expression\n  | SELECT a FROM r WHERE\n  |                      ^"
    );
}

#[test]
fn compile_errors_name_what_is_wrong() {
    let fields = ["device", "v"];
    let e = build_err("SELECT devise FROM readings", &fields);
    assert_eq!(
        e,
        "line 1, column 8: `devise` is not a field of `readings` (did you mean `device`? its fields: device, v)"
    );
    let e = build_err("SELECT v FROM readinsg", &fields);
    assert!(
        e.contains("no input or step named `readinsg`") && e.contains("rates, readings"),
        "{e}"
    );
    let e = build_err("SELECT COUNT(*) FROM readings", &fields);
    assert!(e.contains("needs a window in GROUP BY"), "{e}");
    let e = build_err(
        "SELECT v, COUNT(*) FROM readings GROUP BY device, TumblingWindow(second, 1)",
        &fields,
    );
    assert!(
        e.contains("column 8")
            && e.contains("`v` is neither a key of GROUP BY nor inside an aggregate"),
        "{e}"
    );
    let e = build_err("SELECT FROBNICATE(v) FROM readings", &fields);
    assert!(e.contains("unknown function `FROBNICATE`"), "{e}");
    let e = build_err("SELECT SUBSTRING(device, 1) FROM readings", &fields);
    assert!(e.contains("SUBSTRING takes 3 arguments, not 2"), "{e}");
    let e = build_err(
        "SELECT device FROM readings r JOIN rates k ON r.device = k.device",
        &fields,
    );
    assert!(e.contains("`device` is a field of `r` and `k`"), "{e}");
    let e = build_err("SELECT v AS a, device AS a FROM readings", &fields);
    assert!(e.contains("two columns are named `a`"), "{e}");
    // DATEDIFF of two names is of two fields outside a join's ON...
    let e = build_err(
        "SELECT v FROM readings WHERE DATEDIFF(second, a, b) > 1",
        &fields,
    );
    assert!(e.contains("`a` is not a field of `readings`"), "{e}");
    // ... and of two sources in it only.
    let e = build_err(
        "SELECT DATEDIFF(second, r, k) AS d FROM readings r JOIN rates k \
         ON r.device = k.device AND DATEDIFF(second, r, k) BETWEEN 0 AND 5",
        &fields,
    );
    assert!(
        e.contains("DATEDIFF of two sources belongs in the ON condition"),
        "{e}"
    );
    let e = build_err(
        "SELECT * FROM readings GROUP BY TumblingWindow(second, 1)",
        &fields,
    );
    assert!(e.contains("not *"), "{e}");
}

/// Random readings: (time in ticks, key, value), sorted by time, ending with CTI(+inf).
#[test]
fn collect_top_keeps_the_first_k_by_the_order() {
    let out = run(
        "SELECT CollectTop(2) OVER (ORDER BY v DESC) AS top FROM readings GROUP BY TumblingWindow(second, 10)",
        &[("readings", ended(vec![reading(1.0, "a", 5), reading(2.0, "b", 9), reading(3.0, "c", 5), reading(4.0, "d", 1)]))],
    );
    let got = events(&out["output"]);
    let top = |rank: i64, d: &str, v: i64| {
        Value::from(row(&[
            ("rank", Value::Int(rank)),
            (
                "value",
                Value::from(row(&[
                    ("device", Value::Str(d.into())),
                    ("v", Value::Int(v)),
                ])),
            ),
        ]))
    };
    assert_eq!(got.len(), 1);
    // 9 first; of the two 5s, the first to arrive.
    assert_eq!(
        got[0].2.get("top"),
        Some(&Value::from(vec![top(1, "b", 9), top(2, "a", 5)]))
    );
    let e = build_err(
        "SELECT CollectTop(0) OVER (ORDER BY v) AS t FROM readings GROUP BY TumblingWindow(second, 1)",
        &["v"],
    );
    assert!(
        e.contains("column 19: CollectTop takes 1 to 10000 members"),
        "{e}"
    );
    let e = build_err(
        "SELECT CollectTop(2) AS t FROM readings GROUP BY TumblingWindow(second, 1)",
        &["v"],
    );
    assert!(e.contains("CollectTop needs an order"), "{e}");
}
