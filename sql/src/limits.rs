//! How deep a query may nest, checked while it is read: the parser and every later pass over
//! the syntax tree (compile, evaluation, drop) recurse, so a text nested thousands deep would
//! overflow the stack. Past the limits the query is refused with the position, never run.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};

use crate::ast::Pos;
use crate::SqlError;

/// The deepest nesting of parentheses (function calls, `CAST`, `IN` lists, subexpressions) and
/// `CASE ... END` a query may have.
pub const MAX_NESTING: usize = 256;

/// The deepest expression tree a query may have: each operator (`OR`, `+`, `NOT`, `IS NULL`,
/// ...) and each nesting is a level. A chain of 1,000 `OR` terms is 1,000 levels.
pub const MAX_DEPTH: usize = 1_000;

/// Refuses a text nested deeper than [`MAX_NESTING`], before the parser (which recurses once
/// per level) sees it; strings, `[quoted names]` and comments are skipped.
pub(crate) fn check_nesting(text: &str) -> Result<(), SqlError> {
    let (mut depth, mut line, mut col) = (0usize, 1usize, 1usize);
    let mut chars = text.chars().peekable();
    // The characters of the word being read (for CASE and END).
    let mut word = String::new();
    let mut word_at = Pos::default();
    let too_deep = |at: Pos| {
        SqlError::syntax(
            at,
            format!("the query nests deeper than {MAX_NESTING} levels (parentheses, function calls, CASE): write it flatter"),
        )
    };
    while let Some(c) = chars.next() {
        let at = Pos { line, col };
        if c == '\n' {
            (line, col) = (line + 1, 1);
        } else {
            col += 1;
        }
        if c.is_ascii_alphanumeric() || c == '_' {
            if word.is_empty() {
                word_at = at;
            }
            word.push(c);
            if chars
                .peek()
                .is_some_and(|n| n.is_ascii_alphanumeric() || *n == '_')
            {
                continue;
            }
            if word.eq_ignore_ascii_case("case") {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(too_deep(word_at));
                }
            } else if word.eq_ignore_ascii_case("end") {
                depth = depth.saturating_sub(1);
            }
            word.clear();
            continue;
        }
        // Whatever closes a string, a quoted name or a comment, skipped to its end.
        let close: Option<&str> = match (c, chars.peek()) {
            ('\'', _) => Some("'"),
            ('[', _) => Some("]"),
            ('-', Some('-')) => Some("\n"),
            ('/', Some('*')) => Some("*/"),
            _ => None,
        };
        if let Some(close) = close {
            let mut last = '\0';
            for n in chars.by_ref() {
                if n == '\n' {
                    (line, col) = (line + 1, 1);
                } else {
                    col += 1;
                }
                let done = match close {
                    "*/" => last == '*' && n == '/',
                    _ => close.starts_with(n),
                };
                last = n;
                if done {
                    break;
                }
            }
            continue;
        }
        match c {
            '(' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(too_deep(at));
                }
            }
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Runs `f`, a pass over a whole query (parsing, compiling, listing what it reads), with
/// room on the stack for a query at the limits: on a stack of its own when the thread's has
/// less left (a spawned thread has 2 MiB; a query at the limits needs more, in a debug build
/// most).
pub(crate) fn with_room<T>(f: impl FnOnce() -> T) -> T {
    stacker::maybe_grow(32 << 20, 64 << 20, f)
}

/// Levels of a compiled expression between two points that make room on the stack
/// ([`E::Deep`](crate::eval::E)): evaluating a query at the limits on a small stack.
pub(crate) const LEVELS_PER_ROOM: usize = 32;

/// Runs `f`, the evaluation of up to [`LEVELS_PER_ROOM`] levels of an expression, with room
/// for them on the stack (on a stack of its own if the thread's is nearly used up): checked
/// only where an expression is that deep, so shallow ones cost nothing.
#[inline]
pub(crate) fn with_eval_room<T>(f: impl FnOnce() -> T) -> T {
    stacker::maybe_grow(1 << 20, 8 << 20, f)
}

/// The longest text a query may make (`CONCAT`, `REPLACE`, `+` of texts, `UPPER`): the
/// length of a line. A row whose select list would make a longer one is dropped by its
/// projection with the reason (a dead letter); elsewhere (a condition, a key, an aggregate's
/// argument) the value is `NULL`.
pub const MAX_TEXT_BYTES: usize = 16 << 20;

thread_local! {
    /// Why the value being computed could not be made (see [`fault`]).
    static FAULT: RefCell<Option<Cow<'static, str>>> = const { RefCell::new(None) };
}

/// Records that the value being computed could not be made (it stays `NULL`): the
/// projection computing a select list takes it ([`take_fault`]) and drops the row with the
/// first one. The reason is a fixed text, or one made (a user-defined function's).
pub(crate) fn fault(why: impl Into<Cow<'static, str>>) {
    FAULT.with(|f| {
        let mut f = f.borrow_mut();
        if f.is_none() {
            *f = Some(why.into());
        }
    });
}

/// The fault recorded since the last call, if any.
#[inline]
pub(crate) fn take_fault() -> Option<Cow<'static, str>> {
    FAULT.with(|f| f.borrow_mut().take())
}

/// `compute`'s result, or the reason it cannot be computed (the first fault it recorded, after
/// `what`): how a row's condition, keys or select list is checked. A fault left over from an
/// earlier computation is cleared first.
#[inline]
pub(crate) fn checked<T>(what: &str, compute: impl FnOnce() -> T) -> Result<T, String> {
    let _stale = take_fault();
    let value = compute();
    match take_fault() {
        None => Ok(value),
        Some(why) => Err(format!("{what} cannot be computed: {why}")),
    }
}

