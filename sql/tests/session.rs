//! Stream Analytics' session windows, `SessionWindow(unit, timeout, max_duration) [OVER
//! (PARTITION BY keys)]`: where a session closes (a pause longer than the timeout, the
//! maximum duration checked at its whole multiples), which side of each boundary an event
//! falls on, partitions, the two spellings, refusals, and a property test against a direct
//! reading of the definition.

use punctual_core::StreamItem;
use punctual_rows::{Row, Value};
use punctual_sql::SqlQuery;

mod common;
use common::*;

/// `(System.Timestamp() in seconds, the row without it)` of the one output, in order.
fn results(sql: &str, input: Vec<StreamItem<Row>>, arrival: bool) -> Vec<(f64, Row)> {
    let names: &[&str] = if arrival { &["Input"] } else { &[] };
    rows_at(sql, &[("Input", ended(input))], names)
}

fn at(times: &[f64], device: &str) -> Vec<StreamItem<Row>> {
    times.iter().map(|x| reading(*x, device, 1)).collect()
}

/// `(end, count)` of each session of `COUNT(*)` over `input`.
fn counts(window: &str, input: Vec<StreamItem<Row>>) -> Vec<(f64, i64)> {
    let sql = format!("SELECT System.Timestamp() AS t, COUNT(*) AS n FROM Input GROUP BY {window}");
    results(&sql, input, false)
        .into_iter()
        .map(|(end, r)| {
            let n = r.get("n").and_then(Value::as_i64).expect("a count");
            let t = r.get("t").cloned().expect("the window's end");
            assert_eq!(
                t,
                Value::from(&*common::t(end).rfc3339()),
                "System.Timestamp() is the end"
            );
            (end, n)
        })
        .collect()
}

#[test]
fn a_session_closes_a_timeout_after_its_last_event_or_at_its_maximum_duration_check() {
    let input = at(
        &[
            1.0, 4.0, // a pause of 9 s after: closes at 4 + 5
            13.0, 16.0, 19.0, 22.0, // check at 30; closes at 22 + 5
            51.0, 55.0, 59.0, 63.0, 67.0, // check at 70, before 67 + 5
            71.0, // after the check: a new session
        ],
        "a",
    );
    assert_eq!(
        counts("SessionWindow(second, 5, 10)", input),
        [(9.0, 2), (27.0, 4), (70.0, 5), (76.0, 1)]
    );
}

#[test]
fn an_event_exactly_at_the_close_belongs_to_the_session() {
    // 105 is exactly 5 s after 100: the session goes on (to 110).
    assert_eq!(
        counts("SessionWindow(second, 5, 100)", at(&[100.0, 105.0], "a")),
        [(110.0, 2)]
    );
    // Opened at 201, checked at 220: the event at 220 is the session's last, 221 opens one.
    let input = at(&[201.0, 205.0, 209.0, 213.0, 217.0, 220.0, 221.0], "a");
    assert_eq!(
        counts("SessionWindow(second, 5, 10)", input),
        [(220.0, 6), (226.0, 1)]
    );
}

#[test]
fn partitions_have_sessions_of_their_own_and_groups_split_a_session() {
    // a at 1, 4, 7; b at 3, 8: together one session (1 .. 13); apart, a's closes at 12 and
    // b's at 13.
    let mut input = at(&[1.0, 4.0, 7.0], "a");
    input.extend(at(&[3.0, 8.0], "b"));
    input.sort_by_key(|i| match i {
        StreamItem::Insert(e) => e.kind.start(),
        StreamItem::Cti(t) => *t,
    });
    let rows = |window: &str| -> Vec<(f64, String, i64)> {
        let sql = format!("SELECT device, COUNT(*) AS n FROM Input GROUP BY device, {window}");
        results(&sql, input.clone(), false)
            .into_iter()
            .map(|(end, r)| {
                let d = r.get("device").and_then(Value::as_str).expect("a device");
                (
                    end,
                    d.to_owned(),
                    r.get("n").and_then(Value::as_i64).expect("n"),
                )
            })
            .collect()
    };
    assert_eq!(
        rows("SessionWindow(second, 5, 100)"),
        [(13.0, "a".to_owned(), 3), (13.0, "b".to_owned(), 2)]
    );
    assert_eq!(
        rows("SessionWindow(second, 5, 100) OVER (PARTITION BY device)"),
        [(12.0, "a".to_owned(), 3), (13.0, "b".to_owned(), 2)]
    );
}

