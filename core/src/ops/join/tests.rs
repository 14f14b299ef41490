use super::*;

/// Points below the right side's CTI are joined at once: a point with no partner adds
/// nothing, one with two partners adds two results, each with the point's lifetime, in
/// input order.
#[test]
fn points_joined_on_arrival_keep_their_times_whatever_their_number_of_results() {
    let t = Time::from_ticks;
    let mut join = Join::<_, _, _, _, _, _, _, Ordered>::new(
        |l: &(u8, i64)| l.0,
        |r: &(u8, i64)| r.0,
        |l, r| Some(l.1 * r.1),
    );
    let mut out = Batch::new();
    let mut right = Batch::new();
    right.push_event(t(0), t(100), (1, 10));
    right.push_event(t(2), t(50), (1, 100));
    right.push_event(t(3), t(4), (2, 1000)); // over before any point
    right.push_cti(t(20));
    join.on_right(&right, &mut out);
    let mut left = Batch::new();
    for (at, key, v) in [(5, 1, 1), (6, 2, 2), (7, 1, 3), (8, 3, 4), (9, 1, 5)] {
        left.push_event(t(at), t(at + 1), (key, v));
    }
    left.push_cti(t(10));
    join.on_left(&left, &mut out);
    let got: Vec<(Time, Time, i64)> = (0..out.len())
        .map(|i| (out.sync()[i], out.other()[i], out.payloads()[i]))
        .collect();
    // Newest partner first for each point (the right side's list order).
    assert_eq!(
        got,
        vec![
            (t(5), t(6), 100),
            (t(5), t(6), 10),
            (t(7), t(8), 300),
            (t(7), t(8), 30),
            (t(9), t(10), 500),
            (t(9), t(10), 50),
        ]
    );
    assert_eq!(out.last_cti(), Some(t(10)));
}
