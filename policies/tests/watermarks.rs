//! Every watermark strategy's CTI sequence and counters, with a manual clock: the tests hand the
//! ingress each clock reading themselves.

use punctual_core::{EventOrder, StreamItem, Time, TimeSpan};
use punctual_policies::{
    AdvanceTimePolicy, Arrival, DeadLetterReason, DropCause, Emission, Ingress, IngressConfig,
    IngressOutput, Watermark,
};

fn t(x: i64) -> Time {
    Time::from_ticks(x)
}

fn span(x: i64) -> TimeSpan {
    TimeSpan::from_ticks(x)
}

/// (device, time) payloads.
type P = (u64, i64);

struct Run {
    ingress: Ingress<P>,
    out: IngressOutput<P>,
}

impl Run {
    fn new(w: Watermark<P>) -> Self {
        Run {
            ingress: Ingress::with_watermark(IngressConfig::default(), w),
            out: IngressOutput::new(),
        }
    }

    fn event(&mut self, time: i64, device: u64, arrival: Option<i64>) -> &mut Self {
        let from = Arrival {
            time: arrival.map(t),
            partition: None,
        };
        let _ = self.ingress.enqueue_with(
            StreamItem::point(t(time), (device, time)),
            from,
            &mut self.out,
        );
        self
    }

    fn in_partition(&mut self, time: i64, partition: usize) -> &mut Self {
        let from = Arrival {
            time: None,
            partition: Some(partition),
        };
        let _ = self.ingress.enqueue_with(
            StreamItem::point(t(time), (partition as u64, time)),
            from,
            &mut self.out,
        );
        self
    }

    fn clock(&mut self, now: i64) -> &mut Self {
        self.ingress.on_clock(t(now), &mut self.out);
        self
    }

    fn ctis(&self) -> Vec<i64> {
        self.out
            .batch
            .ctis()
            .iter()
            .map(|m| m.time.ticks())
            .collect()
    }

    /// Released events as (start, original time in the payload).
    fn released(&self) -> Vec<(i64, i64)> {
        let b = &self.out.batch;
        (0..b.len())
            .map(|i| (b.sync()[i].ticks(), b.payloads()[i].1))
            .collect()
    }
}

/// An ingress whose watermark is 5 ticks behind the highest time, releasing events on
/// arrival or sorted.
fn bounded_5(on_arrival: bool) -> Ingress<P> {
    let order = if on_arrival {
        EventOrder::Arrival
    } else {
        EventOrder::Sorted
    };
    let config = IngressConfig {
        order,
        ..IngressConfig::default()
    };
    Ingress::with_watermark(config, Watermark::bounded(span(5)))
}

#[test]
fn arrival_tolerances_adjust_late_and_out_of_order_events() {
    let mut r = Run::new(
        Watermark::arrival(span(2))
            .late(span(5))
            .early(span(5))
            .final_cti(false),
    );
    r.event(727, 1, Some(727)).event(728, 2, Some(728)); // CTIs 725, 726
    r.event(737, 1, Some(731)); // 6 early: dropped
    r.event(739, 1, Some(736)); // CTI 737
    r.event(732, 3, Some(737)); // below 737: moved up to it
    r.event(741, 3, Some(747)); // 6 late: moved to 742, which moves the watermark to 740
    assert_eq!(r.ctis(), vec![725, 726, 737, 740]);
    let c = r.ingress.counters();
    assert_eq!((c.early, c.late, c.out_of_order), (1, 1, 1));
    assert_eq!((c.dropped, c.adjusted), (1, 2));
    assert_eq!(
        r.released(),
        vec![(727, 727), (728, 728), (737, 732), (739, 739)]
    );
    r.ingress.finish(&mut r.out);
    assert_eq!(r.ctis(), vec![725, 726, 737, 740], "final CTI off");
    assert!(r
        .out
        .dead_letters
        .iter()
        .any(|d| d.reason == DeadLetterReason::Watermark(DropCause::Early)));
}

