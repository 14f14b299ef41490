//! Checkpoints and restore: exactly-once output across a crash, for queries whose inputs can
//! replay their source (files).
//!
//! A query is deterministic: the same input, read again, gives the same output, CTI for CTI
//! (the results between two CTIs do not depend on arrival order, and an input's CTIs come from
//! its own items and settings). So a checkpoint does not copy the operators' state; it records,
//! per output, the last CTI it made durable and its position there (bytes, for a file):
//!
//! - while running, each output, after a batch that ends with a CTI (at most once per
//!   [`Checkpoints::every`]), flushes and syncs what it wrote
//!   ([`OutputAdapter::checkpoint`]) and then records `(CTI, position)` in the checkpoint
//!   directory (written to a temporary file and renamed: a crash leaves the old record or the
//!   new one, never half of one);
//! - started again with the same directory, each output goes back to its recorded position
//!   ([`OutputAdapter::rewind`]: a file is cut there, dropping anything written after the
//!   checkpoint), the inputs replay their sources from the start, and the output skips what it
//!   already has: every CTI up to the recorded one and every event before it (on an ordered
//!   stream, every event before `CTI(t)` has a sync time before `t` and every event after it
//!   does not). From there on it writes as an uninterrupted run would have.
//!
//! The final `CTI(+inf)` is never recorded: a stop with a drain emits it as if the input had
//! ended there, and a query started again after such a stop continues from the last finite
//! checkpoint, cutting the drained tail, as after a crash.
//!
//! The result: no duplicate and no gap at the output, whenever the process is killed. What it
//! needs, checked when the query starts: every input's factory says its adapter can replay
//! ([`InputAdapterFactory::replayable`]: the file inputs, not standard input or follow mode),
//! no input has a watermark strategy (those read a wall clock), and every output is bound to an
//! ordered stream and can checkpoint (the JSON-lines file output).
//!
//! A restore re-reads the inputs from their start: its cost grows with the input, not with the
//! state.
//!
//! [`OutputAdapter::checkpoint`]: crate::OutputAdapter::checkpoint
//! [`OutputAdapter::rewind`]: crate::OutputAdapter::rewind
//! [`InputAdapterFactory::replayable`]: crate::InputAdapterFactory::replayable

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use punctual_core::{Batch, StreamItem, Time};

use crate::error::AdapterError;

/// Where and how often a query records checkpoints; see the module doc and
/// [`Query::checkpoints`](crate::Query::checkpoints).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoints {
    dir: PathBuf,
    every: Duration,
}

impl Checkpoints {
    /// Checkpoints in `dir` (created if missing), at most once a second per output.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Checkpoints {
            dir: dir.into(),
            every: Duration::from_secs(1),
        }
    }

    /// At most one checkpoint per output every `every` (`Duration::ZERO`: after every batch
    /// that ends with a CTI).
    pub fn every(mut self, every: Duration) -> Self {
        self.every = every;
        self
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// How often, at most.
    pub(crate) fn interval(&self) -> Duration {
        self.every
    }

    /// The record of output `name`.
    fn file(&self, name: &str) -> PathBuf {
        let safe: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        self.dir.join(format!("output-{safe}.json"))
    }

    /// The position output `name` recorded last, if any.
    pub(crate) fn load(&self, name: &str) -> Result<Option<Position>, AdapterError> {
        let path = self.file(name);
        match std::fs::read(&path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes)
                    .map(Some)
                    .map_err(|e| AdapterError::Malformed {
                        path,
                        line: 1,
                        message: format!("not a checkpoint record: {e}"),
                    })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(AdapterError::Io { path, error }),
        }
    }

    /// Records `position` for output `name`: a new file, synced, renamed over the old one.
    pub(crate) fn save(&self, name: &str, position: Position) -> Result<(), AdapterError> {
        let path = self.file(name);
        let tmp = path.with_extension("json.tmp");
        let io = |path: &Path| {
            let path = path.to_owned();
            move |error| AdapterError::Io { path, error }
        };
        let text = serde_json::to_vec(&position).map_err(AdapterError::other)?;
        {
            use std::io::Write;
            let mut f = std::fs::File::create(&tmp).map_err(io(&tmp))?;
            f.write_all(&text).map_err(io(&tmp))?;
            f.sync_data().map_err(io(&tmp))?;
        }
        std::fs::rename(&tmp, &path).map_err(io(&path))
    }

    /// Creates the directory, takes its lock (one run at a time: the lock goes with the file
    /// it returns, and with the process), and checks the inputs against the record of what
    /// they were when the checkpoints began (written now if there is none): a restore of
    /// inputs that changed would write the results of other data after the old ones.
    pub(crate) fn prepare(
        &self,
        inputs: &[(String, PathBuf)],
    ) -> Result<std::fs::File, AdapterError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |error| AdapterError::Io { path, error }
        };
        std::fs::create_dir_all(&self.dir).map_err(io(&self.dir))?;
        let lock_path = self.dir.join("LOCK");
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io(&lock_path))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(AdapterError::Config(format!(
                    "the checkpoint directory {} is in use by another run: give each run its own",
                    self.dir.display()
                )))
            }
            Err(std::fs::TryLockError::Error(error)) => {
                return Err(AdapterError::Io {
                    path: lock_path,
                    error,
                })
            }
        }
        let now: Vec<InputFile> = inputs
            .iter()
            .map(|(name, path)| InputFile::of(name, path))
            .collect::<Result<_, _>>()?;
        let record = self.dir.join("inputs.json");
        match std::fs::read(&record) {
            Ok(bytes) => {
                let then: Vec<InputFile> =
                    serde_json::from_slice(&bytes).map_err(|e| AdapterError::Malformed {
                        path: record.clone(),
                        line: 1,
                        message: format!("not a record of inputs: {e}"),
                    })?;
                if let Some(why) = changed(&then, &now) {
                    return Err(AdapterError::Config(format!(
                        "{why} since the checkpoints in {} began: a restore would replay other data into the old outputs; remove the directory to start over",
                        self.dir.display()
                    )));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let text = serde_json::to_vec_pretty(&now).map_err(AdapterError::other)?;
                let tmp = record.with_extension("json.tmp");
                std::fs::write(&tmp, text).map_err(io(&tmp))?;
                std::fs::rename(&tmp, &record).map_err(io(&record))?;
            }
            Err(error) => {
                return Err(AdapterError::Io {
                    path: record,
                    error,
                })
            }
        }
        Ok(lock)
    }
}

