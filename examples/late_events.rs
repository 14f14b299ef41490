//! Concept: the late-data side output. Events a policy or watermark strategy drops go, with the
//! reason and the CTI they broke, to an ordinary stream that any output adapter can take.
//!
//! Run: `cargo run --example late_events`

use punctual::adapters::{CollectOutput, MemoryInput};
use punctual::policies::Watermark;
use punctual::prelude::*;
use punctual::runtime::{InputOptions, Query};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let t = Time::from_ticks;
    let items: Vec<StreamItem<u32>> = [10, 4, 20, 15, 30]
        .iter()
        .map(|&x| StreamItem::point(t(x), x as u32))
        .collect();
    let mut query = Query::new("late");
    let s = query.create_stream(
        InputOptions::new("in", EventShape::Point).watermark(Watermark::<u32>::ascending()),
        &MemoryInput,
        &items,
    )?;
    let late = query
        .late_events(&s)?
        .map(|l| (l.event.payload, l.cti, l.reason.to_string()));
    let out = CollectOutput::new();
    query.bind_output(&late, &out, &())?;
    query.start()?.wait().await?;
    for item in out.items() {
        println!("{item:?}");
    }
    assert_eq!(
        out.items()
            .iter()
            .filter(|i| matches!(i, StreamItem::Insert(_)))
            .count(),
        2
    );
    Ok(())
}
