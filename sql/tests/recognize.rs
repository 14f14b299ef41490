//! `MATCH_RECOGNIZE`: the query-patterns page's ATM query (its typos mended), when a match
//! comes out (at its last event when nothing could extend it, else when the duration after
//! its first event has passed), `LIMIT DURATION`'s boundary, partitions, the two skips,
//! measures, refusals that name what is wrong, and a property test against the patterns read
//! as regular expressions over the whole input, in any arrival order.

use punctual_core::{StreamItem, Time};
use punctual_rows::{Row, Value};
use punctual_sql::SqlQuery;

mod common;
use common::*;

/// The output's rows with their times (seconds), in order.
fn results(sql: &str, input: Vec<StreamItem<Row>>) -> Vec<(f64, Row)> {
    rows_at(sql, &[("Input", input)], &[])
}

fn int(r: &Row, field: &str) -> i64 {
    r.get(field).and_then(Value::as_i64).unwrap_or(-1)
}

fn text(r: &Row, field: &str) -> String {
    r.get(field)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// An ATM's operation at `at` seconds.
fn operation(at: f64, atm: i64, what: &str, code: &str) -> StreamItem<Row> {
    StreamItem::point(
        t(at),
        row(&[
            ("ATM_id", Value::Int(atm)),
            ("Operation_id", Value::Str(what.into())),
            ("Return_Code", Value::Str(code.into())),
        ]),
    )
}

/// The page's input, in the page's order (ATM 1's 8 s event after ATM 2's 11 s one).
fn atm_input() -> Vec<StreamItem<Row>> {
    ended(vec![
        operation(0.0, 1, "Entering Pin", "Success"),
        operation(7.0, 2, "Opening Money Slot", "Success"),
        operation(11.0, 2, "Closing Money Slot", "Success"),
        operation(8.0, 1, "Entering Withdraw Quantity", "Success"),
        operation(14.0, 1, "Opening Money Slot", "Warning"),
        operation(19.0, 1, "Printing Bank Balance", "Warning"),
    ])
}

fn atm_query(skip: &str) -> String {
    format!(
        "SELECT * FROM Input MATCH_RECOGNIZE (
            PARTITION BY ATM_id
            LIMIT DURATION(minute, 1)
            MEASURES
                First(Warning.ATM_id) AS ATM_id,
                First(Warning.Operation_Id) AS First_Warning_Operation_id,
                COUNT(Warning.Operation_Id) AS Warnings
            AFTER MATCH SKIP {skip}
            PATTERN (Success* Warning{{2,}})
            DEFINE
                Success AS Success.Return_Code = 'Success',
                Warning AS Warning.Return_Code <> 'Success'
        ) AS patternMatch"
    )
}

/// Two warnings in a row at ATM 1: a match from each of its first three events (SKIP TO NEXT
/// ROW), each known once a minute has passed since its first event (a third warning could
/// still have come); SKIP PAST LAST ROW, one.
#[test]
fn the_atm_query_matches_two_warnings_in_a_row() {
    let got = results(&atm_query("TO NEXT ROW"), atm_input());
    let summary: Vec<(f64, i64, String, i64)> = got
        .iter()
        .map(|(at, r)| {
            let op = text(r, "First_Warning_Operation_id");
            (*at, int(r, "ATM_id"), op, int(r, "Warnings"))
        })
        .collect();
    let slot = "Opening Money Slot".to_owned();
    assert_eq!(
        summary,
        vec![
            (60.0, 1, slot.clone(), 2),
            (68.0, 1, slot.clone(), 2),
            (74.0, 1, slot.clone(), 2),
        ]
    );
    let got = results(&atm_query("PAST LAST ROW"), atm_input());
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, 60.0);
    // The row: the measures (the partition's `ATM_id` is the measure of that name).
    let names: Vec<&str> = got[0].1.fields().map(|(n, _)| n).collect();
    assert_eq!(names, ["ATM_id", "First_Warning_Operation_id", "Warnings"]);
}