#[test]
fn arrival_tolerances_with_drop_drop_instead() {
    let mut r = Run::new(
        Watermark::arrival(span(0))
            .late(span(5))
            .policy(AdvanceTimePolicy::Drop),
    );
    r.event(10, 1, Some(10))
        .event(8, 1, Some(11))
        .event(1, 1, Some(12));
    let c = r.ingress.counters();
    assert_eq!(
        (c.out_of_order, c.late, c.dropped, c.adjusted),
        (1, 1, 2, 0)
    );
    assert_eq!(r.ctis(), vec![10]);
}

#[test]
fn substreams_keep_one_devices_skew_from_adjusting_anothers_events() {
    let global = |w: Watermark<P>| {
        let mut r = Run::new(w);
        // Device 1's clock runs 100 ticks ahead; device 2 is on time.
        for k in 0..5 {
            r.event(1100 + k * 10, 1, Some(1000 + k * 10));
            r.event(1000 + k * 10 + 1, 2, Some(1000 + k * 10 + 1));
        }
        r.ingress.counters()
    };
    let one = global(Watermark::arrival(span(5)).late(span(200)).early(span(200)));
    assert_eq!(
        one.out_of_order, 5,
        "one watermark: device 2 is always behind device 1"
    );
    let per_device = global(
        Watermark::arrival(span(5))
            .late(span(200))
            .early(span(200))
            .substream(|p: &P| p.0),
    );
    assert_eq!(
        per_device.out_of_order, 0,
        "substreams: nobody is out of order"
    );
    assert_eq!(per_device.adjusted, 0);
}

#[test]
fn substream_cti_is_arrival_minus_late_and_advances_when_a_key_goes_quiet() {
    let mut r = Run::new(
        Watermark::arrival(span(2))
            .late(span(5))
            .substream(|p: &P| p.0)
            .final_cti(false),
    );
    r.event(100, 1, Some(100)); // CTI 95
    r.event(101, 2, Some(103)); // CTI 98
    r.event(110, 1, Some(110)); // device 2 quiet: CTI still advances to 105
    assert_eq!(r.ctis(), vec![95, 98, 105]);
    // The first reading after the last event (at 111 by the clock) bounds when it was seen;
    // with no events since, the next moves the CTI on: estimated arrival (110 + 20) - late.
    r.clock(111);
    assert_eq!(r.ctis(), vec![95, 98, 105], "events were coming in");
    r.clock(131);
    assert_eq!(r.ctis(), vec![95, 98, 105, 125]);
    assert_eq!(r.released(), vec![(100, 100), (101, 101), (110, 110)]);
    // Safe: a device 2 event arriving now is at least arrival - late, never below the CTI.
    r.event(90, 2, Some(131));
    assert_eq!(r.ingress.counters().late, 1);
    assert_eq!(r.ingress.counters().dropped, 0);
}

#[test]
fn an_idle_input_advances_from_the_clock_and_the_record_replays_it() {
    let w = || Watermark::arrival(span(0)).late(span(10)).final_cti(false);
    let mut live = Run::new(w());
    // Each event arrives at its own time; a reading right after it (5, 30) bounds when it was
    // seen; later readings with no events between estimate the arrival time from there.
    live.event(5, 1, Some(5))
        .clock(5)
        .clock(20)
        .clock(21)
        .event(30, 1, Some(30))
        .clock(30)
        .clock(50);
    assert_eq!(live.ctis(), vec![5, 10, 11, 30, 40]);
    let record = live.ingress.clock_record().to_vec();
    assert_eq!(
        record.iter().map(|r| r.now.ticks()).collect::<Vec<_>>(),
        vec![5, 20, 21, 30, 50],
        "the readings that issued a CTI or followed events are recorded"
    );

    // Replay the same items with the recorded readings at the same positions (the readings
    // that issued nothing, but told the strategy when an event was seen, with them).
    let items = [(5, 5), (30, 30)];
    let mut replay = Run::new(w());
    let mut next = record.iter().peekable();
    for (k, (time, at)) in items.iter().enumerate() {
        while let Some(r) = next.next_if(|r| r.after_items == k as u64) {
            replay.clock(r.now.ticks());
        }
        replay.event(*time, 1, Some(*at));
    }
    for r in next {
        replay.clock(r.now.ticks());
    }
    assert_eq!(replay.ctis(), live.ctis());
    assert_eq!(replay.released(), live.released());
}

