//! One query on several workers (`punctual::cluster::run_query`): readings from three
//! partitions (each read on its own worker) joined with a reference stream that imports their
//! CTIs, counted per name in tumbling windows, built
//! with the ordinary `Query` API and run on the local runtime and on three worker threads;
//! the results are the same. Then again with an output that every worker writes its own
//! share of (`CollectOutput::each_worker`, `OutputAdapterFactory::per_worker`): nothing is
//! gathered, the shares hold the same results between them.
//!
//! `cargo run --example cluster`

use punctual::adapters::{CollectOutput, MemoryInput};
use punctual::cluster::{run_query, ClusterConfig};
use punctual::core::ops::Count;
use punctual::core::{EventShape, StreamItem, Time, TimeSpan};
use punctual::policies::{AdvanceTimeImportSettings, AdvanceTimeSettings};
use punctual::runtime::{InputOptions, OutputAdapterFactory, Partitioned, Query, QueryError};

/// A window's result: the name and its count.
type NameCount = (String, u64);

/// The query, the same wherever it runs: what `run_query` calls on every worker.
fn build<F: OutputAdapterFactory<(), NameCount>>(out: &F) -> Result<Query, QueryError> {
    let t = Time::from_ticks;
    let mut query = Query::new("per-name counts");
    // The reference data: a name per sensor, valid from the start; it imports the readings'
    // CTIs, so it never holds the join back.
    let names: Vec<StreamItem<(u32, String)>> = vec![
        StreamItem::start_edge(t(0), (1, "boiler".to_owned())),
        StreamItem::start_edge(t(0), (2, "chiller".to_owned())),
        StreamItem::start_edge(t(0), (3, "pump".to_owned())),
    ];
    let import = AdvanceTimeSettings::builder()
        .import(AdvanceTimeImportSettings::new("readings"))
        .build()
        .map_err(|e| QueryError::Bind(e.to_string()))?;
    let slow = query.create_stream(
        InputOptions::new("names", EventShape::Edge)
            .settings(import)
            .reference(),
        &MemoryInput,
        &names,
    )?;
    // The readings: a sensor and a value, a CTI every 10 ticks, from three partitions (a
    // list of items each, one per sensor, through `Partitioned(MemoryInput)`; files matched
    // by a wildcard work the same way): each partition is an input of its own, read on its
    // own worker, and `fast` is their union.
    let mut readings = vec![Vec::new(); 3];
    for i in 0..60i64 {
        let sensor = (i % 3) as u32 + 1;
        readings[sensor as usize - 1].push(StreamItem::point(t(i), (sensor, i)));
        if i % 10 == 9 {
            for partition in &mut readings {
                partition.push(StreamItem::cti(t(i + 1)));
            }
        }
    }
    let fast = query.create_stream(
        InputOptions::new("readings", EventShape::Point),
        &Partitioned(MemoryInput),
        &readings,
    )?;
    let counts = fast
        .join_on(&slow, |r| r.0, |n| n.0, |_, n| n.1.clone())
        .tumbling_window(TimeSpan::from_ticks(10))
        .group_by(|name: &String| name.clone())
        .aggregate(Count);
    query.bind_output(&counts, out, &())?;
    Ok(query)
}

/// The events (sorted: their order between two CTIs is free) and the last CTI.
fn results(out: &CollectOutput<NameCount>) -> (Vec<String>, Option<Time>) {
    let items = out.items();
    let mut events: Vec<String> = items
        .iter()
        .filter_map(|i| match i {
            StreamItem::Insert(e) => Some(format!("{:?} {:?}", e.kind, e.payload)),
            StreamItem::Cti(_) => None,
        })
        .collect();
    events.sort();
    let last = items.iter().rev().find_map(|i| match i {
        StreamItem::Cti(t) => Some(*t),
        StreamItem::Insert(_) => None,
    });
    (events, last)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // On the local runtime.
    let local = CollectOutput::new();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        build(&local)?
            .start()?
            .wait()
            .await
            .map_err(QueryError::from)
    })?;

    // On three worker threads: each builds the same query; each reads one partition of the
    // readings (the names, which import the first partition's CTIs, go with it), and the
    // windows per name run on all three.
    let split = CollectOutput::new();
    let sink = split.clone();
    let report = run_query(ClusterConfig::threads(3), move |_worker| build(&sink))?;
    let merged = report.report();
    for (input, (name, counters)) in merged.streams.iter().enumerate() {
        println!(
            "{name} read by worker {}: {} events in",
            report.owners[input], counters.events_in
        );
    }

    let (want, want_last) = results(&local);
    let (got, got_last) = results(&split);
    for e in &got {
        println!("{e}");
    }
    assert_eq!(got, want, "the same results on three workers as on one");
    assert_eq!(got_last, want_last, "the same last CTI");
    println!(
        "{} results, the same on the runtime and on three workers",
        got.len()
    );

    // Each worker writes the results of its own windows: none gathered on worker 0.
    let shares = CollectOutput::new();
    let sink = shares.clone();
    run_query(ClusterConfig::threads(3), move |_worker| {
        build(&sink.clone().each_worker())
    })?;
    let (got, got_last) = results(&shares);
    assert_eq!(got, want, "the workers' shares hold the same results");
    assert_eq!(
        got_last, want_last,
        "every share ends with the same last CTI"
    );
    println!("the same {} results, written by each worker", got.len());
    Ok(())
}
