//! Stream Analytics' analytic functions (`LAG`, `LAST`, `ISFIRST`) on the worked examples of
//! its "common query patterns" page, with the page's inputs and outputs (the events carry
//! their times here instead of `TIMESTAMP BY Time`), and their edges: partitions, `WHEN`,
//! the duration, defaults, refusals.

use punctual_core::StreamItem;
use punctual_rows::{Row, Value};

mod common;
use common::*;

fn car(at: f64, make: &str, plate: &str) -> StreamItem<Row> {
    StreamItem::point(
        t(at),
        row(&[
            ("Make", Value::from(make)),
            ("LicensePlate", Value::from(plate)),
            ("Time", Value::Int(at as i64)),
        ]),
    )
}

/// The rows of the one output, in order.
fn rows_of(sql: &str, input: Vec<StreamItem<Row>>) -> Vec<(f64, Row)> {
    let out = run(sql, &[("Input", ended(input))]);
    let (_, items) = out.into_iter().next().expect("one output");
    events(&items)
        .into_iter()
        .map(|(s, _, r)| (s.ticks() as f64 / S as f64, r))
        .collect()
}

#[test]
fn determine_if_a_value_has_changed() {
    let got = rows_of(
        "SELECT Make, Time FROM Input WHERE LAG(Make, 1) OVER (LIMIT DURATION(minute, 1)) <> Make",
        vec![car(1.0, "Honda", "ABC-123"), car(2.0, "Toyota", "AAA-999")],
    );
    assert_eq!(
        got,
        vec![(
            2.0,
            row(&[("Make", "Toyota".into()), ("Time", Value::Int(2))])
        )]
    );
}

#[test]
fn locate_correlated_events() {
    let got = rows_of(
        "SELECT Make, Time, LicensePlate AS CurrentCarLicensePlate,
            LAG(LicensePlate, 1) OVER (LIMIT DURATION(second, 90)) AS FirstCarLicensePlate,
            LAG(Time, 1) OVER (LIMIT DURATION(second, 90)) AS FirstCarTime
         FROM Input
         WHERE LAG(Make, 1) OVER (LIMIT DURATION(second, 90)) = Make",
        vec![
            car(1.0, "Honda", "ABC-123"),
            car(2.0, "Honda", "AAA-999"),
            car(3.0, "Toyota", "DEF-987"),
            car(4.0, "Honda", "GHI-345"),
        ],
    );
    let want = row(&[
        ("Make", "Honda".into()),
        ("Time", Value::Int(2)),
        ("CurrentCarLicensePlate", "AAA-999".into()),
        ("FirstCarLicensePlate", "ABC-123".into()),
        ("FirstCarTime", Value::Int(1)),
    ]);
    assert_eq!(got, vec![(2.0, want)]);
}

#[test]
fn detect_the_duration_of_a_condition() {
    let weights = [2000, 25000, 26000, 25000, 26000, 25000, 26000, 2000];
    let input = weights
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let at = i as f64 + 1.0;
            StreamItem::point(
                t(at),
                row(&[("time", Value::Int(at as i64)), ("weight", Value::Int(*w))]),
            )
        })
        .collect();
    let got = rows_of(
        "WITH SelectPreviousEvent AS (
            SELECT *,
                LAG([time]) OVER (LIMIT DURATION(hour, 24)) AS previousTime,
                LAG([weight]) OVER (LIMIT DURATION(hour, 24)) AS previousWeight
            FROM Input
         )
         SELECT
            LAG(time) OVER (LIMIT DURATION(hour, 24) WHEN previousWeight < 20000) AS StartFault,
            previousTime AS EndFault
         FROM SelectPreviousEvent
         WHERE [weight] < 20000 AND previousWeight > 20000",
        input,
    );
    assert_eq!(
        got,
        vec![(
            8.0,
            row(&[("StartFault", Value::Int(2)), ("EndFault", Value::Int(7))])
        )]
    );
}

fn first_cars() -> Vec<StreamItem<Row>> {
    [
        (5.0, "DXE 5291", "Honda"),
        (137.0, "YZK 5704", "Ford"),
        (301.0, "RMV 8282", "Honda"),
        (360.0, "YHN 6970", "Toyota"),
        (571.0, "VFE 1616", "Toyota"),
        (722.0, "QYF 9358", "Honda"),
        (825.0, "MDR 6128", "BMW"),
    ]
    .into_iter()
    .map(|(at, plate, make)| car(at, make, plate))
    .collect()
}

fn plates(rows: &[(f64, Row)]) -> Vec<String> {
    rows.iter()
        .map(|(_, r)| match r.get("LicensePlate") {
            Some(Value::Str(s)) => s.to_string(),
            other => panic!("no plate: {other:?}"),
        })
        .collect()
}

