//! A job file calling user-defined functions and aggregates that the program running it
//! registered (`punctual::cli::main_with`), and the same job refused, with the reason, by a
//! program that did not register them.

use punctual::rows::Value;
use punctual::sql::{Functions, UserAggregate};

use super::cli_common::*;

/// The largest of the members' first argument, by its length as text.
struct Longest;

impl UserAggregate for Longest {
    fn init(&self) -> Value {
        Value::Null
    }
    fn accumulate(&self, state: &mut Value, args: &[Value]) {
        let len = |v: &Value| v.as_str().map_or(0, str::len);
        if let Some(v) = args.first() {
            if len(v) > len(state) {
                *state = v.clone();
            }
        }
    }
    fn result(&self, state: &Value) -> Value {
        state.clone()
    }
}

fn registered() -> Functions {
    Functions::new()
        .function("shout", |args: &[Value]| {
            Ok(args[0].as_str().map_or(Value::Null, |t| {
                Value::from(format!("{}!", t.to_uppercase()))
            }))
        })
        .aggregate("longest", Longest)
}

fn job(dir: &std::path::Path) -> std::path::PathBuf {
    let input = dir.join("words.jsonl");
    write(
        &input,
        [
            r#"{"at": "2026-01-01T00:00:01Z", "k": "a", "w": "hi"}"#,
            r#"{"at": "2026-01-01T00:00:02Z", "k": "a", "w": "hello"}"#,
            r#"{"at": "2026-01-01T00:00:03Z", "k": "b", "w": "yo"}"#,
        ]
        .join("\n"),
    );
    let file = dir.join("job.toml");
    write(
        &file,
        format!(
            r#"query = """
SELECT k, udf.shout(uda.longest(w)) AS loudest, COUNT(*) AS n
INTO out FROM words TIMESTAMP BY at
GROUP BY k, TumblingWindow(second, 10)
"""
[inputs.words]
path = "{}"
[outputs.out]
path = "{}"
"#,
            s(&input),
            s(&dir.join("out.jsonl"))
        ),
    );
    file
}

#[test]
fn a_job_calls_the_functions_its_program_registered() {
    let dir = temp_dir("job-functions");
    let file = job(&dir);
    let args = vec!["job".to_owned(), s(&file).to_owned()];
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = punctual::cli::main_with(&args, &mut out, &mut err, &registered());
    let err = String::from_utf8_lossy(&err);
    assert_eq!(code, 0, "{err}");
    let written = std::fs::read_to_string(dir.join("out.jsonl")).expect("the output");
    let mut rows: Vec<(String, String, i64)> = written
        .lines()
        .map(|l| {
            let r: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            let text = |f: &str| r[f].as_str().expect(f).to_owned();
            (text("k"), text("loudest"), r["n"].as_i64().expect("n"))
        })
        .collect();
    rows.sort();
    assert_eq!(
        rows,
        [
            ("a".to_owned(), "HELLO!".to_owned(), 2),
            ("b".to_owned(), "YO!".to_owned(), 1)
        ]
    );
}

#[test]
fn a_program_without_the_functions_refuses_the_job_with_the_reason() {
    let dir = temp_dir("job-no-functions");
    let file = job(&dir);
    let (code, _, err) = cli(&["job", s(&file)]);
    assert_ne!(code, 0);
    holds(
        &err,
        &["`udf.shout` is not a registered function", "main_with"],
    );
}
