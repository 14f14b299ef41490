//! The language's casts and scalar functions over values.

use punctual_core::Time;
use punctual_rows::Value;

use super::{float, num, text, Ctx, E};
use crate::ast::SqlType;
use crate::limits::text_room;

/// `CAST(v AS ty)`. `NULL` casts to `NULL`; a value that does not convert (a text that is
/// not a number, a float out of bigint's range, a record to a number) is `NULL` with a fault
/// (the row's projection drops it with the reason), as Stream Analytics fails such a row.
pub(super) fn cast(v: Value, ty: SqlType) -> Value {
    let failed = |why: &'static str| {
        crate::limits::fault(why);
        Value::Null
    };
    match (ty, v) {
        (_, Value::Null) => Value::Null,
        (SqlType::Bigint, Value::Int(i)) => Value::Int(i),
        (SqlType::Bigint, Value::Float(f)) if f.is_finite() && f.abs() < 9.2e18 => {
            Value::Int(f.trunc() as i64)
        }
        (SqlType::Bigint, Value::Float(_)) => {
            failed("a float outside bigint's range cast to bigint")
        }
        (SqlType::Bigint, Value::Str(s)) => s.trim().parse().map_or_else(
            |_| failed("a text that is not an integer cast to bigint"),
            Value::Int,
        ),
        (SqlType::Bigint, Value::Bool(b)) => Value::Int(i64::from(b)),
        (SqlType::Float, v @ (Value::Int(_) | Value::Float(_))) => {
            num(&v).map_or(Value::Null, float)
        }
        (SqlType::Float, Value::Str(s)) => s.trim().parse().map_or_else(
            |_| failed("a text that is not a number cast to float"),
            float,
        ),
        // As `AS bigint` reads it: 1 and 0.
        (SqlType::Float, Value::Bool(b)) => Value::Float(if b { 1.0 } else { 0.0 }),
        (SqlType::Nvarchar, v) => text(&v).map_or(Value::Null, Value::from),
        (SqlType::Bit, Value::Bool(b)) => Value::Bool(b),
        (SqlType::Bit, Value::Int(i)) => Value::Bool(i != 0),
        (SqlType::Bit, Value::Str(s)) => match s.to_ascii_lowercase().as_str() {
            "true" | "1" => Value::Bool(true),
            "false" | "0" => Value::Bool(false),
            _ => failed("a text other than true, false, 1 or 0 cast to bit"),
        },
        (SqlType::Datetime, Value::Str(s)) => Time::parse_rfc3339(&s).map_or_else(
            |_| failed("a text that is not an RFC 3339 time cast to datetime"),
            |t| Value::from(&*t.rfc3339()),
        ),
        (SqlType::Record, v @ Value::Row(_)) => v,
        _ => failed("a value of another type cast to this one"),
    }
}

/// A text made, if within the limit (a case mapping may make a text longer than its input).
fn room(t: String) -> Value {
    if text_room(t.len()) {
        Value::from(t)
    } else {
        Value::Null
    }
}

