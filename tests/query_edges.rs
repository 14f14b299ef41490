//! Edges from the command line: an end edge is matched to its start edge by the input's key
//! (`key` in a job file, `key=` in `--input`, `pipe --edge-key`; reference data by its join's
//! key), and `explain` says so.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use punctual::cli::EXIT_OK;

use crate::cli_common::{cli, holds, refuses, s, shell, temp_dir, write};

fn dir(name: &str) -> PathBuf {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    temp_dir(&format!("{name}-{}", RUNS.fetch_add(1, Ordering::Relaxed)))
}

/// `n` rows valid from one moment (start edges at 10:00:00), then ended at 10:00:01 last
/// first, as JSON-lines items.
fn snapshot(dir: &Path, n: usize) -> PathBuf {
    let mut text = String::new();
    for i in 0..n {
        text.push_str(&format!(
            "{{\"kind\":\"start\",\"start\":\"2026-12-01T10:00:00Z\",\"payload\":{{\"id\":{i},\"limit\":{}}}}}\n",
            i % 7
        ));
    }
    for i in (0..n).rev() {
        text.push_str(&format!(
            "{{\"kind\":\"end\",\"start\":\"2026-12-01T10:00:00Z\",\"end\":\"2026-12-01T10:00:01Z\",\"payload\":{{\"id\":{i},\"limit\":{}}}}}\n",
            i % 7
        ));
    }
    let path = dir.join("rows.jsonl");
    write(&path, text);
    path
}

/// 20,000 rows from one moment ended last-first through a job file with `key`: every one is
/// counted in the window, and `explain` says the end edges are found by the key.
#[test]
fn a_job_matches_end_edges_by_its_key() {
    let dir = dir("edges-job");
    let rows = snapshot(&dir, 20_000);
    let job = dir.join("count.toml");
    write(&job, format!(
            "query = \"SELECT COUNT(*) AS n INTO out FROM rows GROUP BY TumblingWindow(second, 1)\"\n\
             [inputs.rows]\npath = \"{}\"\nkey = [\"id\"]\n[outputs.out]\npath = \"{}\"\n",
            s(&rows),
            s(&dir.join("out.jsonl"))
        ));
    let (code, _, err) = cli(&["explain", s(&job)]);
    assert_eq!(code, EXIT_OK, "{err}");
    holds(
        &err,
        &["items (kind, start, payload); end edges found by their key (id)"],
    );
    let out = std::fs::read_to_string(dir.join("out.jsonl")).expect("written");
    // Each row is valid over [10:00:00, 10:00:01): in the window ending 10:00:00 (which holds
    // that instant) and in the one ending 10:00:01.
    assert_eq!(
        out,
        "{\"time\":\"2026-12-01T10:00:00Z\",\"n\":20000}\n{\"time\":\"2026-12-01T10:00:01Z\",\"n\":20000}\n"
    );
    // Points have no edges to match: a key there is refused, with why.
    let points = dir.join("points.csv");
    write(&points, "time,id\n2026-12-01T10:00:00Z,1\n");
    refuses(
        &format!(
            "query 'SELECT id FROM p TIMESTAMP BY time' --input p={},key=id",
            s(&points),
        ),
        "points or intervals, which have none",
    );
}

/// Reference data joined by `id` matches its end edges by `id` without being told; `pipe
/// --edge-key` does the same for a pipe.
#[test]
fn reference_edges_take_the_join_key_and_pipe_takes_edge_key() {
    let dir = dir("edges-reference");
    let rows = snapshot(&dir, 300);
    let readings = dir.join("readings.csv");
    let mut text = String::from("time,id,v\n");
    for i in 0..300 {
        text.push_str(&format!("2026-12-01T10:00:00.5Z,{i},{}\n", i % 10));
    }
    write(&readings, text);
    let alerts = dir.join("alerts.jsonl");
    let (code, _, err) = shell(&format!(
        "query 'SELECT r.id FROM readings r TIMESTAMP BY time JOIN rows t ON r.id = t.id WHERE r.v > t.limit' \
         --input readings={} --input rows={} --output {} --explain",
        s(&readings),
        s(&rows),
        s(&alerts),
    ));
    assert_eq!(code, EXIT_OK, "{err}");
    holds(&err, &["end edges found by their key (id)"]);
    let out = std::fs::read_to_string(&alerts).expect("written");
    let expected = (0..300).filter(|i| i % 10 > i % 7).count();
    assert_eq!(out.lines().count(), expected, "{out}");
    let piped = dir.join("piped.jsonl");
    let (code, _, err) = cli(&["pipe", "-i", s(&rows), "-o", s(&piped), "--edge-key", "id"]);
    assert_eq!(code, EXIT_OK, "{err}");
    let out = std::fs::read_to_string(&piped).expect("written");
    assert_eq!(
        out.lines()
            .filter(|l| l.contains("\"kind\":\"end\""))
            .count(),
        300,
        "{out}"
    );
    holds(&err, &["open_edges=0"]);
}
