//! Every CSV value accounted for: a field that does not read as its column's type makes its
//! record malformed (counted, dead-lettered with line and field), unless the column is
//! declared nullable and the field empty.

use std::sync::atomic::{AtomicUsize, Ordering};

use punctual::cli::{EXIT_OK, EXIT_USAGE};

use crate::cli_common::{holds, s, shell, temp_dir, write};

/// Runs a count and an average over `csv` (columns `time,device,temp`) with `extra`
/// options after the input's file: exit code, output, stderr, dead letters.
fn run(csv: &str, options: &str) -> (u8, String, String, String) {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let dir = temp_dir(&format!("values-{}", RUNS.fetch_add(1, Ordering::Relaxed)));
    let input = dir.join("r.csv");
    write(&input, csv);
    let (out, dead) = (dir.join("out.jsonl"), dir.join("dead.jsonl"));
    let (code, _, err) = shell(&format!(
        "query 'SELECT COUNT(*) AS n, AVG(temp) AS mean FROM r TIMESTAMP BY time GROUP BY TumblingWindow(minute, 1)' \
         --input r={}{options} --output {} --dead-letters {}",
        s(&input),
        s(&out),
        s(&dead),
    ));
    (
        code,
        std::fs::read_to_string(out).unwrap_or_default(),
        err,
        std::fs::read_to_string(dead).unwrap_or_default(),
    )
}

/// `not-a-number` in a number column: malformed with its line and field, not counted (before:
/// counted in COUNT(*), skipped by AVG, `malformed=0`).
#[test]
fn a_value_of_another_type_is_a_malformed_record() {
    let csv = "time,device,temp\n2026-12-01T10:00:10Z,a,20\n2026-12-01T10:00:11Z,b,not-a-number\n\
               2026-12-01T10:00:12Z,c,22.5\n2026-12-01T10:00:13Z,007,21.5\n";
    let (code, written, err, dead) = run(csv, "");
    assert_eq!(code, EXIT_OK, "{err}");
    assert_eq!(
        written.trim(),
        r#"{"time":"2026-12-01T10:01:00Z","n":3,"mean":21.333333333333332}"#,
        "{err}"
    );
    holds(&err, &["malformed=1"]);
    holds(
        &dead,
        &[
            "field `temp`: `not-a-number` is not a number, as the column's first value is",
            "r.csv:3:",
        ],
    );
}

/// An empty field of a number column is malformed unless the column is nullable; then it is
/// NULL: counted by COUNT(*), left out of AVG.
#[test]
fn an_empty_field_is_null_only_where_declared() {
    let csv = "time,device,temp\n2026-12-01T10:00:10Z,a,20\n2026-12-01T10:00:11Z,b,\n\
               2026-12-01T10:00:12Z,c,22\n";
    let (code, written, err, dead) = run(csv, "");
    assert_eq!(code, EXIT_OK, "{err}");
    holds(&written, &[r#""n":2,"mean":21.0"#]);
    holds(&err, &["malformed=1"]);
    holds(&dead, &["list it in `nullable`"]);
    let (code, written, err, _) = run(csv, ",nullable=temp");
    assert_eq!(code, EXIT_OK, "{err}");
    holds(&written, &[r#""n":3,"mean":21.0"#]);
    holds(&err, &["malformed=0"]);
    let (code, _, err, _) = run(csv, ",nullable=tmp");
    assert_eq!(code, EXIT_USAGE, "{err}");
    holds(&err, &["`nullable`", "`tmp`"]);
}
