//! User-defined functions and aggregates registered from Rust ([`Functions`]) and called as
//! `udf.NAME(...)` and `uda.NAME(...)`: their values, a function's failure (the row dropped
//! with its reason), names in any case, and the refusals of what is not registered or not
//! where it can be.

use punctual_core::{EventShape, Ordered};
use punctual_engine::{InputOptions, Plan};
use punctual_rows::{Row, Value};
use punctual_sql::{Functions, SqlInput, SqlQuery, UserAggregate};

mod common;
use common::*;

/// The product of the members' first argument (numbers; other values left out).
struct Product;

impl UserAggregate for Product {
    fn init(&self) -> Value {
        Value::Float(1.0)
    }
    fn accumulate(&self, state: &mut Value, args: &[Value]) {
        if let (Value::Float(p), Some(x)) = (&*state, args.first().and_then(Value::as_f64)) {
            *state = Value::Float(p * x);
        }
    }
    fn result(&self, state: &Value) -> Value {
        state.clone()
    }
}

fn functions() -> Functions {
    Functions::new()
        .function("scaled", |args: &[Value]| match (&args[0], &args[1]) {
            (Value::Int(v), Value::Int(k)) => v
                .checked_mul(*k)
                .map(Value::Int)
                .ok_or_else(|| "out of range".to_owned()),
            _ => Err(format!("scaled reads two integers, not {args:?}")),
        })
        .aggregate("Product", Product)
}

/// The rows of the one output of `sql` over the readings, with [`functions`].
fn rows(sql: &str) -> Vec<Row> {
    let query = SqlQuery::parse(sql)
        .unwrap_or_else(|e| panic!("{}", e.show(sql)))
        .with_functions(functions());
    let mut plan = Plan::new("udf");
    let (id, s) = plan
        .input::<Row, Ordered>(InputOptions::new("readings", EventShape::Point))
        .expect("an input");
    let stream: punctual_sql::RowStream = s.into();
    let outputs = query
        .build(&[SqlInput::new("readings", &stream)])
        .unwrap_or_else(|e| panic!("{}", e.show(sql)));
    let out = plan.output(&outputs[0].1).expect("an output");
    let mut driver = plan.build().expect("a plan");
    for item in ended(vec![
        reading(1.0, "a", 2),
        reading(2.0, "a", 3),
        reading(3.0, "b", 4),
        reading(4.0, "b", 7),
    ]) {
        driver.enqueue(id, item).expect("valid");
    }
    let mut batch = punctual_core::Batch::new();
    driver.take_output(&out, &mut batch);
    let mut items = Vec::new();
    batch.drain_items(|i| items.push(i));
    events(&items).into_iter().map(|(_, _, r)| r).collect()
}

#[test]
fn a_function_computes_each_rows_value() {
    let got: Vec<Value> = rows("SELECT udf.scaled(v, 10) AS x FROM readings")
        .iter()
        .map(|r| r.get("x").cloned().unwrap_or(Value::Null))
        .collect();
    assert_eq!(
        got,
        [
            Value::Int(20),
            Value::Int(30),
            Value::Int(40),
            Value::Int(70)
        ]
    );
    // Names in any case; in WHERE as well.
    let kept = rows("SELECT v FROM readings WHERE UDF.Scaled(v, 2) > 6");
    assert_eq!(kept.len(), 2);
}

#[test]
fn a_failing_call_drops_its_row_with_the_reason() {
    // `device` is a text: the function says why it cannot; the other rows come out.
    assert!(rows("SELECT udf.scaled(device, 2) AS x FROM readings").is_empty());
    let big = rows(&format!(
        "SELECT udf.scaled(v, {}) AS x FROM readings WHERE v < 4",
        i64::MAX / 2
    ));
    // 2 times it fits, 3 times it does not: that row alone is dropped.
    assert_eq!(big.len(), 1, "{big:?}");
}

#[test]
fn an_aggregate_accumulates_each_groups_members() {
    let mut got: Vec<(Value, Value)> = rows(
        "SELECT device, uda.product(v) AS p, COUNT(*) AS n FROM readings
         GROUP BY device, TumblingWindow(second, 10)",
    )
    .iter()
    .map(|r| {
        (
            r.get("device").cloned().unwrap_or(Value::Null),
            r.get("p").cloned().unwrap_or(Value::Null),
        )
    })
    .collect();
    got.sort_by_key(|(d, _)| d.as_str().map(str::to_owned));
    assert_eq!(
        got,
        [
            (Value::from("a"), Value::Float(6.0)),
            (Value::from("b"), Value::Float(28.0)),
        ]
    );
}

#[test]
fn what_is_not_registered_or_not_in_place_is_refused_with_the_reason() {
    let refused = |sql: &str, functions: Functions| -> String {
        let query = SqlQuery::parse(sql)
            .expect("parses")
            .with_functions(functions);
        let mut plan = Plan::new("udf");
        let (_, s) = plan
            .input::<Row, Ordered>(InputOptions::new("readings", EventShape::Point))
            .expect("an input");
        let stream: punctual_sql::RowStream = s.into();
        query
            .build(&[SqlInput::new("readings", &stream)])
            .map(|_| ())
            .expect_err(sql)
            .to_string()
    };
    let e = refused("SELECT udf.nope(v) AS x FROM readings", functions());
    assert!(
        e.contains("`udf.nope` is not a registered function (registered: scaled)"),
        "{e}"
    );
    let e = refused(
        "SELECT udf.scaled(v, 1) AS x FROM readings",
        Functions::new(),
    );
    assert!(e.contains("none is registered"), "{e}");
    let e = refused("SELECT uda.product(v) AS p FROM readings", functions());
    assert!(e.contains("needs a window in GROUP BY"), "{e}");
    let e = refused(
        "SELECT uda.scaled(v) AS p FROM readings GROUP BY TumblingWindow(second, 1)",
        functions(),
    );
    assert!(
        e.contains("not a registered aggregate (registered: product)"),
        "{e}"
    );
}
