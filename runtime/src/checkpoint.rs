//! Checkpoints: snapshots of the whole query, so that a query killed at any moment starts
//! again where its last snapshot was, with no duplicate and no gap at its outputs.
//!
//! Every [`Checkpoints::every`] (10 s by default) the query takes a snapshot between two calls
//! into its driver, at a moment when every input has said where its source stands after the
//! items it enqueued ([`InputContext::commit_position`]):
//!
//! - the state of the whole query ([`Driver::save_state`]: every input's ingress, every
//!   operator's held events, groups, timers and results);
//! - each input's source position ([`SourcePosition`]: a file's byte offset and line);
//! - each output's position: the output task is told after the last batch it was sent before
//!   the snapshot, makes what it wrote durable ([`OutputAdapter::checkpoint`]: flushed and
//!   synced) and gives its position (bytes, for a file).
//!
//! The snapshot is written to `snapshot` in the directory (a new file, synced, renamed over
//! the old one: a crash leaves the old snapshot or the new one, never half of one), with a
//! format version, the query's name and identity ([`Checkpoints::identity`]: a job file's
//! text), and a checksum.
//!
//! Started again with the same directory, the query restores its state from the snapshot,
//! each output goes back to its position ([`OutputAdapter::rewind`]: a file is cut there,
//! dropping what was written after the snapshot), and each input resumes at its position
//! ([`InputContext::resume_from`]); an input that had ended is not started again. From there
//! the query runs as an uninterrupted run would have: what a restart costs is the work since
//! the last snapshot, not the input read so far. A snapshot that is truncated, damaged, of
//! another format version, of another query or of another identity is refused with the
//! reason; two runs on one directory cannot both run (a lock).
//!
//! What it needs, checked when the query starts: every input's factory says its adapter can
//! resume ([`InputAdapterFactory::resumable`]: a file input, not standard input or follow
//! mode), and every output can checkpoint (the JSON-lines file output). A watermark strategy's
//! state is in the snapshot; after a restart its clock readings go on from the new process's
//! clock.
//!
//! [`Driver::save_state`]: punctual_engine::Driver::save_state
//! [`OutputAdapter::checkpoint`]: crate::OutputAdapter::checkpoint
//! [`OutputAdapter::rewind`]: crate::OutputAdapter::rewind
//! [`InputContext::commit_position`]: crate::InputContext::commit_position
//! [`InputContext::resume_from`]: crate::InputContext::resume_from
//! [`InputAdapterFactory::resumable`]: crate::InputAdapterFactory::resumable

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::AdapterError;

/// The first bytes of a snapshot file.
const MAGIC: &[u8; 8] = b"PUNCSNAP";

/// The version of the snapshot format this build writes and reads.
pub const SNAPSHOT_FORMAT: u32 = 2;

/// Where an input's source stands after the items its adapter enqueued: what the adapter needs
/// to resume there (a file: its byte offset and line number; a broker: a sequence number per
/// partition), in numbers the adapter chooses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourcePosition(pub Vec<u64>);

/// Where and how often a query takes snapshots; see the module doc and
/// [`Query::checkpoints`](crate::Query::checkpoints).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoints {
    dir: PathBuf,
    every: Duration,
    identity: Option<String>,
}

/// A snapshot as the directory holds it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Snapshot {
    /// The query's name.
    pub(crate) query: String,
    /// A hash of the query's identity ([`Checkpoints::identity`]), if it was given one.
    pub(crate) identity: Option<u64>,
    /// How many snapshots the directory has held, this one included.
    pub(crate) seq: u64,
    /// Each input's position, by name (`None`: it had enqueued nothing yet).
    pub(crate) inputs: Vec<(String, Option<SourcePosition>)>,
    /// Each output's position, by name.
    pub(crate) outputs: Vec<(String, u64)>,
    /// The state of each worker that took it (one for a query on one worker).
    pub(crate) workers: Vec<WorkerState>,
}

/// One worker's part of a snapshot.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct WorkerState {
    /// Its driver's state ([`Driver::save_state`](punctual_engine::Driver::save_state)).
    pub(crate) driver: Vec<u8>,
    /// What its executor held between the workers (empty on one worker).
    pub(crate) executor: Vec<u8>,
}