#[test]
fn ascending_and_bounded_out_of_orderness() {
    // Flink's monotonous timestamps: an event at the newest time is on time, one a tick
    // behind it is late.
    let mut asc = Run::new(Watermark::ascending().final_cti(false));
    asc.event(10, 1, None).event(12, 1, None).event(12, 1, None);
    assert_eq!(asc.ctis(), vec![10, 12], "an equal time is still on time");
    assert_eq!(asc.ingress.counters().dropped, 0);
    asc.event(11, 1, None);
    assert_eq!(
        asc.ingress.counters().dropped,
        1,
        "11 is behind CTI 12: late, dropped"
    );
    let mut b = Run::new(Watermark::bounded(span(5)).final_cti(true));
    b.event(10, 1, None)
        .event(7, 1, None)
        .event(20, 1, None)
        .event(14, 1, None);
    assert_eq!(b.ctis(), vec![5, 15]);
    assert_eq!(b.ingress.counters().dropped, 1, "14 < 15");
    b.ingress.finish(&mut b.out);
    assert_eq!(b.ctis(), vec![5, 15, i64::MAX]);
    assert_eq!(b.released(), vec![(7, 7), (10, 10), (20, 20)]);
}

#[test]
fn periodic_emission_issues_at_clock_intervals() {
    let mut r = Run::new(
        Watermark::bounded(span(1))
            .emission(Emission::Periodic(span(100)))
            .final_cti(false),
    );
    r.event(10, 1, None).event(20, 1, None);
    assert_eq!(r.ctis(), Vec::<i64>::new(), "nothing between readings");
    r.clock(1000);
    assert_eq!(r.ctis(), vec![19]);
    r.event(30, 1, None).clock(1050);
    assert_eq!(
        r.ctis(),
        vec![19],
        "less than the interval since the last emission"
    );
    r.clock(1100);
    assert_eq!(r.ctis(), vec![19, 29]);
}

#[test]
fn bounded_idleness_advances_a_quiet_input() {
    let mut r = Run::new(
        Watermark::bounded(span(5))
            .idle_timeout(span(100))
            .final_cti(false),
    );
    // The event came between the readings at 1000 and 1050: it counts as seen at 1050.
    r.clock(1000).event(10, 1, None).clock(1050);
    assert_eq!(r.ctis(), vec![5]);
    r.clock(1100);
    assert_eq!(r.ctis(), vec![5], "50 quiet");
    r.clock(1150);
    assert_eq!(r.ctis(), vec![5, 1050], "100 quiet: CTI = now - timeout");
}

#[test]
fn partitions_take_the_minimum_and_leave_idle_ones_out() {
    let mut r = Run::new(
        Watermark::partitioned(3, span(0))
            .idle_timeout(span(100))
            .final_cti(false),
    );
    r.clock(0);
    r.in_partition(10, 0).in_partition(20, 1);
    assert_eq!(
        r.ctis(),
        Vec::<i64>::new(),
        "partition 2 not seen yet and not timed out"
    );
    r.in_partition(5, 2);
    assert_eq!(r.ctis(), vec![5]);
    r.in_partition(30, 0).in_partition(40, 1);
    assert_eq!(r.ctis(), vec![5], "partition 2 holds the minimum");
    // Every partition's events so far came before the reading at 50: seen at 50.
    r.clock(50).in_partition(41, 1).clock(120);
    assert_eq!(
        r.ctis(),
        vec![5],
        "70 quiet: partitions 0 and 2 still count"
    );
    r.clock(160);
    assert_eq!(
        r.ctis(),
        vec![5, 41],
        "partitions 0 and 2 quiet since 50: only partition 1 counts"
    );
    r.clock(300);
    assert_eq!(
        r.ctis(),
        vec![5, 41, 200],
        "every partition idle: the input is idle, now - timeout"
    );
}

