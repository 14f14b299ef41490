//! Stream Analytics constructs this language does not have yet, named as such when a query
//! uses one: a refusal says what is missing, not which tokens the grammar expected there, nor
//! that a function is unknown.

use crate::ast::Pos;
use crate::SqlError;

/// What a Stream Analytics function this language lacks is, by its name (any case).
pub(crate) fn function(name: &str) -> Option<&'static str> {
    Some(match name.to_ascii_lowercase().as_str() {
        "dateadd" | "datepart" | "datename" | "datefromparts" | "datetimefromparts" | "day"
        | "month" | "year" => "a date function of Stream Analytics",
        "percentile_cont" | "percentile_disc" | "stdev" | "stdevp" | "var" | "varp" | "collect" => {
            "an aggregate of Stream Analytics"
        }
        _ => return None,
    })
}

/// The refusal of a call of `name`, if it is a Stream Analytics function this language lacks,
/// or one that gives rows (read with `CROSS APPLY`) called for a value.
pub(crate) fn refuse_function(name: &str, pos: Pos) -> Option<SqlError> {
    if matches!(
        name.to_ascii_lowercase().as_str(),
        "getarrayelements" | "getrecordproperties"
    ) {
        return Some(SqlError::compile(
            pos,
            format!("`{name}` gives rows, not a value: read it with `CROSS APPLY {name}(...) AS name` after FROM"),
        ));
    }
    function(name).map(|what| {
        SqlError::compile(
            pos,
            format!("`{name}` is {what}, which this language does not have yet"),
        )
    })
}

/// A word of the query text (a name, a keyword), or one character of punctuation, with where
/// it starts.
struct Token<'a> {
    text: &'a str,
    pos: Pos,
}

/// The words and punctuation of `text`, without strings, comments and bracketed names.
fn tokens(text: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let (mut line, mut col) = (1, 1);
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let pos = Pos { line, col };
        let mut end = at + c.len_utf8();
        let mut advance = |c: char| {
            if c == '\n' {
                line += 1;
                col = 1;
            } else {
                col += 1;
            }
        };
        advance(c);
        match c {
            '\'' => {
                // A string ('' inside it is a quote): skipped whole.
                while let Some((_, d)) = chars.next() {
                    advance(d);
                    if d == '\'' {
                        match chars.peek() {
                            Some(&(_, '\'')) => {
                                chars.next();
                                advance('\'');
                            }
                            _ => break,
                        }
                    }
                }
            }
            '[' => {
                // A bracketed name: skipped whole.
                for (_, d) in chars.by_ref() {
                    advance(d);
                    if d == ']' {
                        break;
                    }
                }
            }
            '-' if chars.peek().is_some_and(|&(_, n)| n == '-') => {
                for (_, d) in chars.by_ref() {
                    advance(d);
                    if d == '\n' {
                        break;
                    }
                }
            }
            c if c.is_alphanumeric() || c == '_' => {
                while let Some(&(i, d)) = chars.peek() {
                    if !(d.is_alphanumeric() || d == '_') {
                        break;
                    }
                    chars.next();
                    advance(d);
                    end = i + d.len_utf8();
                }
                out.push(Token {
                    text: &text[at..end],
                    pos,
                });
            }
            c if c.is_whitespace() => {}
            _ => out.push(Token {
                text: &text[at..end],
                pos,
            }),
        }
    }
    out
}

/// The Stream Analytics constructs the grammar does not take, as the words that start them
/// (`*`: any word) and what each is.
const CONSTRUCTS: &[(&[&str], &str)] = &[
    (
        &["RIGHT", "OUTER", "JOIN"],
        "`RIGHT OUTER JOIN` (only `JOIN` and `LEFT [OUTER] JOIN` are)",
    ),
    (
        &["RIGHT", "JOIN"],
        "`RIGHT JOIN` (only `JOIN` and `LEFT [OUTER] JOIN` are)",
    ),
    (
        &["FULL", "OUTER", "JOIN"],
        "`FULL OUTER JOIN` (only `JOIN` and `LEFT [OUTER] JOIN` are)",
    ),
];

/// On a syntax error at `at`: the last Stream Analytics construct the grammar does not take
/// that starts no later than there, refused with what it is.
pub(crate) fn refuse_construct(text: &str, at: Pos) -> Option<SqlError> {
    let tokens = tokens(text);
    let mut found = None;
    for (i, t) in tokens.iter().enumerate() {
        if (t.pos.line, t.pos.col) > (at.line, at.col) {
            break;
        }
        for (words, what) in CONSTRUCTS {
            let matches = words.iter().enumerate().all(|(k, w)| {
                tokens
                    .get(i + k)
                    .is_some_and(|t| *w == "*" || t.text.eq_ignore_ascii_case(w))
            });
            if matches {
                found = Some((t.pos, *what));
            }
        }
    }
    found.map(|(pos, what)| {
        SqlError::compile(pos, format!("this language does not have {what} yet"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_in_strings_comments_and_brackets_are_not_constructs() {
        let at = Pos { line: 9, col: 1 };
        let text = "SELECT 'MATCH_RECOGNIZE' AS [right join], x -- FULL OUTER JOIN\nFROM a";
        assert!(refuse_construct(text, at).is_none());
        let text = "SELECT 'it''s' AS s FROM a FULL OUTER JOIN b ON x";
        let e = refuse_construct(text, at).expect("found");
        assert_eq!(e.pos(), Pos { line: 1, col: 28 });
    }
}
