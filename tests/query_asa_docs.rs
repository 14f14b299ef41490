//! Stream Analytics' worked examples (`tests/asa-docs/`, one folder each: the page's input,
//! its query as written, its output table) run through `punctual query`: each gives the
//! page's output, its rows compared as a multiset on the page's columns, times compared as
//! times.

use std::path::{Path, PathBuf};

use punctual::adapters::line::{utc_offset, TimeFormat};

use super::cli_common::*;

/// A value as compared: a time when it reads as one (a time without an offset at `zone`,
/// seconds east of UTC, when the example gives its input one), a number by its value (`70`
/// is `70.0`), a record by its fields so compared, the value otherwise.
fn normal(v: &serde_json::Value, zone: Option<i32>) -> serde_json::Value {
    if let Some(x) = v.as_f64() {
        return serde_json::json!({ "number": x });
    }
    if let Some(record) = v.as_object() {
        let fields = record.iter().map(|(k, v)| (k.clone(), normal(v, zone)));
        return serde_json::Value::Object(fields.collect());
    }
    let format = zone.map_or(TimeFormat::Rfc3339, TimeFormat::Rfc3339At);
    match v.as_str().map(|s| format.read_text(s)) {
        Some(Ok(t)) => serde_json::json!({ "time ticks": t.ticks() }),
        _ => v.clone(),
    }
}

/// Whether `actual` has every column of `expected`, equal; column names match in any ASCII
/// case, as Stream Analytics' names do (a page's table may head `TollID` the column its
/// query names `TollId`).
fn matches(expected: &serde_json::Value, actual: &serde_json::Value, zone: Option<i32>) -> bool {
    let column = |k: &str| {
        let row = actual.as_object()?;
        row.get(k).or_else(|| {
            row.iter()
                .find(|(name, _)| name.eq_ignore_ascii_case(k))
                .map(|(_, v)| v)
        })
    };
    expected.as_object().is_some_and(|columns| {
        columns
            .iter()
            .all(|(k, v)| column(k).is_some_and(|a| normal(a, zone) == normal(v, zone)))
    })
}

