//! Arrival times read from a JSON-lines file (`arrival=FIELD`): Stream Analytics' late-arrival
//! and out-of-order tolerances and `TIMESTAMP BY ... OVER` substreams over a file, as over a
//! broker's timestamps.

use super::cli_common::*;

/// The event-ordering page's five events (late 15 s, out of order 8 s) as a file.
fn events(dir: &std::path::Path) -> std::path::PathBuf {
    let input = dir.join("events.jsonl");
    let rows = [
        (1, "00:10:00", "00:10:40"),
        (2, "00:10:30", "00:10:41"),
        (3, "00:10:42", "00:10:42"),
        (4, "00:10:38", "00:10:43"),
        (5, "00:10:35", "00:10:45"),
    ];
    let text: Vec<String> = rows
        .iter()
        .map(|(n, t, a)| {
            format!(r#"{{"n": {n}, "t": "2019-03-12T{t}Z", "arrived": "2019-03-12T{a}Z"}}"#)
        })
        .collect();
    write(&input, text.join("\n"));
    input
}

fn rows(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// Adjust (the default): the event 40 s late takes its arrival minus 15 s, counted as late;
/// the others keep their times. Drop: it is dropped and counted, and the rest are the same.
#[test]
fn late_arrivals_are_adjusted_or_dropped_and_counted() {
    let dir = temp_dir("query-arrival");
    let input = events(&dir);
    let query = "SELECT n, System.Timestamp() AS at FROM Input TIMESTAMP BY t";
    let output = dir.join("out.jsonl");
    let run = |policy: &str| {
        let (code, _, err) = shell(&format!(
            "query '{}' --input Input={},arrival=arrived,late=15s,out_of_order=8s,policy={policy} \
             --output {}",
            query,
            s(&input),
            s(&output),
        ));
        assert_eq!(code, 0, "{err}");
        (
            rows(&std::fs::read_to_string(&output).expect("the output")),
            err,
        )
    };
    let (adjusted, err) = run("adjust");
    let at = |rows: &[serde_json::Value], n: i64| {
        rows.iter()
            .find(|r| r["n"] == n)
            .map(|r| r["at"].as_str().expect("a time").to_owned())
    };
    assert_eq!(at(&adjusted, 1).as_deref(), Some("2019-03-12T00:10:25Z"));
    assert_eq!(at(&adjusted, 5).as_deref(), Some("2019-03-12T00:10:35Z"));
    assert_eq!(adjusted.len(), 5);
    holds(&err, &["late=1", "dropped=0"]);
    let (dropped, err) = run("drop");
    assert_eq!(at(&dropped, 1), None);
    assert_eq!(dropped.len(), 4);
    holds(&err, &["dropped=1", "late=1"]);
}

/// Substreams: each toll's clock judged on its own, so one 10 s behind the others keeps its
/// events' times (one watermark would have moved them).
#[test]
fn substreams_keep_each_keys_own_clock() {
    let dir = temp_dir("query-substreams");
    let input = dir.join("tolls.jsonl");
    // Toll 2 is 10 s behind toll 1: each event arrives at toll 1's clock.
    let lines = [
        (1, 1, 1),
        (1, 6, 6),
        (2, 1, 11),
        (2, 3, 13),
        (1, 12, 12),
        (2, 8, 18),
    ];
    let text: Vec<String> = lines
        .iter()
        .map(|(toll, t, a)| {
            format!(
                r#"{{"toll": {toll}, "t": "2026-12-06T00:00:{t:02}Z", "a": "2026-12-06T00:00:{a:02}Z"}}"#
            )
        })
        .collect();
    write(&input, text.join("\n"));
    let count = |over: &str| {
        let query = format!(
            "SELECT Toll, COUNT(*) AS n FROM Input TIMESTAMP BY t {over} GROUP BY Toll, TumblingWindow(second, 5)"
        );
        let output = dir.join("out.jsonl");
        let (code, _, err) = shell(&format!(
            "query '{}' --input Input={},arrival=a,late=1m,out_of_order=0s --output {}",
            &query,
            s(&input),
            s(&output),
        ));
        assert_eq!(code, 0, "{err}");
        let out = std::fs::read_to_string(&output).expect("the output");
        let mut got: Vec<(i64, String, i64)> = rows(&out)
            .iter()
            .map(|r| {
                let toll = r["Toll"].as_i64().expect("a toll");
                let end = r["time"].as_str().expect("a time").to_owned();
                (toll, end, r["n"].as_i64().expect("a count"))
            })
            .collect();
        got.sort();
        (got, err)
    };
    let (by_toll, err) = count("OVER Toll");
    let at = |s: u32| format!("2026-12-06T00:00:{s:02}Z");
    assert_eq!(
        by_toll,
        vec![
            (1, at(5), 1),
            (1, at(10), 1),
            (1, at(15), 1),
            (2, at(5), 2),
            (2, at(10), 1)
        ],
        "{err}"
    );
    holds(&err, &["out_of_order=0"]);
    // One watermark for all: toll 2's events are behind toll 1's and are moved up.
    let (together, err) = count("");
    assert_ne!(together, by_toll);
    assert!(!err.contains("out_of_order=0 "), "{err}");
}

/// What `arrival` needs, refused with the fix: a JSON-lines file, a time field, tolerances;
/// `late` without arrival times; OVER without them.
#[test]
fn arrival_times_are_refused_where_they_cannot_work() {
    let dir = temp_dir("query-arrival-refused");
    let input = events(&dir);
    let csv = dir.join("events.csv");
    write(
        &csv,
        "n,t,arrived\n1,2019-03-12T00:10:00Z,2019-03-12T00:10:40Z\n",
    );
    let query = "SELECT n FROM Input TIMESTAMP BY t";
    refuses(
        &format!(
            "query '{}' --input Input={},arrival=arrived",
            query,
            s(&csv),
        ),
        "reads each record's arrival time from a JSON-lines file",
    );
    refuses(
        &format!("query '{}' --input Input={},late=5s", query, s(&input),),
        "give arrival=FIELD too",
    );
    refuses(
        &format!(
            "query 'SELECT n FROM Input' --input Input={},arrival=arrived",
            s(&input),
        ),
        "name the time field",
    );
    refuses(
        &format!(
            "query 'SELECT n FROM Input TIMESTAMP BY t OVER n' --input Input={}",
            s(&input),
        ),
        "needs arrival times",
    );
    let job = dir.join("job.toml");
    write(&job, format!(
            "query = \"SELECT n INTO out FROM Input TIMESTAMP BY t\"\n[inputs.Input]\npath = \"{}\"\narrival = \"arrived\"\n[outputs.out]\npath = \"-\"\n",
            s(&input)
        ));
    refused(&["job", s(&job)], "add watermark = { out_of_order");
}

/// Flink's allowed lateness in a job: a 5 s tumbling count per device, 2 s of lateness over
/// an input read in arrival order whose CTI trails its newest reading by 2 s. Each count comes
/// as a start edge at the window's end (on time), a late reading revises it (the value in
/// force ends, the new one starts), the chain ends at the window's end plus 2 s; a reading
/// later than that is a dead letter; the summary counts the late readings taken.
#[test]
fn a_job_with_allowed_lateness_gives_counts_revises_them_and_sends_later_ones_aside() {
    let dir = temp_dir("job-lateness");
    let readings = [
        ("01", "a"),
        ("02", "b"),
        ("04", "a"),
        ("06", "a"),   // watermark 6 s: (0, 5] given
        ("04.5", "a"), // late within 2 s: a revision
        ("07", "b"),   // CTI 5 s: (0, 5] final
        ("04.9", "b"), // behind the CTI: a dead letter
    ];
    let lines: Vec<String> = readings
        .iter()
        .map(|(t, d)| format!(r#"{{"time":"2026-01-01T00:00:{t}Z","device":"{d}"}}"#))
        .collect();
    write(dir.join("readings.jsonl"), lines.join("\n"));
    let job = dir.join("job.toml");
    write(
        &job,
        r#"query = """
SELECT device, COUNT(*) AS n INTO counts FROM readings TIMESTAMP BY time
GROUP BY device, TumblingWindow(second, 5, AllowedLateness(second, 2))
"""
[inputs.readings]
path = "readings.jsonl"
order = "arrival"
generate = { every = 1, delay = "2s" }
policy = "drop"
[outputs.counts]
path = "counts.jsonl"
"#,
    );
    let (code, _, err) = cli(&["job", s(&job)]);
    assert_eq!(code, 0, "{err}");
    let out = std::fs::read_to_string(dir.join("counts.jsonl")).expect("the output");
    let first: Vec<String> = out
        .lines()
        .filter(|l| l.contains("00:00:05Z\",\"end\"") || l.contains("00:00:05.9999999Z\""))
        .map(str::to_owned)
        .collect();
    let row = |start: &str, end: &str, d: &str, n: u32| {
        let end = if end == "null" {
            end.to_owned()
        } else {
            format!("\"2026-01-01T00:00:{end}Z\"")
        };
        format!(r#"{{"start":"2026-01-01T00:00:{start}Z","end":{end},"device":"{d}","n":{n}}}"#)
    };
    assert_eq!(
        first,
        [
            row("05", "null", "a", 2),
            row("05", "null", "b", 1),
            // 4.5 came under watermark 6 s: a's count is 3 from there (less the window's
            // last tick: the language's windows hold their end), final at 5 + 2 s.
            row("05", "05.9999999", "a", 2),
            row("05.9999999", "null", "a", 3),
            row("05.9999999", "07", "a", 3),
            row("05", "07", "b", 1),
        ]
    );
    holds(
        &err,
        &["on_time=5 late_accepted=1", "dropped=1", "dead letters: 1"],
    );
}
