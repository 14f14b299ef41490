//! Job files and the query language give what the Rust API gives: the sensors sample's job
//! (samples/jobs/sensors.toml) against the same query written with the typed API over the
//! same inputs and settings, result for result.

use std::path::PathBuf;

use serde::Deserialize;

use punctual::adapters::line::TimeFormat;
use punctual::adapters::{
    CollectOutput, InputOptions, JsonLinesInput, JsonLinesInputConfig, Query,
};
use punctual::cli::{main, EXIT_OK};
use punctual::prelude::*;

fn samples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("samples")
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
struct Reading {
    device: String,
    raw: f64,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
struct Calibration {
    device: String,
    factor: f64,
    offset: f64,
}

#[derive(Clone, Debug, PartialEq)]
struct Calibrated {
    device: String,
    value: f64,
}

/// The sample's query with the Rust API: (window end, device, average, count) per result.
async fn rust_version() -> Vec<(Time, String, f64, u64)> {
    let log = samples().join("data").join("sensors.jsonl");
    let mut query = Query::new("sensors");
    let readings = query
        .create_stream::<_, Reading, _, _>(
            InputOptions::new("readings", EventShape::Point).settings(
                AdvanceTimeSettings::builder()
                    .generation(
                        AdvanceTimeGenerationSettings::every_events(20)
                            .delay(TimeSpan::from_secs(3))
                            .final_cti(true)
                            .build()
                            .expect("valid"),
                    )
                    .policy(AdvanceTimePolicy::Drop)
                    .build()
                    .expect("valid"),
            ),
            &JsonLinesInput,
            &JsonLinesInputConfig::new(&log).stream("readings"),
        )
        .expect("binds");
    let calibration = query
        .create_stream::<_, Calibration, _, _>(
            InputOptions::new("calibration", EventShape::Edge)
                .settings(
                    AdvanceTimeSettings::builder()
                        .import(AdvanceTimeImportSettings::new("readings"))
                        .policy(AdvanceTimePolicy::Adjust)
                        .build()
                        .expect("valid"),
                )
                .reference(),
            &JsonLinesInput,
            &JsonLinesInputConfig::new(&log).stream("calibration"),
        )
        .expect("binds");
    let averages = readings
        .join_on(
            &calibration,
            |r| r.device.clone(),
            |c| c.device.clone(),
            |r, c| Calibrated {
                device: r.device.clone(),
                value: r.raw * c.factor + c.offset,
            },
        )
        .hopping_window(TimeSpan::from_secs(60), TimeSpan::from_secs(10))
        .group_by(|c: &Calibrated| c.device.clone())
        .aggregate((Avg::of(|c: &Calibrated| c.value), Count));
    let out = CollectOutput::new();
    query.bind_output(&averages, &out, &()).expect("binds");
    query.start().expect("starts").wait().await.expect("runs");
    out.items()
        .into_iter()
        .filter_map(|i| match i {
            StreamItem::Insert(e) => {
                let (device, (avg, n)) = e.payload;
                Some((e.kind.start(), device, avg, n))
            }
            StreamItem::Cti(_) => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sensors_job_gives_what_the_rust_query_gives() {
    let expected = rust_version().await;
    assert!(expected.len() > 3000, "{} results", expected.len());
    let dir = std::env::temp_dir().join(format!("punctual-jobs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    // The sample job, its output sent to a file.
    let job = std::fs::read_to_string(samples().join("jobs").join("sensors.toml"))
        .expect("the sample job")
        .replace(
            "../data/",
            &format!("{}/", samples().join("data").display()),
        )
        .replace(
            "path = \"-\"",
            &format!("path = \"{}\"", dir.join("out.jsonl").display()),
        );
    let job_file = dir.join("sensors.toml");
    std::fs::write(&job_file, job).expect("written");
    let args = vec!["job".to_owned(), job_file.display().to_string()];
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = tokio::task::spawn_blocking(move || {
        let code = main(&args, &mut out, &mut err);
        (code, String::from_utf8_lossy(&err).into_owned())
    })
    .await
    .expect("runs");
    assert_eq!(code.0, EXIT_OK, "{}", code.1);
    let written = std::fs::read_to_string(dir.join("out.jsonl")).expect("written");
    let got: Vec<(Time, String, f64, u64)> = written
        .lines()
        .filter_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            (v["kind"] == "point").then(|| {
                let p = &v["payload"];
                let at = TimeFormat::Rfc3339.read(&v["start"]).expect("a time");
                assert_eq!(
                    p["window_end"], v["start"],
                    "System.Timestamp() is the window end"
                );
                (
                    at,
                    p["device"].as_str().expect("device").to_owned(),
                    p["average"].as_f64().expect("average"),
                    p["n"].as_u64().expect("n"),
                )
            })
        })
        .collect();
    let by_window =
        |a: &(Time, String, f64, u64), b: &(Time, String, f64, u64)| (a.0, &a.1).cmp(&(b.0, &b.1));
    let (mut got, mut expected) = (got, expected);
    got.sort_by(by_window);
    expected.sort_by(by_window);
    assert_eq!(got.len(), expected.len());
    for (g, e) in got.iter().zip(&expected) {
        assert_eq!((g.0, &g.1, g.3), (e.0, &e.1, e.3));
        assert!((g.2 - e.2).abs() < 1e-9, "{g:?} vs {e:?}");
    }
}
