//! Inputs read in arrival order: every query gives, CTI by CTI, the results it gives over
//! the same input sorted; and the operators that take events in any order keep the input's
//! order to the output (no reorder).

use proptest::prelude::*;

use punctual_core::ops::{AnyStream, QueryGraph};
use punctual_core::{Ordered, StreamItem, Time, Unordered};
use punctual_rows::{Row, Value};
use punctual_sql::{SqlInput, SqlQuery};

mod common;
use common::*;

/// The queries compared: each construct that keeps arrival order, and some that sort.
const QUERIES: &[&str] = &[
    "SELECT k, v * 3 AS w FROM readings WHERE v >= 0",
    "SELECT * FROM readings WHERE v % 2 = 0",
    "SELECT k, SUM(v) AS total, COUNT(*) AS n FROM readings GROUP BY k, TumblingWindow(tick, 7)",
    "SELECT k, MAX(v) AS top, System.Timestamp() AS at FROM readings GROUP BY k, HoppingWindow(tick, 10, 4)",
    "SELECT COUNT(*) AS n FROM readings GROUP BY SlidingWindow(tick, 5)",
    "SELECT k, COUNT(*) AS n FROM readings GROUP BY k, SnapshotWindow()",
    "SELECT x.v AS v, y.v AS rate FROM readings x JOIN r y ON x.k = y.k",
    "SELECT x.v * y.v AS p FROM readings x JOIN r y ON x.k = y.k WHERE x.v > y.v",
    "SELECT k, v FROM readings WHERE v > 10 UNION SELECT k, v FROM readings WHERE v < -10",
    "WITH big AS (SELECT k, v FROM readings WHERE v > 0) SELECT k, SUM(v) AS s FROM big GROUP BY k, TumblingWindow(tick, 20)",
    "SELECT x.v AS a, y.v AS b FROM readings x JOIN readings y ON x.k = y.k AND DATEDIFF(tick, x, y) BETWEEN 0 AND 5",
];

/// Points in any order, with CTIs between them that every later point respects, and a
/// final CTI.
fn arrivals() -> impl Strategy<Value = Vec<StreamItem<Row>>> {
    let point = (0i64..200, 0i64..4, -50i64..50);
    prop::collection::vec((point, any::<bool>()), 0..60).prop_map(|raw| {
        let mut items = Vec::new();
        let mut cti = i64::MIN;
        for (i, ((at, k, v), cut)) in raw.iter().enumerate() {
            let at = (*at).max(cti);
            items.push(StreamItem::point(
                Time::from_ticks(at),
                row(&[("k", Value::Int(*k)), ("v", Value::Int(*v))]),
            ));
            if *cut {
                // A CTI no later than every point still to come.
                let next = raw[i + 1..].iter().map(|p| p.0 .0.max(cti)).min();
                if let Some(next) = next {
                    cti = cti.max(next);
                    items.push(StreamItem::Cti(Time::from_ticks(cti)));
                }
            }
        }
        items.push(StreamItem::Cti(Time::INF));
        items
    })
}

/// A rate per key as intervals, sorted, then the end.
fn rates() -> Vec<StreamItem<Row>> {
    let mut items: Vec<StreamItem<Row>> = (0..4)
        .flat_map(|k| {
            [(0, 120, k + 1), (120, 250, k + 7)].map(|(from, to, rate)| {
                StreamItem::interval(
                    Time::from_ticks(from),
                    Time::from_ticks(to),
                    row(&[("k", Value::Int(k)), ("v", Value::Int(rate))]),
                )
            })
        })
        .collect();
    items.sort_by_key(|i| match i {
        StreamItem::Insert(e) => e.kind.start(),
        StreamItem::Cti(t) => *t,
    });
    items.push(StreamItem::Cti(Time::INF));
    items
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Each query over the input read in arrival order gives the results and CTIs it gives
    /// over the input sorted: each event no later than the first CTI above it, the events
    /// under each CTI the same multiset.
    #[test]
    fn arrival_order_gives_the_sorted_results(items in arrivals()) {
        for sql in QUERIES {
            let inputs = [("readings", items.clone()), ("r", rates())];
            let inputs: Vec<(&str, Vec<StreamItem<Row>>)> = inputs
                .into_iter()
                .filter(|(name, _)| *name == "readings" || sql.contains(" r "))
                .collect();
            let sorted = run(sql, &inputs);
            let arrival = run_in(sql, &inputs, &["readings"]);
            let sorted = by_cti(&sorted["output"]);
            prop_assert!(sorted.is_some(), "{}: sorted output out of order", sql);
            prop_assert_eq!(
                by_cti(&arrival["output"]),
                sorted,
                "{}",
                sql
            );
        }
    }
}

