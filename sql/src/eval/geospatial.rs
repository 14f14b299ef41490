//! Stream Analytics' geospatial functions over GeoJSON records and Well-Known Text, the
//! geometry by `geo` (georust): `CreatePoint`, `CreateLineString`, `CreatePolygon` make GeoJSON
//! records (`{"type": "Point", "coordinates": [longitude, latitude]}`); `ST_DISTANCE` (metres,
//! geodesic on WGS 84, between points), `ST_WITHIN`, `ST_INTERSECTS` and `ST_OVERLAPS` (1 or
//! 0, OGC's predicates) read such records or WKT texts (`POINT(-122.13 47.64)`).
//!
//! `NULL` gives `NULL`; a value that is not a shape (or not a number where a coordinate is
//! due) is `NULL` with a fault (the row is dropped with the reason), never guessed at.

use std::sync::Arc;

use geo::{Coord, Distance, Geodesic, Geometry, Intersects, LineString, Point, Polygon, Relate};
use punctual_rows::{Row, Value};
use wkt::TryFromWkt;

use super::Func;

/// A fault's reason, and `NULL`.
fn fail(why: &'static str) -> Value {
    crate::limits::fault(why);
    Value::Null
}

/// The geospatial function `f` of `args`.
pub(super) fn geospatial(f: Func, args: &[Value]) -> Value {
    if args.iter().any(|a| matches!(a, Value::Null)) {
        return Value::Null;
    }
    match f {
        Func::CreatePoint => match (args[0].as_f64(), args[1].as_f64()) {
            (Some(lat), Some(lon)) => record("Point", position(lon, lat)),
            _ => fail("CreatePoint of a latitude or longitude that is not a number"),
        },
        Func::CreateLineString | Func::CreatePolygon => {
            let mut coords = Vec::new();
            for a in args {
                match point_of(a) {
                    Some(p) => coords.push(position(p.x, p.y)),
                    None => {
                        return fail(
                            "CreateLineString or CreatePolygon of a value that is not a point",
                        )
                    }
                }
            }
            if f == Func::CreateLineString {
                return record("LineString", Value::List(Arc::new(coords)));
            }
            if coords.len() < 4 || coords.first() != coords.last() {
                return fail("CreatePolygon of fewer than 4 points, or a ring whose last point is not its first");
            }
            record(
                "Polygon",
                Value::List(Arc::new(vec![Value::List(Arc::new(coords))])),
            )
        }
        _ => {
            let (Some(a), Some(b)) = (shape(&args[0]), shape(&args[1])) else {
                return fail("a geospatial function of a value that is not a GeoJSON record (Point, LineString, Polygon) or a WKT text");
            };
            let yes = |b: bool| Value::Int(i64::from(b));
            match f {
                Func::StDistance => match (a, b) {
                    (Geometry::Point(a), Geometry::Point(b)) => float(Geodesic.distance(a, b)),
                    _ => fail("ST_DISTANCE of shapes other than two points"),
                },
                Func::StWithin => yes(a.relate(&b).is_within()),
                Func::StIntersects => yes(a.intersects(&b)),
                _ => yes(a.relate(&b).is_overlaps()),
            }
        }
    }
}

fn float(x: f64) -> Value {
    if x.is_finite() {
        Value::Float(x)
    } else {
        Value::Null
    }
}

/// `[x, y]`.
fn position(x: f64, y: f64) -> Value {
    Value::List(Arc::new(vec![Value::Float(x), Value::Float(y)]))
}

/// `{"type": kind, "coordinates": coordinates}`.
fn record(kind: &str, coordinates: Value) -> Value {
    Value::Row(Arc::new(
        Row::new()
            .with("type", kind)
            .with("coordinates", coordinates),
    ))
}

/// The point a value is (a GeoJSON Point record or a WKT `POINT`).
fn point_of(v: &Value) -> Option<Coord> {
    match shape(v)? {
        Geometry::Point(p) => Some(p.0),
        _ => None,
    }
}

