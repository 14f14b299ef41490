//! The README runs as written: every `punctual` command of its shell blocks runs from the
//! repository's root against the repository's files and succeeds; its Rust blocks (compiled
//! and run as doc tests of the `punctual` crate) hide no lines and use only the crates its
//! `Cargo.toml` block names. A module of `cli_process` (it runs the binary).

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::cli_common::words;

/// The README's code blocks: (language, text).
fn blocks(readme: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in readme.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(lang)) => open = Some((lang.trim().to_owned(), String::new())),
            (Some(_), Some(_)) => out.extend(open.take()),
            (Some((_, text)), None) => {
                text.push_str(line);
                text.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

/// Each shell block's commands: continuation lines joined, and a quoted text that goes on
/// over several lines kept whole.
fn commands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        match line.trim_end().strip_suffix('\\') {
            Some(part) => {
                current.push_str(part);
                current.push(' ');
            }
            None => {
                current.push_str(line);
                if current.matches('"').count() % 2 == 1 {
                    current.push('\n');
                } else {
                    out.push(std::mem::take(&mut current));
                }
            }
        }
    }
    out
}

#[test]
fn the_readmes_commands_run_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("the README");
    let mut ran = 0;
    for (lang, text) in blocks(&readme) {
        if lang != "sh" {
            continue;
        }
        for command in commands(&text) {
            // A reader that stops early is not what is tested: the command before it is.
            let command = command.split(" | ").next().unwrap_or_default();
            let mut w = words(command);
            if w.first().map(String::as_str) == Some("cargo")
                && w.iter().take(5).any(|x| x == "punctual")
            {
                // `cargo run [-q] -p punctual -- ARGS` is `punctual ARGS`.
                let Some(at) = w.iter().position(|x| x == "--") else {
                    continue;
                };
                w = std::iter::once("punctual".to_owned())
                    .chain(w[at + 1..].iter().cloned())
                    .collect();
            }
            match w.first().map(String::as_str) {
                Some("punctual") => {}
                // `cargo test` is this run; the sample binaries run in `.ci/run`; `printf`
                // writes the hosts file of the two-process example below.
                Some("cargo" | "printf") | None => continue,
                Some(other) => panic!("the README runs `{other}`: teach this test to run it"),
            }
            // Several processes that must meet (`--processes`, `&`): tests/cli_process.rs
            // runs such commands with free ports.
            if w.iter().any(|x| x == "--processes" || x == "&") {
                continue;
            }
            let output = Command::new(env!("CARGO_BIN_EXE_punctual"))
                .args(&w[1..])
                .current_dir(root)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .output()
                .expect("runs");
            assert!(
                output.status.success(),
                "README: `{command}` failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            ran += 1;
        }
    }
    assert!(ran >= 8, "{ran} commands ran");
}

#[test]
fn the_readmes_rust_blocks_hide_nothing_and_name_their_crates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("the README");
    let blocks = blocks(&readme);
    let manifest = blocks
        .iter()
        .find(|(lang, _)| lang == "toml")
        .map(|(_, t)| t.clone())
        .expect("a Cargo.toml block");
    let named: BTreeSet<String> = manifest
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, _)| k.trim().replace('-', "_"))
        .collect();
    let mut rust = 0;
    for (_, text) in blocks.iter().filter(|(lang, _)| lang == "rust") {
        rust += 1;
        for line in text.lines() {
            assert!(
                !line.starts_with("# ") && line != "#",
                "a hidden doc-test line shows in the README: {line}"
            );
        }
        // Every crate a path starts from (`serde::`, `tokio::main`, `use async_trait::`).
        let mut crates = BTreeSet::new();
        for (i, _) in text.match_indices("::") {
            let before = &text[..i];
            let name: String = before
                .chars()
                .rev()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>()
                .chars()
                .rev()
                .collect();
            let starts_path = !before[..before.len() - name.len()].ends_with(':');
            if starts_path && name.starts_with(|c: char| c.is_ascii_lowercase()) {
                crates.insert(name);
            }
        }
        for krate in crates {
            let local = [
                "std", "core", "f64", "i64", "u32", "u64", "usize", "i32", "f32",
            ];
            assert!(
                local.contains(&krate.as_str()) || named.contains(&krate),
                "the README's Rust uses `{krate}`, which its Cargo.toml block does not name"
            );
        }
    }
    assert!(rust >= 3, "{rust} Rust blocks");
}