#[test]
fn partitions_without_a_timeout_wait_for_every_partition() {
    let mut r = Run::new(Watermark::partitioned(2, span(0)).final_cti(false));
    r.in_partition(10, 0).in_partition(11, 0).clock(1_000_000);
    assert_eq!(r.ctis(), Vec::<i64>::new());
    r.in_partition(3, 1);
    assert_eq!(r.ctis(), vec![3]);
}

#[test]
fn alignment_pauses_partitions_running_ahead() {
    let mut r = Run::new(
        Watermark::partitioned(2, span(0))
            .max_drift(span(50))
            .final_cti(false),
    );
    r.in_partition(10, 0).in_partition(10, 1);
    assert!(r.ingress.paused_partitions().is_empty());
    r.in_partition(100, 0);
    assert_eq!(
        r.ingress.paused_partitions(),
        vec![0],
        "partition 0 is 90 ahead of CTI 10"
    );
    r.in_partition(80, 1);
    assert!(r.ingress.paused_partitions().is_empty(), "CTI 80 caught up");
}

#[test]
fn the_late_output_carries_every_dropped_event_with_its_reason() {
    let mut r = Run::new(Watermark::bounded(span(0)).final_cti(true));
    r.ingress.enable_late_output();
    r.event(10, 1, None)
        .event(5, 2, None)
        .event(20, 3, None)
        .event(15, 4, None);
    r.ingress.finish(&mut r.out);
    let late: Vec<(i64, u64, i64)> = r
        .out
        .late
        .items()
        .filter_map(|i| match i {
            StreamItem::Insert(e) => Some((
                e.kind.start().ticks(),
                e.payload.event.payload.0,
                e.payload.cti.ticks(),
            )),
            StreamItem::Cti(_) => None,
        })
        .collect();
    assert_eq!(late, vec![(10, 2, 10), (20, 4, 20)]);
    let late_ctis: Vec<i64> = r.out.late.ctis().iter().map(|m| m.time.ticks()).collect();
    assert_eq!(
        late_ctis,
        r.ctis(),
        "the late stream carries the stream's CTIs"
    );
}

#[test]
fn the_arrival_strategy_needs_arrival_times() {
    let mut r = Run::new(Watermark::arrival(span(1)));
    r.event(10, 1, None);
    assert_eq!(r.ingress.counters().rejected, 1);
}

#[test]
fn a_watermark_strategy_releases_on_arrival_with_the_same_ctis_and_drops() {
    let items = [(10, 1), (4, 2), (12, 3), (7, 4), (30, 5), (25, 6), (9, 7)];
    let run = |on_arrival: bool| {
        let mut ingress = bounded_5(on_arrival);
        let mut out = IngressOutput::new();
        for (time, device) in items {
            let _ = ingress.enqueue(StreamItem::point(t(time), (device, time)), &mut out);
        }
        ingress.finish(&mut out);
        (out, ingress.counters())
    };
    let (ordered, ordered_counters) = run(false);
    let (arrival, arrival_counters) = run(true);
    // The same CTIs and the same dead letters (4 breaks CTI(5), 9 breaks CTI(25), in both).
    let ctis = |o: &IngressOutput<P>| {
        o.batch
            .items()
            .filter(|i| matches!(i, StreamItem::Cti(_)))
            .count()
    };
    assert_eq!(ctis(&ordered), ctis(&arrival));
    assert_eq!(ordered.dead_letters, arrival.dead_letters);
    assert_eq!(ordered_counters, arrival_counters);
    // Released on arrival: in arrival order, before the CTIs that cover them.
    assert_eq!(
        arrival
            .batch
            .payloads()
            .iter()
            .map(|p| p.0)
            .collect::<Vec<_>>(),
        vec![1, 3, 4, 5, 6]
    );
    let mut sorted = ordered.batch.payloads().to_vec();
    sorted.sort_by_key(|p| p.1);
    assert_eq!(ordered.batch.payloads(), &sorted[..]);
}

