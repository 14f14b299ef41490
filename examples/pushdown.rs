//! Concept: a filter fused into the ingress. A `.filter(..)` right after an input, and that
//! input's only consumer, runs inside the input's ingress when the query starts: the events it
//! refuses are never written out, yet they count for CTI generation and the CTI checks exactly
//! as if they had gone through, so the query sees what the filter operator would pass. The
//! refused events are counted as `filtered` in the stream's counters (nothing disappears
//! unaccounted). When the input is read elsewhere too (here: bound to an output), the filter
//! stays an operator after the ingress; the filtered stream is the same either way.
//!
//! Run: `cargo run --example pushdown`

use punctual::adapters::{CollectOutput, RecordsInput};
use punctual::prelude::*;
use punctual::runtime::{InputOptions, Query};

/// A decoded record: (milliseconds, sensor, value).
type Record = (i64, char, i64);

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Arrival order; the reading at 2 ms comes after CTI(3 ms) and is dropped in both streams.
    let records: Vec<Record> = vec![
        (1, 'a', 10),
        (3, 'b', 50),
        (2, 'a', 90),
        (5, 'a', 30),
        (6, 'b', 70),
        (9, 'a', 40),
        (8, 'b', 20),
        (12, 'a', 80),
    ];
    let replay = RecordsInput::new(
        records,
        |r: &Record| Time::EPOCH + TimeSpan::from_millis(r.0),
        |r: &Record| (r.1, r.2),
    );
    // A CTI every 2 events, at the highest start so far.
    let settings = AdvanceTimeSettings::builder()
        .generation(
            AdvanceTimeGenerationSettings::every_events(2)
                .final_cti(true)
                .build()?,
        )
        .policy(AdvanceTimePolicy::Drop)
        .build()?;
    let mut query = Query::new("pushdown");
    let fused = query.create_stream(
        InputOptions::new("fused", EventShape::Point).settings(settings.clone()),
        &replay,
        &(),
    )?;
    let operator = query.create_stream(
        InputOptions::new("operator", EventShape::Point).settings(settings),
        &replay,
        &(),
    )?;
    let big = |p: &(char, i64)| p.1 >= 40;
    let outs = [CollectOutput::new(), CollectOutput::new()];
    query.bind_output(fused.filter(big), &outs[0], &())?;
    query.bind_output(operator.filter(big), &outs[1], &())?;
    // `operator` is also read as it is: its filter cannot go into its ingress.
    let whole = CollectOutput::new();
    query.bind_output(&operator, &whole, &())?;
    let report = query.start()?.wait().await?;

    println!("filtered: {:?}", outs[0].items());
    assert_eq!(
        outs[0].items(),
        outs[1].items(),
        "the same stream either way"
    );
    for name in ["fused", "operator"] {
        let c = report.counters(name).ok_or("no counters")?;
        println!(
            "{name}: {} in, {} released, {} dropped, {} filtered",
            c.events_in, c.released, c.dropped, c.filtered
        );
    }
    let fused = report.counters("fused").ok_or("no counters")?;
    // 10, 30 and 20 stayed out; 90 at 2 ms broke CTI(3 ms) first and was dropped.
    assert_eq!((fused.events_in, fused.dropped, fused.filtered), (8, 1, 3));
    assert_eq!(fused.released, 4);
    let operator = report.counters("operator").ok_or("no counters")?;
    assert_eq!((operator.released, operator.filtered), (7, 0));
    Ok(())
}
