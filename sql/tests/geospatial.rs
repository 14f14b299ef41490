//! Stream Analytics' geospatial functions in queries: the geofencing example of its
//! "geofencing and geospatial aggregation" page (devices' WKT positions joined with sites'
//! polygons as reference data), GeoJSON records made and read, and what is not a shape
//! dropped with the reason.

use punctual_core::{StreamItem, Time};
use punctual_rows::{Row, Value};

mod common;
use common::*;

fn output(sql: &str, inputs: &[(&str, Vec<StreamItem<Row>>)]) -> Vec<Row> {
    let out = run(sql, inputs);
    let (_, items) = out.into_iter().next().expect("one output");
    events(&items).into_iter().map(|(_, _, r)| r).collect()
}

fn text(r: &Row, field: &str) -> String {
    r.get(field)
        .map(|v| {
            v.as_str()
                .map_or_else(|| v.to_json().to_string(), str::to_owned)
        })
        .unwrap_or_default()
}

#[test]
fn the_geofencing_example_alerts_the_device_outside_its_building() {
    let site = |id: i64, name: &str, fence: &str, allowed: &str| {
        StreamItem::interval(
            Time::from_ticks(0),
            Time::MAX_FINITE,
            row(&[
                ("SiteID", Value::Int(id)),
                ("SiteName", Value::from(name)),
                ("Geofence", Value::from(fence)),
                ("AllowedDeviceID", Value::from(allowed)),
            ]),
        )
    };
    // The page's three buildings (their polygons as the page gives them).
    let sites = vec![
        site(1, "Redmond Building 41", "POLYGON((-122.1337357922017 47.63782998329432,-122.13373042778369 47.637634793257305,-122.13346757130023 47.637642022530954,-122.13348902897235 47.637508280806806,-122.13361777500506 47.637508280806806,-122.13361241058703 47.63732393354484,-122.13265754417773 47.63730947490855,-122.13266290859576 47.637519124743164,-122.13302232460376 47.637515510097955,-122.13301696018573 47.63764925180358,-122.13272728161212 47.63764925180358,-122.13274873928424 47.63784082716388,-122.13373579220172 47.63782998329432))", "B"),
        site(2, "Redmond Building 40", "POLYGON((-122.1336154507967 47.6366745947009,-122.13361008637867 47.636483015064535,-122.13349206918201 47.636479400347675,-122.13349743360004 47.63636372927573,-122.13372810357532 47.63636372927573,-122.13373346799335 47.63617576323771,-122.13263912671528 47.63616491902258,-122.13264985555134 47.63635649982525,-122.13304682248554 47.636367344000604,-122.13305218690357 47.63650831807564,-122.13276250832996 47.636497473929516,-122.13277323716602 47.63668543881025,-122.1336154507967 47.6366745947009))", "A"),
        site(3, "Redmond Building 22", "POLYGON((-122.13611660248233 47.63758544698554,-122.13635263687564 47.6374083293018,-122.13622389084293 47.63733603619712,-122.13622389084293 47.63717699101473,-122.13581619507266 47.63692757827657,-122.13559625393344 47.637046862778135,-122.13569281345798 47.637144458985965,-122.13570890671207 47.637314348246214,-122.13611660248233 47.63758544698554))", "C"),
        StreamItem::Cti(Time::INF),
    ];
    let device = |at: f64, id: &str, pos: &str| {
        StreamItem::point(
            t(at),
            row(&[
                ("DeviceID", Value::from(id)),
                ("GeoPosition", Value::from(pos)),
            ]),
        )
    };
    let devices = ended(vec![
        device(1.0, "A", "POINT(-122.13292341559497 47.636318374032726)"),
        device(2.0, "B", "POINT(-122.13338475554553 47.63743531308874)"),
        device(3.0, "C", "POINT(-122.13354001095752 47.63627622505007)"),
    ]);
    let alerts = output(
        "SELECT DeviceStreamInput.DeviceID, SiteReferenceInput.SiteID, SiteReferenceInput.SiteName
         FROM DeviceStreamInput JOIN SiteReferenceInput
         ON st_within(DeviceStreamInput.GeoPosition, SiteReferenceInput.Geofence) = 0
         WHERE DeviceStreamInput.DeviceID = SiteReferenceInput.AllowedDeviceID",
        &[
            ("DeviceStreamInput", devices),
            ("SiteReferenceInput", sites),
        ],
    );
    // "Device C is located inside building ID 2, which is not allowed": one alert, for C
    // and the site it is allowed in (3), which it is outside of.
    let got: Vec<(String, String)> = alerts
        .iter()
        .map(|r| (text(r, "DeviceID"), text(r, "SiteID")))
        .collect();
    assert_eq!(got, [("C".to_owned(), "3".to_owned())]);
}