#[test]
fn find_the_first_event_in_a_window() {
    let got = rows_of(
        "SELECT LicensePlate, Make, Time FROM Input WHERE IsFirst(minute, 10) = 1",
        first_cars(),
    );
    assert_eq!(plates(&got), ["DXE 5291", "QYF 9358"]);
    let got = rows_of(
        "SELECT LicensePlate, Make, Time FROM Input
         WHERE IsFirst(minute, 10) OVER (PARTITION BY Make) = 1",
        first_cars(),
    );
    assert_eq!(
        plates(&got),
        ["DXE 5291", "YZK 5704", "YHN 6970", "QYF 9358", "MDR 6128"]
    );
}

/// A window holds `(end - size, end]`: an event at a whole multiple of the size ends the
/// window before (it is not the first of the next).
#[test]
fn isfirst_windows_end_at_their_multiples_inclusive() {
    let got = rows_of(
        "SELECT LicensePlate, IsFirst(second, 10) AS f FROM Input",
        vec![
            car(10.0, "a", "A"),
            car(10.5, "a", "B"),
            car(20.0, "a", "C"),
            car(20.0, "a", "D"),
        ],
    );
    let firsts: Vec<(String, Value)> = got
        .iter()
        .map(|(_, r)| {
            let plate = match r.get("LicensePlate") {
                Some(Value::Str(s)) => s.to_string(),
                _ => String::new(),
            };
            (plate, r.get("f").cloned().unwrap_or_default())
        })
        .collect();
    assert_eq!(
        firsts,
        [
            ("A".to_owned(), Value::Int(1)),
            ("B".to_owned(), Value::Int(1)),
            ("C".to_owned(), Value::Int(0)),
            ("D".to_owned(), Value::Int(0)),
        ]
    );
}

#[test]
fn lag_sees_only_its_partition_within_the_duration_and_when() {
    let got = rows_of(
        "SELECT LicensePlate,
            LAG(LicensePlate) OVER (PARTITION BY Make LIMIT DURATION(second, 10)) AS prev,
            LAG(LicensePlate, 2, 'none') OVER (LIMIT DURATION(minute, 1)) AS two_back,
            LAST(LicensePlate) OVER (LIMIT DURATION(minute, 1) WHEN Make = 'b') AS last_b
         FROM Input",
        vec![
            car(1.0, "a", "A1"),
            car(2.0, "b", "B1"),
            car(3.0, "a", "A2"),
            car(20.0, "a", "A3"),
        ],
    );
    let col = |name: &str| -> Vec<Value> {
        got.iter()
            .map(|(_, r)| r.get(name).cloned().unwrap_or_default())
            .collect()
    };
    // A3 is 17 s after A2: past the 10 s.
    assert_eq!(
        col("prev"),
        [Value::Null, Value::Null, "A1".into(), Value::Null]
    );
    assert_eq!(
        col("two_back"),
        ["none".into(), "none".into(), "A1".into(), "B1".into()]
    );
    // LAST includes the current event when WHEN holds for it.
    assert_eq!(
        col("last_b"),
        [Value::Null, "B1".into(), "B1".into(), "B1".into()]
    );
}

#[test]
fn analytic_functions_are_refused_where_they_cannot_be_computed() {
    for (sql, says) in [
        ("SELECT LAG(v) AS p FROM a", "LIMIT DURATION"),
        ("SELECT LAG(v) OVER (LIMIT DURATION(hour, 1)) AS p FROM a GROUP BY TumblingWindow(second, 1)", "analytic function"),
        ("SELECT LAG(v, 0) OVER (LIMIT DURATION(hour, 1)) AS p FROM a", "offset"),
        ("SELECT IsFirst(fortnight, 1) AS f FROM a", "unit"),
        ("SELECT ABS(v) OVER (PARTITION BY k LIMIT DURATION(hour, 1)) AS s FROM a", "goes with LAG"),
        ("SELECT LAG(LAG(v) OVER (LIMIT DURATION(hour, 1))) OVER (LIMIT DURATION(hour, 1)) AS p FROM a", "analytic function"),
    ] {
        let e = punctual_sql::SqlQuery::parse(sql)
            .and_then(|q| {
                let graph = punctual_core::ops::QueryGraph::new();
                let a = graph.source::<Row, punctual_core::Ordered>();
                q.build(&[punctual_sql::SqlInput::new("a", a)]).map(|_| ())
            })
            .expect_err(sql);
        assert!(e.to_string().contains(says), "{sql}: {e}");
    }
}

#[test]
fn explain_prints_the_analytic_select() {
    let plan = plan_of("SELECT Make FROM Input WHERE LAG(Make) OVER (PARTITION BY Lane LIMIT DURATION(second, 90) WHEN Make <> 'x') <> Make");
    assert!(
        plan.contains("over each event in time order: select Make where LAG(Make) OVER (PARTITION BY Lane LIMIT DURATION(second, 90) WHEN Make <> 'x') <> Make"),
        "{plan}"
    );
}

mod model {
    use proptest::prelude::*;

    use punctual_core::{StreamItem, Time};
    use punctual_rows::Value;

    use super::common::*;

    /// Events (time, key, value) at distinct times, in time order.
    fn inputs() -> impl Strategy<Value = Vec<(i64, i64, i64)>> {
        prop::collection::btree_map(0i64..400, (0i64..3, -5i64..10), 0..50)
            .prop_map(|m| m.into_iter().map(|(t, (k, v))| (t, k, v)).collect())
    }

