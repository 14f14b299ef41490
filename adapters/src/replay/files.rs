//! The files a file input reads: the partitions a path names, and their lines (a whole file,
//! standard input, or one byte range of a file).

use std::path::{Path, PathBuf};

use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader};

use super::ReplayOptions;
use punctual_runtime::error::AdapterError;

/// Whether a file input can resume at a byte offset, reading the same lines from there: a
/// regular file (or one not there yet: the run reports that), not standard input, a FIFO or a
/// device, and not in follow mode.
pub(crate) fn resumable(path: &Path, replay: ReplayOptions) -> bool {
    path.as_os_str() != "-"
        && !replay.follow
        && std::fs::metadata(path).map_or(true, |m| m.is_file())
}

/// The files a file input's `path` names, for a checkpoint's record: its partitions' files,
/// or the path itself when they cannot be listed (the run reports why).
pub(crate) fn source_files(path: &Path) -> Vec<PathBuf> {
    partition_files(path).unwrap_or_else(|_| vec![path.to_owned()])
}

/// The files a file input's `path` names, one partition each: the path itself, or, when its
/// file name holds `*` (any characters) or `?` (one character), every file of its directory
/// whose name matches, sorted by name. A pattern that matches nothing is an error naming it.
pub(crate) fn partition_files(path: &Path) -> Result<Vec<PathBuf>, AdapterError> {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return Ok(vec![path.to_owned()]);
    };
    if !name.contains(['*', '?']) {
        return Ok(vec![path.to_owned()]);
    }
    let pattern: Vec<char> = name.chars().collect();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let entries = std::fs::read_dir(&dir).map_err(|error| AdapterError::Io {
        path: dir.clone(),
        error,
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| {
            let name: Vec<char> = e.file_name().to_string_lossy().chars().collect();
            wildcard(&pattern, &name)
        })
        .map(|e| dir.join(e.file_name()))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(AdapterError::Config(format!(
            "no file matches `{}`",
            path.display()
        )));
    }
    Ok(files)
}

/// Whether a file input's `path` names `file`: it is `file`, or its file name is a pattern (`*`,
/// `?`) that `file`'s name matches in the same directory. Paths are compared as given:
/// make them canonical first to compare the files.
///
/// ```
/// use std::path::Path;
/// use punctual_adapters::replay::names_file;
/// assert!(names_file(Path::new("/d/day-*.csv"), Path::new("/d/day-2.csv")));
/// assert!(!names_file(Path::new("/d/day-*.csv"), Path::new("/e/day-2.csv")));
/// assert!(names_file(Path::new("/d/a.csv"), Path::new("/d/a.csv")));
/// ```
pub fn names_file(path: &Path, file: &Path) -> bool {
    if path == file {
        return true;
    }
    let (Some(pattern), Some(name)) = (path.file_name(), file.file_name()) else {
        return false;
    };
    let (Some(pattern), Some(name)) = (pattern.to_str(), name.to_str()) else {
        return false;
    };
    pattern.contains(['*', '?'])
        && path.parent() == file.parent()
        && wildcard(
            &pattern.chars().collect::<Vec<_>>(),
            &name.chars().collect::<Vec<_>>(),
        )
}

/// Whether `name` matches `pattern` (`*`: any characters, `?`: one).
pub(super) fn wildcard(pattern: &[char], name: &[char]) -> bool {
    // Matches of the pattern's prefix against each prefix of the name, row by row.
    let mut row = vec![false; name.len() + 1];
    row[0] = true;
    for &p in pattern {
        let mut next = vec![false; name.len() + 1];
        if p == '*' {
            next[0] = row[0];
            for j in 1..=name.len() {
                next[j] = row[j] || next[j - 1];
            }
        } else {
            for j in 1..=name.len() {
                next[j] = row[j - 1] && (p == '?' || p == name[j - 1]);
            }
        }
        row = next;
    }
    row[name.len()]
}

/// The file of partition `partition` of a file input's `path` (see [`partition_files`]).
pub(crate) fn partition_file(path: &Path, partition: usize) -> Result<PathBuf, AdapterError> {
    let mut files = partition_files(path)?;
    let n = files.len();
    if partition >= n {
        return Err(AdapterError::Config(format!(
            "partition {partition} of `{}`, which names {n} file(s)",
            path.display()
        )));
    }
    Ok(files.swap_remove(partition))
}