/// A filter fused into an ingress with a watermark strategy: the watermark still sees every
/// point (the CTIs and the drops are the same), only the kept points are released, and the
/// refused ones are counted as `filtered`.
#[test]
fn a_fused_filter_leaves_the_watermark_its_view_of_every_point() {
    let records: [(i64, u64); 7] = [(10, 1), (4, 2), (12, 3), (7, 4), (30, 5), (25, 6), (9, 7)];
    for on_arrival in [false, true] {
        let ingress = || bounded_5(on_arrival);
        let (mut all, mut pushed) = (ingress(), ingress());
        pushed.fuse_filter(Box::new(|p: &P| p.0 % 2 == 1));
        let (mut all_out, mut pushed_out) = (IngressOutput::new(), IngressOutput::new());
        let time = |r: &(i64, u64)| t(r.0);
        let payload = |r: &(i64, u64)| (r.1, r.0);
        let keep = |p: &P| p.0 % 2 == 1;
        let summary = all.enqueue_point_records(&records, time, payload, &mut all_out);
        assert_eq!(summary.map(|s| s.rejected), Ok(0));
        let summary = pushed.enqueue_point_records(&records, time, payload, &mut pushed_out);
        assert_eq!(summary.map(|s| s.rejected), Ok(0));
        all.finish(&mut all_out);
        pushed.finish(&mut pushed_out);
        let mut filtered = all_out.batch.clone();
        filtered.retain(keep);
        let items =
            |b: &punctual_core::Batch<P>| b.items().map(|i| i.map(|p| *p)).collect::<Vec<_>>();
        assert_eq!(
            items(&pushed_out.batch),
            items(&filtered),
            "on arrival: {on_arrival}"
        );
        assert_eq!(pushed_out.dead_letters, all_out.dead_letters);
        let (a, p) = (all.counters(), pushed.counters());
        assert_eq!(
            (p.events_in, p.dropped, p.ctis_out),
            (a.events_in, a.dropped, a.ctis_out)
        );
        // 4 and 9 break the CTI in both; of the other five, devices 4 and 6 are even.
        assert_eq!((p.dropped, p.filtered, p.released), (2, 2, 3));
    }
}

/// Stream Analytics' clock watermark applies only to a partition with no events coming in: a
/// backlog replayed far faster than real time (arrival times far behind the clock, which ticks
/// all along) has nothing dropped or adjusted that is within its tolerances, and its CTIs come
/// from the events.
#[test]
fn a_backlog_replay_keeps_every_event_within_its_tolerances() {
    for substreams in [false, true] {
        let w = Watermark::arrival(span(3)).late(span(10)).final_cti(false);
        let w = if substreams {
            w.substream(|p: &P| p.0)
        } else {
            w
        };
        let mut r = Run::new(w);
        for k in 0..2_000i64 {
            // Times 10 apart, up to 3 out of order; arrivals 1 to 6 after them.
            let time = k * 10 - (k % 4 == 3) as i64 * 3;
            let arrival = time + 1 + k % 6;
            r.event(time, (k % 5) as u64, Some(arrival));
            if k % 7 == 0 {
                // The clock runs far ahead of the arrival times (a reader behind the broker).
                r.clock(1_000_000 + k);
            }
        }
        let c = r.ingress.counters();
        assert_eq!(
            (c.dropped, c.adjusted, c.late, c.out_of_order, c.early),
            (0, 0, 0, 0, 0),
            "substreams: {substreams}"
        );
        assert_eq!(c.released + c.buffered, 2_000);
        assert!(
            r.ctis().iter().all(|&c| c < 20_000),
            "{:?}",
            r.ctis().last()
        );
    }
}