/// A pattern nothing could extend is known at its last event; a trailing greedy quantifier
/// waits for the event after it (or for the duration to pass).
#[test]
fn a_match_comes_out_as_soon_as_nothing_to_come_could_change_it() {
    let input = |codes: &[(f64, &str)]| {
        ended(
            codes
                .iter()
                .map(|(at, code)| operation(*at, 1, "op", code))
                .collect(),
        )
    };
    let query = |pattern: &str| {
        format!(
            "SELECT * FROM Input MATCH_RECOGNIZE (LIMIT DURATION(second, 100)
               MEASURES LAST(W.Return_Code) AS code, COUNT(*) AS n
               AFTER MATCH SKIP PAST LAST ROW
               PATTERN ({pattern})
               DEFINE S AS Return_Code = 'Success', W AS Return_Code = 'Warning')"
        )
    };
    let events = [
        (1.0, "Success"),
        (2.0, "Warning"),
        (5.0, "Warning"),
        (9.0, "Success"),
    ];
    // `S W`: known at the warning.
    let got = results(&query("S W"), input(&events));
    let at: Vec<(f64, i64)> = got.iter().map(|(at, r)| (*at, int(r, "n"))).collect();
    assert_eq!(at, [(2.0, 2)]);
    // `S W+`: a third event could have been a warning: known at the success at 9.
    let got = results(&query("S W+"), input(&events));
    let at: Vec<(f64, i64)> = got.iter().map(|(at, r)| (*at, int(r, "n"))).collect();
    assert_eq!(at, [(9.0, 3)]);
    // With no event after it, when the duration has passed: 1 + 100.
    let got = results(&query("S W+"), input(&events[..3]));
    let at: Vec<(f64, i64)> = got.iter().map(|(at, r)| (*at, int(r, "n"))).collect();
    assert_eq!(at, [(101.0, 3)]);
}

/// An event exactly `LIMIT DURATION` after the match's first is in it; one tick later is not.
#[test]
fn limit_duration_takes_an_event_exactly_at_its_end() {
    let q = "SELECT * FROM Input MATCH_RECOGNIZE (LIMIT DURATION(second, 10)
               MEASURES COUNT(*) AS n PATTERN (S W)
               DEFINE S AS Return_Code = 'Success', W AS Return_Code = 'Warning')";
    let at_end = ended(vec![
        operation(5.0, 1, "a", "Success"),
        operation(15.0, 1, "b", "Warning"),
    ]);
    assert_eq!(results(q, at_end).len(), 1);
    let after = ended(vec![
        operation(5.0, 1, "a", "Success"),
        StreamItem::point(
            Time::from_ticks(t(15.0).ticks() + 1),
            row(&[("Return_Code", Value::Str("Warning".into()))]),
        ),
    ]);
    assert_eq!(results(q, after).len(), 0);
}

/// Each partition is matched apart: events of another ATM in between do not break a run.
#[test]
fn partitions_are_matched_apart() {
    let q = "SELECT atm, n FROM Input MATCH_RECOGNIZE (PARTITION BY ATM_id AS atm_key
               LIMIT DURATION(minute, 1)
               MEASURES FIRST(W.ATM_id) AS atm, COUNT(*) AS n
               AFTER MATCH SKIP PAST LAST ROW
               PATTERN (W W) DEFINE W AS Return_Code = 'Warning') AS m";
    let input = ended(vec![
        operation(1.0, 1, "a", "Warning"),
        operation(2.0, 2, "b", "Warning"),
        operation(3.0, 1, "c", "Warning"),
        operation(4.0, 2, "d", "Success"),
    ]);
    let err = SqlQuery::parse(q)
        .err()
        .map(|e| e.show(q))
        .unwrap_or_default();
    // `PARTITION BY` takes expressions, not aliases.
    assert!(err.contains("expected"), "{err}");
    let q = q.replace(" AS atm_key", "");
    let got = results(&q, input);
    let rows: Vec<(i64, i64)> = got
        .iter()
        .map(|(_, r)| (int(r, "atm"), int(r, "n")))
        .collect();
    assert_eq!(rows, [(1, 2)]);
}

