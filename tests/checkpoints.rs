//! A job with a hopping window per key and a join with reference data, killed (SIGKILL) at
//! random moments and started again each time with the same checkpoint directory, ends with
//! exactly the output of a run never killed, on one worker and on two; and each restart goes
//! on from its last snapshot, not from the start of the input (the dead letter of the input's
//! first lines is written once, by the first run, although every run appends to the
//! dead-letter file).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod kill;

fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// Readings every `step` ms from `offset` ms, up to 1.9 s out of order, of 17 devices: a
/// CSV file's text, with a malformed line after the first reading if `malformed`.
fn readings(rows: u64, offset: u64, step: u64, malformed: bool) -> String {
    let mut text = String::from("time,device,celsius\n");
    for i in 0..rows {
        if i == 1 && malformed {
            text.push_str("not a time,d1,20\n");
        }
        let ms = i * step + offset + (i * 7_919) % 1_900;
        let (secs, milli) = (ms / 1000, ms % 1000);
        let (h, m, sec) = (secs / 3600, secs / 60 % 60, secs % 60);
        text.push_str(&format!(
            "2024-05-01T{h:02}:{m:02}:{sec:02}.{milli:03}Z,d{},{}.{}\n",
            i % 17,
            15 + i % 20,
            i % 10
        ));
    }
    text
}

/// The job's files in `dir`: two inputs of readings (`north`, with a malformed line near its
/// start, and `south`, half as dense), each joined with a table of sites by device and
/// counted in a hopping window per device, the two results as one output; the job writes
/// `out.jsonl` and `bad.jsonl`. On two workers the two inputs are read by different workers,
/// so a snapshot finds one worker's results waiting for the other's CTIs. `order` is the
/// readings' ordering setting.
fn write_job(dir: &Path, rows: u64, order: &str) -> std::path::PathBuf {
    std::fs::write(dir.join("north.csv"), readings(rows, 0, 10, true)).expect("written");
    std::fs::write(dir.join("south.csv"), readings(rows / 2, 3, 20, false)).expect("written");
    let mut sites = String::from("device,site\n");
    for d in 0..17 {
        sites.push_str(&format!("d{d},site-{}\n", d % 4));
    }
    std::fs::write(dir.join("sites.csv"), sites).expect("written");
    let select = |from: &str| {
        format!(
            "SELECT r.device, t.site, COUNT(*) AS n, AVG(r.celsius) AS mean, MAX(r.celsius) AS top
FROM {from} r TIMESTAMP BY time
JOIN sites t ON r.device = t.device
GROUP BY r.device, t.site, HoppingWindow(second, 10, 5)"
        )
    };
    let job = dir.join("job.toml");
    std::fs::write(
        &job,
        format!(
            r#"
query = """
{}
UNION
{}
"""
dead_letters = "bad.jsonl"

[inputs.north]
path = "north.csv"
{order}

[inputs.south]
path = "south.csv"
{order}

[inputs.sites]
path = "sites.csv"

[outputs.output]
path = "out.jsonl"
"#,
            select("north"),
            select("south")
        ),
    )
    .expect("written");
    job
}

/// The readings' ordering in most tests: reordered up to 2 s late.
const OUT_OF_ORDER: &str = r#"out_of_order = "2s""#;

#[test]
fn a_job_killed_anywhere_and_restarted_gives_the_uninterrupted_output() {
    let one = killed_and_restarted(1);
    let two = killed_and_restarted(2);
    let sorted = |bytes: &[u8]| {
        let mut lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
        lines.sort_unstable();
        lines.into_iter().map(<[u8]>::to_vec).collect::<Vec<_>>()
    };
    assert!(
        sorted(&one) == sorted(&two),
        "the lines of one worker's run"
    );
}

/// Copies the files of directory `from` to `to` (created).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("created");
    for entry in std::fs::read_dir(from).expect("read") {
        let entry = entry.expect("read");
        std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copied");
    }
}

/// The kill test on `workers` workers (on two, the last run also on one and on three);
/// returns the output.
fn killed_and_restarted(workers: usize) -> Vec<u8> {
    const KILLS: usize = 10;
    let dir = std::env::temp_dir().join(format!(
        "punctual-job-kill-{workers}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let job = write_job(&dir, 120_000, OUT_OF_ORDER);
    let (out, bad, state) = (
        dir.join("out.jsonl"),
        dir.join("bad.jsonl"),
        dir.join("state"),
    );
    let run_on = |workers: usize, checkpoint: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_punctual"));
        c.args(["job", s(&job), "--workers", &workers.to_string()]);
        if checkpoint {
            c.args(["--checkpoint", s(&state), "--checkpoint-every", "20ms"]);
        }
        c.stdout(Stdio::null()).stderr(Stdio::null());
        c
    };
    let run = |checkpoint: bool| run_on(workers, checkpoint);
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

    // The first run is killed once a snapshot past the malformed line is written: two
    // snapshots written after its dead letter (a snapshot is taken only once the one before
    // it is written, so the second was taken after the letter).
    let mut child = run(true).spawn().expect("starts");
    let snapshot = state.join("snapshot");
    let written = || std::fs::metadata(&snapshot).and_then(|m| m.modified()).ok();
    let waited = Instant::now();
    let until = |done: &dyn Fn() -> bool| {
        while !done() && waited.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(1));
        }
    };
    until(&|| std::fs::read_to_string(&bad).is_ok_and(|l| l.contains("not a time")));
    for _ in 0..2 {
        let before = written();
        until(&|| written().is_some() && written() != before);
        assert!(
            written().is_some() && written() != before,
            "a snapshot was written after the malformed line"
        );
    }
    assert!(child.try_wait().expect("waits").is_none(), "killed mid-run");
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
    // A snapshot of two workers goes on on one and on three (its keys stay in two parts,
    // which one worker runs both of, or three run with one idle), each from the same state.
    let others: &[usize] = if workers == 2 { &[1, 3] } else { &[] };
    let (kept_out, kept_state) = (std::fs::read(&out).expect("written"), dir.join("kept"));
    copy_dir(&state, &kept_state);
    for &other in others.iter().chain([&workers]) {
        std::fs::write(&out, &kept_out).expect("written");
        let _ = std::fs::remove_dir_all(&state);
        copy_dir(&kept_state, &state);
        assert!(run_on(other, true).status().expect("runs").success());
        let got = std::fs::read(&out).expect("written");
        assert!(
            got == expected,
            "after {kills} kills on {workers} workers, ended on {other}, the output differs: \
             {} bytes, expected {}",
            got.len(),
            expected.len()
        );
    }
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
    expected
}