fn lines(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// The name the query reads its input by: the word after its first `FROM`.
fn input_name(query: &str) -> String {
    let words: Vec<&str> = query.split_whitespace().collect();
    words
        .iter()
        .position(|w| w.eq_ignore_ascii_case("from"))
        .and_then(|i| words.get(i + 1))
        .map_or_else(|| "Input".to_owned(), |w| (*w).to_owned())
}

/// The user-defined functions of the pages' examples, in Rust: `Hex2Int` is the
/// query-patterns page's JavaScript `parseInt(hexValue, 16)`.
fn docs_functions() -> punctual::sql::Functions {
    use punctual::rows::Value;
    punctual::sql::Functions::new().function("Hex2Int", |args: &[Value]| match args.first() {
        Some(Value::Str(hex)) => i64::from_str_radix(hex, 16)
            .map(Value::Int)
            .map_err(|e| format!("`{hex}` is not hexadecimal: {e}")),
        _ => Ok(Value::Null),
    })
}

/// Runs one example; what differs from the page, if anything.
fn run(dir: &Path) -> Result<(), String> {
    let query = std::fs::read_to_string(dir.join("query.asaql")).map_err(|e| e.to_string())?;
    let example = std::fs::read_to_string(dir.join("example.toml")).map_err(|e| e.to_string())?;
    let out_of_order = example
        .lines()
        .find_map(|l| l.strip_prefix("out_of_order = "))
        .map_or("0s", |v| v.trim_matches('"'))
        .to_owned();
    // An input whose events the page times by their arrival: the field that holds it.
    let option = |key: &str| {
        example
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key} = ")))
            .map_or(String::new(), |v| format!(",{key}={}", v.trim_matches('"')))
    };
    // The field of each event's arrival time, and the late-arrival tolerance, where the
    // page's example turns on them.
    let (time, arrival, late) = (option("time"), option("arrival"), option("late"));
    // Where the input's times without an offset are (`zone = "-08:00"`).
    let zone_option = option("zone");
    let zone = match zone_option.strip_prefix(",zone=") {
        Some(z) => Some(utc_offset(z)?),
        None => None,
    };
    let scratch = temp_dir("asa-docs");
    let input = format!(
        "{}={},out_of_order={out_of_order}{time}{arrival}{late}{zone_option}",
        input_name(&query),
        s(&dir.join("input.jsonl"))
    );
    // One output (`expected.jsonl`), or several (`expected-NAME.jsonl`, each output NAME).
    let mut outputs: Vec<(Option<String>, PathBuf)> = std::fs::read_dir(dir)
        .map_err(|e| e.to_string())?
        .flatten()
        .filter_map(|f| {
            let name = f.file_name().to_string_lossy().into_owned();
            let output = name
                .strip_prefix("expected-")?
                .strip_suffix(".jsonl")?
                .to_owned();
            Some((Some(output), f.path()))
        })
        .collect();
    if outputs.is_empty() {
        outputs.push((None, dir.join("expected.jsonl")));
    }
    outputs.sort();
    let mut args = vec!["query".to_owned(), query, "--input".to_owned(), input];
    // A second input of reference data: `reference-NAME.jsonl`, records without a time.
    for f in std::fs::read_dir(dir).map_err(|e| e.to_string())?.flatten() {
        let file = f.file_name().to_string_lossy().into_owned();
        if let Some(name) = file
            .strip_prefix("reference-")
            .and_then(|n| n.strip_suffix(".jsonl"))
        {
            args.push("--input".to_owned());
            args.push(format!("{name}={}", s(&f.path())));
        }
    }
    let mut written = Vec::new();
    for (name, expected) in &outputs {
        let file = scratch.join(format!("out-{}.jsonl", name.as_deref().unwrap_or("")));
        args.push("--output".to_owned());
        args.push(match name {
            Some(n) => format!("{n}={}", s(&file)),
            None => s(&file).to_owned(),
        });
        written.push((file, expected.clone()));
    }
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = punctual::cli::main_with(&args, &mut out, &mut err, &docs_functions());
    let err = String::from_utf8_lossy(&err);
    // An example whose query as written has a slip: refused, with what is wrong.
    if let Some(says) = example
        .lines()
        .find_map(|l| l.strip_prefix("refused = "))
        .map(|v| v.trim_matches('"'))
    {
        return match (code, err.contains(says)) {
            (punctual::cli::EXIT_USAGE, true) => Ok(()),
            _ => Err(format!(
                "expected a refusal saying `{says}`; exit {code}: {err}"
            )),
        };
    }
    if code != 0 {
        return Err(format!("exit {code}: {err}"));
    }
    let mut problems = Vec::new();
    for (file, expected) in written {
        let mut got = lines(&file);
        // A page that shows the first rows of a longer output: those rows.
        if let Some(n) = option("first_rows").strip_prefix(",first_rows=") {
            got.truncate(n.parse().map_err(|_| format!("first_rows = {n}"))?);
        }
        if let Err(e) = same_rows(&lines(&expected), &got, zone) {
            problems.push(format!("{}: {e}", expected.display()));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n  "))
    }
}

/// Whether `got` holds the rows of `want`, as a multiset, on `want`'s columns.
fn same_rows(
    want: &[serde_json::Value],
    got: &[serde_json::Value],
    zone: Option<i32>,
) -> Result<(), String> {
    let mut used = vec![false; got.len()];
    let mut missing = Vec::new();
    for w in want {
        match (0..got.len()).find(|&i| !used[i] && matches(w, &got[i], zone)) {
            Some(i) => used[i] = true,
            None => missing.push(w.to_string()),
        }
    }
    let extra: Vec<String> = got
        .iter()
        .zip(&used)
        .filter(|(_, u)| !**u)
        .map(|(g, _)| g.to_string())
        .collect();
    if missing.is_empty() && extra.is_empty() {
        Ok(())
    } else {
        Err(format!("missing {missing:?}\n  unexpected {extra:?}"))
    }
}

#[test]
fn the_worked_examples_give_the_pages_outputs() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("asa-docs");
    let mut dirs: Vec<PathBuf> = Vec::new();
    for page in std::fs::read_dir(&root).expect("the examples").flatten() {
        if page.path().is_dir() {
            for example in std::fs::read_dir(page.path()).expect("a page").flatten() {
                dirs.push(example.path());
            }
        }
    }
    dirs.sort();
    assert!(dirs.len() >= 36, "{} examples", dirs.len());
    let failures: Vec<String> = dirs
        .iter()
        .filter_map(|d| run(d).err().map(|e| format!("{}: {e}", d.display())))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The comparison fails when it should: a row missing, a value different, a time different
/// (also inside a record, and at the input's zone).
#[test]
fn the_comparison_fails_when_it_should() {
    let w = serde_json::json!({"Make": "Honda", "Time": "2015-01-01T00:00:02.0000000Z"});
    let same = |a: serde_json::Value| matches(&w, &a, None);
    assert!(same(
        serde_json::json!({"Make": "Honda", "Time": "2015-01-01T00:00:02Z", "start": 1})
    ));
    assert!(same(
        serde_json::json!({"make": "Honda", "time": "2015-01-01T00:00:02Z"})
    ));
    assert!(!same(
        serde_json::json!({"Make": "Honda", "Time": "2015-01-01T00:00:03Z"})
    ));
    assert!(!same(
        serde_json::json!({"Make": "Ford", "Time": "2015-01-01T00:00:02Z"})
    ));
    assert!(!same(serde_json::json!({"Time": "2015-01-01T00:00:02Z"})));
    let nested = serde_json::json!({"Last": {"Time": "2014-01-01T14:01:00.000Z", "Value": 1}});
    let local = serde_json::json!({"Last": {"Time": "2014-01-01T06:01:00", "Value": 1}});
    assert!(matches(&nested, &local, Some(-8 * 3600)));
    assert!(!matches(&nested, &local, Some(0)));
    assert!(!matches(&nested, &local, None));
    let other = serde_json::json!({"Last": {"Time": "2014-01-01T06:01:00", "Value": 2}});
    assert!(!matches(&nested, &other, Some(-8 * 3600)));
}
