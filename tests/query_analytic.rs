//! Stream Analytics' analytic functions through `punctual query`, as a user runs a query of
//! its documentation: records timed by `TIMESTAMP BY`, out of order in the file.

use super::cli_common::*;

#[test]
fn lag_runs_a_documented_query_as_written() {
    let dir = temp_dir("query-lag");
    let input = dir.join("cars.jsonl");
    // The second and third cars arrive out of order: LAG reads them in time order.
    write(
        &input,
        [
            r#"{"Make": "Honda", "LicensePlate": "ABC-123", "Time": "2015-01-01T00:00:01Z"}"#,
            r#"{"Make": "Toyota", "LicensePlate": "DEF-987", "Time": "2015-01-01T00:00:03Z"}"#,
            r#"{"Make": "Honda", "LicensePlate": "AAA-999", "Time": "2015-01-01T00:00:02Z"}"#,
            r#"{"Make": "Honda", "LicensePlate": "GHI-345", "Time": "2015-01-01T00:00:04Z"}"#,
        ]
        .join("\n"),
    );
    let output = dir.join("out.jsonl");
    let (code, _, err) = shell(&format!(
        "query 'SELECT Make, LicensePlate AS CurrentCarLicensePlate,
            LAG(LicensePlate, 1) OVER (LIMIT DURATION(second, 90)) AS FirstCarLicensePlate
         FROM Input TIMESTAMP BY Time
         WHERE LAG(Make, 1) OVER (LIMIT DURATION(second, 90)) = Make' \
         --input Input={},out_of_order=5s --output {}",
        s(&input),
        s(&output),
    ));
    assert_eq!(code, 0, "{err}");
    let out = std::fs::read_to_string(&output).expect("the output");
    let rows: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(rows.len(), 1, "{out}");
    assert_eq!(rows[0]["CurrentCarLicensePlate"], "AAA-999");
    assert_eq!(rows[0]["FirstCarLicensePlate"], "ABC-123");
    // A point's result: one time.
    assert_eq!(rows[0]["time"], "2015-01-01T00:00:02Z");
    assert!(rows[0].get("start").is_none(), "{out}");
}

/// A session window per user over clicks out of order in the file: each session's result at
/// its close, as one time.
#[test]
fn a_session_window_closes_each_users_session_after_the_timeout() {
    let dir = temp_dir("query-session");
    let input = dir.join("clicks.jsonl");
    write(
        &input,
        [
            r#"{"user": "ann", "at": "2026-01-01T10:00:00Z"}"#,
            r#"{"user": "bob", "at": "2026-01-01T10:04:00Z"}"#,
            r#"{"user": "ann", "at": "2026-01-01T10:03:00Z"}"#,
            r#"{"user": "ann", "at": "2026-01-01T10:20:00Z"}"#,
        ]
        .join("\n"),
    );
    let output = dir.join("out.jsonl");
    let (code, _, err) = shell(&format!(
        "query 'SELECT System.Timestamp() AS closed, user, COUNT(*) AS clicks
         FROM clicks TIMESTAMP BY at
         GROUP BY user, SessionWindow(minute, 5, 60) OVER (PARTITION BY user)' \
         --input clicks={},out_of_order=5m --output {}",
        s(&input),
        s(&output),
    ));
    assert_eq!(code, 0, "{err}");
    let out = std::fs::read_to_string(&output).expect("the output");
    let rows: Vec<(String, String, i64)> = out
        .lines()
        .map(|l| {
            let r: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            assert_eq!(r["time"], r["closed"], "{l}");
            let text = |f: &str| r[f].as_str().expect(f).to_owned();
            (
                text("closed"),
                text("user"),
                r["clicks"].as_i64().expect("n"),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("2026-01-01T10:08:00Z".to_owned(), "ann".to_owned(), 2),
            ("2026-01-01T10:09:00Z".to_owned(), "bob".to_owned(), 1),
            ("2026-01-01T10:25:00Z".to_owned(), "ann".to_owned(), 1),
        ]
    );
    holds(&err, &["adjusted=0"]);
}

/// "Count unique values" as the page writes it: `TIMESTAMP BY TIME` and `COUNT(DISTINCT
/// Make)` over records whose fields are `Time` and `Make` (names match in any case), and
/// the same over a CSV file whose header says `make,time`.
#[test]
fn a_documented_query_reads_fields_named_in_another_case() {
    let dir = temp_dir("query-any-case");
    let json = dir.join("input.jsonl");
    let records = [
        ("Honda", 1),
        ("Honda", 2),
        ("Toyota", 1),
        ("Toyota", 2),
        ("Toyota", 3),
    ];
    write(
        &json,
        records
            .iter()
            .map(|(make, s)| {
                format!(r#"{{"Make": "{make}", "Time": "2015-01-01T00:00:0{s}.0000000Z"}}"#)
            })
            .collect::<Vec<_>>()
            .join("\n"),
    );
    let csv = dir.join("input.csv");
    let mut text = String::from("make,time\n");
    for (make, s) in records {
        text.push_str(&format!("{make},2015-01-01T00:00:0{s}Z\n"));
    }
    write(&csv, text);
    for file in [&json, &csv] {
        let output = dir.join("out.jsonl");
        let (code, _, err) = shell(&format!(
            "query 'SELECT COUNT(DISTINCT Make) AS CountMake, System.TIMESTAMP() AS AsaTIME
             FROM Input TIMESTAMP BY TIME
             GROUP BY TumblingWindow(second, 2)' --input Input={},out_of_order=2s \
             --output {}",
            s(file),
            s(&output),
        ));
        assert_eq!(code, 0, "{err}");
        let rows: Vec<serde_json::Value> = std::fs::read_to_string(&output)
            .expect("the output")
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect();
        let got: Vec<(i64, &str)> = rows
            .iter()
            .map(|r| {
                (
                    r["CountMake"].as_i64().unwrap_or(-1),
                    r["AsaTIME"].as_str().unwrap_or(""),
                )
            })
            .collect();
        assert_eq!(
            got,
            [(2, "2015-01-01T00:00:02Z"), (1, "2015-01-01T00:00:04Z")],
            "{}",
            file.display()
        );
    }
}