#[test]
fn shapes_made_as_records_are_read_back_as_shapes() {
    let input = ended(vec![StreamItem::point(
        t(1.0),
        row(&[("lat", Value::Float(1.0)), ("lon", Value::Float(1.0))]),
    )]);
    let got = output(
        "SELECT ST_WITHIN(CreatePoint(lat, lon),
                          CreatePolygon(CreatePoint(0, 0), CreatePoint(0, 2), CreatePoint(2, 2),
                                        CreatePoint(2, 0), CreatePoint(0, 0))) AS inside,
                ST_INTERSECTS(CreateLineString(CreatePoint(0, 0), CreatePoint(2, 2)),
                              'LINESTRING(0 2, 2 0)') AS crossing,
                ST_OVERLAPS('POLYGON((0 0, 2 0, 2 2, 0 2, 0 0))',
                            'POLYGON((1 1, 3 1, 3 3, 1 3, 1 1))') AS overlapping,
                ST_OVERLAPS('POLYGON((0 0, 2 0, 2 2, 0 2, 0 0))',
                            'POLYGON((5 5, 6 5, 6 6, 5 6, 5 5))') AS apart
         FROM readings",
        &[("readings", input)],
    );
    assert_eq!(got.len(), 1);
    for (field, want) in [
        ("inside", 1),
        ("crossing", 1),
        ("overlapping", 1),
        ("apart", 0),
    ] {
        assert_eq!(
            got[0].get(field),
            Some(&Value::Int(want)),
            "{field}: {:?}",
            got[0]
        );
    }
}

#[test]
fn a_value_that_is_not_a_shape_drops_its_row() {
    let input = ended(vec![
        StreamItem::point(t(1.0), row(&[("pos", Value::from("POINT(1 1)"))])),
        StreamItem::point(t(2.0), row(&[("pos", Value::from("not a shape"))])),
        StreamItem::point(t(3.0), row(&[("pos", Value::Int(7))])),
        StreamItem::point(t(4.0), row(&[("pos", Value::Null)])),
    ]);
    let got = output(
        "SELECT ST_WITHIN(pos, 'POLYGON((0 0, 2 0, 2 2, 0 2, 0 0))') AS inside FROM readings",
        &[("readings", input.clone())],
    );
    // The text that is not WKT and the number are dropped; NULL gives NULL.
    let values: Vec<Value> = got
        .iter()
        .map(|r| r.get("inside").cloned().unwrap_or(Value::Int(-1)))
        .collect();
    assert_eq!(values, [Value::Int(1), Value::Null]);
    // A polygon that is not closed, a distance between shapes other than points: refused.
    for sql in [
        "SELECT CreatePolygon(CreatePoint(0, 0), CreatePoint(0, 1), CreatePoint(1, 1), CreatePoint(1, 0)) AS p FROM readings",
        "SELECT ST_DISTANCE('LINESTRING(0 0, 1 1)', 'POINT(0 0)') AS d FROM readings",
    ] {
        assert!(output(sql, &[("readings", input.clone())]).is_empty(), "{sql}");
    }
}