/// Each input partition has its own arrival watermark and the stream's CTI is the minimum: a
/// partition whose arrival times are behind another's (two partitions merged into one stream)
/// loses nothing. Without partitions, an event whose arrival is behind one seen before is out
/// of order (adjusted and counted), never dropped silently.
#[test]
fn arrival_watermarks_are_per_input_partition_and_every_drop_has_a_reason() {
    let from = |arrival: i64, partition: usize| Arrival {
        time: Some(t(arrival)),
        partition: Some(partition),
    };
    let mut r = Run::new(
        Watermark::arrival(span(0))
            .late(span(5))
            .substream(|p: &P| p.0)
            .input_partitions(2)
            .final_cti(false),
    );
    for (time, device, arrival, partition) in [
        (100, 1, 100, 0),
        (101, 1, 101, 0),
        (50, 2, 50, 1), // another partition, far behind the first
        (51, 2, 52, 1),
        (102, 1, 103, 0),
    ] {
        let _ = r.ingress.enqueue_with(
            StreamItem::point(t(time), (device, time)),
            from(arrival, partition),
            &mut r.out,
        );
    }
    let c = r.ingress.counters();
    assert_eq!((c.dropped, c.adjusted), (0, 0));
    assert_eq!(
        r.ctis(),
        vec![45, 47],
        "the minimum over partitions, once both are seen"
    );

    // One partition (none given), an arrival behind the highest seen: the event is below the
    // stream's CTI; it is moved up to it and counted as out of order.
    let mut r = Run::new(
        Watermark::arrival(span(0))
            .late(span(5))
            .substream(|p: &P| p.0)
            .final_cti(false),
    );
    r.event(100, 1, Some(100)).event(50, 2, Some(52));
    let c = r.ingress.counters();
    assert_eq!(
        (c.dropped, c.late, c.out_of_order, c.adjusted),
        (0, 0, 1, 1)
    );
    r.event(200, 1, Some(200));
    assert_eq!(r.released(), vec![(95, 50), (100, 100)]);
}

/// Substreams need a late-arrival tolerance (Stream Analytics' default, 5 s, unless given),
/// and keep advancing with it; a strategy without one, or beyond Stream Analytics' limit, is
/// refused.
#[test]
fn substreams_take_the_default_late_tolerance_and_a_bad_one_is_refused() {
    let s = |x: i64| x * 10_000_000;
    let mut r = Run::new(
        Watermark::arrival(span(0))
            .substream(|p: &P| p.0)
            .final_cti(false),
    );
    r.event(s(100), 1, Some(s(100)))
        .event(s(200), 2, Some(s(200)));
    assert_eq!(r.ctis(), vec![s(95), s(195)], "arrival - 5 s");
    assert!(Watermark::<P>::arrival(span(0))
        .no_late_limit()
        .substream(|p: &P| p.0)
        .validate()
        .unwrap_err()
        .contains("substreams need a late-arrival tolerance"));
    assert!(Watermark::<P>::arrival(span(0))
        .late(TimeSpan::from_secs(21 * 86_400))
        .validate()
        .is_err());
    assert!(Watermark::<P>::arrival(span(-1)).validate().is_err());
    assert!(Watermark::<P>::arrival(span(0))
        .late(punctual_policies::ASA_MAX_LATE)
        .validate()
        .is_ok());
}

/// Stream Analytics without `TIMESTAMP BY`: each event's time is its arrival time, nothing is
/// counted as adjusted, and the CTI is the highest arrival time.
#[test]
fn arrival_time_as_event_time() {
    let mut r = Run::new(Watermark::arrival_time().final_cti(false));
    r.event(5, 1, Some(40))
        .event(900, 2, Some(41))
        .event(3, 1, Some(45));
    assert_eq!(r.ctis(), vec![40, 41, 45]);
    let c = r.ingress.counters();
    assert_eq!((c.adjusted, c.dropped, c.late, c.early), (0, 0, 0, 0));
    assert_eq!(r.released(), vec![(40, 5), (41, 900)]);
}

