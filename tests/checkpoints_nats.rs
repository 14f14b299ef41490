//! A job with a hopping window per key and a join with a reference table, reading a NATS
//! JetStream stream that keeps 20,000 messages while a producer writes 500,000, killed with
//! SIGKILL at random moments ten times and restarted each time, ends with exactly the output
//! of a run never killed (over a stream that keeps every message), on one worker and on two
//! (side by side, over the same stream; the two-worker snapshots restored on three and on one
//! worker in turn). A restart that read from the start could not: the
//! start is gone, and the input refuses the gap.
//!
//! Feature `nats`; needs nats-server (`.ci/run` installs it).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use punctual::adapters::nats::async_nats;
use punctual::adapters::nats::testing::Server;

/// Messages the producer writes.
const MESSAGES: u64 = 500_000;
/// Messages the limited stream keeps.
const KEPT: i64 = 20_000;
/// Messages the producer writes per second: the job (a debug build, on a loaded 2-core
/// machine, two runs side by side) must keep within [`KEPT`] of it, or the messages it has
/// not read are gone (the input then fails, naming them).
const RATE: u64 = 20_000;

fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// Reading `i`: an item with its time (10 ms apart, some up to 1.9 s late) and its row.
fn reading(i: u64) -> String {
    let ms = i * 10 + (i * 7_919) % 1_900;
    format!(
        "{{\"kind\":\"point\",\"start\":{},\"payload\":{{\"device\":\"d{}\",\"celsius\":{}.{}}}}}",
        ms * 10_000,
        i % 17,
        15 + i % 20,
        i % 10
    )
}

/// The job over stream `stream`, writing `out` (a job file for `workers` workers).
fn write_job(dir: &Path, url: &str, stream: &str, out: &str, workers: usize) -> std::path::PathBuf {
    let mut sites = String::from("device,site\n");
    for d in 0..17 {
        sites.push_str(&format!("d{d},site-{}\n", d % 4));
    }
    std::fs::write(dir.join("sites.csv"), sites).expect("written");
    let job = dir.join(format!("{stream}-{workers}.toml"));
    std::fs::write(
        &job,
        format!(
            r#"
query = """
SELECT r.device, t.site, COUNT(*) AS n, AVG(r.celsius) AS mean
INTO output
FROM readings r
JOIN sites t ON r.device = t.device
GROUP BY r.device, t.site, HoppingWindow(second, 10, 5)
"""

[inputs.readings]
nats = {{ server = "{url}", stream = "{stream}" }}
out_of_order = "2s"

[inputs.sites]
path = "sites.csv"

[outputs.output]
path = "{out}"
"#
        ),
    )
    .expect("written");
    job
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_on_a_stream_with_retention_killed_ten_times_gives_the_uninterrupted_output() {
    let server = Server::start().expect("a nats-server");
    let dir = std::env::temp_dir().join(format!("punctual-nats-kill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let client = async_nats::connect(server.url()).await.expect("connects");
    let js = async_nats::jetstream::new(client);
    for (name, max) in [("ALL", -1), ("KEPT", KEPT)] {
        js.create_stream(async_nats::jetstream::stream::Config {
            name: name.to_owned(),
            subjects: vec![name.to_lowercase()],
            max_messages: max,
            ..Default::default()
        })
        .await
        .expect("stream created");
    }
    let producer = produce(js.clone());
    let url = server.url();
    let one = tokio::spawn(killed_ten_times(dir.clone(), url.clone(), 1));
    let two = tokio::spawn(killed_ten_times(dir.clone(), url.clone(), 2));
    let finished = [
        one.await.expect("one worker"),
        two.await.expect("two workers"),
    ];
    producer.await.expect("produced");
    for (workers, last) in [1, 2].into_iter().zip(finished) {
        assert!(
            last.status.success(),
            "the last run on {workers} workers: {}",
            String::from_utf8_lossy(&last.stderr)
        );
        // The run never killed, over the stream that keeps everything.
        let expected = format!("expected-{workers}.jsonl");
        let all_job = write_job(&dir, &url, "ALL", &expected, workers);
        let whole = run(&all_job, None, workers).output().expect("runs");
        assert!(
            whole.status.success(),
            "{}",
            String::from_utf8_lossy(&whole.stderr)
        );
        let expected = std::fs::read(dir.join(expected)).expect("written");
        let got = std::fs::read(dir.join(format!("out-{workers}.jsonl"))).expect("written");
        assert!(
            expected.len() > 100_000,
            "a real output: {} bytes",
            expected.len()
        );
        assert!(
            got == expected,
            "on {workers} workers, after ten kills the output differs: {} bytes, expected {}",
            got.len(),
            expected.len()
        );
    }
    // The limited stream no longer holds its start: a run from the start is impossible.
    let mut kept = js.get_stream("KEPT").await.expect("the stream");
    let info = kept.info().await.expect("info");
    assert!(info.state.first_sequence > 1, "{:?}", info.state);
    std::fs::remove_dir_all(&dir).ok();
}

/// The command that runs `job` on `workers` workers, with checkpoints in `state` if given.
fn run(job: &Path, state: Option<&Path>, workers: usize) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_punctual"));
    c.args(["job", s(job), "--workers", &workers.to_string()]);
    if let Some(state) = state {
        c.args(["--checkpoint", s(state), "--checkpoint-every", "20ms"]);
    }
    c.stdout(Stdio::null()).stderr(Stdio::piped());
    c
}

/// The job over the limited stream on `workers` workers, killed ten times at random moments
/// while the producer writes (xorshift), then run to the end of the stream (while the
/// producer still writes: it follows the stream); returns how that last run ended. On two
/// workers the restarts run on two, three and one in turn (the snapshot's keys stay in two
/// parts).
async fn killed_ten_times(
    dir: std::path::PathBuf,
    url: String,
    workers: usize,
) -> std::process::Output {
    let job = write_job(&dir, &url, "KEPT", &format!("out-{workers}.jsonl"), workers);
    let state = dir.join(format!("state-{workers}"));
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15 ^ workers as u64;
    for i in 0..10 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let at = Duration::from_millis(100 + seed % 600);
        // The snapshots of two workers go on on three and on one in turn.
        let on = if workers == 2 {
            [2, 3, 1][i % 3]
        } else {
            workers
        };
        let mut child = run(&job, Some(&state), on).spawn().expect("starts");
        tokio::time::sleep(at).await;
        if child.try_wait().expect("waits").is_some() {
            let out = child.wait_with_output().expect("ends");
            panic!(
                "a run on {workers} workers ended before it was killed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        child.kill().expect("killed");
        child.wait().expect("ends");
    }
    tokio::task::spawn_blocking(move || run(&job, Some(&state), workers).output())
        .await
        .expect("the last run")
        .expect("runs")
}

/// The producer: every reading to both streams' subjects, at [`RATE`] a second, then the end.
fn produce(js: async_nats::jetstream::Context) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let started = Instant::now();
        for i in 0..=MESSAGES {
            let line = if i == MESSAGES {
                "{\"kind\":\"eof\"}".to_owned()
            } else {
                reading(i)
            };
            for subject in ["all", "kept"] {
                js.publish(subject, line.clone().into())
                    .await
                    .expect("published");
            }
            if i % 1_000 == 0 {
                let due = Duration::from_micros(i * 1_000_000 / RATE);
                tokio::time::sleep(due.saturating_sub(started.elapsed())).await;
            }
        }
    })
}