#[test]
fn both_spellings_and_the_short_name_are_one_window() {
    let input = at(&[1.0, 4.0, 13.0, 18.0, 23.0, 27.0, 40.0], "a");
    let positional = counts("SessionWindow(second, 6, 20)", input.clone());
    assert_eq!(positional, [(10.0, 2), (33.0, 4), (46.0, 1)]);
    for window in [
        "SessionWindow(Timeout(second, 6), MaxDuration(second, 20))",
        "Session(second, 6, 20)",
        "SESSION (Timeout(ms, 6000), MaxDuration(ms, 20000))",
    ] {
        assert_eq!(counts(window, input.clone()), positional, "{window}");
    }
    // A field named `session` is still a key.
    let sql =
        "SELECT session, COUNT(*) AS n FROM Input GROUP BY session, TumblingWindow(second, 10)";
    SqlQuery::parse(sql).expect("a key named session");
}

#[test]
fn the_select_list_and_having_read_the_sessions_groups() {
    let input = at(&[1.0, 2.0, 3.0, 30.0], "a");
    let sql = "SELECT System.Timestamp() AS t, COUNT(*) AS n, SUM(v) AS total FROM Input
               GROUP BY SessionWindow(second, 5, 60) HAVING n > 1";
    let rows = results(sql, input, false);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].0, 8.0);
    assert_eq!(rows[0].1.get("total"), Some(&Value::Int(3)));
}

#[test]
fn lengths_that_cannot_make_a_session_are_refused_with_the_reason() {
    for (sql, says) in [
        (
            "SELECT COUNT(*) AS n FROM Input GROUP BY SessionWindow(second, 0, 10)",
            "timeout must be a whole number of second above zero",
        ),
        (
            "SELECT COUNT(*) AS n FROM Input GROUP BY SessionWindow(second, 10, 5)",
            "maximum duration (5s) is shorter than its timeout (10s)",
        ),
    ] {
        let e = SqlQuery::parse(sql).map(|_| ()).expect_err(sql);
        assert!(e.to_string().contains(says), "{sql}: {e}");
    }
}

/// Sessions as the definition reads, over sorted times: `(end, count)`.
fn direct(times: &[i64], timeout: i64, max: i64) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let mut open: Option<(i64, i64, i64)> = None; // (check, last, count)
    for &x in times {
        if let Some((check, last, n)) = open {
            let close = (last + timeout).min(check);
            if x <= close {
                open = Some((check, x, n + 1));
                continue;
            }
            out.push((close, n));
        }
        let check = ((x + max) as f64 / max as f64).ceil() as i64 * max;
        open = Some((check, x, 1));
    }
    if let Some((check, last, n)) = open {
        out.push(((last + timeout).min(check), n));
    }
    out
}

mod property {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The query's sessions are the definition's, whatever order the events arrive in.
        #[test]
        fn sessions_follow_the_definition_in_any_arrival_order(
            gaps in proptest::collection::vec(0i64..12, 1..40),
            timeout in 1i64..8,
            extra in 0i64..20,
            order in any::<proptest::sample::Index>(),
        ) {
            let max = timeout + extra;
            let mut times = Vec::new();
            let mut x = 0;
            for g in gaps {
                x += g;
                times.push(x);
            }
            let expected = direct(&times, timeout, max);
            let mut input: Vec<_> = times.iter().map(|x| reading(*x as f64, "a", 1)).collect();
            let k = order.index(input.len());
            input.rotate_left(k);
            let sql = format!(
                "SELECT COUNT(*) AS n FROM Input GROUP BY SessionWindow(second, {timeout}, {max})"
            );
            let got: Vec<(i64, i64)> = results(&sql, input, true)
                .into_iter()
                .map(|(end, r)| (end as i64, r.get("n").and_then(Value::as_i64).unwrap_or(-1)))
                .collect();
            prop_assert_eq!(got, expected);
        }
    }
}
