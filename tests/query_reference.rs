//! Reference data as users keep it, joined with readings: a static table (no time column)
//! holds for all time; a table of versions with a start column and no end holds each row
//! until the next row of its key; an empty end means "until further notice".

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use punctual::cli::EXIT_OK;

use crate::cli_common::{cli, holds, refuses, s, shell, temp_dir, write};

fn dir(name: &str) -> PathBuf {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    temp_dir(&format!("{name}-{}", RUNS.fetch_add(1, Ordering::Relaxed)))
}

/// 120 readings a second apart from 10:00:00, devices `d0` to `d2` in turn, temperatures
/// 20 to 29 (the `(i * 7) % 10` pattern); `(second, device, temperature)` each.
fn readings(dir: &Path) -> (PathBuf, Vec<(i64, usize, i64)>) {
    let rows: Vec<(i64, usize, i64)> = (0..120)
        .map(|i| (i, (i % 3) as usize, 20 + (i * 7) % 10))
        .collect();
    let mut text = String::from("time,device,temp\n");
    for (t, d, v) in &rows {
        text.push_str(&format!(
            "2026-12-01T10:{:02}:{:02}Z,d{d},{v}\n",
            t / 60,
            t % 60
        ));
    }
    let path = dir.join("readings.csv");
    write(&path, text);
    (path, rows)
}

const ALERTS: &str = "SELECT r.device, r.temp, t.threshold FROM readings r TIMESTAMP BY time \
                      JOIN thresholds t ON r.device = t.device WHERE r.temp > t.threshold";

/// Runs the alerts query over the readings and `thresholds` (its `--input` value after the
/// file, like `,time=valid_from`): exit code, alerts, stderr.
fn alerts(dir: &Path, thresholds: &str, options: &str) -> (u8, usize, String) {
    alerts_with(dir, ("thresholds.csv", thresholds), options, &[])
}

/// [`alerts`] with the thresholds in the file `name` and `extra` arguments.
fn alerts_with(
    dir: &Path,
    (name, thresholds): (&str, &str),
    options: &str,
    extra: &[&str],
) -> (u8, usize, String) {
    let (input, _) = readings(dir);
    let path = dir.join(name);
    write(&path, thresholds);
    let out = dir.join("alerts.jsonl");
    let mut args = vec![
        "query".to_owned(),
        ALERTS.to_owned(),
        "--input".to_owned(),
        format!("readings={}", s(&input)),
        "--input".to_owned(),
        format!("thresholds={}{options}", s(&path)),
        "--output".to_owned(),
        s(&out).to_owned(),
    ];
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, _, err) = cli(&args);
    let written = std::fs::read_to_string(&out).unwrap_or_default();
    (code, written.lines().count(), err)
}

/// A plain `device,threshold` file is a static table, valid for all time (before: refused,
/// for want of a time column).
#[test]
fn a_table_without_a_time_column_holds_for_all_time() {
    let d = dir("reference-static");
    let (_, rows) = readings(&d);
    let limit = [24, 26, 28];
    let want = rows.iter().filter(|(_, dv, v)| *v > limit[*dv]).count();
    assert!(want > 20, "{want}");
    let (code, got, err) = alerts(&d, "device,threshold\nd0,24\nd1,26\nd2,28\n", "");
    assert_eq!(code, EXIT_OK, "{err}");
    assert_eq!(got, want, "{err}");
    holds(&err, &["stream thresholds: events_in=3"]);
    assert!(
        !err.contains("max_start=-"),
        "no start before the year 0: {err}"
    );
}

/// A table of versions without an end: each row holds until the next row of its device
/// (before: each row was a one-tick point and the join found almost nothing). The key is
/// the join's (`device`); `key=` names another.
#[test]
fn a_version_holds_until_the_next_row_of_its_key() {
    let d = dir("reference-versions");
    let (_, rows) = readings(&d);
    // d0 and d1 change their threshold at 10:01:00, d2 keeps its first.
    let limit = |t: i64, dv: usize| match (dv, t >= 60) {
        (0, false) => 24,
        (0, true) => 21,
        (1, false) => 26,
        (1, true) => 28,
        _ => 25,
    };
    let want = rows.iter().filter(|(t, dv, v)| *v > limit(*t, *dv)).count();
    let table = "valid_from,device,threshold\n\
                 2026-12-01T09:00:00Z,d0,24\n2026-12-01T09:00:00Z,d1,26\n2026-12-01T09:30:00Z,d2,25\n\
                 2026-12-01T10:01:00Z,d0,21\n2026-12-01T10:01:00Z,d1,28\n";
    let (code, got, err) = alerts(&d, table, ",time=valid_from");
    assert_eq!(code, EXIT_OK, "{err}");
    assert_eq!(got, want, "{err}");
    holds(&err, &["malformed=0"]);
    // The key named, the same alerts.
    let (code, got, err) = alerts(&d, table, ",time=valid_from,key=device");
    assert_eq!((code, got), (EXIT_OK, want), "{err}");
    // A version listed before an earlier one of its key is malformed, with the reason.
    let (code, _, err) = alerts(
        &d,
        "valid_from,device,threshold\n2026-12-01T10:01:00Z,d0,21\n2026-12-01T09:00:00Z,d0,24\n",
        ",time=valid_from",
    );
    assert_eq!(code, EXIT_OK, "{err}");
    holds(&err, &["malformed=1", "is not after the one before it"]);
}

