//! `LEFT [OUTER] JOIN`, as Stream Analytics has it: every pair of the inner join, and each
//! left event without a partner with `NULL` for the right source, at the latest time a
//! partner could have come (`DATEDIFF` joins) or at its own time (reference data); the
//! absence-of-events query of Stream Analytics' JOIN page; conditions; both orientations of
//! `DATEDIFF`; and a property test against a direct reading of the definition in any arrival
//! order.

use punctual_core::{StreamItem, Time};
use punctual_rows::{Row, Value};
use punctual_sql::SqlQuery;

mod common;
use common::*;

fn toll(at: f64, id: i64, plate: &str) -> StreamItem<Row> {
    StreamItem::point(
        t(at),
        row(&[
            ("TollId", Value::Int(id)),
            ("LicensePlate", Value::from(plate)),
        ]),
    )
}

fn entries_and_exits() -> [(&'static str, Vec<StreamItem<Row>>); 2] {
    let m = 60.0;
    [
        (
            "Input1",
            ended(vec![
                toll(0.0, 1, "A"),
                toll(m, 1, "B"),
                toll(2.0 * m, 2, "C"),
                toll(3.0 * m, 2, "D"),
            ]),
        ),
        (
            "Input2",
            ended(vec![
                toll(5.0 * m, 1, "A"),
                // D leaves exactly 15 minutes after it came: within the bound.
                toll(18.0 * m, 2, "D"),
                // C leaves after 18 minutes: too late to be its exit.
                toll(20.0 * m, 2, "C"),
            ]),
        ),
    ]
}

fn plate_and_exit(r: &Row) -> (String, Value) {
    let plate = r
        .get("LicensePlate")
        .and_then(Value::as_str)
        .expect("a plate");
    (
        plate.to_owned(),
        r.get("exit").cloned().unwrap_or(Value::Null),
    )
}

#[test]
fn the_absence_of_events_query_finds_the_cars_that_did_not_leave_within_15_minutes() {
    // Stream Analytics' JOIN page, with the events carrying their times.
    let sql = "SELECT I1.TollId, I1.LicensePlate
               FROM Input1 I1
               LEFT OUTER JOIN Input2 I2
               ON I1.TollId = I2.TollId AND I1.LicensePlate = I2.LicensePlate
               AND DATEDIFF(minute, I1, I2) BETWEEN 0 AND 15
               WHERE I2.TollId IS NULL";
    let got: Vec<(f64, String)> = rows_at(sql, &entries_and_exits(), &[])
        .into_iter()
        .map(|(at, r)| (at, plate_and_exit(&r).0))
        .collect();
    // B (in at 1 min) and C (in at 2 min): no exit within 15 minutes, each at the latest
    // time its exit could have come.
    assert_eq!(got, [(960.0, "B".to_owned()), (1020.0, "C".to_owned())]);
}

#[test]
fn pairs_and_left_events_without_a_partner_come_out_together() {
    let sql = "SELECT I1.LicensePlate, I2.TollId AS exit
               FROM Input1 I1 LEFT JOIN Input2 I2
               ON I1.TollId = I2.TollId AND I1.LicensePlate = I2.LicensePlate
               AND DATEDIFF(minute, I1, I2) BETWEEN 0 AND 15";
    let mut got: Vec<(f64, String, Value)> = rows_at(sql, &entries_and_exits(), &[])
        .into_iter()
        .map(|(at, r)| {
            let (p, e) = plate_and_exit(&r);
            (at, p, e)
        })
        .collect();
    got.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert_eq!(
        got,
        [
            (300.0, "A".to_owned(), Value::Int(1)),
            (960.0, "B".to_owned(), Value::Null),
            (1020.0, "C".to_owned(), Value::Null),
            (1080.0, "D".to_owned(), Value::Int(2)),
        ]
    );
}

/// (A pair's time is its `DATEDIFF`'s second source's, so the pairs' times differ between the
/// two ways round; the rows and the times of those without a partner do not.)
#[test]
fn datediff_written_the_other_way_round_gives_the_same_rows() {
    let written = |dd: &str| {
        let sql = format!(
            "SELECT I1.LicensePlate, I2.TollId AS exit
             FROM Input1 I1 LEFT OUTER JOIN Input2 I2
             ON I1.TollId = I2.TollId AND I1.LicensePlate = I2.LicensePlate AND {dd}"
        );
        let mut rows: Vec<(f64, String, Value)> = rows_at(&sql, &entries_and_exits(), &[])
            .into_iter()
            .map(|(at, r)| {
                let (p, e) = plate_and_exit(&r);
                (if e == Value::Null { at } else { -1.0 }, p, e)
            })
            .collect();
        rows.sort_by(|a, b| a.1.cmp(&b.1));
        rows
    };
    assert_eq!(
        written("DATEDIFF(minute, I2, I1) BETWEEN -15 AND 0"),
        written("DATEDIFF(minute, I1, I2) BETWEEN 0 AND 15")
    );
}

#[test]
fn a_candidate_that_fails_the_other_conditions_is_no_partner() {
    let sql = "SELECT I1.LicensePlate, I2.TollId AS exit
               FROM Input1 I1 LEFT OUTER JOIN Input2 I2
               ON I1.LicensePlate = I2.LicensePlate AND I2.TollId > 1
               AND DATEDIFF(minute, I1, I2) BETWEEN 0 AND 15";
    let mut got: Vec<(String, Value)> = rows_at(sql, &entries_and_exits(), &[])
        .iter()
        .map(|(_, r)| plate_and_exit(r))
        .collect();
    got.sort_by(|a, b| a.0.cmp(&b.0));
    // A's exit is at toll 1: not a partner under `I2.TollId > 1`.
    assert_eq!(
        got,
        [
            ("A".to_owned(), Value::Null),
            ("B".to_owned(), Value::Null),
            ("C".to_owned(), Value::Null),
            ("D".to_owned(), Value::Int(2)),
        ]
    );
}

#[test]
fn a_reading_without_reference_data_comes_out_at_its_own_time_with_nulls() {
    let rates = vec![
        StreamItem::interval(
            t(0.0),
            t(10.0),
            row(&[("device", Value::from("a")), ("rate", Value::Int(2))]),
        ),
        StreamItem::Cti(Time::INF),
    ];
    let readings = ended(vec![
        reading(5.0, "a", 1),
        reading(15.0, "a", 1),
        reading(16.0, "b", 1),
    ]);
    let sql = "SELECT r.device, k.rate FROM readings r LEFT JOIN rates k ON r.device = k.device";
    let got: Vec<(f64, Value)> = rows_at(sql, &[("readings", readings), ("rates", rates)], &[])
        .into_iter()
        .map(|(at, r)| (at, r.get("rate").cloned().unwrap_or(Value::Int(-1))))
        .collect();
    assert_eq!(
        got,
        [
            (5.0, Value::Int(2)),
            (15.0, Value::Null),
            (16.0, Value::Null)
        ]
    );
    let plan = SqlQuery::parse(sql)
        .expect("parses")
        .plan(&[])
        .expect("a plan")
        .to_string();
    assert!(
        plan.contains("left outer join with reference data on r.device = k.device"),
        "{plan}"
    );
}

#[test]
fn a_where_on_the_right_side_stays_above_an_outer_join() {
    let plan = SqlQuery::parse(
        "SELECT I1.LicensePlate FROM Input1 I1 LEFT JOIN Input2 I2
         ON I1.LicensePlate = I2.LicensePlate AND DATEDIFF(second, I1, I2) BETWEEN 0 AND 5
         WHERE I2.TollId IS NULL AND I1.TollId = 1",
    )
    .expect("parses")
    .plan(&[])
    .expect("a plan")
    .to_string();
    // The left side's condition is pushed below the join; the right side's stays above.
    assert!(plan.contains("filter I2.TollId IS NULL\n"), "{plan}");
    assert!(
        plan.contains("filter I1.TollId = 1 (pushed down)"),
        "{plan}"
    );
}

#[test]
fn right_and_full_outer_joins_are_refused_by_name() {
    for (sql, named) in [
        (
            "SELECT v FROM a RIGHT OUTER JOIN b ON a.k = b.k",
            "RIGHT OUTER JOIN",
        ),
        (
            "SELECT v FROM a FULL OUTER JOIN b ON a.k = b.k",
            "FULL OUTER JOIN",
        ),
    ] {
        let e = SqlQuery::parse(sql).map(|_| ()).expect_err(sql);
        assert!(e.to_string().contains(named), "{sql}: {e}");
    }
}

/// The left events without a partner, read from the definition: `(left time, key)` of each
/// left `(time, key)` with no right `(time, key)` of its key in `[time, time + within]`.
fn direct(lefts: &[(i64, u8)], rights: &[(i64, u8)], within: i64) -> Vec<(i64, u8)> {
    let mut out: Vec<(i64, u8)> = lefts
        .iter()
        .filter(|(t, k)| {
            !rights
                .iter()
                .any(|(u, j)| j == k && *u >= *t && *u <= t + within)
        })
        .copied()
        .collect();
    out.sort();
    out
}

mod property {
    use super::*;
    use proptest::prelude::*;

    fn item(at: i64, key: u8, side: i64) -> StreamItem<Row> {
        StreamItem::point(
            t(at as f64),
            row(&[
                ("k", Value::Int(i64::from(key))),
                ("at", Value::Int(at)),
                ("side", Value::Int(side)),
            ]),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// The query's left events without a partner are the definition's, at their time
        /// plus the bound, whatever order the left events arrive in.
        #[test]
        fn left_events_without_a_partner_follow_the_definition(
            lefts in proptest::collection::vec((0i64..40, 0u8..2), 1..20),
            rights in proptest::collection::vec((0i64..40, 0u8..2), 0..20),
            within in 0i64..6,
            turn in any::<proptest::sample::Index>(),
        ) {
            let mut rights = rights;
            rights.sort();
            let mut left_items: Vec<_> = lefts.iter().map(|(at, k)| item(*at, *k, 0)).collect();
            let k = turn.index(left_items.len());
            left_items.rotate_left(k);
            let right_items = rights.iter().map(|(at, k)| item(*at, *k, 1)).collect();
            let sql = format!(
                "SELECT l.at AS at, l.k AS k FROM l LEFT JOIN r
                 ON l.k = r.k AND DATEDIFF(second, l, r) BETWEEN 0 AND {within}
                 WHERE r.k IS NULL"
            );
            let inputs = [("l", ended(left_items)), ("r", ended(right_items))];
            let mut got: Vec<(i64, u8)> = Vec::new();
            for (stamp, r) in rows_at(&sql, &inputs, &["l"]) {
                let at = r.get("at").and_then(Value::as_i64).unwrap_or(-1);
                let key = r.get("k").and_then(Value::as_i64).unwrap_or(-1);
                prop_assert_eq!(stamp as i64, at + within, "at the bound: {:?}", r);
                got.push((at, key as u8));
            }
            got.sort();
            prop_assert_eq!(got, direct(&lefts, &rights, within));
        }
    }
}

/// A join of three sources with a `DATEDIFF` in each join: the second may name a source
/// whose time the rows joined so far have (both of the first join's when it holds them at one
/// time, `BETWEEN 0 AND 0`; the source joined second when the first joined within a span),
/// and is refused, with the reason, when it names another.
#[test]
fn datediff_in_a_join_of_three_sources_names_a_source_the_joined_rows_are_timed_by() {
    let m = 60.0;
    let inputs = |a: &[(f64, &str)], b: &[(f64, &str)], c: &[(f64, &str)]| {
        let items =
            |xs: &[(f64, &str)]| ended(xs.iter().map(|(at, plate)| toll(*at, 1, plate)).collect());
        [("A", items(a)), ("B", items(b)), ("C", items(c))]
    };
    // Each result's time and the three plates (`-` for NULL).
    let joined = |sql: &str, a: &[(f64, &str)], b: &[(f64, &str)], c: &[(f64, &str)]| {
        rows_at(sql, &inputs(a, b, c), &[])
            .iter()
            .map(|(at, r)| {
                let plate = |f: &str| match r.get(f) {
                    Some(Value::Str(s)) => s.to_string(),
                    _ => "-".to_owned(),
                };
                (*at, [plate("a"), plate("b"), plate("c")])
            })
            .collect::<Vec<(f64, [String; 3])>>()
    };
    let three = |a: &str, b: &str, c: &str| [a.to_owned(), b.to_owned(), c.to_owned()];
    // The pivot of Stream Analytics' parsing-JSON page: two LEFT JOINs at one time.
    let sql = "SELECT a.LicensePlate AS a, b.LicensePlate AS b, c.LicensePlate AS c
               FROM A a
               LEFT JOIN B b ON a.TollId = b.TollId AND DATEDIFF(minute, a, b) BETWEEN 0 AND 0
               LEFT JOIN C c ON a.TollId = c.TollId AND DATEDIFF(minute, a, c) BETWEEN 0 AND 0";
    let rows = joined(
        sql,
        &[(0.0, "x"), (m, "y")],
        &[(0.0, "bx")],
        &[(0.0, "cx"), (m, "cy")],
    );
    assert_eq!(
        rows,
        [(0.0, three("x", "bx", "cx")), (m, three("y", "-", "cy"))]
    );
    // Within a span: the rows are at b's time, so the second DATEDIFF names b.
    let sql = "SELECT a.LicensePlate AS a, b.LicensePlate AS b, c.LicensePlate AS c
               FROM A a
               JOIN B b ON a.TollId = b.TollId AND DATEDIFF(minute, a, b) BETWEEN 0 AND 5
               JOIN C c ON b.TollId = c.TollId AND DATEDIFF(minute, b, c) BETWEEN 0 AND 1";
    let rows = joined(
        sql,
        &[(0.0, "x")],
        &[(3.0 * m, "bx")],
        &[(4.0 * m, "cx"), (5.0 * m, "cy")],
    );
    assert_eq!(rows, [(4.0 * m, three("x", "bx", "cx"))]);
    // Naming a instead: the rows are not at a's time.
    let e = refusal_in(
        &sql.replace("DATEDIFF(minute, b, c)", "DATEDIFF(minute, a, c)"),
        &["A", "B", "C"],
        None,
    );
    assert!(
        e.contains("names `a`, whose time the rows joined so far do not have"),
        "{e}"
    );
}