/// Each event under the first CTI above its sync time (where a sorted stream has it), each
/// segment's events sorted; `None` if an event comes after that CTI (released too late).
/// Of a sorted stream, its segments as they are; of an unordered one, what sorting it gives.
fn by_cti(items: &[StreamItem<Row>]) -> Option<Vec<(Vec<String>, Option<Time>)>> {
    let ctis: Vec<Time> = items
        .iter()
        .filter_map(|i| match i {
            StreamItem::Cti(c) => Some(*c),
            StreamItem::Insert(_) => None,
        })
        .collect();
    let mut out: Vec<(Vec<String>, Option<Time>)> = ctis
        .iter()
        .map(|c| (Vec::new(), Some(*c)))
        .chain([(Vec::new(), None)])
        .collect();
    let mut seen = 0;
    for i in items {
        match i {
            StreamItem::Insert(e) => {
                let sync = e.kind.encode().0;
                let under = ctis.iter().position(|c| sync < *c).unwrap_or(ctis.len());
                if under < seen {
                    return None;
                }
                out[under].0.push(format!("{:?} {}", e.kind, e.payload));
            }
            StreamItem::Cti(_) => seen += 1,
        }
    }
    for (events, _) in &mut out {
        events.sort();
    }
    Some(out)
}

/// Which outputs stay in arrival order: those of a filter, a projection, a tumbling or
/// hopping window (whose results are sorted anyway) and a join's left side; a sliding
/// window, a union with a sorted input and a `DATEDIFF` join sort.
#[test]
fn the_operators_that_take_any_order_keep_it() {
    let cases = [
        ("SELECT k, v FROM readings WHERE v > 0", true),
        ("SELECT x.v AS v FROM readings x JOIN r y ON x.k = y.k", true),
        (
            "SELECT x.v AS v FROM readings x JOIN r y ON x.k = y.k WHERE x.v > 0",
            true,
        ),
        (
            "SELECT k, COUNT(*) AS n FROM readings GROUP BY k, TumblingWindow(second, 1)",
            false,
        ),
        ("SELECT v FROM readings UNION SELECT v FROM r", false),
        ("SELECT v FROM readings UNION SELECT v FROM readings", true),
        (
            "SELECT x.v AS a FROM readings x JOIN readings y ON DATEDIFF(second, x, y) BETWEEN 0 AND 1",
            false,
        ),
    ];
    for (sql, arrival) in cases {
        let graph = QueryGraph::new();
        let readings = graph.source::<Row, Unordered>();
        let r = graph.source::<Row, Ordered>();
        let query = SqlQuery::parse(sql).expect("parses");
        let outputs = query
            .build(&[SqlInput::new("readings", &readings), SqlInput::new("r", &r)])
            .expect("builds");
        let got = matches!(outputs[0].1, AnyStream::Arrival(_));
        assert_eq!(got, arrival, "{sql}");
    }
}