/// An empty end means "until further notice" (before: a malformed row, lost with exit code 0).
#[test]
fn an_empty_end_holds_until_further_notice() {
    let d = dir("reference-open");
    let (_, rows) = readings(&d);
    let limit = |t: i64, dv: usize| match dv {
        0 if t < 60 => Some(24),
        0 => None,
        1 => Some(26),
        _ => Some(28),
    };
    let want = rows
        .iter()
        .filter(|(t, dv, v)| limit(*t, *dv).is_some_and(|l| *v > l))
        .count();
    let table = "valid_from,valid_to,device,threshold\n\
                 2026-12-01T09:00:00Z,2026-12-01T10:01:00Z,d0,24\n\
                 2026-12-01T09:00:00Z,,d1,26\n2026-12-01T09:00:00Z,,d2,28\n";
    let (code, got, err) = alerts(&d, table, ",time=valid_from,end=valid_to");
    assert_eq!(code, EXIT_OK, "{err}");
    assert_eq!(got, want, "{err}");
    holds(&err, &["malformed=0"]);
}

/// A table of versions whose key the join does not give is refused with the fix named.
#[test]
fn a_table_of_versions_needs_its_key() {
    let d = dir("reference-key");
    let (input, _) = readings(&d);
    let path = d.join("limits.csv");
    write(&path, "valid_from,limit\n2026-12-01T09:00:00Z,25\n");
    refuses(
        &format!(
        "query 'SELECT r.temp FROM readings r TIMESTAMP BY time JOIN limits t ON r.temp > t.limit' \
         --input readings={} --input limits={},time=valid_from",
        s(&input),
        s(&path),
    ),
        "name the key (key = [\"device\"]",
    );
}

/// `LEFT JOIN` with a static table: every reading comes out, those of a device the table
/// does not list with `NULL` for its threshold, at the reading's own time.
#[test]
fn a_left_join_keeps_the_readings_of_devices_the_table_does_not_list() {
    let dir = dir("left-join");
    let (input, rows) = readings(&dir);
    let path = dir.join("thresholds.csv");
    write(&path, "device,threshold\nd0,25\nd1,27\n");
    let out = dir.join("joined.jsonl");
    let (code, _, err) = shell(&format!(
        "query 'SELECT r.device, r.temp, t.threshold FROM readings r TIMESTAMP BY time \
         LEFT JOIN thresholds t ON r.device = t.device' --input readings={} \
         --input thresholds={} --output {}",
        s(&input),
        s(&path),
        s(&out),
    ));
    assert_eq!(code, EXIT_OK, "{err}");
    let written = std::fs::read_to_string(&out).expect("the output");
    let mut got: Vec<(String, String, i64, serde_json::Value)> = written
        .lines()
        .map(|l| {
            let r: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            let text = |f: &str| r[f].as_str().expect(f).to_owned();
            let temp = r["temp"].as_i64().expect("temp");
            (text("time"), text("device"), temp, r["threshold"].clone())
        })
        .collect();
    got.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(got.len(), rows.len(), "every reading: {written}");
    for ((time, device, temp, threshold), (t, d, v)) in got.iter().zip(&rows) {
        assert_eq!(time, &format!("2026-12-01T10:{:02}:{:02}Z", t / 60, t % 60));
        assert_eq!((device.as_str(), *temp), (format!("d{d}").as_str(), *v));
        let expected = match d {
            0 => serde_json::json!(25),
            1 => serde_json::json!(27),
            _ => serde_json::Value::Null,
        };
        assert_eq!(threshold, &expected, "{time} d{d}");
    }
}

/// A JSON-lines file of records without a time, joined as reference data, is a static
/// table, as a CSV file without a time column is (before: every line refused as an item
/// without `kind`).
#[test]
fn json_records_without_a_time_are_a_static_table() {
    let dir = dir("json-table");
    let table = ("thresholds.jsonl", "{\"device\": \"d0\", \"threshold\": 25}\n{\"device\": \"d1\", \"threshold\": 27}\n{\"device\": \"d2\", \"threshold\": 28}\n");
    let (_, rows) = readings(&dir);
    let limit = [25, 27, 28];
    let expected = rows.iter().filter(|(_, d, v)| *v > limit[*d]).count();
    assert!(expected > 0);
    let (code, count, err) = alerts_with(&dir, table, "", &[]);
    assert_eq!((code, count), (EXIT_OK, expected), "{err}");
    let (code, _, err) = alerts_with(&dir, table, "", &["--explain"]);
    assert_eq!(code, EXIT_OK, "{err}");
    holds(&err, &["a static table: every row valid for all time"]);
}