/// What a checkpoint records of one input file: enough to tell that it changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct InputFile {
    input: String,
    path: PathBuf,
    bytes: u64,
    /// Modification time, in nanoseconds since the Unix epoch (`None` where unknown).
    modified: Option<u128>,
    /// FNV-1a of its first [`PREFIX`] bytes.
    prefix_hash: u64,
}

/// How much of an input file's start a checkpoint's record hashes.
const PREFIX: usize = 64 * 1024;

impl InputFile {
    fn of(input: &str, path: &Path) -> Result<InputFile, AdapterError> {
        use std::io::Read;
        let io = |error| AdapterError::Io {
            path: path.to_owned(),
            error,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        let mut start = Vec::with_capacity(PREFIX);
        file.take(PREFIX as u64)
            .read_to_end(&mut start)
            .map_err(io)?;
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos());
        Ok(InputFile {
            input: input.to_owned(),
            path: std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned()),
            bytes: meta.len(),
            modified,
            prefix_hash: fnv1a(&start),
        })
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// How the inputs `now` differ from the record `then`, if they do.
fn changed(then: &[InputFile], now: &[InputFile]) -> Option<String> {
    for n in now {
        let Some(t) = then.iter().find(|t| t.input == n.input && t.path == n.path) else {
            return Some(format!(
                "input `{}` reads {}, which it did not",
                n.input,
                n.path.display()
            ));
        };
        let what = if t.bytes != n.bytes {
            format!("its size went from {} to {} bytes", t.bytes, n.bytes)
        } else if t.prefix_hash != n.prefix_hash {
            "its first bytes differ".to_owned()
        } else if t.modified != n.modified {
            "it was modified".to_owned()
        } else {
            continue;
        };
        return Some(format!(
            "input `{}` ({}) changed: {what},",
            n.input,
            n.path.display()
        ));
    }
    then.iter()
        .find(|t| !now.iter().any(|n| n.input == t.input && n.path == t.path))
        .map(|t| format!("input `{}` no longer reads {},", t.input, t.path.display()))
}

/// What an output recorded at a checkpoint: the CTI it had written through, and its position
/// just after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Position {
    pub(crate) cti: Time,
    pub(crate) bytes: u64,
}

/// Whether `batch` ends with a CTI (no event after its last CTI): a point where an output's
/// position can be recorded.
pub(crate) fn ends_with_cti<P>(batch: &Batch<P>) -> Option<Time> {
    batch
        .ctis()
        .last()
        .filter(|m| m.after == batch.len())
        .map(|m| m.time)
}

/// What of `batch` an output restored at `CTI(t)` has not written yet: every CTI up to `t` and
/// every event before `t` left out. `None` when it has written all of it.
pub(crate) fn after<P: Clone>(batch: &Batch<P>, t: Time) -> Option<Batch<P>> {
    let mut rest = Batch::new();
    let mut skipping = true;
    for item in batch.items() {
        if skipping {
            let written = match &item {
                StreamItem::Cti(c) => *c <= t,
                StreamItem::Insert(e) => e.kind.sync_time() < t,
            };
            if written {
                continue;
            }
            skipping = false;
        }
        match item {
            StreamItem::Cti(c) => rest.push_cti(c),
            StreamItem::Insert(e) => rest.push(e.kind, e.payload.clone()),
        }
    }
    (!skipping).then_some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(x: i64) -> Time {
        Time::from_ticks(x)
    }

    #[test]
    fn a_restored_output_skips_what_it_wrote_through_its_cti() {
        let mut b = Batch::new();
        b.push_point(t(1), 'a');
        b.push_cti(t(2));
        b.push_point(t(2), 'b');
        b.push_point(t(3), 'c');
        b.push_cti(t(4));
        assert_eq!(ends_with_cti(&b), Some(t(4)));
        let rest = after(&b, t(2)).expect("something left");
        let items: Vec<StreamItem<char>> = rest.items().map(|i| i.map(|p| *p)).collect();
        assert_eq!(
            items,
            vec![
                StreamItem::point(t(2), 'b'),
                StreamItem::point(t(3), 'c'),
                StreamItem::Cti(t(4))
            ]
        );
        assert!(after(&b, t(4)).is_none(), "all of it written");
        b.push_point(t(5), 'd');
        assert_eq!(ends_with_cti(&b), None);
    }

    #[test]
    fn records_are_saved_whole_and_read_back() {
        let dir = std::env::temp_dir().join(format!("punctual-ckpt-{}", std::process::id()));
        let c = Checkpoints::new(&dir);
        let _lock = c.prepare(&[]).expect("a temp dir");
        assert_eq!(c.load("out/1").expect("readable"), None);
        let p = Position {
            cti: t(7),
            bytes: 99,
        };
        c.save("out/1", p).expect("saved");
        assert_eq!(c.load("out/1").expect("readable"), Some(p));
    }
}
