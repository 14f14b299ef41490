//! Concept: watermark strategies. Devices with their own clocks, arrival times from the broker,
//! Azure Stream Analytics' tolerances with one watermark per device (substreams); a quiet input
//! keeps moving from an injected clock (its estimated arrival time, minus the late tolerance).
//!
//! Run: `cargo run --example watermarks`

use punctual::policies::{Arrival, Ingress, IngressConfig, IngressOutput, Watermark};
use punctual::prelude::*;

fn main() {
    let t = Time::from_ticks;
    let strategy = Watermark::<(u32, i64)>::arrival(TimeSpan::from_ticks(2))
        .late(TimeSpan::from_ticks(5))
        .early(TimeSpan::from_ticks(5))
        .substream(|r: &(u32, i64)| u64::from(r.0))
        .final_cti(false);
    let mut ingress = Ingress::with_watermark(IngressConfig::default(), strategy);
    let mut out = IngressOutput::new();
    // (device, device time, arrival)
    for (device, time, arrival) in [(1, 100, 100), (2, 90, 101), (1, 110, 108), (2, 95, 109)] {
        let from = Arrival {
            time: Some(t(arrival)),
            partition: None,
        };
        let _ = ingress.enqueue_with(StreamItem::point(t(time), (device, time)), from, &mut out);
    }
    // The first clock reading after those events says when they were seen (at 110, at the
    // latest); nothing arrives for a while after it: the clock moves the CTI to the estimated
    // arrival time (109 + 20) minus late.
    ingress.on_clock(t(110), &mut out);
    ingress.on_clock(t(130), &mut out);
    let c = ingress.counters();
    println!(
        "CTIs: {:?}",
        out.batch.ctis().iter().map(|m| m.time).collect::<Vec<_>>()
    );
    println!(
        "late {} out of order {} adjusted {}",
        c.late, c.out_of_order, c.adjusted
    );
    assert_eq!(ingress.app_time(), t(124));
    assert_eq!(
        c.out_of_order, 0,
        "each device is judged against its own watermark"
    );
}