/// A line source: the reader, and whether it is live (standard input, a FIFO, a device: lines
/// come when someone writes them) rather than a regular file.
pub(crate) struct Lines {
    pub(crate) reader: Box<dyn AsyncBufRead + Unpin + Send>,
    pub(crate) live: bool,
    /// Whether its first line is the file's first line (a part of a split file after the
    /// first byte does not start there; nor does a part with no bytes of its own).
    pub(crate) from_start: bool,
}

/// The buffer of a file read or written: each fill or flush of a `tokio` file is a call on
/// its blocking thread pool (a thread switch each way), so a large one makes few.
pub(crate) const FILE_BUFFER: usize = 256 * 1024;

/// Opens a file for line reading from byte `from` (a line's start); `-` is standard input.
pub(crate) async fn open_lines(path: &Path, from: u64) -> Result<Lines, AdapterError> {
    if path.as_os_str() == "-" {
        return Ok(Lines {
            reader: Box::new(BufReader::new(tokio::io::stdin())),
            live: true,
            from_start: true,
        });
    }
    let io = |source| AdapterError::Io {
        path: path.to_owned(),
        error: source,
    };
    let mut file = tokio::fs::File::open(path).await.map_err(io)?;
    let live = !file.metadata().await.map_err(io)?.is_file();
    if from > 0 {
        use tokio::io::AsyncSeekExt;
        file.seek(std::io::SeekFrom::Start(from))
            .await
            .map_err(io)?;
    }
    Ok(Lines {
        reader: Box::new(BufReader::with_capacity(FILE_BUFFER, file)),
        live,
        from_start: from == 0,
    })
}

/// Opens part `part` of `parts` of a regular file for line reading: the lines that start in
/// its share of the file's bytes (`[len * part / parts, len * (part + 1) / parts)`), the last
/// one read to its end wherever that is. Every line of the file is in exactly one part.
/// `from`: resumes at that byte (a line's start within the part) instead of the part's start.
pub(crate) async fn open_range(
    path: &Path,
    (part, parts): (usize, usize),
    from: Option<u64>,
) -> Result<Lines, AdapterError> {
    use tokio::io::AsyncSeekExt;
    let io = |source| AdapterError::Io {
        path: path.to_owned(),
        error: source,
    };
    let file = tokio::fs::File::open(path).await.map_err(io)?;
    let meta = file.metadata().await.map_err(io)?;
    if !meta.is_file() {
        return Err(AdapterError::Config(format!(
            "`{}` is not a regular file: only a file can be split by byte ranges",
            path.display()
        )));
    }
    let share = |k: usize| (u128::from(meta.len()) * k as u128 / parts.max(1) as u128) as u64;
    let (start, end) = (share(part), share(part + 1));
    let mut reader = BufReader::with_capacity(FILE_BUFFER, file);
    let mut at = start;
    if let Some(from) = from.filter(|&f| f > start) {
        // Resumed: the lines before `from` were read before.
        reader
            .seek(std::io::SeekFrom::Start(from))
            .await
            .map_err(io)?;
        let left = end.saturating_sub(from);
        return Ok(Lines {
            reader: Box::new(RangeLines {
                inner: reader,
                left,
                open: false,
                done: left == 0,
            }),
            live: false,
            from_start: false,
        });
    }
    if start > 0 {
        // The line in progress at `start` belongs to the part before: skip to its end (from
        // the byte before `start`, so that a line starting exactly at `start` is kept).
        reader
            .seek(std::io::SeekFrom::Start(start - 1))
            .await
            .map_err(io)?;
        let mut skipped = Vec::new();
        let n = reader.read_until(b'\n', &mut skipped).await.map_err(io)?;
        at = start - 1 + n as u64;
    }
    Ok(Lines {
        reader: Box::new(RangeLines {
            inner: reader,
            left: end.saturating_sub(at),
            open: false,
            done: at >= end,
        }),
        live: false,
        from_start: start == 0 && end > 0,
    })
}

/// A reader of the lines that start before a limit: `left` bytes, then the rest of the line
/// they end in.
struct RangeLines {
    inner: BufReader<tokio::fs::File>,
    /// Bytes left before the limit.
    left: u64,
    /// Whether the last byte handed out ends no line (a line is in progress).
    open: bool,
    done: bool,
}

