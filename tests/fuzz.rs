//! Fuzz harnesses on stable Rust, driven by proptest: the JSON-lines and CSV file inputs (end
//! to end, through a query), the RFC 3339 parser, and the window and join operators with
//! extreme times (through the one driver). Every harness asserts that nothing panics and that
//! the accounting holds: every line read is in exactly one count, every event in exactly one
//! terminal count.
//!
//! `cargo test` runs a few cases of each; `.ci/run` runs many more for a bounded time
//! (`PUNCTUAL_FUZZ_CASES`). A failing input is shrunk and saved by proptest in
//! `proptest-regressions/fuzz.txt`, committed, and replayed first by every later run: the
//! corpus of crashing inputs stays as regression tests. (The ingress' own harnesses, every
//! entry point against one-by-one enqueue under every policy, are in
//! `policies/tests/properties.rs` and take the same variable.)

use std::io::Write;

use proptest::prelude::*;

use punctual::adapters::{
    CollectOutput, CsvInput, CsvInputConfig, JsonLinesInput, JsonLinesInputConfig,
};
use punctual::core::ops::Count;
use punctual::core::{Batch, EventShape, Ordered, StreamItem, Time, TimeSpan};
use punctual::engine::{InputOptions, Plan};
use punctual::policies::{
    AdvanceTimeGenerationSettings, AdvanceTimePolicy, AdvanceTimeSettings, Arrival, Ingress,
    IngressConfig, IngressCounters, IngressOutput, Watermark,
};
use punctual::rows::Row;
use punctual::runtime::{DeadLetterCollector, InputOptions as RunInput, Query};

use punctual_tests::fuzz_config as config;

/// Times at the edges of the range, and ordinary ones.
fn time_text() -> impl Strategy<Value = String> {
    prop_oneof![
        (-50i64..50).prop_map(|t| t.to_string()),
        Just("\"inf\"".to_owned()),
        Just("\"-inf\"".to_owned()),
        Just(i64::MAX.to_string()),
        Just(i64::MIN.to_string()),
        Just((i64::MAX - 1).to_string()),
        Just("\"9999-12-31T23:59:59.9999999Z\"".to_owned()),
        Just("\"0001-01-01T00:00:00Z\"".to_owned()),
        Just("\"2026-02-29T00:00:00Z\"".to_owned()),
        Just("\"2026-01-01T00:00:00+24:00\"".to_owned()),
        Just("1e300".to_owned()),
        Just("\"x\"".to_owned()),
    ]
}

/// A line of a JSON-lines input: a well-formed item of any kind, a damaged one, junk, blank.
fn json_line() -> impl Strategy<Value = String> {
    let kind = prop_oneof![
        Just("point"),
        Just("interval"),
        Just("start"),
        Just("end"),
        Just("cti"),
        Just("eof"),
        Just("nonsense"),
    ];
    let item = (kind, time_text(), time_text(), any::<i32>())
        .prop_map(|(k, s, e, v)| match k {
            "cti" => format!("{{\"kind\":\"cti\",\"time\":{s}}}"),
            "eof" => "{\"kind\":\"eof\"}".to_owned(),
            "point" | "start" => {
                format!("{{\"kind\":\"{k}\",\"start\":{s},\"payload\":{{\"v\":{v}}}}}")
            }
            _ => {
                format!("{{\"kind\":\"{k}\",\"start\":{s},\"end\":{e},\"payload\":{{\"v\":{v}}}}}")
            }
        })
        .boxed();
    prop_oneof![
        6 => item.clone(),
        // A damaged line: cut somewhere, or a byte inserted.
        2 => (item.clone(), any::<prop::sample::Index>()).prop_map(|(l, i)| {
            let cut = i.index(l.len() + 1);
            l.chars().take(cut).collect()
        }),
        1 => (item, any::<prop::sample::Index>(), any::<char>()).prop_map(|(l, i, c)| {
            let mut chars: Vec<char> = l.chars().collect();
            chars.insert(i.index(chars.len() + 1), c);
            chars.into_iter().collect()
        }),
        1 => "[^\n]{0,40}",
        1 => Just(String::new()),
        1 => Just("   \t".to_owned()),
    ]
}

