//! Application time: [`Time`] instants and [`TimeSpan`] durations in ticks of 100 ns, with named
//! infinities, and half-open [`Lifetime`]s.
//!
//! Time zero is the Unix epoch (1970-01-01T00:00:00Z). `Time::NEG_INF` and `Time::INF` are the two
//! infinities; they absorb arithmetic (`Time::INF + d == Time::INF`), and finite arithmetic saturates
//! into the finite range instead of overflowing into an infinity by accident.
//!
//! ```
//! use punctual_core::time::{Time, TimeSpan};
//! let t = Time::parse_rfc3339("2026-11-29T12:00:00.5Z").unwrap();
//! assert_eq!(t.rfc3339().to_string(), "2026-11-29T12:00:00.5Z");
//! assert_eq!((t + TimeSpan::from_secs(1)) - t, TimeSpan::from_ticks(10_000_000));
//! assert_eq!(Time::INF - TimeSpan::from_secs(5), Time::INF);
//! ```

use std::fmt;
use std::ops::{Add, Neg, Sub};
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use crate::rfc3339::Rfc3339;

/// Ticks per second (one tick is 100 ns, StreamInsight's unit).
pub const TICKS_PER_SECOND: i64 = 10_000_000;

/// An instant of application time, in 100 ns ticks since the Unix epoch, or one of the two infinities.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct Time(i64);

/// A signed duration of application time in 100 ns ticks. Negative spans are meaningful (a CTI
/// generation delay of `-1` tick puts each CTI one tick after the event).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
#[repr(transparent)]
pub struct TimeSpan(i64);

/// Why a text or a value could not be turned into a [`Time`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TimeError {
    /// The text is not RFC 3339 (`YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`).
    #[error("`{text}` is not an RFC 3339 time: {why}")]
    Rfc3339 {
        /// The offending text.
        text: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// The instant lies outside the range of finite times.
    #[error("time is out of range")]
    OutOfRange,
}

/// A half-open lifetime `[start, end)` with `start < end`, guaranteed by its constructor.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Lifetime {
    start: Time,
    end: Time,
}

/// Returned by [`Lifetime::new`] when `start >= end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("empty lifetime: start {start:?} is not before end {end:?}")]
pub struct EmptyLifetime {
    /// The requested start.
    pub start: Time,
    /// The requested end.
    pub end: Time,
}

impl Time {
    /// Minus infinity: earlier than every finite time. The application time of a stream before
    /// its first CTI.
    pub const NEG_INF: Time = Time(i64::MIN);
    /// Plus infinity: later than every finite time. `CTI(+inf)` ends a stream.
    pub const INF: Time = Time(i64::MAX);
    /// The earliest finite time.
    pub const MIN_FINITE: Time = Time(i64::MIN + 1);
    /// The latest finite time.
    pub const MAX_FINITE: Time = Time(i64::MAX - 1);
    /// The Unix epoch, tick zero.
    pub const EPOCH: Time = Time(0);

    /// The time `ticks` ticks (100 ns each) after the epoch. `i64::MIN` and `i64::MAX` are the
    /// infinities.
    #[inline]
    pub const fn from_ticks(ticks: i64) -> Time {
        Time(ticks)
    }

    /// Ticks since the epoch (`i64::MIN`/`i64::MAX` for the infinities).
    #[inline]
    pub const fn ticks(self) -> i64 {
        self.0
    }

    /// Whether this is one of the two infinities.
    #[inline]
    pub const fn is_infinite(self) -> bool {
        self.0 == i64::MIN || self.0 == i64::MAX
    }

    /// Whether this is a finite time.
    #[inline]
    pub const fn is_finite(self) -> bool {
        !self.is_infinite()
    }

    /// The time `d` after the epoch.
    pub fn from_duration_since_epoch(d: Duration) -> Result<Time, TimeError> {
        let ticks = TimeSpan::try_from(d)?.ticks();
        Time::finite(ticks)
    }

    /// The time as a duration since the epoch, if it is finite and not before the epoch.
    pub fn duration_since_epoch(self) -> Option<Duration> {
        if self.is_infinite() || self.0 < 0 {
            return None;
        }
        TimeSpan(self.0).to_duration()
    }

