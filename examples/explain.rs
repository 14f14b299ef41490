//! Concept: `explain` - what holds a query's output back. A join whose reference stream has no
//! CTIs releases nothing; explain names the input.
//!
//! Run: `cargo run --example explain`

use std::time::Duration;

use punctual::adapters::{channel_input, CollectOutput};
use punctual::prelude::*;
use punctual::runtime::{InputOptions, Query};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (orders_tx, orders) = channel_input::<i64>(16);
    let (_prices_tx, prices) = channel_input::<i64>(16);
    let mut query = Query::new("explain");
    let o = query.create_stream(
        InputOptions::new("orders", EventShape::Point)
            .settings(AdvanceTimeSettings::increasing_start_time()),
        &orders,
        &(),
    )?;
    let p = query.create_stream(InputOptions::new("prices", EventShape::Edge), &prices, &())?;
    let joined = o.join(&p, |a, b| a * b).named("priced");
    query.bind_output(&joined, &CollectOutput::new(), &())?;
    let running = query.start()?;
    for x in 1..=3 {
        orders_tx
            .send(StreamItem::point(Time::from_ticks(x), x))
            .await?;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let lines = running.explain().await;
    for e in &lines {
        println!("{e}");
    }
    assert!(lines.iter().any(|e| e
        .held_by
        .as_ref()
        .is_some_and(|(input, _)| input == "prices")));
    running.stop().await?;
    Ok(())
}
