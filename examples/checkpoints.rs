//! Concept: checkpoints (`Query::checkpoints`). A query over a file, with snapshots in a
//! directory, is aborted mid-run and started again with the same directory: it goes on from
//! its last snapshot (the input at its byte offset, the output file cut back to its position,
//! the windows' state restored) and its output ends exactly as a run never stopped. On two
//! workers (`punctual::cluster::run_query`) each snapshot is cut across both; a run started
//! again on the directory goes on from the last one (it has no snapshot at its very end, so
//! it redoes the tail) and writes the same output, also on one worker and on three (the keys
//! stay in two parts); `Query::start` alone refuses it, naming the cluster.
//!
//! Run: `cargo run --example checkpoints`

use std::time::Duration;

use punctual::adapters::{
    JsonLinesInput, JsonLinesInputConfig, JsonLinesOutput, JsonLinesOutputConfig,
};
use punctual::cluster::{run_query, ClusterConfig};
use punctual::prelude::*;
use punctual::rows::Row;
use punctual::runtime::{Checkpoints, InputOptions, Query};

/// Counts per device in 1 s tumbling windows of `input`, into `out`; with snapshots in
/// `state` as often as the query allows, if given.
fn counts(
    input: &std::path::Path,
    out: &std::path::Path,
    state: Option<&std::path::Path>,
) -> Query {
    let mut query = Query::new("counts");
    if let Some(state) = state {
        query = query.checkpoints(Checkpoints::new(state).every(Duration::ZERO));
    }
    let readings = query
        .create_stream::<_, Row, _, _>(
            InputOptions::new("readings", EventShape::Point)
                .settings(AdvanceTimeSettings::increasing_start_time()),
            &JsonLinesInput,
            &JsonLinesInputConfig::new(input),
        )
        .expect("binds");
    let counts = readings
        .tumbling_window(TimeSpan::from_secs(1))
        .group_by(|r: &Row| r.get("device").cloned())
        .count();
    query
        .bind_output(&counts, &JsonLinesOutput, &JsonLinesOutputConfig::new(out))
        .expect("binds");
    query
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let dir = std::env::temp_dir().join(format!("punctual-example-ckpt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let input = dir.join("readings.jsonl");
    let lines: String = (0..50_000i64)
        .map(|i| {
            format!(
                "{{\"kind\":\"point\",\"start\":{},\"payload\":{{\"device\":\"d{}\"}}}}\n",
                i * 100_000,
                i % 5
            )
        })
        .collect();
    std::fs::write(&input, lines).expect("written");

    // A run never stopped.
    let whole = dir.join("whole.jsonl");
    counts(&input, &whole, None)
        .start()
        .expect("starts")
        .wait()
        .await
        .expect("runs");

    // A run with snapshots, aborted once it has taken one, then started again.
    let (out, state) = (dir.join("out.jsonl"), dir.join("state"));
    let running = counts(&input, &out, Some(&state)).start().expect("starts");
    while !state.join("snapshot").exists() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    running.abort().await.expect("aborted");
    let cut = std::fs::metadata(&out).expect("written").len();
    counts(&input, &out, Some(&state))
        .start()
        .expect("starts")
        .wait()
        .await
        .expect("runs");

    let (got, want) = (
        std::fs::read(&out).expect("written"),
        std::fs::read(&whole).expect("written"),
    );
    assert_eq!(got, want, "the same output, byte for byte");
    println!(
        "aborted at {cut} of {} bytes, restarted from the snapshot: the same {} bytes",
        want.len(),
        got.len()
    );

    // On two workers: a run never stopped, a run with snapshots, and that run started again
    // on its directory (from its last snapshot).
    let on = |workers: usize, out: std::path::PathBuf, state: Option<std::path::PathBuf>| {
        let input = input.clone();
        tokio::task::spawn_blocking(move || {
            run_query(ClusterConfig::threads(workers), move |_worker| {
                Ok(counts(&input, &out, state.as_deref()))
            })
        })
    };
    let (whole2, out2, state2) = (
        dir.join("whole-2.jsonl"),
        dir.join("out-2.jsonl"),
        dir.join("state-2"),
    );
    on(2, whole2.clone(), None)
        .await
        .expect("joins")
        .expect("runs");
    let want2 = std::fs::read(&whole2).expect("written");
    // Started again on two, then on one and on three workers (which run its two parts).
    for workers in [2, 2, 1, 3] {
        on(workers, out2.clone(), Some(state2.clone()))
            .await
            .expect("joins")
            .expect("runs");
        assert_eq!(
            std::fs::read(&out2).expect("written"),
            want2,
            "the same output on {workers} workers"
        );
    }
    // Without the cluster, a snapshot of two workers does not restore.
    let refused = counts(&input, &out2, Some(&state2)).start().err();
    let refused = refused.map(|e| e.to_string()).unwrap_or_default();
    assert!(refused.contains("taken on 2 workers"), "{refused}");
    println!(
        "on two workers, run again from its last snapshot on two, one and three: the same {} \
         bytes",
        want2.len()
    );
    std::fs::remove_dir_all(&dir).ok();
}
