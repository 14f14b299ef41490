//! Numbers read from text as the standard library reads them, the usual short ones faster.

use std::num::ParseIntError;

/// `text.parse::<i64>()`: the same answer for every text, with a plain decimal of up to 18
/// digits (and an optional `-`), the form numbers and times have in files, read by a loop
/// of its own (no overflow is possible below 19 digits). Anything else (a `+`, 19 digits or
/// more, a character that is not a digit) is read by the standard library.
#[inline]
pub(crate) fn parse_i64(text: &str) -> Result<i64, ParseIntError> {
    let bytes = text.as_bytes();
    let (negative, digits) = match bytes {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, bytes),
    };
    if !digits.is_empty() && digits.len() <= 18 {
        let mut n: i64 = 0;
        for &b in digits {
            let d = b.wrapping_sub(b'0');
            if d > 9 {
                return text.parse();
            }
            n = n * 10 + i64::from(d);
        }
        return Ok(if negative { -n } else { n });
    }
    text.parse()
}

/// `text.trim()`, answered without looking at the characters when the text starts and ends
/// with an ASCII letter or digit (what `trim` would leave as it is).
#[inline]
pub(crate) fn trim(text: &str) -> &str {
    match text.as_bytes() {
        [first, .., last] if first.is_ascii_alphanumeric() && last.is_ascii_alphanumeric() => text,
        [only] if only.is_ascii_alphanumeric() => text,
        _ => text.trim(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every text of up to five characters from an alphabet of digits, signs, spaces and
    /// others, then long random ones: the same answer as the standard library's.
    #[test]
    fn reads_every_text_as_the_standard_library_does() {
        let alphabet = ['0', '1', '5', '9', '-', '+', ' ', 'a', '/', ':', '\u{a0}'];
        let mut texts = vec![String::new()];
        let mut last = vec![String::new()];
        for _ in 0..5 {
            let next: Vec<String> = last
                .iter()
                .flat_map(|t| alphabet.iter().map(move |c| format!("{t}{c}")))
                .collect();
            texts.extend(next.iter().cloned());
            last = next;
        }
        // Long ones, around the 18-, 19- and 20-digit limits, from a fixed sequence.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = 15 + (x % 7) as usize;
            let mut t: String = (0..len)
                .map(|i| char::from(b'0' + ((x >> (i * 2)) % 10) as u8))
                .collect();
            match x % 5 {
                0 => t.insert(0, '-'),
                1 => t.insert(0, '+'),
                2 => t.replace_range(..1, "9"),
                _ => {}
            }
            texts.push(t);
        }
        texts.extend(
            [
                "9223372036854775807",
                "-9223372036854775808",
                "9223372036854775808",
            ]
            .map(String::from),
        );
        for t in &texts {
            assert_eq!(parse_i64(t), t.parse::<i64>(), "{t:?}");
            assert_eq!(trim(t), t.trim(), "{t:?}");
        }
    }
}
