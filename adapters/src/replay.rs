//! How file inputs replay: as fast as possible or at a speed factor of the event timestamps,
//! optionally following the file as it grows (tail), and with a final CTI at end of file.
//! Shared by the JSON-lines and CSV inputs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, BufReader, BufWriter};
use tokio::time::Instant;

use punctual_core::{StreamItem, Time, TICKS_PER_SECOND};
use punctual_policies::MalformedRecord;

use crate::adapter::Payload;
use crate::context::InputContext;
use crate::error::AdapterError;
use crate::memory::BATCH;

/// What a file input does with a line it cannot parse.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MalformedLines {
    /// Fail the adapter (and the query) with the file, line and reason.
    Fail,
    /// Count it as `malformed`, dead-letter it, and go on (the file inputs' default).
    #[default]
    Skip,
}

/// Replay options of a file input.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReplayOptions {
    /// `None`: as fast as possible. `Some(s)`: pace events by their timestamps, `s` times as
    /// fast as they happened (`1.0`: real time).
    pub speed: Option<f64>,
    /// At end of file, wait for more lines (polling every 200 ms) until the query stops.
    pub follow: bool,
    /// Enqueue `CTI(+inf)` at end of file (not in follow mode). Default: yes.
    pub final_cti: bool,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            speed: None,
            follow: false,
            final_cti: true,
        }
    }
}

/// Paces a replay by event time.
#[derive(Debug)]
pub(crate) struct Pacer {
    speed: Option<f64>,
    origin: Option<(Time, Instant)>,
}

/// The longest wait a replay speed can ask for (about 30 years).
const FAR_FUTURE: Duration = Duration::from_secs(30 * 365 * 86_400);

impl ReplayOptions {
    /// Checks the options: a speed must be a finite number above zero.
    pub fn validate(&self) -> Result<(), AdapterError> {
        match self.speed {
            Some(s) if !(s.is_finite() && s > 0.0) => Err(AdapterError::Config(format!(
                "replay speed must be a finite number above zero, not {s}"
            ))),
            _ => Ok(()),
        }
    }
}

impl Pacer {
    pub(crate) fn new(speed: Option<f64>) -> Self {
        Pacer {
            speed: speed.filter(|s| *s > 0.0 && s.is_finite()),
            origin: None,
        }
    }

    /// How long to wait before an event at `t` is due (`None`: now).
    pub(crate) fn due(&mut self, t: Time) -> Option<Instant> {
        let speed = self.speed?;
        if t.is_infinite() {
            return None;
        }
        let (t0, w0) = *self.origin.get_or_insert((t, Instant::now()));
        let ticks = (t - t0).ticks().max(0) as f64 / speed;
        // A tiny speed makes a wait longer than any clock can add: it saturates (far future).
        let wait = Duration::try_from_secs_f64(ticks / TICKS_PER_SECOND as f64)
            .unwrap_or(Duration::MAX)
            .min(FAR_FUTURE);
        Some(w0.checked_add(wait).unwrap_or(w0 + FAR_FUTURE / 2))
    }
}