/// A CSV row under the header `time,v,w`: well-formed, damaged, junk or blank.
fn csv_row() -> impl Strategy<Value = String> {
    prop_oneof![
        5 => (time_text(), any::<i32>(), "[a-z ,\"]{0,6}")
            .prop_map(|(t, v, w)| format!("{},{v},{w}", t.trim_matches('"'))),
        1 => "[^\n]{0,30}",
        1 => Just(String::new()),
        1 => Just("\"open,1,2".to_owned()),
    ]
}

fn temp(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("punctual-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    let mut f = std::fs::File::create(&path).expect("temp dir");
    f.write_all(text.as_bytes()).expect("written");
    path
}

/// Runs a file input (JSON lines, or CSV with the time in `time`) through a query to its end:
/// its counters and how many dead letters it had.
fn run_file(path: &std::path::Path, csv: bool) -> (IngressCounters, usize) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let mut query = Query::new("fuzz");
        let options = RunInput::new("in", EventShape::Edge);
        let stream = if csv {
            query.create_stream::<_, Row, _, _>(
                options,
                &CsvInput,
                &CsvInputConfig::new(path, "time"),
            )
        } else {
            query.create_stream::<_, Row, _, _>(
                options,
                &JsonLinesInput,
                &JsonLinesInputConfig::new(path),
            )
        }
        .expect("binds");
        let letters = DeadLetterCollector::new();
        query
            .bind_dead_letters(&stream, letters.clone())
            .expect("binds");
        query
            .bind_output(&stream, &CollectOutput::new(), &())
            .expect("binds");
        let report = query.start().expect("starts").wait().await.expect("runs");
        (
            report.counters("in").expect("the stream"),
            letters.letters().len(),
        )
    })
}

/// Every event in exactly one terminal count, and one dead letter per dropped, rejected,
/// malformed or unreleased item.
fn assert_accounts(c: &IngressCounters, letters: usize) -> Result<(), TestCaseError> {
    prop_assert_eq!(
        c.events_in,
        c.released + c.filtered + c.dropped + c.rejected + c.buffered + c.unreleased,
        "{:?}",
        c
    );
    prop_assert_eq!(
        letters as u64,
        c.dropped + c.rejected + c.rejected_ctis + c.malformed + c.unreleased,
        "{:?}",
        c
    );
    Ok(())
}

