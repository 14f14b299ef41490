//! Building the operator graph of a case from its `[[query.step]]` tables: the operators over
//! rows, their conditions and aggregates those of the query language
//! ([`punctual_sql::Condition`], [`punctual_sql::Aggregates`]).

use std::collections::HashMap;

use serde::Deserialize;

use punctual_core::ops::{AnyStream, GroupedBy, Join, Stream, WindowOutput, Windowed};
use punctual_core::{Ordered, Time, TimeSpan};
use punctual_rows::{Row, Value};
use punctual_sql::{Aggregates, Condition};

use super::case::StepSpec;
use super::CaseError;

#[derive(Deserialize)]
#[serde(tag = "op", rename_all = "snake_case", deny_unknown_fields)]
enum Step {
    Filter {
        name: String,
        input: String,
        field: String,
        cmp: String,
        value: toml::Value,
    },
    Union {
        name: String,
        inputs: Vec<String>,
    },
    Join {
        name: String,
        left: String,
        right: String,
        on: Option<String>,
    },
    Shift {
        name: String,
        input: String,
        by: TimeSpan,
    },
    Hopping(Window),
    Tumbling(Window),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AggFile {
    #[serde(rename = "fn")]
    func: String,
    field: Option<String>,
    #[serde(rename = "as")]
    name: String,
}

fn config(step: &str, message: impl std::fmt::Display) -> CaseError {
    CaseError::Config(format!("step `{step}`: {message}"))
}

/// A field's name as the query language writes it: `[name]`.
fn field_text(step: &str, field: &str) -> Result<String, CaseError> {
    if field.is_empty() || field.contains(']') {
        return Err(config(
            step,
            format!("field `{field}` cannot be named in a query"),
        ));
    }
    Ok(format!("[{field}]"))
}

/// A value of `case.toml` as the query language writes it.
fn literal(step: &str, v: &toml::Value) -> Result<String, CaseError> {
    Ok(match v {
        toml::Value::String(s) => format!("'{}'", s.replace('\'', "''")),
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(f) if f.is_finite() => format!("{f:?}"),
        toml::Value::Boolean(b) => b.to_string().to_uppercase(),
        other => {
            return Err(config(
                step,
                format!("value `{other}` is not a text, a number or a boolean"),
            ))
        }
    })
}

/// The step's condition `field cmp value` in the query language.
fn condition(
    step: &str,
    field: &str,
    cmp: &str,
    value: &toml::Value,
) -> Result<Condition, CaseError> {
    let op = match cmp {
        "==" => "=",
        "!=" => "<>",
        "<" | "<=" | ">" | ">=" => cmp,
        _ => {
            return Err(config(
                step,
                format!("cmp `{cmp}` is not one of == != < <= > >="),
            ))
        }
    };
    let text = format!(
        "{} {op} {}",
        field_text(step, field)?,
        literal(step, value)?
    );
    Condition::parse(&text).map_err(|e| config(step, e.show(&text)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Window {
    name: String,
    input: String,
    size: TimeSpan,
    /// A hopping window's hop (a tumbling window's is its size).
    hop: Option<TimeSpan>,
    #[serde(default)]
    alignment: TimeSpan,
    #[serde(default)]
    output: Option<String>,
    group_by: Option<String>,
    aggregates: Vec<AggFile>,
    #[serde(default, rename = "allowed_lateness")]
    lateness: TimeSpan,
}

/// Builds the steps of a case, in order, on its input streams (`stream_names` and `inputs` in
/// declaration order); returns the stream named `output`.
pub(super) fn build(
    stream_names: &[String],
    inputs: &[AnyStream<Row>],
    steps: &[StepSpec],
    output: &str,
) -> Result<AnyStream<Row>, CaseError> {
    let mut named: HashMap<String, AnyStream<Row>> = stream_names
        .iter()
        .cloned()
        .zip(inputs.iter().cloned())
        .collect();
    for spec in steps {
        let step: Step = toml::Value::Table(spec.table.clone())
            .try_into()
            .map_err(|e: toml::de::Error| config(&spec.name, e.message()))?;
        let get = |name: &str| {
            named.get(name).cloned().ok_or_else(|| {
                config(
                    &spec.name,
                    format!("`{name}` is no input stream or earlier step"),
                )
            })
        };
        let (name, stream) = step_stream(step, get)?;
        if named.contains_key(&name) {
            return Err(config(
                &name,
                "a stream or step of that name exists already",
            ));
        }
        let stream = match stream {
            AnyStream::Ordered(s) => AnyStream::from(s.named(name.clone())),
            AnyStream::Arrival(s) => AnyStream::from(s.named(name.clone())),
        };
        named.insert(name, stream);
    }
    named
        .get(output)
        .cloned()
        .ok_or_else(|| CaseError::Config(format!("query output `{output}` is no stream or step")))
}

/// One step's name and stream, its inputs found by `get`. Filters and windows take either
/// order (a window with allowed lateness gives an unordered stream); the other steps sort
/// their inputs.
fn step_stream(
    step: Step,
    get: impl Fn(&str) -> Result<AnyStream<Row>, CaseError>,
) -> Result<(String, AnyStream<Row>), CaseError> {
    Ok(match step {
        Step::Filter {
            name,
            input,
            field,
            cmp,
            value,
        } => {
            let condition = condition(&name, &field, &cmp, &value)?;
            (name, condition.filter(get(&input)?))
        }
        Step::Union { name, inputs } => {
            let streams = inputs
                .iter()
                .map(|i| get(i).map(|s| s.ordered()))
                .collect::<Result<Vec<_>, _>>()?;
            let Some((first, rest)) = streams.split_first() else {
                return Err(config(&name, "a union needs at least one input"));
            };
            let rest: Vec<&Stream<Row>> = rest.iter().collect();
            (name, AnyStream::from(first.union(&rest)))
        }
        Step::Join {
            name,
            left,
            right,
            on,
        } => {
            let joined = join(&get(&left)?.ordered(), &get(&right)?.ordered(), on);
            (name, AnyStream::from(joined))
        }
        Step::Shift { name, input, by } => {
            (name, AnyStream::from(get(&input)?.ordered().shift(by)))
        }
        Step::Hopping(w) => {
            let hop = w
                .hop
                .ok_or_else(|| config(&w.name, "a hopping window needs `hop`"))?;
            window(&get(&w.input)?, w, hop)?
        }
        Step::Tumbling(w) => {
            if w.hop.is_some() {
                return Err(config(
                    &w.name,
                    "a tumbling window takes no `hop` (it is its size)",
                ));
            }
            let size = w.size;
            window(&get(&w.input)?, w, size)?
        }
    })
}

/// The join of two streams, on a field (events without it match nothing) or on time alone;
/// each result is a row of the two as `left` and `right`.
fn join(l: &Stream<Row>, r: &Stream<Row>, on: Option<String>) -> Stream<Row> {
    let combine = |a: &Row, b: &Row| Row::new().with("left", a.clone()).with("right", b.clone());
    match on {
        Some(field) => {
            let (f1, f2) = (field.clone(), field.clone());
            l.apply_binary(
                r,
                Join::<_, _, _, _, _, _, _, Ordered>::new(
                    move |a: &Row| a.get(&f1).cloned(),
                    move |b: &Row| b.get(&f2).cloned(),
                    move |a: &Row, b: &Row| a.get(&field).is_some().then(|| combine(a, b)),
                ),
            )
        }
        None => l.join(r, combine),
    }
}

fn window(
    input: &AnyStream<Row>,
    w: Window,
    hop: TimeSpan,
) -> Result<(String, AnyStream<Row>), CaseError> {
    if w.size.ticks() <= 0 || hop.ticks() <= 0 {
        return Err(config(&w.name, "size and hop must be positive"));
    }
    if w.lateness.ticks() < 0 {
        return Err(config(&w.name, "allowed_lateness cannot be negative"));
    }
    let output = match w.output.as_deref() {
        None | Some("point_at_end") => WindowOutput::PointAtEnd,
        Some("window") => WindowOutput::Window,
        Some(other) => {
            return Err(config(
                &w.name,
                format!("output `{other}` is not `point_at_end` or `window`"),
            ))
        }
    };
    let aggs = aggregates(&w.name, &w.aggregates)?;
    let late = w.lateness > TimeSpan::ZERO;
    let stream = match aggs.gate(input.clone()) {
        AnyStream::Ordered(_) if late => {
            return Err(config(
                &w.name,
                "allowed_lateness needs an input read in arrival order (`order = \"arrival\"` on its stream)",
            ))
        }
        AnyStream::Ordered(s) => {
            let windows = grouped(&s, &w, hop, output);
            windows.aggregate_into(aggs, make(&w)).keep_ok().into()
        }
        AnyStream::Arrival(s) if late => {
            let windows = grouped(&s, &w, hop, output).allowed_lateness(w.lateness);
            windows.aggregate_into(aggs, make(&w)).keep_ok().into()
        }
        AnyStream::Arrival(s) => {
            let windows = grouped(&s, &w, hop, output);
            windows.aggregate_into(aggs, make(&w)).keep_ok().into()
        }
    };
    Ok((w.name, stream))
}

/// The windows of `w` over `input`, by its group field (or one group).
fn grouped<O: punctual_core::Order>(
    input: &Stream<Row, O>,
    w: &Window,
    hop: TimeSpan,
    output: WindowOutput,
) -> Windowed<Row, GroupedBy<impl Fn(&Row) -> Value + Send + 'static>, O> {
    let key_field = w.group_by.clone();
    input
        .hopping_window(w.size, hop)
        .alignment(Time::EPOCH + w.alignment)
        .output(output)
        .group_by(move |r: &Row| match &key_field {
            Some(f) => r.get(f).cloned().unwrap_or(Value::Null),
            None => Value::Null,
        })
}

/// A result row of `w`: its group field (if any) and its aggregates.
fn make(
    w: &Window,
) -> impl Fn(&Value, Result<Row, String>) -> Result<Row, String> + Send + 'static {
    let field = w.group_by.clone();
    move |k: &Value, values: Result<Row, String>| {
        let values = values?;
        Ok(match &field {
            Some(field) => {
                let mut row = Row::new().with(field.clone(), k.clone());
                row.extend(&values);
                row
            }
            None => values,
        })
    }
}

/// A window's aggregates (`count`, `sum`, `min`, `max`, `avg` of a field, each with its
/// name) as the query language's.
fn aggregates(step: &str, files: &[AggFile]) -> Result<Aggregates, CaseError> {
    let mut texts = Vec::new();
    for a in files {
        let func = match a.func.as_str() {
            "count" | "sum" | "min" | "max" | "avg" => a.func.to_uppercase(),
            other => {
                return Err(config(
                    step,
                    format!("aggregate fn `{other}` is not count, sum, min, max or avg"),
                ))
            }
        };
        let arg = match (&a.field, func.as_str()) {
            (_, "COUNT") => "*".to_owned(),
            (Some(field), _) => field_text(step, field)?,
            (None, _) => {
                return Err(config(
                    step,
                    format!("aggregate `{}` needs a `field`", a.func),
                ))
            }
        };
        texts.push((format!("{func}({arg})"), a.name.as_str()));
    }
    let items: Vec<(&str, &str)> = texts.iter().map(|(t, n)| (t.as_str(), *n)).collect();
    Aggregates::parse(&items).map_err(|e| config(step, e.to_string()))
}
