//! Watermark strategies in the runtime: the injected clock, the late-data side output,
//! watermark alignment seen by the adapter.

use std::time::Duration;

use punctual_adapters::{channel_input, CollectOutput, MemoryInput};
use punctual_core::{EventShape, StreamItem, Time, TimeSpan};
use punctual_policies::{Arrival, Watermark};
use punctual_runtime::{ManualClock, Query};

mod common;
use common::{payloads, point};

fn t(x: i64) -> Time {
    Time::from_ticks(x)
}

#[tokio::test(start_paused = true)]
async fn the_clock_moves_a_quiet_input_so_a_union_does_not_stall() {
    let clock = ManualClock::new(t(1_000));
    let mut query = Query::new("idle")
        .clock(clock.clone())
        .clock_interval(Duration::from_secs(1));
    let (quiet_tx, quiet) = channel_input::<i64>(16);
    let (busy_tx, busy) = channel_input::<i64>(16);
    let q = query
        .create_stream(
            point("quiet").watermark(
                Watermark::<i64>::bounded(TimeSpan::ZERO).idle_timeout(TimeSpan::from_ticks(100)),
            ),
            &quiet,
            &(),
        )
        .unwrap();
    let b = query
        .create_stream(
            point("busy").watermark(Watermark::<i64>::ascending()),
            &busy,
            &(),
        )
        .unwrap();
    let out = CollectOutput::new();
    query.bind_output(q.union(&[&b]), &out, &()).unwrap();
    let running = query.start().unwrap();
    quiet_tx.send(StreamItem::point(t(10), 1)).await.unwrap();
    for x in [1_050, 1_060, 1_070] {
        busy_tx.send(StreamItem::point(t(x), x)).await.unwrap();
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        out.items().last(),
        Some(&StreamItem::Cti(t(10))),
        "held by the quiet input"
    );
    // 200 ticks of clock without a quiet event: its CTI moves to now - 100 = 1100.
    clock.set(t(1_200));
    tokio::time::sleep(Duration::from_secs(2)).await;
    let items = out.items();
    assert_eq!(
        items.last(),
        Some(&StreamItem::Cti(t(1_070))),
        "now held by the busy input: {items:?}"
    );
    assert!(items.contains(&StreamItem::point(t(1_050), 1_050)));
    assert_eq!(running.counters("quiet").unwrap().cti, t(1_100));
    drop((quiet_tx, busy_tx));
    let report = running.wait().await.unwrap();
    assert_eq!(out.items().last(), Some(&StreamItem::Cti(Time::INF)));
    let (name, record) = &report.clock_records[0];
    assert_eq!(name, "quiet");
    assert_eq!(
        record.iter().map(|r| r.now).collect::<Vec<_>>(),
        vec![t(1_000), t(1_200)],
        "the first reading (the first after its event, too) and the one that moved it"
    );
}

#[tokio::test(start_paused = true)]
async fn late_events_go_to_an_ordinary_output_with_reason_and_cti() {
    let mut query = Query::new("late");
    let items: Vec<StreamItem<i64>> = [10, 5, 20, 12, 30]
        .into_iter()
        .map(|x| StreamItem::point(t(x), x))
        .collect();
    let s = query
        .create_stream(
            point("in").watermark(Watermark::<i64>::bounded(TimeSpan::ZERO)),
            &MemoryInput,
            &items,
        )
        .unwrap();
    let late = query.late_events(&s).unwrap();
    let (main, side) = (CollectOutput::new(), CollectOutput::new());
    query.bind_output(&s, &main, &()).unwrap();
    query
        .bind_output(
            late.map(|l| (l.event.payload, l.cti, l.reason.to_string())),
            &side,
            &(),
        )
        .unwrap();
    let report = query.start().unwrap().wait().await.unwrap();
    let dropped: Vec<_> = payloads(&side.items());
    assert_eq!(
        dropped,
        vec![
            (5, t(10), "late".to_owned()),
            (12, t(20), "late".to_owned())
        ]
    );
    assert_eq!(side.items().last(), Some(&StreamItem::Cti(Time::INF)));
    assert_eq!(report.counters("in").unwrap().dropped, 2);
    assert_eq!(main.items().len(), 3 + 4, "10, 20, 30 and their CTIs");
}