pub(super) fn call(f: Func, args: &[E], cx: &Ctx<'_>) -> Value {
    let arg = |i: usize| args.get(i).map_or(Value::Null, |a| a.eval(cx));
    let s = |i: usize| text(&arg(i));
    let x = |i: usize| num(&arg(i));
    match f {
        Func::Upper => s(0).map_or(Value::Null, |t| room(t.to_uppercase())),
        Func::Lower => s(0).map_or(Value::Null, |t| room(t.to_lowercase())),
        Func::Len => s(0).map_or(Value::Null, |t| Value::Int(t.chars().count() as i64)),
        Func::Concat => {
            let parts: Vec<String> = (0..args.len()).filter_map(s).collect();
            if !text_room(parts.iter().map(String::len).fold(0, usize::saturating_add)) {
                return Value::Null;
            }
            Value::Str(parts.concat().into())
        }
        Func::Substring => match (s(0), arg(1).as_i64(), arg(2).as_i64()) {
            (Some(t), Some(start), Some(len)) if len >= 0 => {
                // 1-based; a start before 1 eats into the length, as in T-SQL.
                let end = start.saturating_sub(1).saturating_add(len).max(0);
                let from = start.saturating_sub(1).max(0);
                let take = usize::try_from(end - from.min(end)).unwrap_or(0);
                let skip = usize::try_from(from).unwrap_or(usize::MAX);
                Value::Str(t.chars().skip(skip).take(take).collect())
            }
            _ => Value::Null,
        },
        Func::Trim => s(0).map_or(Value::Null, |t| Value::from(t.trim().to_owned())),
        Func::Ltrim => s(0).map_or(Value::Null, |t| Value::from(t.trim_start().to_owned())),
        Func::Rtrim => s(0).map_or(Value::Null, |t| Value::from(t.trim_end().to_owned())),
        Func::Replace => replace(s(0), s(1), s(2)),
        Func::CharIndex => match (s(0), s(1)) {
            (Some(find), Some(t)) => Value::Int(
                t.find(&find)
                    .map_or(0, |b| t[..b].chars().count() as i64 + 1),
            ),
            _ => Value::Null,
        },
        Func::Abs => match arg(0) {
            Value::Int(i) => super::int(i.checked_abs(), "a bigint overflow (ABS(-2^63))"),
            v => num(&v).map_or(Value::Null, |f| float(f.abs())),
        },
        Func::Round => {
            let digits = arg(1).as_i64().unwrap_or(0).clamp(-18, 18) as i32;
            match arg(0) {
                Value::Int(i) if digits >= 0 => Value::Int(i),
                v => num(&v).map_or(Value::Null, |f| {
                    let m = 10f64.powi(digits);
                    float((f * m).round() / m)
                }),
            }
        }
        Func::Floor => match arg(0) {
            Value::Int(i) => Value::Int(i),
            v => num(&v).map_or(Value::Null, |f| float(f.floor())),
        },
        Func::Ceiling => match arg(0) {
            Value::Int(i) => Value::Int(i),
            v => num(&v).map_or(Value::Null, |f| float(f.ceil())),
        },
        Func::Power => match (x(0), x(1)) {
            (Some(a), Some(b)) => float(a.powf(b)),
            _ => Value::Null,
        },
        Func::Sqrt => x(0).map_or(Value::Null, |f| float(f.sqrt())),
        Func::Sign => match arg(0) {
            Value::Int(i) => Value::Int(i.signum()),
            v => num(&v).map_or(Value::Null, |f| {
                float(if f == 0.0 { 0.0 } else { f.signum() })
            }),
        },
        Func::Coalesce => args
            .iter()
            .map(|a| a.eval(cx))
            .find(|v| !matches!(v, Value::Null))
            .unwrap_or(Value::Null),
        Func::DateDiff => match arg(0) {
            Value::Int(unit) => date_diff(unit, &arg(1), &arg(2)),
            _ => Value::Null,
        },
        Func::GetArrayElement | Func::GetArrayLength | Func::GetRecordPropertyValue => {
            records(f, arg(0), arg(1))
        }
        Func::CreatePoint
        | Func::CreateLineString
        | Func::CreatePolygon
        | Func::StDistance
        | Func::StWithin
        | Func::StIntersects
        | Func::StOverlaps => {
            let values: Vec<Value> = (0..args.len()).map(arg).collect();
            super::geospatial::geospatial(f, &values)
        }
    }
}

/// The record and array functions over their arguments `a` and `b` (`NULL` if not given).
fn records(f: Func, a: Value, b: Value) -> Value {
    match f {
        Func::GetArrayElement => match (a, b) {
            (Value::Null, _) | (_, Value::Null) => Value::Null,
            (Value::List(items), Value::Int(i)) => usize::try_from(i)
                .ok()
                .and_then(|i| items.get(i).cloned())
                .unwrap_or(Value::Null),
            (Value::List(_), _) => not_what("GetArrayElement's index is not a whole number"),
            _ => not_what("GetArrayElement of a value that is not an array"),
        },
        Func::GetArrayLength => match a {
            Value::Null => Value::Null,
            Value::List(items) => Value::Int(items.len() as i64),
            _ => not_what("GetArrayLength of a value that is not an array"),
        },
        Func::GetRecordPropertyValue => match (a, b) {
            (Value::Null, _) | (_, Value::Null) => Value::Null,
            (Value::Row(record), Value::Str(name)) => {
                record.field_any_case(&name).cloned().unwrap_or(Value::Null)
            }
            (Value::Row(_), _) => not_what("GetRecordPropertyValue's name is not a text"),
            _ => not_what("GetRecordPropertyValue of a value that is not a record"),
        },
        _ => Value::Null,
    }
}

/// `REPLACE(t, from, to)`: `NULL` if any is, or if the result would be over the limit.
fn replace(t: Option<String>, from: Option<String>, to: Option<String>) -> Value {
    match (t, from, to) {
        (Some(t), Some(from), Some(to)) if !from.is_empty() => {
            let n = t.matches(from.as_str()).count();
            let length = (t.len() - n * from.len()).saturating_add(n.saturating_mul(to.len()));
            if !text_room(length) {
                return Value::Null;
            }
            Value::from(t.replace(&from, &to))
        }
        (Some(t), Some(_), Some(_)) => Value::from(t),
        _ => Value::Null,
    }
}

