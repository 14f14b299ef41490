//! Concept: user-defined functions and aggregates in the query language - Rust closures and
//! types registered under a name (`Functions`) and called as `udf.NAME(...)` and
//! `uda.NAME(...)`, as Stream Analytics calls its JavaScript ones. A program that runs jobs
//! from the command line registers them the same way with `punctual::cli::main_with`.
//!
//! Run: `cargo run --example udf`

use punctual::adapters::{CollectOutput, MemoryInput};
use punctual::prelude::*;
use punctual::runtime::{InputOptions, Query};
use punctual::sql::{Functions, SqlInput, SqlQuery, UserAggregate};

/// The spread of the members' first argument: largest minus smallest (numbers only).
struct Spread;

impl UserAggregate for Spread {
    fn init(&self) -> Value {
        Value::Null
    }
    fn accumulate(&self, state: &mut Value, args: &[Value]) {
        let Some(x) = args.first().and_then(Value::as_f64) else {
            return;
        };
        let (lo, hi) = match &*state {
            Value::List(range) => (
                range[0].as_f64().unwrap_or(x),
                range[1].as_f64().unwrap_or(x),
            ),
            _ => (x, x),
        };
        *state = Value::from(vec![Value::Float(lo.min(x)), Value::Float(hi.max(x))]);
    }
    fn result(&self, state: &Value) -> Value {
        match state {
            Value::List(range) => match (range[0].as_f64(), range[1].as_f64()) {
                (Some(lo), Some(hi)) => Value::Float(hi - lo),
                _ => Value::Null,
            },
            _ => Value::Null,
        }
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let functions = Functions::new()
        // Stream Analytics' documented example: a hexadecimal text to a number. A text that
        // is not hexadecimal fails the call: its row is dropped with the reason.
        .function("hex2int", |args: &[Value]| match args.first() {
            Some(Value::Str(hex)) => i64::from_str_radix(hex, 16)
                .map(Value::Int)
                .map_err(|e| format!("`{hex}` is not hexadecimal: {e}")),
            _ => Ok(Value::Null),
        })
        .aggregate("spread", Spread);
    let sql = SqlQuery::parse(
        "SELECT device, uda.spread(udf.hex2int(raw)) AS spread, COUNT(*) AS n
         FROM readings
         GROUP BY device, TumblingWindow(second, 10)",
    )?
    .with_functions(functions);

    let s = |secs| Time::EPOCH + TimeSpan::from_secs(secs);
    let readings: Vec<StreamItem<Row>> = [
        (1, "a", "B4"),
        (2, "a", "11B"),
        (3, "b", "121"),
        (4, "a", "0F"),
    ]
    .into_iter()
    .map(|(at, device, raw)| {
        StreamItem::point(s(at), Row::new().with("device", device).with("raw", raw))
    })
    .collect();
    let mut query = Query::new("udf");
    let r = query.create_stream(
        InputOptions::new("readings", EventShape::Point)
            .settings(AdvanceTimeSettings::increasing_start_time()),
        &MemoryInput,
        &readings,
    )?;
    let outputs = sql.build(&[SqlInput::new("readings", &r)])?;
    let out = CollectOutput::new();
    query.bind_output(&outputs[0].1, &out, &())?;
    query.start()?.wait().await?;

    let mut results: Vec<(String, f64)> = out
        .payloads()
        .iter()
        .map(|r: &Row| {
            let device = r
                .get("device")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_owned();
            (
                device,
                r.get("spread").and_then(Value::as_f64).unwrap_or(f64::NAN),
            )
        })
        .collect();
    results.sort_by(|a, b| a.0.cmp(&b.0));
    // a: 0xB4 = 180, 0x11B = 283, 0x0F = 15: spread 268; b: one reading, spread 0.
    assert_eq!(
        results,
        vec![("a".to_owned(), 268.0), ("b".to_owned(), 0.0)]
    );
    for (device, spread) in &results {
        println!("{device}: spread {spread}");
    }
    Ok(())
}