#[tokio::test(start_paused = true)]
async fn the_adapter_sees_which_partitions_to_pause() {
    // A custom adapter reading two partitions, enqueueing with each event's partition.
    struct Partitioned;
    #[async_trait::async_trait]
    impl punctual_runtime::InputAdapter<i64> for Partitioned {
        async fn run(
            &mut self,
            ctx: &mut punctual_runtime::InputContext<i64>,
        ) -> Result<(), punctual_runtime::AdapterError> {
            let at = |p| Arrival {
                time: None,
                partition: Some(p),
            };
            ctx.enqueue_with(StreamItem::point(t(10), 0), at(0)).await?;
            ctx.enqueue_with(StreamItem::point(t(10), 1), at(1)).await?;
            ctx.enqueue_with(StreamItem::point(t(100), 0), at(0))
                .await?;
            assert_eq!(ctx.paused_partitions(), vec![0]);
            ctx.enqueue_with(StreamItem::point(t(90), 1), at(1)).await?;
            assert!(ctx.paused_partitions().is_empty());
            Ok(())
        }
    }
    struct Factory;
    impl punctual_runtime::InputAdapterFactory<(), i64> for Factory {
        type Adapter = Partitioned;
        fn create(
            &self,
            _: &(),
            _: EventShape,
        ) -> Result<Partitioned, punctual_runtime::AdapterError> {
            Ok(Partitioned)
        }
    }
    let mut query = Query::new("aligned");
    query
        .create_stream(
            point("log").watermark(
                Watermark::<i64>::partitioned(2, TimeSpan::ZERO)
                    .max_drift(TimeSpan::from_ticks(50)),
            ),
            &Factory,
            &(),
        )
        .unwrap();
    let report = query.start().unwrap().wait().await.unwrap();
    assert_eq!(report.counters("log").unwrap().events_in, 4);
}

#[test]
fn a_watermark_for_another_payload_type_is_a_bind_error() {
    let mut query = Query::new("types");
    let e = query
        .create_stream(
            point("in").watermark(Watermark::<String>::ascending()),
            &MemoryInput,
            &Vec::<StreamItem<i64>>::new(),
        )
        .unwrap_err();
    assert!(e.to_string().contains("another payload type"), "{e}");
}

/// An input that replays its clock readings itself ([`InputContext::tick`]): a point at 10,
/// readings at 1000 and 1200 (quiet for 200: its CTI moves to 1100), a wait, a point at 2000.
struct Replayed;

#[async_trait::async_trait]
impl punctual_runtime::InputAdapter<i64> for Replayed {
    async fn run(
        &mut self,
        ctx: &mut punctual_runtime::InputContext<i64>,
    ) -> Result<(), punctual_runtime::AdapterError> {
        ctx.enqueue_point(t(10), 10).await?;
        assert!(!ctx.tick(t(1_000)).await, "quiet for 0: no CTI");
        assert!(ctx.tick(t(1_200)).await, "quiet for 200: a CTI");
        tokio::time::sleep(Duration::from_secs(10)).await;
        ctx.enqueue_point(t(2_000), 2_000).await?;
        Ok(())
    }
}

struct ReplayedInput;

impl punctual_runtime::InputAdapterFactory<(), i64> for ReplayedInput {
    type Adapter = Replayed;
    fn create(&self, _: &(), _: EventShape) -> Result<Replayed, punctual_runtime::AdapterError> {
        Ok(Replayed)
    }
}

/// With `clock_from_inputs`, the readings an adapter gives move its stream's watermark and no
/// other clock is read: a query clock far ahead (which would drop the point at 2000) is not.
#[tokio::test(start_paused = true)]
async fn an_input_s_own_clock_readings_and_no_other_clock() {
    let far_ahead = ManualClock::new(t(1_000_000));
    let mut query = Query::new("replayed")
        .clock(far_ahead)
        .clock_interval(Duration::from_millis(100))
        .clock_from_inputs();
    let s = query
        .create_stream(
            point("s").watermark(
                Watermark::<i64>::bounded(TimeSpan::ZERO).idle_timeout(TimeSpan::from_ticks(100)),
            ),
            &ReplayedInput,
            &(),
        )
        .unwrap();
    let out = CollectOutput::new();
    query.bind_output(&s, &out, &()).unwrap();
    let report = query.start().unwrap().wait().await.unwrap();
    let items = out.items();
    assert_eq!(
        &items[..3],
        &[
            StreamItem::Cti(t(10)),
            StreamItem::point(t(10), 10),
            StreamItem::Cti(t(1_100))
        ],
        "{items:?}"
    );
    assert!(
        items.contains(&StreamItem::point(t(2_000), 2_000)),
        "{items:?}"
    );
    assert_eq!(report.counters("s").unwrap().dropped, 0);
}