proptest! {
    #![proptest_config(config(24))]

    /// Any JSON-lines file: read to its end without a panic; every line is an event, a CTI,
    /// malformed or skipped, exactly once.
    #[test]
    fn json_lines_input_counts_every_line(lines in prop::collection::vec(json_line(), 0..40)) {
        let text = lines.join("\n");
        let path = temp("in.jsonl", &text);
        let (c, letters) = run_file(&path, false);
        // (The final CTI at the end of the file is not a line.)
        prop_assert_eq!(
            c.events_in + c.ctis_in - 1 + c.malformed + c.skipped,
            text.lines().count() as u64,
            "{:?}\n{}", c, text
        );
        assert_accounts(&c, letters)?;
    }

    /// Any CSV file under a header: every row is an event, malformed or skipped, exactly once.
    #[test]
    fn csv_input_counts_every_row(rows in prop::collection::vec(csv_row(), 0..40)) {
        let text = format!("time,v,w\n{}", rows.join("\n"));
        let path = temp("in.csv", &text);
        let (c, letters) = run_file(&path, true);
        prop_assert_eq!(
            c.events_in + c.malformed + c.skipped,
            text.lines().count() as u64 - 1,
            "{:?}\n{}", c, text
        );
        assert_accounts(&c, letters)?;
    }

    /// The RFC 3339 parser never panics; what it accepts prints back to a text that parses
    /// to the same time.
    #[test]
    fn rfc3339_parses_or_says_why(text in "[0-9]{1,5}-[0-9]{1,3}-[0-9]{1,3}[Tt ][0-9]{1,3}:[0-9]{1,3}:[0-9]{1,3}(\\.[0-9]{0,12})?([Zz]|[+-][0-9]{1,3}:[0-9]{1,3})?") {
        if let Ok(t) = Time::parse_rfc3339(&text) {
            let again = Time::parse_rfc3339(&t.rfc3339());
            prop_assert_eq!(again, Ok(t), "{}", text);
        }
    }

    /// Every finite tick prints as RFC 3339 and parses back to itself.
    #[test]
    fn rfc3339_round_trips_every_tick(ticks in (Time::MIN_FINITE.ticks()..=Time::MAX_FINITE.ticks())) {
        let t = Time::from_ticks(ticks);
        prop_assert_eq!(Time::parse_rfc3339(&t.rfc3339()), Ok(t));
    }

    /// Windows and a join fed events and CTIs at extreme times (the ends of the range,
    /// infinities, lifetimes over many windows) under Adjust: no panic, output CTIs never go
    /// back, every event accounted for, and the operators hold nothing after `CTI(+inf)`
    /// that a finite CTI did not leave open.
    #[test]
    fn windows_and_joins_take_extreme_times(
        items in prop::collection::vec((0usize..6, 0usize..10, 0usize..10, 0u8..4), 0..60),
    ) {
        let times = [
            Time::MIN_FINITE,
            Time::from_ticks(Time::MIN_FINITE.ticks() + 1),
            Time::from_ticks(-1),
            Time::from_ticks(0),
            Time::from_ticks(1),
            Time::from_ticks(37),
            Time::from_ticks(10_000_000_000),
            Time::from_ticks(Time::MAX_FINITE.ticks() - 2),
            Time::from_ticks(Time::MAX_FINITE.ticks() - 1),
            Time::INF,
        ];
        let generation = AdvanceTimeGenerationSettings::every_events(3)
            .delay(TimeSpan::from_ticks(2))
            .final_cti(true)
            .build()
            .expect("valid");
        let settings = AdvanceTimeSettings::builder()
            .generation(generation)
            .policy(AdvanceTimePolicy::Adjust)
            .build()
            .expect("valid");
        let mut plan = Plan::new("extreme");
        let (a, left) = plan
            .input::<u8, Ordered>(InputOptions::new("a", EventShape::Edge).settings(settings.clone()))
            .expect("binds");
        let (b, right) = plan
            .input::<u8, Ordered>(InputOptions::new("b", EventShape::Edge).settings(settings))
            .expect("binds");
        let tumbling = left
            .tumbling_window(TimeSpan::from_ticks(10))
            .max_windows_per_event(1_000)
            .aggregate(Count);
        let hopping = right
            .hopping_window(TimeSpan::from_ticks(1_000), TimeSpan::from_ticks(7))
            .max_windows_per_event(1_000)
            .aggregate(Count);
        let joined = left.join_on(&right, |x| *x % 2, |y| *y % 2, |x, y| x.wrapping_add(*y));
        let outs = [
            plan.output(&tumbling).expect("binds"),
            plan.output(&hopping).expect("binds"),
        ];
        let join_out = plan.output(&joined).expect("binds");
        let mut driver = plan.build().expect("builds");
        let mut open: Vec<(usize, Time, u8)> = Vec::new();
        for (kind, s, e, p) in items {
            let input = if p % 2 == 0 { a } else { b };
            let (start, end) = (times[s], times[e]);
            let item = match kind {
                0 => StreamItem::point(start, p),
                1 | 2 => StreamItem::interval(start, end, p),
                3 => {
                    open.push((p as usize % 2, start, p));
                    StreamItem::start_edge(start, p)
                }
                4 => match open.pop() {
                    Some((_, s0, p0)) => {
                        let input = if p0 % 2 == 0 { a } else { b };
                        let _ = driver.enqueue(input, StreamItem::end_edge(s0, end, p0));
                        continue;
                    }
                    None => StreamItem::Cti(start),
                },
                _ => StreamItem::Cti(start),
            };
            let _ = driver.enqueue(input, item);
        }
        driver.finish(a.index());
        driver.finish(b.index());
        let mut last = Time::NEG_INF;
        for out in &outs {
            let mut batch = Batch::new();
            driver.take_output(out, &mut batch);
            for cti in batch.ctis() {
                prop_assert!(cti.time >= last || last == Time::NEG_INF);
                last = cti.time;
            }
            last = Time::NEG_INF;
        }
        let mut batch = Batch::new();
        driver.take_output(&join_out, &mut batch);
        let ctis: Vec<Time> = batch.ctis().iter().map(|m| m.time).collect();
        prop_assert!(ctis.windows(2).all(|w| w[0] <= w[1]), "{:?}", ctis);
        for i in 0..2 {
            let c = driver.counters(i).expect("an input");
            prop_assert_eq!(
                c.events_in,
                c.released + c.filtered + c.dropped + c.rejected + c.buffered + c.unreleased,
                "{:?}", c
            );
        }
    }

    /// Every watermark strategy under both policies, fed events with arrival times and
    /// partitions (extreme ones included) and clock readings: no panic; the same released
    /// items, dead letters and counters one by one as in blocks; every event accounted for;
    /// CTIs never go back.
    #[test]
    fn watermark_strategies_agree_one_by_one_and_in_blocks(
        strategy in 0usize..7,
        adjust in any::<bool>(),
        ops in prop::collection::vec((0usize..10, 0i64..200, 0usize..3, any::<bool>()), 0..80),
        block in 1usize..20,
    ) {
        let times = |i: usize, x: i64| match i {
            0 => Time::MIN_FINITE,
            1 => Time::from_ticks(Time::MAX_FINITE.ticks() - 1),
            _ => Time::from_ticks(x),
        };
        let policy = if adjust { AdvanceTimePolicy::Adjust } else { AdvanceTimePolicy::Drop };
        let make = || -> Ingress<u64> {
            let w: Watermark<u64> = match strategy {
                0 => Watermark::ascending(),
                1 => Watermark::bounded(TimeSpan::from_ticks(5)),
                2 => Watermark::arrival(TimeSpan::from_ticks(3)).late(TimeSpan::from_ticks(10)),
                3 => Watermark::arrival(TimeSpan::from_ticks(3))
                    .late(TimeSpan::from_ticks(10))
                    .substream(|p| *p % 3),
                4 => Watermark::arrival(TimeSpan::from_ticks(0)).input_partitions(2),
                5 => Watermark::partitioned(3, TimeSpan::from_ticks(4))
                    .idle_timeout(TimeSpan::from_ticks(20)),
                _ => Watermark::partitioned(3, TimeSpan::from_ticks(4)).look_ahead().recent_min(4),
            };
            Ingress::with_watermark(IngressConfig::default(), w.policy(policy))
        };
        // Items with their arrival; a clock reading between blocks.
        let items: Vec<(StreamItem<u64>, Arrival)> = ops
            .iter()
            .enumerate()
            .map(|(n, &(i, x, partition, cti))| {
                let t = times(i, x);
                let item = if cti && i > 1 { StreamItem::Cti(t) } else { StreamItem::point(t, n as u64) };
                let arrival = Arrival {
                    time: Some(if i == 1 { Time::from_ticks(Time::MAX_FINITE.ticks() - 1) } else { Time::from_ticks(x + n as i64) }),
                    partition: Some(partition),
                };
                (item, arrival)
            })
            .collect();
        let clock = |k: usize| Time::from_ticks((k as i64 + 1) * 25);

        let (mut one, mut one_out) = (make(), IngressOutput::new());
        for (k, part) in items.chunks(block).enumerate() {
            for (item, arrival) in part.iter().cloned() {
                let _ = one.enqueue_with(item, arrival, &mut one_out);
            }
            one.on_clock(clock(k), &mut one_out);
        }
        one.finish(&mut one_out);
        one.close(&mut one_out);

        let (mut blocks, mut blocks_out) = (make(), IngressOutput::new());
        for (k, part) in items.chunks(block).enumerate() {
            let _ = blocks.enqueue_items_with(part.iter().cloned(), &mut blocks_out);
            blocks.on_clock(clock(k), &mut blocks_out);
        }
        blocks.finish(&mut blocks_out);
        blocks.close(&mut blocks_out);

        let released = |out: &IngressOutput<u64>| -> Vec<StreamItem<u64>> {
            out.batch.items().map(|i| i.map(|p| *p)).collect()
        };
        prop_assert_eq!(released(&one_out), released(&blocks_out));
        prop_assert_eq!(&one_out.dead_letters, &blocks_out.dead_letters);
        prop_assert_eq!(one.counters(), blocks.counters());
        let c = one.counters();
        assert_accounts(&c, one_out.dead_letters.len())?;
        let ctis: Vec<Time> = one_out.batch.ctis().iter().map(|m| m.time).collect();
        prop_assert!(ctis.windows(2).all(|w| w[0] < w[1]), "{:?}", ctis);
    }
}
