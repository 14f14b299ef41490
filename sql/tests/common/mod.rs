//! Helpers the query-language tests share: run a query over items, build rows, read outputs.

#![allow(dead_code)] // each test crate uses its share

use std::collections::HashMap;

use punctual_core::{Batch, EventShape, Ordered, StreamItem, Time, Unordered};
use punctual_engine::{InputOptions, Plan};
use punctual_rows::{Row, Value};
use punctual_sql::{RowStream, SqlInput, SqlQuery};

pub const S: i64 = 10_000_000;

pub fn t(secs: f64) -> Time {
    Time::from_ticks((secs * S as f64) as i64)
}

/// Runs `sql` over the inputs (each one's items in order, the inputs interleaved item by
/// item) and returns every output's items.
pub fn run(
    sql: &str,
    inputs: &[(&str, Vec<StreamItem<Row>>)],
) -> HashMap<String, Vec<StreamItem<Row>>> {
    run_in(sql, inputs, &[])
}

/// [`run`] with the inputs named in `arrival` read in arrival order (unordered streams of
/// points), the others sorted; each output bound as the query gives it.
pub fn run_in(
    sql: &str,
    inputs: &[(&str, Vec<StreamItem<Row>>)],
    arrival: &[&str],
) -> HashMap<String, Vec<StreamItem<Row>>> {
    let query = SqlQuery::parse(sql).unwrap_or_else(|e| panic!("{}", e.show(sql)));
    let mut plan = Plan::new("sql");
    let mut ids = Vec::new();
    let mut streams: Vec<RowStream> = Vec::new();
    for (name, _) in inputs {
        if arrival.contains(name) {
            let (id, s) = plan
                .input::<Row, Unordered>(InputOptions::new(*name, EventShape::Point).unordered())
                .expect("a valid input");
            ids.push(id);
            streams.push(s.into());
        } else {
            let (id, s) = plan
                .input::<Row, Ordered>(InputOptions::new(*name, EventShape::Edge))
                .expect("a valid input");
            ids.push(id);
            streams.push(s.into());
        }
    }
    let sql_inputs: Vec<SqlInput<'_>> = inputs
        .iter()
        .zip(&streams)
        .map(|((name, _), s)| SqlInput::new(name, s))
        .collect();
    let outputs = query
        .build(&sql_inputs)
        .unwrap_or_else(|e| panic!("{}", e.show(sql)));
    let ids_out: Vec<_> = outputs
        .iter()
        .map(|(n, s)| (n.clone(), plan.output(s).expect("a stream of the plan")))
        .collect();
    let mut driver = plan.build().expect("a valid plan");
    let longest = inputs.iter().map(|i| i.1.len()).max().unwrap_or(0);
    for step in 0..longest {
        for ((_, items), id) in inputs.iter().zip(&ids) {
            if let Some(item) = items.get(step) {
                driver.enqueue(*id, item.clone()).expect("valid items");
            }
        }
    }
    // Every input ended (a final CTI): nothing may stay held.
    let all_ended = inputs
        .iter()
        .all(|(_, items)| matches!(items.last(), Some(StreamItem::Cti(t)) if *t == Time::INF));
    if all_ended {
        assert_eq!(
            driver.held(),
            0,
            "`{sql}` holds state after its inputs ended"
        );
    }
    ids_out
        .into_iter()
        .map(|(name, id)| {
            let mut batch = Batch::new();
            driver.take_output(&id, &mut batch);
            let mut items = Vec::new();
            batch.drain_items(|i| items.push(i));
            (name, items)
        })
        .collect()
}

pub fn row(fields: &[(&str, Value)]) -> Row {
    Row::new().with_all(fields.iter().map(|(k, v)| (k.to_string(), v.clone())))
}

pub fn reading(at: f64, device: &str, v: i64) -> StreamItem<Row> {
    StreamItem::point(
        t(at),
        row(&[("device", Value::Str(device.into())), ("v", Value::Int(v))]),
    )
}

/// The events of an output as (start, end, row), CTIs left out.
pub fn events(items: &[StreamItem<Row>]) -> Vec<(Time, Time, Row)> {
    items
        .iter()
        .filter_map(|i| match i {
            StreamItem::Insert(e) => {
                let (s, o) = e.kind.encode();
                Some((s.min(o), s.max(o), e.payload.clone()))
            }
            StreamItem::Cti(_) => None,
        })
        .collect()
}

/// The fields `a` and `b` (`NULL` where missing) of each event among `items`, sorted.
pub fn sorted_pairs(items: &[StreamItem<Row>], a: &str, b: &str) -> Vec<(Value, Value)> {
    let field = |row: &Row, name| row.get(name).cloned().unwrap_or(Value::Null);
    let mut pairs: Vec<_> = events(items)
        .iter()
        .map(|e| (field(&e.2, a), field(&e.2, b)))
        .collect();
    pairs.sort_by_key(|p| format!("{p:?}"));
    pairs
}

/// The logical plan `sql` prints (`punctual explain`), with no input's fields known.
pub fn plan_of(sql: &str) -> String {
    let query = punctual_sql::SqlQuery::parse(sql).expect("parses");
    query.plan(&[]).expect("plans").to_string()
}

pub fn ended(mut items: Vec<StreamItem<Row>>) -> Vec<StreamItem<Row>> {
    items.push(StreamItem::Cti(Time::INF));
    items
}

/// Why `sql` is refused: its syntax error, or the error of building it over one input named
/// `input` of points (its fields `fields`, when given). Fails if it is not refused.
pub fn refusal(sql: &str, input: &str, fields: Option<&[&str]>) -> String {
    refusal_in(sql, &[input], fields)
}

/// [`refusal`] over several inputs of points (each with `fields`, when given).
pub fn refusal_in(sql: &str, inputs: &[&str], fields: Option<&[&str]>) -> String {
    let query = match SqlQuery::parse(sql) {
        Ok(q) => q,
        Err(e) => return e.show(sql),
    };
    let mut plan = Plan::new("errors");
    let streams: Vec<RowStream> = inputs
        .iter()
        .map(|name| {
            let (_, s) = plan
                .input::<Row, Ordered>(InputOptions::new(*name, EventShape::Point))
                .expect("input");
            s.into()
        })
        .collect();
    let fields: Vec<String> = fields
        .unwrap_or_default()
        .iter()
        .map(|f| (*f).to_owned())
        .collect();
    let sql_inputs: Vec<SqlInput<'_>> = inputs
        .iter()
        .zip(&streams)
        .map(|(name, stream)| {
            let input = SqlInput::new(name, stream);
            if fields.is_empty() {
                input
            } else {
                input.fields(&fields)
            }
        })
        .collect();
    match query.build(&sql_inputs) {
        Ok(_) => panic!("`{sql}` compiled"),
        Err(e) => e.show(sql),
    }
}

/// The rows of the one output of `sql` over `inputs` (those named in `arrival` read in
/// arrival order) with each one's start in seconds, in order.
pub fn rows_at(
    sql: &str,
    inputs: &[(&str, Vec<StreamItem<Row>>)],
    arrival: &[&str],
) -> Vec<(f64, Row)> {
    let out = run_in(sql, inputs, arrival);
    let (_, items) = out.into_iter().next().expect("one output");
    events(&items)
        .into_iter()
        .map(|(s, _, r)| (s.ticks() as f64 / S as f64, r))
        .collect()
}