/// YTsaurus Flow's estimate of a partition's watermark: `max(highest - bound, min(ahead_min,
/// ahead_max - bound))`, the look-ahead term from the next batch the adapter has read; the
/// stream's CTI is the minimum over the partitions.
#[test]
fn the_look_ahead_term_raises_a_partitions_watermark_to_its_next_batch() {
    let mut r = Run::new(
        Watermark::partitioned(2, span(10))
            .look_ahead()
            .final_cti(false),
    );
    r.in_partition(100, 0).in_partition(200, 1);
    assert_eq!(r.ctis(), vec![90], "min(100 - 10, 200 - 10)");
    // Partition 0's next batch holds 150..180: its watermark is max(90, min(150, 170)) = 150.
    assert!(r.ingress.look_ahead(0, t(150), t(180), &mut r.out));
    assert_eq!(r.ctis(), vec![90, 150]);
    // A batch spread wider than the bound: min(ahead_min, ahead_max - bound) = 155.
    r.ingress.look_ahead(0, t(160), t(165), &mut r.out);
    assert_eq!(r.ctis(), vec![90, 150, 155]);
    // Without the option, a report changes nothing.
    let mut plain = Run::new(Watermark::partitioned(1, span(10)).final_cti(false));
    plain.in_partition(100, 0);
    assert!(!plain.ingress.look_ahead(0, t(500), t(600), &mut plain.out));
    assert_eq!(plain.ctis(), vec![90]);
}

/// The guards YTsaurus Flow plans: the least time of a partition's last N events caps its
/// watermark (a producer lagging behind the others on the same partition keeps its events on
/// time), and with dimensions a partition's highest time is the least over them (one kind of
/// event that stops holds the partition back).
#[test]
fn recent_min_and_dimensions_guard_a_partitions_watermark() {
    // Two producers on one partition, one 100 behind the other, bound 10.
    let events = [
        (900, 2),
        (1000, 1),
        (910, 2),
        (1010, 1),
        (920, 2),
        (1020, 1),
    ];
    let run = |w: Watermark<P>| {
        let mut r = Run::new(w.final_cti(false));
        for (time, producer) in events {
            r.ingress
                .enqueue_with(
                    StreamItem::point(t(time), (producer, time)),
                    Arrival {
                        time: None,
                        partition: Some(0),
                    },
                    &mut r.out,
                )
                .ok();
        }
        (r.ingress.counters().dropped, r.ctis())
    };
    let (dropped, _) = run(Watermark::partitioned(1, span(10)));
    assert_eq!(dropped, 2, "the lagging producer's events are late");
    let (dropped, ctis) = run(Watermark::partitioned(1, span(10)).recent_min(4));
    assert_eq!(dropped, 0);
    assert_eq!(ctis.last(), Some(&910), "the least of the last four events");
    let (dropped, ctis) = run(Watermark::partitioned(1, span(10)).dimensions(|p: &P| p.0));
    assert_eq!(dropped, 0);
    assert_eq!(
        ctis.last(),
        Some(&910),
        "the least producer's highest - bound"
    );
}

/// A strategy never makes an invalid event or ends the stream by accident: an arrival time at
/// an infinity is refused, and an event the strategy would move where no event can be (a point
/// at the last finite tick) is rejected with the reason; both are counted and dead-lettered,
/// and the stream goes on.
#[test]
fn a_strategy_makes_no_invalid_event_and_takes_no_infinite_arrival() {
    let mut r = Run::new(Watermark::arrival(span(0)).late(span(5)).final_cti(false));
    let _ = r.ingress.enqueue_with(
        StreamItem::point(t(10), (1, 10)),
        Arrival {
            time: Some(Time::INF),
            partition: None,
        },
        &mut r.out,
    );
    r.event(20, 1, Some(20));
    let c = r.ingress.counters();
    assert_eq!((c.rejected, c.released + c.buffered), (1, 1));
    assert_eq!(r.ctis(), vec![20], "the stream did not end");

    let mut r = Run::new(Watermark::arrival_time().final_cti(false));
    r.event(5, 1, Some(Time::MAX_FINITE.ticks()));
    r.event(6, 1, Some(30));
    let c = r.ingress.counters();
    assert_eq!(c.rejected, 1, "a point at the last finite tick");
    assert!(r
        .out
        .dead_letters
        .iter()
        .any(|d| d.reason.to_string().contains("invalid event")));
}