/// `NULL` with the fault `why` (the row is dropped with the reason): a function given a
/// value of a kind it does not read, never guessed at.
fn not_what(why: &'static str) -> Value {
    crate::limits::fault(why);
    Value::Null
}

/// How many boundaries of `unit` ticks (whole multiples from the epoch) lie between the times
/// `a` and `b` (negative when `b` is before `a`), as Stream Analytics' `DATEDIFF` counts
/// them. `NULL` if either is `NULL`; a value that is not a time (an RFC 3339 text) is `NULL`
/// with a fault (the row is dropped with the reason), never read as a number of some unit.
fn date_diff(unit: i64, a: &Value, b: &Value) -> Value {
    let time = |v: &Value| match v {
        Value::Str(s) => Time::parse_rfc3339(s).ok(),
        _ => None,
    };
    match (a, b) {
        (Value::Null, _) | (_, Value::Null) => Value::Null,
        _ => match (time(a), time(b)) {
            (Some(x), Some(y)) => {
                let unit = unit.max(1);
                Value::Int(y.ticks().div_euclid(unit) - x.ticks().div_euclid(unit))
            }
            _ => {
                crate::limits::fault("a DATEDIFF of a value that is not a time (an RFC 3339 text)");
                Value::Null
            }
        },
    }
}

/// A scalar function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Func {
    Upper,
    Lower,
    Len,
    Concat,
    Substring,
    Trim,
    Ltrim,
    Rtrim,
    Replace,
    CharIndex,
    Abs,
    Round,
    Floor,
    Ceiling,
    Power,
    Sqrt,
    Sign,
    Coalesce,
    /// `DATEDIFF(unit, a, b)` of two times: its arguments the unit in ticks (a literal), `a`
    /// and `b`.
    DateDiff,
    /// `GetArrayElement(array, index)`: the element at a 0-based index.
    GetArrayElement,
    /// `GetArrayLength(array)`.
    GetArrayLength,
    /// `GetRecordPropertyValue(record, name)`: a record's property by a name computed.
    GetRecordPropertyValue,
    /// `CreatePoint(latitude, longitude)`: a GeoJSON point.
    CreatePoint,
    /// `CreateLineString(point, point, ...)`.
    CreateLineString,
    /// `CreatePolygon(point, ..., point)`: one closed ring.
    CreatePolygon,
    /// `ST_DISTANCE(a, b)`: metres between two points.
    StDistance,
    /// `ST_WITHIN(a, b)`: 1 if `a` is within `b`.
    StWithin,
    /// `ST_INTERSECTS(a, b)`: 1 if they intersect.
    StIntersects,
    /// `ST_OVERLAPS(a, b)`: 1 if they overlap.
    StOverlaps,
}

impl Func {
    /// The function of this name (any case), with how many arguments it takes (min, max).
    pub(crate) fn lookup(name: &str) -> Option<(Func, usize, usize)> {
        Some(match name.to_ascii_lowercase().as_str() {
            "upper" => (Func::Upper, 1, 1),
            "lower" => (Func::Lower, 1, 1),
            "len" => (Func::Len, 1, 1),
            "concat" => (Func::Concat, 1, usize::MAX),
            "substring" => (Func::Substring, 3, 3),
            "trim" => (Func::Trim, 1, 1),
            "ltrim" => (Func::Ltrim, 1, 1),
            "rtrim" => (Func::Rtrim, 1, 1),
            "replace" => (Func::Replace, 3, 3),
            "charindex" => (Func::CharIndex, 2, 2),
            "abs" => (Func::Abs, 1, 1),
            "round" => (Func::Round, 1, 2),
            "floor" => (Func::Floor, 1, 1),
            "ceiling" => (Func::Ceiling, 1, 1),
            "power" => (Func::Power, 2, 2),
            "sqrt" => (Func::Sqrt, 1, 1),
            "sign" => (Func::Sign, 1, 1),
            "coalesce" => (Func::Coalesce, 1, usize::MAX),
            "getarrayelement" => (Func::GetArrayElement, 2, 2),
            "getarraylength" => (Func::GetArrayLength, 1, 1),
            "getrecordpropertyvalue" => (Func::GetRecordPropertyValue, 2, 2),
            "createpoint" => (Func::CreatePoint, 2, 2),
            "createlinestring" => (Func::CreateLineString, 2, usize::MAX),
            "createpolygon" => (Func::CreatePolygon, 4, usize::MAX),
            "st_distance" => (Func::StDistance, 2, 2),
            "st_within" => (Func::StWithin, 2, 2),
            "st_intersects" => (Func::StIntersects, 2, 2),
            "st_overlaps" => (Func::StOverlaps, 2, 2),
            _ => return None,
        })
    }
}
