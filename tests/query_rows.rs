//! What `query` and `job` write and keep, as a user of Stream Analytics expects: late
//! readings moved up to the CTI and counted (not dropped) unless asked; results as flat rows
//! without CTIs unless asked; CSV with its header first, every row the header's columns,
//! times in the chosen format.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use punctual::cli::{EXIT_OK, EXIT_USAGE};

use crate::cli_common::{cli, holds, refused, refuses, s, shell, temp_dir, write};

/// A folder of its own per call (tests run in parallel).
fn dir(name: &str) -> PathBuf {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    temp_dir(&format!("{name}-{}", RUNS.fetch_add(1, Ordering::Relaxed)))
}

/// 40 readings a quarter second apart, `device` `a` or `b`, each written up to 2 s after a
/// later one (the order of a real sensor log), as CSV; and how many were out of order.
fn readings(dir: &Path) -> (PathBuf, usize) {
    let mut rows: Vec<(i64, String)> = (0..40)
        .map(|i| {
            let ms = 250 * i;
            let device = if i % 2 == 0 { "a" } else { "b" };
            (
                ms,
                format!(
                    "2026-12-01T10:00:{:02}.{:03}Z,{device},{}",
                    ms / 1000,
                    ms % 1000,
                    20 + i % 7
                ),
            )
        })
        .collect();
    // Every fifth reading arrives after the two readings that follow it.
    for i in (0..38).step_by(5) {
        rows.swap(i, i + 1);
        rows.swap(i + 1, i + 2);
    }
    let mut highest = i64::MIN;
    let mut late = 0;
    for (ms, _) in &rows {
        if *ms < highest {
            late += 1;
        }
        highest = highest.max(*ms);
    }
    let path = dir.join("readings.csv");
    let lines: Vec<&str> = rows.iter().map(|(_, l)| l.as_str()).collect();
    write(
        &path,
        format!("time,device,celsius\n{}\n", lines.join("\n")),
    );
    (path, late)
}

const PER_DEVICE: &str = "SELECT device, COUNT(*) AS n FROM readings TIMESTAMP BY time \
                          GROUP BY device, TumblingWindow(second, 5)";

/// Runs `query` over the readings with `extra` arguments: exit code, output, stderr.
fn run(dir: &Path, query: &str, out: &str, extra: &[&str]) -> (u8, String, String) {
    let (input, _) = readings(dir);
    let output = dir.join(out);
    let readings = format!("readings={}", s(&input));
    let mut args = vec!["query", query, "--input", &readings, "--output", s(&output)];
    args.extend(extra);
    let (code, _, err) = cli(&args);
    (
        code,
        std::fs::read_to_string(&output).unwrap_or_default(),
        err,
    )
}

/// The sum of the `n` fields of JSON rows.
fn counted(written: &str) -> i64 {
    written
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["n"].as_i64())
        .sum()
}