    /// The functions by their definitions, over the whole input at once.
    fn expected(events: &[(i64, i64, i64)], d: i64, w: i64) -> Vec<[Value; 3]> {
        let window = |t: i64| (t - 1).div_euclid(w) + 1;
        events
            .iter()
            .enumerate()
            .map(|(i, &(t, k, _))| {
                let before = &events[..i];
                let prev = before
                    .iter()
                    .rev()
                    .find(|e| e.1 == k && e.0 >= t - d)
                    .map_or(Value::Null, |e| Value::Int(e.2));
                let last = events[..=i]
                    .iter()
                    .rev()
                    .find(|e| e.2 > 0 && e.0 >= t - d)
                    .map_or(Value::Null, |e| Value::Int(e.2));
                let first = !before.iter().any(|e| e.1 == k && window(e.0) == window(t));
                [prev, last, Value::Int(i64::from(first))]
            })
            .collect()
    }

    proptest! {
        /// LAG, LAST and ISFIRST computed by the query are their definitions computed over the
        /// whole input (the events' order is the input's: the query reads them as they come,
        /// held until the end).
        #[test]
        fn the_functions_are_their_definitions(events in inputs(), d in 1i64..60, w in 1i64..60) {
            let sql = format!(
                "SELECT LAG(v) OVER (PARTITION BY k LIMIT DURATION(tick, {d})) AS p,
                        LAST(v) OVER (LIMIT DURATION(tick, {d}) WHEN v > 0) AS l,
                        ISFIRST(tick, {w}) OVER (PARTITION BY k) AS f
                 INTO out FROM a"
            );
            let mut items: Vec<StreamItem<punctual_rows::Row>> = events
                .iter()
                .map(|&(t, k, v)| {
                    StreamItem::point(
                        Time::from_ticks(t),
                        row(&[("k", Value::Int(k)), ("v", Value::Int(v))]),
                    )
                })
                .collect();
            items.push(StreamItem::Cti(Time::INF));
            let out = run(&sql, &[("a", items)]);
            let got: Vec<[Value; 3]> = super::events(&out["out"])
                .into_iter()
                .map(|(_, _, r)| {
                    let get = |n: &str| r.get(n).cloned().unwrap_or_default();
                    [get("p"), get("l"), get("f")]
                })
                .collect();
            prop_assert_eq!(got, expected(&events, d, w));
        }
    }
}

/// "Detect the duration between events": `LAST` of the start's time within `DATEDIFF`. (The
/// page's input says `Start` and `End` where its query compares with `'start'` and `'end'`;
/// this test takes the query as written and the input in the query's case.)
#[test]
fn detect_the_duration_between_events() {
    let click = |at: f64, event: &str, time: &str| {
        StreamItem::point(
            t(at),
            row(&[
                ("user", "user@location.com".into()),
                ("feature", "RightMenu".into()),
                ("Event", event.into()),
                ("Time", time.into()),
            ]),
        )
    };
    let got = rows_of(
        "SELECT [user], feature,
            DATEDIFF(second,
                LAST(Time) OVER (PARTITION BY [user], feature LIMIT DURATION(hour, 1) WHEN Event = 'start'),
                Time) AS duration
         FROM Input
         WHERE Event = 'end'",
        vec![
            click(1.0, "start", "2015-01-01T00:00:01.0000000Z"),
            click(8.0, "end", "2015-01-01T00:00:08.0000000Z"),
        ],
    );
    let want = row(&[
        ("user", "user@location.com".into()),
        ("feature", "RightMenu".into()),
        ("duration", Value::Int(7)),
    ]);
    assert_eq!(got, vec![(8.0, want)]);
}

/// DATEDIFF over values counts the unit's boundaries between two times, as Stream Analytics
/// does; a value that is not a time drops the row with the reason.
#[test]
fn datediff_of_values_counts_boundaries() {
    let pair = |at: f64, a: Value, b: Value| StreamItem::point(t(at), row(&[("a", a), ("b", b)]));
    let got = rows_of(
        "SELECT DATEDIFF(second, a, b) AS s, DATEDIFF(minute, a, b) AS m, DATEDIFF(ms, b, a) AS back
         FROM Input",
        vec![
            pair(1.0, "2015-01-01T00:00:00.9Z".into(), "2015-01-01T00:01:01.1Z".into()),
            pair(2.0, Value::Null, "2015-01-01T00:00:00Z".into()),
            pair(3.0, Value::Int(5), "2015-01-01T00:00:00Z".into()),
        ],
    );
    let values: Vec<[Value; 3]> = got
        .iter()
        .map(|(_, r)| {
            let get = |n: &str| r.get(n).cloned().unwrap_or_default();
            [get("s"), get("m"), get("back")]
        })
        .collect();
    assert_eq!(
        values,
        [
            [Value::Int(61), Value::Int(1), Value::Int(-60_200)],
            [Value::Null, Value::Null, Value::Null],
        ],
        "the number 5 is not a time: its row is dropped"
    );
}
