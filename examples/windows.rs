//! Concept: windows and aggregates. The same readings through tumbling windows (a result per
//! window and key, a point at the window's end), hopping windows with the window's lifetime (the
//! CTI held back to the earliest open window), snapshot windows and count windows.
//!
//! Run: `cargo run --example windows`

use punctual::adapters::{CollectOutput, MemoryInput};
use punctual::prelude::*;
use punctual::runtime::{InputOptions, Query};

fn events<P: Clone>(items: &[StreamItem<P>]) -> Vec<(Time, P)> {
    items
        .iter()
        .filter_map(|i| match i {
            StreamItem::Insert(e) => Some((e.kind.start(), e.payload.clone())),
            StreamItem::Cti(_) => None,
        })
        .collect()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let t = Time::from_ticks;
    let readings: Vec<StreamItem<(char, f64)>> =
        [(1, 'a', 1.0), (4, 'b', 2.0), (6, 'a', 3.0), (12, 'a', 4.0)]
            .into_iter()
            .map(|(at, k, v)| StreamItem::point(t(at), (k, v)))
            .chain(std::iter::once(StreamItem::Cti(Time::INF)))
            .collect();
    let mut query = Query::new("windows");
    let s = query.create_stream(
        InputOptions::new("in", EventShape::Point),
        &MemoryInput,
        &readings,
    )?;
    let tumbling = s
        .tumbling_window(TimeSpan::from_ticks(10))
        .group_by(|r: &(char, f64)| r.0)
        .aggregate((Count, Avg::of(|r: &(char, f64)| r.1)));
    let hopping = s
        .hopping_window(TimeSpan::from_ticks(10), TimeSpan::from_ticks(5))
        .output(WindowOutput::Window)
        .count();
    let snapshots = s
        .alter_duration(TimeSpan::from_ticks(5))
        .snapshot_window()
        .count();
    let counts = s.count_window(2).aggregate(Sum::of(|r: &(char, f64)| r.1));
    let outs = [
        CollectOutput::new(),
        CollectOutput::new(),
        CollectOutput::new(),
    ];
    let sums = CollectOutput::new();
    query.bind_output(&tumbling, &CollectOutput::<(char, (u64, f64))>::new(), &())?;
    query.bind_output(&hopping, &outs[0], &())?;
    query.bind_output(&snapshots, &outs[1], &())?;
    query.bind_output(&counts, &sums, &())?;
    query.start()?.wait().await?;
    println!(
        "hopping counts (window start, count): {:?}",
        events(&outs[0].items())
    );
    println!("snapshot counts: {:?}", events(&outs[1].items()));
    println!(
        "count windows of 2 start times, sums: {:?}",
        events(&sums.items())
    );
    assert_eq!(
        events(&outs[0].items()).len(),
        4,
        "windows [-5,5), [0,10), [5,15), [10,20)"
    );
    let _ = &outs[2];
    Ok(())
}