/// `AllowedLateness` on a window over readings in arrival order: each count given when the
/// watermark (the CTI plus 2 s) passes the window's end, revised by the late readings the CTI
/// still admits, final at the window's end plus 2 s.
#[test]
fn allowed_lateness_gives_counts_early_then_revises_them() {
    let items = vec![
        reading(1.0, "a", 1),
        reading(4.0, "a", 1),
        StreamItem::Cti(t(4.0)), // watermark 6 s: (0, 5] is given
        reading(4.5, "a", 1),    // late: counted, a revision
        reading(5.0, "a", 1),    // the window's last instant, late too
        StreamItem::Cti(t(5.5)), // (0, 5] closes: final
        StreamItem::Cti(Time::INF),
    ];
    let n = |n: i64| row(&[("device", Value::Str("a".into())), ("n", Value::Int(n))]);
    let tick = punctual_core::TimeSpan::from_ticks(1);
    let revised = t(6.0) - tick; // the watermark they came under, less the window's tick
    let expected = vec![
        StreamItem::start_edge(t(5.0), n(2)),
        StreamItem::Cti(t(4.0)),
        StreamItem::end_edge(t(5.0), revised, n(2)),
        StreamItem::start_edge(revised, n(4)),
        StreamItem::end_edge(revised, t(7.0), n(4)),
        StreamItem::Cti(t(5.5)),
        StreamItem::Cti(Time::INF),
    ];
    for sql in [
        "SELECT device, COUNT(*) AS n FROM readings GROUP BY device, TumblingWindow(second, 5, AllowedLateness(second, 2))",
        "SELECT device, COUNT(*) AS n FROM readings GROUP BY device, TumblingWindow(Duration(second, 5), AllowedLateness(second, 2))",
        "SELECT device, COUNT(*) AS n FROM readings GROUP BY device, HoppingWindow(second, 5, 5, AllowedLateness(second, 2)) HAVING COUNT(*) > 0",
    ] {
        let out = run_in(sql, &[("readings", items.clone())], &["readings"]);
        assert_eq!(out.values().next(), Some(&expected), "{sql}");
    }
    // System.Timestamp() of each value is where it starts: the window's end on time, the
    // revision's start after.
    let sql = "SELECT COUNT(*) AS n, System.Timestamp() AS at FROM readings GROUP BY TumblingWindow(second, 5, AllowedLateness(second, 2))";
    let out = run_in(sql, &[("readings", items)], &["readings"]);
    let events = events(out.values().next().expect("one output"));
    assert_eq!(events.len(), 4);
    let first_at = events[0].2.get("at").cloned();
    for (start, _, row) in &events {
        let on_time = *start == t(5.0);
        assert_eq!(
            row.get("at").cloned() == first_at,
            on_time,
            "{row:?} at {start:?}"
        );
    }
}

#[test]
fn allowed_lateness_is_refused_where_it_cannot_hold() {
    let count = "SELECT COUNT(*) AS n FROM readings GROUP BY";
    for (window, says) in [
        ("TumblingWindow(second, 5, AllowedLateness(second, 2))", "arrival order"),
        ("TumblingWindow(second, 5, AllowedLateness(second, 0))", "above zero"),
        (
            "TumblingWindow(Duration(second, 5), AllowedLateness(second, 1), AllowedLateness(second, 2))",
            "twice",
        ),
        ("SessionWindow(second, 2, 10, AllowedLateness(second, 2))", "arrival order"),
        ("SlidingWindow(second, 5, AllowedLateness(second, 2))", "expected"),
    ] {
        let why = refusal(&format!("{count} {window}"), "readings", None);
        assert!(why.contains(says), "{window}: {why}");
    }
}

/// A session window with allowed lateness: a session given once the watermark passes its
/// close, revised as late readings extend it and join it to the next, final once the CTI
/// passes its close.
#[test]
fn allowed_lateness_revises_sessions_as_late_events_extend_and_join_them() {
    let sql = "SELECT device, COUNT(*) AS n FROM readings GROUP BY device, SessionWindow(second, 2, 10, AllowedLateness(second, 5))";
    let items = vec![
        reading(1.0, "a", 1),
        reading(2.0, "a", 1),
        reading(8.0, "a", 1),
        StreamItem::Cti(t(3.0)), // watermark 8: the session 1-2 (close 4) is given
        reading(3.5, "a", 1),    // late: joins it, its close moves to 5.5
        reading(5.0, "a", 1),    // late: joins it, close 7
        reading(9.0, "a", 1),
        StreamItem::Cti(t(4.0)), // revised under watermark 8
        reading(6.5, "a", 1),    // late: close 8.5, which joins it to the session of 8 and 9
        reading(16.0, "a", 1),
        StreamItem::Cti(t(11.0)), // revised under watermark 9 (the joined session closes at 11)
        StreamItem::Cti(Time::INF),
    ];
    let out = run_in(sql, &[("readings", items)], &["readings"]);
    let n = |n: i64| row(&[("device", Value::Str("a".into())), ("n", Value::Int(n))]);
    let tick = punctual_core::TimeSpan::from_ticks(1);
    let (at8, at9) = (t(8.0) - tick, t(9.0) - tick);
    assert_eq!(
        out.values().next().cloned().unwrap_or_default(),
        vec![
            StreamItem::start_edge(t(4.0), n(2)),
            StreamItem::Cti(t(3.0)),
            StreamItem::end_edge(t(4.0), at8, n(2)),
            StreamItem::start_edge(at8, n(4)),
            StreamItem::Cti(t(4.0)),
            StreamItem::end_edge(at8, at9, n(4)),
            StreamItem::start_edge(at9, n(7)),
            StreamItem::Cti(t(11.0)),
            // Final at its close (11) plus 5 s; the session of 16 never given before.
            StreamItem::end_edge(at9, t(16.0), n(7)),
            StreamItem::start_edge(t(18.0), n(1)),
            StreamItem::end_edge(t(18.0), t(23.0), n(1)),
            StreamItem::Cti(Time::INF),
        ]
    );
}

