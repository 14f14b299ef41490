//! Concept: a slow reference stream imports a fast stream's CTIs, so a join with it releases as
//! fast as the fast stream. Without the import the join would release nothing (see
//! `punctual explain tests/conformance/import/without-import-the-join-never-releases`). Marked
//! as reference data, its snapshot goes in before the fast stream starts, whatever the order
//! the streams are created in and however the runtime schedules them.
//!
//! Run: `cargo run --example import_join`

use punctual::adapters::{CollectOutput, MemoryInput};
use punctual::prelude::*;
use punctual::runtime::{InputOptions, Query};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let t = Time::from_ticks;
    // Prices per product: edges, valid until the next price.
    let prices = vec![
        StreamItem::start_edge(t(0), ("apple".to_owned(), 3)),
        StreamItem::start_edge(t(0), ("pear".to_owned(), 5)),
    ];
    let orders: Vec<StreamItem<(String, i64)>> = vec![
        StreamItem::point(t(5), ("apple".to_owned(), 2)),
        StreamItem::point(t(7), ("pear".to_owned(), 1)),
    ];
    let mut query = Query::new("orders");
    let o = query.create_stream(
        InputOptions::new("orders", EventShape::Point)
            .settings(AdvanceTimeSettings::increasing_start_time()),
        &MemoryInput,
        &orders,
    )?;
    // Reference data: the orders start once the prices' adapter is ready (here: once it has
    // ended; an adapter that keeps running calls `ctx.ready()` after its snapshot). Without
    // it, the orders might run to their end first, and the prices, arriving after the orders'
    // final CTI (which they import), would be dropped as late.
    let p = query.create_stream(
        InputOptions::new("prices", EventShape::Edge)
            .settings(
                AdvanceTimeSettings::builder()
                    .import(AdvanceTimeImportSettings::new("orders"))
                    .policy(AdvanceTimePolicy::Adjust)
                    .build()?,
            )
            .reference(),
        &MemoryInput,
        &prices,
    )?;
    let totals = o.join_on(
        &p,
        |o| o.0.clone(),
        |p| p.0.clone(),
        |o, p| (o.0.clone(), o.1 * p.1),
    );
    let out = CollectOutput::new();
    query.bind_output(&totals, &out, &())?;
    let report = query.start()?.wait().await?;
    assert_eq!(report.counters("prices").map(|c| c.dropped), Some(0));
    let items = out.items();
    items.iter().for_each(|i| println!("{i:?}"));
    assert!(items.contains(&StreamItem::point(t(5), ("apple".to_owned(), 6))));
    assert!(items.contains(&StreamItem::point(t(7), ("pear".to_owned(), 5))));
    Ok(())
}