/// `DEFINE` of those of `conditions` that `pattern` names (a definition of a variable the
/// pattern does not name is refused).
fn defined(pattern: &str, conditions: &[(&str, &str)]) -> String {
    let words: Vec<&str> = pattern
        .split(|c: char| !c.is_ascii_alphanumeric())
        .collect();
    conditions
        .iter()
        .filter(|(v, _)| words.contains(v))
        .map(|(v, c)| format!("{v} AS {c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Alternatives are tried in the order written; `.` is any event; a quantifier's counts.
#[test]
fn alternatives_any_and_counted_quantifiers() {
    let input = ended(
        [0, 1, 2, 3, 4, 5]
            .iter()
            .map(|v| StreamItem::point(t(f64::from(*v)), row(&[("v", Value::Int(i64::from(*v)))])))
            .collect(),
    );
    let run = |pattern: &str| -> Vec<(i64, i64)> {
        let q = format!(
            "SELECT * FROM Input MATCH_RECOGNIZE (LIMIT DURATION(second, 100)
               MEASURES FIRST(v) AS first, LAST(v) AS last
               AFTER MATCH SKIP PAST LAST ROW
               PATTERN ({pattern})
               DEFINE {})",
            defined(pattern, &[("Small", "v < 3"), ("Even", "v % 2 = 0")])
        );
        results(&q, input.clone())
            .iter()
            .map(|(_, r)| (int(r, "first"), int(r, "last")))
            .collect()
    };
    assert_eq!(run("Small{2}"), [(0, 1)]);
    assert_eq!(run("Small{2,3}"), [(0, 2)]);
    assert_eq!(run("(Even | Small) ."), [(0, 1), (2, 3), (4, 5)]);
    assert_eq!(run("Even Small"), [(0, 1)]);
    assert_eq!(run("Small+ . Even"), [(0, 4)]);
}

/// What the query says wrongly is refused with what to write (the page's ATM query as
/// written has three slips: each is named).
#[test]
fn refusals_name_what_is_wrong() {
    let fields = ["ATM_id", "Operation_id", "Return_Code", "Time"];
    let refused = |q: &str, says: &str| {
        let message = refusal(q, "Input", Some(&fields));
        assert!(message.contains(says), "{says}: {message}");
    };
    let atm = atm_query("TO NEXT ROW");
    for (written, slip, says) in [
        ("PARTITION BY", "PARTITON BY", "did you mean PARTITION BY?"),
        (
            "Warning AS Warning.",
            "Failure AS Warning.",
            "DEFINE Failure: the PATTERN has no variable `Failure`",
        ),
        (
            "Success AS Success.",
            "Success AS Succes.",
            "`Succes` is not a field",
        ),
        ("LIMIT DURATION(minute, 1)", "", "needs LIMIT DURATION"),
        (
            "Warning.Return_Code <>",
            "Success.Return_Code <>",
            "reads another variable's event",
        ),
        (
            "COUNT(Warning",
            "SUM(Warning",
            "SUM in MEASURES is not supported yet",
        ),
        ("Warning{2,}", "Warning+?", "reluctant"),
        ("Warning{2,}", "Warning{3,2}", "the most is less"),
        (
            "AFTER MATCH",
            "LIMIT DURATION(second, 5) AFTER MATCH",
            "LIMIT DURATION (or WITHIN) is given twice",
        ),
    ] {
        refused(&atm.replace(written, slip), says);
    }
    refused(
        &format!("{atm} JOIN Other ON patternMatch.ATM_id = Other.ATM_id"),
        "MATCH_RECOGNIZE and JOIN in one select",
    );
}

/// Flink's spelling: `WITHIN INTERVAL`, `ORDER BY`, `ONE ROW PER MATCH`.
#[test]
fn flinks_spelling_reads_the_same() {
    let q = "SELECT * FROM Input MATCH_RECOGNIZE (
               PARTITION BY ATM_id ORDER BY Time
               MEASURES COUNT(*) AS n
               ONE ROW PER MATCH
               AFTER MATCH SKIP PAST LAST ROW
               PATTERN (W W)
               WITHIN INTERVAL '1' MINUTE
               DEFINE W AS Return_Code = 'Warning')";
    let got = results(q, atm_input());
    assert_eq!(got.len(), 1);
    assert_eq!(int(&got[0].1, "n"), 2);
}

mod property {
    use super::*;
    use proptest::prelude::*;
    use regex::Regex;

    /// The patterns tried, with the same pattern as a regular expression over one letter per
    /// event: `a` + the set of variables that hold for it (A: bit 0, B: bit 1, C: bit 2).
    const PATTERNS: &[(&str, &str)] = &[
        ("A B", "[bdfh][cdgh]"),
        ("A+ B", "[bdfh]+[cdgh]"),
        ("A* B+", "[bdfh]*[cdgh]+"),
        ("A B* C", "[bdfh][cdgh]*[efgh]"),
        ("(A | B) C+", "(?:[bdfh]|[cdgh])[efgh]+"),
        ("A{2,3} C?", "[bdfh]{2,3}[efgh]?"),
        ("(A B)+ C", "(?:[bdfh][cdgh])+[efgh]"),
        (". B", "[a-h][cdgh]"),
    ];

    /// A: v < 3; B: v >= 2; C: v even.
    fn letter(v: i64) -> char {
        let bits = u8::from(v < 3) | (u8::from(v >= 2) << 1) | (u8::from(v % 2 == 0) << 2);
        char::from(b'a' + bits)
    }

    /// The matches the definition gives over one partition's events (times in seconds,
    /// values), with every event known: `(first value, last value, events)` each.
    fn direct(
        events: &[(i64, i64)],
        regex: &Regex,
        limit: i64,
        past_last: bool,
    ) -> Vec<(i64, i64, i64)> {
        let mut out = Vec::new();
        let mut s = 0;
        while s < events.len() {
            let text: String = events[s..]
                .iter()
                .take_while(|(t, _)| *t <= events[s].0 + limit)
                .map(|(_, v)| letter(*v))
                .collect();
            match regex.find(&text).filter(|m| m.start() == 0 && m.end() > 0) {
                Some(m) => {
                    let n = m.end();
                    out.push((events[s].1, events[s + n - 1].1, n as i64));
                    s += if past_last { n } else { 1 };
                }
                None => s += 1,
            }
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        /// The operator's matches are the definition's, whatever the order events arrive
        /// in between CTIs, and come out at the same times in the same order.
        #[test]
        fn matches_follow_the_definition_in_any_arrival_order(
            steps in proptest::collection::vec((1i64..4, 0i64..6, any::<bool>()), 1..40),
            which in 0..PATTERNS.len(),
            limit in 1i64..12,
            past_last in any::<bool>(),
            segment in 1usize..6,
            seed in any::<u64>(),
        ) {
            let (pattern, expression) = PATTERNS[which];
            let regex = Regex::new(&format!("^(?:{expression})")).expect("a regex");
            let mut time = 0;
            let mut all = Vec::new();
            for (gap, v, device) in steps {
                time += gap;
                all.push((time, v, if device { "a" } else { "b" }));
            }
            let mut expected: Vec<(String, i64, i64, i64)> = Vec::new();
            for device in ["a", "b"] {
                let mine: Vec<(i64, i64)> =
                    all.iter().filter(|e| e.2 == device).map(|e| (e.0, e.1)).collect();
                for (f, l, n) in direct(&mine, &regex, limit, past_last) {
                    expected.push((device.to_owned(), f, l, n));
                }
            }
            expected.sort();
            let skip = if past_last { "PAST LAST ROW" } else { "TO NEXT ROW" };
            let q = format!(
                "SELECT * FROM Input MATCH_RECOGNIZE (PARTITION BY device
                   LIMIT DURATION(second, {limit})
                   MEASURES FIRST(v) AS f, LAST(v) AS l, COUNT(*) AS n,
                            FIRST(Input.v) AS also_f
                   AFTER MATCH SKIP {skip}
                   PATTERN ({pattern})
                   DEFINE {})",
                defined(pattern, &[("A", "v < 3"), ("B", "v >= 2"), ("C", "v % 2 = 0")])
            );
            // Arrival: segments of the events, each shuffled, a CTI at the next one's start.
            let arrive = |mut rng: u64| {
                let mut input = Vec::new();
                for chunk in all.chunks(segment) {
                    let mut items: Vec<StreamItem<Row>> =
                        chunk.iter().map(|(at, v, d)| reading(*at as f64, d, *v)).collect();
                    for i in (1..items.len()).rev() {
                        rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                        items.swap(i, (rng >> 33) as usize % (i + 1));
                    }
                    input.extend(items);
                    if let Some(last) = chunk.last() {
                        input.push(StreamItem::Cti(t(last.0 as f64 + 1.0)));
                    }
                }
                ended(input)
            };
            let got = results(&q, arrive(seed));
            let mut rows: Vec<(String, i64, i64, i64)> = got
                .iter()
                .map(|(_, r)| (text(r, "device"), int(r, "f"), int(r, "l"), int(r, "n")))
                .collect();
            rows.sort();
            prop_assert_eq!(rows, expected);
            for (_, r) in &got {
                prop_assert_eq!(int(r, "f"), int(r, "also_f"));
            }
            // Another arrival order: the same rows at the same times, in the same order.
            prop_assert_eq!(results(&q, arrive(seed ^ 0x9e37_79b9_7f4a_7c15)), got);
        }
    }
}
