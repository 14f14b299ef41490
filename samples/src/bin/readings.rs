//! The README's main sample: temperature readings from a JSON-lines file, some out of order, one
//! too late, one malformed, through a stream with `unordered_start_time(5 s)`: a CTI after every
//! reading, 5 s behind the newest one. Readings within the grace period are put back in order;
//! the late one is dropped and reported; nothing is lost silently.
//!
//! Run: `cargo run -p punctual-samples --bin readings [FILE]`

use std::path::PathBuf;
use std::process::ExitCode;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use punctual::adapters::{JsonLinesInput, JsonLinesInputConfig, MalformedLines};
use punctual::policies::DeadLetterReason;
use punctual::prelude::*;
use punctual::runtime::{
    AdapterError, DeadLetterCollector, InputOptions, OutputAdapter, OutputAdapterFactory, Query,
    QueryError,
};

/// One reading, as the file has it.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
struct Reading {
    device: String,
    temperature: f64,
}

/// An output adapter that prints released readings and CTIs as a table.
struct TablePrinter;

impl OutputAdapterFactory<(), Reading> for TablePrinter {
    type Adapter = TablePrinter;
    fn create(&self, _: &(), _: EventShape) -> Result<TablePrinter, AdapterError> {
        Ok(TablePrinter)
    }
}

#[async_trait]
impl OutputAdapter<Reading> for TablePrinter {
    async fn write(&mut self, batch: &Batch<Reading>) -> Result<(), AdapterError> {
        for item in batch.items() {
            match item {
                StreamItem::Insert(e) => println!(
                    "{:<26} {:<8} {:>9.1} C",
                    e.kind.start().rfc3339(),
                    e.payload.device,
                    e.payload.temperature
                ),
                StreamItem::Cti(t) => {
                    println!("{:<26} (CTI: all readings before it are out)", t.rfc3339())
                }
            }
        }
        Ok(())
    }
}

fn show_dead_letter(d: &DeadLetter<Reading>) -> String {
    match (&d.item, &d.reason) {
        (_, DeadLetterReason::Malformed(m)) => {
            format!("malformed line {}: {}", m.location, m.message)
        }
        (Some(StreamItem::Insert(e)), reason) => format!(
            "{} {:.1} C at {}: {reason} (the stream's CTI was already {})",
            e.payload.device,
            e.payload.temperature,
            e.kind.start().rfc3339(),
            d.cti.rfc3339()
        ),
        (item, reason) => format!("{item:?}: {reason}"),
    }
}

async fn run(path: PathBuf) -> Result<(), QueryError> {
    let mut query = Query::new("readings");
    let readings = query.create_stream(
        InputOptions::new("readings", EventShape::Point).settings(
            AdvanceTimeSettings::unordered_start_time(TimeSpan::from_secs(5)),
        ),
        &JsonLinesInput,
        &JsonLinesInputConfig::new(&path).malformed(MalformedLines::Skip),
    )?;
    query.bind_output(&readings, &TablePrinter, &())?;
    let dead_letters = DeadLetterCollector::new();
    query.bind_dead_letters(&readings, dead_letters.clone())?;
    println!(
        "Readings from {}, released in time order as CTIs allow",
        path.display()
    );
    println!(
        "(a CTI after every reading, 5 s behind the newest: a 5 s grace period for disorder).\n"
    );
    println!("{:<26} {:<8} {:>11}", "time", "device", "temperature");
    let report = query.start()?.wait().await?;
    let c = report
        .counters("readings")
        .ok_or_else(|| QueryError::Bind("no stream `readings`".into()))?;
    println!("\nNot released:");
    for d in dead_letters.letters() {
        println!("  {}", show_dead_letter(&d));
    }
    println!("\nStream `readings`:");
    println!("  {:>4} readings read", c.events_in);
    println!("  {:>4} released in time order", c.released);
    println!("  {:>4} dropped (arrived after their CTI)", c.dropped);
    println!("  {:>4} malformed lines skipped", c.malformed);
    println!("  {:>4} CTIs issued", c.ctis_out);
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let path = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/readings.jsonl"));
    match run(path).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
