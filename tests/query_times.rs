//! Times are never guessed: a number in a time field says nothing of its unit, so an input
//! that does not declare its time format and holds numbers is refused before the run with
//! the fix named, on `query`, `job` and `pipe`; declared, the same numbers read as what they
//! count.

use punctual::cli::{EXIT_OK, EXIT_USAGE};

use crate::cli_common::{cli, holds, refused, refuses, s, shell, temp_dir, write};

/// Epoch milliseconds (1 May 2024, 12:00 UTC, and 75 s later) as JSON lines and as CSV.
fn readings(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (json, csv) = (dir.join("r.jsonl"), dir.join("r.csv"));
    write(
        &json,
        "{\"ts\":1714564800000,\"v\":1}\n{\"ts\":1714564875000,\"v\":2}\n",
    );
    write(&csv, "ts,v\n1714564800000,1\n1714564875000,2\n");
    (json, csv)
}

/// `query`, `job` (JSON lines and CSV) and `pipe` over epoch-ms times with no format
/// declared: exit 2 before anything is written, the message naming the file, line and field
/// and the fix. Before, the numbers were read as 100 ns ticks (1970-01-02), exit 0.
#[test]
fn a_number_time_without_a_declared_unit_is_refused_before_the_run() {
    let dir = temp_dir("times-refused");
    let (json, csv) = readings(&dir);
    let out = dir.join("out.jsonl");
    let fix =
        "what it counts is not declared: set the input's time format to epoch-ms, epoch-s or ticks";
    let (code, _, err) = shell(&format!(
        "query 'SELECT v FROM r TIMESTAMP BY ts' --input r={} --output {}",
        s(&json),
        s(&out),
    ));
    assert_eq!(code, EXIT_USAGE, "{err}");
    holds(
        &err,
        &[&format!(
            "{}:1: the time field `ts`: `1714564800000` is a number",
            s(&json)
        )],
    );
    holds(&err, &[fix]);
    assert!(!out.exists(), "refused before the run");
    for (input, line) in [(&json, 1), (&csv, 2)] {
        let job = dir.join("job.toml");
        write(&job, format!(
                "query = \"SELECT v INTO o FROM r TIMESTAMP BY ts\"\n[inputs.r]\npath = \"{}\"\n[outputs.o]\npath = \"{}\"\n",
                s(input),
                s(&out)
            ));
        let (code, _, err) = cli(&["job", s(&job)]);
        assert_eq!(code, EXIT_USAGE, "{err}");
        holds(
            &err,
            &[&format!("{}:{line}: the time field `ts`", s(input)), fix],
        );
        assert!(!out.exists(), "refused before the run");
    }
    refused(&["pipe", "-i", s(&csv), "--csv", "ts", "-o", s(&out)], fix);
    assert!(!out.exists(), "refused before the run");
}

/// Declared, the same numbers read as what they count: epoch-ms puts the readings 75 s
/// apart on 1 May 2024, in two one-minute windows.
#[test]
fn a_declared_unit_reads_numbers_as_it_says() {
    let dir = temp_dir("times-declared");
    let (json, _) = readings(&dir);
    let out = dir.join("out.jsonl");
    let (code, _, err) = shell(&format!(
        "query 'SELECT COUNT(*) AS n FROM r TIMESTAMP BY ts GROUP BY TumblingWindow(minute, 1)' \
         --input r={} --time-format epoch-ms --output {}",
        s(&json),
        s(&out),
    ));
    assert_eq!(code, EXIT_OK, "{err}");
    let written = std::fs::read_to_string(&out).expect("written");
    let windows: Vec<&str> = written.lines().collect();
    assert_eq!(
        windows,
        [
            // The reading at 12:00:00 is in the window ending then (Stream Analytics').
            "{\"time\":1714564800000,\"n\":1}",
            "{\"time\":1714564920000,\"n\":1}",
        ],
        "{written}"
    );
}

/// A time written without an offset is read at the zone the input declares (`zone=-08:00`
/// on `query`, `zone = "-08:00"` in a job), in JSON lines and CSV alike; without one it is
/// malformed (counted, and the run fails), never read as UTC; a zone for epoch numbers, or
/// one that is not an offset, is refused.
#[test]
fn a_time_without_an_offset_is_read_at_the_declared_zone() {
    let dir = temp_dir("times-zone");
    let (json, csv) = (dir.join("local.jsonl"), dir.join("local.csv"));
    write(&json, "{\"t\":\"2014-01-01T06:01:00\",\"v\":1}\n");
    write(&csv, "t,v\n2014-01-01T06:01:00,1\n");
    let query = "SELECT v, System.Timestamp() AS at FROM r TIMESTAMP BY t";
    for file in [&json, &csv] {
        let out = dir.join("out.jsonl");
        let (code, _, err) = shell(&format!(
            "query '{}' --input r={},zone=-08:00 --output {}",
            query,
            s(file),
            s(&out),
        ));
        assert_eq!(code, EXIT_OK, "{err}");
        let text = std::fs::read_to_string(&out).expect("the output");
        holds(&text, &["\"at\":\"2014-01-01T14:01:00Z\""]);
        let (code, _, err) = cli(&["query", query, "--input", &format!("r={}", s(file))]);
        assert_ne!(code, EXIT_OK, "{err}");
        holds(&err, &["expected `Z` or a `+HH:MM`/`-HH:MM` offset"]);
    }
    refuses(
        &format!("query '{}' --input r={},zone=PST", query, s(&json),),
        "`PST` is not a UTC offset",
    );
    refuses(
        &format!(
            "query '{}' --input r={},zone=+01:00 --time-format epoch-ms",
            query,
            s(&json),
        ),
        "epoch and tick times count from the epoch in UTC",
    );
    let job = dir.join("job.toml");
    write(&job, format!(
            "query = \"SELECT v, System.Timestamp() AS at INTO out FROM r TIMESTAMP BY t\"\n[inputs.r]\npath = \"{}\"\nzone = \"+01:00\"\n[outputs.out]\npath = \"{}\"\ntime_format = \"rfc3339\"\n",
            s(&json),
            s(&dir.join("job-out.jsonl"))
        ));
    let (code, _, err) = cli(&["job", s(&job)]);
    assert_eq!(code, EXIT_OK, "{err}");
    let text = std::fs::read_to_string(dir.join("job-out.jsonl")).expect("the output");
    holds(&text, &["2014-01-01T05:01:00Z"]);
}
