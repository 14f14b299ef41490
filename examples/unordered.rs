//! Concept: unordered streams. A windowed aggregate needs its members complete when a CTI closes
//! a window, not sorted; an input created with `InputOptions::unordered()` hands its events over
//! as they arrive instead of holding them sorted until their CTI. The same readings, arriving
//! out of order, through an ordered and an unordered input: the same per-key counts and sums;
//! through `filter(..).ordered()`, the same filtered stream item for item; and joined with a
//! reference stream of names (`join_on`, its results bound as they are, unordered), the same
//! results, each emitted once final instead of sorted.
//!
//! Run: `cargo run --example unordered`

use punctual::adapters::{CollectOutput, MemoryInput};
use punctual::prelude::*;
use punctual::runtime::{InputOptions, Query};

/// (key, value)
type Reading = (char, i64);

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let t = Time::from_ticks;
    let readings = readings();
    let settings = || AdvanceTimeSettings::unordered_start_time(TimeSpan::from_ticks(5));

    let mut query = Query::new("unordered");
    let ordered = query.create_stream(
        InputOptions::new("ordered", EventShape::Point).settings(settings()),
        &MemoryInput,
        &readings,
    )?;
    let unordered = query.create_stream(
        InputOptions::new("unordered", EventShape::Point)
            .settings(settings())
            .unordered(),
        &MemoryInput,
        &readings,
    )?;
    fn per_key<O: Order>(readings: &Stream<Reading, O>) -> Stream<(char, (u64, f64))> {
        readings
            .tumbling_window(TimeSpan::from_ticks(10))
            .group_by(|r: &Reading| r.0)
            .aggregate((Count, Sum::of(|r: &Reading| r.1 as f64)))
    }
    let sums_ordered = per_key(&ordered);
    let sums_unordered = per_key(&unordered);
    let big_ordered = ordered.filter(|r| r.1 >= 40);
    let big_unordered = unordered.filter(|r| r.1 >= 40).ordered();
    // A reference stream: each key's name.
    let names: Vec<StreamItem<(char, String)>> = vec![
        StreamItem::interval(t(0), t(100), ('a', "alpha".to_owned())),
        StreamItem::interval(t(0), t(100), ('b', "beta".to_owned())),
    ];
    let reference = query.create_stream(
        InputOptions::new("names", EventShape::Interval)
            .settings(AdvanceTimeSettings::increasing_start_time()),
        &MemoryInput,
        &names,
    )?;
    let named = |r: &Reading, n: &(char, String)| (n.1.clone(), r.1);
    let named_ordered = ordered.join_on(&reference, |r| r.0, |n| n.0, named);
    let named_unordered = unordered.join_on(&reference, |r| r.0, |n| n.0, named);

    let outs: [CollectOutput<(char, (u64, f64))>; 2] = [CollectOutput::new(), CollectOutput::new()];
    let bigs: [CollectOutput<Reading>; 2] = [CollectOutput::new(), CollectOutput::new()];
    query.bind_output(&sums_ordered, &outs[0], &())?;
    query.bind_output(&sums_unordered, &outs[1], &())?;
    query.bind_output(&big_ordered, &bigs[0], &())?;
    query.bind_output(&big_unordered, &bigs[1], &())?;
    let joined: [CollectOutput<(String, i64)>; 2] = [CollectOutput::new(), CollectOutput::new()];
    query.bind_output(&named_ordered, &joined[0], &())?;
    query.bind_output(&named_unordered, &joined[1], &())?;
    let report = query.start()?.wait().await?;

    let ordered_sums = segments(outs[0].items());
    println!("per key and window (end, key, count, sum), by CTI segment: {ordered_sums:?}");
    assert_eq!(ordered_sums, segments(outs[1].items()));
    println!("readings >= 40, in order: {:?}", bigs[1].items());
    assert_eq!(bigs[0].items(), bigs[1].items());
    // The joins: the same results (each final once the names' CTI passes it), any order.
    println!(
        "named readings (time, (name, value)): {:?}",
        results(&joined[1])
    );
    assert_eq!(results(&joined[0]), results(&joined[1]));
    for name in ["ordered", "unordered"] {
        let c = report.counters(name).ok_or("no counters")?;
        println!(
            "{name}: {} in, {} released, {} dropped",
            c.events_in, c.released, c.dropped
        );
        assert_eq!((c.events_in, c.dropped), (9, 1));
    }
    Ok(())
}

/// The readings in arrival order; up to 4 ticks late. Generated CTIs: 5 behind the highest
/// start.
fn readings() -> Vec<StreamItem<Reading>> {
    let t = Time::from_ticks;
    [
        (1, 'a', 10),
        (6, 'b', 20),
        (3, 'a', 30),
        (12, 'a', 40),
        (9, 'b', 50),
        (15, 'b', 60),
        (11, 'a', 70),
        (24, 'a', 80),
        (2, 'b', 90), // too late: breaks the CTI, dropped (in both)
    ]
    .into_iter()
    .map(|(at, k, v)| StreamItem::point(t(at), (k, v)))
    .collect()
}

/// Window results (end, key, count, sum) per CTI segment, sorted (the order within a segment
/// is free).
fn segments(items: Vec<StreamItem<(char, (u64, f64))>>) -> Vec<Vec<(Time, char, u64, f64)>> {
    let mut segments = vec![Vec::new()];
    for item in items {
        match item {
            StreamItem::Insert(e) => {
                if let Some(last) = segments.last_mut() {
                    last.push((e.kind.start(), e.payload.0, e.payload.1 .0, e.payload.1 .1));
                }
            }
            StreamItem::Cti(_) => segments.push(Vec::new()),
        }
    }
    for s in &mut segments {
        s.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    }
    segments
}

/// A join's results (time, payload), sorted.
fn results(out: &CollectOutput<(String, i64)>) -> Vec<(Time, (String, i64))> {
    let mut r: Vec<_> = out
        .items()
        .into_iter()
        .filter_map(|i| match i {
            StreamItem::Insert(e) => Some((e.kind.start(), e.payload)),
            StreamItem::Cti(_) => None,
        })
        .collect();
    r.sort();
    r
}
