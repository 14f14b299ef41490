//! The `punctual` binary as a process: what only a real process shows (a closed standard
//! output, a signal). Declared by the `punctual` package itself (it needs the binary), although
//! it lives with the other tests.

#![cfg(unix)]

mod cli_common;
mod readme;

mod kill;

fn s(p: &std::path::Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// `pipe` into a reader that stops early (`| head`) ends quietly with success, as a filter
/// should; what it did is still on stderr.
#[test]
fn pipe_into_a_closed_output_ends_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let dir = std::env::temp_dir().join(format!("punctual-head-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let input = dir.join("many.jsonl");
    let mut text = String::new();
    for i in 0..200_000 {
        text.push_str(&format!(
            "{{\"kind\":\"point\",\"start\":{i},\"payload\":{{}}}}\n"
        ));
    }
    std::fs::write(&input, text).expect("written");
    let mut child = Command::new(env!("CARGO_BIN_EXE_punctual"))
        .args(["pipe", "-i", s(&input), "--in-order"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("reads");
    // (The reader is dropped here: the pipe is closed, as `head -1` would.)
    let out = child.wait_with_output().expect("ends");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(first.starts_with('{'), "{first}");
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        !err.contains("error") && err.contains("stream in:"),
        "{err}"
    );
}

/// Ctrl-C (SIGINT) stops `pipe` with a drain: the events it holds come out, the counters are
/// printed, and it exits with success.
#[test]
fn pipe_stops_with_a_drain_on_ctrl_c() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_punctual"))
        .args(["pipe", "--time-format", "ticks"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(
            b"{\"kind\":\"point\",\"start\":1,\"payload\":{}}\n{\"kind\":\"cti\",\"time\":2}\n{\"kind\":\"point\",\"start\":5,\"payload\":{}}\n",
        )
        .expect("writes");
    stdin.flush().expect("flushes");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    out.read_line(&mut line).expect("reads");
    assert!(
        line.contains("\"start\":1"),
        "the first event is out: {line}"
    );
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).expect("reads");
    let status = child.wait().expect("ends");
    drop(stdin);
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().expect("stderr"), &mut err)
        .expect("reads");
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(
        rest.contains("\"start\":5"),
        "the held event came out: {rest}"
    );
    assert!(rest.contains("\"inf\""), "with the final CTI: {rest}");
    assert!(err.contains("events_in=2 ctis_in=2 released=2"), "{err}");
}

/// Killed (SIGKILL) at random points and started again each time with the same checkpoint
/// directory, `pipe` ends with exactly the output of an uninterrupted run: no duplicate, no gap.
/// Each run goes on from the last snapshot, so the kill points fall within a share of a whole
/// run's time: the runs together do about one run's work.
#[test]
fn pipe_killed_anywhere_and_restarted_gives_the_uninterrupted_output() {
    use std::process::{Command, Stdio};
    use std::time::Instant;
    const KILLS: usize = 24;
    let dir = std::env::temp_dir().join(format!("punctual-kill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let input = dir.join("in.jsonl");
    let mut text = String::new();
    for i in 0..150_000u64 {
        // Mostly increasing, some out of order, a few too late for the delay.
        let t = i * 10 + (i * 7_919) % 97;
        text.push_str(&format!(
            "{{\"kind\":\"point\",\"start\":{t},\"payload\":{{\"v\":{i}}}}}\n"
        ));
    }
    std::fs::write(&input, text).expect("written");
    let pipe = |out: &std::path::Path, checkpoint: Option<&std::path::Path>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_punctual"));
        c.args(["pipe", "-i", s(&input), "-o", s(out), "--delay", "50"]);
        if let Some(dir) = checkpoint {
            c.args(["--checkpoint", s(dir), "--checkpoint-every", "20ms"]);
        }
        c.stdout(Stdio::null()).stderr(Stdio::null());
        c
    };
    let expected = dir.join("expected.jsonl");
    let started = Instant::now();
    assert!(pipe(&expected, None).status().expect("runs").success());
    let run_time = started.elapsed();

    let (out, state) = (dir.join("out.jsonl"), dir.join("checkpoints"));
    let share = run_time * 2 / KILLS as u32;
    let kills = kill::at_random(KILLS, share, 0x9E37_79B9_7F4A_7C15, || {
        pipe(&out, Some(&state)).spawn().expect("starts")
    });
    assert!(
        kills >= 20,
        "only {kills} runs were killed before they ended"
    );
    assert!(pipe(&out, Some(&state)).status().expect("runs").success());
    let (want, got) = (
        std::fs::read(&expected).expect("read"),
        std::fs::read(&out).expect("read"),
    );
    assert!(
        want == got,
        "after {kills} kills the output differs: {} bytes, expected {}",
        got.len(),
        want.len()
    );
}

/// `punctual job JOB --workers W --processes 2 --process I --hosts HOSTS`, to be spawned.
fn job_process(
    job: &std::path::Path,
    hosts: &std::path::Path,
    workers: usize,
    i: usize,
) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_punctual"));
    let (workers, i) = (workers.to_string(), i.to_string());
    command
        .arg("job")
        .arg(job)
        .args(["--workers", &workers, "--processes", "2"]);
    command.args(["--process", &i, "--hosts", s(hosts)]);
    command
}

/// A hosts file in `dir` for two processes on this machine, each on a free port.
fn hosts_file(dir: &std::path::Path) -> std::path::PathBuf {
    let hosts = dir.join("hosts");
    let ports: Vec<String> = free_ports(2)
        .iter()
        .map(|p| format!("127.0.0.1:{p}"))
        .collect();
    std::fs::write(&hosts, ports.join("\n")).expect("written");
    hosts
}

/// `n` free loopback ports (bound at once, so they differ, then released).
fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<std::net::TcpListener> = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0").expect("a free port"))
        .collect();
    listeners
        .iter()
        .map(|l| l.local_addr().expect("bound").port())
        .collect()
}

/// Every conformance case on two processes (of one worker each, and of two), each started by
/// `check` itself on free loopback ports, gives the expected output and counters.
#[test]
fn check_runs_every_case_on_two_processes() {
    use std::process::Command;
    let cases = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance");
    let out = Command::new(env!("CARGO_BIN_EXE_punctual"))
        .args(["check", "--processes", "2", "--workers", "1", cases])
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains(" passed, 0 failed"), "{text}");
    let out = Command::new(env!("CARGO_BIN_EXE_punctual"))
        .args([
            "check",
            "--processes",
            "2",
            "--workers",
            "2",
            &format!("{cases}/operators"),
            &format!("{cases}/sql/datediff-join"),
        ])
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let operators =
        punctual::conformance::find_cases(std::path::Path::new(&format!("{cases}/operators")))
            .expect("readable cases")
            .len();
    let all = format!("{} passed, 0 failed", operators + 1);
    assert!(text.contains(&all), "{text}");
}

