//! The first-steps sample (samples/alerts) as a new user runs it: readings out of order,
//! a static thresholds table and a table of threshold versions without ends, RFC 3339 and
//! epoch-millisecond times. Every reading is accounted for, and the alerts are those counted
//! here from the files themselves.

use std::path::{Path, PathBuf};

use punctual::cli::EXIT_OK;

use crate::cli_common::{cli, holds, s, shell, temp_dir, write};

fn sample() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../samples/alerts")
}

/// The readings: (time as RFC 3339 text, device number, celsius).
fn readings() -> Vec<(String, usize, f64)> {
    let text = std::fs::read_to_string(sample().join("readings.csv")).expect("the sample");
    text.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let device = f[1].trim_start_matches('d').parse().expect("a device");
            (f[0].to_owned(), device, f[2].parse().expect("a number"))
        })
        .collect()
}

/// Runs the sample's job `name` with its output to a file: the result rows and stderr.
fn run(name: &str, out_dir: &Path) -> (Vec<serde_json::Value>, String) {
    let job = std::fs::read_to_string(sample().join(name)).expect("the sample's job");
    // The same job, its files named from anywhere and its output to a file.
    let out = out_dir.join("alerts.jsonl");
    let job: String = job
        .lines()
        .map(|l| match l.strip_prefix("path = \"") {
            Some("-\"") => format!("path = {:?}", s(&out)),
            Some(file) => format!("path = {:?}", s(&sample().join(&file[..file.len() - 1]))),
            None => l.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    let path = out_dir.join(name);
    write(&path, job);
    let (code, _, err) = cli(&["job", s(&path)]);
    assert_eq!(code, EXIT_OK, "{err}");
    let written = std::fs::read_to_string(&out).expect("written");
    let rows = written
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON row"))
        .collect();
    (rows, err)
}

#[test]
fn the_first_steps_sample_counts_every_alert() {
    let readings = readings();
    assert_eq!(readings.len(), 300);
    let dir = temp_dir("sample-alerts");
    // Static thresholds: 25 for d0 to 29 for d4.
    let want = readings
        .iter()
        .filter(|(_, d, c)| *c > 25.0 + *d as f64)
        .count();
    let (rows, err) = run("alerts.toml", &dir);
    assert_eq!(rows.len(), want, "{err}");
    assert!(rows
        .iter()
        .all(|r| r["celsius"].as_f64() > r["threshold"].as_f64()));
    for counted in ["events_in=300", "released=300", "dropped=0", "malformed=0"] {
        assert!(err.contains(counted), "{counted}: {err}");
    }
    // The reference table ended first: the readings' CTIs it imports are stale, and said to be
    // harmless.
    holds(
        &err,
        &["note: stream thresholds: stale_ctis=", "nothing is lost"],
    );
    // The same as the sample's README writes it with `punctual query`.
    let (code, out, err) = shell(&format!(
        "query 'SELECT r.device, r.celsius, t.threshold FROM readings r TIMESTAMP BY time \
         JOIN thresholds t ON r.device = t.device WHERE r.celsius > t.threshold' \
         --input readings={} --input thresholds={} --out-of-order 3s --output {}",
        s(&sample().join("readings.csv")),
        s(&sample().join("thresholds.csv")),
        s(&dir.join("query.jsonl")),
    ));
    assert_eq!(code, EXIT_OK, "{err}");
    let written = std::fs::read_to_string(dir.join("query.jsonl")).expect("written");
    assert_eq!(written.lines().count(), want, "{out}{err}");
    // Versions: one degree lower from 12:00:30 on.
    let want = readings
        .iter()
        .filter(|(t, d, c)| {
            let lower = t.as_str() >= "2024-05-01T12:00:30";
            *c > 25.0 + *d as f64 - f64::from(u8::from(lower))
        })
        .count();
    let (rows, err) = run("alerts-versions.toml", &dir);
    assert_eq!(rows.len(), want, "{err}");
    for counted in ["events_in=300", "released=300", "dropped=0", "malformed=0"] {
        assert!(err.contains(counted), "{counted}: {err}");
    }
}