    fn finite(ticks: i64) -> Result<Time, TimeError> {
        let t = Time(ticks);
        if t.is_finite() {
            Ok(t)
        } else {
            Err(TimeError::OutOfRange)
        }
    }

    #[inline]
    fn saturating_offset(self, ticks: i64) -> Time {
        if self.is_infinite() {
            return self;
        }
        Time(
            self.0
                .saturating_add(ticks)
                .clamp(Time::MIN_FINITE.0, Time::MAX_FINITE.0),
        )
    }

    /// The next tick (`t + 1`), or `t` itself for an infinity.
    #[inline]
    pub fn next_tick(self) -> Time {
        // Branch-free (it runs per event when point columns are rebuilt): +1 unless infinite
        // or already the last finite tick.
        let x = self.0;
        Time(x + i64::from(x != i64::MIN && x < Time::MAX_FINITE.0))
    }

    /// Parses RFC 3339 text (`2026-11-29T12:00:00Z`, `2026-11-29T13:00:00.1234567+01:00`); digits
    /// past the seventh fractional digit (below one tick) are truncated. `-inf` and `+inf` (or
    /// `inf`) are accepted for the infinities.
    pub fn parse_rfc3339(text: &str) -> Result<Time, TimeError> {
        match text {
            "inf" | "+inf" => return Ok(Time::INF),
            "-inf" => return Ok(Time::NEG_INF),
            _ => {}
        }
        crate::rfc3339::parse(text)
    }

    /// The time as RFC 3339 text in UTC with as many fractional digits as needed (none for a
    /// whole second); the infinities are written `-inf` and `+inf`. The text is kept on the
    /// stack ([`Rfc3339`]: `Display`, and a `&str` by `Deref`): writing a time allocates
    /// nothing.
    #[inline]
    pub fn rfc3339(self) -> Rfc3339 {
        match self {
            Time::INF => Rfc3339::word("+inf"),
            Time::NEG_INF => Rfc3339::word("-inf"),
            t => crate::rfc3339::format(t.0),
        }
    }
}

impl fmt::Debug for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Time::INF => f.write_str("+inf"),
            Time::NEG_INF => f.write_str("-inf"),
            Time(t) => write!(f, "{t}"),
        }
    }
}

impl fmt::Display for Time {
    /// Ticks as an integer, or `-inf`/`+inf`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

impl Add<TimeSpan> for Time {
    type Output = Time;
    /// Infinities absorb the span; finite results saturate into the finite range.
    #[inline]
    fn add(self, rhs: TimeSpan) -> Time {
        self.saturating_offset(rhs.0)
    }
}

impl Sub<TimeSpan> for Time {
    type Output = Time;
    /// Infinities absorb the span; finite results saturate into the finite range.
    #[inline]
    fn sub(self, rhs: TimeSpan) -> Time {
        self.saturating_offset(rhs.0.checked_neg().unwrap_or(i64::MAX))
    }
}

impl Sub<Time> for Time {
    type Output = TimeSpan;
    /// The (saturating) span between two times.
    #[inline]
    fn sub(self, rhs: Time) -> TimeSpan {
        TimeSpan(self.0.saturating_sub(rhs.0))
    }
}

impl TimeSpan {
    /// The zero span.
    pub const ZERO: TimeSpan = TimeSpan(0);
    /// One tick (100 ns).
    pub const TICK: TimeSpan = TimeSpan(1);
    /// The largest span.
    pub const MAX: TimeSpan = TimeSpan(i64::MAX);

    /// A span of `ticks` ticks of 100 ns.
    #[inline]
    pub const fn from_ticks(ticks: i64) -> TimeSpan {
        TimeSpan(ticks)
    }

    /// A span of whole seconds (saturating).
    #[inline]
    pub const fn from_secs(secs: i64) -> TimeSpan {
        TimeSpan(secs.saturating_mul(TICKS_PER_SECOND))
    }

