//! The headline sample: fast sensor readings joined with slow, rarely changing calibration data,
//! then a hopping-window average per device.
//!
//! - `readings`: point events, a CTI generated after every 20 readings, 3 s behind the newest
//!   (a grace period for readings that arrive out of order); later readings are dropped.
//! - `calibration`: edge events (a device's factor and offset, valid until the next version).
//!   It has no CTIs of its own: it *imports* the readings' CTIs, so the join can release results
//!   as fast as the readings come. A calibration change logged after it took effect is late;
//!   the `Adjust` policy moves its start up to the current CTI.
//! - the query: join on the device, calibrated value = raw * factor + offset, then the average
//!   per device over 60 s windows every 10 s.
//!
//! Both streams are replayed from one recorded arrival log (`data/sensors.jsonl`, made by
//! `data/make_sensors.py`) in its exact order, by the `Replay` adapter factory defined below, so
//! every run prints the same thing. A second run without the import shows why it matters.
//!
//! Run: `cargo run --release -p punctual-samples --bin sensors [LOG]`

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use tokio::sync::Notify;

use punctual::adapters::line::{parse_line, Line};
use punctual::prelude::*;
use punctual::runtime::{
    AdapterError, InputAdapter, InputAdapterFactory, InputContext, InputOptions, OutputAdapter,
    OutputAdapterFactory, Query, QueryReport,
};

use punctual_samples::sensors::{
    imported_from, readings_settings, Calibrated, Calibration, Reading,
};

// ---------------------------------------------------------------------------------------------
// A custom adapter factory: replay a recorded multi-stream arrival log in its global order.
// ---------------------------------------------------------------------------------------------

/// The log and the position every stream's adapter waits on.
struct Log {
    lines: Vec<(String, Line<serde_json::Value>)>,
    pos: Mutex<usize>,
    registered: Mutex<HashSet<String>>,
    turn: Notify,
    lag: Mutex<Vec<(String, f64, f64, u64)>>,
}

/// Replays one recorded arrival log: each stream bound to it gets an adapter that enqueues that
/// stream's lines, each run of them when the log reaches it. The config is the stream's name in
/// the log.
#[derive(Clone)]
struct Replay(Arc<Log>);

impl Replay {
    /// Reads a log: one JSON item per line with a `stream` field; errors name the line.
    fn open(path: &Path) -> Result<Replay, AdapterError> {
        let text = std::fs::read_to_string(path).map_err(|source| AdapterError::Io {
            path: path.to_owned(),
            error: source,
        })?;
        let mut lines = Vec::new();
        for (i, text) in text.lines().enumerate() {
            let malformed = |message: String| AdapterError::Malformed {
                path: path.to_owned(),
                line: i + 1,
                message,
            };
            let line =
                parse_line::<serde_json::Value>(text).map_err(|e| malformed(e.to_string()))?;
            let stream = line
                .stream
                .clone()
                .ok_or_else(|| malformed("a log line needs `stream`".into()))?;
            lines.push((stream, line));
        }
        Ok(Replay(Arc::new(Log {
            lines,
            pos: Mutex::new(0),
            registered: Mutex::new(HashSet::new()),
            turn: Notify::new(),
            lag: Mutex::new(Vec::new()),
        })))
    }

