//! The `punctual::testing` harness itself: scripted sources, clock advances, segment assertions.

use punctual::policies::Watermark;
use punctual::prelude::*;
use punctual::runtime::{InputOptions, Query};
use punctual::testing::{assert_segments, segment_differences, Collector, ManualClock, Script};

fn t(x: i64) -> Time {
    Time::from_ticks(x)
}

#[tokio::test(start_paused = true)]
async fn a_script_with_clock_advances_drives_an_idle_watermark() {
    let clock = ManualClock::new(t(1_000));
    let script = Script::new()
        .point(t(990), 1i64)
        .advance_clock(&clock, TimeSpan::from_ticks(500));
    let mut query = Query::new("harness").clock(clock.clone());
    let s = query
        .create_stream(
            InputOptions::new("in", EventShape::Point).watermark(
                Watermark::<i64>::bounded(TimeSpan::from_ticks(10))
                    .idle_timeout(TimeSpan::from_ticks(100))
                    .final_cti(false),
            ),
            &script,
            &(),
        )
        .unwrap();
    let out = Collector::new();
    query.bind_output(&s, &out, &()).unwrap();
    query.start().unwrap().wait().await.unwrap();
    // The event gives CTI(980); 500 quiet ticks later the clock gives CTI(1500 - 100).
    assert_segments(
        &out.items(),
        &[
            StreamItem::Cti(t(980)),
            StreamItem::point(t(990), 1),
            StreamItem::Cti(t(1_400)),
        ],
    );
}

#[test]
fn differences_are_reported_per_segment() {
    let a = vec![
        StreamItem::point(t(1), 'a'),
        StreamItem::point(t(2), 'b'),
        StreamItem::Cti(t(5)),
    ];
    let same = vec![
        StreamItem::point(t(2), 'b'),
        StreamItem::point(t(1), 'a'),
        StreamItem::Cti(t(5)),
    ];
    assert!(
        segment_differences(&a, &same).is_empty(),
        "order inside a segment is free"
    );
    let moved = vec![
        StreamItem::point(t(1), 'a'),
        StreamItem::Cti(t(5)),
        StreamItem::point(t(2), 'b'),
    ];
    let diffs = segment_differences(&a, &moved);
    assert_eq!(diffs.len(), 2, "{diffs:?}");
    assert!(diffs.iter().any(|d| d.contains("unexpected")));
    let result = std::panic::catch_unwind(|| assert_segments(&a, &moved));
    assert!(result.is_err());
}
