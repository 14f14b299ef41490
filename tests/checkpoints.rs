//! A job with a hopping window per key and a join with reference data, killed (SIGKILL) at
//! random moments and started again each time with the same checkpoint directory, ends with
//! exactly the output of a run never killed; and each restart goes on from its last snapshot,
//! not from the start of the input (the dead letter of the input's first lines is written
//! once, by the first run, although every run appends to the dead-letter file).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod kill;

fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// The job's files in `dir`: readings up to 2 s out of order, a malformed line near the start,
/// a table of sites by device; the job writes `out.jsonl` and `bad.jsonl`.
fn write_job(dir: &Path, rows: u64) -> std::path::PathBuf {
    let mut readings = String::from("time,device,celsius\n");
    for i in 0..rows {
        if i == 1 {
            readings.push_str("not a time,d1,20\n");
        }
        let ms = i * 10 + (i * 7_919) % 1_900;
        let (secs, milli) = (ms / 1000, ms % 1000);
        let (h, m, sec) = (secs / 3600, secs / 60 % 60, secs % 60);
        readings.push_str(&format!(
            "2024-05-01T{h:02}:{m:02}:{sec:02}.{milli:03}Z,d{},{}.{}\n",
            i % 17,
            15 + i % 20,
            i % 10
        ));
    }
    std::fs::write(dir.join("readings.csv"), readings).expect("written");
    let mut sites = String::from("device,site\n");
    for d in 0..17 {
        sites.push_str(&format!("d{d},site-{}\n", d % 4));
    }
    std::fs::write(dir.join("sites.csv"), sites).expect("written");
    let job = dir.join("job.toml");
    std::fs::write(
        &job,
        r#"
query = """
SELECT r.device, t.site, COUNT(*) AS n, AVG(r.celsius) AS mean, MAX(r.celsius) AS top
INTO output
FROM readings r TIMESTAMP BY time
JOIN sites t ON r.device = t.device
GROUP BY r.device, t.site, HoppingWindow(second, 10, 5)
"""
dead_letters = "bad.jsonl"

[inputs.readings]
path = "readings.csv"
out_of_order = "2s"

[inputs.sites]
path = "sites.csv"

[outputs.output]
path = "out.jsonl"
"#,
    )
    .expect("written");
    job
}

#[test]
fn a_job_killed_anywhere_and_restarted_gives_the_uninterrupted_output() {
    const KILLS: usize = 10;
    let dir = std::env::temp_dir().join(format!("punctual-job-kill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let job = write_job(&dir, 120_000);
    let (out, bad, state) = (
        dir.join("out.jsonl"),
        dir.join("bad.jsonl"),
        dir.join("state"),
    );
    let run = |checkpoint: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_punctual"));
        c.args(["job", s(&job)]);
        if checkpoint {
            c.args(["--checkpoint", s(&state), "--checkpoint-every", "20ms"]);
        }
        c.stdout(Stdio::null()).stderr(Stdio::null());
        c
    };
    let started = Instant::now();
    assert!(run(false).status().expect("runs").success());
    let run_time = started.elapsed();
    let expected = std::fs::read(&out).expect("written");
    assert!(
        expected.len() > 100_000,
        "a real output: {} bytes",
        expected.len()
    );
    let letters = std::fs::read_to_string(&bad).expect("written");
    assert_eq!(
        letters.lines().filter(|l| l.contains("not a time")).count(),
        1,
        "{letters}"
    );
    std::fs::remove_file(&out).expect("removed");
    std::fs::remove_file(&bad).expect("removed");

    // The first run is killed once it has taken a snapshot (past the malformed line).
    let mut child = run(true).spawn().expect("starts");
    let waited = Instant::now();
    while !state.join("snapshot").exists() && waited.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(state.join("snapshot").exists(), "a snapshot was taken");
    std::thread::sleep(Duration::from_millis(30));
    let _ = child.kill();
    child.wait().expect("ends");
    // Then at random moments within a share of a whole run.
    let share = run_time * 2 / KILLS as u32;
    let kills = 1 + kill::at_random(KILLS - 1, share, 0x2545_F491_4F6C_DD1D, || {
        run(true).spawn().expect("starts")
    });
    assert!(
        kills >= 8,
        "only {kills} runs were killed before they ended"
    );
    assert!(run(true).status().expect("runs").success());
    let got = std::fs::read(&out).expect("written");
    assert!(
        got == expected,
        "after {kills} kills the output differs: {} bytes, expected {}",
        got.len(),
        expected.len()
    );
    // Every restart went on from a snapshot past the malformed line: it was read once.
    let letters = std::fs::read_to_string(&bad).expect("written");
    assert_eq!(
        letters.lines().filter(|l| l.contains("not a time")).count(),
        1,
        "{letters}"
    );
    // Run again on a finished run's directory: nothing to do, the output unchanged.
    assert!(run(true).status().expect("runs").success());
    assert!(std::fs::read(&out).expect("written") == expected);
    std::fs::remove_dir_all(&dir).ok();
}

/// Snapshots are taken on one worker: `--workers 2` with `--checkpoint` is refused with the
/// reason, and nothing is written.
#[test]
fn checkpoints_on_several_workers_are_refused_with_the_reason() {
    let dir = std::env::temp_dir().join(format!("punctual-job-workers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let job = write_job(&dir, 1_000);
    let out = Command::new(env!("CARGO_BIN_EXE_punctual"))
        .args(["job", s(&job), "--workers", "2", "--checkpoint"])
        .arg(dir.join("state"))
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("checkpoints: a query on several workers cannot take them"),
        "{err}"
    );
    assert!(!dir.join("out.jsonl").exists(), "nothing written");
    std::fs::remove_dir_all(&dir).ok();
}