impl Checkpoints {
    /// Snapshots in `dir` (created if missing), every 10 s.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Checkpoints {
            dir: dir.into(),
            every: Duration::from_secs(10),
            identity: None,
        }
    }

    /// A snapshot every `every` (`Duration::ZERO`: as often as the query allows, for tests).
    pub fn every(mut self, every: Duration) -> Self {
        self.every = every;
        self
    }

    /// What the query is beyond its name and shape (a job file's text, a query's text): a
    /// snapshot taken with another identity is refused, so that a changed query never
    /// continues from the state of the old one.
    pub fn identity(mut self, identity: impl Into<String>) -> Self {
        self.identity = Some(identity.into());
        self
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// How often.
    pub(crate) fn interval(&self) -> Duration {
        self.every
    }

    /// The hash of the identity, as a snapshot records it.
    pub(crate) fn identity_hash(&self) -> Option<u64> {
        self.identity.as_deref().map(|i| fnv1a(i.as_bytes()))
    }

    /// The snapshot file.
    fn file(&self) -> PathBuf {
        self.dir.join("snapshot")
    }

    /// The latest snapshot of query `query`, if the directory holds one; refused with the
    /// reason if it is truncated, damaged, of another format version, query or identity.
    pub(crate) fn load(&self, query: &str) -> Result<Option<Snapshot>, AdapterError> {
        let path = self.file();
        let refuse = |why: String| {
            AdapterError::Config(format!(
                "checkpoint {}: {why}; remove the directory to start over",
                path.display()
            ))
        };
        let Some(snapshot) = self.read()? else {
            return Ok(None);
        };
        if snapshot.query != query {
            return Err(refuse(format!(
                "it is a snapshot of query `{}`, not of `{query}`",
                snapshot.query
            )));
        }
        if snapshot.identity != self.identity_hash() {
            return Err(refuse(
                "it is a snapshot of another version of this query (its text differs)".to_owned(),
            ));
        }
        Ok(Some(snapshot))
    }

    /// How many workers took the latest snapshot in the directory (`None`: it holds none),
    /// which is how many parts a run restored from it splits its keys into; refused as
    /// [`Checkpoints`] refuses a snapshot it cannot read.
    ///
    /// ```
    /// use punctual_runtime::Checkpoints;
    ///
    /// let dir = std::env::temp_dir().join(format!("punctual-doc-parts-{}", std::process::id()));
    /// assert_eq!(Checkpoints::new(&dir).workers().unwrap(), None);
    /// ```
    pub fn workers(&self) -> Result<Option<usize>, AdapterError> {
        Ok(self.read()?.map(|s| s.workers.len()))
    }

    /// The snapshot in the directory, checked for its format (not for the query).
    fn read(&self) -> Result<Option<Snapshot>, AdapterError> {
        let path = self.file();
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(AdapterError::Io { path, error }),
        };
        read_snapshot(&bytes).map(Some).map_err(|why| {
            AdapterError::Config(format!(
                "checkpoint {}: {why}; remove the directory to start over",
                path.display()
            ))
        })
    }

    /// Writes `snapshot`: a new file, synced, renamed over the old one, the directory synced.
    pub(crate) fn save(&self, snapshot: &Snapshot) -> Result<(), AdapterError> {
        use std::io::Write;
        let path = self.file();
        let tmp = path.with_extension("tmp");
        let io = |path: &Path| {
            let path = path.to_owned();
            move |error| AdapterError::Io { path, error }
        };
        let body = bincode::serialize(snapshot).map_err(AdapterError::other)?;
        let mut f = std::fs::File::create(&tmp).map_err(io(&tmp))?;
        f.write_all(MAGIC).map_err(io(&tmp))?;
        f.write_all(&SNAPSHOT_FORMAT.to_le_bytes())
            .map_err(io(&tmp))?;
        f.write_all(&(body.len() as u64).to_le_bytes())
            .map_err(io(&tmp))?;
        f.write_all(&checksum(&body).to_le_bytes())
            .map_err(io(&tmp))?;
        f.write_all(&body).map_err(io(&tmp))?;
        f.sync_all().map_err(io(&tmp))?;
        drop(f);
        std::fs::rename(&tmp, &path).map_err(io(&path))?;
        if let Ok(dir) = std::fs::File::open(&self.dir) {
            // The rename made durable (where the platform syncs a directory).
            let _ = dir.sync_all();
        }
        Ok(())
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

/// A snapshot body's checksum: a word at a time (a state of many megabytes is summed fast).
fn checksum(bytes: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut h = punctual_core::ops::FxHasher::default();
    h.write(bytes);
    h.write_usize(bytes.len());
    h.finish()
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

/// Reads a snapshot file's bytes: its header checked (magic, version, length, checksum).
fn read_snapshot(bytes: &[u8]) -> Result<Snapshot, String> {
    let head = MAGIC.len() + 4 + 8 + 8;
    if bytes.len() < head || &bytes[..MAGIC.len()] != MAGIC {
        return Err("not a snapshot file (no snapshot header)".to_owned());
    }
    let word = |at: usize, n: usize| -> u64 {
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(&bytes[at..at + n]);
        u64::from_le_bytes(b)
    };
    let version = word(MAGIC.len(), 4);
    if version != u64::from(SNAPSHOT_FORMAT) {
        return Err(format!(
            "it is in snapshot format {version}; this build reads format {SNAPSHOT_FORMAT}"
        ));
    }
    let length = word(MAGIC.len() + 4, 8);
    let sum = word(MAGIC.len() + 12, 8);
    let body = &bytes[head..];
    if body.len() as u64 != length {
        return Err(format!(
            "it is truncated: {} of its {length} bytes",
            body.len()
        ));
    }
    if checksum(body) != sum {
        return Err("it is damaged: its checksum does not match its bytes".to_owned());
    }
    bincode::deserialize(body).map_err(|e| format!("it cannot be read: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot() -> Snapshot {
        Snapshot {
            query: "q".to_owned(),
            identity: None,
            seq: 3,
            inputs: vec![("in".to_owned(), Some(SourcePosition(vec![120, 7])))],
            outputs: vec![("out".to_owned(), 99)],
            workers: vec![WorkerState {
                driver: vec![1, 2, 3],
                executor: Vec::new(),
            }],
        }
    }

    fn dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("punctual-ckpt-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temp dir");
        dir
    }

    #[test]
    fn a_snapshot_is_saved_whole_and_read_back() {
        let dir = dir("whole");
        let c = Checkpoints::new(&dir);
        assert!(c.load("q").expect("readable").is_none());
        c.save(&snapshot()).expect("saved");
        let back = c.load("q").expect("readable").expect("there");
        assert_eq!(
            (back.seq, back.inputs, back.outputs),
            (3, snapshot().inputs, snapshot().outputs)
        );
        std::fs::remove_dir_all(&dir).ok();
    }

    /// Each refusal names its reason: truncated, damaged, another format, another query,
    /// another identity.
    #[test]
    fn a_snapshot_that_is_not_this_querys_is_refused_with_the_reason() {
        let dir = dir("refused");
        let c = Checkpoints::new(&dir);
        c.save(&snapshot()).expect("saved");
        let file = dir.join("snapshot");
        let whole = std::fs::read(&file).expect("written");
        let refusal = |bytes: &[u8], query: &str, c: &Checkpoints| {
            std::fs::write(&file, bytes).expect("written");
            c.load(query).expect_err("refused").to_string()
        };
        assert!(refusal(&whole[..whole.len() - 2], "q", &c).contains("truncated"));
        let mut damaged = whole.clone();
        let last = damaged.len() - 1;
        damaged[last] ^= 1;
        assert!(refusal(&damaged, "q", &c).contains("damaged"));
        let mut other = whole.clone();
        other[8] = 9;
        assert!(refusal(&other, "q", &c).contains("format 9"));
        assert!(refusal(&whole, "other", &c).contains("of query `q`"));
        let changed = Checkpoints::new(&dir).identity("SELECT 2");
        assert!(refusal(&whole, "q", &changed).contains("another version of this query"));
        assert!(refusal(b"hello", "q", &c).contains("not a snapshot"));
        std::fs::remove_dir_all(&dir).ok();
    }
}