/// Several processes cannot take snapshots: refused before anything runs. A snapshot one
/// worker took goes on on two (its keys in one part), and a run of one on the snapshot of
/// two is on the cluster, with the same output as a run never stopped.
#[test]
fn snapshots_across_numbers_of_workers_and_processes() {
    let dir = std::env::temp_dir().join(format!("punctual-job-workers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let job = write_job(&dir, 20_000, OUT_OF_ORDER);
    let hosts = dir.join("hosts");
    std::fs::write(&hosts, "127.0.0.1:1\n127.0.0.1:2\n").expect("written");
    let out = Command::new(env!("CARGO_BIN_EXE_punctual"))
        .args([
            "job",
            s(&job),
            "--processes",
            "2",
            "--process",
            "0",
            "--hosts",
            s(&hosts),
        ])
        .arg("--checkpoint")
        .arg(dir.join("state"))
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("use --workers N without --processes"), "{err}");
    assert!(!dir.join("state").exists(), "nothing written");
    let run = |workers: &str, checkpoint: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_punctual"));
        c.args(["job", s(&job), "--workers", workers]);
        if checkpoint {
            c.args(["--checkpoint-every", "1ms", "--checkpoint"])
                .arg(dir.join("state"));
        }
        let out = c.output().expect("runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::fs::read(dir.join("out.jsonl")).expect("written")
    };
    let expected = run("1", false);
    // Killed in the middle on one worker, then on two from its snapshot (of one part).
    for (first, then) in [("1", "2"), ("2", "1")] {
        let _ = std::fs::remove_dir_all(dir.join("state"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_punctual"))
            .args([
                "job",
                s(&job),
                "--workers",
                first,
                "--checkpoint-every",
                "1ms",
            ])
            .arg("--checkpoint")
            .arg(dir.join("state"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starts");
        let snapshot = dir.join("state").join("snapshot");
        let started = Instant::now();
        while !snapshot.exists() && started.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(1));
        }
        let _ = child.kill();
        child.wait().expect("ends");
        let got = run(then, true);
        let sorted = |b: &[u8]| {
            let mut lines: Vec<Vec<u8>> = b.split(|c| *c == b'\n').map(<[u8]>::to_vec).collect();
            lines.sort_unstable();
            lines
        };
        assert!(
            sorted(&got) == sorted(&expected),
            "started on {first}, ended on {then}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Watermarks with an idle timeout drive every worker's clock, also that of a worker whose
/// inputs have ended: on three workers, with a snapshot every few milliseconds, the job ends
/// (a run once waited forever for such a worker to read what its clock sent after the end)
/// with the output of a run without snapshots, and a run killed in the middle and started
/// again ends with it too.
#[test]
fn a_job_with_watermarks_on_three_workers_ends_with_its_output() {
    let dir = std::env::temp_dir().join(format!("punctual-job-watermarks-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let job = write_job(
        &dir,
        40_000,
        r#"watermark = { bounded = "2s", idle_timeout = "1s" }"#,
    );
    let out = dir.join("out.jsonl");
    let run = |checkpoint: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_punctual"));
        c.args(["job", s(&job), "--workers", "3"]);
        if checkpoint {
            c.args(["--checkpoint-every", "5ms", "--checkpoint"])
                .arg(dir.join("state"));
        }
        c.stdout(Stdio::null()).stderr(Stdio::null());
        c.spawn().expect("starts")
    };
    // Ends within a minute (it takes about a second), or the test fails.
    let ended = |mut child: std::process::Child| {
        let started = Instant::now();
        while child.try_wait().expect("waits").is_none() {
            if started.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                panic!("the job did not end in a minute");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(child.wait().expect("ends").success());
    };
    ended(run(false));
    let expected = std::fs::read(&out).expect("written");
    assert!(expected.len() > 10_000, "{} bytes", expected.len());
    std::fs::remove_file(&out).expect("removed");
    ended(run(true));
    assert!(std::fs::read(&out).expect("written") == expected);
    std::fs::remove_dir_all(dir.join("state")).expect("removed");
    std::fs::remove_file(&out).expect("removed");
    // Killed once a few snapshots are written, then started again.
    let mut child = run(true);
    let snapshot = dir.join("state").join("snapshot");
    let started = Instant::now();
    while !snapshot.exists() && started.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(30));
    let _ = child.kill();
    child.wait().expect("ends");
    ended(run(true));
    assert!(std::fs::read(&out).expect("written") == expected);
    std::fs::remove_dir_all(&dir).ok();
}