    /// A span of whole milliseconds (saturating).
    #[inline]
    pub const fn from_millis(ms: i64) -> TimeSpan {
        TimeSpan(ms.saturating_mul(TICKS_PER_SECOND / 1000))
    }

    /// The span in ticks.
    #[inline]
    pub const fn ticks(self) -> i64 {
        self.0
    }

    /// The span as a [`Duration`], if it is not negative.
    pub fn to_duration(self) -> Option<Duration> {
        if self.0 < 0 {
            return None;
        }
        let secs = self.0 / TICKS_PER_SECOND;
        let nanos = (self.0 % TICKS_PER_SECOND) * 100;
        Some(Duration::new(secs as u64, nanos as u32))
    }
}

impl TryFrom<Duration> for TimeSpan {
    type Error = TimeError;
    /// Whole ticks of the duration (sub-tick nanoseconds are truncated); errors past `i64::MAX` ticks.
    fn try_from(d: Duration) -> Result<TimeSpan, TimeError> {
        let ticks = d.as_nanos() / 100;
        i64::try_from(ticks)
            .map(TimeSpan)
            .map_err(|_| TimeError::OutOfRange)
    }
}

impl Neg for TimeSpan {
    type Output = TimeSpan;
    fn neg(self) -> TimeSpan {
        TimeSpan(self.0.saturating_neg())
    }
}

impl Lifetime {
    /// The lifetime `[start, end)`; fails unless `start < end`.
    pub fn new(start: Time, end: Time) -> Result<Lifetime, EmptyLifetime> {
        if start < end {
            Ok(Lifetime { start, end })
        } else {
            Err(EmptyLifetime { start, end })
        }
    }

    /// The one-tick lifetime `[t, t+1)` of a point event at `t`; fails for `t` at or past the
    /// latest finite time.
    pub fn point(t: Time) -> Result<Lifetime, EmptyLifetime> {
        Lifetime::new(t, t.next_tick())
    }

    /// The inclusive start.
    pub const fn start(self) -> Time {
        self.start
    }

    /// The exclusive end.
    pub const fn end(self) -> Time {
        self.end
    }

    /// Whether two lifetimes share at least one tick.
    pub fn overlaps(self, other: Lifetime) -> bool {
        self.start < other.end && other.start < self.end
    }
}

/// In human-readable formats, serialized as an integer number of ticks, or the strings `"inf"`
/// / `"-inf"`, and deserialized from those or from RFC 3339 text; in compact ones (bincode),
/// always the number of ticks.
impl Serialize for Time {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if !s.is_human_readable() {
            return s.serialize_i64(self.0);
        }
        match *self {
            Time::INF => s.serialize_str("inf"),
            Time::NEG_INF => s.serialize_str("-inf"),
            Time(t) => s.serialize_i64(t),
        }
    }
}

/// A time or a span as a human-readable format (JSON, TOML) holds it: a number of ticks, or
/// text people write (`5s`, an RFC 3339 time), for a type to read with its own rules.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum TicksOrText {
    /// A number: ticks.
    Ticks(i64),
    /// Text, read by the type that takes it.
    Text(String),
}

impl<'de> Deserialize<'de> for Time {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Time, D::Error> {
        if !d.is_human_readable() {
            return i64::deserialize(d).map(Time);
        }
        match TicksOrText::deserialize(d)? {
            TicksOrText::Ticks(t) => Ok(Time(t)),
            TicksOrText::Text(s) => Time::parse_rfc3339(&s).map_err(serde::de::Error::custom),
        }
    }
}

/// Serialized as an integer number of ticks.
impl Serialize for TimeSpan {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(self.0)
    }
}

