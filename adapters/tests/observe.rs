//! Metrics through the `metrics` facade and the no-CTI warning through `tracing`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, Key, KeyName, Metadata, Recorder, SharedString,
    Unit,
};

use punctual_adapters::{CollectOutput, MemoryInput, RecordsInput};
use punctual_core::{StreamItem, Time};
use punctual_runtime::Query;

mod common;
use common::{ordered, point};

/// Keeps the last value of every counter and gauge by name and labels.
#[derive(Default, Clone)]
struct Recording(Arc<Mutex<HashMap<String, Arc<AtomicU64>>>>);

struct Cell(Arc<AtomicU64>);

impl CounterFn for Cell {
    fn increment(&self, v: u64) {
        self.0.fetch_add(v, Ordering::SeqCst);
    }
    fn absolute(&self, v: u64) {
        self.0.store(v, Ordering::SeqCst);
    }
}

impl GaugeFn for Cell {
    fn increment(&self, _: f64) {}
    fn decrement(&self, _: f64) {}
    fn set(&self, v: f64) {
        self.0.store(v as u64, Ordering::SeqCst);
    }
}

impl Recording {
    fn cell(&self, key: &Key) -> Arc<AtomicU64> {
        let labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        let name = format!("{}{{{}}}", key.name(), labels.join(","));
        self.0
            .lock()
            .expect("no test panics holding it")
            .entry(name)
            .or_default()
            .clone()
    }
    fn get(&self, name: &str) -> Option<u64> {
        self.0
            .lock()
            .expect("no test panics holding it")
            .get(name)
            .map(|c| c.load(Ordering::SeqCst))
    }
}

impl Recorder for Recording {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(Arc::new(Cell(self.cell(key))))
    }
    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(Arc::new(Cell(self.cell(key))))
    }
    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

fn t(x: i64) -> Time {
    Time::from_ticks(x)
}

/// Runs `query` to its end with `recording` as its metrics recorder, `s` bound to an output.
fn recorded(mut query: Query, s: &punctual_core::ops::Stream<i64>, recording: &Recording) {
    query
        .bind_output(s, &CollectOutput::new(), &())
        .expect("binds");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build();
    let rt = rt.expect("a runtime");
    // Handles are registered when the query starts, with the recorder in force then.
    let running = metrics::with_local_recorder(recording, || {
        let _guard = rt.enter();
        query.start().expect("starts")
    });
    rt.block_on(running.wait()).expect("runs");
}

#[test]
fn per_stream_metrics_reach_the_installed_recorder() {
    let recording = Recording::default();
    let items: Vec<StreamItem<i64>> = vec![
        StreamItem::point(t(5), 1),
        StreamItem::point(t(3), 2), // late: dropped
        StreamItem::point(t(9), 3),
    ];
    let mut query = Query::new("metrics");
    let s = query
        .create_stream(ordered("readings"), &MemoryInput, &items)
        .unwrap();
    let kept = s.filter(|v| *v > 1).named("big");
    recorded(query, &kept, &recording);
    assert_eq!(
        recording.get("punctual_events_in{stream=readings}"),
        Some(3)
    );
    assert_eq!(
        recording.get("punctual_events_dropped{stream=readings}"),
        Some(1)
    );
    // The filter right after the input runs in its ingress: 1 is kept out there.
    assert_eq!(
        recording.get("punctual_events_released{stream=readings}"),
        Some(1)
    );
    assert_eq!(
        recording.get("punctual_events_filtered{stream=readings}"),
        Some(1)
    );
    assert_eq!(
        recording.get("punctual_cti_ticks{stream=readings}"),
        Some(9)
    );
}

/// A filter fused into the ingress: the events it keeps out are counted as `filtered`.
#[test]
fn events_a_fused_filter_keeps_out_are_counted() {
    let recording = Recording::default();
    let records = vec![(5, 1), (3, 2), (9, 3), (11, 0)]; // 3 is late: dropped
    let replay = RecordsInput::new(records, |r: &(i64, i64)| t(r.0), |r: &(i64, i64)| r.1);
    let mut query = Query::new("metrics");
    let s = query
        .create_stream(ordered("readings"), &replay, &())
        .unwrap();
    let above1 = s.filter(|v| *v > 1);
    recorded(query, &above1, &recording);
    let get = |name: &str| recording.get(&format!("{name}{{stream=readings}}"));
    assert_eq!(get("punctual_events_in"), Some(4));
    assert_eq!(get("punctual_events_dropped"), Some(1));
    assert_eq!(get("punctual_events_filtered"), Some(2));
    assert_eq!(get("punctual_events_released"), Some(1));
}

/// Collects the messages of `warn` events.
struct Warnings(Arc<Mutex<Vec<String>>>);

impl tracing::Subscriber for Warnings {
    fn enabled(&self, m: &tracing::Metadata<'_>) -> bool {
        *m.level() <= tracing::Level::WARN
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Message<'a>(&'a mut String);
        impl tracing::field::Visit for Message<'_> {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0.push_str(&format!("{value:?}"));
                }
            }
        }
        let mut text = String::new();
        event.record(&mut Message(&mut text));
        self.0.lock().expect("no test panics holding it").push(text);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn an_input_with_many_events_and_no_cti_is_warned_about() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let subscriber = Warnings(Arc::clone(&seen));
    tracing::subscriber::with_default(subscriber, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        rt.block_on(async {
            let items: Vec<StreamItem<i64>> =
                (0..12_000).map(|x| StreamItem::point(t(x), x)).collect();
            let mut query = Query::new("silent");
            query
                .create_stream(point("quiet"), &MemoryInput, &items)
                .unwrap();
            query.start().unwrap().wait().await.unwrap();
        });
    });
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(
        seen[0].contains("input `quiet` has produced 10") && seen[0].contains("no CTI"),
        "{seen:?}"
    );
}

#[test]
fn the_cti_lag_against_the_clock_is_measured_at_clock_readings() {
    use punctual_core::TimeSpan;
    use punctual_policies::Watermark;
    use punctual_runtime::ManualClock;
    let recording = Recording::default();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("runtime");
    let clock = ManualClock::new(t(1_000));
    let (tx, input) = punctual_adapters::channel_input::<i64>(4);
    let mut query = Query::new("clock-lag").clock(clock.clone());
    query
        .create_stream(
            point("quiet").watermark(Watermark::<i64>::bounded(TimeSpan::ZERO).final_cti(false)),
            &input,
            &(),
        )
        .expect("binds");
    let running = metrics::with_local_recorder(&recording, || {
        let _guard = rt.enter();
        query.start().expect("starts")
    });
    rt.block_on(async {
        tx.send(StreamItem::point(t(900), 1)).await.expect("sends");
        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
        drop(tx);
        running.wait().await.expect("runs");
    });
    // CTI 900 from the event; the clock reads 1000: 100 ticks behind.
    assert_eq!(
        recording.get("punctual_cti_clock_lag_ticks{stream=quiet}"),
        Some(100)
    );
}
