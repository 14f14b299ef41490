//! Concept: the query language from Rust - a Stream Analytics-style query built onto the
//! streams of an ordinary `Query`, with reference data synced to the fast stream by CTI import,
//! and the fast stream read in arrival order (the join and the window take its events as they
//! come, with no reorder buffer).
//!
//! Run: `cargo run --example query_language`

use punctual::adapters::{CollectOutput, MemoryInput};
use punctual::prelude::*;
use punctual::runtime::{InputOptions, Query};
use punctual::sql::{SqlInput, SqlQuery};

fn row(device: &str, field: &str, v: f64) -> Row {
    Row::new().with("device", device).with(field, v)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sql = SqlQuery::parse(
        "SELECT r.device, AVG(r.raw * k.factor) AS calibrated, System.Timestamp() AS window_end
         INTO averages
         FROM readings r JOIN calibration k ON r.device = k.device
         GROUP BY r.device, TumblingWindow(second, 10)",
    )?;
    // How the query reads its inputs: `calibration` is reference data for `readings`.
    let uses = sql.inputs();
    assert_eq!(uses[1].reference_of.as_deref(), Some("readings"));

    let s = |secs| Time::EPOCH + TimeSpan::from_secs(secs);
    // Out of order: each pair of seconds swapped (1, 0, 3, 2, ...).
    let readings: Vec<StreamItem<Row>> = (0..20)
        .map(|i| StreamItem::point(s(i ^ 1), row("a", "raw", (i ^ 1) as f64)))
        .collect();
    let calibration = vec![StreamItem::start_edge(s(0), row("a", "factor", 2.0))];

    let mut query = Query::new("sql");
    // Reference data first, importing the readings' CTIs.
    let k = query.create_stream(
        InputOptions::new("calibration", EventShape::Edge)
            .settings(
                AdvanceTimeSettings::builder()
                    .import(AdvanceTimeImportSettings::new("readings"))
                    .policy(AdvanceTimePolicy::Adjust)
                    .build()?,
            )
            .reference(),
        &MemoryInput,
        &calibration,
    )?;
    // In arrival order, CTIs 2 s behind the newest reading (none is dropped).
    let r = query.create_stream(
        InputOptions::new("readings", EventShape::Point)
            .settings(AdvanceTimeSettings::unordered_start_time(
                TimeSpan::from_secs(2),
            ))
            .unordered(),
        &MemoryInput,
        &readings,
    )?;
    let outputs = sql.build(&[
        SqlInput::new("readings", &r),
        SqlInput::new("calibration", &k),
    ])?;
    let out = CollectOutput::new();
    for (name, stream) in &outputs {
        assert_eq!(name, "averages");
        query.bind_output(stream, &out, &())?;
    }
    query.start()?.wait().await?;

    let results: Vec<Row> = out.payloads();
    // Stream Analytics' windows, (end - 10 s, end]: the one ending at 0 s holds raw 0 (mean
    // 0); (0 s, 10 s] raw 1..10, calibrated x2: mean 11; (10 s, 20 s] raw 11..19: mean 30.
    let means: Vec<Option<f64>> = results
        .iter()
        .map(|r| r.get("calibrated").and_then(|v| v.as_f64()))
        .collect();
    assert_eq!(means, vec![Some(0.0), Some(11.0), Some(30.0)]);
    for r in &results {
        println!("{r}");
    }
    Ok(())
}