    /// Per stream: (name, mean and max CTI lag in seconds, samples).
    fn lags(&self) -> Vec<(String, f64, f64, u64)> {
        self.0
            .lag
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl<P: Payload + DeserializeOwned> InputAdapterFactory<String, P> for Replay {
    type Adapter = ReplayStream<P>;

    fn create(&self, stream: &String, _shape: EventShape) -> Result<ReplayStream<P>, AdapterError> {
        if !self.0.lines.iter().any(|(s, _)| s == stream) {
            return Err(AdapterError::Config(format!(
                "the log has no stream `{stream}`"
            )));
        }
        self.0
            .registered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(stream.clone());
        Ok(ReplayStream {
            log: Arc::clone(&self.0),
            stream: stream.clone(),
            _payload: std::marker::PhantomData,
        })
    }
}

struct ReplayStream<P> {
    log: Arc<Log>,
    stream: String,
    _payload: std::marker::PhantomData<fn() -> P>,
}

impl<P: DeserializeOwned> ReplayStream<P> {
    /// The run of this stream's lines starting at the log position, or `None` at the end of
    /// the log; skips lines of streams nobody replays.
    fn my_run(&self) -> Option<Option<(usize, usize)>> {
        let mut pos = self.log.pos.lock().unwrap_or_else(PoisonError::into_inner);
        let registered = self
            .log
            .registered
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        while *pos < self.log.lines.len() && !registered.contains(&self.log.lines[*pos].0) {
            *pos += 1;
        }
        if *pos == self.log.lines.len() {
            return None;
        }
        if self.log.lines[*pos].0 != self.stream {
            return Some(None);
        }
        let end = (*pos..self.log.lines.len())
            .find(|&i| self.log.lines[i].0 != self.stream)
            .unwrap_or(self.log.lines.len());
        Some(Some((*pos, end)))
    }
}

#[async_trait]
impl<P: Payload + DeserializeOwned> InputAdapter<P> for ReplayStream<P> {
    async fn run(&mut self, ctx: &mut InputContext<P>) -> Result<(), AdapterError> {
        let (mut lag_sum, mut lag_max, mut samples) = (0.0f64, 0.0f64, 0u64);
        loop {
            let turn = self.log.turn.notified();
            tokio::pin!(turn);
            turn.as_mut().enable();
            let (from, to) = match self.my_run() {
                None => break,
                Some(None) => {
                    tokio::select! {
                        _ = turn => continue,
                        _ = ctx.stopping() => break,
                    }
                }
                Some(Some(run)) => run,
            };
            let mut items = Vec::with_capacity(to - from);
            for (_, line) in &self.log.lines[from..to] {
                // The payload's fields are checked against the stream's Rust type here.
                if let Some(item) = line.clone().into_item().map_err(AdapterError::other)? {
                    items.push(typed::<P>(item).map_err(AdapterError::other)?);
                }
            }
            ctx.enqueue_batch(items).await?;
            let c = ctx.counters();
            if c.cti.is_finite() && c.max_start.is_finite() {
                let lag = (c.max_start - c.cti).ticks() as f64 / TICKS_PER_SECOND as f64;
                lag_sum += lag;
                lag_max = lag_max.max(lag);
                samples += 1;
            }
            *self.log.pos.lock().unwrap_or_else(PoisonError::into_inner) = to;
            self.log.turn.notify_waiters();
        }
        self.log
            .lag
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((
                self.stream.clone(),
                if samples > 0 {
                    lag_sum / samples as f64
                } else {
                    0.0
                },
                lag_max,
                samples,
            ));
        self.log.turn.notify_waiters();
        Ok(())
    }
}

/// Turns an item with a JSON payload into one with a typed payload.
fn typed<P: DeserializeOwned>(
    item: StreamItem<serde_json::Value>,
) -> Result<StreamItem<P>, serde_json::Error> {
    Ok(match item {
        StreamItem::Cti(t) => StreamItem::Cti(t),
        StreamItem::Insert(e) => StreamItem::Insert(Event {
            kind: e.kind,
            payload: serde_json::from_value(e.payload)?,
        }),
    })
}

// ---------------------------------------------------------------------------------------------
// The output: a table of the first results.
// ---------------------------------------------------------------------------------------------

type Average = (String, (f64, u64));

/// Averages by window end, then by device.
type Grid = BTreeMap<Time, BTreeMap<String, f64>>;

/// How many results arrived, and the averages of the first window ends by device.
#[derive(Clone, Default)]
struct Table(Arc<Mutex<(usize, Grid)>>);

const WINDOWS_SHOWN: usize = 12;
const DEVICES_SHOWN: usize = 6;

#[async_trait]
impl OutputAdapter<Average> for Table {
    async fn write(&mut self, batch: &Batch<Average>) -> Result<(), AdapterError> {
        let mut t = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        for item in batch.items() {
            if let StreamItem::Insert(e) = item {
                t.0 += 1;
                let at = e.kind.start();
                if t.1.len() < WINDOWS_SHOWN || t.1.contains_key(&at) {
                    let (device, (avg, _)) = e.payload;
                    t.1.entry(at).or_default().insert(device.clone(), *avg);
                }
            }
        }
        Ok(())
    }
}

impl OutputAdapterFactory<(), Average> for Table {
    type Adapter = Table;
    fn create(&self, _: &(), _: EventShape) -> Result<Table, AdapterError> {
        Ok(self.clone())
    }
}

fn clock(t: Time) -> String {
    let text = t.rfc3339();
    text.get(11..19).unwrap_or(&text).to_owned()
}

/// Builds and runs the query; `import` says whether calibration imports the readings' CTIs.
async fn run(
    log: &Path,
    import: bool,
) -> Result<(Table, QueryReport, Replay), Box<dyn std::error::Error>> {
    let replay = Replay::open(log)?;
    let mut query = Query::new("sensors");
    let readings_settings = readings_settings();
    let calibration_settings = if import {
        imported_from("readings")
    } else {
        AdvanceTimeSettings::policy_only(AdvanceTimePolicy::Adjust)
    };
    let readings = query.create_stream::<_, Reading, _, _>(
        InputOptions::new("readings", EventShape::Point).settings(readings_settings),
        &replay,
        &"readings".to_owned(),
    )?;
    let calibration = query.create_stream::<_, Calibration, _, _>(
        InputOptions::new("calibration", EventShape::Edge).settings(calibration_settings),
        &replay,
        &"calibration".to_owned(),
    )?;
    let averages = readings
        .join_on(
            &calibration,
            |r| r.device.clone(),
            |c| c.device.clone(),
            Calibrated::of,
        )
        .hopping_window(TimeSpan::from_secs(60), TimeSpan::from_secs(10))
        .group_by(|c: &Calibrated| c.device.clone())
        .aggregate((Avg::of(|c: &Calibrated| c.value), Count));
    let table = Table::default();
    query.bind_output(&averages, &table, &())?;
    let report = query.start()?.wait().await?;
    Ok((table, report, replay))
}

fn summary(report: &QueryReport, replay: &Replay) {
    println!(
        "{:<12} {:>9} {:>9} {:>8} {:>9} {:>11} {:>16}",
        "stream", "events in", "released", "dropped", "adjusted", "unreleased", "CTI lag mean/max"
    );
    let lags = replay.lags();
    for (name, c) in &report.streams {
        let lag = lags
            .iter()
            .find(|l| &l.0 == name)
            .filter(|l| l.3 > 0)
            .map_or("no CTI".to_owned(), |l| {
                format!("{:.1} s / {:.1} s", l.1, l.2)
            });
        println!(
            "{:<12} {:>9} {:>9} {:>8} {:>9} {:>11} {:>16}",
            name, c.events_in, c.released, c.dropped, c.adjusted, c.unreleased, lag
        );
    }
}

async fn main_inner(log: PathBuf) -> Result<(), Box<dyn std::error::Error>> {
    println!("Replaying {}:", log.display());
    println!("readings (a CTI every 20 readings, 3 s behind) joined with calibration edges");
    println!("(which import the readings' CTIs), averaged per device over 60 s every 10 s.\n");
    let (table, report, replay) = run(&log, true).await?;
    let (total, first) = table
        .0
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    println!("Average calibrated temperature (C) over the 60 s before each window end:");
    let devices: Vec<String> = first
        .values()
        .next()
        .map(|row| row.keys().take(DEVICES_SHOWN).cloned().collect())
        .unwrap_or_default();
    print!("{:<10}", "window end");
    devices.iter().for_each(|d| print!(" {d:>8}"));
    println!();
    for (at, row) in &first {
        print!("{:<10}", clock(*at));
        for d in &devices {
            match row.get(d) {
                Some(avg) => print!(" {avg:>8.2}"),
                None => print!(" {:>8}", "-"),
            }
        }
        println!();
    }
    println!("... {total} averages in all (20 devices, one every 10 s each)\n");
    summary(&report, &replay);
    println!(
        "\nDropped readings arrived after their CTI had passed (more than 3 s late); adjusted\n\
         calibration edges were logged after they took effect and start at the CTI instead."
    );

    println!("\nThe same query without the import:");
    let (table, report, replay) = run(&log, false).await?;
    let total = table.0.lock().unwrap_or_else(PoisonError::into_inner).0;
    println!("{total} averages released.");
    summary(&report, &replay);
    println!(
        "\nWithout CTIs of its own, the calibration stream's time never advances, so the join\n\
         cannot know that a calibration will not still change: it releases nothing, and every\n\
         calibration edge is left unreleased."
    );
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let log = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/sensors.jsonl"));
    match main_inner(log).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/sensors.jsonl")
    }

    #[tokio::test]
    async fn the_import_lets_the_join_release_and_without_it_nothing_comes_out() {
        let (table, report, _) = run(&log(), true).await.unwrap();
        let total = table.0.lock().unwrap().0;
        // 20 devices, a result every 10 s over 30 min and the 50 s the last windows reach past.
        assert_eq!(total, 20 * (180 + 5));
        let readings = report.counters("readings").unwrap();
        let calibration = report.counters("calibration").unwrap();
        assert_eq!(readings.events_in, 36_000);
        assert_eq!(readings.released + readings.dropped, 36_000);
        assert!(readings.dropped > 0 && calibration.adjusted > 0);
        assert_eq!(calibration.released, calibration.events_in);

        let (table, report, _) = run(&log(), false).await.unwrap();
        assert_eq!(table.0.lock().unwrap().0, 0);
        let calibration = report.counters("calibration").unwrap();
        assert_eq!(calibration.unreleased, calibration.events_in);
    }

    #[test]
    fn a_malformed_log_line_is_reported_with_its_number() {
        let path =
            std::env::temp_dir().join(format!("punctual-sensors-{}.jsonl", std::process::id()));
        std::fs::write(&path, "{\"stream\":\"readings\",\"kind\":\"cti\",\"time\":1}\n{\"kind\":\"cti\",\"time\":2}\n").unwrap();
        let e = Replay::open(&path).err().unwrap();
        assert!(
            e.to_string().ends_with(":2: a log line needs `stream`"),
            "{e}"
        );
    }
}
