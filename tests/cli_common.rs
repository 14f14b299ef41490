//! Helpers the command-line tests share: run the CLI in process, make case folders.

#![allow(dead_code)] // each test crate uses its share

use std::path::{Path, PathBuf};

use punctual::cli::main;

pub fn cli(args: &[&str]) -> (u8, String, String) {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = main(&args, &mut out, &mut err);
    (
        code,
        String::from_utf8(out).expect("utf-8 output"),
        String::from_utf8(err).expect("utf-8 output"),
    )
}

/// Runs the command line `line` in process, as a shell would split it: words at white
/// space, a word in quotes (a query with spaces) taken whole. What it exits with,
/// writes to standard output and to standard error.
pub fn shell(line: &str) -> (u8, String, String) {
    let words = words(line);
    cli(&words.iter().map(String::as_str).collect::<Vec<_>>())
}

/// Runs the command line `line` (split as [`shell`] splits it) and checks that it refuses it
/// as a usage error saying `says` on standard error.
pub fn refuses(line: &str, says: &str) {
    let words = words(line);
    refused(&words.iter().map(String::as_str).collect::<Vec<_>>(), says);
}

/// A command line's words, as a shell splits them: at white space outside quotes (single or
/// double, no escapes inside them: a query holding single quotes goes in double ones), the
/// quotes taken away; a `#` starting a word starts a comment.
pub fn words(line: &str) -> Vec<String> {
    let (mut words, mut word, mut quote, mut any) = (Vec::new(), String::new(), None, false);
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                any = true;
            }
            (None, '#') if !any => break,
            (None, c) if c.is_whitespace() => {
                if any {
                    words.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            (None, c) => {
                word.push(c);
                any = true;
            }
        }
    }
    assert!(quote.is_none(), "an unclosed quote in {line:?}");
    if any {
        words.push(word);
    }
    words
}

/// Writes the job file `path` and runs it (`punctual job PATH`): its exit code and what it
/// wrote to standard error.
pub fn run_job(path: &Path, toml: impl AsRef<[u8]>) -> (u8, String) {
    write(path, toml);
    let (code, _, err) = cli(&["job", s(path)]);
    (code, err)
}

/// Makes the named pipe `in.fifo` in `dir` (anew).
pub fn fifo(dir: &Path) -> PathBuf {
    let fifo = dir.join("in.fifo");
    let _ = std::fs::remove_file(&fifo);
    match std::process::Command::new("mkfifo").arg(&fifo).output() {
        Ok(made) if made.status.success() => fifo,
        other => panic!("mkfifo: {other:?}"),
    }
}

/// The numbers in the field `field` of the JSON lines in `path`, in order.
pub fn numbers(path: &Path, field: &str) -> Vec<i64> {
    let text = std::fs::read_to_string(path).expect("written");
    let rows = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok());
    rows.filter_map(|v| v[field].as_i64()).collect()
}

/// Runs the command line with `args` and checks that it refuses them as a usage error
/// (`EXIT_USAGE`) saying `says` on standard error.
pub fn refused(args: &[&str], says: &str) {
    let (code, _, err) = cli(args);
    assert_eq!(code, punctual::cli::EXIT_USAGE, "{err}");
    assert!(err.contains(says), "{says}: {err}");
}

pub fn cases() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("conformance")
}

/// A case folder in a fresh temp dir, from the three files' texts.
pub fn case(name: &str, toml: &str, arrivals: &str, expected: &str) -> PathBuf {
    let dir = std::env::temp_dir()
        .join(format!("punctual-cli-{}", std::process::id()))
        .join(name);
    std::fs::create_dir_all(&dir).expect("temp dir is writable");
    for (file, text) in [
        ("case.toml", toml),
        ("arrivals.jsonl", arrivals),
        ("expected.jsonl", expected),
    ] {
        std::fs::write(dir.join(file), text).expect("temp dir is writable");
    }
    dir
}

pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

pub fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir()
        .join(format!("punctual-cli-{}", std::process::id()))
        .join(name);
    std::fs::create_dir_all(&dir).expect("temp dir is writable");
    dir
}

/// Writes `text` to `path` (a test's input, job or case file).
pub fn write(path: impl AsRef<Path>, text: impl AsRef<[u8]>) {
    std::fs::write(path, text).expect("the test's folder is writable");
}

/// Checks that `text` (what the command line wrote) holds each of `parts`, showing the text
/// and the part missing when one is not there.
#[track_caller]
pub fn holds(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "no {part:?} in:\n{text}");
    }
}
