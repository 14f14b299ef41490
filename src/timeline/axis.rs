//! The time axis' round steps and their labels, in ticks or clock time.

use punctual_core::Time;

/// Round steps for the axis, in ticks: for ticks 1-2-5 times a power of ten; for clock
/// time the usual divisions of seconds, minutes, hours and days.
pub(super) fn axis_step(span: i64, clock: bool) -> i64 {
    const WANTED: i64 = 8;
    if clock {
        const STEPS: [i64; 22] = [
            10_000,
            20_000,
            50_000,
            100_000,
            200_000,
            500_000, // 1 ms .. 50 ms
            1_000_000,
            2_000_000,
            5_000_000, // 100 ms .. 500 ms
            10_000_000,
            20_000_000,
            50_000_000,
            100_000_000,
            150_000_000,
            300_000_000, // 1 s .. 30 s
            600_000_000,
            1_200_000_000,
            3_000_000_000,
            6_000_000_000,
            18_000_000_000, // 1 min .. 30 min
            36_000_000_000,
            216_000_000_000, // 1 h, 6 h
        ];
        if let Some(&s) = STEPS.iter().find(|&&s| span / s <= WANTED) {
            return s;
        }
        let day = 864_000_000_000i64;
        let mut s = day;
        while span / s > WANTED {
            s = s.saturating_mul(2);
        }
        return s;
    }
    let mut base = 1i64;
    loop {
        for m in [1, 2, 5] {
            let s = base.saturating_mul(m);
            if span / s <= WANTED {
                return s;
            }
        }
        base = base.saturating_mul(10);
    }
}

/// An axis label: ticks as an integer; clock times as `HH:MM:SS`, with fractions when the
/// step is below a second, or the date when it is a day or more.
pub(super) fn axis_label(t: i64, step: i64, clock: bool) -> String {
    if !clock {
        return t.to_string();
    }
    let text = Time::from_ticks(t).rfc3339();
    let (date, rest) = text.split_once('T').unwrap_or((&text, ""));
    let clock_part = rest.trim_end_matches('Z');
    if step >= 864_000_000_000 {
        date.to_owned()
    } else if step >= 10_000_000 {
        clock_part.get(..8).unwrap_or(clock_part).to_owned()
    } else {
        clock_part.to_owned()
    }
}
