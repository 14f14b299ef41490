//! RFC 3339 text to and from ticks since the Unix epoch (proleptic Gregorian calendar, UTC).
//! The calendar arithmetic is Howard Hinnant's `days_from_civil` / `civil_from_days`.
//!
//! RFC 3339 years have four digits (0000-9999); the tick range reaches years about -27,000
//! to 31,000. A time outside 0000-9999 is written with an ISO 8601 expanded year, a sign and
//! five or six digits (`-00001-12-31T23:59:59Z`, `+31197-...`), and read back the same way.

use std::cell::Cell;

use crate::time::{Time, TimeError, TICKS_PER_SECOND};

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        4 | 6 | 9 | 11 => 30,
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

struct Cursor<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn err(&self, why: &'static str) -> TimeError {
        TimeError::Rfc3339 {
            text: self.text.to_owned(),
            why,
        }
    }

    fn digits(&mut self, n: usize, what: &'static str) -> Result<i64, TimeError> {
        let mut v = 0i64;
        for _ in 0..n {
            match self.bytes.get(self.pos) {
                Some(b) if b.is_ascii_digit() => v = v * 10 + i64::from(b - b'0'),
                _ => return Err(self.err(what)),
            }
            self.pos += 1;
        }
        Ok(v)
    }

    fn expect(&mut self, options: &[u8], what: &'static str) -> Result<u8, TimeError> {
        match self.bytes.get(self.pos) {
            Some(b) if options.contains(b) => {
                self.pos += 1;
                Ok(*b)
            }
            _ => Err(self.err(what)),
        }
    }
}

