//! Concept: an input stream's advance-time settings and violation policy.
//! Readings arrive out of order; `unordered_start_time(3)` issues a CTI 3 ticks behind the newest
//! reading after each one, so readings up to 3 ticks late are put back in order and older ones
//! are dropped (counted, and visible as dead letters).
//!
//! Run: `cargo run --example ingress_policies`

use punctual::adapters::{CollectOutput, MemoryInput};
use punctual::prelude::*;
use punctual::runtime::{DeadLetterCollector, InputOptions, Query};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let t = Time::from_ticks;
    let readings: Vec<StreamItem<String>> =
        [(10, "a"), (8, "b"), (12, "c"), (6, "too late"), (9, "d")]
            .into_iter()
            .map(|(at, p)| StreamItem::point(t(at), p.to_owned()))
            .collect();
    let mut query = Query::new("ingress");
    let s = query.create_stream(
        InputOptions::new("readings", EventShape::Point).settings(
            AdvanceTimeSettings::unordered_start_time(TimeSpan::from_ticks(3)),
        ),
        &MemoryInput,
        &readings,
    )?;
    let (out, late) = (CollectOutput::new(), DeadLetterCollector::new());
    query.bind_output(&s, &out, &())?;
    query.bind_dead_letters(&s, late.clone())?;
    let report = query.start()?.wait().await?;
    for item in out.items() {
        println!("{item:?}");
    }
    for d in late.letters() {
        println!("not released: {:?} ({})", d.item, d.reason);
    }
    let c = report.counters("readings").ok_or("no stream")?;
    println!(
        "in {} released {} dropped {}",
        c.events_in, c.released, c.dropped
    );
    assert_eq!((c.released, c.dropped), (4, 1));
    Ok(())
}