/// A process killed mid-run: the other one stops with an error that names it, well within
/// 10 seconds, instead of waiting for it.
#[test]
fn a_lost_process_stops_the_others_with_its_name() {
    let err = lose_process_1("killed", |second| {
        second.kill().expect("killed");
        let _ = second.wait();
    });
    assert!(err.contains("lost process 1 (127.0.0.1:"), "{err}");
}

/// A process stopped mid-run (`SIGSTOP`: alive, its connections open, silent): the other one
/// stops once it has heard nothing for `--peer-timeout`, with an error that names it and
/// says so; before, it waited forever.
#[test]
fn a_frozen_process_stops_the_others_with_its_name() {
    let err = lose_process_1("frozen", |second| {
        let stopped = std::process::Command::new("kill")
            .args(["-STOP", &second.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(stopped.success());
    });
    assert!(
        err.contains("lost process 1 (127.0.0.1:") && err.contains("it sent nothing for 1 s"),
        "{err}"
    );
}

/// Runs a long case on two processes, does `lose` to process 1 mid-run, and returns what
/// process 0 wrote on stderr once it ended (within 10 s, with an exit code other than 0 and
/// no panic). Process 1 is killed at the end whatever `lose` did.
fn lose_process_1(name: &str, lose: impl FnOnce(&mut std::process::Child)) -> String {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let dir = std::env::temp_dir().join(format!("punctual-{name}-{}", std::process::id()));
    let case = dir.join("case");
    std::fs::create_dir_all(&case).expect("temp dir");
    std::fs::write(
        case.join("case.toml"),
        "description = \"a long run\"\n[streams.s]\nshape = \"point\"\n\
         generate = { every = 10, delay = 0, final = true }\n[query]\noutput = \"w\"\n\
         [[query.step]]\nname = \"w\"\nop = \"tumbling\"\ninput = \"s\"\nsize = 100\n\
         group_by = \"k\"\naggregates = [{ fn = \"sum\", field = \"v\", as = \"total\" }]\n",
    )
    .expect("written");
    let mut arrivals = String::new();
    for i in 0..400_000 {
        arrivals.push_str(&format!(
            "{{\"stream\":\"s\",\"kind\":\"point\",\"start\":{i},\"payload\":{{\"k\":{},\"v\":1}}}}\n",
            i % 7
        ));
    }
    std::fs::write(case.join("arrivals.jsonl"), arrivals).expect("written");
    let hosts = hosts_file(&dir);
    let start = |i: usize| {
        Command::new(env!("CARGO_BIN_EXE_punctual"))
            .args([
                "run",
                s(&case),
                "--processes",
                "2",
                "--process",
                &i.to_string(),
                "--peer-timeout",
                "1s",
            ])
            .args(["--hosts", s(&hosts)])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starts")
    };
    let mut first = start(0);
    let mut second = start(1);
    // Mid-run: once process 0 says every process is connected, and a moment more.
    let mut said = String::new();
    let mut lines = std::io::BufReader::new(first.stderr.take().expect("stderr"));
    std::io::BufRead::read_line(&mut lines, &mut said).expect("reads");
    assert!(said.contains("all processes connected"), "{said}");
    let rest = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut lines, &mut text);
        text
    });
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        first.try_wait().expect("waits").is_none(),
        "the run ended before the kill: make it longer"
    );
    lose(&mut second);
    let killed = Instant::now();
    let status = loop {
        if let Some(status) = first.try_wait().expect("waits") {
            break Some(status);
        }
        if killed.elapsed() > Duration::from_secs(10) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = second.kill();
    let _ = second.wait();
    let Some(status) = status else {
        let _ = first.kill();
        panic!("process 0 still runs 10 s after process 1 was {name}");
    };
    let err = rest.join().expect("stderr read");
    assert_ne!(status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
    err
}

/// The sensors job (readings joined with calibration data that imports their CTIs, averaged
/// per device over hopping windows), as a job file writing to `out`.
fn sensors_job(dir: &std::path::Path, out: &std::path::Path) -> std::path::PathBuf {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/samples/data/sensors.jsonl");
    let job = format!(
        "query = \"\"\"\nSELECT r.device, AVG(r.raw * c.factor + c.offset) AS average, COUNT(*) AS n\n\
         INTO averages FROM readings r JOIN calibration c ON r.device = c.device\n\
         GROUP BY r.device, HoppingWindow(second, 60, 10)\n\"\"\"\n\
         [inputs.readings]\npath = {data:?}\nstream = \"readings\"\n\
         generate = {{ every = 20, delay = \"3s\" }}\npolicy = \"drop\"\n\
         [inputs.calibration]\npath = {data:?}\nstream = \"calibration\"\n\
         [outputs.averages]\npath = {:?}\nwith_ctis = true\n",
        s(out)
    );
    let path = dir.join("sensors.toml");
    std::fs::write(&path, job).expect("written");
    path
}

/// A job's output file as the comparison sees it: the events, sorted, their numbers to nine
/// significant digits (a window sums its events in the order they reach it, which differs
/// between runs on several workers), and the last CTI.
fn job_output(path: &std::path::Path) -> (Vec<String>, String) {
    fn round(v: serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Number(n) if n.is_f64() => {
                serde_json::Value::String(format!("{:.9e}", n.as_f64().unwrap_or_default()))
            }
            serde_json::Value::Object(o) => {
                serde_json::Value::Object(o.into_iter().map(|(k, v)| (k, round(v))).collect())
            }
            other => other,
        }
    }
    let text = std::fs::read_to_string(path).expect("the output file");
    let mut events = Vec::new();
    let mut last_cti = String::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        if let Some(t) = v.get("cti") {
            last_cti = t.to_string();
        } else {
            events.push(round(v).to_string());
        }
    }
    events.sort();
    (events, last_cti)
}