impl tokio::io::AsyncRead for RangeLines {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use tokio::io::AsyncBufRead as _;
        let available = match self.as_mut().poll_fill_buf(cx) {
            std::task::Poll::Ready(Ok(b)) => b,
            std::task::Poll::Ready(Err(e)) => return std::task::Poll::Ready(Err(e)),
            std::task::Poll::Pending => return std::task::Poll::Pending,
        };
        let n = available.len().min(buf.remaining());
        buf.put_slice(&available[..n]);
        self.consume(n);
        std::task::Poll::Ready(Ok(()))
    }
}

impl AsyncBufRead for RangeLines {
    fn poll_fill_buf(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<&[u8]>> {
        let this = self.get_mut();
        if this.done {
            return std::task::Poll::Ready(Ok(&[]));
        }
        let (left, open) = (this.left, this.open);
        let buf = match std::pin::Pin::new(&mut this.inner).poll_fill_buf(cx) {
            std::task::Poll::Ready(Ok(b)) => b,
            other => return other,
        };
        let n = if left > 0 {
            buf.len().min(usize::try_from(left).unwrap_or(usize::MAX))
        } else if open {
            // Past the limit: the rest of the line in progress, up to its end.
            buf.iter()
                .position(|&b| b == b'\n')
                .map_or(buf.len(), |i| i + 1)
        } else {
            0
        };
        std::task::Poll::Ready(Ok(&buf[..n]))
    }

    fn consume(self: std::pin::Pin<&mut Self>, amt: usize) {
        let this = self.get_mut();
        if amt == 0 {
            return;
        }
        // What was handed out is still in the inner buffer until it is consumed.
        this.open = this.inner.buffer().get(amt - 1) != Some(&b'\n');
        this.left = this.left.saturating_sub(amt as u64);
        std::pin::Pin::new(&mut this.inner).consume(amt);
        this.done = this.left == 0 && !this.open;
    }
}

/// One partition of a file input, the one file reader behind the CSV and JSON-lines inputs: a
/// file (a path whose name holds `*` or `?` names several, one partition each), read whole or
/// as one of the byte ranges `split` cuts it into.
#[derive(Clone, Debug)]
pub(crate) struct FilePart {
    /// The file.
    pub(crate) path: PathBuf,
    /// Part `k` of `n` of the file, when it is split.
    pub(crate) part: Option<(usize, usize)>,
}

impl FilePart {
    /// How many partitions a file input's `path` read as `split` parts per file makes.
    pub(crate) fn count(path: &Path, split: Option<usize>) -> usize {
        let files = partition_files(path).map_or(1, |files| files.len());
        files * split.unwrap_or(1).max(1)
    }

    /// Partition `partition` of a file input's `path` read as `split` parts per file, with its
    /// replay options checked (a split file must be a regular file read to its end).
    pub(crate) fn of(
        path: &Path,
        replay: ReplayOptions,
        split: Option<usize>,
        partition: usize,
    ) -> Result<FilePart, AdapterError> {
        replay.validate()?;
        if let Some(parts) = split.filter(|p| !(1..=super::MAX_SPLIT).contains(p)) {
            return Err(AdapterError::Config(format!(
                "`split = {parts}`: a file is split into 1 to {} parts",
                super::MAX_SPLIT
            )));
        }
        let parts = split.unwrap_or(1).max(1);
        if parts > 1 && (replay.follow || path.as_os_str() == "-") {
            return Err(AdapterError::Config(
                "`split` reads a regular file by byte ranges: not standard input or follow mode"
                    .into(),
            ));
        }
        Ok(FilePart {
            path: partition_file(path, partition / parts)?,
            part: (parts > 1).then_some((partition % parts, parts)),
        })
    }

    /// Opens it for line reading, from its start or resumed at byte `from`: its lines, and
    /// its name for messages (the path, and which part of the file it is).
    pub(crate) async fn open(&self, from: Option<u64>) -> Result<(Lines, PathBuf), AdapterError> {
        let path = &self.path;
        Ok(match self.part {
            None => (open_lines(path, from.unwrap_or(0)).await?, path.clone()),
            Some((k, n)) => (
                open_range(path, (k, n), from).await?,
                PathBuf::from(format!("{} (part {} of {n})", path.display(), k + 1)),
            ),
        })
    }
}
