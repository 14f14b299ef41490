//! Building the operator graph of a case from its `[[query.step]]` tables, with the untyped
//! (row) forms of the operators.

use std::collections::HashMap;

use serde::Deserialize;

use punctual_core::ops::{Join, Stream, WindowOutput};
use punctual_core::{Ordered, Time, TimeSpan};
use punctual_rows::{Cmp, RowAggFn, RowAggregates, RowPredicate};
use punctual_rows::{Row, Value};

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
    Hopping {
        name: String,
        input: String,
        size: TimeSpan,
        hop: TimeSpan,
        #[serde(default)]
        alignment: TimeSpan,
        #[serde(default)]
        output: Option<String>,
        group_by: Option<String>,
        aggregates: Vec<AggFile>,
    },
    Tumbling {
        name: String,
        input: String,
        size: TimeSpan,
        #[serde(default)]
        alignment: TimeSpan,
        #[serde(default)]
        output: Option<String>,
        group_by: Option<String>,
        aggregates: Vec<AggFile>,
    },
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

fn to_value(v: toml::Value) -> Value {
    serde_json::to_value(v)
        .map(Value::from_json)
        .unwrap_or(Value::Null)
}

struct Window {
    name: String,
    size: TimeSpan,
    hop: TimeSpan,
    alignment: TimeSpan,
    output: Option<String>,
    group_by: Option<String>,
    aggregates: Vec<AggFile>,
}

/// Builds the steps of a case, in order, on its input streams (`stream_names` and `inputs` in
/// declaration order); returns the stream named `output`.
pub(super) fn build(
    stream_names: &[String],
    inputs: &[Stream<Row>],
    steps: &[StepSpec],
    output: &str,
) -> Result<Stream<Row>, CaseError> {
    let mut named: HashMap<String, Stream<Row>> = stream_names
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
        let stream = stream.named(name.clone());
        named.insert(name, stream);
    }
    named
        .get(output)
        .cloned()
        .ok_or_else(|| CaseError::Config(format!("query output `{output}` is no stream or step")))
}

/// One step's name and stream, its inputs found by `get`.
fn step_stream(
    step: Step,
    get: impl Fn(&str) -> Result<Stream<Row>, CaseError>,
) -> Result<(String, Stream<Row>), CaseError> {
    Ok(match step {
        Step::Filter {
            name,
            input,
            field,
            cmp,
            value,
        } => {
            let cmp = Cmp::parse(&cmp).ok_or_else(|| {
                config(&name, format!("cmp `{cmp}` is not one of == != < <= > >="))
            })?;
            let predicate = RowPredicate::new(field, cmp, to_value(value));
            (name, get(&input)?.filter(move |r| predicate.eval(r)))
        }
        Step::Union { name, inputs } => {
            let streams = inputs
                .iter()
                .map(|i| get(i))
                .collect::<Result<Vec<_>, _>>()?;
            let Some((first, rest)) = streams.split_first() else {
                return Err(config(&name, "a union needs at least one input"));
            };
            let rest: Vec<&Stream<Row>> = rest.iter().collect();
            (name, first.union(&rest))
        }
        Step::Join {
            name,
            left,
            right,
            on,
        } => {
            let joined = join(&get(&left)?, &get(&right)?, on);
            (name, joined)
        }
        Step::Shift { name, input, by } => (name, get(&input)?.shift(by)),
        Step::Hopping {
            name,
            input,
            size,
            hop,
            alignment,
            output,
            group_by,
            aggregates,
        } => window(
            &get(&input)?,
            Window {
                name,
                size,
                hop,
                alignment,
                output,
                group_by,
                aggregates,
            },
        )?,
        Step::Tumbling {
            name,
            input,
            size,
            alignment,
            output,
            group_by,
            aggregates,
        } => window(
            &get(&input)?,
            Window {
                name,
                size,
                hop: size,
                alignment,
                output,
                group_by,
                aggregates,
            },
        )?,
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

fn window(input: &Stream<Row>, w: Window) -> Result<(String, Stream<Row>), CaseError> {
    if w.size.ticks() <= 0 || w.hop.ticks() <= 0 {
        return Err(config(&w.name, "size and hop must be positive"));
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
    let mut specs = Vec::new();
    for a in w.aggregates {
        let func = RowAggFn::parse(&a.func).ok_or_else(|| {
            config(
                &w.name,
                format!(
                    "aggregate fn `{}` is not count, sum, min, max or avg",
                    a.func
                ),
            )
        })?;
        if func != RowAggFn::Count && a.field.is_none() {
            return Err(config(
                &w.name,
                format!("aggregate `{}` needs a `field`", a.func),
            ));
        }
        specs.push((func, a.field, a.name));
    }
    let aggs = RowAggregates::new(specs);
    let windowed = input
        .hopping_window(w.size, w.hop)
        .alignment(Time::EPOCH + w.alignment)
        .output(output);
    let stream = match w.group_by {
        Some(field) => {
            let key_field = field.clone();
            windowed
                .group_by(move |r: &Row| r.get(&key_field).cloned().unwrap_or(Value::Null))
                .aggregate_into(aggs, move |k: &Value, values| {
                    Row::new().with(field.clone(), k.clone()).with_all(values)
                })
        }
        None => windowed
            .aggregate(aggs)
            .map(|values| Row::new().with_all(values.clone())),
    };
    Ok((w.name, stream))
}