/// Read from an integer number of ticks, or from text people write: `5s`, `250ms`, `1h30m`
/// (see [`TimeSpan::from_str`](std::str::FromStr)).
impl<'de> Deserialize<'de> for TimeSpan {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<TimeSpan, D::Error> {
        if !d.is_human_readable() {
            return i64::deserialize(d).map(TimeSpan);
        }
        match TicksOrText::deserialize(d)? {
            TicksOrText::Ticks(t) => Ok(TimeSpan(t)),
            TicksOrText::Text(s) => s.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// The units of a written span, longest suffix first, in ticks.
const SPAN_UNITS: [(&str, i64); 10] = [
    ("ticks", 1),
    ("tick", 1),
    ("ms", 10_000),
    ("us", 10),
    ("µs", 10),
    ("ns", 0),
    ("d", 864_000_000_000),
    ("h", 36_000_000_000),
    ("m", 600_000_000),
    ("s", TICKS_PER_SECOND),
];

/// A span as people write it: one or more parts `<number><unit>` (`5s`, `250ms`, `1h30m`,
/// `1.5s`), units `d`, `h`, `m`, `s`, `ms`, `us`, `ns` (whole multiples of 100 ns) and `tick`;
/// an optional `-` in front; or a bare integer, a number of ticks.
///
/// ```
/// use punctual_core::TimeSpan;
/// assert_eq!("1h30m".parse(), Ok(TimeSpan::from_secs(5400)));
/// assert_eq!("250ms".parse(), Ok(TimeSpan::from_millis(250)));
/// assert_eq!("-2s".parse(), Ok(TimeSpan::from_secs(-2)));
/// assert_eq!("7".parse(), Ok(TimeSpan::from_ticks(7)));
/// assert!("5 parsecs".parse::<TimeSpan>().is_err());
/// assert_eq!(TimeSpan::from_secs(5400).to_string(), "1h30m");
/// ```
impl std::str::FromStr for TimeSpan {
    type Err = String;

    fn from_str(text: &str) -> Result<TimeSpan, String> {
        let bad = || {
            format!("`{text}` is not a duration: write e.g. `5s`, `250ms`, `1h30m` (units d, h, m, s, ms, us, ns, tick) or a number of ticks")
        };
        let t = text.trim();
        if let Ok(ticks) = t.parse::<i64>() {
            return Ok(TimeSpan(ticks));
        }
        let (negative, mut rest) = match t.strip_prefix('-') {
            Some(r) => (true, r),
            None => (false, t),
        };
        if rest.is_empty() {
            return Err(bad());
        }
        let mut total: i128 = 0;
        while !rest.is_empty() {
            let digits = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .ok_or_else(bad)?;
            let (number, after) = rest.split_at(digits);
            let unit = SPAN_UNITS
                .iter()
                .find(|(u, _)| after.starts_with(u))
                .ok_or_else(bad)?;
            rest = &after[unit.0.len()..];
            let ticks: i128 = if unit.0 == "ns" {
                let n: i128 = number.parse().map_err(|_| bad())?;
                if n % 100 != 0 {
                    return Err(format!("`{text}`: durations are whole multiples of 100 ns"));
                }
                n / 100
            } else if let Ok(n) = number.parse::<i128>() {
                n.checked_mul(i128::from(unit.1)).ok_or_else(bad)?
            } else {
                let x: f64 = number.parse().map_err(|_| bad())?;
                let ticks = x * unit.1 as f64;
                if !ticks.is_finite() || ticks.fract().abs() > 1e-6 || ticks.abs() > 9.2e18 {
                    return Err(format!("`{text}`: not a whole number of ticks (100 ns)"));
                }
                ticks.round() as i128
            };
            total = total.checked_add(ticks).ok_or_else(bad)?;
        }
        if negative {
            total = -total;
        }
        i64::try_from(total)
            .map(TimeSpan)
            .map_err(|_| format!("`{text}` is too long a duration"))
    }
}

/// Written as people read it: `1h30m`, `250ms`, `2.5s`, `0s`; spans that are not whole
/// milliseconds as ticks (`7 ticks`).
impl fmt::Display for TimeSpan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.0;
        if t == 0 {
            return f.write_str("0s");
        }
        if t == i64::MAX {
            return f.write_str("forever");
        }
        if t % 10_000 != 0 {
            return write!(f, "{t} ticks");
        }
        let sign = if t < 0 { "-" } else { "" };
        let mut ms = (i128::from(t) / 10_000).unsigned_abs();
        let mut out = String::from(sign);
        for (unit, per) in [("d", 86_400_000u128), ("h", 3_600_000), ("m", 60_000)] {
            if ms >= per {
                out.push_str(&format!("{}{unit}", ms / per));
                ms %= per;
            }
        }
        if ms > 0 {
            if ms % 1000 == 0 {
                out.push_str(&format!("{}s", ms / 1000));
            } else if ms >= 1000 {
                let text = format!("{}.{:03}", ms / 1000, ms % 1000);
                out.push_str(text.trim_end_matches('0'));
                out.push('s');
            } else {
                out.push_str(&format!("{ms}ms"));
            }
        }
        f.write_str(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_read_and_show_as_people_write_them() {
        for (text, ticks) in [
            ("5s", 50_000_000),
            ("1.5s", 15_000_000),
            ("2d", 1_728_000_000_000),
            ("10us", 100),
            ("300ns", 3),
            ("3ticks", 3),
            ("1m30s", 900_000_000),
            ("-1ms", -10_000),
        ] {
            assert_eq!(text.parse::<TimeSpan>(), Ok(TimeSpan(ticks)), "{text}");
        }
        for bad in [
            "",
            "-",
            "5x",
            "s",
            "150ns",
            "1.00000001ms",
            "99999999999999d",
        ] {
            assert!(bad.parse::<TimeSpan>().is_err(), "{bad}");
        }
        for (ticks, shown) in [
            (0, "0s"),
            (25_000_000, "2.5s"),
            (900_000_000, "1m30s"),
            (7, "7 ticks"),
            (-10_000, "-1ms"),
            (36_000_000_000 + 10_000, "1h1ms"),
        ] {
            assert_eq!(TimeSpan(ticks).to_string(), shown);
        }
    }

    #[test]
    fn infinities_absorb_and_finite_arithmetic_saturates() {
        assert_eq!(Time::NEG_INF - TimeSpan::from_ticks(-1), Time::NEG_INF);
        assert_eq!(Time::INF + TimeSpan::from_ticks(-5), Time::INF);
        assert_eq!(Time::MAX_FINITE + TimeSpan::TICK, Time::MAX_FINITE);
        assert_eq!(Time::MIN_FINITE - TimeSpan::MAX, Time::MIN_FINITE);
        assert_eq!(
            Time::from_ticks(10) - TimeSpan::from_ticks(-1),
            Time::from_ticks(11)
        );
        assert!(Time::NEG_INF < Time::MIN_FINITE && Time::MAX_FINITE < Time::INF);
    }

    /// `next_tick` at the ends of time and around them.
    #[test]
    fn next_tick_is_one_on_except_at_the_ends() {
        for x in [i64::MIN + 1, i64::MIN + 2, -1, 0, 1, i64::MAX - 2] {
            assert_eq!(Time(x).next_tick().0, x + 1, "at {x}");
        }
        assert_eq!(Time::NEG_INF.next_tick(), Time::NEG_INF);
        assert_eq!(Time::MAX_FINITE.next_tick(), Time::MAX_FINITE);
        assert_eq!(Time::INF.next_tick(), Time::INF);
        assert_eq!(Time::MIN_FINITE.next_tick().0, i64::MIN + 2);
    }

    #[test]
    fn duration_round_trips() {
        let d = Duration::from_millis(1500);
        let span = TimeSpan::try_from(d).unwrap();
        assert_eq!(span.ticks(), 15_000_000);
        assert_eq!(span.to_duration(), Some(d));
        assert_eq!(TimeSpan::from_ticks(-1).to_duration(), None);
        let t = Time::from_duration_since_epoch(d).unwrap();
        assert_eq!(t.duration_since_epoch(), Some(d));
    }

    #[test]
    fn lifetime_requires_start_before_end() {
        let t = Time::from_ticks;
        assert!(Lifetime::new(t(5), t(5)).is_err());
        assert!(Lifetime::new(t(6), t(5)).is_err());
        let l = Lifetime::new(t(5), t(9)).unwrap();
        assert!(l.overlaps(Lifetime::point(t(8)).unwrap()));
        assert!(!l.overlaps(Lifetime::point(t(9)).unwrap()));
        assert!(Lifetime::point(Time::MAX_FINITE).is_err());
    }
}