/// The shape a value is: a GeoJSON record (Point, LineString, Polygon) or a WKT text.
fn shape(v: &Value) -> Option<Geometry> {
    match v {
        Value::Str(text) => Geometry::<f64>::try_from_wkt_str(text).ok(),
        Value::Row(r) => geojson(r),
        _ => None,
    }
}

/// A GeoJSON Point, LineString or Polygon record. A polygon whose coordinates are one ring's
/// positions (one level short of GeoJSON's list of rings, as some Stream Analytics examples
/// write it) is that ring.
fn geojson(r: &Row) -> Option<Geometry> {
    let kind = r.field_any_case("type")?.as_str()?;
    let coords = r.field_any_case("coordinates")?;
    match kind.to_ascii_lowercase().as_str() {
        "point" => coord(coords).map(|c| Geometry::Point(Point(c))),
        "linestring" => line(coords).map(Geometry::LineString),
        "polygon" => {
            let Value::List(rings) = coords else {
                return None;
            };
            if rings.first().is_some_and(|r| coord(r).is_some()) {
                return line(coords).map(|l| Geometry::Polygon(Polygon::new(l, Vec::new())));
            }
            let mut rings = rings.iter().map(line);
            let exterior = rings.next()??;
            let interiors = rings.collect::<Option<Vec<_>>>()?;
            Some(Geometry::Polygon(Polygon::new(exterior, interiors)))
        }
        _ => None,
    }
}

/// `[x, y]` (more numbers after them are left out: an altitude).
fn coord(v: &Value) -> Option<Coord> {
    let Value::List(xy) = v else {
        return None;
    };
    Some(Coord {
        x: xy.first()?.as_f64()?,
        y: xy.get(1)?.as_f64()?,
    })
}

/// `[[x, y], ...]`.
fn line(v: &Value) -> Option<LineString> {
    let Value::List(points) = v else {
        return None;
    };
    points
        .iter()
        .map(coord)
        .collect::<Option<Vec<_>>>()
        .map(LineString::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wkt(text: &str) -> Value {
        Value::from(text)
    }

    #[test]
    fn shapes_read_from_geojson_records_and_wkt_are_one() {
        let made = geospatial(
            Func::CreatePoint,
            &[Value::Float(47.64), Value::Float(-122.13)],
        );
        assert_eq!(shape(&made), shape(&wkt("POINT(-122.13 47.64)")));
        let square = wkt("POLYGON((0 0, 10 0, 10 10, 0 10, 0 0))");
        let inside = wkt("POINT(5 5)");
        assert_eq!(
            geospatial(Func::StWithin, &[inside.clone(), square.clone()]),
            Value::Int(1)
        );
        assert_eq!(
            geospatial(Func::StWithin, &[square.clone(), inside]),
            Value::Int(0)
        );
        assert_eq!(
            geospatial(Func::StWithin, &[wkt("POINT(15 5)"), square]),
            Value::Int(0)
        );
    }

    #[test]
    fn the_distance_is_geodesic_in_metres() {
        // One degree of longitude on the equator: 111,319.49 m on WGS 84.
        let d = geospatial(Func::StDistance, &[wkt("POINT(0 0)"), wkt("POINT(1 0)")]);
        let d = d.as_f64().expect("a distance");
        assert!((d - 111_319.49).abs() < 0.01, "{d}");
    }

    #[test]
    fn what_is_not_a_shape_is_a_fault() {
        let _ = crate::limits::take_fault();
        let v = geospatial(Func::StWithin, &[Value::Int(1), wkt("POINT(1 1)")]);
        assert_eq!(v, Value::Null);
        assert!(crate::limits::take_fault().is_some());
        // NULL is NULL, without a fault.
        let v = geospatial(Func::StWithin, &[Value::Null, wkt("POINT(1 1)")]);
        assert_eq!(v, Value::Null);
        assert!(crate::limits::take_fault().is_none());
    }
}