/// Whether `items` keep their CTIs (each event at or past the CTI before it) and each end edge
/// closes an open start edge of its payload, none left open.
fn well_formed(items: &[StreamItem<Row>]) -> Result<(), String> {
    use punctual_core::EventKind;
    let mut cti = Time::NEG_INF;
    let mut open: Vec<(Time, Row)> = Vec::new();
    for item in items {
        match item {
            StreamItem::Cti(t) => cti = *t,
            StreamItem::Insert(e) => {
                if e.kind.sync_time() < cti {
                    return Err(format!("{e:?} after CTI {cti:?}"));
                }
                match e.kind {
                    EventKind::StartEdge(s) => open.push((s, e.payload.clone())),
                    EventKind::EndEdge { start, end } => {
                        let at = open
                            .iter()
                            .position(|(s, p)| *s == start && *p == e.payload)
                            .ok_or(format!("{e:?} closes nothing"))?;
                        open.remove(at);
                        if end <= start {
                            return Err(format!("{e:?} is empty"));
                        }
                    }
                    _ => return Err(format!("{e:?} is not an edge")),
                }
            }
        }
    }
    if open.is_empty() {
        Ok(())
    } else {
        Err(format!("left open: {open:?}"))
    }
}

/// Readings in arrival order, each at most the lateness behind the newest so far, a CTI
/// that far behind the newest after each: the values that end each chain at its close plus
/// the lateness are the sessions over the same readings all in.
fn late_readings() -> impl Strategy<Value = Vec<(i64, i64, i64)>> {
    prop::collection::vec((0i64..40, 0i64..30, 0i64..2), 1..50)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_final_value_of_each_late_session_is_the_session_with_every_event_in(
        steps in late_readings(),
        lateness_tenths in 1i64..30,
    ) {
        let tenth = |x: i64| Time::from_ticks(x * S / 10);
        let mut high = 0;
        let mut late = Vec::new();
        let mut all = Vec::new();
        for (ahead, behind, key) in steps {
            high += ahead;
            let at = high - behind.min(lateness_tenths);
            let r = StreamItem::point(
                tenth(at),
                row(&[("device", Value::Int(key)), ("v", Value::Int(at))]),
            );
            late.push(r.clone());
            all.push(r);
            late.push(StreamItem::Cti(tenth(high - lateness_tenths)));
        }
        late.push(StreamItem::Cti(Time::INF));
        all.push(StreamItem::Cti(Time::INF));
        let query = |lateness: &str| format!(
            "SELECT device, COUNT(*) AS n, SUM(v) AS s FROM readings GROUP BY device, SessionWindow(second, 2, 5{lateness}) OVER (PARTITION BY device)"
        );
        let chains = run_in(
            &query(&format!(", AllowedLateness(millisecond, {})", lateness_tenths * 100)),
            &[("readings", late)],
            &["readings"],
        );
        let lateness = punctual_core::TimeSpan::from_ticks(lateness_tenths * S / 10);
        let chain_items = chains.values().next().cloned().unwrap_or_default();
        prop_assert_eq!(well_formed(&chain_items), Ok(()));
        let mut finals: Vec<(Time, Row)> = Vec::new();
        for item in chain_items {
            if let StreamItem::Insert(e) = item {
                if let punctual_core::EventKind::EndEdge { end, .. } = e.kind {
                    finals.push((end - lateness, e.payload));
                }
            }
        }
        let baseline: Vec<(Time, Row)> = run_in(&query(""), &[("readings", all)], &[])
            .values()
            .next()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter_map(|i| match i {
                StreamItem::Insert(e) => Some((e.kind.sync_time(), e.payload)),
                StreamItem::Cti(_) => None,
            })
            .collect();
        // Every end edge is a final one or the end of a value revised (its end is then not a
        // close plus the lateness); the finals are exactly the baseline's results.
        for r in &baseline {
            prop_assert!(finals.contains(r), "{r:?} missing from {finals:?}");
        }
        let closes: Vec<Time> = baseline.iter().map(|r| r.0).collect();
        let finals: Vec<&(Time, Row)> = finals.iter().filter(|f| closes.contains(&f.0)).collect();
        prop_assert_eq!(finals.len(), baseline.len());
    }
}
