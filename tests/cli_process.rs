//! The `punctual` binary as a process: what only a real process shows (a closed standard
//! output, a signal). Declared by the `punctual` package itself (it needs the binary), although
//! it lives with the other tests.

#![cfg(unix)]

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
        .args(["pipe"])
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