pub(crate) fn parse(text: &str) -> Result<Time, TimeError> {
    let mut c = Cursor {
        text,
        bytes: text.as_bytes(),
        pos: 0,
    };
    let year = match c.bytes.first() {
        // An ISO 8601 expanded year: a sign, then five or six digits.
        Some(&sign @ (b'+' | b'-')) => {
            c.pos = 1;
            let mut y = c.digits(5, "expected five or six digits after the year's sign")?;
            if c.bytes.get(c.pos).is_some_and(u8::is_ascii_digit) {
                y = y * 10 + c.digits(1, "expected a digit")?;
            }
            if sign == b'-' {
                -y
            } else {
                y
            }
        }
        _ => c.digits(4, "expected a four-digit year")?,
    };
    c.expect(b"-", "expected `-` after the year")?;
    let month = c.digits(2, "expected a two-digit month")?;
    c.expect(b"-", "expected `-` after the month")?;
    let day = c.digits(2, "expected a two-digit day")?;
    c.expect(b"Tt ", "expected `T` between date and time")?;
    let hour = c.digits(2, "expected a two-digit hour")?;
    c.expect(b":", "expected `:` after the hour")?;
    let minute = c.digits(2, "expected two-digit minutes")?;
    c.expect(b":", "expected `:` after the minutes")?;
    let second = c.digits(2, "expected two-digit seconds")?;
    if !(1..=12).contains(&month) {
        return Err(c.err("month out of range"));
    }
    if day < 1 || day > days_in_month(year, month) {
        return Err(c.err("day out of range for the month"));
    }
    if hour > 23 || minute > 59 || second > 60 {
        return Err(c.err("hour, minute or second out of range"));
    }
    let mut frac_ticks = 0i64;
    if c.bytes.get(c.pos) == Some(&b'.') {
        c.pos += 1;
        let mut ndigits = 0;
        while let Some(b) = c.bytes.get(c.pos).filter(|b| b.is_ascii_digit()) {
            if ndigits < 7 {
                frac_ticks = frac_ticks * 10 + i64::from(b - b'0');
            }
            ndigits += 1;
            c.pos += 1;
        }
        if ndigits == 0 {
            return Err(c.err("expected digits after `.`"));
        }
        for _ in ndigits..7 {
            frac_ticks *= 10;
        }
    }
    let offset_secs = match c.expect(b"Zz+-", "expected `Z` or a `+HH:MM`/`-HH:MM` offset")? {
        b'Z' | b'z' => 0,
        sign => {
            let oh = c.digits(2, "expected two-digit offset hours")?;
            c.expect(b":", "expected `:` in the offset")?;
            let om = c.digits(2, "expected two-digit offset minutes")?;
            // RFC 3339: time-numoffset is hours 00-23 and minutes 00-59.
            if oh > 23 || om > 59 {
                return Err(c.err("offset out of range (hours 00-23, minutes 00-59)"));
            }
            let secs = oh * 3600 + om * 60;
            if sign == b'-' {
                -secs
            } else {
                secs
            }
        }
    };
    if c.pos != c.bytes.len() {
        return Err(c.err("unexpected text after the time"));
    }
    // A leap second (`:60`) is read as the last tick of the second before it: it stays in its
    // minute, its day and its year, after every time of second 59 and before the next minute
    // (a tick count has no room for it).
    let (second, frac_ticks) = if second == 60 {
        (59, TICKS_PER_SECOND - 1)
    } else {
        (second, frac_ticks)
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_secs;
    let ticks = i128::from(secs) * i128::from(TICKS_PER_SECOND) + i128::from(frac_ticks);
    let finite = i128::from(Time::MIN_FINITE.ticks())..=i128::from(Time::MAX_FINITE.ticks());
    if !finite.contains(&ticks) {
        return Err(TimeError::OutOfRange);
    }
    Ok(Time::from_ticks(ticks as i64))
}

/// A time written as RFC 3339 text, kept on the stack: what [`Time::rfc3339`] gives, to
/// write (`Display`) or read as a `&str` (`Deref`) without an allocation.
///
/// ```
/// use punctual_core::Time;
/// let t = Time::parse_rfc3339("2026-11-29T12:00:00.25Z").unwrap();
/// let text = t.rfc3339();
/// assert_eq!(&*text, "2026-11-29T12:00:00.25Z");
/// assert_eq!(format!("at {text}"), "at 2026-11-29T12:00:00.25Z");
/// assert_eq!(Time::INF.rfc3339().as_str(), "+inf");
/// ```
#[derive(Clone, Copy)]
pub struct Rfc3339 {
    bytes: [u8; Rfc3339::CAPACITY],
    len: u8,
}

impl Rfc3339 {
    /// The longest text: a sign and six digits of year, `-MM-DDTHH:MM:SS`, seven digits of
    /// fraction and `Z` take 31 bytes.
    const CAPACITY: usize = 32;

    const EMPTY: Rfc3339 = Rfc3339 {
        bytes: [0; Rfc3339::CAPACITY],
        len: 0,
    };

    /// Text of a word (`+inf`, `-inf`).
    pub(crate) fn word(word: &str) -> Rfc3339 {
        let mut out = Rfc3339::EMPTY;
        word.bytes().for_each(|b| out.push(b));
        out
    }

    /// The text.
    #[inline]
    pub fn as_str(&self) -> &str {
        // Only ASCII is ever written.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }

    #[inline]
    fn push(&mut self, b: u8) {
        // Never full: every text written is shorter than the capacity.
        if let Some(slot) = self.bytes.get_mut(usize::from(self.len)) {
            *slot = b;
            self.len += 1;
        }
    }

    #[inline]
    fn extend(&mut self, bytes: &[u8]) {
        let at = usize::from(self.len);
        if let Some(slots) = self.bytes.get_mut(at..at + bytes.len()) {
            slots.copy_from_slice(bytes);
            self.len += bytes.len() as u8;
        }
    }

    /// Appends `value` in decimal, at least `width` digits (zeros first).
    fn digits(&mut self, mut value: u64, width: usize) {
        let mut buf = [b'0'; 20];
        let mut start = buf.len();
        while value > 0 || buf.len() - start < width {
            start -= 1;
            buf[start] = b'0' + (value % 10) as u8;
            value /= 10;
        }
        buf[start..].iter().for_each(|&b| self.push(b));
    }
}

impl std::ops::Deref for Rfc3339 {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Display for Rfc3339 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

impl std::fmt::Debug for Rfc3339 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl PartialEq<&str> for Rfc3339 {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// The RFC 3339 text of a finite time (UTC, as many fractional digits as needed).
pub(crate) fn format(ticks: i64) -> Rfc3339 {
    thread_local! {
        /// The last whole second written, and its text: times written one after another
        /// (an output's lines) are mostly in the same second, and only their fraction differs.
        static LAST: Cell<(i64, Rfc3339)> = const { Cell::new((i64::MIN, Rfc3339::EMPTY)) };
    }
    let second = ticks.div_euclid(TICKS_PER_SECOND);
    let frac = ticks.rem_euclid(TICKS_PER_SECOND);
    let known = |(s, text): (i64, Rfc3339)| (s == second).then_some(text);
    let mut out = match LAST.try_with(|last| known(last.get())) {
        Ok(Some(text)) => text,
        _ => {
            let text = whole_second(second);
            let _ = LAST.try_with(|last| last.set((second, text)));
            text
        }
    };
    if frac != 0 {
        // Seven digits, without the zeros at the end (there is a digit that is not zero).
        let mut digits = [b'.'; 8];
        let mut rest = frac as u32;
        for d in digits[1..].iter_mut().rev() {
            *d = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        let kept = digits.iter().rposition(|&d| d != b'0').map_or(1, |i| i + 1);
        out.extend(&digits[..kept]);
    }
    out.push(b'Z');
    out
}

/// The text of a whole second since the epoch, to the seconds' digits (`YYYY-MM-DDTHH:MM:SS`).
fn whole_second(second: i64) -> Rfc3339 {
    let days = second.div_euclid(86_400);
    let secs = second.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let mut out = Rfc3339::EMPTY;
    if (0..=9999).contains(&y) {
        out.digits(y.unsigned_abs(), 4);
    } else {
        out.push(if y < 0 { b'-' } else { b'+' });
        out.digits(y.unsigned_abs(), 5);
    }
    for (separator, value) in [
        (b'-', m as u64),
        (b'-', d as u64),
        (b'T', (secs / 3600) as u64),
        (b':', (secs / 60 % 60) as u64),
        (b':', (secs % 60) as u64),
    ] {
        out.push(separator);
        // Two digits (every value here is below 100).
        out.push(b'0' + (value / 10 % 10) as u8);
        out.push(b'0' + (value % 10) as u8);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants() {
        assert_eq!(parse("1970-01-01T00:00:00Z").unwrap().ticks(), 0);
        assert_eq!(
            parse("2000-03-01T00:00:00Z").unwrap().ticks(),
            951_868_800 * TICKS_PER_SECOND
        );
        assert_eq!(
            parse("1969-12-31T23:59:59.9999999Z").unwrap().ticks(),
            -1,
            "one tick before the epoch"
        );
        assert_eq!(
            parse("2026-11-29T13:00:00+01:00").unwrap(),
            parse("2026-11-29T12:00:00Z").unwrap()
        );
    }

    #[test]
    fn round_trip_over_a_wide_range() {
        for ticks in [
            0i64,
            -1,
            1,
            123_456_789,
            -62_135_596_800 * TICKS_PER_SECOND,
            253_402_300_799 * TICKS_PER_SECOND + 9_999_999,
            -621_672_192_000_000_001,
            Time::MIN_FINITE.ticks(),
            Time::MAX_FINITE.ticks(),
        ] {
            let text = format(ticks);
            assert_eq!(parse(&text).unwrap().ticks(), ticks, "{text}");
        }
    }

    #[test]
    fn times_of_one_second_and_of_others_in_turn() {
        // The text of the last second written is kept: every time still gets its own.
        let second = 1_764_547_199 * TICKS_PER_SECOND;
        for ticks in [
            second + 5,
            second + 9_990_000,
            second - 1,
            second,
            second + TICKS_PER_SECOND,
            second + 1,
            -second - 3,
            -second - 4,
        ] {
            let text = format(ticks);
            assert_eq!(parse(&text).unwrap().ticks(), ticks, "{text}");
        }
        assert_eq!(format(second + 9_990_000), "2025-11-30T23:59:59.999Z");
        assert_eq!(format(second), "2025-11-30T23:59:59Z");
    }

    #[test]
    fn years_outside_four_digits_are_expanded() {
        assert_eq!(
            format(-621_672_192_000_000_001),
            "-00001-12-31T23:59:59.9999999Z"
        );
        assert!(format(Time::MAX_FINITE.ticks()).starts_with("+31197-"));
        assert!(
            parse("+99999-01-01T00:00:00Z").is_err(),
            "beyond the tick range"
        );
    }

    #[test]
    fn a_leap_second_stays_in_its_minute() {
        // The last tick before the next minute: in the same day and year, after second 59.
        let leap = parse("2016-12-31T23:59:60Z").expect("reads");
        assert_eq!(&*leap.rfc3339(), "2016-12-31T23:59:59.9999999Z");
        let before = parse("2016-12-31T23:59:59.9999998Z").expect("reads");
        let after = parse("2017-01-01T00:00:00Z").expect("reads");
        assert!(before < leap && leap < after);
        assert_eq!(parse("2016-12-31T23:59:60.5Z").expect("reads"), leap);
        assert!(parse("2016-12-31T23:59:61Z").is_err());
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let e = parse("2026-02-30T00:00:00Z").unwrap_err();
        assert!(e.to_string().contains("day out of range"), "{e}");
        let e = parse("2026-01-01 00:00").unwrap_err();
        assert!(e.to_string().contains("`:` after the minutes"), "{e}");
        assert!(parse("2026-01-01T00:00:00").is_err());
        assert!(parse("2026-01-01T00:00:00Zjunk").is_err());
        for bad in [
            "2026-01-01T00:00:00+99:99",
            "2026-01-01T00:00:00+24:00",
            "2026-01-01T00:00:00-00:60",
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.to_string().contains("offset out of range"), "{bad}: {e}");
        }
        assert_eq!(
            parse("2026-01-01T23:59:00+23:59").unwrap(),
            parse("2026-01-01T00:00:00Z").unwrap()
        );
    }
}
