//! The language's conditions and aggregates over rows named in configuration
//! (`punctual_sql::{Condition, Aggregates}`): computed as a query computes them, refused with
//! the reason where a query would refuse them.

use punctual_core::ops::{Aggregate, QueryGraph};
use punctual_core::{Batch, Ordered, Time};
use punctual_rows::{Row, Value};
use punctual_sql::{Aggregates, Condition, SqlError};

fn row(t: impl Into<Value>) -> Row {
    Row::new().with("t", t)
}

#[test]
fn a_condition_holds_as_a_where_of_one_source() {
    let c = Condition::parse("t >= 2 AND [device id] <> 'x'").expect("compiles");
    assert!(c.holds(&row(2).with("device id", "a")));
    assert!(c.holds(&row(2.5).with("device id", "a")));
    assert!(!c.holds(&row(2).with("device id", "x")));
    // A missing field is NULL: the condition is not TRUE.
    assert!(!c.holds(&Row::new().with("device id", "a")));
    assert!(Condition::parse("t = 4")
        .expect("compiles")
        .holds(&row(4.0)));
}

#[test]
fn a_condition_that_is_not_one_expression_over_one_row_is_refused_where_it_is_wrong() {
    let e = Condition::parse("t >").unwrap_err();
    assert!(matches!(e, SqlError::Syntax { .. }), "{e}");
    assert_eq!(
        (e.pos().line, e.pos().col),
        (1, 4),
        "the end of the condition's text: {e}"
    );
    let e = Condition::parse("SUM(t) > 2").unwrap_err();
    assert!(e.to_string().contains("cannot aggregate"), "{e}");
    let e = Condition::parse("t > 1 GROUP BY t").unwrap_err();
    assert!(e.to_string().contains("not one expression"), "{e}");
}

#[test]
fn a_condition_filters_and_drops_what_it_cannot_compute_with_the_reason() {
    let graph = QueryGraph::new();
    let input = graph.source::<Row, Ordered>();
    let kept = Condition::parse("10 / t > 1")
        .expect("compiles")
        .filter(&input)
        .ordered();
    graph.keep_output(&kept);
    let mut batch = Batch::new();
    for (i, t) in [2, 0, 20].into_iter().enumerate() {
        batch.push_point(Time::from_ticks(i as i64), row(t));
    }
    graph.feed(&input, &mut batch);
    let mut out = Batch::new();
    graph.take_output(&kept, &mut out);
    assert_eq!(
        out.payloads(),
        &[row(2)],
        "10 / 0 is dropped, 10 / 20 is not > 1"
    );
}

#[test]
fn aggregates_compute_as_a_grouped_select() {
    let aggs = Aggregates::parse(&[
        ("SUM(t)", "total"),
        ("COUNT(*)", "n"),
        ("AVG(t) * 2", "twice_avg"),
        ("MAX(t)", "top"),
    ])
    .expect("compiles");
    let mut s = aggs.init();
    for t in [1, 2, 6] {
        aggs.add(&mut s, &row(t));
    }
    aggs.add(&mut s, &Row::new());
    assert_eq!(
        aggs.result(&s),
        Ok(Row::new()
            .with("total", 9)
            .with("n", 4)
            .with("twice_avg", 6.0)
            .with("top", 6))
    );
    // Over no numbers, SUM and AVG are NULL, COUNT(*) counts the members.
    let mut empty = aggs.init();
    aggs.add(&mut empty, &Row::new());
    let r = aggs.result(&empty).expect("a result");
    assert_eq!(r.get("total"), Some(&Value::Null));
    assert_eq!(r.get("n"), Some(&Value::Int(1)));
}

#[test]
fn a_sum_outside_the_bigint_range_is_refused_with_the_reason() {
    let aggs = Aggregates::parse(&[("SUM(t)", "total")]).expect("compiles");
    let mut s = aggs.init();
    aggs.add(&mut s, &row(i64::MAX));
    aggs.add(&mut s, &row(1));
    let why = aggs.result(&s).unwrap_err();
    assert!(why.contains("bigint"), "{why}");
}

#[test]
fn members_that_cannot_be_aggregated_are_dropped_before_the_window_with_the_reason() {
    let aggs = Aggregates::parse(&[("SUM(t)", "total")]).expect("compiles");
    let graph = QueryGraph::new();
    let input = graph.source::<Row, Ordered>();
    let gated = aggs.gate(&input).ordered();
    graph.keep_output(&gated);
    let mut batch = Batch::new();
    batch.push_point(Time::from_ticks(1), row(1));
    batch.push_point(Time::from_ticks(2), row("one"));
    graph.feed(&input, &mut batch);
    let mut out = Batch::new();
    graph.take_output(&gated, &mut out);
    assert_eq!(out.payloads(), &[row(1)]);
}

#[test]
fn aggregates_that_do_not_aggregate_are_refused() {
    let e = Aggregates::parse(&[("t + 1", "x")]).unwrap_err();
    assert!(e.to_string().contains("not an aggregate"), "{e}");
    let e = Aggregates::parse(&[("SUM(t)", "x"), ("COUNT(*)", "x")]).unwrap_err();
    assert!(e.to_string().contains('x'), "{e}");
}
