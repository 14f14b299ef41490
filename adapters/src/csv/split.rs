//! Splitting a CSV record into its fields. A field that starts with `"` is quoted: `""` in it
//! is a quote, and text after its closing quote up to the delimiter is part of it; any other
//! field runs to the next delimiter as it is.

/// One record's fields, split without copying them where it can: a line without a quote
/// (most lines) is only cut at its delimiters, and the fields are slices of it; the fields of
/// a line with a quote are written out, unquoted, into one string. A reader keeps one for
/// every line.
#[derive(Clone, Debug, Default)]
pub(crate) struct Split {
    /// Where each field starts and ends: in the line, or in `unquoted`.
    spans: Vec<(usize, usize)>,
    /// The fields of a line with a quote, unquoted.
    unquoted: String,
    /// Whether the last line read had a quote (its fields are in `unquoted`).
    quoted: bool,
}

/// The fields of a record read by [`Split::read`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fields<'a> {
    text: &'a str,
    spans: &'a [(usize, usize)],
}

impl<'a> Fields<'a> {
    /// How many fields there are.
    pub(crate) fn len(&self) -> usize {
        self.spans.len()
    }

    /// Field `i` (empty past the last).
    pub(crate) fn get(&self, i: usize) -> &'a str {
        self.spans
            .get(i)
            .and_then(|&(start, end)| self.text.get(start..end))
            .unwrap_or_default()
    }

    /// The fields in order.
    pub(crate) fn iter(self) -> impl Iterator<Item = &'a str> {
        (0..self.len()).map(move |i| self.get(i))
    }
}

impl Split {
    /// Splits `line` at `delimiter`; `false` for an unterminated quote. Read its fields with
    /// [`Split::fields`] and the same line.
    pub(crate) fn read(&mut self, line: &str, delimiter: char) -> bool {
        self.spans.clear();
        self.quoted = false;
        let mut start = 0;
        match u8::try_from(delimiter) {
            Ok(d) if d.is_ascii() && d != b'"' => {
                self.quoted = !self.cut(line.as_bytes(), d, &mut start);
            }
            _ => {
                self.quoted = line.contains('"');
                if !self.quoted {
                    for (at, _) in line.match_indices(delimiter) {
                        self.spans.push((start, at));
                        start = at + delimiter.len_utf8();
                    }
                }
            }
        }
        if self.quoted {
            self.spans.clear();
            return self.read_quoted(line, delimiter);
        }
        self.spans.push((start, line.len()));
        true
    }

    /// Cuts `bytes` at the ASCII delimiter `d` (into `spans`, the last field's start left in
    /// `start`); `false` at a quote. Eight bytes at a time, each compared with the delimiter
    /// and the quote at once: a record's fields are short, shorter than what a call to
    /// `memchr` costs to set up.
    fn cut(&mut self, bytes: &[u8], d: u8, start: &mut usize) -> bool {
        const LOW: u64 = 0x7f7f_7f7f_7f7f_7f7f;
        const ONES: u64 = 0x0101_0101_0101_0101;
        // The high bit of each byte of `x` that is zero, and of no other (nothing carries
        // from byte to byte).
        let zeros = |x: u64| !(((x & LOW) + LOW) | x | LOW);
        let (delimiters, quotes) = (ONES * u64::from(d), ONES * u64::from(b'"'));
        let mut words = bytes.chunks_exact(8);
        let mut base = 0;
        for word in &mut words {
            let mut eight = [0; 8];
            eight.copy_from_slice(word);
            let x = u64::from_le_bytes(eight);
            if zeros(x ^ quotes) != 0 {
                return false;
            }
            let mut found = zeros(x ^ delimiters);
            while found != 0 {
                let at = base + (found.trailing_zeros() / 8) as usize;
                self.spans.push((*start, at));
                *start = at + 1;
                found &= found - 1;
            }
            base += 8;
        }
        for (at, &b) in (base..).zip(words.remainder()) {
            if b == d {
                self.spans.push((*start, at));
                *start = at + 1;
            } else if b == b'"' {
                return false;
            }
        }
        true
    }

    /// The fields of `line`, the line last given to [`Split::read`].
    pub(crate) fn fields<'a>(&'a self, line: &'a str) -> Fields<'a> {
        Fields {
            text: if self.quoted { &self.unquoted } else { line },
            spans: &self.spans,
        }
    }