/// `punctual job` on two worker threads, and as two processes of two workers over loopback,
/// writes the events it writes on the local runtime, with the same last CTI.
#[test]
fn a_job_runs_on_workers_and_processes_with_the_same_results() {
    use std::process::{Command, Stdio};
    let dir = std::env::temp_dir().join(format!("punctual-job-cluster-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let run = |name: &str, args: &[&str]| {
        let out = dir.join(name);
        let job = sensors_job(&dir.join(name.replace(".jsonl", "")), &out);
        let status = Command::new(env!("CARGO_BIN_EXE_punctual"))
            .arg("job")
            .arg(&job)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("runs");
        assert_eq!(status.code(), Some(0), "{name}");
        out
    };
    for sub in ["local", "threads", "procs"] {
        std::fs::create_dir_all(dir.join(sub)).expect("temp dir");
    }
    let local = job_output(&run("local.jsonl", &[]));
    assert!(local.0.len() > 3000, "{} results", local.0.len());
    assert_eq!(local.1, "\"inf\"", "the final CTI");
    let threads = job_output(&run("threads.jsonl", &["--workers", "2"]));
    assert!(threads == local, "on two workers the output differs");
    let hosts = hosts_file(&dir);
    let out = dir.join("procs.jsonl");
    let job = sensors_job(&dir.join("procs"), &out);
    let start = |i: usize| {
        job_process(&job, &hosts, 2, i)
            .stdout(std::fs::File::create(dir.join(format!("stdout-{i}"))).expect("created"))
            .stderr(Stdio::null())
            .spawn()
            .expect("starts")
    };
    // Process 1 first: it waits for process 0, quietly (standard output is the output's).
    let second = start(1);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut children = [start(0), second];
    // A deadline, so that a process that hangs fails the test instead of holding it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    for i in 0..children.len() {
        let code = loop {
            if let Some(status) = children[i].try_wait().expect("waits") {
                break status.code();
            }
            if std::time::Instant::now() > deadline {
                for c in children.iter_mut() {
                    let _ = c.kill();
                }
                panic!("process {i} did not finish within 120 s");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        assert_eq!(code, Some(0), "process {i}");
    }
    assert!(
        job_output(&out) == local,
        "on two processes the output differs"
    );
    for i in 0..2 {
        let printed = std::fs::read_to_string(dir.join(format!("stdout-{i}"))).expect("read");
        assert!(
            !printed.contains("connect") && !printed.contains("retrying"),
            "process {i} printed on standard output: {printed}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A job on two processes (their hosts file in `dir`) whose input listens on a port per
/// partition and whose output writes every item, with its CTIs, to a file: the job file, the
/// hosts file, the two addresses listened on, the output.
fn listening_job(
    dir: &std::path::Path,
) -> (
    std::path::PathBuf,
    std::path::PathBuf,
    [String; 2],
    std::path::PathBuf,
) {
    let ports = free_ports(4);
    let hosts = dir.join("hosts");
    std::fs::write(
        &hosts,
        format!("127.0.0.1:{}\n127.0.0.1:{}\n", ports[0], ports[1]),
    )
    .expect("written");
    let listen = [
        format!("127.0.0.1:{}", ports[2]),
        format!("127.0.0.1:{}", ports[3]),
    ];
    let out = dir.join("out.jsonl");
    let job = dir.join("job.toml");
    std::fs::write(
        &job,
        format!(
            "query = \"SELECT * INTO out FROM r\"\n[inputs.r]\nlisten = [{:?}, {:?}]\n\
             [outputs.out]\npath = {:?}\ntime_format = \"ticks\"\nwith_ctis = true\n",
            listen[0],
            listen[1],
            s(&out)
        ),
    )
    .expect("written");
    (job, hosts, listen, out)
}

/// Ctrl-C (SIGINT) on one process of a job on two processes stops both with a drain: each
/// listens on its own port (a partition each), the stop reaches the other process through
/// the cluster, every item sent comes out (the ones held for the other partition's CTI too),
/// and both exit with success.
#[test]
fn ctrl_c_on_one_process_stops_every_process_with_a_drain() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let dir = std::env::temp_dir().join(format!("punctual-job-stop-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (job, hosts, listen, out) = listening_job(&dir);
    let start = |i: usize| {
        job_process(&job, &hosts, 1, i)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join(format!("stderr-{i}"))).expect("created"))
            .spawn()
            .expect("starts")
    };
    let mut children = [start(0), start(1)];
    let deadline = Instant::now() + Duration::from_secs(60);
    let stop_all = |children: &mut [std::process::Child; 2], why: &str| -> ! {
        for c in children.iter_mut() {
            let _ = c.kill();
        }
        panic!("{why}");
    };
    // Five points on each partition's port (each listens once the run has started).
    for (p, addr) in listen.iter().enumerate() {
        let mut conn = loop {
            if let Ok(conn) = std::net::TcpStream::connect(addr) {
                break conn;
            }
            if Instant::now() > deadline {
                stop_all(&mut children, "the job did not listen");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        for t in 1..=5 {
            writeln!(
                conn,
                "{{\"kind\":\"point\",\"start\":{t},\"payload\":{{\"p\":{p},\"t\":{t}}}}}"
            )
            .expect("writes");
        }
    }
    // The points below both partitions' CTI (5) come out; the two at 5 wait for the drain.
    let points = || {
        std::fs::read_to_string(&out)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("\"p\":"))
            .count()
    };
    while points() < 8 {
        if Instant::now() > deadline {
            stop_all(&mut children, "the first points did not come out");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Ctrl-C on process 1 only: it stops, and tells process 0.
    let interrupted = Command::new("kill")
        .args(["-INT", &children[1].id().to_string()])
        .status()
        .expect("kill runs");
    assert!(interrupted.success());
    for i in 0..children.len() {
        let code = loop {
            if let Some(status) = children[i].try_wait().expect("waits") {
                break status.code();
            }
            if Instant::now() > deadline {
                stop_all(&mut children, &format!("process {i} did not stop"));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let err = std::fs::read_to_string(dir.join(format!("stderr-{i}"))).unwrap_or_default();
        assert_eq!(code, Some(0), "process {i}: {err}");
    }
    let written = std::fs::read_to_string(&out).expect("written");
    assert_eq!(points(), 10, "{written}");
    assert!(written.contains("\"inf\""), "the final CTI: {written}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// An event an operator drops (over a window's limit of windows per event) reaches the user
/// every way: the library's warning on stderr (the binary installs a log subscriber; `RUST_LOG`
/// chooses the level), the operator's count in the summary, and a dead letter with the
/// operator, the event's lifetime and the reason.
#[test]
fn an_operator_drop_reaches_the_log_the_summary_and_the_dead_letters() {
    use std::process::Command;
    let dir = std::env::temp_dir().join(format!("punctual-op-drop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let input = dir.join("r.jsonl");
    std::fs::write(
        &input,
        "{\"t\":\"2024-05-01T00:00:00Z\",\"v\":1}\n{\"t\":\"2024-05-01T00:00:01Z\",\"v\":2}\n",
    )
    .expect("written");
    let dead = dir.join("dead.jsonl");
    let run = |log: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_punctual"));
        c.args([
            "query",
            // A 30-day window every second: 2,592,000 windows per event, over the limit.
            "SELECT COUNT(*) AS n FROM r TIMESTAMP BY t GROUP BY HoppingWindow(second, 2592000, 1)",
            "--input",
            &format!("r={}", s(&input)),
            "--output",
            s(&dir.join("out.jsonl")),
            "--dead-letters",
            s(&dead),
        ]);
        c.env_remove("RUST_LOG");
        if let Some(level) = log {
            c.env("RUST_LOG", level);
        }
        let out = c.output().expect("runs");
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = run(None);
    assert!(
        err.contains("WARN an operator dropped an event: it overlaps 2592000 windows"),
        "{err}"
    );
    assert!(err.contains("hopping window `output`: dropped=2"), "{err}");
    assert!(
        err.contains("dead letters: 2 (dropped by an operator 2)"),
        "{err}"
    );
    let letters = std::fs::read_to_string(&dead).expect("written");
    let first = letters.lines().next().expect("a letter");
    assert_eq!(
        first,
        r#"{"reason":"dropped by hopping window `output`: it overlaps 2592000 windows, over the limit of 1000000 windows per event","operator":"hopping window `output`","start":"2024-05-01T00:00:00Z","end":"2024-05-01T00:00:00.0000001Z"}"#
    );
    // RUST_LOG is honoured: errors only, so no warning (the summary stays).
    let err = run(Some("error"));
    assert!(!err.contains("WARN"), "{err}");
    assert!(err.contains("hopping window `output`: dropped=2"), "{err}");
}
