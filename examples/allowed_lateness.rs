//! Concept: Flink's allowed lateness. A tumbling count per key gives its result as soon as the
//! watermark (the input's CTI plus the lateness) passes a window's end, revises it when a late
//! event the CTI still admits changes it, and makes it final when the CTI passes the end. Each
//! result is a chain of edges: the value in force ends where the next one starts, and the
//! last ends at the window's end plus the lateness. Events later than that break the CTI and
//! go to the late-data side output.
//!
//! Run: `cargo run --example allowed_lateness`

use punctual::adapters::{CollectOutput, MemoryInput};
use punctual::prelude::*;
use punctual::runtime::{InputOptions, Query};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let t = Time::from_ticks;
    // (time, key) in arrival order; windows of 10, lateness 5.
    let arrivals = [(3, 'a'), (8, 'b'), (12, 'a'), (7, 'a'), (16, 'b'), (4, 'b')];
    let items: Vec<StreamItem<char>> = arrivals
        .iter()
        .map(|&(at, key)| StreamItem::point(t(at), key))
        .collect();
    let lateness = TimeSpan::from_ticks(5);
    let mut query = Query::new("lateness");
    // The CTI trails the newest event by the lateness: the watermark is the newest event.
    let readings = query.create_stream(
        InputOptions::new("readings", EventShape::Point)
            .unordered()
            .settings(AdvanceTimeSettings::unordered_start_time(lateness)),
        &MemoryInput,
        &items,
    )?;
    let late = query
        .late_events(&readings)?
        .map(|l| (l.event.kind.sync_time(), l.event.payload));
    let counts = readings
        .tumbling_window(TimeSpan::from_ticks(10))
        .group_by(|k: &char| *k)
        .allowed_lateness(lateness)
        .count();
    let out = CollectOutput::new();
    let aside = CollectOutput::new();
    query.bind_output(&counts, &out, &())?;
    query.bind_output(&late, &aside, &())?;
    query.start()?.wait().await?;
    let events: Vec<StreamItem<(char, u64)>> = out
        .items()
        .into_iter()
        .filter(|i| matches!(i, StreamItem::Insert(_)))
        .collect();
    for item in &events {
        println!("{item:?}");
    }
    // 12 moves the watermark to 12: [0,10) is given on time (a 1, b 1). 6 is late (under the
    // watermark) but not behind the CTI (7): a's count is revised where the watermark was (12).
    // 16 moves the CTI to 11, past the window's end: final at 10 + 5. 4 is behind the CTI.
    assert_eq!(
        events[..6],
        [
            StreamItem::start_edge(t(10), ('a', 1)),
            StreamItem::start_edge(t(10), ('b', 1)),
            StreamItem::end_edge(t(10), t(12), ('a', 1)),
            StreamItem::start_edge(t(12), ('a', 2)),
            StreamItem::end_edge(t(12), t(15), ('a', 2)),
            StreamItem::end_edge(t(10), t(15), ('b', 1)),
        ]
    );
    // The side output has the event at 4 (each at the CTI it broke).
    let aside = aside.items();
    let late: Vec<_> = aside
        .iter()
        .filter(|i| matches!(i, StreamItem::Insert(_)))
        .collect();
    assert!(matches!(late[..], [StreamItem::Insert(e)] if e.payload == (t(4), 'b')));
    Ok(())
}