    /// [`Split::read`] for a line with a quote somewhere: each field written into `unquoted`.
    fn read_quoted(&mut self, line: &str, delimiter: char) -> bool {
        let text = &mut self.unquoted;
        text.clear();
        let mut rest = line;
        loop {
            let start = text.len();
            if !rest.starts_with('"') {
                // An unquoted field: up to the next delimiter, in one piece.
                match rest.find(delimiter) {
                    Some(i) => {
                        text.push_str(&rest[..i]);
                        self.spans.push((start, text.len()));
                        rest = &rest[i + delimiter.len_utf8()..];
                        continue;
                    }
                    None => {
                        text.push_str(rest);
                        self.spans.push((start, text.len()));
                        return true;
                    }
                }
            }
            // A quoted field: `""` is a quote; the closing quote, then text up to the delimiter.
            let mut open = true;
            let mut chars = rest[1..].char_indices().peekable();
            let mut end = rest.len();
            while let Some((i, c)) = chars.next() {
                if open {
                    if c == '"' {
                        if chars.peek().map(|&(_, c)| c) == Some('"') {
                            text.push('"');
                            chars.next();
                        } else {
                            open = false;
                        }
                    } else {
                        text.push(c);
                    }
                } else if c == delimiter {
                    end = 1 + i;
                    break;
                } else {
                    text.push(c);
                }
            }
            self.spans.push((start, text.len()));
            if open {
                return false;
            }
            if end == rest.len() {
                return true;
            }
            rest = &rest[end + delimiter.len_utf8()..];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(split: &mut Split, line: &str, delimiter: char) -> Option<Vec<String>> {
        let ok = split.read(line, delimiter);
        ok.then(|| split.fields(line).iter().map(str::to_owned).collect())
    }

    /// The split written plainly: one character at a time.
    fn plain(line: &str, delimiter: char) -> Option<Vec<String>> {
        let (mut fields, mut field) = (Vec::new(), String::new());
        let (mut quoted, mut at_start) = (false, true);
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if quoted {
                if c == '"' && chars.peek() == Some(&'"') {
                    field.push('"');
                    chars.next();
                } else if c == '"' {
                    quoted = false;
                } else {
                    field.push(c);
                }
            } else if c == '"' && at_start {
                (quoted, at_start) = (true, false);
            } else if c == delimiter {
                fields.push(std::mem::take(&mut field));
                at_start = true;
            } else {
                field.push(c);
                at_start = false;
            }
        }
        fields.push(field);
        (!quoted).then_some(fields)
    }

    #[test]
    fn records_split_with_quotes_and_without() {
        let mut s = Split::default();
        assert_eq!(
            split(&mut s, r#"a,"b, c","say ""hi""",,x"#, ','),
            Some(
                ["a", "b, c", r#"say "hi""#, "", "x"]
                    .map(String::from)
                    .to_vec()
            )
        );
        assert_eq!(split(&mut s, r#"a,"open"#, ','), None);
        // Reused: longer lines, then shorter ones, with quotes and without.
        assert_eq!(
            split(&mut s, "x,,y", ','),
            Some(["x", "", "y"].map(String::from).to_vec())
        );
        assert_eq!(split(&mut s, "", ','), Some(vec![String::new()]));
        let fields = s.fields("");
        assert_eq!((fields.len(), fields.get(0), fields.get(7)), (1, "", ""));
    }

    /// Long lines (where the split reads eight bytes at a time) of the bytes next to the
    /// delimiter and the quote split as the plain rules say, with one `Split` reused.
    #[test]
    fn long_records_split_as_the_plain_rules_say() {
        let alphabet = [
            'a', ',', '"', ';', 'é', '-', '+', '!', '#', '\u{0}', '\u{7f}', 'ÿ',
        ];
        let mut s = Split::default();
        let mut state = 7u64;
        for n in 0..20_000 {
            let len = n % 41;
            let line: String = (0..len)
                .map(|_| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    // Mostly letters and delimiters, a quote in about one line in two.
                    let pick = (state >> 33) as usize % (alphabet.len() * 20);
                    match pick {
                        0 => '"',
                        p if p < alphabet.len() * 10 => alphabet[p % alphabet.len()],
                        p => ['a', ',', '-'][p % 3],
                    }
                })
                .collect();
            for delimiter in [',', ';', '#', 'é'] {
                assert_eq!(
                    split(&mut s, &line, delimiter),
                    plain(&line, delimiter),
                    "{line:?} {delimiter:?}"
                );
            }
        }
    }

    /// Every line of up to six characters of `a`, `,`, `"`, `;` and `é` splits as a split one
    /// character at a time does (the rules written plainly), with one `Split` reused.
    #[test]
    fn records_split_as_the_plain_rules_say() {
        let alphabet = ['a', ',', '"', ';', 'é'];
        let mut lines = vec![String::new()];
        let mut s = Split::default();
        for _ in 0..6 {
            lines = lines
                .iter()
                .flat_map(|l| alphabet.iter().map(move |c| format!("{l}{c}")))
                .collect();
            for line in &lines {
                for delimiter in [',', 'é'] {
                    let expected = plain(line, delimiter);
                    assert_eq!(
                        split(&mut s, line, delimiter),
                        expected,
                        "{line:?} {delimiter:?}"
                    );
                }
            }
        }
    }
}
