//! The dead letters of a command: counted by reason, the first few shown, all written to a
//! file if asked.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The dead letters of `pipe`: counted by reason, the first few kept for the summary, every one
/// written as a JSON line to a file if one was asked for.
pub(super) struct DeadLetters {
    file: Option<(PathBuf, std::io::BufWriter<std::fs::File>)>,
    by_reason: std::collections::BTreeMap<&'static str, u64>,
    first: Vec<String>,
    /// The first malformed record: where and why.
    pub(super) first_malformed: Option<String>,
    write_error: Option<String>,
    /// How times are shown and written.
    times: punctual_adapters::line::TimeFormat,
    /// With checkpoints: each letter reaches the file as it is written (a run killed at any
    /// moment loses none of those before).
    write_through: bool,
}

impl DeadLetters {
    /// How many dead letters the summary shows.
    const SHOWN: usize = 5;

    /// `append`: with checkpoints, the file is added to, not started over, and written through
    /// letter by letter: a run that goes on from a snapshot keeps the dead letters of the runs
    /// before it (those of the lines read again since the snapshot come twice; none is lost).
    pub(super) fn new(
        path: Option<&Path>,
        times: punctual_adapters::line::TimeFormat,
        append: bool,
    ) -> Result<Self, String> {
        let file = match path {
            None => None,
            Some(p) => {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .create(true)
                    .append(append)
                    .truncate(!append)
                    .open(p)
                    .map_err(|e| format!("{}: {e}", p.display()))?;
                Some((p.to_owned(), std::io::BufWriter::new(f)))
            }
        };
        Ok(DeadLetters {
            file,
            by_reason: std::collections::BTreeMap::new(),
            first: Vec::new(),
            first_malformed: None,
            write_error: None,
            times,
            write_through: append,
        })
    }

    pub(super) fn add(&mut self, letter: &punctual_policies::DeadLetter<punctual_rows::Row>) {
        use punctual_policies::DeadLetterReason as R;
        if let R::Malformed(m) = &letter.reason {
            self.first_malformed
                .get_or_insert_with(|| format!("{}: {}", m.location, m.message));
        }
        let kind = match &letter.reason {
            R::Late => "late",
            // As the counters say it: `rejected` events, `rejected_ctis`.
            R::Rejected(_)
                if letter
                    .item
                    .as_ref()
                    .is_some_and(|i| matches!(i.as_ref(), punctual_core::StreamItem::Cti(_))) =>
            {
                "rejected CTI"
            }
            R::Rejected(_) => "rejected",
            R::Unreleased => "unreleased",
            R::Malformed(_) => "malformed",
            R::Watermark(_) => "dropped by the watermark",
            _ => "other",
        };
        *self.by_reason.entry(kind).or_default() += 1;
        let item = letter
            .item
            .as_ref()
            .map(|i| punctual_adapters::line::item_to_json_as(i.as_ref(), self.times));
        if self.first.len() < Self::SHOWN {
            let shown = item.as_ref().map(|i| format!(" {i}")).unwrap_or_default();
            self.first.push(format!("{}{shown}", letter.reason));
        }
        if self.file.is_some() {
            let mut line = serde_json::json!({
                "reason": letter.reason.to_string(),
                "cti": self.times.write(letter.cti),
                "item": item,
            });
            if let R::Malformed(m) = &letter.reason {
                line["text"] = serde_json::Value::String(m.text.clone());
            }
            self.write_line(&line);
        }
    }

    /// An event an operator dropped (over a window's limit of windows per event), with the
    /// operator and the reason: counted as `dropped by an operator`, written as a JSON line
    /// with its lifetime (its payload stays with the operator).
    pub(super) fn add_operator_drop(&mut self, drop: &punctual_runtime::OperatorDropItem) {
        *self.by_reason.entry("dropped by an operator").or_default() += 1;
        let reason = format!("dropped by {}: {}", drop.operator, drop.reason);
        let (start, end) = (self.times.write(drop.start), self.times.write(drop.end));
        if self.first.len() < Self::SHOWN {
            let shown =
                |v: &serde_json::Value| v.as_str().map_or_else(|| v.to_string(), str::to_owned);
            self.first
                .push(format!("{reason} [{}, {})", shown(&start), shown(&end)));
        }
        if self.file.is_some() {
            let line = serde_json::json!({
                "reason": reason,
                "operator": drop.operator,
                "start": start,
                "end": end,
            });
            self.write_line(&line);
        }
    }

    /// Writes `line` to the dead-letter file (flushed if written through); the first error
    /// is kept for the summary.
    fn write_line(&mut self, line: &serde_json::Value) {
        let Some((path, out)) = self.file.as_mut() else {
            return;
        };
        let written = match writeln!(out, "{line}") {
            Ok(()) if self.write_through => out.flush(),
            other => other,
        };
        if let Err(e) = written {
            self.write_error
                .get_or_insert_with(|| format!("{}: {e}", path.display()));
        }
    }

    /// `dead letters: N (late 3, malformed 1)` and the first few, on `err`; the file flushed.
    pub(super) fn summary(&mut self, err: &mut dyn Write) {
        if let Some((path, out)) = self.file.as_mut() {
            if let Err(e) = out.flush() {
                self.write_error
                    .get_or_insert_with(|| format!("{}: {e}", path.display()));
            }
        }
        let total: u64 = self.by_reason.values().sum();
        if total > 0 {
            let kinds: Vec<String> = self
                .by_reason
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            let _ = writeln!(err, "dead letters: {total} ({})", kinds.join(", "));
            for shown in &self.first {
                let _ = writeln!(err, "  {shown}");
            }
            if total > self.first.len() as u64 {
                let more = total - self.first.len() as u64;
                match &self.file {
                    Some((path, _)) => {
                        let _ = writeln!(err, "  ... {more} more, all in {}", path.display());
                    }
                    None => {
                        let _ =
                            writeln!(err, "  ... {more} more (--dead-letters FILE has them all)");
                    }
                }
            }
        }
        if let Some(e) = &self.write_error {
            let _ = writeln!(err, "warning: dead letters not all written: {e}");
        }
    }
}
