//! Reference data synced to a fast stream gives the same output whatever the runtime does: the
//! sensors sample's query (readings joined with calibration edges that import the readings'
//! CTIs, then a hopping average per device), with the calibrations marked as reference data and
//! replayed slowly, on a current-thread and a multi-thread runtime, with the streams created in
//! either order, and with the calibration adapter ending at once or lingering after it said
//! its snapshot is in.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use punctual_adapters::line::parse_line;
use punctual_adapters::{CollectOutput, MemoryInput};
use punctual_core::ops::{Avg, Stream};
use punctual_core::{EventShape, StreamItem, Time, TimeSpan};
use punctual_policies::{
    AdvanceTimeGenerationSettings, AdvanceTimeImportSettings, AdvanceTimePolicy,
    AdvanceTimeSettings,
};
use punctual_runtime::{
    AdapterError, InputAdapter, InputAdapterFactory, InputContext, InputOptions, Query,
};

mod common;
use common::point;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Reading {
    device: String,
    raw: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Calibration {
    device: String,
    factor: f64,
    offset: f64,
}

/// The first `lines` lines of the sensors sample's arrival log, split by stream.
fn log(lines: usize) -> (Vec<StreamItem<Reading>>, Vec<StreamItem<Calibration>>) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../samples/data/sensors.jsonl");
    let text = std::fs::read_to_string(path).expect("the sample's log");
    let (mut readings, mut calibrations) = (Vec::new(), Vec::new());
    for line in text.lines().take(lines) {
        if line.contains(r#""stream":"readings""#) {
            let item = parse_line::<Reading>(line).expect("a reading").into_item();
            readings.extend(item.expect("an item"));
        } else {
            let item = parse_line::<Calibration>(line)
                .expect("a calibration")
                .into_item();
            calibrations.extend(item.expect("an item"));
        }
    }
    (readings, calibrations)
}

/// Replays calibration items slowly (a pause every few items); then says its snapshot is in
/// and, if `linger`, keeps running a while before it ends.
#[derive(Clone)]
struct Slowly {
    items: Arc<Vec<StreamItem<Calibration>>>,
    linger: bool,
}

impl InputAdapterFactory<(), Calibration> for Slowly {
    type Adapter = Slowly;
    fn create(&self, _: &(), _: EventShape) -> Result<Slowly, AdapterError> {
        Ok(self.clone())
    }
}

#[async_trait]
impl InputAdapter<Calibration> for Slowly {
    async fn run(&mut self, ctx: &mut InputContext<Calibration>) -> Result<(), AdapterError> {
        for chunk in self.items.chunks(8) {
            tokio::time::sleep(Duration::from_micros(300)).await;
            ctx.enqueue_batch(chunk.iter().cloned()).await?;
        }
        ctx.ready();
        if self.linger {
            // The readings run to their end meanwhile: their final CTI waits for this one's.
            tokio::time::sleep(Duration::from_millis(15)).await;
        }
        Ok(())
    }
}

type Averages = CollectOutput<(String, f64)>;

/// Builds and runs the query; returns what its output received.
async fn run(
    (readings, calibrations): &(Vec<StreamItem<Reading>>, Vec<StreamItem<Calibration>>),
    calibrations_first: bool,
    linger: bool,
) -> Vec<StreamItem<(String, f64)>> {
    let mut query = Query::new("sensors");
    let readings_settings = AdvanceTimeSettings::builder()
        .generation(
            AdvanceTimeGenerationSettings::every_events(20)
                .delay(TimeSpan::from_secs(3))
                .final_cti(true)
                .build()
                .expect("valid settings"),
        )
        .policy(AdvanceTimePolicy::Drop)
        .build()
        .expect("valid settings");
    let calibration_settings = AdvanceTimeSettings::builder()
        .import(AdvanceTimeImportSettings::new("readings"))
        .policy(AdvanceTimePolicy::Adjust)
        .build()
        .expect("valid settings");
    let slowly = Slowly {
        items: Arc::new(calibrations.clone()),
        linger,
    };
    let create_calibrations = |query: &mut Query| -> Stream<Calibration> {
        let options = InputOptions::new("calibration", EventShape::Edge)
            .settings(calibration_settings.clone())
            .reference();
        query.create_stream(options, &slowly, &()).expect("binds")
    };
    let create_readings = |query: &mut Query| -> Stream<Reading> {
        let options = point("readings").settings(readings_settings.clone());
        query
            .create_stream(options, &MemoryInput, readings)
            .expect("binds")
    };
    let (readings, calibration) = if calibrations_first {
        let c = create_calibrations(&mut query);
        (create_readings(&mut query), c)
    } else {
        let r = create_readings(&mut query);
        (r, create_calibrations(&mut query))
    };
    let averages = readings
        .join_on(
            &calibration,
            |r| r.device.clone(),
            |c| c.device.clone(),
            |r, c| (r.device.clone(), r.raw * c.factor + c.offset),
        )
        .hopping_window(TimeSpan::from_secs(60), TimeSpan::from_secs(10))
        .group_by(|c: &(String, f64)| c.0.clone())
        .aggregate(Avg::of(|c: &(String, f64)| c.1));
    let out = Averages::new();
    query.bind_output(&averages, &out, &()).expect("binds");
    let report = query.start().expect("starts").wait().await.expect("runs");
    let calibration = report.counters("calibration").expect("a stream");
    assert_eq!(
        (
            calibration.dropped,
            calibration.adjusted,
            calibration.rejected
        ),
        (0, 0, 0),
        "every calibration is in before the readings start"
    );
    out.items()
}

#[test]
fn reference_data_gives_the_same_output_on_every_runtime_and_creation_order() {
    // Up to the first calibration updates (some logged after they took effect).
    let data = log(14_000);
    assert!(
        data.1.len() > 35,
        "calibration updates are part of the data"
    );
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let want = current.block_on(run(&data, true, false));
    let results = want
        .iter()
        .filter(|i| matches!(i, StreamItem::Insert(_)))
        .count();
    assert!(results > 100, "{results} averages");
    assert_eq!(want.last(), Some(&StreamItem::Cti(Time::INF)));
    // Fifty rounds, each on both runtime flavours; the creation order and whether the
    // calibration adapter lingers change from round to round.
    for round in 0..50 {
        let (calibrations_first, linger) = (round % 2 == 1, round % 4 >= 2);
        for (flavour, runtime) in [("current-thread", &current), ("multi-thread", &multi)] {
            let got = runtime.block_on(run(&data, calibrations_first, linger));
            assert!(
                got == want,
                "round {round}: {flavour} runtime, calibrations created {}, {}: the output differs",
                if calibrations_first {
                    "first"
                } else {
                    "second"
                },
                if linger {
                    "lingering"
                } else {
                    "ending at once"
                },
            );
        }
    }
}