/// Without a flag, a reading behind the CTI is moved up to it and counted as adjusted: every
/// reading is in a window (before, a fifth of them were dropped with exit code 0). `--policy
/// drop` drops them, counted; an `--out-of-order` tolerance wide enough keeps them in place.
#[test]
fn late_readings_are_adjusted_by_default() {
    let d = dir("rows-adjust");
    let (_, late) = readings(&d);
    assert!(late >= 8, "the readings have {late} out of order");
    let (code, written, err) = run(&d, PER_DEVICE, "out.jsonl", &[]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert_eq!(counted(&written), 40, "{written}");
    holds(&err, &[&format!("adjusted={late}"), " dropped=0 "]);
    let (code, written, err) = run(&d, PER_DEVICE, "drop.jsonl", &["--policy", "drop"]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert_eq!(counted(&written), 40 - late as i64, "{written}");
    holds(
        &err,
        &[
            &format!("dropped={late}"),
            &format!("dead letters: {late} (late {late})"),
        ],
    );
    let (code, written, err) = run(&d, PER_DEVICE, "tol.jsonl", &["--out-of-order", "1s"]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert_eq!(counted(&written), 40, "{written}");
    holds(&err, &[" adjusted=0 ", " dropped=0 "]);
    // The same per input, and the values named when they are wrong.
    let (input, _) = readings(&d);
    let per_input = format!("readings={},policy=drop", s(&input));
    let (code, _, err) = cli(&["query", PER_DEVICE, "--input", &per_input]);
    assert_eq!(code, EXIT_OK, "{err}");
    holds(&err, &[&format!("dropped={late}")]);
    let (code, _, err) = shell(&format!(
        "query '{}' --input '{}' --policy keep",
        PER_DEVICE, &per_input,
    ));
    assert_eq!(code, EXIT_USAGE);
    holds(
        &err,
        &[
            "invalid value 'keep' for '--policy <POLICY>'",
            "[possible values: adjust, drop]",
        ],
    );
}

/// Results are flat rows, the time first, and no CTIs unless `--with-ctis`; `--items` writes
/// the item form with its CTIs.
#[test]
fn results_are_flat_rows_with_ctis_only_when_asked() {
    let d = dir("rows-json");
    let (code, written, err) = run(&d, PER_DEVICE, "out.jsonl", &["--out-of-order", "1s"]);
    assert_eq!(code, EXIT_OK, "{err}");
    let lines: Vec<&str> = written.lines().collect();
    // a's reading at 10:00:00 closes the window ending then; two 5 s windows per device after.
    assert_eq!(lines.len(), 5, "{written}");
    assert!(
        lines.contains(&r#"{"time":"2026-12-01T10:00:05Z","device":"a","n":10}"#),
        "{written}"
    );
    assert!(!written.contains("cti"), "{written}");
    let (code, written, err) = run(&d, PER_DEVICE, "ctis.jsonl", &["--with-ctis"]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(written.ends_with("{\"cti\":\"inf\"}\n"), "{written}");
    assert_eq!(counted(&written), 40);
    let (code, written, err) = run(&d, PER_DEVICE, "items.jsonl", &["--items"]);
    assert_eq!(code, EXIT_OK, "{err}");
    holds(
        &written,
        &[r#"{"kind":"point","start":"2026-12-01T10:00:05Z","payload":{"device":"a","n":10}}"#],
    );
    assert!(
        written.ends_with("{\"kind\":\"cti\",\"time\":\"inf\"}\n"),
        "{written}"
    );
    let (code, _, err) = run(&d, PER_DEVICE, "both.jsonl", &["--items", "--with-ctis"]);
    assert_eq!(code, EXIT_USAGE, "{err}");
}

/// CSV out: the header first, then every row with as many columns as the header, times in
/// the chosen format (before: times in ticks whatever the format, the header after the first
/// CTIs, CTI rows shorter than the header).
#[test]
fn csv_output_has_its_header_first_and_every_row_its_columns() {
    let d = dir("rows-csv");
    let (code, written, err) = run(&d, PER_DEVICE, "out.csv", &[]);
    assert_eq!(code, EXIT_OK, "{err}");
    let lines: Vec<&str> = written.lines().collect();
    assert_eq!(lines[0], "time,device,n", "{written}");
    assert!(lines.contains(&"2026-12-01T10:00:05Z,a,10"), "{written}");
    assert_eq!(lines.len(), 5, "{written}");
    let (code, written, err) = run(
        &d,
        PER_DEVICE,
        "ctis.csv",
        &["--with-ctis", "--time-format", "epoch-ms"],
    );
    // The readings' times are RFC 3339 text, which epoch-ms refuses: the format is both ways.
    assert_ne!(code, EXIT_OK, "{written}");
    holds(&err, &["is not a number of milliseconds"]);
    // Times in epoch milliseconds both ways, CTIs in a `kind` column.
    let input = d.join("ms.csv");
    write(&input, "ts,device\n1000,a\n3000,b\n7000,a\n");
    let out = d.join("ms-out.csv");
    let (code, _, err) = shell(&format!(
        "query 'SELECT device, COUNT(*) AS n FROM r TIMESTAMP BY ts GROUP BY device, TumblingWindow(second, 5)' \
         --input r={} --time-format epoch-ms --with-ctis --output {}",
        s(&input),
        s(&out),
    ));
    assert_eq!(code, EXIT_OK, "{err}");
    let written = std::fs::read_to_string(&out).expect("written");
    let lines: Vec<&str> = written.lines().collect();
    assert_eq!(lines[0], "kind,time,device,n", "{written}");
    assert!(lines.iter().all(|l| l.split(',').count() == 4), "{written}");
    assert!(lines.contains(&"event,5000,a,1"), "{written}");
    assert!(lines.contains(&"cti,1000,,"), "{written}");
    assert_eq!(lines.last(), Some(&"cti,inf,,"), "{written}");
}

/// Intervals as rows: `start` and `end` columns, under the names a job file gives them.
#[test]
fn intervals_are_rows_with_their_start_and_end() {
    let d = dir("rows-intervals");
    write(d.join("spans.csv"), "from,to,what\n2026-12-01T10:00:00Z,2026-12-01T10:00:05Z,a\n2026-12-01T10:00:01Z,2026-12-01T10:00:02Z,b\n");
    let job = d.join("job.toml");
    write(&job, "query = \"SELECT what FROM spans\"\n[inputs.spans]\npath = \"spans.csv\"\ntime = \"from\"\nend = \"to\"\n\
         [outputs.output]\npath = \"out.csv\"\nstart_field = \"valid_from\"\nend_field = \"valid_to\"\n");
    let (code, _, err) = cli(&["job", s(&job)]);
    assert_eq!(code, EXIT_OK, "{err}");
    let written = std::fs::read_to_string(d.join("out.csv")).expect("written");
    assert_eq!(
        written,
        "valid_from,valid_to,what\n2026-12-01T10:00:00Z,2026-12-01T10:00:05Z,a\n2026-12-01T10:00:01Z,2026-12-01T10:00:02Z,b\n"
    );
    // Row settings with items are refused, naming why.
    write(&job, "query = \"SELECT what FROM spans\"\n[inputs.spans]\npath = \"spans.csv\"\ntime = \"from\"\nend = \"to\"\n\
         [outputs.output]\npath = \"out.csv\"\nlayout = \"items\"\nwith_ctis = true\n");
    refused(
        &["job", s(&job)],
        "items carry their CTIs and times already",
    );
}

/// `punctual explain JOB.toml` and `query --explain`: the plan before the run (each input with
/// how it is read and where its CTIs come from, each operator, each output), and after it
/// where the operators stood and what was adjusted or dropped (before: `explain` took case
/// folders only, "Not a directory").
#[test]
fn explain_shows_the_plan_and_what_the_run_did() {
    let sample = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../samples/alerts");
    let (code, _, err) = cli(&["explain", s(&sample.join("alerts-versions.toml"))]);
    assert_eq!(code, EXIT_OK, "{err}");
    for said in [
        "plan:",
        "input `readings`: ",
        "points at `ts` (epoch milliseconds); a CTI after every event, 3s behind the newest",
        "input `thresholds`: ",
        "a table of versions: each row valid from `valid_from` (RFC 3339) until the next row with the same device; reference data, read first; CTIs imported from `readings`",
        "  logical plan (after its rewrites):\n    output `output`\n",
        "join with reference data on r.device = t.device",
        "join `output` reads `readings`",
        "output `output`: standard output, flat rows",
        "after the run:",
        "join `output`: at the final CTI, 115 events out",
        "input `readings`: 300 in, 300 released",
    ] {
        assert!(err.contains(said), "{said}: {err}");
    }
    let d = dir("rows-explain");
    let (code, _, err) = run(&d, PER_DEVICE, "out.jsonl", &["--explain"]);
    assert_eq!(code, EXIT_OK, "{err}");
    let plan = err.find("plan:").expect("the plan");
    let after = err.find("after the run:").expect("what the run did");
    assert!(plan < after, "{err}");
    assert!(
        // A tumbling window is named so (it was "hopping window").
        err.contains("tumbling window `output` reads `readings`"),
        "{err}"
    );
    let (_, late) = readings(&d);
    holds(
        &err,
        &[&format!(
            "input `readings`: 40 in, 40 released, {late} adjusted"
        )],
    );
}

/// A job file's query error counts the file's lines (before: the query string's, so the line
/// named was not the one to fix).
#[test]
fn a_job_files_query_error_names_the_files_line() {
    let d = dir("rows-lines");
    let (input, _) = readings(&d);
    let job = d.join("job.toml");
    write(&job, format!(
            "# alerts\n\nquery = \"\"\"\nSELECT device\nFROM readings TIMESTAMP BY time WHERE celsiu > 25\n\"\"\"\n\
             [inputs.readings]\npath = {:?}\n[outputs.output]\npath = \"out.jsonl\"\n",
            s(&input)
        ));
    let (code, _, err) = cli(&["job", s(&job)]);
    assert_eq!(code, EXIT_USAGE, "{err}");
    holds(
        &err,
        &[&format!(
            "{}: line 5, column 39: `celsiu` is not a field",
            s(&job)
        )],
    );
    holds(
        &err,
        &["  | FROM readings TIMESTAMP BY time WHERE celsiu > 25"],
    );
    // On the command line, the query's own lines.
    refuses(
        &format!(
            "query 'SELECT device\nFROM readings TIMESTAMP BY time WHERE celsiu > 25' \
         --input readings={}",
            s(&input),
        ),
        "error: line 2, column 39: `celsiu`",
    );
}

/// A timeline of many events reads at any size: a lane of more than 40 events is drawn as
/// counts per column (one row per kind of mark), so 300 readings and their results make a
/// picture of a few hundred pixels (before: 1260 x 5810, one row per event), every event
/// counted once; a result's values sit on a halo, so no CTI line runs through them.
#[test]
fn a_timeline_of_many_events_summarises_its_lanes() {
    let d = dir("rows-timeline");
    let sample = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../samples/alerts");
    let svg_path = d.join("run.svg");
    let (code, _, err) = shell(&format!(
        "query 'SELECT device, celsius FROM readings TIMESTAMP BY time WHERE celsius > 28' \
         --input readings={} --output {} --timeline {}",
        s(&sample.join("readings.csv")),
        s(&d.join("out.jsonl")),
        s(&svg_path),
    ));
    assert_eq!(code, EXIT_OK, "{err}");
    let svg = std::fs::read_to_string(&svg_path).expect("written");
    let doc = roxmltree::Document::parse(&svg).expect("well-formed SVG");
    let root = doc.root_element();
    let height: f64 = root
        .attribute("height")
        .and_then(|h| h.parse().ok())
        .expect("a height");
    assert!(height < 400.0, "height {height}");
    let counted = |class: &str| -> usize {
        doc.descendants()
            .filter(|n| {
                n.attribute("class").is_some_and(|c| {
                    c.split(' ').any(|w| w == "summary") && c.split(' ').any(|w| w == class)
                })
            })
            .filter_map(|n| n.attribute("data-count")?.parse::<usize>().ok())
            .sum()
    };
    let results = std::fs::read_to_string(d.join("out.jsonl"))
        .expect("written")
        .lines()
        .count();
    // Every reading once (as released), every result once.
    assert_eq!(counted("event") - counted("output"), 300, "{svg}");
    assert!(results > 10, "{results}");
    assert_eq!(counted("output"), results);
    assert!(svg.contains("paint-order: stroke"), "values on a halo");
}

/// `pipe` takes the flags `query` and job files use for the same things: `--out-of-order`
/// (`--delay`) and `--policy adjust|drop` (its default stays `drop`, as item streams have it).
#[test]
fn pipe_takes_the_same_tolerance_and_policy_flags() {
    let d = dir("rows-pipe");
    let input = d.join("in.jsonl");
    write(&input, "{\"kind\":\"point\",\"start\":10,\"payload\":{\"v\":1}}\n{\"kind\":\"point\",\"start\":30,\"payload\":{\"v\":2}}\n{\"kind\":\"point\",\"start\":5,\"payload\":{\"v\":3}}\n");
    let out = d.join("out.jsonl");
    let pipe = |extra: &[&str]| {
        let mut args = vec![
            "pipe",
            "-i",
            s(&input),
            "-o",
            s(&out),
            "--time-format",
            "ticks",
        ];
        args.extend(extra);
        cli(&args)
    };
    let (code, _, err) = pipe(&["--out-of-order", "1"]);
    assert_eq!(code, EXIT_OK, "{err}");
    holds(&err, &[" dropped=1 "]);
    let (code, _, err) = pipe(&["--out-of-order", "1", "--policy", "adjust"]);
    assert_eq!(code, EXIT_OK, "{err}");
    holds(&err, &[" adjusted=1 ", " dropped=0 "]);
    let written = std::fs::read_to_string(&out).expect("written");
    holds(
        &written,
        &[r#"{"kind":"point","start":29,"payload":{"v":3}}"#],
    );
    let (code, _, err) = pipe(&["--policy", "adjust"]);
    assert_eq!(code, EXIT_USAGE, "{err}");
    holds(&err, &["--policy goes with --out-of-order"]);
}

/// A `DATEDIFF` join's results, inner and left outer, are points: each row is written with
/// one `time`, not as a one-tick `start` and `end`.
#[test]
fn datediff_join_results_are_written_as_points() {
    let dir = dir("datediff-points");
    let (clicks, buys) = (dir.join("clicks.jsonl"), dir.join("buys.jsonl"));
    write(&clicks, "{\"t\":\"2026-12-01T10:00:00Z\",\"user\":1}\n{\"t\":\"2026-12-01T10:00:05Z\",\"user\":2}\n");
    write(&buys, "{\"t\":\"2026-12-01T10:00:03Z\",\"user\":1}\n");
    for join in ["JOIN", "LEFT JOIN"] {
        let out = dir.join("joined.jsonl");
        let (code, _, err) = shell(&format!(
            "query 'SELECT c.user, b.user AS buyer FROM clicks c TIMESTAMP BY t \
             {join} buys b TIMESTAMP BY t ON c.user = b.user \
             AND DATEDIFF(second, c, b) BETWEEN 0 AND 10' \
             --input clicks={} --input buys={} --output {}",
            s(&clicks),
            s(&buys),
            s(&out),
        ));
        assert_eq!(code, EXIT_OK, "{err}");
        let written = std::fs::read_to_string(&out).expect("the output");
        assert!(!written.is_empty(), "{join}: no rows");
        for line in written.lines() {
            let row: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            assert!(
                row.get("time").is_some() && row.get("start").is_none(),
                "{join}: {line}"
            );
        }
    }
}