/// A text of `length` bytes, if within [`MAX_TEXT_BYTES`]; else a fault is recorded and
/// `None` returned (before anything that long is made).
pub(crate) fn text_room(length: usize) -> bool {
    if length > MAX_TEXT_BYTES {
        fault("a text over the limit of 16 MiB (MAX_TEXT_BYTES) would be made");
        return false;
    }
    true
}

thread_local! {
    /// How deep the compiler is in the expression it compiles (see [`Compiling`]).
    static COMPILING: Cell<usize> = const { Cell::new(0) };
}

/// The compiler's depth in an expression, while it compiles one level of it: every
/// [`LEVELS_PER_ROOM`]-th level is compiled as a point that makes room on the stack.
pub(crate) struct Compiling(usize);

impl Compiling {
    /// Enters one level.
    pub(crate) fn enter() -> Compiling {
        let level = COMPILING.with(|c| {
            let level = c.get() + 1;
            c.set(level);
            level
        });
        Compiling(level)
    }

    /// Whether this level makes room on the stack for the levels below it.
    pub(crate) fn makes_room(&self) -> bool {
        self.0.checked_rem(LEVELS_PER_ROOM) == Some(0)
    }
}

impl Drop for Compiling {
    fn drop(&mut self) {
        COMPILING.with(|c| c.set(c.get().saturating_sub(1)));
    }
}

thread_local! {
    /// The depth the expressions being built so far may reach (see [`Depth`]).
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// A bound on the depth of the expression being built, while one is: entering an
/// expression of `levels` operators adds them (the tree of a chain is at most that deep), and
/// the guard takes them off when dropped. Over [`MAX_DEPTH`], the expression is refused.
pub(crate) struct Depth(usize);

impl Depth {
    /// Enters an expression at `at` with `levels` operators in it.
    pub(crate) fn enter(levels: usize, at: Pos) -> Result<Depth, SqlError> {
        let now = DEPTH.with(|d| d.get()).saturating_add(levels);
        if now > MAX_DEPTH {
            return Err(SqlError::syntax(
                at,
                format!("the expression is more than {MAX_DEPTH} operators deep (a chain of OR, AND, +, ... counts each): split it, or use IN (...) for a list of values"),
            ));
        }
        DEPTH.with(|d| d.set(now));
        Ok(Depth(levels))
    }
}

impl Drop for Depth {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(self.0)));
    }
}

impl crate::eval::E {
    /// Whether evaluating the expression may fail (`limits::fault`): arithmetic (an
    /// overflow, a division by zero, a result that is not finite), a cast, a function (a text
    /// over the size limit, a number out of range). Fields, literals, comparisons and logic
    /// cannot.
    pub(crate) fn may_fault(&self) -> bool {
        match self {
            crate::eval::E::Lit(_)
            | crate::eval::E::Field(_)
            | crate::eval::E::FirstOf(_)
            | crate::eval::E::Key(_)
            | crate::eval::E::Agg(_)
            | crate::eval::E::Time => false,
            crate::eval::E::Bin(
                crate::ast::BinOp::Add
                | crate::ast::BinOp::Sub
                | crate::ast::BinOp::Mul
                | crate::ast::BinOp::Div
                | crate::ast::BinOp::Rem,
                ..,
            )
            | crate::eval::E::Neg(_)
            | crate::eval::E::Cast(..) => true,
            // Functions that make no number and no longer text fail only through their
            // arguments.
            crate::eval::E::Call(
                crate::eval::Func::Len
                | crate::eval::Func::Substring
                | crate::eval::Func::Trim
                | crate::eval::Func::Ltrim
                | crate::eval::Func::Rtrim
                | crate::eval::Func::CharIndex
                | crate::eval::Func::Sign
                | crate::eval::Func::Coalesce,
                args,
            ) => args.iter().any(crate::eval::E::may_fault),
            crate::eval::E::Call(..) | crate::eval::E::Udf(..) => true,
            crate::eval::E::Not(a) | crate::eval::E::IsNull(a, _) | crate::eval::E::Deep(a) => {
                a.may_fault()
            }
            crate::eval::E::Bin(_, a, b) | crate::eval::E::Like(a, b, _) => {
                a.may_fault() || b.may_fault()
            }
            crate::eval::E::Between(a, b, c, _) => a.may_fault() || b.may_fault() || c.may_fault(),
            crate::eval::E::In(a, list, _) => {
                a.may_fault() || list.iter().any(crate::eval::E::may_fault)
            }
            crate::eval::E::Case(subject, whens, otherwise) => {
                subject.as_ref().is_some_and(|e| e.may_fault())
                    || whens.iter().any(|(c, t)| c.may_fault() || t.may_fault())
                    || otherwise.as_ref().is_some_and(|e| e.may_fault())
            }
        }
    }
}

/// How many operators an `expr` pair chains (each may add a level to the tree).
pub(crate) fn operators_in(p: &pest::iterators::Pair<'_, crate::parse::Rule>) -> usize {
    use crate::parse::Rule;
    p.clone()
        .into_inner()
        .filter(|x| {
            matches!(
                x.as_rule(),
                Rule::or
                    | Rule::and
                    | Rule::not
                    | Rule::eq
                    | Rule::ne
                    | Rule::lt
                    | Rule::le
                    | Rule::gt
                    | Rule::ge
                    | Rule::is_null
                    | Rule::between
                    | Rule::in_list
                    | Rule::like
                    | Rule::add
                    | Rule::sub
                    | Rule::mul
                    | Rule::div
                    | Rule::rem
                    | Rule::neg
            )
        })
        .count()
}