/// Whether a file input reads the same lines every time: a regular file (or one not there yet:
/// the run reports that), not standard input, a FIFO or a device, and not in follow mode.
pub(crate) fn replayable(path: &Path, replay: ReplayOptions) -> bool {
    path.as_os_str() != "-"
        && !replay.follow
        && std::fs::metadata(path).map_or(true, |m| m.is_file())
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

/// Whether `name` matches `pattern` (`*`: any characters, `?`: one).
fn wildcard(pattern: &[char], name: &[char]) -> bool {
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
}

/// The buffer of a file read or written: each fill or flush of a `tokio` file is a call on
/// its blocking thread pool (a thread switch each way), so a large one makes few.
pub(crate) const FILE_BUFFER: usize = 256 * 1024;

/// Opens a file for line reading; `-` is standard input.
pub(crate) async fn open_lines(path: &Path) -> Result<Lines, AdapterError> {
    if path.as_os_str() == "-" {
        return Ok(Lines {
            reader: Box::new(BufReader::new(tokio::io::stdin())),
            live: true,
        });
    }
    let io = |source| AdapterError::Io {
        path: path.to_owned(),
        error: source,
    };
    let file = tokio::fs::File::open(path).await.map_err(io)?;
    let live = !file.metadata().await.map_err(io)?.is_file();
    Ok(Lines {
        reader: Box::new(BufReader::with_capacity(FILE_BUFFER, file)),
        live,
    })
}

/// Opens part `part` of `parts` of a regular file for line reading: the lines that start in
/// its share of the file's bytes (`[len * part / parts, len * (part + 1) / parts)`), the last
/// one read to its end wherever that is. Every line of the file is in exactly one part.
pub(crate) async fn open_range(
    path: &Path,
    part: usize,
    parts: usize,
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

/// How long a live input may keep the lines read so far waiting for the rest of a batch.
pub(crate) const LIVE_FLUSH_AFTER: Duration = Duration::from_millis(10);

/// Lines longer than this are malformed: the rest of such a line is skipped, never held.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// One line read: its text, or why it is not a line of text (not UTF-8, too long) with what
/// can be shown of it.
pub(crate) type ReadLine = Result<String, (String, String)>;

/// Reads the next line (without its end) as bytes, following the file at end if asked; `None`
/// at the end, or when `stopping` resolves while it waits for the line. A line that is not UTF-8 or longer
/// than [`MAX_LINE_BYTES`] comes back as `Err((text shown, reason))`: a malformed line, which
/// the caller counts, not the end of the input.
pub(crate) async fn next_line(
    reader: &mut (dyn AsyncBufRead + Unpin + Send),
    follow: bool,
    path: &Path,
    stopping: impl std::future::Future<Output = ()>,
) -> Result<Option<ReadLine>, AdapterError> {
    tokio::pin!(stopping);
    let io = |source| AdapterError::Io {
        path: path.to_owned(),
        error: source,
    };
    let (mut line, mut length, mut ended) = (Vec::new(), 0usize, false);
    loop {
        // A stop ends the wait for a line (standard input may never send another).
        let available = tokio::select! {
            biased;
            read = reader.fill_buf() => read.map_err(io)?,
            _ = &mut stopping => return Ok(None),
        };
        if available.is_empty() {
            if length > 0 && !follow {
                break; // a last line without its end
            }
            if !follow {
                return Ok(None);
            }
            // At the end of a growing file: wait, then look again (a partial line is kept).
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(200)) => continue,
                _ = &mut stopping => return Ok(None),
            }
        }
        let (take, found) = match memchr::memchr(b'\n', available) {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        let room = (MAX_LINE_BYTES + 1).saturating_sub(line.len());
        line.extend_from_slice(&available[..take.min(room)]);
        length += take;
        reader.consume(take);
        if found {
            ended = true;
            break;
        }
    }
    if ended {
        length -= 1;
    }
    Ok(Some(text(line, length)))
}

/// The next line into `line`, if the reader's buffer holds all of it (its end included):
/// taken at once, with nothing to wait on (most lines of a file are), and copied into the
/// caller's `line` (no allocation per line). `None` when the line is not all there; `Some(Err)`
/// for a malformed line, as [`next_line`] says.
async fn buffered_line(
    reader: &mut (dyn AsyncBufRead + Unpin + Send),
    line: &mut String,
) -> std::io::Result<Option<Result<(), (String, String)>>> {
    std::future::poll_fn(|cx| {
        let available = match std::pin::Pin::new(&mut *reader).poll_fill_buf(cx) {
            std::task::Poll::Ready(read) => read?,
            std::task::Poll::Pending => return std::task::Poll::Ready(Ok(None)),
        };
        let Some(end) = memchr::memchr(b'\n', available) else {
            return std::task::Poll::Ready(Ok(None));
        };
        let mut bytes = &available[..end];
        while let [rest @ .., b'\r'] = bytes {
            bytes = rest;
        }
        let read = match std::str::from_utf8(bytes) {
            Ok(text) if end <= MAX_LINE_BYTES => {
                line.clear();
                line.push_str(text);
                Ok(())
            }
            _ => text(available[..=end].to_vec(), end).map(|text| {
                *line = text;
            }),
        };
        std::pin::Pin::new(&mut *reader).consume(end + 1);
        std::task::Poll::Ready(Ok(Some(read)))
    })
    .await
}

/// A line read (its end still on it), of `length` bytes without its end: its text, or why it
/// is not a line of text (too long, not UTF-8).
fn text(mut line: Vec<u8>, length: usize) -> ReadLine {
    while line.last().is_some_and(|&b| b == b'\n' || b == b'\r') {
        line.pop();
    }
    if length > MAX_LINE_BYTES {
        line.truncate(200);
        let shown = String::from_utf8_lossy(&line).into_owned();
        let why = format!("the line is {length} bytes long, over the limit of {MAX_LINE_BYTES}");
        return Err((shown, why));
    }
    String::from_utf8(line).map_err(|e| {
        let at = e.utf8_error().valid_up_to() + 1;
        let shown = String::from_utf8_lossy(e.as_bytes()).into_owned();
        (
            shown,
            format!("not UTF-8 (an invalid byte at byte {at} of the line)"),
        )
    })
}

/// Feeds parsed lines into a stream: paces them, batches them, handles malformed lines, ends
/// with the final CTI. Shared by the file inputs.
///
/// Batches go in one behind the reading: once a batch is read, the one before it is enqueued
/// and the stream's watermark strategy is told the range of start times of the one read
/// ([`InputContext::look_ahead`]: YTsaurus Flow's look-ahead term for a partitioned strategy;
/// a file is partition 0).
pub(crate) struct Feeder<P> {
    path: PathBuf,
    pacer: Pacer,
    /// Read, to be enqueued next.
    pending: Vec<StreamItem<P>>,
    /// Being read: the batch after `pending`.
    ahead: Vec<StreamItem<P>>,
    follow: bool,
    malformed: MalformedLines,
    final_cti: bool,
    /// A live input: what was read is enqueued whenever the next line keeps it waiting.
    live: bool,
    /// Lines that carry no item (blank, `eof`) not yet reported.
    skipped: u64,
    /// The items have ended (see [`Feeder::end`]).
    ended: bool,
}

impl<P: Payload> Feeder<P> {
    pub(crate) fn new(
        path: &Path,
        replay: ReplayOptions,
        malformed: MalformedLines,
        live: bool,
    ) -> Self {
        Feeder {
            path: path.to_owned(),
            pacer: Pacer::new(replay.speed),
            pending: Vec::with_capacity(BATCH),
            ahead: Vec::with_capacity(BATCH),
            follow: replay.follow,
            malformed,
            final_cti: replay.final_cti,
            live,
            skipped: 0,
            ended: false,
        }
    }

    /// A line that carries no item (blank, or an `eof` line): counted as `skipped`.
    pub(crate) fn skip(&mut self) {
        self.skipped += 1;
    }

    /// Reads the next line into `line` (see [`next_line`]): `Some(Ok(()))` when it is there,
    /// `Some(Err((text shown, why)))` for a malformed line, `None` at the end. On a live input,
    /// when that line keeps the reader waiting for more than [`LIVE_FLUSH_AFTER`], what was
    /// read so far is enqueued first: a slow writer's lines are not held back to fill a batch.
    pub(crate) async fn next_line(
        &mut self,
        ctx: &mut InputContext<P>,
        reader: &mut (dyn AsyncBufRead + Unpin + Send),
        (path, line): (&Path, &mut String),
    ) -> Result<Option<Result<(), (String, String)>>, AdapterError> {
        let buffered = buffered_line(reader, line)
            .await
            .map_err(|error| AdapterError::Io {
                path: path.to_owned(),
                error,
            })?;
        if let Some(read) = buffered {
            return Ok(Some(read));
        }
        let into = |read: Option<ReadLine>| {
            read.map(|read| {
                read.map(|text| {
                    *line = text;
                })
            })
        };
        let read = next_line(reader, self.follow, path, ctx.stop_signal());
        tokio::pin!(read);
        if !self.live || (self.pending.is_empty() && self.ahead.is_empty() && self.skipped == 0) {
            return read.await.map(into);
        }
        // One look first: a line already buffered costs no timer.
        let first = std::future::poll_fn(|cx| {
            std::task::Poll::Ready(std::future::Future::poll(read.as_mut(), cx))
        })
        .await;
        if let std::task::Poll::Ready(read) = first {
            return read.map(into);
        }
        tokio::select! {
            biased;
            read = &mut read => return read.map(into),
            _ = tokio::time::sleep(LIVE_FLUSH_AFTER) => {}
        }
        self.flush(ctx).await?;
        read.await.map(into)
    }

    /// Enqueues what was read so far, in order (announcing the batch being read first).
    async fn flush(&mut self, ctx: &mut InputContext<P>) -> Result<(), AdapterError> {
        if self.skipped > 0 {
            ctx.report_skipped(std::mem::take(&mut self.skipped)).await;
        }
        if !self.pending.is_empty() {
            ctx.enqueue_read(&mut self.pending).await?;
        }
        if let Some(range) = start_range(&self.ahead) {
            ctx.look_ahead(0, range).await?;
        }
        if !self.ahead.is_empty() {
            ctx.enqueue_read(&mut self.ahead).await?;
        }
        Ok(())
    }

    /// An item: waits until it is due (at a speed factor), then enqueues it with the others
    /// (at once in follow mode, else in batches, one behind the reading).
    pub(crate) async fn item(
        &mut self,
        ctx: &mut InputContext<P>,
        item: StreamItem<P>,
    ) -> Result<(), AdapterError> {
        if let StreamItem::Insert(e) = &item {
            if let Some(due) = self.pacer.due(e.kind.start()) {
                self.flush(ctx).await?;
                tokio::time::sleep_until(due).await;
            }
        }
        if self.follow {
            self.pending.push(item);
            return self.flush(ctx).await;
        }
        self.ahead.push(item);
        if self.ahead.len() >= BATCH {
            if self.skipped > 0 {
                ctx.report_skipped(std::mem::take(&mut self.skipped)).await;
            }
            if !self.pending.is_empty() {
                ctx.enqueue_read(&mut self.pending).await?;
            }
            if let Some(range) = start_range(&self.ahead) {
                ctx.look_ahead(0, range).await?;
            }
            std::mem::swap(&mut self.pending, &mut self.ahead);
        }
        Ok(())
    }

    /// A line that could not be parsed: an error (`Fail`), or counted and dead-lettered (`Skip`).
    pub(crate) async fn malformed(
        &mut self,
        ctx: &mut InputContext<P>,
        (line, text): (usize, String),
        message: String,
    ) -> Result<(), AdapterError> {
        match self.malformed {
            MalformedLines::Fail => Err(AdapterError::Malformed {
                path: self.path.clone(),
                line,
                message,
            }),
            MalformedLines::Skip => {
                self.flush(ctx).await?;
                ctx.report_malformed(MalformedRecord {
                    location: format!("{}:{line}", self.path.display()),
                    message,
                    text,
                })
                .await;
                Ok(())
            }
        }
    }

    /// End of input: what is pending, then `CTI(+inf)` if asked (not in follow mode).
    pub(crate) async fn finish(mut self, ctx: &mut InputContext<P>) -> Result<(), AdapterError> {
        self.end(ctx).await?;
        self.flush(ctx).await
    }

    /// The query is stopping: what was read is enqueued all the same (it is not lost); with a
    /// drain, the final CTI follows as at the end of the file (if asked, not in follow mode),
    /// with an abort none.
    pub(crate) async fn stopped(mut self, ctx: &mut InputContext<P>) -> Result<(), AdapterError> {
        if ctx.is_draining() && self.final_cti && !self.follow {
            self.ahead.push(StreamItem::Cti(Time::INF));
        }
        self.flush(ctx).await
    }

    /// The end of the input's items (an `eof` line, or the end of the file): what is pending,
    /// then `CTI(+inf)` if asked (not in follow mode). Only the first call does anything;
    /// lines read after it can still be counted.
    pub(crate) async fn end(&mut self, ctx: &mut InputContext<P>) -> Result<(), AdapterError> {
        if std::mem::replace(&mut self.ended, true) {
            return Ok(());
        }
        self.flush(ctx).await?;
        if self.final_cti && !self.follow {
            ctx.enqueue_cti(Time::INF).await?;
        }
        Ok(())
    }
}

/// The least and highest start times of the events among `items` (`None` without events).
pub(crate) fn start_range<P>(items: &[StreamItem<P>]) -> Option<(Time, Time)> {
    items
        .iter()
        .filter_map(|i| match i {
            StreamItem::Insert(e) => Some(e.kind.start()),
            StreamItem::Cti(_) => None,
        })
        .fold(None, |r, t| match r {
            None => Some((t, t)),
            Some((lo, hi)) => Some((lo.min(t), hi.max(t))),
        })
}

/// A buffered writer to a file (created or truncated), or to standard output for `-`.
pub(crate) async fn open_sink(
    path: &Path,
) -> Result<BufWriter<Box<dyn AsyncWrite + Unpin + Send + Sync>>, AdapterError> {
    if path.as_os_str() == "-" {
        return Ok(BufWriter::new(Box::new(tokio::io::stdout())));
    }
    let file = tokio::fs::File::create(path)
        .await
        .map_err(|source| AdapterError::Io {
            path: path.to_owned(),
            error: source,
        })?;
    Ok(BufWriter::with_capacity(FILE_BUFFER, Box::new(file)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines taken from the buffer where they are whole read as lines waited for do: line
    /// ends (`\r\n` too), an empty line, one that is not UTF-8, a last one without its end.
    #[tokio::test]
    async fn lines_in_the_buffer_read_as_lines_waited_for() {
        let input: &[u8] = b"a\r\nb\n\xff\n\nx\r\r\nlast";
        let path = Path::new("lines");
        let mut reader = input;
        let mut waited = Vec::new();
        while let Some(line) = next_line(&mut reader, false, path, std::future::pending())
            .await
            .unwrap()
        {
            waited.push(line);
        }
        let mut reader = input;
        let mut buffered = Vec::new();
        let mut line = String::from("left from before");
        loop {
            if let Some(read) = buffered_line(&mut reader, &mut line).await.unwrap() {
                buffered.push(read.map(|()| line.clone()));
                continue;
            }
            match next_line(&mut reader, false, path, std::future::pending())
                .await
                .unwrap()
            {
                Some(line) => buffered.push(line),
                None => break,
            }
        }
        assert_eq!(buffered, waited);
        assert_eq!(buffered.len(), 6);
        assert_eq!(buffered[0], Ok("a".to_owned()));
        assert!(matches!(&buffered[2], Err((_, why)) if why.contains("not UTF-8")));
        assert_eq!(buffered[3], Ok(String::new()));
        assert_eq!(buffered[4], Ok("x".to_owned()));
        assert_eq!(buffered[5], Ok("last".to_owned()));
    }

    #[test]
    fn wildcards_match_any_characters_or_one() {
        let m = |p: &str, n: &str| {
            let (p, n): (Vec<char>, Vec<char>) = (p.chars().collect(), n.chars().collect());
            wildcard(&p, &n)
        };
        assert!(m("*.csv", "a.csv") && m("*.csv", ".csv") && m("p-?.csv", "p-1.csv"));
        assert!(m("*-*", "a-b-c") && m("*", "") && m("a*b*c", "abc"));
        assert!(!m("p-?.csv", "p-12.csv") && !m("*.csv", "a.csvx") && !m("a*b", "ba"));
        assert!(!m("?", ""));
    }

    #[test]
    fn a_tiny_or_huge_gap_at_a_tiny_speed_waits_far_but_never_panics() {
        for speed in [1e-9, 1e-300, f64::MIN_POSITIVE] {
            let mut pacer = Pacer::new(Some(speed));
            let start = pacer.due(Time::from_ticks(0)).expect("paced");
            let later = pacer.due(Time::MAX_FINITE).expect("paced");
            assert!(later > start, "{speed}");
        }
    }

    #[test]
    fn a_speed_must_be_finite_and_above_zero() {
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let options = ReplayOptions {
                speed: Some(bad),
                ..ReplayOptions::default()
            };
            assert!(
                matches!(options.validate(), Err(AdapterError::Config(ref m)) if m.contains("speed")),
                "{bad}"
            );
        }
        assert!(ReplayOptions::default().validate().is_ok());
    }
}
